//! The one sink of every reader: each sample becomes a checkpoint record of a new run
//! directory, problems and gold answers become the run's own dataset file, and the manifest says
//! what was imported, from which files (with their sha256), and how the source's numbers check.

use super::{At, Format, ImportError, ReadOptions, Sink, SourceSample, SourceSummary};
use crate::config::raw::{RawApi, RawConfig, RawEvaluation, RawFields, RawModel};
use crate::dataset::Problem;
use crate::grade::{equivalent, GradeConfig};
use crate::rundir::manifest::Status;
use crate::rundir::provenance::{ImportInfo, ImportedModel, ImportedProblem, InputFile, SourceRef};
use crate::rundir::record::{Record, SampleIndex, UnitOutcome};
use crate::rundir::{OpenRun, RunDir};
use crate::util::{hex, now_rfc3339, open_regular, Notes};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What `gpassk import` was asked to do.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    pub format: Format,
    pub paths: Vec<PathBuf>,
    /// The run directory to create; it must not exist.
    pub out: PathBuf,
    pub read: ReadOptions,
    /// Gold answers (and questions) from a shipped dataset or JSONL file, by problem id.
    pub dataset: Option<String>,
    pub skip_bad: bool,
    /// The name the (one) imported model gets in this run, to match a native run's.
    pub rename: Option<String>,
    /// Where to write the samples whose source verdict and gpassk's re-grade differ.
    pub disagreements: Option<PathBuf>,
}

/// What an import made.
#[derive(Debug)]
pub struct Imported {
    pub dir: RunDir,
    pub info: ImportInfo,
    pub problems: usize,
    /// Samples written to `--disagreements`.
    pub disagreements: Option<u64>,
}

/// The most malformed records an import names (the rest are counted).
const BAD_NAMED: usize = 20;

/// Reads the source into a new run directory. On any failure the directory is removed: an
/// import never leaves half a run behind.
pub fn import(opts: &ImportOptions, notes: &Notes) -> Result<Imported, ImportError> {
    if opts.out.exists() {
        return Err(ImportError::Input(format!(
            "--out {}: already exists; name a new run directory",
            opts.out.display()
        )));
    }
    let parent = match opts.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let base = super::file_name(&opts.out);
    if base.is_empty() || base == "." || base == ".." {
        return Err(ImportError::Input(format!(
            "--out {}: name a new directory",
            opts.out.display()
        )));
    }
    let run = RunDir::create(&parent, &base, |id| {
        crate::rundir::manifest::Manifest::new(id)
    })
    .map_err(|e| ImportError::Write(e.into()))?;
    let dir = run.dir.clone();
    let outcome = fill(run, opts, notes);
    if outcome.is_err() {
        let _ = std::fs::remove_dir_all(dir.path());
    }
    outcome
}

fn fill(run: OpenRun, opts: &ImportOptions, notes: &Notes) -> Result<Imported, ImportError> {
    let mut w = Writer::new(run, opts.skip_bad);
    w.rename = opts.rename.clone();
    if let Some(name) = &opts.dataset {
        let ds = crate::dataset::load(name, None)
            .map_err(|e| ImportError::Input(format!("--dataset {name}: {e}")))?;
        w.dataset = Some(Known::new(name, ds));
    }
    let summary = opts.format.read(&opts.paths, &opts.read, &mut w)?;
    if w.models.values().all(|m| m.samples == 0) {
        return Err(ImportError::Input(format!(
            "{}: no {} samples found in {}",
            opts.format,
            opts.format,
            list_paths(&opts.paths)
        )));
    }
    w.sync()?;
    let mut problems = w.problems(notes)?;
    w.finish(opts, summary, &mut problems, notes)
}

fn list_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(", ")
}

/// One problem as the files gave it.
struct SeenProblem {
    id: String,
    question: Option<String>,
    gold: Option<String>,
    subset: Option<String>,
    /// Where it was first read (for messages).
    first: String,
}

