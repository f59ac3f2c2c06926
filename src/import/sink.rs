//! The one sink of every reader. It keeps what `--model` and `--task` ask for, gives each
//! dataset a run directory of its own (checkpoint records through [`RunDir`] and [`Record`]),
//! registers every input file once, numbers the samples of several files of the same problems
//! one after another, and counts every sample it drops, so the console can say so.

use super::files::lfs_pointer_text;
use super::source::{At, ImportError, Note, Role, Sink, SourceSample};
use crate::dataset::Problem;
use crate::metrics::MAX_N;
use crate::rundir::provenance::{InputFile, SourceRef};
use crate::rundir::record::{read_records, CheckpointError, Record, SampleIndex, UnitOutcome};
use crate::rundir::{OpenRun, RunDir};
use crate::util::{hex, now_rfc3339, open_regular, printable};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most malformed records an import names (the rest are counted).
const BAD_NAMED: usize = 20;

/// What an errored sample (a harness failure, not a wrong answer) counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Errored {
    /// Kept, graded as any sample: one without an answer is wrong (τ-bench's convention).
    #[default]
    Fail,
    /// Left out: the problem keeps its other samples (τ²-bench's convention).
    Drop,
}

/// What the sink is told besides the samples.
#[derive(Debug, Clone, Default)]
pub(super) struct SinkOptions {
    pub model: Option<String>,
    pub task: Option<String>,
    pub rename: Option<String>,
    pub skip_bad: bool,
    pub errored: Errored,
}

/// An input file as registered.
struct Input {
    path: PathBuf,
    info: InputFile,
    /// Device and inode: the same file under another name (a hard link, a second spelling).
    id: Option<(u64, u64)>,
    role: Role,
    /// The datasets whose samples it holds or that it was said to belong to
    /// ([`Sink::belongs`]): the runs that list it when there are several.
    datasets: Vec<String>,
}

impl Input {
    fn belongs(&mut self, dataset: &str) {
        if !self.datasets.iter().any(|d| d == dataset) {
            self.datasets.push(dataset.to_string());
        }
    }
}

/// `--dataset`: its problems by id, and whether the source's ids turned out to be positions.
pub(super) struct Known {
    pub name: String,
    pub sha256: String,
    pub problems: Vec<Problem>,
    pub by_id: HashMap<String, usize>,
    pub by_position: u64,
}

