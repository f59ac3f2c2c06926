//! `gpassk view [DIR]`: serves the runs of a results folder (or one run) as local web pages,
//! read-only, until Ctrl-C.

use crate::error::{BadInput, ExitStatus};
use crate::view::server::{bind, is_loopback, serve, Served};
use crate::view::Viewer;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk view\n  gpassk view results --open\n  gpassk view results/<run> --port 8080"
)]
pub struct ViewArgs {
    /// A results folder of run directories, or one run directory.
    #[arg(default_value = "results")]
    pub dir: PathBuf,
    /// The address to listen on (127.0.0.1 keeps the pages to this machine; any other address
    /// needs --allow-remote).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Listen on a --host that is not loopback: every run, response and report is then served,
    /// without a password, to anyone who can reach this machine.
    #[arg(long)]
    pub allow_remote: bool,
    /// The port (0: any free port; the URL printed says which).
    #[arg(long, default_value_t = 8040)]
    pub port: u16,
    /// Open the pages in a browser (xdg-open).
    #[arg(long)]
    pub open: bool,
}

pub fn run(args: ViewArgs) -> anyhow::Result<ExitStatus> {
    let remote = !is_loopback(&args.host);
    if remote && !args.allow_remote {
        return Err(BadInput::new(format!(
            "--host {}: not a loopback address; the viewer would serve every run and response to \
             the network without a password. Add --allow-remote if that is what you want",
            crate::util::printable(&args.host)
        ))
        .into());
    }
    let viewer = Viewer::new(&args.dir)?;
    if remote {
        // Said before listening: nothing is served before the warning is out.
        eprintln!(
            "warning: --allow-remote: serving {} on {}:{} to the network, without a password or \
             TLS: anyone who can reach this machine reads every run and response there. Pages \
             answer only requests addressed to {} (or localhost).",
            viewer.root().display(),
            crate::util::printable(&args.host),
            args.port,
            crate::util::printable(&args.host)
        );
    }
    let listener = bind(&args.host, args.port)
        .map_err(|e| BadInput::new(format!("--host {} --port {}: {e}", args.host, args.port)))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}/");
    println!(
        "gpassk view: {} at {url} (Ctrl-C to stop)",
        viewer.root().display()
    );
    if args.open {
        open_browser(&url);
    }
    let (shutdown, _signals) = super::shutdown_on_signals(true)?;
    serve(viewer, Served::new(&args.host), listener, &shutdown)?;
    Ok(ExitStatus::Success)
}

/// Best effort: without a browser the URL printed above is enough.
fn open_browser(url: &str) {
    let launched = std::process::Command::new("xdg-open")
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(e) = launched {
        eprintln!("warning: --open: cannot start xdg-open ({e}); open {url} yourself");
    }
}
