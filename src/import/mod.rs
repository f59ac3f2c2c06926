//! `gpassk import`: other harnesses' sample logs (lm-eval, OpenCompass, lighteval, EvalScope,
//! Qwen2.5-Math, any JSONL) turned into ordinary run directories, one checkpoint record per
//! imported sample with its provenance and the source's own verdict.
//!
//! Each format is a reader that streams its files into a [`Sink`]; [`writer`] is the one sink,
//! which writes through [`crate::rundir::RunDir`] and [`crate::rundir::record::Record`].

pub mod detect;
mod disagree;
pub mod evalscope;
pub mod jsonl;
pub mod lighteval;
pub mod lm_eval;
pub mod opencompass;
pub mod qwen_math;
mod stream;
pub mod writer;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::rundir::provenance::{AggregateCheck, SourceSettings};
pub use writer::{import, ImportOptions, Imported};

/// The formats `gpassk import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    LmEval,
    Opencompass,
    Lighteval,
    Evalscope,
    QwenMath,
    Jsonl,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::LmEval,
        Format::Opencompass,
        Format::Lighteval,
        Format::Evalscope,
        Format::QwenMath,
        Format::Jsonl,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::LmEval => "lm-eval",
            Format::Opencompass => "opencompass",
            Format::Lighteval => "lighteval",
            Format::Evalscope => "evalscope",
            Format::QwenMath => "qwen-math",
            Format::Jsonl => "jsonl",
        }
    }

    /// Streams `paths` (files or the folders a harness wrote) into `sink`.
    pub fn read(
        self,
        paths: &[PathBuf],
        opts: &ReadOptions,
        sink: &mut dyn Sink,
    ) -> Result<SourceSummary, ImportError> {
        match self {
            Format::LmEval => lm_eval::read(paths, opts, sink),
            Format::Opencompass => opencompass::read(paths, opts, sink),
            Format::Lighteval => lighteval::read(paths, opts, sink),
            Format::Evalscope => evalscope::read(paths, opts, sink),
            Format::QwenMath => qwen_math::read(paths, opts, sink),
            Format::Jsonl => jsonl::read(paths, opts, sink),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a reader may be told besides its paths.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    /// The task (lm-eval, lighteval), dataset (OpenCompass) or benchmark (EvalScope) to take
    /// when the files hold several.
    pub task: Option<String>,
    /// The model to take when the files hold several (others are left out, and said so).
    pub model: Option<String>,
    /// `jsonl`: which field holds what (`problem_id`, `response`, `gold`, `question`, `model`,
    /// `verdict`, `extracted`, `repeat`, `subset`).
    pub fields: BTreeMap<String, String>,
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
    /// An entry of a JSON object or array, by key or position.
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
    pub problem_id: String,
    pub question: Option<String>,
    pub gold: Option<String>,
    pub subset: Option<String>,
    /// The source's repeat index, when it states one; else samples are numbered as they come.
    pub repeat: Option<u32>,
    /// The generation as returned.
    pub response: String,
    /// The answer the source extracted, if it kept one.
    pub extracted: Option<String>,
    /// The source's verdict of this one sample, if it kept one.
    pub verdict: Option<bool>,
    pub finish_reason: Option<String>,
    /// The input file ([`Sink::open`]'s index) and the place in it.
    pub file: usize,
    pub at: At,
}

/// What a reader learned besides the samples.
#[derive(Debug, Clone, Default)]
pub struct SourceSummary {
    /// The layout or version read (`lm-eval ≥ 0.4.3`, `EvalScope 1.x`…).
    pub layout: String,
    /// The task or dataset name the source gives, for the run's dataset name.
    pub task: Option<String>,
    pub models: BTreeMap<String, SourceSettings>,
    pub aggregates: Vec<AggregateCheck>,
    /// Which of the source's marks became the per-sample verdicts (or why there are none).
    pub verdicts: String,
    /// Anything else the user should know (left-out tasks, models, filters).
    pub notes: Vec<String>,
}

/// Where readers send what they read.
pub trait Sink {
    /// Registers an input file (hashed for the manifest) and returns its index.
    fn open(&mut self, path: &Path) -> Result<usize, ImportError>;
    /// One sample.
    fn sample(&mut self, sample: SourceSample) -> Result<(), ImportError>;
    /// A malformed record: an error, or with `--skip-bad` counted and named.
    fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError>;
    /// The path of a registered file (for messages).
    fn path(&self, file: usize) -> &Path;
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
}

/// Every file under `paths` (folders walked in name order) whose name `wanted` accepts.
pub(crate) fn files_under(
    paths: &[PathBuf],
    wanted: impl Fn(&Path) -> bool,
) -> Result<Vec<PathBuf>, ImportError> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(ImportError::io("read", p))?;
        if meta.is_dir() {
            walk(p, &wanted, &mut out)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(
    dir: &Path,
    wanted: &dyn Fn(&Path) -> bool,
    out: &mut Vec<PathBuf>,
) -> Result<(), ImportError> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(ImportError::io("read folder", dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for e in entries {
        // Symlinks are not followed: an archive folder linking to itself must not loop.
        let Ok(meta) = std::fs::symlink_metadata(&e) else {
            continue;
        };
        if meta.is_dir() {
            walk(&e, wanted, out)?;
        } else if meta.is_file() && wanted(&e) {
            out.push(e);
        }
    }
    Ok(())
}

/// A file's name as text (lossy), for matching.
pub(crate) fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A JSON value as the text a grader reads: strings as they are, numbers and others as JSON.
pub(crate) fn json_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Array(a) if a.len() == 1 => json_text(&a[0]),
        other => Some(other.to_string()),
    }
}

/// A JSON verdict: booleans, 0/1 numbers (and other numbers as "positive is correct" only when
/// they are 0 or 1), `"true"`/`"false"`, `"A"`-style strings are not verdicts.
pub(crate) fn json_verdict(v: &serde_json::Value) -> Option<bool> {
    match v {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(1.0) => Some(true),
            Some(0.0) => Some(false),
            _ => None,
        },
        serde_json::Value::String(s) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "correct" | "yes" => Some(true),
            "false" | "0" | "incorrect" | "wrong" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// `files` with each file once, in their first order, however each was reached (a folder and a
/// file inside it may both be given, spelled differently).
pub(crate) fn distinct_files(files: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    files
        .into_iter()
        .filter(|f| {
            let key = std::fs::canonicalize(f)
                .or_else(|_| std::path::absolute(f))
                .unwrap_or_else(|_| f.clone());
            seen.insert(key)
        })
        .collect()
}

/// A sink that keeps what it is sent, for the readers' tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    #[derive(Default)]
    pub(crate) struct Collect {
        pub files: Vec<PathBuf>,
        pub samples: Vec<SourceSample>,
        pub bad: Vec<String>,
        /// Count bad records instead of failing (as `--skip-bad`).
        pub skip_bad: bool,
    }

    impl Collect {
        /// Per (model, problem): samples and source-correct samples (None when any sample of the
        /// problem has no source verdict).
        pub(crate) fn counts(&self) -> BTreeMap<(String, String), (u32, Option<u32>)> {
            let mut out: BTreeMap<(String, String), (u32, Option<u32>)> = BTreeMap::new();
            for s in &self.samples {
                let e = out
                    .entry((s.model.clone(), s.problem_id.clone()))
                    .or_insert((0, Some(0)));
                e.0 += 1;
                e.1 = match (e.1, s.verdict) {
                    (Some(c), Some(v)) => Some(c + v as u32),
                    _ => None,
                };
            }
            out
        }
    }

    impl Sink for Collect {
        fn open(&mut self, path: &Path) -> Result<usize, ImportError> {
            self.files.push(path.to_path_buf());
            Ok(self.files.len() - 1)
        }
        fn sample(&mut self, sample: SourceSample) -> Result<(), ImportError> {
            self.samples.push(sample);
            Ok(())
        }
        fn bad(&mut self, file: usize, at: At, message: String) -> Result<(), ImportError> {
            let path = self.files[file].clone();
            if !self.skip_bad {
                return Err(ImportError::Bad { path, at, message });
            }
            self.bad.push(format!("{}{at}: {message}", path.display()));
            Ok(())
        }
        fn path(&self, file: usize) -> &Path {
            &self.files[file]
        }
    }

    /// Runs `format`'s reader over `paths` into a fresh [`Collect`].
    pub(crate) fn read_into(
        format: Format,
        paths: &[PathBuf],
        opts: &ReadOptions,
        skip_bad: bool,
    ) -> (Collect, Result<SourceSummary, ImportError>) {
        let mut sink = Collect {
            skip_bad,
            ..Collect::default()
        };
        let out = format.read(paths, opts, &mut sink);
        (sink, out)
    }

    /// The `expected.json` of a fixture folder under `tests/fixtures/import/`.
    pub(crate) fn expected(dir: &str) -> serde_json::Value {
        let text = std::fs::read_to_string(fixture(&format!("{dir}/expected.json"))).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// A fixture under `tests/fixtures/import/`.
    pub(crate) fn fixture(rel: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/import")
            .join(rel)
    }
}

/// A per-problem metric that harnesses average over problems, by the paper's definitions
/// (`crate::metrics`), for recomputing a source's stored aggregate from its own verdicts.
#[derive(Debug, Clone)]
pub(crate) enum PaperMetric {
    /// c/n.
    Accuracy,
    PassAtK(u64),
    GPassAtK(u64, crate::metrics::Tau),
    MGPassAtK(u64),
}

impl PaperMetric {
    /// The paper metric a gpassk metric is, if it is one of pass@k, G-Pass@k_τ, mG-Pass@k.
    pub(crate) fn of(metric: crate::metrics::MetricKind) -> Option<PaperMetric> {
        use crate::metrics::MetricKind as M;
        match metric {
            M::PassAtK { k } => Some(PaperMetric::PassAtK(k)),
            M::GPassAtK { k, tau } => Some(PaperMetric::GPassAtK(k, tau)),
            M::MGPassAtK { k } => Some(PaperMetric::MGPassAtK(k)),
            _ => None,
        }
    }

    /// `G-Pass@16_0.5`, `mG-Pass@16`, `pass@4`, `c/n`: gpassk's name of the metric.
    pub(crate) fn label(&self) -> String {
        match self {
            PaperMetric::Accuracy => "c/n".into(),
            PaperMetric::PassAtK(k) => format!("pass@{k}"),
            PaperMetric::GPassAtK(k, t) => format!("G-Pass@{k}_{t}"),
            PaperMetric::MGPassAtK(k) => format!("mG-Pass@{k}"),
        }
    }
}

/// The mean over problems of `metric` given each problem's (n, c), computed exactly and turned
/// into f64 once; Err says why it cannot be (no problems, k above some problem's n).
pub(crate) fn mean_over_problems(
    counts: &[(u64, u64)],
    metric: &PaperMetric,
) -> Result<f64, String> {
    use crate::metrics::{g_pass_at_k, mg_pass_at_k, pass_at_k, to_f64};
    use num_rational::BigRational;
    if counts.is_empty() {
        return Err("no problems to average".into());
    }
    let mut sum = BigRational::from_integer(0.into());
    for &(n, c) in counts {
        let v = match metric {
            PaperMetric::Accuracy if n > 0 && c <= n => {
                Ok(BigRational::new((c as i64).into(), (n as i64).into()))
            }
            PaperMetric::Accuracy => return Err(format!("a problem has c = {c} of n = {n}")),
            PaperMetric::PassAtK(k) => pass_at_k(n, c, *k),
            PaperMetric::GPassAtK(k, t) => g_pass_at_k(n, c, *k, t),
            PaperMetric::MGPassAtK(k) => mg_pass_at_k(n, c, *k),
        }
        .map_err(|e| format!("{}: {e}", metric.label()))?;
        sum += v;
    }
    Ok(to_f64(
        &(sum / BigRational::from_integer((counts.len() as i64).into())),
    ))
}