struct ModelOut {
    source_name: String,
    /// A new file of a new run, written by this process alone: plain buffered writes (a failed
    /// import removes the whole directory, so no torn line is ever resumed from).
    writer: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    /// Per problem: the sample indices taken.
    taken: HashMap<usize, HashSet<u32>>,
    samples: u64,
    with_verdict: u64,
    duplicates: u64,
    max_index: u32,
}

/// `--dataset`: its problems by id, and whether the source's ids turned out to be positions.
struct Known {
    name: String,
    sha256: String,
    problems: Vec<Problem>,
    by_id: HashMap<String, usize>,
    by_position: u64,
}

impl Known {
    fn new(name: &str, ds: crate::dataset::Dataset) -> Known {
        let by_id = ds
            .problems
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.clone(), i))
            .collect();
        Known {
            name: name.to_string(),
            sha256: ds.sha256,
            problems: ds.problems,
            by_id,
            by_position: 0,
        }
    }

    /// The dataset's problem for a source id: by id, else (harnesses that number documents,
    /// like lm-eval's `doc_id`) by position.
    fn find(&mut self, id: &str) -> Option<usize> {
        if let Some(&i) = self.by_id.get(id) {
            return Some(i);
        }
        let i = id
            .parse::<usize>()
            .ok()
            .filter(|&i| i < self.problems.len())?;
        self.by_position += 1;
        Some(i)
    }
}

struct Writer {
    run: OpenRun,
    rename: Option<String>,
    dataset: Option<Known>,
    skip_bad: bool,
    files: Vec<(PathBuf, InputFile)>,
    models: BTreeMap<String, ModelOut>,
    /// Source model name → this run's name.
    names: HashMap<String, String>,
    problems: Vec<SeenProblem>,
    index: HashMap<String, usize>,
    conflicts: Vec<String>,
    bad: u64,
    bad_examples: Vec<String>,
    imported_at: String,
}

impl Writer {
    fn new(run: OpenRun, skip_bad: bool) -> Writer {
        Writer {
            run,
            rename: None,
            dataset: None,
            skip_bad,
            files: Vec::new(),
            models: BTreeMap::new(),
            names: HashMap::new(),
            problems: Vec::new(),
            index: HashMap::new(),
            conflicts: Vec::new(),
            bad: 0,
            bad_examples: Vec::new(),
            imported_at: now_rfc3339(),
        }
    }

    /// This run's name for a source model: the name itself when it can name a checkpoint file,
    /// else with every other character replaced by `_` (and a number when two collide).
    fn model_name(&mut self, source: &str) -> Result<String, ImportError> {
        if let Some(n) = self.names.get(source) {
            return Ok(n.clone());
        }
        if let (Some(new), Some(first)) = (&self.rename, self.names.keys().next()) {
            return Err(ImportError::Input(format!(
                "--name {new}: the files hold more than one model ({first:?}, {source:?}); pick one with --model"
            )));
        }
        let mut base: String = self
            .rename
            .as_deref()
            .unwrap_or(source)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        base = base.trim_matches('.').to_string();
        if base.is_empty() {
            base = "model".into();
        }
        let mut name = base.clone();
        let mut i = 1;
        while self.models.keys().any(|k| k.eq_ignore_ascii_case(&name)) {
            i += 1;
            name = format!("{base}-{i}");
        }
        let path = self.run.dir.checkpoint(&name);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(ImportError::io("create", &path))?;
        let writer = std::io::BufWriter::with_capacity(1 << 20, file);
        self.models.insert(
            name.clone(),
            ModelOut {
                source_name: source.to_string(),
                writer,
                path,
                taken: HashMap::new(),
                samples: 0,
                with_verdict: 0,
                duplicates: 0,
                max_index: 0,
            },
        );
        self.names.insert(source.to_string(), name.clone());
        Ok(name)
    }

