//! `gpassk merge <run dir>... --out DIR`: join runs of one evaluation (shards, typically) into a
//! new run directory ([`crate::rundir::merge`] decides and writes it).

use crate::error::ExitStatus;
use crate::rundir::merge::merge;
use crate::rundir::RunDir;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk run --config c.toml --shard 0/2   # on one machine\n  gpassk run --config c.toml --shard 1/2   # on another\n  gpassk merge results/<shard 0> results/<shard 1> --out results/merged && gpassk score results/merged"
)]
pub struct MergeArgs {
    /// The run directories to join (at least two).
    #[arg(required = true, num_args = 2..)]
    pub runs: Vec<PathBuf>,
    /// The new run directory (must not hold a run yet).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: MergeArgs) -> Result<ExitStatus> {
    let runs: Vec<RunDir> = args.runs.iter().map(RunDir::at).collect();
    let m = merge(&runs, &RunDir::at(&args.out), &super::stderr_notes())?;
    let shards: Vec<String> = (runs.iter())
        .filter_map(|d| Some(d.read_manifest().ok()?.shard?.to_string()))
        .collect();
    if !m.status.is_complete() {
        eprintln!(
            "note: merged run is incomplete (shards present: {}; or an input run was not complete)",
            if shards.is_empty() {
                "none".to_string()
            } else {
                shards.join(", ")
            }
        );
    }
    println!(
        "merged {} runs into {} ({} model{}); score it with: gpassk score {}",
        args.runs.len(),
        args.out.display(),
        m.models.len(),
        if m.models.len() == 1 { "" } else { "s" },
        args.out.display()
    );
    Ok(ExitStatus::Success)
}
