//! Merging runs: joins the checkpoints of runs of the same evaluation (the shards of `gpassk run
//! --shard I/N`, typically) into one new run directory with its own manifest.
//!
//! Inputs must agree on the config (its `output_dir` aside), the dataset sha256 and limit, the prompt
//! hash, the models and the shard count; a unit (model, problem, sample index) may come from one input
//! only. Records are copied verbatim; imported runs (`imported.rs`) are joined by their own rules.
//! `shards.rs` finds the shard runs of one evaluation in a results folder.

mod imported;
pub mod shards;

use super::difference::{Difference, OUTPUT_DIR_KEY};
use super::manifest::{Manifest, Status};
use super::record::{read_records, CheckpointWriter, SampleIndex};
use super::RunDir;
use crate::dataset::shard::Shard;
use crate::error::BadInput;
use crate::util::{now_rfc3339, Notes};
use anyhow::{Context, Result};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// Checks that the inputs describe the same evaluation: the same config (its `output_dir` aside:
/// shards may be written to different places), data, prompts, models and shard count.
fn check_compatible(runs: &[(RunDir, Manifest)]) -> Result<(), BadInput> {
    let (first_dir, first) = &runs[0];
    for (dir, m) in &runs[1..] {
        let mismatch = |field: &str, a: &str, b: &str| {
            BadInput(format!(
                "refusing to merge: {} has {field} {a} but {} has {b}",
                first_dir.manifest_path().display(),
                dir.manifest_path().display()
            ))
        };
        let differences = first.differences(m);
        let find = |f: fn(&Difference) -> bool| differences.iter().find(|d| f(d));
        if let Some(Difference::Config { key, change }) =
            find(|d| matches!(d, Difference::Config { .. }) && !is_output_dir(d))
        {
            let show = |v: &Option<serde_json::Value>| shown_value(v.as_ref());
            return Err(mismatch(
                &format!("config key `{key}` ="),
                &show(&change.before),
                &show(&change.after),
            ));
        }
        // Equal configs hash alike unless their output_dir differs: any other hash change is unexplained.
        if let Some(Difference::ConfigHash(c)) = find(|d| matches!(d, Difference::ConfigHash(_))) {
            if find(is_output_dir).is_none() {
                return Err(mismatch("config_hash", &c.before, &c.after));
            }
        }
        if let Some(Difference::Dataset(c)) = find(|d| matches!(d, Difference::Dataset(_))) {
            return Err(mismatch("dataset.sha256", &c.before, &c.after));
        }
        if let Some(Difference::DatasetLimit(c)) =
            find(|d| matches!(d, Difference::DatasetLimit(_)))
        {
            let show = |l: Option<usize>| l.map_or("none".to_string(), |l| l.to_string());
            return Err(mismatch("dataset.limit", &show(c.before), &show(c.after)));
        }
        if let Some(Difference::PromptHash(c)) = find(|d| matches!(d, Difference::PromptHash(_))) {
            return Err(mismatch("prompt_hash", &c.before, &c.after));
        }
        if let Some(Difference::Models(c)) = find(|d| matches!(d, Difference::Models(_))) {
            return Err(mismatch(
                "models",
                &c.before.join(", "),
                &c.after.join(", "),
            ));
        }
        if let Some(Difference::Shard(c)) = find(|d| matches!(d, Difference::Shard(_))) {
            let count = |s: Option<Shard>| s.map(|s| s.count);
            if count(c.before) != count(c.after) {
                let show =
                    |s: Option<Shard>| count(s).map_or("none".to_string(), |n| n.to_string());
                return Err(mismatch("shard count", &show(c.before), &show(c.after)));
            }
        }
    }
    Ok(())
}

/// The one config key shards may differ in.
fn is_output_dir(d: &Difference) -> bool {
    matches!(d, Difference::Config { key, .. } if key == OUTPUT_DIR_KEY)
}