impl Known {
    pub(super) fn new(name: &str, ds: crate::dataset::Dataset) -> Known {
        let by_id = (ds.problems.iter().enumerate())
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
    pub(super) fn find(&mut self, id: &str) -> Option<usize> {
        if let Some(&i) = self.by_id.get(id) {
            return Some(i);
        }
        let i = (id.parse::<usize>().ok()).filter(|&i| i < self.problems.len())?;
        self.by_position += 1;
        Some(i)
    }
}

/// One problem as the files gave it.
pub(super) struct SeenProblem {
    pub id: String,
    pub question: Option<String>,
    pub gold: Option<String>,
    pub subset: Option<String>,
    /// Where it was first read (for messages).
    pub first: String,
}

/// One model of one run.
pub(super) struct ModelOut {
    pub source_name: String,
    /// A new file of a new run, written by this process alone: plain buffered writes (a failed
    /// import removes the whole staging folder, so no torn line is ever resumed from).
    writer: std::io::BufWriter<std::fs::File>,
    path: PathBuf,
    /// Per problem (its position in the run): its samples sorted by index, each with the file
    /// that gave it and the source's verdict. Sparse, so memory follows the samples read, not
    /// the indices a file states.
    pub taken: Vec<Vec<Taken>>,
    pub samples: u64,
    pub with_verdict: u64,
    /// Records of a sample its own file had already given (the first kept).
    pub duplicates: u64,
    /// Samples numbered after those an earlier file gave the same problem.
    pub renumbered: u64,
    pub max_index: u32,
}

/// A sample of a problem: its index, the file that gave it and the source's verdict.
#[derive(Debug, Clone, Copy)]
pub(super) struct Taken {
    index: u32,
    pub file: u32,
    pub verdict: Option<bool>,
}

/// One dataset's run being written.
pub(super) struct RunOut {
    pub run: OpenRun,
    pub dataset: String,
    pub models: BTreeMap<String, ModelOut>,
    pub problems: Vec<SeenProblem>,
    index: HashMap<String, usize>,
    pub conflicts: Vec<String>,
}

/// What the sink left out or counted, for the console and the manifest, each by the dataset
/// (or input file) it concerns.
#[derive(Default)]
pub(super) struct Counts {
    /// Per input file: malformed records skipped (`--skip-bad`).
    pub bad: BTreeMap<usize, u64>,
    /// The first [`BAD_NAMED`] of them, with their file.
    pub bad_examples: Vec<(usize, String)>,
    /// (dataset, `model M` / `dataset D`) → samples left out by `--model` / `--task`.
    pub left_out: BTreeMap<(String, String), u64>,
    /// Files left out, with the dataset they hold when it was known.
    pub left_out_files: Vec<(Option<String>, String)>,
    /// Per dataset: samples the harness marked as errored, and the first of them.
    pub errored: BTreeMap<String, (u64, String)>,
}

/// The sink: runs being written in a staging folder, one per dataset.
pub(super) struct Runs {
    staging: PathBuf,
    opts: SinkOptions,
    pub known: Option<Known>,
    inputs: Vec<Input>,
    pub runs: BTreeMap<String, RunOut>,
    /// Source model → this import's name for it.
    names: HashMap<String, String>,
    pub counts: Counts,
    pub imported_at: String,
}

impl Runs {
    pub(super) fn new(staging: PathBuf, opts: SinkOptions) -> Runs {
        Runs {
            staging,
            opts,
            known: None,
            inputs: Vec::new(),
            runs: BTreeMap::new(),
            names: HashMap::new(),
            counts: Counts::default(),
            imported_at: now_rfc3339(),
        }
    }

    /// The input files the run of `dataset` lists: every one when the import made one run;
    /// else the files of that dataset and those said of none (a config read for all), in the
    /// order read. The run's checkpoint records are renumbered to their file's place in it.
    pub(super) fn own_inputs(&self, dataset: &str) -> Result<Vec<InputFile>, ImportError> {
        let mut places = Vec::with_capacity(self.inputs.len());
        let mut files = Vec::new();
        for (i, f) in self.inputs.iter().enumerate() {
            let ours = self.lists(dataset, i);
            places.push(ours.then_some(files.len() as u32));
            if ours {
                files.push(f.info.clone());
            }
        }
        if files.len() < self.inputs.len() {
            for m in self.runs[dataset].models.values() {
                renumber_files(&m.path, &places)?;
            }
        }
        Ok(files)
    }

    /// Whether the run of `dataset` lists input file `file` ([`Runs::own_inputs`]).
    fn lists(&self, dataset: &str, file: usize) -> bool {
        let f = &self.inputs[file];
        self.runs.len() < 2 || f.datasets.is_empty() || f.datasets.iter().any(|d| d == dataset)
    }

    /// The malformed records skipped in the files the run of `dataset` lists, and the first of
    /// them named.
    pub(super) fn bad_of(&self, dataset: &str) -> (u64, Vec<String>) {
        let c = &self.counts;
        let count = (c.bad.iter())
            .filter(|(&f, _)| self.lists(dataset, f))
            .map(|(_, n)| n)
            .sum();
        let named = (c.bad_examples.iter())
            .filter(|(f, _)| self.lists(dataset, *f))
            .map(|(_, e)| e.clone())
            .collect();
        (count, named)
    }

    /// This import's name of a source model, once it gave a sample.
    pub(super) fn model_name_of(&self, source: &str) -> Option<&String> {
        self.names.get(source)
    }

