//! Finding the shard runs of one evaluation in a results folder (`gpassk merge --shards N --from
//! DIR`): which run stands for each shard, and which shards are missing or not complete yet.
//!
//! The candidates are the runs directly in the folder that sampled a shard of N (`shard` in their
//! manifest), optionally only those of one config file (its hash). They must all be one evaluation
//! by the rule `merge` itself applies (`check_compatible`); several evaluations are bad
//! input rather than a guess. For each shard the newest complete run is taken (latest
//! `finished_at`): a shard started again from scratch and finished supersedes its older runs,
//! which stay on disk and are named, and an unfinished newer attempt never hides a complete run.

use super::check_compatible;
use crate::error::BadInput;
use crate::rundir::manifest::{Manifest, Status};
use crate::rundir::RunDir;
use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::path::Path;

/// One run of a shard and how it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardRun {
    pub dir: RunDir,
    pub status: Status,
    /// The config file it was started with (for the command that resumes it).
    pub config_path: String,
}

/// What the folder holds of one shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardRuns {
    /// `run` is merged for this shard; the shard's other runs (newest first) are left out.
    Ready {
        run: RunDir,
        passed_over: Vec<ShardRun>,
    },
    /// The shard has runs, none of them complete (newest first).
    Incomplete(Vec<ShardRun>),
    Missing,
}

/// What a results folder holds of one evaluation split into `count` shards.
#[derive(Debug)]
pub struct ShardSet {
    pub count: u32,
    /// Indexed by shard.
    pub shards: Vec<ShardRuns>,
    /// Runs left out: of another config (with `--config`), unsharded, merged or imported runs,
    /// and shard runs of another count.
    pub left_out: usize,
    /// The other shard counts seen (a hint when nothing of `count` is there).
    pub other_counts: BTreeSet<u32>,
    /// Why each run directory whose manifest cannot be read was left out.
    pub skipped: Vec<String>,
}

impl ShardSet {
    /// The run of each shard, in shard order, when every shard has a complete one.
    pub fn chosen(&self) -> Option<Vec<RunDir>> {
        (self.shards.iter())
            .map(|s| match s {
                ShardRuns::Ready { run, .. } => Some(run.clone()),
                _ => None,
            })
            .collect()
    }

    /// How many shards have a complete run.
    pub fn chosen_count(&self) -> usize {
        (self.shards.iter())
            .filter(|s| matches!(s, ShardRuns::Ready { .. }))
            .count()
    }
}

/// Finds the shard runs of one evaluation of `count` shards directly under `folder`, of the
/// config whose hash is `config_hash` when given; refuses a folder holding several evaluations.
pub fn find_shards(
    folder: &Path,
    count: u32,
    config_hash: Option<&str>,
) -> Result<ShardSet, BadInput> {
    let found = RunDir::runs_under(folder)
        .map_err(|e| BadInput(format!("--from {}: cannot read: {e}", folder.display())))?;
    let total = found.runs.len();
    let mut other_counts = BTreeSet::new();
    let candidates: Vec<(RunDir, Manifest)> = (found.runs.into_iter())
        .filter(|(_, m)| {
            let shard = m.shard.filter(|_| m.imported.is_none());
            match shard {
                Some(s) if s.count != count => {
                    other_counts.insert(s.count);
                    false
                }
                Some(_) => config_hash.is_none_or(|h| m.config_hash == h),
                None => false,
            }
        })
        .collect();
    let left_out = total - candidates.len();
    check_one_evaluation(folder, &candidates, config_hash.is_some())?;
    let shards = (0..count)
        .map(|i| {
            pick(
                candidates
                    .iter()
                    .filter(|(_, m)| m.shard.is_some_and(|s| s.index == i)),
            )
        })
        .collect();
    Ok(ShardSet {
        count,
        shards,
        left_out,
        other_counts,
        skipped: found.skipped,
    })
}

/// Refuses candidates that are not all one evaluation, naming the first thing two of them differ in.
fn check_one_evaluation(
    folder: &Path,
    runs: &[(RunDir, Manifest)],
    by_config: bool,
) -> Result<(), BadInput> {
    let Some(first) = runs.first() else {
        return Ok(());
    };
    for run in &runs[1..] {
        if let Err(BadInput(why)) = check_compatible(&[first.clone(), run.clone()]) {
            let why = why.trim_start_matches("refusing to merge: ");
            let pick = if by_config {
                ""
            } else {
                "pick one with --config FILE (the config its runs were started with), or "
            };
            return Err(BadInput(format!(
                "--from {}: the shard runs there are of more than one evaluation ({why}); \
                 {pick}name the runs to merge: gpassk merge RUN... --out DIR",
                folder.display()
            )));
        }
    }
    Ok(())
}

/// The newest complete run of one shard, else what is there.
fn pick<'a>(runs: impl Iterator<Item = &'a (RunDir, Manifest)>) -> ShardRuns {
    let mut runs: Vec<&(RunDir, Manifest)> = runs.collect();
    // Complete runs first, the latest finished first; then the others, the latest started first.
    runs.sort_by_key(|(d, m)| {
        let complete = m.status.is_complete();
        let when = if complete {
            m.finished_at.clone().unwrap_or_default()
        } else {
            m.created_at.clone()
        };
        (Reverse(complete), Reverse(when), Reverse(d.clone()))
    });
    let all = || {
        (runs.iter()).map(|(dir, m)| ShardRun {
            dir: dir.clone(),
            status: m.status,
            config_path: m.config_path.clone(),
        })
    };
    match runs.first() {
        None => ShardRuns::Missing,
        Some((run, m)) if m.status.is_complete() => ShardRuns::Ready {
            run: run.clone(),
            passed_over: all().skip(1).collect(),
        },
        Some(_) => ShardRuns::Incomplete(all().collect()),
    }
}
