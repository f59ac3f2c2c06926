//! Merging imported runs (`gpassk import`): the inputs must come from the same harness format,
//! models and gold answers; their problem files are joined, their input files listed one after
//! the other (each record's `source.file` moved to its new place), and the provenance summed.

use super::super::manifest::{Manifest, Status};
use super::super::provenance::{ImportInfo, ImportedProblem};
use super::super::record::{read_lines, Record, SampleIndex};
use super::super::RunDir;
use crate::error::BadInput;
use crate::util::{hex, printable, write_atomic};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::PathBuf;

/// The `imported` entry of an input (the caller checked every input has one).
fn info(m: &Manifest) -> &ImportInfo {
    m.imported
        .as_ref()
        .expect("only imported runs reach merge::imported")
}

/// Refuses inputs that are not parts of one import: another format, other models (or another
/// source model behind a name), gold answers from elsewhere, or one input file read twice.
fn check_compatible(runs: &[(RunDir, Manifest)]) -> Result<(), BadInput> {
    let (first_dir, first) = &runs[0];
    let a = info(first);
    let mut seen_files: HashMap<&str, (&RunDir, &str)> = HashMap::new();
    for (dir, m) in runs {
        for f in &info(m).files {
            if let Some((other, path)) = seen_files.insert(&f.sha256, (dir, &f.path)) {
                return Err(BadInput(format!(
                    "refusing to merge: the same file was imported into {} ({}) and {} ({}); \
                     its samples would count twice",
                    other.display(),
                    printable(path),
                    dir.display(),
                    printable(&f.path)
                )));
            }
        }
    }
    for (dir, m) in &runs[1..] {
        let b = info(m);
        let mismatch = |field: &str, x: &str, y: &str| {
            BadInput(format!(
                "refusing to merge: {} has {field} {x} but {} has {y}",
                first_dir.manifest_path().display(),
                dir.manifest_path().display()
            ))
        };
        if a.format != b.format {
            return Err(mismatch("imported.format", &a.format, &b.format));
        }
        if a.gold_from != b.gold_from || a.dataset_sha256 != b.dataset_sha256 {
            return Err(mismatch("gold answers from", &a.gold_from, &b.gold_from));
        }
        let names = |i: &ImportInfo| i.models.keys().cloned().collect::<Vec<_>>().join(", ");
        if a.models.keys().ne(b.models.keys()) {
            return Err(mismatch("models", &names(a), &names(b)));
        }
        for (name, x) in &a.models {
            let y = &b.models[name];
            if x.source_name != y.source_name {
                let field = format!("model {name} from the source's");
                return Err(mismatch(&field, &x.source_name, &y.source_name));
            }
        }
    }
    Ok(())
}

/// Sample indices of one model in the merged run: an imported sample's index is only its place
/// among the problem's samples, so one that is taken already moves to the lowest free index.
#[derive(Default)]
pub(super) struct Renumber {
    taken: HashMap<String, HashSet<u32>>,
    /// The highest index placed, plus one: the merged `n`.
    pub(super) n: u32,
    pub(super) moved: u64,
}

impl Renumber {
    pub(super) fn place(&mut self, r: &mut Record) {
        let SampleIndex::Sample(i) = r.sample_index else {
            return;
        };
        let taken = self.taken.entry(r.problem_id.clone()).or_default();
        let index = if taken.contains(&i) {
            self.moved += 1;
            (0..)
                .find(|j| !taken.contains(j))
                .expect("a free index below u32::MAX")
        } else {
            i
        };
        taken.insert(index);
        r.sample_index = SampleIndex::Sample(index);
        self.n = self.n.max(index + 1);
    }
}

/// Where each input's files start in the merged `imported.files`.
pub(super) fn file_offsets(runs: &[(RunDir, Manifest)]) -> Vec<u32> {
    let mut next = 0u32;
    (runs.iter())
        .map(|(_, m)| {
            let at = next;
            next += m.imported.as_ref().map_or(0, |i| i.files.len() as u32);
            at
        })
        .collect()
}

/// The inputs' problems as one file, checked before anything is written.
pub(super) struct Joined {
    problems: usize,
    bytes: Vec<u8>,
}

/// Checks the inputs ([`check_compatible`]) and joins their problem files.
pub(super) fn join(runs: &[(RunDir, Manifest)]) -> Result<Joined> {
    check_compatible(runs)?;
    let (problems, bytes) = joined_problems(runs)?;
    Ok(Joined { problems, bytes })
}

