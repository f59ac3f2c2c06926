//! The run manifest: what ran, with which settings, against which data, and how it ended. What
//! differs between two manifests is decided in [`super::difference`].

use crate::config::{ModelSettings, SamplingSettings};
use crate::error::BadInput;
use crate::util::write_atomic;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub harness: String,
    pub git_commit: Option<String>,
    pub run_id: String,
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    /// `running`, `complete`, `incomplete` (failed units or models), `interrupted`.
    pub status: Status,
    pub config_path: String,
    /// The config as parsed; it holds environment variable names, never keys.
    pub config: serde_json::Value,
    pub config_hash: String,
    /// The settings.json this run's task came from: its path, content and sha256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<crate::config::TaskFile>,
    /// The `--set KEY=VALUE` overrides of the invocation that last ran it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub overrides: Vec<String>,
    /// The run's label (settings.json `task_name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_name: Option<String>,
    pub dataset: DatasetInfo,
    pub prompt_template: String,
    /// Hash of the template and the few-shot turns: resume refuses when it changes.
    pub prompt_hash: String,
    pub few_shot_examples: usize,
    pub models: BTreeMap<String, ModelManifest>,
    /// The shard this run sampled (`gpassk run --shard I/N`); absent for a whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::dataset::shard::Shard>,
    /// The run directories a `gpassk merge` joined into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_from: Vec<String>,
    /// What an imported run (`gpassk import`) was read from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<super::provenance::ImportInfo>,
    /// Where the run was created, `host:/its/folder` ([`super::RunDir::origin`]); with its id and
    /// `created_at`, what tells it from another run of the same id (the results database refuses
    /// such a clash). Kept when the run is resumed, moved or copied; absent in older runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
}