    /// What the sink left out, dropped or numbered on, one note each, of the dataset it
    /// concerns: the console says them and the run of that dataset keeps them.
    pub(super) fn notes(&self) -> Vec<Note> {
        let c = &self.counts;
        let mut out: Vec<Note> = (c.left_out.iter())
            .map(|((d, what), n)| {
                Note::of(d, format!("{what}: {n} samples left out (--model/--task)"))
            })
            .collect();
        out.extend((c.left_out_files.iter()).map(|(d, f)| {
            let text = format!("left out: {f}");
            match d {
                Some(d) => Note::of(d, text),
                None => Note::all(text),
            }
        }));
        let counted = match self.opts.errored {
            Errored::Fail => {
                "are kept and graded (without an answer, wrong; --errored drop leaves them out)"
            }
            Errored::Drop => "were left out (--errored drop)",
        };
        out.extend((c.errored.iter()).map(|(d, (n, first))| {
            let text =
                format!("{n} samples the harness marked as errored {counted}; the first: {first}");
            Note::of(d, text)
        }));
        for r in self.runs.values() {
            let d = &r.dataset;
            for (name, m) in &r.models {
                if m.duplicates > 0 {
                    out.push(Note::of(d, format!(
                        "model {name}: {} records repeat a sample their own file gave already (a re-run appended to it?); the first of each is kept",
                        m.duplicates
                    )));
                }
                if m.renumbered > 0 {
                    out.push(Note::of(d, format!(
                        "model {name}: {} samples of problems an earlier file gave too are numbered after them (several files of the same problems: seeds, shards)",
                        m.renumbered
                    )));
                }
            }
            out.extend(r.conflicts.iter().map(|c| Note::of(d, c.clone())));
        }
        out
    }

    /// Flushes and syncs every checkpoint file.
    pub(super) fn sync(&mut self) -> Result<(), ImportError> {
        use std::io::Write;
        for m in self.runs.values_mut().flat_map(|r| r.models.values_mut()) {
            m.writer
                .flush()
                .map_err(ImportError::io("write", &m.path))?;
            (m.writer.get_ref().sync_data()).map_err(ImportError::io("write", &m.path))?;
        }
        Ok(())
    }

    /// Whether `--model` and `--task` keep the sample; counts it when not.
    fn kept(&mut self, s: &SourceSample) -> bool {
        let model_ok = self.opts.model.as_ref().is_none_or(|m| *m == s.model);
        let task_ok = self
            .opts
            .task
            .as_ref()
            .is_none_or(|t| *t == s.dataset || s.subset.as_ref() == Some(t));
        if !model_ok {
            *self
                .counts
                .left_out
                .entry((s.dataset.clone(), format!("model {}", s.model)))
                .or_default() += 1;
        } else if !task_ok {
            let d = if s.dataset.is_empty() {
                "(unnamed)"
            } else {
                &s.dataset
            };
            *self
                .counts
                .left_out
                .entry((s.dataset.clone(), format!("dataset {d}")))
                .or_default() += 1;
        }
        model_ok && task_ok
    }

    /// Claims the run of `dataset` in the staging folder, on its first sample.
    fn claim_run(&mut self, dataset: &str) -> Result<(), ImportError> {
        if !self.runs.contains_key(dataset) {
            let base = match dataset {
                "" => "run".to_string(),
                d => crate::util::path_component(d).into_owned(),
            };
            let run = RunDir::create(&self.staging, &base, crate::rundir::manifest::Manifest::new)
                .map_err(|e| ImportError::Write(e.into()))?;
            self.runs.insert(
                dataset.to_string(),
                RunOut {
                    run,
                    dataset: dataset.to_string(),
                    models: BTreeMap::new(),
                    problems: Vec::new(),
                    index: HashMap::new(),
                    conflicts: Vec::new(),
                },
            );
        }
        Ok(())
    }

