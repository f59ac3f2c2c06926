//! `gpassk import` end to end: the paths checked, the files read into one run per dataset in a
//! staging folder beside `--out`, each run finished (its problems, config and manifest, the
//! source's aggregates recomputed), and the runs moved into place at the end: an import that
//! fails or is killed midway leaves nothing at `--out`.

use super::formats::Format;
use super::metric::mean_over_problems;
use super::sink::{problem_of, Errored, Known, RunOut, Runs, SinkOptions};
use super::source::{ImportError, Note, ReadOptions, Recompute, SourceSummary, Stored};
use crate::config::raw::{RawApi, RawConfig, RawEvaluation, RawFields, RawModel};
use crate::dataset::Problem;
use crate::grade::{equivalent, GradeConfig};
use crate::rundir::manifest::Status;
use crate::rundir::provenance::{
    AggregateCheck, ImportInfo, ImportedModel, ImportedProblem, InputFile, SourceSettings,
};
use crate::rundir::RunDir;
use crate::util::{now_rfc3339, printable, Notes};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What `gpassk import` was asked to do.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub format: Format,
    pub paths: Vec<PathBuf>,
    /// The run directory to create (one dataset), or the folder of one run per dataset; it
    /// must not exist.
    pub out: PathBuf,
    pub read: ReadOptions,
    /// Gold answers (and questions) from a shipped dataset or JSONL file, by problem id.
    pub dataset: Option<String>,
    pub skip_bad: bool,
    /// The name the (one) imported model gets in this run, to match a native run's.
    pub rename: Option<String>,
    /// What a sample the harness marked as errored counts as.
    pub errored: Errored,
    /// Where to write the samples whose source verdict and gpassk's re-grade differ.
    pub disagreements: Option<PathBuf>,
}

/// One run an import made.
#[derive(Debug)]
pub struct Imported {
    pub dir: RunDir,
    /// The dataset as the source names it (empty when it names none).
    pub dataset: String,
    pub info: ImportInfo,
    pub problems: Vec<Problem>,
    /// Per model: its name and n, for `--disagreements`.
    models: Vec<(String, u32)>,
    grade: GradeConfig,
}

/// The runs of an import, written in the staging folder and not yet at `--out`.
#[derive(Debug)]
pub struct Staged {
    staging: PathBuf,
    out: PathBuf,
    pub runs: Vec<Imported>,
}

/// Reads the source into runs in a staging folder beside `--out`; on any failure the folder is
/// removed. [`Staged::commit`] moves the runs into place.
pub fn stage(opts: &ImportOptions, notes: &Notes) -> Result<Staged, ImportError> {
    check_out(&opts.out)?;
    check_given_once(&opts.paths)?;
    if let Some(d) = &opts.disagreements {
        check_disagreements(d, opts)?;
    }
    let staging = staging_dir(&opts.out, notes)?;
    match fill(&staging, opts, notes) {
        Ok(runs) => Ok(Staged {
            staging,
            out: opts.out.clone(),
            runs,
        }),
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(e)
        }
    }
}

fn check_out(out: &Path) -> Result<(), ImportError> {
    if out.exists() || out.is_symlink() {
        return Err(ImportError::Input(format!(
            "--out {}: already exists; name a new run directory",
            out.display()
        )));
    }
    let base = super::files::file_name(out);
    if base.is_empty() || base == "." || base == ".." {
        return Err(ImportError::Input(format!(
            "--out {}: name a new directory",
            out.display()
        )));
    }
    Ok(())
}

/// Each path is given once: one given twice (under any spelling) would count its samples twice.
fn check_given_once(paths: &[PathBuf]) -> Result<(), ImportError> {
    let mut seen: Vec<(PathBuf, &PathBuf)> = Vec::new();
    for p in paths {
        let r = resolved(p);
        if let Some((_, first)) = seen.iter().find(|(q, _)| *q == r) {
            return Err(ImportError::Input(format!(
                "{} and {} are the same file: give it once",
                first.display(),
                p.display()
            )));
        }
        seen.push((r, p));
    }
    Ok(())
}

