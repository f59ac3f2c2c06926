//! `fake-openai`: the fake OpenAI-compatible server in the foreground, answering every chat request
//! with a canned reply (at once, or after `--delay-ms`) until it is killed.
//!
//! It is the instant server that `scripts/bench-peers.sh` drives with a load generator, the OpenAI
//! Python SDK and `gpassk run`, and the slow one `scripts/slurm-e2e.sh` interrupts a Slurm task
//! against. Requests are not kept, so memory stays flat over long runs.

use anyhow::{Context, Result};
use clap::Parser;
use fake_openai::{seeded_responder, FakeServer, Fault, DEFAULT_ANSWER};
use std::io::Write as _;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

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
    /// Content of every choice; given several times, each request gets the one its `seed`
    /// picks (seed modulo their number; the first when it has no seed).
    #[arg(long, default_values_t = [DEFAULT_ANSWER.to_string()])]
    answer: Vec<String>,
    /// Milliseconds each chat request waits before its reply (requests wait side by side).
    #[arg(long, default_value_t = 0)]
    delay_ms: u64,
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
    let delay = Duration::from_millis(args.delay_ms);
    runtime.block_on(async move {
        let mut builder = FakeServer::builder()
            .keep_requests(false)
            .shared_responder(seeded_responder(args.answer));
        if !delay.is_zero() {
            builder = builder.faults(move |_| Some(Fault::Hang(delay)));
        }
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