/// Refuses one shard given twice (after [`check_units`], which names an overlapping unit).
fn check_shards(runs: &[(RunDir, Manifest)]) -> Result<(), BadInput> {
    let mut shards = BTreeSet::new();
    for (dir, m) in runs {
        if let Some(s) = m.shard.filter(|s| !shards.insert(s.index)) {
            return Err(BadInput(format!(
                "refusing to merge: shard {s} is given twice (again in {})",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// A config value as compact JSON (`unset` when absent), cut at 80 characters, for messages.
fn shown_value(v: Option<&serde_json::Value>) -> String {
    let text = v.map_or("unset".to_string(), |v| v.to_string());
    match text.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// Fails on a unit present in two inputs; returns the models in name order.
fn check_units(runs: &[(RunDir, Manifest)]) -> Result<Vec<String>> {
    let models: BTreeSet<String> = runs
        .iter()
        .flat_map(|(_, m)| m.models.keys().cloned())
        .collect();
    for model in &models {
        let mut owner: HashMap<(String, i64), usize> = HashMap::new();
        for (i, (dir, _)) in runs.iter().enumerate() {
            let path = dir.checkpoint(model);
            let mut duplicate: Option<(String, SampleIndex, usize)> = None;
            read_records(&path, |r| {
                if duplicate.is_some() {
                    return Ok(());
                }
                let key = (r.problem_id, r.sample_index.key());
                match owner.get(&key) {
                    Some(&j) if j != i => duplicate = Some((key.0, r.sample_index, j)),
                    Some(_) => {}
                    None => {
                        owner.insert(key, i);
                    }
                }
                Ok(())
            })?;
            if let Some((problem, sample, j)) = duplicate {
                return Err(BadInput(format!(
                    "refusing to merge overlapping runs: unit (model {model}, problem {problem}, \
                     sample {sample}) is in both {} and {}",
                    runs[j].0.checkpoint(model).display(),
                    path.display()
                ))
                .into());
            }
        }
    }
    Ok(models.into_iter().collect())
}

/// The merged manifest: the first input's, with counts summed and shards dropped.
fn merged_manifest(runs: &[(RunDir, Manifest)], run_id: &str) -> Manifest {
    let mut m = runs[0].1.clone();
    m.run_id = run_id.to_string();
    m.shard = None;
    m.merged_from = runs
        .iter()
        .map(|(d, x)| format!("{} ({})", x.run_id, d.display()))
        .collect();
    m.created_at = runs
        .iter()
        .map(|(_, x)| x.created_at.clone())
        .min()
        .unwrap_or_default();
    m.updated_at = now_rfc3339();
    m.finished_at = if runs.iter().all(|(_, x)| x.finished_at.is_some()) {
        runs.iter().filter_map(|(_, x)| x.finished_at.clone()).max()
    } else {
        None
    };
    m.dataset.problems = runs.iter().map(|(_, x)| x.dataset.problems).sum();
    m.models.clear();
    for (_, x) in runs {
        for (name, mm) in &x.models {
            match m.models.get_mut(name) {
                None => {
                    m.models.insert(name.clone(), mm.clone());
                }
                Some(e) => {
                    e.units_planned += mm.units_planned;
                    e.ok += mm.ok;
                    e.truncated += mm.truncated;
                    e.api_error += mm.api_error;
                    for (s, c) in &mm.served_models {
                        *e.served_models.entry(s.clone()).or_default() += c;
                    }
                    for (cause, c) in &mm.failure_causes {
                        *e.failure_causes.entry(cause.clone()).or_default() += c;
                    }
                    for f in &mm.system_fingerprints {
                        if !e.system_fingerprints.contains(f) {
                            e.system_fingerprints.push(f.clone());
                        }
                    }
                    if e.status.is_complete() && !mm.status.is_complete() {
                        e.status = mm.status;
                    }
                    if e.error.is_none() {
                        e.error = mm.error.clone();
                    }
                }
            }
        }
    }
    let shard_counts: BTreeSet<Option<u32>> =
        runs.iter().map(|(_, x)| x.shard.map(|s| s.count)).collect();
    let covered: BTreeSet<u32> = runs
        .iter()
        .filter_map(|(_, x)| x.shard.map(|s| s.index))
        .collect();
    let all_shards = match shard_counts.iter().next() {
        Some(Some(n)) if shard_counts.len() == 1 => covered.len() as u32 == *n,
        _ => true,
    };
    m.status = if all_shards && runs.iter().all(|(_, x)| x.status.is_complete()) {
        Status::Complete
    } else {
        Status::Incomplete
    };
    m
}

/// Merges `runs` into `out`; returns the merged manifest.
pub fn merge(runs: &[RunDir], out: &RunDir, notes: &Notes) -> Result<Manifest> {
    if runs.len() < 2 {
        return Err(BadInput("merge needs at least two run directories".into()).into());
    }
    if out.manifest_path().exists() {
        return Err(BadInput(format!(
            "--out {}: already holds a run (manifest.json); choose a new directory",
            out.display()
        ))
        .into());
    }
    // Held for the merge: a run another process is writing (sampling, resuming) is refused, and
    // none can start on an input while it is read.
    let _held = hold_inputs(runs)?;
    let mut loaded = Vec::new();
    for dir in runs {
        loaded.push((dir.clone(), dir.read_manifest()?));
    }
    let imports = loaded.iter().filter(|(_, m)| m.imported.is_some()).count();
    let mut joined = None;
    if imports == 0 {
        check_compatible(&loaded)?;
    } else if imports < loaded.len() {
        let (dir, _) = (loaded.iter().find(|(_, m)| m.imported.is_none()))
            .expect("some input is not imported");
        return Err(BadInput(format!(
            "refusing to merge: {} was sampled by gpassk but the other inputs were imported \
             (gpassk import); compare them instead (gpassk compare)",
            dir.display()
        ))
        .into());
    } else {
        joined = Some(imported::join(&loaded)?);
    }
    // Imported samples are renumbered where they meet ([`imported::Renumber`]), not refused.
    let models = match joined {
        None => check_units(&loaded)?,
        Some(_) => loaded[0].1.models.keys().cloned().collect(),
    };
    check_shards(&loaded)?;
    let offsets = imported::file_offsets(&loaded);
    let mut placed = BTreeMap::new();
    for model in &models {
        let target = out.checkpoint(model);
        if target.exists() {
            return Err(BadInput(format!(
                "--out {}: {} exists already",
                out.display(),
                target.display()
            ))
            .into());
        }
        let writer = CheckpointWriter::open(&target, notes)?;
        let mut renumber = imported::Renumber::default();
        for ((dir, _), &offset) in loaded.iter().zip(&offsets) {
            read_records(&dir.checkpoint(model), |mut r| {
                // An imported record names its input file by place in `imported.files`.
                if let Some(s) = &mut r.source {
                    s.file += offset;
                    renumber.place(&mut r);
                }
                writer.append(&r)
            })?;
        }
        writer.sync()?;
        placed.insert(model.clone(), renumber);
    }
    for (dir, _) in &loaded {
        copy_tree_files(&dir.trees_dir(), &out.trees_dir())?;
    }
    let run_id = out
        .path()
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "merged".into());
    let mut manifest = merged_manifest(&loaded, &run_id);
    manifest.origin = Some(out.origin());
    if let Some(joined) = joined {
        imported::finish(joined, &loaded, &placed, out, &mut manifest)?;
    }
    out.write_manifest(&manifest)
        .with_context(|| format!("cannot write the manifest in {}", out.display()))?;
    Ok(manifest)
}

/// The locks of the input runs; one another process holds is refused, naming that process (a
/// copy where no lock file can be written, read-only, is read without one: nothing writes it).
fn hold_inputs(runs: &[RunDir]) -> Result<Vec<super::lock::RunLock>, BadInput> {
    let mut held = Vec::new();
    let mut seen = BTreeSet::new();
    for dir in runs {
        // An input named twice is locked once (and refused later as overlapping).
        let place = dir
            .path()
            .canonicalize()
            .unwrap_or_else(|_| dir.path().to_path_buf());
        if !seen.insert(place) {
            continue;
        }
        match dir.lock() {
            Ok(lock) => held.push(lock),
            Err(super::lock::LockError::Busy(BadInput(why))) => {
                return Err(BadInput(format!("refusing to merge: {why}")))
            }
            Err(super::lock::LockError::Io { .. }) => {}
        }
    }
    Ok(held)
}

/// Copies the search trees of a run (`trees/<model>/<problem>/<search>.json`), so the merged
/// records' `search.tree` paths hold; shards cover other problems, so nothing is overwritten.
fn copy_tree_files(from: &Path, to: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", from.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_tree_files(&src, &dst)?;
        } else if !dst.exists() {
            std::fs::create_dir_all(to)
                .with_context(|| format!("cannot create {}", to.display()))?;
            std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}
