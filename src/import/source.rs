//! What every reader of `gpassk import` speaks: the [`Reader`] a format is, the [`Sink`] it
//! streams samples into, and the samples, summary and errors that pass between them.

use super::metric::PaperMetric;
use crate::rundir::provenance::SourceSettings;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One format `gpassk import` reads: its name, how it recognises its files, how it reads them.
/// Each reader module holds one as `READER`; the list of them is [`super::formats::READERS`],
/// and `--format`, `auto`, the help and the errors all come from it.
pub struct Reader {
    /// The name `gpassk import` takes (`lm-eval`, `inspect`, …).
    pub name: &'static str,
    /// The harness and files, in a few words, for the help and `auto`'s messages.
    pub about: &'static str,
    /// The `--field` keys it takes (none: its fields are fixed).
    pub fields: &'static [&'static str],
    /// Whether a path is one of its files: cheap (a name, a first line or entry), never failing.
    pub claims: fn(&Path) -> bool,
    /// Streams the files under the paths (files, or the folders the harness wrote) into the sink.
    pub read: ReadFn,
}

/// [`Reader::read`].
pub type ReadFn = fn(&[PathBuf], &ReadOptions, &mut dyn Sink) -> Result<SourceSummary, ImportError>;

/// What a reader may be told besides its paths.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// `--task`: the sink keeps the samples of that dataset (or subset); a reader only reads it
    /// where the source gives it a meaning of its own (an lm-eval group of tasks).
    pub task: Option<String>,
    /// `--model`: the sink keeps that model's samples; a reader names a model with it when the
    /// files name none.
    pub model: Option<String>,
    /// `--field KEY=NAME`, checked against [`Reader::fields`] before reading.
    pub fields: BTreeMap<String, String>,
    /// `--dataset` gives the gold answers: a reader keeps the answer to re-grade even where its
    /// files hold no gold, rather than taking the source's verdict as the answer.
    pub dataset_gold: bool,
}

/// How a file given to [`Sink::open`] is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It holds samples: the same file reached twice is refused (its samples would count twice).
    Samples,
    /// It is read beside them (results, configs, reports): reaching it twice is harmless.
    Side,
}

/// Where in an input file something was read; shown after the file name (`f.jsonl:12`,
/// `f.parquet: row 3`, `f.json: item 17`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum At {
    /// A 1-based line of a text file.
    Line(u64),
    /// A 0-based row of a table (Parquet).
    Row(u64),
    /// An entry of a JSON object or array (or of an archive), by key or position.
    Item(String),
    /// The file as a whole.
    #[default]
    File,
}

impl At {
    /// The place as words, for a checkpoint line: `line 12`, `row 3`, `item 17`, `file`.
    pub fn label(&self) -> String {
        match self {
            At::Line(n) => format!("line {n}"),
            At::Row(n) => format!("row {n}"),
            At::Item(k) => format!("item {k}"),
            At::File => "file".into(),
        }
    }
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Line(n) => write!(f, ":{n}"),
            At::Row(n) => write!(f, ": row {n}"),
            At::Item(k) => write!(f, ": item {}", crate::util::printable(k)),
            At::File => Ok(()),
        }
    }
}

/// One generation, as a source file holds it.
#[derive(Debug, Clone, Default)]
pub struct SourceSample {
    /// The model as the source names it.
    pub model: String,
    /// The dataset (task, benchmark) it belongs to: each becomes a run of its own; empty when
    /// the files name none.
    pub dataset: String,
    pub problem_id: String,
    pub question: Option<String>,
    pub gold: Option<String>,
    pub subset: Option<String>,
    /// The source's repeat index (seed, epoch, trial), when it states one; else samples are
    /// numbered as they come.
    pub repeat: Option<u32>,
    /// The generation as returned; None when the source kept none (then `answer` is graded).
    pub response: Option<String>,
    /// What gpassk grades when there is no response: the source's final answer, or for an
    /// agent's trajectory its reward as `1` (full) or `0`, graded against the gold `1`.
    pub answer: Option<String>,
    /// The answer the source extracted, if it kept one.
    pub extracted: Option<String>,
    /// The source's verdict of this one sample, if it kept one.
    pub verdict: Option<bool>,
    pub finish_reason: Option<String>,
    /// Why the harness marked the sample as failed (an error, not a wrong answer), if it did.
    pub errored: Option<String>,
    /// The input file ([`Sink::open`]'s index) and the place in it.
    pub file: usize,
    pub at: At,
}

/// An aggregate the source stored, and how it is recomputed.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The model and dataset it belongs to, as the samples name them.
    pub model: String,
    pub dataset: String,
    /// The source's name for it.
    pub name: String,
    /// Its value as stored, on the source's scale.
    pub value: f64,
    pub recompute: Recompute,
}

