//! Published numbers from several sources (the paper's tables as CSV, the GPassK README's Markdown
//! tables, its leaderboard `results.json`): one reader per format, names brought to one spelling so
//! the sources can be set side by side, and the places where they disagree.

mod csv;
mod disagree;
mod leaderboard;
mod markdown;

pub use disagree::{claims, disagreements, Claim, Disagreement};

use crate::metrics::MetricKind;
use std::path::{Path, PathBuf};

/// A published source that cannot be used; each names the file, and the line where there is one.
#[derive(Debug, thiserror::Error)]
pub enum PublishedError {
    #[error("{}:{line}: {message}", path.display())]
    Bad {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A problem with no line to point at (a JSON value, a missing table).
    #[error("{}: {message}", path.display())]
    File { path: PathBuf, message: String },
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl PublishedError {
    fn bad(path: &Path, line: usize, message: impl Into<String>) -> PublishedError {
        PublishedError::Bad {
            path: path.to_path_buf(),
            line,
            message: message.into(),
        }
    }

    fn file(path: &Path, message: impl Into<String>) -> PublishedError {
        PublishedError::File {
            path: path.to_path_buf(),
            message: message.into(),
        }
    }
}

/// One published value.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// What the row cites: a CSV's `source` cell, `README.md:67`, `results.json`.
    pub source: String,
    /// The index of its file among the sources read.
    pub file: usize,
    /// In its one spelling ([`canonical_benchmark`]).
    pub benchmark: String,
    /// As the source spells it; [`model_key`] matches spellings.
    pub model: String,
    /// In the reports' spelling: `Greedy`, `Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`.
    pub metric_name: String,
    pub metric: MetricKind,
    /// Percent.
    pub value: f64,
    /// Decimal places as written: the value stands for value ± half a unit of the last place.
    pub decimals: usize,
    /// 1-based line in its file (0 where the format has none, as in JSON).
    pub line: usize,
}

/// The values of every source read, and the files they came from (in the order given).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PublishedSet {
    pub files: Vec<PathBuf>,
    pub values: Vec<Published>,
}

impl PublishedSet {
    /// What source `file` is, for people: the works its rows cite (a paper's tables, a
    /// repository's file at a commit, with where to find them), else its file name; never the
    /// local path it was read from.
    pub fn citation(&self, file: usize) -> String {
        let mut works: Vec<(String, Vec<String>)> = Vec::new();
        for v in self.values.iter().filter(|v| v.file == file) {
            let mut parts = v.source.splitn(3, ':');
            let origin = parts.next().unwrap_or_default().trim().to_string();
            let doc = parts.next().unwrap_or_default().trim().to_string();
            match works.iter_mut().find(|(o, _)| *o == origin) {
                Some((_, docs)) if doc.is_empty() || docs.contains(&doc) => {}
                Some((_, docs)) => docs.push(doc),
                None => works.push((
                    origin,
                    [doc].into_iter().filter(|d| !d.is_empty()).collect(),
                )),
            }
        }
        let name = (self.files.get(file).and_then(|p| p.file_name()))
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        if works.is_empty() {
            return name;
        }
        let cited: Vec<String> = (works.iter())
            .map(|(origin, docs)| {
                let (work, url) = work_of(origin);
                let docs = if docs.is_empty() {
                    String::new()
                } else {
                    format!(" {}", docs.join(", "))
                };
                let url = url.map_or_else(String::new, |u| format!(" ({u})"));
                format!("{work}{docs}{url}")
            })
            .collect();
        cited.join("; ")
    }
}

/// A cited work as people name it, and where to find it: `arXiv2412.13147v5` is arXiv's paper
/// 2412.13147v5, `GPassK@20a02a1` the GPassK repository at commit 20a02a1.
fn work_of(origin: &str) -> (String, Option<String>) {
    if let Some(id) = origin
        .strip_prefix("arXiv")
        .map(|i| i.trim_start_matches(':'))
    {
        if id.starts_with(|c: char| c.is_ascii_digit()) {
            return (
                format!("arXiv:{id}"),
                Some(format!("https://arxiv.org/abs/{id}")),
            );
        }
    }
    const REPOSITORIES: [(&str, &str); 1] = [("GPassK", "https://github.com/open-compass/GPassK")];
    if let Some((repo, commit)) = origin.split_once('@') {
        if let Some((_, url)) = REPOSITORIES.iter().find(|(r, _)| *r == repo) {
            return (
                format!("{repo} at {commit}"),
                Some(format!("{url}/tree/{commit}")),
            );
        }
        return (format!("{repo} at {commit}"), None);
    }
    (origin.to_string(), None)
}

/// The sources `gpassk audit` reads when none is named: the paper's tables, the GPassK README's
/// tables and its leaderboard, as shipped under `datasets/published/` (datasets/PROVENANCE.md).
pub fn default_sources() -> Vec<PathBuf> {
    let dir = crate::dataset::datasets_dir().join("published");
    // Relative to the working directory when inside it: shorter to read in the source list.
    let dir = std::env::current_dir()
        .ok()
        .and_then(|cwd| dir.strip_prefix(cwd).ok().map(Path::to_path_buf))
        .unwrap_or(dir);
    SHIPPED.iter().map(|f| dir.join(f)).collect()
}

/// The shipped sources, paper first (its values lead when the sources agree).
pub const SHIPPED: [&str; 3] = [
    "gpassk_paper_v5.csv",
    "gpassk_readme_2025-08-05.csv",
    "gpassk_leaderboard_2025-03-18.csv",
];