/// How a run, or one model of it, stands: the one spelling of every status a manifest holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// A model not sampled yet.
    Pending,
    /// A run being sampled (or killed while it was).
    Running,
    Complete,
    /// Finished with units that failed or have no answer yet.
    Incomplete,
    /// A model stopped at once (auth, unknown model, budget).
    Failed,
    Interrupted,
    /// A value this version does not know (a newer gpassk, or a hand edit).
    #[serde(other)]
    Unknown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Complete => "complete",
            Status::Incomplete => "incomplete",
            Status::Failed => "failed",
            Status::Interrupted => "interrupted",
            Status::Unknown => "unknown",
        }
    }

    pub fn is_complete(self) -> bool {
        self == Status::Complete
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DatasetInfo {
    pub name: String,
    pub files: Vec<String>,
    pub sha256: String,
    pub problems: usize,
    pub limit: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelManifest {
    pub model_id: String,
    pub base_url: String,
    /// The environment variable the key is read from (never the key): named when the server
    /// refuses it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    pub sampling: SamplingSettings,
    /// `pending`, `complete`, `incomplete`, `failed`, `interrupted`.
    pub status: Status,
    pub error: Option<String>,
    pub units_planned: u64,
    pub ok: u64,
    pub truncated: u64,
    /// Units whose latest attempt ended in an API error (requested again on resume).
    pub api_error: u64,
    /// Model names the server reported, with how many samples each answered.
    pub served_models: BTreeMap<String, u64>,
    pub system_fingerprints: Vec<String>,
    /// Why the units counted in `api_error` failed: the error's class and innermost cause, with
    /// how many units ended with it (at most [`MAX_CAUSES`] entries; the rest under `other`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failure_causes: BTreeMap<String, u64>,
    /// What the recorded usage cost at the model's price; absent when the model has no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<CostEntry>,
    /// The Batch API batch this model's missing units were sent in, until it is imported:
    /// a resumed run polls it instead of paying for a second one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_id: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A model's cost ledger, in `currency` units (exact inside, f64 here at the boundary).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostEntry {
    pub currency: String,
    pub total: f64,
    /// `total` over the samples counted (each holds its share of a multi-choice request).
    pub per_sample: Option<f64>,
    /// `total` over the problems planned.
    pub per_problem: Option<f64>,
    /// Samples whose usage the server left out (in whole or part): their cost is missing.
    pub samples_without_usage: u64,
    /// Failed attempts the server may have billed (a timeout or error after the request was
    /// sent): no usage came back, so they are not in `total`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub billable_failures: u64,
    /// `config`, or the shipped price file with its date.
    pub price_source: String,
}

impl CostEntry {
    /// What tally `t` cost at `p`, per sample and per problem (of `problems`), and what it could
    /// not count.
    pub fn of(p: &crate::cost::Price, t: &crate::cost::Tally, problems: usize) -> CostEntry {
        use crate::cost::{to_f64, Money};
        let total = t.cost(p);
        let per = |n: u64| (n > 0).then(|| to_f64(&(total / Money::from_integer(u128::from(n)))));
        CostEntry {
            currency: p.currency.clone(),
            total: to_f64(&total),
            per_sample: per(t.with_usage + t.without_usage),
            per_problem: per(problems as u64),
            samples_without_usage: t.without_usage,
            billable_failures: u64::try_from(t.billable_failures.round().to_integer())
                .unwrap_or(u64::MAX),
            price_source: p.source.clone(),
        }
    }
}

/// The most distinct failure causes a manifest keeps per model (a server may vary its messages).
pub const MAX_CAUSES: usize = 20;

impl ModelManifest {
    /// A model's entry before any unit is sampled.
    pub fn planned(m: &ModelSettings, problems: usize) -> ModelManifest {
        ModelManifest {
            model_id: m.model_id.clone(),
            base_url: m.api.base_url.clone(),
            api_key_env: m.api.api_key_env.clone(),
            sampling: m.sampling.clone(),
            status: Status::Pending,
            error: None,
            units_planned: problems as u64 * (m.sampling.n as u64 + m.sampling.greedy as u64),
            ok: 0,
            truncated: 0,
            api_error: 0,
            served_models: BTreeMap::new(),
            system_fingerprints: Vec::new(),
            failure_causes: BTreeMap::new(),
            cost: None,
            batch_id: None,
        }
    }
}

impl Manifest {
    /// A new run's manifest before anything is known but its id: running, created now.
    pub fn new(run_id: &str) -> Manifest {
        let now = crate::util::now_rfc3339();
        Manifest {
            harness: format!("gpassk {}", env!("CARGO_PKG_VERSION")),
            git_commit: None,
            run_id: run_id.to_string(),
            created_at: now.clone(),
            updated_at: now,
            finished_at: None,
            status: Status::Running,
            config_path: String::new(),
            config: serde_json::Value::Null,
            config_hash: String::new(),
            settings: None,
            overrides: Vec::new(),
            task_name: None,
            dataset: DatasetInfo::default(),
            prompt_template: String::new(),
            prompt_hash: String::new(),
            few_shot_examples: 0,
            models: BTreeMap::new(),
            shard: None,
            merged_from: Vec::new(),
            imported: None,
            origin: None,
        }
    }

    /// How the run was graded, from its stored config: the grader mode and the judge's model id.
    pub fn grading(&self) -> (String, Option<String>) {
        let mode = self.config["evaluation"]["grader"]
            .as_str()
            .unwrap_or("rule")
            .to_string();
        let judge = self.config["judge"]["model_id"]
            .as_str()
            .map(str::to_string);
        (mode, judge)
    }

    /// The run's status once its models are counted: interrupted, else complete when every model
    /// is, else incomplete.
    pub fn settle(&mut self, interrupted: bool) {
        self.status = if interrupted {
            Status::Interrupted
        } else if self.models.values().all(|m| m.status.is_complete()) {
            Status::Complete
        } else {
            Status::Incomplete
        };
    }

    /// What the run's problems are drawn from, by content: the dataset's sha256, or for a run
    /// imported with `--dataset`, that dataset's (its own file holds just the imported problems).
    pub fn dataset_identity(&self) -> &str {
        self.imported
            .as_ref()
            .and_then(|i| i.dataset_sha256.as_deref())
            .unwrap_or(&self.dataset.sha256)
    }

    /// Stopped before it finished: interrupted, with no finish time.
    pub fn mark_interrupted(&mut self) {
        self.status = Status::Interrupted;
        self.finished_at = None;
    }

    /// Writes the manifest file at `path` (callers go through [`crate::rundir::RunDir`]).
    pub(super) fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self).map_err(std::io::Error::other)?;
        bytes.push(b'\n');
        write_atomic(path, &bytes)
    }

    pub(super) fn read(path: &Path) -> Result<Manifest, BadInput> {
        let text = crate::util::read_bounded_string(path, crate::util::MAX_TEXT_FILE)
            .map_err(|e| BadInput(format!("{}: cannot read: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| BadInput(format!("{}: not a gpassk manifest: {e}", path.display())))
    }
}

/// The harness's git commit when it runs from its own checkout.
pub fn git_commit() -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && s.len() == 40).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_keep_their_spelling_and_unknown_ones_still_read() {
        for s in [
            Status::Pending,
            Status::Running,
            Status::Complete,
            Status::Incomplete,
            Status::Failed,
            Status::Interrupted,
        ] {
            let json = serde_json::to_string(&s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(serde_json::from_str::<Status>(&json).unwrap(), s);
        }
        let odd: Status = serde_json::from_str("\"paused-by-a-newer-version\"").unwrap();
        assert_eq!(odd, Status::Unknown);
        assert!(!odd.is_complete());
    }
}
