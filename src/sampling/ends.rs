//! How a model's sampling ended, from its checkpoint: counts per outcome, failure causes, the
//! manifest entry and the run's exit status.

use super::ModelEnd;
use crate::config::ModelSettings;
use crate::error::ExitStatus;
use crate::rundir::manifest::{Manifest, ModelManifest, Status};
use crate::rundir::record::{read_lines, RecordHead, UnitOutcome};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// Per-model totals read back from a checkpoint, for the manifest.
#[derive(Debug, Default, Clone)]
pub struct CheckpointCounts {
    pub ok: u64,
    pub truncated: u64,
    pub api_error: u64,
    pub served_models: BTreeMap<String, u64>,
    pub system_fingerprints: BTreeSet<String>,
    /// Units whose latest record is an API error, by [`failure_cause`].
    pub failure_causes: BTreeMap<String, u64>,
    /// The usage of every planned record, each its share of its request.
    pub tokens: crate::cost::Tally,
}

/// Counts the latest state of each planned unit: a unit with any usable record counts as done.
pub fn count_checkpoint(
    path: &Path,
    index: &HashMap<&str, usize>,
    n: u32,
    greedy: bool,
) -> Result<CheckpointCounts> {
    // One byte per planned unit (a map of 1M units held ~150 MB at its peak); the error texts
    // are kept only for units whose latest record failed.
    let width = n as usize + usize::from(greedy);
    let problems = index.values().max().map_or(0, |&p| p + 1);
    let mut state = vec![UNSEEN; problems * width];
    let mut errors: HashMap<usize, Option<String>> = HashMap::new();
    let mut c = CheckpointCounts::default();
    read_lines(path, |r: RecordHead| {
        let Some(&p) = index.get(r.problem_id.as_str()) else {
            return Ok(());
        };
        let Some(slot) = r.sample_index.slot(n, greedy) else {
            return Ok(());
        };
        if r.usable() {
            c.tokens.add(r.usage.as_ref(), r.choices_in_request);
        }
        c.tokens
            .add_billable_failures(r.billable_failures, r.choices_in_request);
        let at = p * width + slot;
        if state[at] == UNSEEN || state[at] == FAILED {
            state[at] = match r.outcome {
                UnitOutcome::Ok => OK,
                UnitOutcome::Truncated => TRUNCATED,
                UnitOutcome::ApiError => FAILED,
            };
            if r.usable() {
                errors.remove(&at);
                if let Some(s) = &r.served_model {
                    *c.served_models.entry(s.clone()).or_default() += 1;
                }
                if let Some(f) = &r.system_fingerprint {
                    c.system_fingerprints.insert(f.clone());
                }
            } else {
                errors.insert(at, r.error);
            }
        }
        Ok(())
    })?;
    c.ok = state.iter().filter(|&&s| s == OK).count() as u64;
    c.truncated = state.iter().filter(|&&s| s == TRUNCATED).count() as u64;
    c.api_error = errors.len() as u64;
    for error in errors.into_values() {
        let cause = failure_cause(error.as_deref().unwrap_or("unknown error"));
        *c.failure_causes.entry(cause).or_default() += 1;
    }
    c.failure_causes = cap_causes(std::mem::take(&mut c.failure_causes));
    Ok(c)
}

// A unit's latest state in [`count_checkpoint`]; zero for unseen, so untouched pages stay unmapped.
const UNSEEN: u8 = 0;
const OK: u8 = 1;
const TRUNCATED: u8 = 2;
const FAILED: u8 = 3;

/// The most characters a failure cause keeps (cut at a word boundary).
pub const CAUSE_MAX: usize = 300;