    /// The problem's position, recording its question and gold the first time (a later file
    /// that disagrees is named, the first value kept).
    fn problem(&mut self, s: &SourceSample) -> usize {
        if let Some(&p) = self.index.get(&s.problem_id) {
            let seen = &mut self.problems[p];
            for (what, old, new) in [
                ("gold answer", &mut seen.gold, &s.gold),
                ("question", &mut seen.question, &s.question),
            ] {
                match (old.as_ref(), new) {
                    (None, Some(_)) => *old = new.clone(),
                    (Some(a), Some(b)) if a.trim() != b.trim() && self.conflicts.len() < 20 => {
                        self.conflicts.push(format!(
                            "problem {}: {what} differs between {} and {}; the first is kept",
                            s.problem_id,
                            seen.first,
                            self.files[s.file].0.display()
                        ))
                    }
                    _ => {}
                }
            }
            return p;
        }
        let at = format!("{}{}", self.files[s.file].0.display(), s.at);
        self.problems.push(SeenProblem {
            id: s.problem_id.clone(),
            question: s.question.clone(),
            gold: s.gold.clone(),
            subset: s.subset.clone(),
            first: at,
        });
        self.index
            .insert(s.problem_id.clone(), self.problems.len() - 1);
        self.problems.len() - 1
    }

    fn sync(&mut self) -> Result<(), ImportError> {
        use std::io::Write;
        for m in self.models.values_mut() {
            m.writer
                .flush()
                .map_err(ImportError::io("write", &m.path))?;
            m.writer
                .get_ref()
                .sync_data()
                .map_err(ImportError::io("write", &m.path))?;
        }
        Ok(())
    }
}

impl Sink for Writer {
    fn open(&mut self, path: &Path) -> Result<usize, ImportError> {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(i) = self.files.iter().position(|f| f.0 == abs) {
            return Ok(i);
        }
        let (sha256, bytes) = hash_file(path)?;
        self.files.push((
            abs.clone(),
            InputFile {
                path: abs.display().to_string(),
                sha256,
                bytes,
            },
        ));
        Ok(self.files.len() - 1)
    }

    fn path(&self, file: usize) -> &Path {
        &self.files[file].0
    }

    fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
        let path = self.files[file].0.clone();
        if !self.skip_bad {
            return Err(ImportError::Bad { path, at, message });
        }
        self.bad += 1;
        if self.bad_examples.len() < BAD_NAMED {
            self.bad_examples
                .push(format!("{}{at}: {message}", path.display()));
        }
        Ok(())
    }

    fn sample(&mut self, mut s: SourceSample) -> Result<(), ImportError> {
        if s.problem_id.is_empty() {
            return self.bad(s.file, s.at, "no problem id".into());
        }
        if let Some(known) = &mut self.dataset {
            let Some(i) = known.find(&s.problem_id) else {
                return Err(ImportError::Bad {
                    path: self.files[s.file].0.clone(),
                    at: s.at,
                    message: format!(
                        "problem {} is not in --dataset {} (by id or position)",
                        crate::util::printable(&s.problem_id),
                        known.name
                    ),
                });
            };
            s.problem_id = known.problems[i].id.clone();
        }
        let name = self.model_name(&s.model)?;
        let p = self.problem(&s);
        let run_id = &self.run.manifest.run_id;
        let m = self.models.get_mut(&name).expect("model_name inserted it");
        let taken = m.taken.entry(p).or_default();
        let index = match s.repeat {
            Some(r) if taken.contains(&r) => {
                m.duplicates += 1;
                return Ok(());
            }
            Some(r) => r,
            None => (0..).find(|i| !taken.contains(i)).unwrap_or(0),
        };
        taken.insert(index);
        m.samples += 1;
        m.with_verdict += s.verdict.is_some() as u64;
        m.max_index = m.max_index.max(index);
        let truncated = matches!(s.finish_reason.as_deref(), Some("length"));
        let record = Record::<&str> {
            run_id,
            model: &name,
            model_id: &s.model,
            served_model: None,
            system_fingerprint: None,
            problem_id: &s.problem_id,
            sample_index: SampleIndex::Sample(index),
            seed: None,
            temperature: None,
            top_p: None,
            max_tokens: None,
            prompt_hash: "",
            response: Some(&s.response),
            extracted: None,
            response_sha256: None,
            found_by: None,
            reasoning_content: None,
            finish_reason: s.finish_reason.as_deref(),
            usage: None,
            choices_in_request: 1,
            latency_ms: 0,
            ttft_ms: None,
            tokens_per_s: None,
            started_at: "",
            finished_at: &self.imported_at,
            attempts: 0,
            billable_failures: 0,
            outcome: if truncated {
                UnitOutcome::Truncated
            } else {
                UnitOutcome::Ok
            },
            error_class: None,
            error: None,
            search: None,
            source: Some(SourceRef {
                file: s.file as u32,
                at: &s.at.label(),
                verdict: s.verdict,
                extracted: s.extracted.as_deref(),
            }),
        };
        let io = ImportError::io("write", &m.path);
        let mut line = serde_json::to_writer(&mut m.writer, &record);
        if line.is_ok() {
            line = std::io::Write::write_all(&mut m.writer, b"\n").map_err(serde_json::Error::io);
        }
        line.map_err(|e| io(std::io::Error::other(e)))
    }
}

