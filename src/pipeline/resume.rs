//! Which run a run continues: `--resume DIR`, `--resume latest` (the newest run of this config and
//! shard) or `resume_from_checkpoint = true` (the newest of this config, task and shard); and the
//! run directory opened, locked and checked against the plan.

use crate::error::BadInput;
use crate::plan::Plan;
use crate::rundir::manifest::Manifest;
use crate::rundir::{OpenRun, RunDir};
use crate::util::Notes;
use anyhow::Result;
use std::path::Path;

/// The run to continue: `resume` (`--resume`); else, with `resume_from_checkpoint = true`, the
/// latest run of this config, settings file, task and shard under output_dir (said in `notes`);
/// else none (a new run).
pub fn resume_dir_for(resume: Option<&str>, plan: &Plan, notes: &Notes) -> Result<Option<RunDir>> {
    let ev = &plan.settings.evaluation;
    if let Some(r) = resume {
        return resolve_resume(r, plan).map(Some);
    }
    if ev.resume_from_checkpoint != Some(true) {
        return Ok(None);
    }
    let latest = latest_of_task(plan, &ev.output_dir);
    if let Some(dir) = &latest {
        notes.say(&format!(
            "resuming {} (resume_from_checkpoint = true: the latest run of this config, task and shard)",
            dir.display()
        ));
    }
    Ok(latest)
}

/// The newest run directory whose manifest has this plan's config hash, settings task and shard.
fn latest_of_task(plan: &Plan, output_dir: &Path) -> Option<RunDir> {
    let s = &plan.settings;
    newest(&runs_under(output_dir), |m| {
        m.same_task(&s.config_hash, s.task_file.as_ref()) && m.shard == plan.shard
    })
}

/// Every run directory directly under `output_dir` with a readable manifest.
fn runs_under(output_dir: &Path) -> Vec<(RunDir, Manifest)> {
    RunDir::runs_under(output_dir).map_or_else(|_| Vec::new(), |f| f.runs)
}

/// The latest-started run that `same` accepts (ties broken by directory name).
fn newest(runs: &[(RunDir, Manifest)], same: impl Fn(&Manifest) -> bool) -> Option<RunDir> {
    runs.iter()
        .filter(|(_, m)| same(m))
        .max_by(|(da, a), (db, b)| (&a.created_at, da).cmp(&(&b.created_at, db)))
        .map(|(d, _)| d.clone())
}

/// `--resume DIR`, or for `latest` the newest run under output_dir of this config (same config
/// hash, or else same config file) and shard: another config's run, or another shard's (shards
/// of one evaluation share a results folder on a cluster), is never taken over.
fn resolve_resume(r: &str, plan: &Plan) -> Result<RunDir> {
    if r != "latest" {
        return Ok(RunDir::existing(r, "--resume")?);
    }
    let s = &plan.settings;
    let output_dir = &s.evaluation.output_dir;
    let runs = runs_under(output_dir);
    let path = s.config_path.display().to_string();
    let shard = |m: &Manifest| m.shard == plan.shard;
    newest(&runs, |m| m.config_hash == s.config_hash && shard(m))
        .or_else(|| newest(&runs, |m| m.config_path == path && shard(m)))
        .ok_or_else(|| {
            let of = plan.shard.map_or(String::new(), |x| format!(" shard {x}"));
            BadInput::new(format!(
                "--resume latest: no run of {path}{of} under {} ({} runs of other configs or shards there; name one with --resume DIR)",
                output_dir.display(),
                runs.len()
            ))
            .into()
        })
}

/// The run directory, locked, and its manifest marked `running`: resumed, or created fresh.
pub(super) fn open_run_dir(
    plan: &Plan,
    resume_dir: Option<RunDir>,
    force: bool,
    notes: &Notes,
) -> Result<OpenRun> {
    let Some(dir) = resume_dir else {
        let output_dir = &plan.settings.evaluation.output_dir;
        let base = crate::rundir::new_run_id(&plan.settings.config_hash);
        return Ok(RunDir::create(output_dir, &base, |id| {
            plan.new_manifest(id)
        })?);
    };
    dir.resume(|old| -> Result<Manifest> {
        refuse_changed(plan, &old, force, notes)?;
        Ok(plan.update_manifest(old))
    })
}

/// Refuses to resume when what was sampled would no longer match what is asked for; with
/// `force`, warns and resumes.
fn refuse_changed(plan: &Plan, old: &Manifest, force: bool, notes: &Notes) -> Result<(), BadInput> {
    let changes = plan.resume_changes(old);
    if changes.is_empty() {
        return Ok(());
    }
    if !force {
        return Err(BadInput(format!(
            "refusing to resume {}: {} changed since it started (pass --force to resume anyway)",
            old.run_id,
            changes.join("; ")
        )));
    }
    notes.warn(&format!(
        "resuming with --force despite: {}",
        changes.join("; ")
    ));
    Ok(())
}