    /// This import's name for a source model: the name itself when it can name a checkpoint
    /// file, else with every other character replaced by `_` (and a number when two collide).
    fn model_name(&mut self, source: &str) -> Result<String, ImportError> {
        if let Some(n) = self.names.get(source) {
            return Ok(n.clone());
        }
        if let (Some(new), Some(first)) = (&self.opts.rename, self.names.keys().next()) {
            return Err(ImportError::Input(format!(
                "--name {new}: the files hold more than one model ({:?}, {:?}); pick one with --model",
                printable(first),
                printable(source)
            )));
        }
        let base = safe_name(self.opts.rename.as_deref().unwrap_or(source));
        let mut name = base.clone();
        let mut i = 1;
        while self.names.values().any(|k| k.eq_ignore_ascii_case(&name)) {
            i += 1;
            name = format!("{base}-{i}");
        }
        self.names.insert(source.to_string(), name.clone());
        Ok(name)
    }

    /// With `--skip-bad`, counts and names a malformed record of input `file`; else it is
    /// the error.
    fn refuse(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
        let path = self.inputs[file].path.clone();
        refuse(&self.opts, &mut self.counts, (file, path), at, message)
    }

    /// An errored sample: counted, then dropped (`Errored::Drop`) or kept, graded as any
    /// sample (without an answer, a wrong one); whether it is kept.
    fn errored(&mut self, s: &SourceSample) -> bool {
        let Some(why) = &s.errored else { return true };
        let path = &self.inputs[s.file].path;
        let first = || format!("{}{}: {}", path.display(), s.at, printable(why));
        let e = self.counts.errored.entry(s.dataset.clone());
        e.or_insert_with(|| (0, first())).0 += 1;
        self.opts.errored == Errored::Fail
    }
}

/// With `--skip-bad`, counts and names a malformed record; else it is the error.
fn refuse(
    opts: &SinkOptions,
    counts: &mut Counts,
    (file, path): (usize, PathBuf),
    at: At,
    message: String,
) -> Result<(), ImportError> {
    if !opts.skip_bad {
        return Err(ImportError::Bad { path, at, message });
    }
    *counts.bad.entry(file).or_default() += 1;
    if counts.bad_examples.len() < BAD_NAMED {
        let named = format!("{}{at}: {message}", path.display());
        counts.bad_examples.push((file, named));
    }
    Ok(())
}

/// `name` as a checkpoint file may be named.
fn safe_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    match safe.trim_matches('.') {
        "" => "model".into(),
        s => s.to_string(),
    }
}

impl RunOut {
    /// The problem's position, recording its question and gold the first time (a later file
    /// that disagrees is named, the first value kept).
    fn problem(&mut self, s: &SourceSample, file: &Path) -> usize {
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
                            printable(&s.problem_id),
                            seen.first,
                            file.display()
                        ))
                    }
                    _ => {}
                }
            }
            return p;
        }
        self.problems.push(SeenProblem {
            id: s.problem_id.clone(),
            question: s.question.clone(),
            gold: s.gold.clone(),
            subset: s.subset.clone(),
            first: format!("{}{}", file.display(), s.at),
        });
        self.index
            .insert(s.problem_id.clone(), self.problems.len() - 1);
        self.problems.len() - 1
    }
}

/// A run's output of one model, its checkpoint file created on its first sample.
fn model_out<'a>(
    models: &'a mut BTreeMap<String, ModelOut>,
    dir: &RunDir,
    (name, source): (&str, &str),
) -> Result<&'a mut ModelOut, ImportError> {
    if !models.contains_key(name) {
        let path = dir.checkpoint(name);
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(ImportError::io("create", &path))?;
        let out = ModelOut {
            source_name: source.to_string(),
            writer: std::io::BufWriter::with_capacity(1 << 20, file),
            path,
            taken: Vec::new(),
            samples: 0,
            with_verdict: 0,
            duplicates: 0,
            renumbered: 0,
            max_index: 0,
        };
        models.insert(name.to_string(), out);
    }
    Ok(models.get_mut(name).expect("inserted above"))
}