/// Reads every source, each by the format its name ends with (`.csv`, `.md`, `.json`).
pub fn read_sources(paths: &[PathBuf]) -> Result<PublishedSet, PublishedError> {
    let mut set = PublishedSet::default();
    for (file, path) in paths.iter().enumerate() {
        let text = crate::util::read_bounded_string(path, crate::util::MAX_DATA_FILE).map_err(
            |source| PublishedError::Read {
                path: path.clone(),
                source,
            },
        )?;
        let mut values = parse_source(&text, path)?;
        for v in &mut values {
            v.file = file;
        }
        set.files.push(path.clone());
        set.values.extend(values);
    }
    Ok(set)
}

/// One source's values, read by the format its file name ends with.
pub fn parse_source(text: &str, path: &Path) -> Result<Vec<Published>, PublishedError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match ext.as_str() {
        "csv" => csv::parse(text, path),
        "md" | "markdown" => markdown::parse(text, path),
        "json" => leaderboard::parse(text, path),
        _ => Err(PublishedError::file(
            path,
            "unknown published format: name a .csv (source,benchmark,model,metric,value), a .md \
             (README tables) or a .json (leaderboard results.json)",
        )),
    }
}

/// Parses a published metric name (one of the paper's: greedy, pass@k, G-Pass@k_τ, mG-Pass@k, in
/// either spelling `MetricKind` reads); `G-Pass@16-0.5` (the leaderboard's spelling) reads as
/// `G-Pass@16_0.5`.
pub fn parse_metric(name: &str) -> Option<MetricKind> {
    let metric: MetricKind = metric_spelling(name).parse().ok()?;
    matches!(
        metric,
        MetricKind::Greedy
            | MetricKind::PassAtK { .. }
            | MetricKind::GPassAtK { .. }
            | MetricKind::MGPassAtK { .. }
    )
    .then_some(metric)
}

/// The reports' spelling of a published metric name (`G-Pass@16-1.0` → `G-Pass@16_1.0`).
fn metric_spelling(name: &str) -> String {
    match name.strip_prefix("G-Pass@").and_then(|r| r.split_once('-')) {
        Some((k, tau)) => format!("G-Pass@{k}_{tau}"),
        None if name.eq_ignore_ascii_case("greedy") => "Greedy".to_string(),
        None => name.to_string(),
    }
}

/// One spelling per benchmark: the leaderboard writes `LiveMathBench-2412` for the paper's
/// `LiveMathBench-202412`.
pub fn canonical_benchmark(name: &str) -> String {
    match name.trim() {
        "LiveMathBench-2412" => "LiveMathBench-202412".to_string(),
        "LiveMathBench-Hard-2412" => "LiveMathBench-Hard-202412".to_string(),
        other => other.to_string(),
    }
}

/// The key two spellings of one model share: letters and digits, lower case
/// (`DeepSeek Distill Qwen-32B` and `DeepSeek-Distill-Qwen-32B`).
pub fn model_key(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// A percentage cell: its value and decimal places, or a message naming `field`.
fn percent(raw: &str, field: &str) -> Result<(f64, usize), String> {
    raw.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.0..=100.0).contains(v))
        .map(|v| (v, raw.split_once('.').map_or(0, |(_, f)| f.len())))
        .ok_or_else(|| format!("field `{field}`: {raw:?} is not a percentage in [0, 100]"))
}

/// Up to three of `names` nearest `query`, for "did you mean", once case and punctuation are
/// dropped: the longest name whose letters the query holds in order (a run names its model with
/// what it adds: `deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly` holds
/// `DeepSeek-Distill-Qwen-32B`), else names that contain it or it contains (`AIME2024` →
/// `AIME2024-45`), else the closest in edit distance, else names holding its letters in order
/// (`qwen-math-72b` → `Qwen2.5-Math-72B-Instruct`).
pub fn nearest<'a>(query: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let q = model_key(query);
    let mut scored: Vec<((u8, usize), &str)> = names
        .into_iter()
        .filter_map(|name| {
            let k = model_key(name);
            let d = strsim::damerau_levenshtein(&q, &k);
            let extra = k.len().abs_diff(q.len());
            // Containing or in order only counts when the shorter is at least half the longer
            // (else `mine` would suggest `Gemini-…`), unless a published name of some length is
            // inside the query.
            let half = 2 * q.len().min(k.len()) >= q.len().max(k.len());
            if k.len() >= 8 && k.len() < q.len() && in_order(&k, &q) {
                Some(((0, extra), name))
            } else if half && (k.contains(&q) || q.contains(&k)) {
                Some(((1, extra), name))
            } else if d <= 2.max(k.len() / 3) && d < k.len().max(q.len()) {
                Some(((2, d), name))
            } else if half && (in_order(&q, &k) || in_order(&k, &q)) {
                Some(((3, extra), name))
            } else {
                None
            }
        })
        .collect();
    scored.sort();
    scored.dedup_by(|a, b| a.1 == b.1);
    // Only the best kind of match; a name inside the query and edit distances only the best.
    let Some(&((tier, best), _)) = scored.first() else {
        return Vec::new();
    };
    scored
        .into_iter()
        .filter(|((t, score), _)| *t == tier && (!matches!(tier, 0 | 2) || *score == best))
        .take(3)
        .map(|(_, n)| n)
        .collect()
}

/// Whether `short`'s characters appear in `long` in order.
fn in_order(short: &str, long: &str) -> bool {
    let mut rest = long.chars();
    short.chars().all(|c| rest.any(|l| l == c))
}

/// `did you mean A, B or C?`, or nothing when there is no near name.
pub fn did_you_mean(near: &[&str]) -> Option<String> {
    let (last, first) = near.split_last()?;
    Some(if first.is_empty() {
        format!("did you mean {last}?")
    } else {
        format!("did you mean {} or {last}?", first.join(", "))
    })
}

#[cfg(test)]
mod tests;
