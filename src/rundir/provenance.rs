//! What an imported run came from (`gpassk import`): the input files and their sha256, the
//! source's settings as it recorded them, its stored aggregates beside their recomputation, and
//! the per-sample reference a checkpoint line carries.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The manifest's `imported` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportInfo {
    /// The format's name, as `gpassk import` takes it.
    pub format: String,
    /// The layout or version read (`lm-eval ≥ 0.4.3 samples + results`, …).
    pub layout: String,
    pub imported_at: String,
    /// The run's input files, in the order read: every one an import of one dataset read; of
    /// several datasets, this one's and those of none (a config). A record's `source.file`
    /// indexes this list.
    pub files: Vec<InputFile>,
    /// Where the gold answers came from: `the imported files`, or `dataset NAME`.
    pub gold_from: String,
    /// The sha256 of `--dataset`'s files: a native run on that dataset compares with this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_sha256: Option<String>,
    /// Which of the source's marks are the per-sample source verdicts, or why there are none.
    pub verdicts: String,
    /// Per model (its name in this run): the source's name and settings, and what was read.
    pub models: BTreeMap<String, ImportedModel>,
    /// Aggregates the source stored, each recomputed from its own verdicts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregates: Vec<AggregateCheck>,
    /// Malformed records skipped with `--skip-bad`, and the first of them by place.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bad_records: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bad_examples: Vec<String>,
    /// What else the import had to say (left-out tasks or models, gold disagreements, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputFile {
    /// The path as given (made absolute).
    pub path: String,
    pub sha256: String,
    pub bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImportedModel {
    /// The model as the source names it.
    pub source_name: String,
    pub settings: SourceSettings,
    pub samples: u64,
    /// Samples that carry a verdict of the source's own.
    pub with_source_verdict: u64,
    /// Records of a sample already imported (the same problem and repeat), left out.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates: u64,
}

/// A model's generation settings as the source recorded them; what it did not record stays None.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SourceSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Samples per problem the source was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominal_n: Option<u32>,
    /// Everything else the source recorded about the model and its generation, verbatim.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub recorded: serde_json::Value,
}

/// An aggregate the source stored, recomputed from the source's own per-sample (or per-document)
/// verdicts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregateCheck {
    /// The model as the source names it.
    pub model: String,
    /// The source's name for it (`exact_match,strict-first`, `G-Pass@16_0.5`, …).
    pub name: String,
    /// Its value as stored, on the source's scale.
    pub source: f64,
    /// The same value recomputed from the verdicts in the sample files; None when they do not
    /// hold what it is computed from (then `basis` says why).
    pub recomputed: Option<f64>,
    /// What it was recomputed from, or why it could not be.
    pub basis: String,
}

impl AggregateCheck {
    /// Whether the recomputed value matches the stored one, to the precision sources store
    /// (OpenCompass rounds to 2 decimals on a 0–100 scale).
    pub fn matches(&self) -> Option<bool> {
        let tol = if self.source.abs() > 1.0 { 0.006 } else { 1e-6 };
        self.recomputed.map(|r| (r - self.source).abs() <= tol)
    }
}

/// On a checkpoint line of an imported sample: where it was read and what the source made of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceRef<T = String> {
    /// Index into the manifest's `imported.files`.
    pub file: u32,
    /// `line 12`, `row 3`, `item 17`.
    pub at: T,
    /// The source's verdict of this one sample, if it kept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<bool>,
    /// The answer the source extracted, if it kept one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<T>,
}

/// One line of an imported run's own dataset file (`dataset/<task>.jsonl`): written by the
/// import, read back by scoring through the config's field mapping and by `merge`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportedProblem {
    pub id: String,
    pub question: String,
    pub answer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
}

impl ImportedProblem {
    /// The question of a problem whose source kept none.
    pub const NO_QUESTION: &'static str = "(the imported files hold no question for this problem)";
}