/// Where a sample goes in its model's checkpoint.
enum Slot {
    Index(u32),
    /// Its own file gave this (problem, sample) already.
    Duplicate,
    /// Past the samples per problem gpassk scores.
    TooFar(u32),
}

impl ModelOut {
    /// The sample index of a sample of problem `p` from `file`: the one it states, unless its
    /// own file gave that one already (a duplicate) or another file did (then numbered after
    /// every sample the problem has: seeds and shards of the same problems add samples).
    fn slot(&mut self, p: usize, stated: Option<u32>, file: u32, verdict: Option<bool>) -> Slot {
        if self.taken.len() <= p {
            self.taken.resize_with(p + 1, Vec::new);
        }
        let list = &mut self.taken[p];
        let next = list.last().map_or(0, |t| t.index.saturating_add(1));
        // The index and where it goes in the sorted list (mostly at the end).
        let (index, at) = match stated {
            Some(r) if r >= next => (r, list.len()),
            Some(r) => match list.binary_search_by_key(&r, |t| t.index) {
                Err(at) => (r, at),
                Ok(i) if list[i].file == file => return Slot::Duplicate,
                Ok(_) => {
                    self.renumbered += 1;
                    (next, list.len())
                }
            },
            None => (next, list.len()),
        };
        if u64::from(index) >= MAX_N {
            return Slot::TooFar(index);
        }
        let taken = Taken {
            index,
            file,
            verdict,
        };
        list.insert(at, taken);
        Slot::Index(index)
    }

    fn write(&mut self, record: &Record<&str>) -> Result<(), ImportError> {
        let io = ImportError::io("write", &self.path);
        let mut line = serde_json::to_writer(&mut self.writer, record);
        if line.is_ok() {
            line =
                std::io::Write::write_all(&mut self.writer, b"\n").map_err(serde_json::Error::io);
        }
        line.map_err(|e| io(std::io::Error::other(e)))
    }
}

impl Sink for Runs {
    fn open(&mut self, path: &Path, role: Role) -> Result<usize, ImportError> {
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        if let Some(i) = self.inputs.iter().position(|f| f.path == abs) {
            self.inputs[i].role = if role == Role::Samples {
                role
            } else {
                self.inputs[i].role
            };
            return Ok(i);
        }
        let id = file_id(path);
        let twin = self.inputs.iter().position(|f| id.is_some() && f.id == id);
        if let Some(i) = twin {
            let other = &self.inputs[i];
            if role == Role::Side && other.role == Role::Side {
                return Ok(i);
            }
            return Err(ImportError::Input(format!(
                "{} and {} are the same file (a hard link or another path to it): its samples would count twice; give it once",
                other.path.display(),
                abs.display()
            )));
        }
        let (sha256, bytes) = hash_file(path)?;
        if let Some(same) = self.inputs.iter().find(|f| {
            f.info.sha256 == sha256 && role == Role::Samples && f.role == Role::Samples && bytes > 0
        }) {
            return Err(ImportError::Input(format!(
                "{} and {} hold the same bytes (sha256 {}): the same samples would count twice; give one of them",
                same.path.display(),
                abs.display(),
                crate::util::short(&sha256)
            )));
        }
        let info = InputFile {
            path: abs.display().to_string(),
            sha256,
            bytes,
        };
        self.inputs.push(Input {
            path: abs,
            info,
            id,
            role,
            datasets: Vec::new(),
        });
        Ok(self.inputs.len() - 1)
    }

    fn path(&self, file: usize) -> &Path {
        &self.inputs[file].path
    }

    fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
        self.refuse(file, at, message)
    }

    fn wants(&mut self, file: &Path, model: Option<&str>, dataset: Option<&str>) -> bool {
        let model_off = (self.opts.model.as_deref())
            .zip(model)
            .filter(|(want, m)| want != m);
        let task_off = (self.opts.task.as_deref())
            .zip(dataset)
            .filter(|(want, d)| want != d);
        let why = match (model_off, task_off) {
            (Some((want, m)), _) => format!("model {m}, not --model {want}"),
            (None, Some((want, d))) => format!("dataset {d}, not --task {want}"),
            (None, None) => return true,
        };
        let named = format!("{} ({})", file.display(), printable(&why));
        (self.counts.left_out_files).push((dataset.map(str::to_string), named));
        false
    }

    fn belongs(&mut self, file: usize, dataset: &str) {
        self.inputs[file].belongs(dataset);
    }

    fn sample(&mut self, mut s: SourceSample) -> Result<(), ImportError> {
        // Before any filter: a file of a dataset not imported is listed by no run.
        self.inputs[s.file].belongs(&s.dataset);
        if s.problem_id.is_empty() {
            return self.bad(s.file, s.at, "no problem id".into());
        }
        if !self.kept(&s) || !self.errored(&s) {
            return Ok(());
        }
        if let Some(known) = &mut self.known {
            match known.find(&s.problem_id) {
                Some(i) => s.problem_id = known.problems[i].id.clone(),
                None => {
                    let message = format!(
                        "problem {} is not in --dataset {} (by id or position)",
                        printable(&s.problem_id),
                        known.name
                    );
                    return Err(ImportError::bad(&self.inputs[s.file].path, s.at, message));
                }
            }
        }
        let name = self.model_name(&s.model)?;
        self.claim_run(&s.dataset)?;
        let Runs {
            runs,
            opts,
            counts,
            imported_at,
            inputs,
            ..
        } = self;
        let file_path = &inputs[s.file].path;
        let run = runs.get_mut(&s.dataset).expect("claimed above");
        let p = run.problem(&s, file_path);
        let RunOut {
            run: open, models, ..
        } = run;
        let m = model_out(models, &open.dir, (&name, &s.model))?;
        let index = match m.slot(p, s.repeat, s.file as u32, s.verdict) {
            Slot::Duplicate => {
                m.duplicates += 1;
                return Ok(());
            }
            Slot::TooFar(i) => {
                let message = format!(
                    "sample {i} of problem {}: past the {MAX_N} samples per problem gpassk scores",
                    printable(&s.problem_id)
                );
                return refuse(opts, counts, (s.file, file_path.clone()), s.at, message);
            }
            Slot::Index(i) => i,
        };
        m.samples += 1;
        m.max_index = m.max_index.max(index);
        m.with_verdict += s.verdict.is_some() as u64;
        let at = s.at.label();
        m.write(&record(
            &s,
            (&open.manifest.run_id, &name, &at),
            index,
            imported_at,
        ))
    }
}

/// The checkpoint record of one imported sample.
fn record<'a>(
    s: &'a SourceSample,
    (run_id, name, at): (&'a str, &'a str, &'a str),
    index: u32,
    imported_at: &'a str,
) -> Record<&'a str> {
    let truncated = matches!(s.finish_reason.as_deref(), Some("length"));
    Record {
        run_id,
        model: name,
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
        response: s.response.as_deref(),
        // A sample kept without its text is graded by the answer the source gave.
        extracted: s
            .response
            .is_none()
            .then_some(s.answer.as_deref())
            .flatten(),
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
        finished_at: imported_at,
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
            at,
            verdict: s.verdict,
            extracted: s.extracted.as_deref(),
        }),
    }
}

/// Rewrites a checkpoint with each record's `source.file` (an index into every input read) moved
/// to `places[file]` (its place in the run's own list); written atomically over it.
fn renumber_files(path: &Path, places: &[Option<u32>]) -> Result<(), ImportError> {
    use std::io::Write;
    let io = |source| CheckpointError::Io {
        path: path.to_path_buf(),
        source,
    };
    let renumber = |file: &mut std::fs::File| -> anyhow::Result<()> {
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        let mut line = Vec::new();
        read_records(path, |mut r| {
            if let Some(s) = &mut r.source {
                let place = places.get(s.file as usize).copied().flatten();
                s.file = place.ok_or_else(|| {
                    io(std::io::Error::other(format!(
                        "a sample of input file {} in a run that does not list it",
                        s.file
                    )))
                })?;
            }
            line.clear();
            serde_json::to_writer(&mut line, &r).map_err(|e| io(e.into()))?;
            line.push(b'\n');
            out.write_all(&line).map_err(io)
        })?;
        out.flush()?;
        Ok(())
    };
    crate::util::write_atomic_with(path, renumber).map_err(ImportError::Write)
}

