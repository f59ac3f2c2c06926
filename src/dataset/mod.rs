//! Datasets: the registry of shipped benchmarks, JSONL loading with field mapping, answer
//! post-processing, sha256 of the files, and few-shot example sources.
//!
//! [`load`] takes a registry name (`math500`, `livemathbench_202412`, …) or a path to any JSONL
//! file read through a [`FieldMap`]. Problems keep stable ids, so checkpoints from one run can be
//! resumed by the next.

mod error;
mod few_shot;
mod load;
pub mod registry;
pub mod shard;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Default prompt for English datasets.
pub const DEFAULT_TEMPLATE_EN: &str = "Solve the following math problem step by step. \
Put your final answer within \\boxed{{}}.\n\n{question}";

/// Default prompt for Chinese datasets.
pub const DEFAULT_TEMPLATE_ZH: &str =
    "请一步一步地推理并解答下面的数学题，并把最终答案写在 \\boxed{{}} 中。\n\n{question}";

pub use error::DatasetError;
pub use few_shot::FewShot;
pub use load::load;

/// Environment variable that overrides where the shipped datasets live.
pub const DATASETS_DIR_ENV: &str = "GPASSK_DATASETS_DIR";

/// One problem: what is asked, the reference answer, and any extra fields a prompt may use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    /// Stable id: the file's own id, MATH500's `unique_id`, or the 0-based line number
    /// (prefixed with the subset for datasets made of several files, e.g. `AMC/3`).
    pub id: String,
    pub question: String,
    /// Reference answer after the dataset's post-processing.
    pub answer: String,
    pub subset: Option<String>,
    /// Extra fields kept for prompts (`level`, `options`, …) and worked solutions (`solution`).
    pub fields: BTreeMap<String, String>,
}

impl Problem {
    /// A multiple-choice problem's options in order (A, B, …): the `options` field, one a line;
    /// empty for other problems.
    pub fn choice_options(&self) -> Vec<&str> {
        self.fields.get("options").map_or_else(Vec::new, |o| {
            o.lines().map(str::trim).filter(|l| !l.is_empty()).collect()
        })
    }

    /// The text an assistant turn shows when this problem serves as a few-shot example: the worked
    /// solution when there is one, ending with the answer in `\boxed{}`.
    pub fn worked_answer(&self) -> String {
        let boxed = format!("The final answer is $\\boxed{{{}}}$.", self.answer);
        match self.fields.get("solution").map(|s| s.trim()) {
            Some(solution) if solution.contains("\\boxed") => solution.to_string(),
            Some(solution) if !solution.is_empty() => format!("{solution}\n{boxed}"),
            _ => boxed,
        }
    }
}

/// Language of a dataset's questions; it picks the default prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    English,
    Chinese,
}

impl Language {
    /// Short code: `en` or `zh`.
    pub fn code(self) -> &'static str {
        match self {
            Language::English => "en",
            Language::Chinese => "zh",
        }
    }

    /// The default prompt template for questions in this language.
    pub fn default_template(self) -> &'static str {
        match self {
            Language::English => DEFAULT_TEMPLATE_EN,
            Language::Chinese => DEFAULT_TEMPLATE_ZH,
        }
    }
}

/// A loaded dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// Registry name, or the path as given for a custom file.
    pub name: String,
    pub files: Vec<PathBuf>,
    /// Lower-case hex sha256 of the files' bytes, concatenated in `files` order.
    pub sha256: String,
    pub language: Language,
    pub default_template: String,
    pub problems: Vec<Problem>,
}

impl Dataset {
    /// Distinct subsets in order of first appearance.
    pub fn subsets(&self) -> Vec<&str> {
        let mut seen: Vec<&str> = Vec::new();
        for subset in self.problems.iter().filter_map(|p| p.subset.as_deref()) {
            if !seen.contains(&subset) {
                seen.push(subset);
            }
        }
        seen
    }

    /// The problem with this id.
    pub fn problem(&self, id: &str) -> Option<&Problem> {
        self.problems.iter().find(|p| p.id == id)
    }
}

/// How to read a custom JSONL file: which field holds what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldMap {
    /// Field holding the id (required on every line); `None`: `id` when the first line has one,
    /// else line numbers.
    pub id: Option<String>,
    pub question: String,
    pub answer: String,
    pub subset: Option<String>,
}

impl Default for FieldMap {
    /// `id`, `question`, `answer`, no subset.
    fn default() -> Self {
        FieldMap {
            id: Some("id".to_string()),
            question: "question".to_string(),
            answer: "answer".to_string(),
            subset: None,
        }
    }
}

/// Where the shipped datasets live: `$GPASSK_DATASETS_DIR`, else `./datasets` if it exists, else
/// the `datasets/` folder of the source tree this binary was built from.
pub fn datasets_dir() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    resolve_datasets_dir(std::env::var_os(DATASETS_DIR_ENV), &cwd)
}

/// [`datasets_dir`] with its inputs given, for tests.
pub fn resolve_datasets_dir(env_value: Option<OsString>, cwd: &Path) -> PathBuf {
    if let Some(dir) = env_value.filter(|v| !v.is_empty()) {
        return PathBuf::from(dir);
    }
    let local = cwd.join("datasets");
    if local.is_dir() {
        return local;
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets")
}
