//! `gpassk merge <run dir>... --out DIR` or `gpassk merge --shards N --from DIR --out DIR`: join
//! runs of one evaluation (shards, typically) into a new run directory ([`crate::rundir::merge`]
//! decides and writes it; [`crate::rundir::merge::shards`] finds the shard runs in a folder).

use crate::error::ExitStatus;
use crate::rundir::merge::merge;
use crate::rundir::merge::shards::{find_shards, ShardRun, ShardRuns, ShardSet};
use crate::rundir::RunDir;
use crate::util::shell_quote;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk run --config c.toml --shard 0/2   # on one machine\n  gpassk run --config c.toml --shard 1/2   # on another\n  gpassk merge results/<shard 0> results/<shard 1> --out results/merged\n  gpassk merge --shards 2 --from results --config c.toml --out results/merged\n  gpassk score results/merged"
)]
pub struct MergeArgs {
    /// The run directories to join (at least two); or --shards with --from.
    #[arg(num_args = 2.., required_unless_present = "from", conflicts_with = "from")]
    pub runs: Vec<PathBuf>,
    /// A results folder holding the shard runs to join (each run directly in it): every shard
    /// must have a complete run, else nothing is merged and the missing ones are listed (exit 1).
    #[arg(long, value_name = "DIR", requires = "shards")]
    pub from: Option<PathBuf>,
    /// The number of shards the runs were split into (N of their --shard I/N).
    #[arg(long, value_name = "N", requires = "from", value_parser = clap::value_parser!(u32).range(2..))]
    pub shards: Option<u32>,
    /// With --from: only the runs started with this config file (same config hash).
    #[arg(long, value_name = "FILE", requires = "from")]
    pub config: Option<PathBuf>,
    /// The new run directory (must not hold a run yet).
    #[arg(long)]
    pub out: PathBuf,
}

pub fn run(args: MergeArgs) -> Result<ExitStatus> {
    let runs: Vec<RunDir> = match (&args.from, args.shards) {
        (Some(from), Some(count)) => match shard_runs(from, count, args.config.as_deref())? {
            Some(runs) => runs,
            None => return Ok(ExitStatus::Failure),
        },
        _ => args.runs.iter().map(RunDir::at).collect(),
    };
    let out = RunDir::at(&args.out);
    let m = merge(&runs, &out, &super::stderr_notes())?;
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
        runs.len(),
        args.out.display(),
        m.models.len(),
        if m.models.len() == 1 { "" } else { "s" },
        args.out.display()
    );
    // Like `run` at its end: the merged evaluation goes to the config's `[store]`, when it has one.
    let store = crate::config::load_json(&m.config, Path::new(&m.config_path))
        .ok()
        .and_then(|s| s.store);
    Ok(match store {
        Some(store) => super::push_at_end(&store, (None, &out), ExitStatus::Success, None),
        None => ExitStatus::Success,
    })
}

/// The run of each shard in `from`; None (after saying which shards are not ready) when a shard
/// has no complete run.
fn shard_runs(from: &Path, count: u32, config: Option<&Path>) -> Result<Option<Vec<RunDir>>> {
    let hash = match config {
        Some(path) => Some(config_hash(path)?),
        None => None,
    };
    let set = find_shards(from, count, hash.as_deref())?;
    for why in &set.skipped {
        eprintln!("note: left out: {why}");
    }
    let Some(runs) = set.chosen() else {
        explain_not_ready(from, &set, config);
        return Ok(None);
    };
    for (i, s) in set.shards.iter().enumerate() {
        if let ShardRuns::Ready { run, passed_over } = s {
            if !passed_over.is_empty() {
                println!(
                    "shard {i}/{count}: {} (the newest complete run)\n  left out: {}",
                    run.display(),
                    list(passed_over)
                );
            }
        }
    }
    Ok(Some(runs))
}

/// The config file's hash, as run manifests record it (`config_hash`: the file as written).
fn config_hash(path: &Path) -> Result<String> {
    let sources = crate::config::Sources {
        config: path.to_path_buf(),
        ..Default::default()
    };
    let loaded = crate::config::load_sources(&sources).map_err(crate::error::bad_input)?;
    Ok(loaded.tasks[0].config_hash.clone())
}

/// `DIR (status), …`.
fn list(runs: &[ShardRun]) -> String {
    let each = runs
        .iter()
        .map(|r| format!("{} ({})", r.dir.display(), r.status));
    each.collect::<Vec<_>>().join(", ")
}

/// The shards without a complete run, one line each, and what to do about them.
fn explain_not_ready(from: &Path, set: &ShardSet, config: Option<&Path>) {
    let n = set.count;
    let ready = set.chosen_count();
    eprintln!(
        "error: not merged: {} of {n} shards have no complete run in {} (nothing written)",
        n as usize - ready,
        from.display()
    );
    for (i, s) in set.shards.iter().enumerate() {
        match s {
            ShardRuns::Ready { .. } => {}
            ShardRuns::Missing => eprintln!("  shard {i}/{n}: missing"),
            ShardRuns::Incomplete(runs) => {
                let newest = &runs[0];
                let config = config.map_or_else(
                    || shell_quote(&newest.config_path),
                    |c| shell_quote(&c.display().to_string()),
                );
                eprintln!(
                    "  shard {i}/{n}: not complete: {}; resume it with:\n    gpassk run --config {config} --shard {i}/{n} --resume {}",
                    list(runs),
                    shell_quote(&newest.dir.display().to_string())
                );
            }
        }
    }
    if ready == 0 && !set.other_counts.is_empty() {
        let counts: Vec<String> = set.other_counts.iter().map(u32::to_string).collect();
        eprintln!(
            "  (the shard runs there are of {} shards)",
            counts.join(" or ")
        );
    } else if set.left_out > 0 {
        // A config edited between shards makes another evaluation: its runs are not these.
        eprintln!(
            "  (left out: {} other runs there: other configs or shard counts, unsharded,\n  merged or imported)",
            set.left_out
        );
    }
}