/// A failed unit's cause for grouping: the error class (and HTTP status) with the server's
/// message whole, or for a transport error (no status) the innermost message of its chain, e.g.
/// `connection: Connection refused (os error 111)`. The text comes from a server, so control
/// characters and runs of spaces become one space and the length is bounded at a word boundary.
pub fn failure_cause(error: &str) -> String {
    let (class, rest) = error.split_once(": ").unwrap_or(("error", error));
    let inner = if class.contains("(HTTP ") {
        rest
    } else {
        rest.rsplit(": ")
            .find(|s| !s.trim().is_empty())
            .unwrap_or(rest)
    };
    let text = format!("{class}: {}", inner.trim());
    let clean: Vec<&str> = text
        .split(|ch: char| ch.is_control() || ch.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    crate::util::clip_words(&clean.join(" "), CAUSE_MAX).into_owned()
}

/// A cause's error class and HTTP status: `server (HTTP 500): …` → (`server`, Some(500)); text
/// that is not a cause (a budget stop, a disk error) has no class.
pub fn cause_class(cause: &str) -> (Option<crate::client::ErrorClass>, Option<u16>) {
    let head = cause.split(": ").next().unwrap_or("");
    let (name, status) = match head.split_once(" (HTTP ") {
        Some((name, rest)) => (name, rest.trim_end_matches(')').parse().ok()),
        None => (head, None),
    };
    (crate::client::ErrorClass::from_name(name), status)
}

/// Keeps the [`MAX_CAUSES`] most frequent causes; the rest are summed under `other`.
fn cap_causes(causes: BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    use crate::rundir::manifest::MAX_CAUSES;
    if causes.len() <= MAX_CAUSES {
        return causes;
    }
    let mut all: Vec<(String, u64)> = causes.into_iter().collect();
    all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other: u64 = all[MAX_CAUSES - 1..].iter().map(|(_, c)| c).sum();
    all.truncate(MAX_CAUSES - 1);
    let mut kept: BTreeMap<String, u64> = all.into_iter().collect();
    *kept.entry("other".into()).or_default() += other;
    kept
}

/// The manifest's per-model section from the checkpoint counts and the model's end state.
pub fn model_manifest(
    m: &ModelSettings,
    end: Option<&ModelEnd>,
    counts: &CheckpointCounts,
    problems: usize,
) -> ModelManifest {
    let mut mm = ModelManifest::planned(m, problems);
    let finished = counts.ok + counts.truncated;
    let (status, error) = match end {
        Some(ModelEnd::Failed(msg)) => (Status::Failed, Some(msg.clone())),
        Some(ModelEnd::Interrupted) => (Status::Interrupted, None),
        Some(_) if finished == mm.units_planned => (Status::Complete, None),
        Some(_) => (Status::Incomplete, None),
        None => (Status::Pending, None),
    };
    mm.status = status;
    mm.error = error;
    mm.ok = counts.ok;
    mm.truncated = counts.truncated;
    mm.api_error = counts.api_error;
    mm.served_models = counts.served_models.clone();
    mm.system_fingerprints = counts.system_fingerprints.iter().cloned().collect();
    mm.failure_causes = counts.failure_causes.clone();
    mm.cost = m
        .pricing
        .as_ref()
        .map(|p| crate::rundir::manifest::CostEntry::of(p, &counts.tokens, problems));
    mm
}

/// How a finished sampling session ends the command.
pub fn exit_status_for(ends: &[(String, ModelEnd)], manifest: &Manifest) -> ExitStatus {
    if ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted) {
        return ExitStatus::Interrupted;
    }
    let all_complete = manifest.models.values().all(|m| m.status.is_complete());
    if all_complete {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keep_each_units_first_usable_record_else_its_latest_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let line = |p: &str, i: &str, outcome: &str, error: &str| {
            format!(
                "{{\"run_id\":\"r\",\"model\":\"m\",\"model_id\":\"m\",\"problem_id\":\"{p}\",\
                 \"sample_index\":{i},\"temperature\":0.7,\"top_p\":1.0,\"prompt_hash\":\"h\",\
                 \"latency_ms\":1,\"started_at\":\"t\",\"finished_at\":\"t\",\"attempts\":1,\
                 \"outcome\":\"{outcome}\",\"error\":\"{error}\",\"served_model\":\"s\"}}\n"
            )
        };
        let text = [
            line("a", "0", "api_error", "timeout: first"),
            line("a", "0", "ok", ""),
            line("a", "0", "api_error", "timeout: after ok"),
            line("a", "1", "api_error", "timeout: one"),
            line("a", "1", "api_error", "http 500: two"),
            line("b", "\"greedy\"", "truncated", ""),
            line("b", "0", "truncated", ""),
            line("b", "0", "ok", ""),
            line("b", "2", "ok", ""),
            line("zz", "0", "ok", ""),
        ]
        .concat();
        std::fs::write(&path, text).unwrap();
        let index = HashMap::from([("a", 0), ("b", 1)]);
        let c = count_checkpoint(&path, &index, 2, true).unwrap();
        assert_eq!((c.ok, c.truncated, c.api_error), (1, 2, 1));
        assert_eq!(
            c.failure_causes,
            BTreeMap::from([("http 500: two".into(), 1)])
        );
        assert_eq!(c.served_models, BTreeMap::from([("s".into(), 3)]));
        let c = count_checkpoint(&path, &index, 2, false).unwrap();
        assert_eq!((c.ok, c.truncated, c.api_error), (1, 1, 1));
    }

    #[test]
    fn failure_causes_keep_the_class_and_the_innermost_message() {
        assert_eq!(
            failure_cause("connection: error sending request: client error (Connect): tcp connect error: Connection refused (os error 111)"),
            "connection: Connection refused (os error 111)"
        );
        assert_eq!(
            failure_cause("server (HTTP 503): upstream busy\u{1b}[2J"),
            "server (HTTP 503): upstream busy [2J"
        );
        // A server's message is kept whole, its own colons too.
        let cuda = "server (HTTP 500): CUDA error: an illegal memory access was encountered";
        assert_eq!(failure_cause(cuda), cuda);
        let long = failure_cause(&format!("server (HTTP 500): {}", "word ".repeat(200)));
        assert!(long.chars().count() <= CAUSE_MAX, "{long}");
        assert!(long.ends_with("word…"), "{long}");
        use crate::client::ErrorClass;
        assert_eq!(cause_class(cuda), (Some(ErrorClass::Server), Some(500)));
        assert_eq!(
            cause_class("connection: Connection refused (os error 111)"),
            (Some(ErrorClass::Connection), None)
        );
        assert_eq!(cause_class("budget reached: max_cost 1 USD"), (None, None));
        let many: BTreeMap<String, u64> = (0..30).map(|i| (format!("c{i:02}"), 30 - i)).collect();
        let capped = cap_causes(many);
        assert_eq!(capped.len(), crate::rundir::manifest::MAX_CAUSES);
        assert_eq!(capped.values().sum::<u64>(), (1..=30).sum::<u64>());
        assert_eq!(capped["c00"], 30);
    }
}
