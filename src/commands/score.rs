//! `gpassk score <run dir>`: re-grade every stored sample offline and rewrite all output files.

use crate::error::{bad_input, ExitStatus};
use crate::report;
use crate::scoring::load_run;
use anyhow::Result;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk score results/<run>\n  gpassk score results/<run> --quiet"
)]
pub struct ScoreArgs {
    /// The run directory (holding manifest.json and checkpoints/).
    pub run_dir: PathBuf,
    /// Do not print the summary table.
    #[arg(long)]
    pub quiet: bool,
    /// Print every metric with its exact interval bounds instead of the table that fits the terminal.
    #[arg(long)]
    pub wide: bool,
}

pub fn run(args: ScoreArgs) -> Result<ExitStatus> {
    let results = load_run(&args.run_dir).map_err(bad_input)?;
    let written = report::write_all(&args.run_dir, &results)?;
    if !args.quiet {
        print!("{}", report::terminal_table(&results, args.wide));
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(ExitStatus::Success)
}