/// Writes the joined problem file into `out` and brings the merged manifest (the first input's,
/// with counts summed) to it: dataset, planned units, config and provenance.
pub(super) fn finish(
    joined: Joined,
    runs: &[(RunDir, Manifest)],
    placed: &BTreeMap<String, Renumber>,
    out: &RunDir,
    m: &mut Manifest,
) -> Result<()> {
    let Joined { problems, bytes } = joined;
    let relative = PathBuf::from(first_dataset_file(&runs[0])?);
    let path = out.resolve(&relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    write_atomic(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
    m.dataset.sha256 = hex(&Sha256::digest(&bytes));
    m.dataset.problems = problems;
    for (name, mm) in m.models.iter_mut() {
        let n = placed.get(name).map_or(0, |p| p.n).max(1);
        mm.sampling.n = n;
        mm.units_planned = problems as u64 * (u64::from(n) + mm.sampling.greedy as u64);
        mm.status = if mm.ok == mm.units_planned {
            Status::Complete
        } else {
            Status::Incomplete
        };
    }
    set_config_n(m)?;
    let mut info = merged_info(runs);
    for (name, p) in placed.iter().filter(|(_, p)| p.moved > 0) {
        info.notes.push(format!(
            "model {name}: {} samples of later inputs took the next free sample index of their \
             problem (an earlier input held theirs)",
            p.moved
        ));
    }
    m.imported = Some(info);
    // As for one import: the run is done when it is written.
    m.status = if runs.iter().all(|(_, x)| x.status.is_complete()) {
        Status::Complete
    } else {
        Status::Incomplete
    };
    Ok(())
}

fn first_dataset_file((dir, m): &(RunDir, Manifest)) -> Result<&str, BadInput> {
    m.dataset.files.first().map(String::as_str).ok_or_else(|| {
        BadInput(format!(
            "{}: field `dataset.files`: an imported run names its problem file; this one names none",
            dir.manifest_path().display()
        ))
    })
}

/// Every input's problems, first seen first; a problem in two inputs must have the same gold
/// answer and subset (a missing question gives way to a real one). Returns the count and bytes.
fn joined_problems(runs: &[(RunDir, Manifest)]) -> Result<(usize, Vec<u8>)> {
    let mut problems: Vec<(ImportedProblem, PathBuf)> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for run in runs {
        let path = run
            .0
            .resolve(std::path::Path::new(first_dataset_file(run)?));
        let mut conflict = None;
        read_lines(&path, |p: ImportedProblem| {
            let Some(&i) = at.get(&p.id) else {
                at.insert(p.id.clone(), problems.len());
                problems.push((p, path.clone()));
                return Ok(());
            };
            let (have, from) = &mut problems[i];
            if have.answer != p.answer || have.subset != p.subset {
                conflict.get_or_insert_with(|| {
                    format!(
                        "refusing to merge: problem {} has gold `{}` in {} but `{}` in {}",
                        printable(&p.id),
                        printable(&have.answer),
                        from.display(),
                        printable(&p.answer),
                        path.display()
                    )
                });
            } else if have.question == ImportedProblem::NO_QUESTION {
                have.question = p.question;
            }
            Ok(())
        })?;
        if let Some(message) = conflict {
            return Err(BadInput(message).into());
        }
    }
    let mut bytes = Vec::new();
    for (p, _) in &problems {
        serde_json::to_writer(&mut bytes, p)?;
        bytes.push(b'\n');
    }
    Ok((problems.len(), bytes))
}

/// The stored config's `n` per model follows the merged manifest's, and its hash the config.
fn set_config_n(m: &mut Manifest) -> Result<()> {
    let models = m.config.get_mut("models").and_then(|v| v.as_array_mut());
    for model in models.into_iter().flatten() {
        let name = model
            .get("name")
            .and_then(|v| v.as_str())
            .map(str::to_string);
        if let Some(mm) = name.and_then(|n| m.models.get(&n)) {
            model["n"] = serde_json::Value::from(mm.sampling.n);
        }
    }
    let path = std::path::Path::new(&m.config_path);
    let settings = crate::config::load_json(&m.config, path)
        .map_err(|e| BadInput(format!("the merged import's config: {e}")))?;
    m.config_hash = settings.config_hash;
    Ok(())
}

/// The inputs' provenance as one: files in input order, counts summed, texts that differ joined.
fn merged_info(runs: &[(RunDir, Manifest)]) -> ImportInfo {
    let infos: Vec<&ImportInfo> = runs.iter().map(|(_, m)| info(m)).collect();
    let mut out = infos[0].clone();
    let distinct = |f: fn(&ImportInfo) -> &String| {
        let mut seen = BTreeSet::new();
        (infos.iter())
            .map(|i| f(i).clone())
            .filter(|t| seen.insert(t.clone()))
            .collect::<Vec<_>>()
            .join("; ")
    };
    out.layout = distinct(|i| &i.layout);
    out.verdicts = distinct(|i| &i.verdicts);
    out.imported_at = (infos.iter().map(|i| i.imported_at.clone()).min()).unwrap_or_default();
    out.files = infos.iter().flat_map(|i| i.files.clone()).collect();
    out.aggregates = infos.iter().flat_map(|i| i.aggregates.clone()).collect();
    out.bad_records = infos.iter().map(|i| i.bad_records).sum();
    out.bad_examples = infos.iter().flat_map(|i| i.bad_examples.clone()).collect();
    out.notes = infos.iter().flat_map(|i| i.notes.clone()).collect();
    for (name, model) in out.models.iter_mut() {
        let parts: Vec<_> = infos.iter().map(|i| &i.models[name]).collect();
        model.samples = parts.iter().map(|p| p.samples).sum();
        model.with_source_verdict = parts.iter().map(|p| p.with_source_verdict).sum();
        model.duplicates = parts.iter().map(|p| p.duplicates).sum();
        if parts.iter().any(|p| p.settings != model.settings) {
            out.notes.push(format!(
                "model {name}: the merged imports recorded different generation settings; \
                 the first input's are shown"
            ));
        }
    }
    out.notes.push(format!(
        "merged from {} imports ({} input files)",
        runs.len(),
        out.files.len()
    ));
    out
}