/// Device and inode of a file, where the platform has them.
fn file_id(path: &Path) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// sha256 and size of a file, streamed; a Git LFS pointer is refused, named.
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
        if bytes == 0 {
            if let Some(said) = lfs_pointer_text(&buf[..n]) {
                return Err(ImportError::bad(path, At::File, said));
            }
        }
        bytes += n as u64;
        h.update(&buf[..n]);
    }
    Ok((hex(&h.finalize()), bytes))
}

/// A problem of a run, with the dataset's fields: for the run's dataset file.
pub(super) fn problem_of(seen: &SeenProblem, gold: String) -> Problem {
    Problem {
        id: seen.id.clone(),
        // Reports and prompts need a question; say plainly there was none.
        question: (seen.question.clone())
            .filter(|q| !q.trim().is_empty())
            .unwrap_or_else(|| crate::rundir::provenance::ImportedProblem::NO_QUESTION.to_string()),
        answer: gold,
        subset: seen.subset.clone(),
        fields: BTreeMap::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out() -> ModelOut {
        let file = tempfile::tempfile().unwrap();
        ModelOut {
            source_name: "m".into(),
            writer: std::io::BufWriter::new(file),
            path: PathBuf::from("m.jsonl"),
            taken: Vec::new(),
            samples: 0,
            with_verdict: 0,
            duplicates: 0,
            renumbered: 0,
            max_index: 0,
        }
    }

    fn index(slot: Slot) -> Option<u32> {
        match slot {
            Slot::Index(i) => Some(i),
            _ => None,
        }
    }

    #[test]
    fn stated_indices_fill_gaps_other_files_add_after_and_a_repeat_is_a_duplicate() {
        let mut m = out();
        assert_eq!(index(m.slot(0, Some(2), 0, Some(true))), Some(2));
        assert_eq!(index(m.slot(0, Some(0), 0, Some(false))), Some(0));
        assert!(matches!(m.slot(0, Some(2), 0, None), Slot::Duplicate));
        // Another file stating index 0 again: a seed of the same problem, numbered after.
        assert_eq!(index(m.slot(0, Some(0), 1, Some(true))), Some(3));
        assert_eq!(m.renumbered, 1);
        assert_eq!(index(m.slot(0, None, 1, Some(true))), Some(4));
        assert_eq!(index(m.slot(0, Some(1), 1, Some(false))), Some(1));
        let order: Vec<(u32, Option<bool>)> =
            (m.taken[0].iter()).map(|t| (t.index, t.verdict)).collect();
        let want = [(0, Some(false)), (1, Some(false)), (2, Some(true))];
        assert_eq!(order[..3], want);
        assert_eq!(order.len(), 5);
        // Problem 5 first seen after problem 0: problems between stay empty.
        assert_eq!(index(m.slot(5, None, 0, None)), Some(0));
        assert!(m.taken[1..5].iter().all(Vec::is_empty));
    }

    #[test]
    fn a_far_index_takes_one_entry_and_past_max_n_is_too_far() {
        let mut m = out();
        let last = (MAX_N - 1) as u32;
        for p in 0..1000 {
            assert_eq!(index(m.slot(p, Some(last), 0, None)), Some(last));
        }
        assert!(m.taken.iter().all(|l| l.len() == 1 && l.capacity() < 16));
        assert!(matches!(
            m.slot(0, Some(MAX_N as u32), 0, None),
            Slot::TooFar(_)
        ));
        // Renumbered past the limit: too far as well, never wrapped.
        assert!(matches!(m.slot(0, Some(last), 1, None), Slot::TooFar(_)));
    }
}