/// sha256 and size of a file, streamed.
fn hash_file(path: &Path) -> Result<(String, u64), ImportError> {
    let mut f = open_regular(path).map_err(ImportError::io("read", path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(ImportError::io("read", path))?;
        if n == 0 {
            break;
        }
        bytes += n as u64;
        h.update(&buf[..n]);
    }
    Ok((hex(&h.finalize()), bytes))
}

impl Writer {
    /// The run's problems: questions and gold from the files, or from `dataset` by id (checked
    /// against the files' gold, disagreements named).
    fn problems(&mut self, notes: &Notes) -> Result<Vec<Problem>, ImportError> {
        let Some(known) = &self.dataset else {
            return self.problems_from_files();
        };
        let name = &known.name;
        if known.by_position > 0 {
            notes.note(&format!(
                "--dataset {name}: the source's problem ids are positions (0..{}), matched to the dataset's problems in order",
                known.problems.len()
            ));
        }
        let cfg = GradeConfig::default();
        let mut out = Vec::with_capacity(self.problems.len());
        let mut differ = Vec::new();
        for seen in &self.problems {
            let d = &known.problems[known.by_id[&seen.id]];
            if let Some(g) = &seen.gold {
                if !equivalent(&d.answer, g, &cfg) {
                    differ.push(format!(
                        "problem {}: the files' gold {:?} is not the dataset's {:?}",
                        seen.id,
                        crate::util::printable(g),
                        crate::util::printable(&d.answer)
                    ));
                }
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
            self.conflicts.extend(differ);
        }
        Ok(out)
    }

    fn problems_from_files(&self) -> Result<Vec<Problem>, ImportError> {
        let mut out = Vec::with_capacity(self.problems.len());
        for seen in &self.problems {
            let Some(gold) = seen.gold.clone().filter(|g| !g.trim().is_empty()) else {
                return Err(ImportError::Input(format!(
                    "problem {} (first read at {}) has no gold answer in the files; name a dataset that has it with --dataset",
                    crate::util::printable(&seen.id),
                    seen.first
                )));
            };
            out.push(Problem {
                id: seen.id.clone(),
                // Reports and prompts need a question; say plainly there was none.
                question: (seen.question.clone())
                    .filter(|q| !q.trim().is_empty())
                    .unwrap_or_else(|| ImportedProblem::NO_QUESTION.to_string()),
                answer: gold,
                subset: seen.subset.clone(),
                fields: BTreeMap::new(),
            });
        }
        Ok(out)
    }
}

impl Writer {
    fn finish(
        mut self,
        opts: &ImportOptions,
        summary: SourceSummary,
        problems: &mut [Problem],
        notes: &Notes,
    ) -> Result<Imported, ImportError> {
        let task = summary
            .task
            .clone()
            .or_else(|| opts.dataset.clone())
            .unwrap_or_else(|| opts.format.to_string());
        let relative = write_dataset(&self.run.dir, &task, problems)?;
        let config = self.config(&relative, problems.iter().any(|p| p.subset.is_some()));
        let config_json =
            serde_json::to_value(&config).map_err(|e| ImportError::Write(e.into()))?;
        let manifest_path = self.run.dir.manifest_path();
        let mut settings = crate::config::load_json(&config_json, &manifest_path)
            .map_err(|e| ImportError::Write(anyhow::anyhow!("the import's config: {e}")))?;
        settings.evaluation.dataset = self.run.dir.resolve(&relative).display().to_string();
        let plan = crate::plan::build(settings, None, None).map_err(ImportError::Write)?;
        let run_id = self.run.manifest.run_id.clone();
        let mut manifest = plan.new_manifest(&run_id);
        manifest.config_path = manifest_path.display().to_string();
        manifest.dataset.name = task.clone();
        manifest.dataset.files = vec![relative.display().to_string()];
        manifest.task_name = None;
        for (name, mm) in manifest.models.iter_mut() {
            let out = &self.models[name];
            mm.base_url = String::new();
            mm.ok = out.samples;
            mm.status = if out.samples == mm.units_planned {
                Status::Complete
            } else {
                Status::Incomplete
            };
        }
        let info = self.info(opts, summary, notes);
        manifest.imported = Some(info.clone());
        manifest.created_at = self.imported_at.clone();
        manifest.finished_at = Some(now_rfc3339());
        self.run.manifest = manifest;
        let interrupted = false;
        self.run
            .finish(interrupted)
            .map_err(|e| ImportError::Write(e.into()))?;
        // `finish` settles the run from its models; an import is done when it is written.
        self.run.manifest.status = Status::Complete;
        self.run.save().map_err(|e| ImportError::Write(e.into()))?;
        let disagreements = match &opts.disagreements {
            None => None,
            Some(out) => {
                let models: Vec<(String, u32)> = (self.models.iter())
                    .map(|(name, m)| (name.clone(), m.max_index + 1))
                    .collect();
                let cfg = plan.settings.evaluation.grade_config();
                let both = (models.as_slice(), &cfg);
                // The run is written by now: a failure here must not remove it.
                match super::disagree::write(out, &self.run.dir, &info, problems, both) {
                    Ok(n) => Some(n),
                    Err(e) => {
                        notes.warn(&format!(
                            "--disagreements {}: {e:#}; the run itself is written",
                            out.display()
                        ));
                        None
                    }
                }
            }
        };
        Ok(Imported {
            dir: self.run.dir.clone(),
            info,
            problems: problems.len(),
            disagreements,
        })
    }

    /// The stored config: one model per source model, n = the most samples any problem has, the
    /// dataset file beside the manifest.
    fn config(&self, dataset: &Path, subsets: bool) -> RawConfig {
        let models = self
            .models
            .iter()
            .map(|(name, m)| RawModel {
                name: Some(name.clone()),
                model_id: Some(m.source_name.clone()),
                n: Some(i64::from(m.max_index) + 1),
                // A source's greedy answer, if any, is one more sample: none is planned.
                greedy: Some(false),
                ..RawModel::default()
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

    fn info(&mut self, opts: &ImportOptions, summary: SourceSummary, notes: &Notes) -> ImportInfo {
        let mut extra = summary.notes;
        extra.append(&mut self.conflicts);
        for n in &extra {
            notes.note(n);
        }
        let models = self
            .models
            .iter()
            .map(|(name, m)| {
                let settings = summary
                    .models
                    .get(&m.source_name)
                    .cloned()
                    .unwrap_or_default();
                let entry = ImportedModel {
                    source_name: m.source_name.clone(),
                    settings,
                    samples: m.samples,
                    with_source_verdict: m.with_verdict,
                    duplicates: m.duplicates,
                };
                (name.clone(), entry)
            })
            .collect();
        ImportInfo {
            format: opts.format.to_string(),
            layout: summary.layout,
            imported_at: self.imported_at.clone(),
            files: self.files.iter().map(|f| f.1.clone()).collect(),
            gold_from: match &opts.dataset {
                Some(d) => format!("dataset {d}"),
                None => "the imported files".into(),
            },
            dataset_sha256: self.dataset.as_ref().map(|d| d.sha256.clone()),
            verdicts: summary.verdicts,
            models,
            aggregates: summary.aggregates,
            bad_records: self.bad,
            bad_examples: std::mem::take(&mut self.bad_examples),
            notes: extra,
        }
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