/// How a stored aggregate is recomputed.
#[derive(Debug, Clone)]
pub enum Recompute {
    /// By the reader, from what only it saw (per-document values, rows): the value, or None
    /// with why not.
    Done { value: Option<f64>, basis: String },
    /// By the sink, from the source verdicts of the samples it kept: `metric` over the problems
    /// (of `subset` alone, when given), times `scale` (100 for a percentage). `files` (the
    /// [`Sink::open`] indices) limits it to the samples of the files the aggregate was computed
    /// from, where other files add samples to the same problems (two Inspect logs of one task);
    /// empty: every file.
    Verdicts {
        metric: PaperMetric,
        scale: f64,
        subset: Option<String>,
        files: Vec<usize>,
    },
}

/// What a reader learned besides the samples.
#[derive(Debug, Clone, Default)]
pub struct SourceSummary {
    /// The layout or version read (`lm-eval ≥ 0.4.3`, `EvalScope 1.x`…).
    pub layout: String,
    /// Per source model: its settings as the source recorded them.
    pub models: BTreeMap<String, SourceSettings>,
    pub aggregates: Vec<Stored>,
    /// Which of the source's marks became the per-sample verdicts (or why there are none).
    pub verdicts: String,
    /// The k the source reports its metrics at (τ-bench's pass^1…pass^n): the runs are scored
    /// at them (those up to the fewest samples a model has), besides gpassk's own.
    pub ks: Vec<u64>,
    /// Anything else the user should know (left-out filters, files without results…), each
    /// with the dataset it concerns: the one list of an import's notes.
    pub notes: Vec<Note>,
}

/// Something an import tells the user, and the dataset whose run it concerns: that run's
/// manifest keeps it; a note of the import as a whole (or of a dataset that got no run) is kept
/// by every run.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Note {
    /// The dataset as the samples name it (`""` when they name none); None: the whole import.
    pub dataset: Option<String>,
    pub text: String,
}

impl Note {
    /// A note about the run of `dataset` alone.
    pub fn of(dataset: &str, text: impl Into<String>) -> Note {
        Note {
            dataset: Some(dataset.to_string()),
            text: text.into(),
        }
    }

    /// A note about the import as a whole: its options, a file of no dataset, what no file gave.
    pub fn all(text: impl Into<String>) -> Note {
        Note {
            dataset: None,
            text: text.into(),
        }
    }
}

impl SourceSummary {
    /// A note about the run of `dataset` alone.
    pub fn note(&mut self, dataset: &str, text: impl Into<String>) {
        self.notes.push(Note::of(dataset, text));
    }

    /// A note about the import as a whole.
    pub fn note_all(&mut self, text: impl Into<String>) {
        self.notes.push(Note::all(text));
    }
}

/// Where readers send what they read. The one implementation writes runs
/// (`sink::Runs`); the readers' tests collect.
pub trait Sink {
    /// Registers an input file (hashed for the manifest, refused when it is a Git LFS pointer
    /// or, holding samples, a file already registered under another path) and returns its index.
    fn open(&mut self, path: &Path, role: Role) -> Result<usize, ImportError>;
    /// Says that a registered file is `dataset`'s though it may give none of its samples (a
    /// results, report or metrics file): when the files hold several datasets, that dataset's
    /// run lists it and the others do not. A file's samples say so without being told; a file
    /// said of no dataset (a run's config) is listed in every run.
    fn belongs(&mut self, file: usize, dataset: &str);
    /// One sample.
    fn sample(&mut self, sample: SourceSample) -> Result<(), ImportError>;
    /// A malformed record: an error, or with `--skip-bad` counted and named.
    fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError>;
    /// The path of a registered file (for messages).
    fn path(&self, file: usize) -> &Path;
    /// Whether the samples of `model` in `dataset` (None: not known before reading) are wanted
    /// under `--model` and `--task`; when not, the sink says `file` was left out and the reader
    /// need not read it.
    fn wants(&mut self, file: &Path, model: Option<&str>, dataset: Option<&str>) -> bool;
}

#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// A malformed input: the file, where in it, and what is wrong (exit 2).
    #[error("{}{at}: {message}", path.display())]
    Bad {
        path: PathBuf,
        at: At,
        message: String,
    },
    /// Anything else the user must fix: arguments, a missing file, an unknown layout (exit 2).
    #[error("{0}")]
    Input(String),
    #[error("cannot {what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing the run directory failed (not the input's fault).
    #[error(transparent)]
    Write(#[from] anyhow::Error),
}

impl ImportError {
    /// Whether the user's input is at fault (exit 2) rather than the machine (exit 1).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, ImportError::Bad { .. } | ImportError::Input(_))
    }

    pub(crate) fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.to_path_buf();
        move |source| ImportError::Io { what, path, source }
    }

    /// A malformed `path` as a whole (or at `at`).
    pub(crate) fn bad(path: &Path, at: At, message: impl Into<String>) -> Self {
        ImportError::Bad {
            path: path.to_path_buf(),
            at,
            message: message.into(),
        }
    }
}
