//! `gpassk verify`: a process reward model scores every stored sample's steps; the step scores are
//! stored beside the checkpoints (`verifier/<model>.jsonl`, keyed by sample and response hash like
//! judge verdicts), so scoring again never asks twice and an interrupted pass resumes.

use super::judge::response_hash;
use super::steps;
use crate::client::retry::{Next, RetryPolicy};
use crate::client::{ApiError, ApiKey, Client, ErrorClass};
use crate::config::{Aggregation, ApiSettings, RewardMode, SearchSettings, VerifierSettings};
use crate::rundir::record::{
    read_lines, read_records, CheckpointError, CheckpointWriter, SampleIndex,
};
use crate::rundir::RunDir;
use crate::search::requests::{judge_body, parse_pooling_steps, parse_score, pooling_body};
use crate::search::{Score, SearchInput};
use crate::util::{now_rfc3339, Notes, Shutdown};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Errors of a verification pass the user must act on.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("verifier model {model} {what}: {message}")]
    Refused {
        model: String,
        what: &'static str,
        message: String,
    },
    #[error("verifier model {model} failed every request ({failed} after retries){last}")]
    AllFailed {
        model: String,
        failed: u64,
        last: String,
    },
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("cannot build the verifier's client: {0}")]
    Client(ApiError),
    #[error("cannot start the verifier's runtime: {0}")]
    Runtime(std::io::Error),
}

/// One sample's step scores, as stored in `verifier/<model>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredScores {
    pub problem_id: String,
    pub sample_index: SampleIndex,
    /// The scores are reused only while the response they scored is unchanged.
    pub response_hash: String,
    pub verifier_model: String,
    pub steps: usize,
    /// One score in [0, 1] per step; None when a reply held no readable score (never read as 0).
    pub scores: Option<Vec<f64>>,
    /// The unreadable reply, bounded, when `scores` is None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unparsed: Option<String>,
    pub scored_at: String,
}

/// A stored entry: the response hash it scored, and its step scores (None: unreadable).
type Entry = (String, Option<Vec<f64>>);

/// Stored step scores of one model's samples, by (problem, sample).
#[derive(Debug, Clone, Default)]
pub struct VerifierScores {
    map: HashMap<(String, i64), Entry>,
}

impl VerifierScores {
    pub fn load(path: &Path) -> Result<VerifierScores, CheckpointError> {
        let mut map = HashMap::new();
        read_lines(path, |s: StoredScores| {
            map.insert(
                (s.problem_id, s.sample_index.key()),
                (s.response_hash, s.scores),
            );
            Ok(())
        })?;
        Ok(VerifierScores { map })
    }

