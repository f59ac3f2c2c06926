//! `fake-openai`: the fake OpenAI-compatible server in the foreground, answering every chat request
//! at once with a canned reply until it is killed.
//!
//! It is the instant server that `scripts/bench-peers.sh` drives with a load generator, the OpenAI
//! Python SDK and `gpassk run`. Requests are not kept, so memory stays flat over long runs.

use anyhow::{Context, Result};
use clap::Parser;
use fake_openai::{FakeServer, Reply, DEFAULT_ANSWER, MAX_N};
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "fake-openai",
    version,
    about = "Fake OpenAI-compatible chat server (benchmarks)"
)]
struct Args {
    /// Port on 127.0.0.1; 0 (the default) picks a free one. The address is printed on stdout.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Content of every choice.
    #[arg(long, default_value = DEFAULT_ANSWER)]
    answer: String,
    /// Worker threads of the server's runtime.
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .thread_name("fake-openai")
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let answer = args.answer;
    runtime.block_on(async move {
        let builder = FakeServer::builder()
            .keep_requests(false)
            .responder(move |r| Reply::repeated(r.n().clamp(1, MAX_N), &answer));
        let addr = SocketAddr::from(([127, 0, 0, 1], args.port));
        let server = builder
            .try_start_on(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let mut out = std::io::stdout();
        writeln!(out, "listening on {}", server.base_url())?;
        out.flush()?;
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")?;
        server.shutdown();
        Ok(())
    })
}