/// A path made absolute with its existing part resolved (symlinks, `..`), so two spellings of
/// one place compare equal even before the file exists.
fn resolved(p: &Path) -> PathBuf {
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    if let Ok(c) = std::fs::canonicalize(&abs) {
        return c;
    }
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) => resolved(parent).join(name),
        _ => abs,
    }
}

/// `--disagreements` may not overwrite an input, land in an input folder (a later import of
/// it would read it as samples) or inside the new run.
fn check_disagreements(path: &Path, opts: &ImportOptions) -> Result<(), ImportError> {
    let target = resolved(path);
    let refuse = |why: String| {
        Err(ImportError::Input(format!(
            "--disagreements {}: {why}; write it elsewhere",
            path.display()
        )))
    };
    if target.starts_with(resolved(&opts.out)) {
        return refuse(format!("inside the new run {}", opts.out.display()));
    }
    for input in &opts.paths {
        let i = resolved(input);
        if target == i {
            return refuse("it is an input file".into());
        }
        if input.is_dir() && target.starts_with(&i) {
            return refuse(format!("inside the input folder {}", input.display()));
        }
    }
    if target.is_dir() {
        return refuse("a folder".into());
    }
    Ok(())
}

/// The staging folder `.<out>.importing-<pid>` beside `--out`; a left-over one of an import
/// that was killed is named (it holds nothing any command reads).
fn staging_dir(out: &Path, notes: &Notes) -> Result<PathBuf, ImportError> {
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(ImportError::io("create", &parent))?;
    let base = super::files::file_name(out);
    let prefix = format!(".{base}.importing-");
    for e in std::fs::read_dir(&parent).into_iter().flatten().flatten() {
        if super::files::file_name(&e.path()).starts_with(&prefix) {
            notes.note(&format!(
                "{} is left from an import that did not finish; it may be removed",
                e.path().display()
            ));
        }
    }
    let staging = parent.join(format!("{prefix}{}", std::process::id()));
    std::fs::create_dir(&staging).map_err(ImportError::io("create", &staging))?;
    Ok(staging)
}