    /// The stored scores of this response: Some(None) when its reply was unreadable.
    pub fn get(
        &self,
        problem_id: &str,
        slot: SampleIndex,
        response: &str,
    ) -> Option<Option<&[f64]>> {
        let (hash, v) = self.map.get(&(problem_id.to_string(), slot.key()))?;
        (*hash == response_hash(response)).then_some(v.as_deref())
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A solution's one score from its step scores; None without steps.
pub fn aggregate_steps(how: Aggregation, scores: &[f64]) -> Option<f64> {
    let last = *scores.last()?;
    Some(match how {
        Aggregation::Min => scores.iter().copied().fold(f64::INFINITY, f64::min),
        Aggregation::Mean => scores.iter().sum::<f64>() / scores.len() as f64,
        Aggregation::Last => last,
        Aggregation::Product => scores.iter().product(),
    })
}

/// A stored sample waiting for the verifier.
#[derive(Debug, Clone)]
pub struct VerifyJob {
    pub problem_id: String,
    pub sample_index: SampleIndex,
    pub response_hash: String,
    pub question: String,
    pub steps: Vec<String>,
}

/// What one model's pass found and did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct VerifyStats {
    /// Samples already scored (or unreadable) in the store, not asked again.
    pub reused: u64,
    pub scored: u64,
    /// Replies without a readable score, stored as such.
    pub unparsed: u64,
    /// Samples whose request failed after retries (not stored: the next pass asks again).
    pub failed: u64,
}

/// The usable stored samples of `model` with a response that `store` holds no scores for, split
/// into steps; `questions` maps problem ids to their text. Returns the jobs and how many samples
/// the store already covers.
pub fn pending(
    dir: &RunDir,
    model: &str,
    questions: &HashMap<&str, &str>,
    store: &VerifierScores,
    settings: &VerifierSettings,
) -> Result<(Vec<VerifyJob>, u64), CheckpointError> {
    let custom = settings
        .step_regex
        .as_deref()
        .and_then(|r| regex::Regex::new(r).ok());
    let (mut jobs, mut reused) = (Vec::new(), 0);
    let mut seen = std::collections::HashSet::new();
    read_records(&dir.checkpoint(model), |r| {
        let (Some(response), true) = (r.response.as_deref(), r.usable()) else {
            return Ok(());
        };
        // A unit stored twice (a resumed duplicate) is scored once.
        if !seen.insert((r.problem_id.clone(), r.sample_index.key())) {
            return Ok(());
        }
        let Some(question) = questions.get(r.problem_id.as_str()) else {
            return Ok(());
        };
        if store.get(&r.problem_id, r.sample_index, response).is_some() {
            reused += 1;
            return Ok(());
        }
        let steps = steps::split(response, custom.as_ref(), settings.max_steps)
            .into_iter()
            .map(|(a, b)| response[a..b].to_string())
            .collect();
        jobs.push(VerifyJob {
            problem_id: r.problem_id.clone(),
            sample_index: r.sample_index,
            response_hash: response_hash(response),
            question: question.to_string(),
            steps,
        });
        Ok(())
    })?;
    Ok((jobs, reused))
}

/// The verifier's URL, as `[search]` spells a reward model's.
pub fn verifier_url(settings: &VerifierSettings, api: &ApiSettings) -> String {
    let search = SearchSettings {
        reward_base_url: settings.reward_base_url.clone(),
        ..SearchSettings::default()
    };
    search.reward_url(&api.base_url, settings.reward_mode)
}

/// Scores every job (bounded concurrency, the one retry policy) and appends each sample's scores
/// to `out` as they arrive. A rejected key or unknown model stops the pass; `shutdown` stops it
/// between samples.
pub fn verify_pending(
    settings: &VerifierSettings,
    api: &ApiSettings,
    key: Option<ApiKey>,
    jobs: Vec<VerifyJob>,
    out: &Path,
    (shutdown, notes): (&Shutdown, &Notes),
) -> Result<VerifyStats, VerifyError> {
    if jobs.is_empty() {
        return Ok(VerifyStats::default());
    }
    let url = verifier_url(settings, api);
    let pass = Arc::new(Pass {
        writer: CheckpointWriter::open(out, notes)?,
        client: api.client_at(url, key, None).map_err(VerifyError::Client)?,
        policy: api.retry_policy(),
        settings: settings.clone(),
        stats: [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)],
        fatal: Mutex::new(None),
        last_error: Mutex::new(None),
        shutdown: shutdown.clone(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(VerifyError::Runtime)?;
    rt.block_on(run_jobs(pass.clone(), jobs, api.concurrency));
    pass.writer.sync()?;
    let model = settings.reward_model_id.clone();
    if let Some(e) = lock(&pass.fatal).clone() {
        let what = if e.class == ErrorClass::Auth {
            "rejected the key"
        } else {
            "refused the request"
        };
        let message = crate::util::printable(&e.to_string()).into_owned();
        return Err(VerifyError::Refused {
            model,
            what,
            message,
        });
    }
    let count = |i: usize| pass.stats[i].load(Ordering::Relaxed);
    let stats = VerifyStats {
        reused: 0,
        scored: count(0),
        unparsed: count(1),
        failed: count(2),
    };
    if stats.failed > 0 && stats.scored + stats.unparsed == 0 {
        let last = lock(&pass.last_error)
            .clone()
            .map(|e| format!("; last error: {}", crate::util::printable(&e.to_string())))
            .unwrap_or_default();
        return Err(VerifyError::AllFailed {
            model,
            failed: stats.failed,
            last,
        });
    }
    Ok(stats)
}

/// What every request of one pass shares.
struct Pass {
    writer: CheckpointWriter,
    client: Client,
    policy: RetryPolicy,
    settings: VerifierSettings,
    /// Scored, unparseable, failed samples.
    stats: [AtomicU64; 3],
    fatal: Mutex<Option<ApiError>>,
    last_error: Mutex<Option<ApiError>>,
    shutdown: Shutdown,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn run_jobs(pass: Arc<Pass>, jobs: Vec<VerifyJob>, concurrency: usize) {
    let stopped = || lock(&pass.fatal).is_some();
    let work = |job| {
        let pass = pass.clone();
        async move { score_one(&pass, job).await }
    };
    // No grace: a sample in flight finishes (or times out) and its scores are kept.
    let shutdown = &pass.shutdown;
    crate::util::tasks::run_bounded(jobs, concurrency, shutdown, None, stopped, work).await;
}

/// One sample: a `/pooling` call scores every step at once; a chat judge is asked per step prefix.
async fn score_one(pass: &Pass, job: VerifyJob) {
    let s = &pass.settings;
    let input = SearchInput {
        problem_id: job.problem_id.clone(),
        question: job.question.clone(),
    };
    let mut scores = Vec::with_capacity(job.steps.len());
    let mut unparsed = None;
    match s.reward_mode {
        RewardMode::Pooling => {
            let body = pooling_body(&s.reward_model_id, &input, &job.steps);
            let Some(reply) = ask(pass, body, true).await else {
                return;
            };
            match parse_pooling_steps(&reply, job.steps.len()) {
                Ok(v) => scores = v,
                Err(text) => unparsed = Some(text),
            }
        }
        _ => {
            for i in 1..=job.steps.len() {
                let body = judge_body(&s.reward_model_id, &input, &job.steps[..i]);
                let Some(reply) = ask(pass, body, false).await else {
                    return;
                };
                let text = reply.as_str().unwrap_or_default();
                match parse_score(text) {
                    Score::Value(v) => scores.push(v),
                    Score::Unparseable(t) => {
                        unparsed = Some(t);
                        break;
                    }
                }
            }
        }
    }
    pass.stats[if unparsed.is_none() { 0 } else { 1 }].fetch_add(1, Ordering::Relaxed);
    let stored = StoredScores {
        problem_id: job.problem_id,
        sample_index: job.sample_index,
        response_hash: job.response_hash,
        verifier_model: s.reward_model_id.clone(),
        steps: job.steps.len(),
        scores: unparsed.is_none().then_some(scores),
        unparsed,
        scored_at: now_rfc3339(),
    };
    if pass.writer.append_value(&stored).is_err() {
        pass.stats[2].fetch_add(1, Ordering::Relaxed);
    }
}

/// One request through the retry policy: the pooling reply, or the chat reply's text as a JSON
/// string; None when it failed for good (counted) or the pass is stopping.
async fn ask(pass: &Pass, body: Vec<u8>, pooling: bool) -> Option<serde_json::Value> {
    let mut tries = pass.policy.tries(&pass.shutdown);
    loop {
        if tries.start().is_none() || lock(&pass.fatal).is_some() {
            return None;
        }
        let err = if pooling {
            match pass.client.post_json(body.clone()).await {
                Ok(v) => return Some(v),
                Err(e) => e,
            }
        } else {
            match pass.client.chat_bytes(body.clone()).await {
                Ok(resp) => {
                    let text = resp.choices.first().map(|c| c.content.clone());
                    return Some(serde_json::Value::String(text.unwrap_or_default()));
                }
                Err(e) => e,
            }
        };
        match tries.failed(err).await {
            Next::Retry => {}
            Next::Stopped => return None,
            Next::GaveUp { err, .. } => {
                pass.stats[2].fetch_add(1, Ordering::Relaxed);
                *lock(&pass.last_error) = Some(err.clone());
                if !err.class.retryable() {
                    lock(&pass.fatal).get_or_insert(err);
                }
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregations_of_step_scores() {
        let s = [0.9, 0.5, 0.8];
        assert_eq!(aggregate_steps(Aggregation::Min, &s), Some(0.5));
        assert_eq!(aggregate_steps(Aggregation::Last, &s), Some(0.8));
        assert_eq!(
            aggregate_steps(Aggregation::Product, &s),
            Some(0.9 * 0.5 * 0.8)
        );
        let mean = aggregate_steps(Aggregation::Mean, &s).unwrap();
        assert!((mean - 2.2 / 3.0).abs() < 1e-12);
        assert_eq!(aggregate_steps(Aggregation::Min, &[]), None);
    }
}
