//! `gpassk score <run dir>`: re-grade every stored sample offline and rewrite all output files.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::report;
use crate::rundir::RunDir;
use crate::scoring::load_run_with;
use anyhow::Result;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  gpassk score results/<run>\n  gpassk score results/<run> --quiet"
)]
pub struct ScoreArgs {
    /// The run directory (holding manifest.json and checkpoints/).
    pub run_dir: PathBuf,
    /// Re-grade with a changed grading key, e.g. --set evaluation.rel_tol=1e-4 (repeatable; only
    /// `evaluation.*` keys, since the samples are already drawn).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Do not print the summary table.
    #[arg(long)]
    pub quiet: bool,
    /// Print every metric with its exact interval bounds instead of the table that fits the terminal.
    #[arg(long)]
    pub wide: bool,
}

pub fn run(args: ScoreArgs) -> Result<ExitStatus> {
    for o in &args.set {
        if !o.starts_with("evaluation.") {
            return Err(BadInput::new(format!(
                "--set {o}: score re-grades the stored samples, so only evaluation.* keys apply"
            ))
            .into());
        }
    }
    let run_dir = RunDir::at(&args.run_dir);
    let results = load_run_with(&run_dir, &args.set, &super::stderr_notes()).map_err(bad_input)?;
    let raw_kept = results
        .manifest
        .as_ref()
        .is_none_or(|m| m.config["evaluation"]["save_raw_responses"].as_bool() != Some(false));
    if !raw_kept && !args.quiet {
        eprintln!(
            "note: this run kept no raw responses (save_raw_responses = false): score grades the answers extracted during the run and cannot re-extract them with other regexes"
        );
    }
    let written = report::write_all(&run_dir, &results)?;
    if !args.quiet {
        print!(
            "{}",
            super::stdout_paint().marks(&report::terminal_table(&results, args.wide))
        );
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(ExitStatus::Success)
}