fn fill(staging: &Path, opts: &ImportOptions, notes: &Notes) -> Result<Vec<Imported>, ImportError> {
    let mut runs = Runs::new(
        staging.to_path_buf(),
        SinkOptions {
            model: opts.read.model.clone(),
            task: opts.read.task.clone(),
            rename: opts.rename.clone(),
            skip_bad: opts.skip_bad,
            errored: opts.errored,
        },
    );
    if let Some(name) = &opts.dataset {
        let ds = crate::dataset::load(name, None)
            .map_err(|e| ImportError::Input(format!("--dataset {name}: {e}")))?;
        runs.known = Some(Known::new(name, ds));
    }
    let mut summary = opts.format.read(&opts.paths, &opts.read, &mut runs)?;
    if runs.runs.is_empty() {
        return Err(ImportError::Input(nothing_imported(opts, &runs)));
    }
    if let (Some(d), true) = (&opts.dataset, runs.runs.len() > 1) {
        return Err(ImportError::Input(format!(
            "--dataset {d}: the files hold {} datasets ({}); import one with --task",
            runs.runs.len(),
            runs.runs
                .keys()
                .map(|k| printable(k).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    runs.sync()?;
    summary.notes.extend(runs.notes());
    dedup_notes(&mut summary.notes);
    say_notes(&summary.notes, &runs, notes);
    let several = runs.runs.len() > 1;
    let keys: Vec<String> = runs.runs.keys().cloned().collect();
    let mut out = Vec::new();
    for key in keys {
        let name = run_name(&key, opts);
        let final_dir = match several {
            true => RunDir::at(opts.out.join(crate::util::path_component(&name).as_ref())),
            false => RunDir::at(&opts.out),
        };
        out.push(finish(
            &mut runs,
            &key,
            &final_dir,
            (opts, &mut summary),
            notes,
        )?);
    }
    Ok(out)
}

/// Each note once (a reader says some per file: two files of one dataset say them twice).
fn dedup_notes(notes: &mut Vec<Note>) {
    let mut seen = std::collections::HashSet::new();
    notes.retain(|n| seen.insert(n.clone()));
}

/// Whether a note is kept by the run of dataset `key`: a note of its dataset, or of the import
/// as a whole (or of a dataset that got no run: left out, or nothing in it to grade).
fn kept_by(note: &Note, key: &str, runs: &Runs) -> bool {
    match &note.dataset {
        Some(d) => d == key || !runs.runs.contains_key(d),
        None => true,
    }
}

/// The notes on the console; with several runs each note of one dataset is named after it.
fn say_notes(all: &[Note], runs: &Runs, notes: &Notes) {
    let several = runs.runs.len() > 1;
    for n in all {
        let text = printable(&n.text);
        match n.dataset.as_deref() {
            Some(d) if several => {
                let d = if d.is_empty() {
                    "(unnamed)".into()
                } else {
                    printable(d)
                };
                notes.note(&format!("dataset {d}: {text}"));
            }
            _ => notes.note(&text),
        }
    }
}

/// The run's dataset name: the source's, else `--dataset`, else the format.
fn run_name(key: &str, opts: &ImportOptions) -> String {
    match (key, &opts.dataset) {
        ("", Some(d)) => d.clone(),
        ("", None) => opts.format.name().to_string(),
        (k, _) => k.to_string(),
    }
}

fn nothing_imported(opts: &ImportOptions, runs: &Runs) -> String {
    let left: Vec<String> = (runs.counts.left_out.iter())
        .map(|((_, what), n)| format!("{what}: {n} samples"))
        .chain((runs.counts.left_out_files.iter()).map(|(_, f)| f.clone()))
        .collect();
    let paths: Vec<String> = opts.paths.iter().map(|p| p.display().to_string()).collect();
    match left.as_slice() {
        [] => format!(
            "{}: no {} samples found in {}",
            opts.format,
            opts.format,
            paths.join(", ")
        ),
        _ => format!(
            "{}: every sample in {} was left out by --model/--task ({})",
            opts.format,
            paths.join(", "),
            printable(&left.join("; "))
        ),
    }
}

impl Staged {
    /// Moves the runs into place: the one run becomes `--out`, several become `--out/<dataset>`.
    pub fn commit(mut self) -> Result<Vec<Imported>, ImportError> {
        let io = |what, p: &Path| ImportError::io(what, p);
        if let [one] = self.runs.as_mut_slice() {
            let from = one.dir.path().to_path_buf();
            std::fs::rename(&from, &self.out).map_err(io("move the run to", &self.out))?;
            one.dir = RunDir::at(&self.out);
            let _ = std::fs::remove_dir(&self.staging);
        } else {
            std::fs::rename(&self.staging, &self.out).map_err(io("move the runs to", &self.out))?;
            for r in &mut self.runs {
                let name = r
                    .dir
                    .path()
                    .file_name()
                    .map(PathBuf::from)
                    .unwrap_or_default();
                r.dir = RunDir::at(self.out.join(name));
            }
        }
        Ok(std::mem::take(&mut self.runs))
    }
}

impl Drop for Staged {
    /// Staged runs never committed (a failure writing their reports) are removed.
    fn drop(&mut self) {
        if !self.runs.is_empty() {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// Finishes the run of dataset `key`: problems, dataset file, config, manifest.
fn finish(
    runs: &mut Runs,
    key: &str,
    final_dir: &RunDir,
    (opts, summary): (&ImportOptions, &mut SourceSummary),
    notes: &Notes,
) -> Result<Imported, ImportError> {
    let problems = problems(runs, key, summary, notes)?;
    let files = runs.own_inputs(key)?;
    let info = info(runs, key, (opts, &*summary), &problems, files);
    let name = run_name(key, opts);
    let r = runs.runs.get_mut(key).expect("a run of every key");
    let relative = write_dataset(&r.run.dir, &name, &problems)?;
    let subsets = problems.iter().any(|p| p.subset.is_some());
    let config = config(r, (&summary.models, &summary.ks), &relative, subsets);
    let config_json = serde_json::to_value(&config).map_err(|e| ImportError::Write(e.into()))?;
    let manifest_path = r.run.dir.manifest_path();
    let mut settings = crate::config::load_json(&config_json, &manifest_path)
        .map_err(|e| ImportError::Write(anyhow::anyhow!("the import's config: {e}")))?;
    settings.evaluation.dataset = r.run.dir.resolve(&relative).display().to_string();
    let plan = crate::plan::build(settings, None, None).map_err(ImportError::Write)?;
    let mut manifest = plan.new_manifest(&r.run.manifest.run_id);
    // Where the manifest will be once the run is in place.
    manifest.config_path = final_dir.manifest_path().display().to_string();
    manifest.dataset.name = name;
    manifest.dataset.files = vec![relative.display().to_string()];
    manifest.task_name = None;
    for (model, mm) in manifest.models.iter_mut() {
        let out = &r.models[model];
        mm.base_url = String::new();
        mm.ok = out.samples;
        mm.status = match out.samples == mm.units_planned {
            true => Status::Complete,
            false => Status::Incomplete,
        };
    }
    manifest.created_at = info.imported_at.clone();
    manifest.finished_at = Some(now_rfc3339());
    manifest.imported = Some(info.clone());
    r.run.manifest = manifest;
    r.run
        .finish(false)
        .map_err(|e| ImportError::Write(e.into()))?;
    // `finish` settles the run from its models; an import is done when it is written.
    r.run.manifest.status = Status::Complete;
    r.run.save().map_err(|e| ImportError::Write(e.into()))?;
    let models = (r.models.iter())
        .map(|(n, m)| (n.clone(), m.max_index + 1))
        .collect();
    Ok(Imported {
        dir: r.run.dir.clone(),
        dataset: key.to_string(),
        info,
        problems,
        models,
        grade: plan.settings.evaluation.grade_config(),
    })
}

/// The manifest's `imported` entry of the run of dataset `key`.
fn info(
    runs: &mut Runs,
    key: &str,
    (opts, summary): (&ImportOptions, &SourceSummary),
    problems: &[Problem],
    files: Vec<InputFile>,
) -> ImportInfo {
    let checks = aggregates(runs, key, &summary.aggregates, problems);
    let known = runs.known.as_ref().map(|k| k.sha256.clone());
    let (bad_records, bad_examples) = runs.bad_of(key);
    let imported_at = runs.imported_at.clone();
    let notes = (summary.notes.iter())
        .filter(|n| kept_by(n, key, runs))
        .map(|n| n.text.clone())
        .collect();
    let r = runs.runs.get_mut(key).expect("a run of every key");
    ImportInfo {
        format: opts.format.to_string(),
        layout: summary.layout.clone(),
        imported_at,
        files,
        gold_from: match &opts.dataset {
            Some(d) => format!("dataset {d}"),
            None => "the imported files".into(),
        },
        dataset_sha256: known,
        verdicts: summary.verdicts.clone(),
        models: imported_models(r, &summary.models),
        aggregates: checks,
        bad_records,
        bad_examples,
        notes,
    }
}

fn imported_models(
    r: &RunOut,
    settings: &BTreeMap<String, SourceSettings>,
) -> BTreeMap<String, ImportedModel> {
    (r.models.iter())
        .map(|(name, m)| {
            let entry = ImportedModel {
                source_name: m.source_name.clone(),
                settings: settings.get(&m.source_name).cloned().unwrap_or_default(),
                samples: m.samples,
                with_source_verdict: m.with_verdict,
                duplicates: m.duplicates,
            };
            (name.clone(), entry)
        })
        .collect()
}

/// The run's problems: questions and gold from the files, or from `--dataset` by id (checked
/// against the files' gold: the console counts the disagreements, the run's notes name them).
fn problems(
    runs: &Runs,
    key: &str,
    summary: &mut SourceSummary,
    notes: &Notes,
) -> Result<Vec<Problem>, ImportError> {
    let r = &runs.runs[key];
    let Some(known) = &runs.known else {
        let mut out = Vec::with_capacity(r.problems.len());
        for seen in &r.problems {
            let Some(gold) = seen.gold.clone().filter(|g| !g.trim().is_empty()) else {
                return Err(ImportError::Input(format!(
                    "problem {} (first read at {}) has no gold answer in the files; name a dataset that has it with --dataset",
                    printable(&seen.id),
                    seen.first
                )));
            };
            out.push(problem_of(seen, gold));
        }
        return Ok(out);
    };
    let name = &known.name;
    if known.by_position > 0 {
        notes.note(&format!(
            "--dataset {name}: the source's problem ids are positions (0..{}), matched to the dataset's problems in order",
            known.problems.len()
        ));
    }
    let cfg = GradeConfig::default();
    let mut out = Vec::with_capacity(r.problems.len());
    let mut differ = Vec::new();
    for seen in &r.problems {
        let d = &known.problems[known.by_id[&seen.id]];
        if let Some(g) = seen
            .gold
            .as_ref()
            .filter(|g| !equivalent(&d.answer, g, &cfg))
        {
            differ.push(format!(
                "problem {}: the files' gold {:?} is not the dataset's {:?}",
                printable(&seen.id),
                printable(g),
                printable(&d.answer)
            ));
        }
        out.push(d.clone());
    }
    if !differ.is_empty() {
        notes.warn(&format!(
            "{} of {} problems have a gold answer in the files that differs from --dataset {name} (graded against the dataset's): {}",
            differ.len(),
            out.len(),
            differ.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
        ));
        (summary.notes).extend(differ.into_iter().map(|d| Note::of(key, d)));
    }
    Ok(out)
}

/// The source's stored aggregates of this run's dataset and models, each beside its
/// recomputation (by the reader, or here from the samples' source verdicts).
fn aggregates(
    runs: &Runs,
    key: &str,
    stored: &[Stored],
    problems: &[Problem],
) -> Vec<AggregateCheck> {
    let r = &runs.runs[key];
    let mut out = Vec::new();
    for s in stored.iter().filter(|s| s.dataset == key) {
        let Some(m) = runs.model_name_of(&s.model).and_then(|n| r.models.get(n)) else {
            continue;
        };
        let (recomputed, basis) = match &s.recompute {
            Recompute::Done { value, basis } => (*value, basis.clone()),
            Recompute::Verdicts {
                metric,
                scale,
                subset,
                files,
            } => {
                let chosen = |p: usize| subset.is_none() || problems[p].subset == *subset;
                let of_files = |f: u32| files.is_empty() || files.contains(&(f as usize));
                from_verdicts(m, (chosen, of_files), metric, *scale, subset.as_deref())
            }
        };
        out.push(AggregateCheck {
            model: s.model.clone(),
            name: s.name.clone(),
            source: s.value,
            recomputed,
            basis,
        });
    }
    out
}

/// `metric` over the chosen problems from the source verdicts the model's samples of the
/// chosen files carried.
fn from_verdicts(
    m: &super::sink::ModelOut,
    (chosen, of_files): (impl Fn(usize) -> bool, impl Fn(u32) -> bool),
    metric: &super::metric::PaperMetric,
    scale: f64,
    subset: Option<&str>,
) -> (Option<f64>, String) {
    // Each problem's samples in sample order.
    let lists: Vec<Vec<Option<bool>>> = (m.taken.iter().enumerate())
        .filter(|(p, _)| chosen(*p))
        .map(|(_, list)| {
            (list.iter().filter(|t| of_files(t.file)))
                .map(|t| t.verdict)
                .collect::<Vec<_>>()
        })
        .filter(|list| !list.is_empty())
        .collect();
    let samples = lists.iter().map(Vec::len).sum::<usize>();
    let without = (lists.iter().flatten()).filter(|v| v.is_none()).count();
    if without > 0 {
        let why = format!("{without} of the {samples} samples imported carry no source verdict");
        return (None, why);
    }
    let lists: Vec<Vec<bool>> = (lists.into_iter())
        .map(|l| l.into_iter().flatten().collect())
        .collect();
    let (lo, hi) =
        (lists.iter().map(Vec::len)).fold((usize::MAX, 0), |(l, h), n| (l.min(n), h.max(n)));
    let n = match lo == hi {
        true => lo.to_string(),
        false => format!("{lo}–{hi}"),
    };
    match mean_over_problems(&lists, metric) {
        Ok(v) => {
            let scaled = if scale == 1.0 {
                String::new()
            } else {
                format!("{scale} × ")
            };
            let within = subset
                .map(|s| format!("{}, ", printable(s)))
                .unwrap_or_default();
            let basis = format!(
                "{scaled}mean of exact {} over {} problems ({within}n = {n}) from the samples' source verdicts",
                metric.label(),
                lists.len()
            );
            (Some(scale * v), basis)
        }
        Err(why) => (None, why),
    }
}

/// The stored config: one model per source model, n = the most samples any problem has, the
/// source's recorded settings where gpassk's config can hold them, the dataset beside the
/// manifest.
fn config(
    r: &RunOut,
    (settings, ks): (&BTreeMap<String, SourceSettings>, &[u64]),
    dataset: &Path,
    subsets: bool,
) -> RawConfig {
    let n = r
        .models
        .values()
        .map(|m| u64::from(m.max_index) + 1)
        .min()
        .unwrap_or(1);
    let ks: Vec<i64> = (ks.iter())
        .filter(|&&k| k >= 1 && k <= n)
        .map(|&k| k as i64)
        .collect();
    let models = (r.models.iter())
        .map(|(name, m)| {
            let s = settings.get(&m.source_name).cloned().unwrap_or_default();
            RawModel {
                name: Some(name.clone()),
                model_id: Some(m.source_name.clone()),
                n: Some(i64::from(m.max_index) + 1),
                // A source's greedy answer, if any, is one more sample: none is planned.
                greedy: Some(false),
                temperature: s.temperature.filter(|t| (0.0..=2.0).contains(t)),
                top_p: s.top_p.filter(|p| *p > 0.0 && *p <= 1.0),
                max_tokens: s.max_tokens.filter(|&t| t > 0).map(i64::from),
                seed: s.seed.and_then(|x| i64::try_from(x).ok()),
                ..RawModel::default()
            }
        })
        .collect();
    RawConfig {
        api: RawApi {
            // Never called: an imported run has no endpoint. Reserved, so it can never resolve.
            base_url: Some("http://imported.invalid/v1".into()),
            ..RawApi::default()
        },
        models,
        evaluation: RawEvaluation {
            dataset: Some(dataset.display().to_string()),
            // The source's own k beside the default (the largest of 16, 8, 4, 1 within n).
            k: (!ks.is_empty()).then(|| {
                let usual = [16, 8, 4, 1]
                    .into_iter()
                    .find(|&k| k <= n as i64)
                    .unwrap_or(1);
                let mut all = ks.clone();
                all.push(usual);
                all.sort_unstable();
                all.dedup();
                all
            }),
            fields: Some(RawFields {
                id: Some("id".into()),
                question: Some("question".into()),
                answer: Some("answer".into()),
                subset: subsets.then(|| "subset".into()),
            }),
            ..RawEvaluation::default()
        },
        ..RawConfig::default()
    }
}

/// Writes the run's problems as `dataset/<task>.jsonl` and returns that path, relative to the run.
fn write_dataset(dir: &RunDir, task: &str, problems: &[Problem]) -> Result<PathBuf, ImportError> {
    let relative = RunDir::imported_dataset(task);
    let mut bytes = Vec::new();
    for p in problems {
        let line = ImportedProblem {
            id: p.id.clone(),
            question: p.question.clone(),
            answer: p.answer.clone(),
            subset: p.subset.clone(),
        };
        serde_json::to_writer(&mut bytes, &line).map_err(|e| ImportError::Write(e.into()))?;
        bytes.push(b'\n');
    }
    let path = dir.resolve(&relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(ImportError::io("create", parent))?;
    }
    crate::util::write_atomic(&path, &bytes).map_err(ImportError::io("write", &path))?;
    Ok(relative)
}

/// Writes the samples of every run where the source's verdict and gpassk's differ to `out`;
/// returns how many there were.
pub fn write_disagreements(out: &Path, runs: &[Imported]) -> anyhow::Result<u64> {
    let several = runs.len() > 1;
    let mut bytes = Vec::new();
    let mut count = 0;
    for r in runs {
        let dataset = several.then_some(r.dataset.as_str());
        let both = (r.models.as_slice(), &r.grade);
        count += super::disagree::lines(&mut bytes, &r.dir, &r.info, &r.problems, both, dataset)?;
    }
    crate::util::write_atomic(out, &bytes)
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", out.display()))?;
    Ok(count)
}
