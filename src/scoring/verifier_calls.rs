//! `gpassk verify` (and `gpassk run` with `[verifier]`): a process reward model scores every
//! stored sample's steps; the step scores are stored beside the checkpoints
//! (`verifier/<model>.jsonl`, keyed by sample and response hash like judge verdicts, and by the
//! verifier model), so scoring again never asks twice and an interrupted pass resumes. The
//! settings of the latest pass are kept in `verifier/settings.json` for scoring.

use super::calls::{Call, Pass, PassError, Tally};
use super::judge::response_hash;
use super::steps;
use crate::client::{ApiError, ApiKey};
use crate::config::{ApiSettings, RewardMode, SearchSettings, VerifierSettings, JUDGE_MAX_TOKENS};
use crate::cost::{Budget, Spend};
use crate::error::BadInput;
use crate::rundir::record::{
    read_lines, read_records, CheckpointError, CheckpointWriter, SampleIndex,
};
use crate::rundir::RunDir;
use crate::search::requests::{judge_body, parse_pooling_steps, parse_score, pooling_body};
use crate::search::{Score, SearchInput};
use crate::util::{now_rfc3339, write_atomic, Notes, Shutdown};
use serde::{Deserialize, Deserializer, Serialize};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Errors of a verification pass the user must act on.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The PRM refused the key or the request, or every request failed.
    #[error(transparent)]
    Pass(#[from] PassError),
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
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
    #[serde(deserialize_with = "unit_scores")]
    pub scores: Option<Vec<f64>>,
    /// The unreadable reply, bounded, when `scores` is None.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unparsed: Option<String>,
    pub scored_at: String,
    /// What the sample's requests cost in tokens, as the budget and the reports price them
    /// (absent in scores stored before calls were priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<Spend>,
    /// Requests that failed after the server may have billed them: kept for their `spend`,
    /// never a score (the sample is asked again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
}

/// Stored scores are probabilities: a line holding anything else is corrupt, not a score.
fn unit_scores<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<f64>>, D::Error> {
    let scores: Option<Vec<f64>> = Option::deserialize(d)?;
    if let Some(bad) = scores.iter().flatten().find(|v| !(0.0..=1.0).contains(*v)) {
        return Err(serde::de::Error::custom(format!(
            "step score {bad} is not in [0, 1]"
        )));
    }
    Ok(scores)
}

/// A stored entry: the response hash it scored, and its step scores (None: unreadable).
type Entry = (String, Option<Vec<f64>>);

/// Stored step scores of one model's samples by one verifier model, by (problem, sample).
#[derive(Debug, Clone, Default)]
pub struct VerifierScores {
    map: HashMap<(String, i64), Entry>,
}

impl VerifierScores {
    /// The scores `verifier_model` gave (another PRM's scores in the same file are not its own);
    /// a sample scored twice keeps its latest line.
    pub fn load(path: &Path, verifier_model: &str) -> Result<VerifierScores, CheckpointError> {
        let mut map = HashMap::new();
        read_lines(path, |s: StoredScores| {
            if s.verifier_model == verifier_model && !s.failed {
                map.insert(
                    (s.problem_id, s.sample_index.key()),
                    (s.response_hash, s.scores),
                );
            }
            Ok(())
        })?;
        Ok(VerifierScores { map })
    }

    /// The stored step scores of a sample, whatever response they scored (the labels of a run's
    /// samples name no response).
    pub fn of_sample(&self, problem_id: &str, slot: SampleIndex) -> Option<Option<&[f64]>> {
        let (_, v) = self.map.get(&(problem_id.to_string(), slot.key()))?;
        Some(v.as_deref())
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

impl VerifyStats {
    /// What the pass did, as one line for people.
    pub fn summary(&self) -> String {
        format!(
            "{} scored, {} unreadable (no score, never read as 0), {} failed, {} already stored",
            self.scored, self.unparsed, self.failed, self.reused
        )
    }
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
        // The verifier metrics rank samples; a greedy answer is not one of them.
        let (Some(response), true) = (r.response.as_deref(), r.usable()) else {
            return Ok(());
        };
        if r.sample_index == SampleIndex::Greedy {
            return Ok(());
        }
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

/// Scores every job (bounded concurrency, the one retry policy, each request reserved on the
/// verifier's budget first) and appends each sample's scores to `out` as they arrive. A
/// rejected key or unknown model, or the budget, stops the pass; `shutdown` stops it between
/// samples.
pub fn verify_pending(
    verifier: &Verifier,
    jobs: Vec<VerifyJob>,
    out: &Path,
    (shutdown, notes): (&Shutdown, &Notes),
) -> Result<VerifyStats, VerifyError> {
    if jobs.is_empty() {
        return Ok(VerifyStats::default());
    }
    let (settings, api) = (verifier.settings, verifier.api);
    let url = verifier_url(settings, api);
    let client = (api.client_at(url, verifier.key.clone(), None)).map_err(VerifyError::Client)?;
    let pass = Pass::new(
        CheckpointWriter::open(out, notes)?,
        client,
        api.retry_policy(),
        shutdown,
        settings.clone(),
    );
    let pass = Arc::new(pass.with_budget(verifier.budget.clone()));
    // No grace: a sample in flight finishes (or times out) and its scores are kept.
    pass.run(jobs, api.concurrency, None, |pass, job| async move {
        score_one(&pass, job).await
    })
    .map_err(VerifyError::Runtime)?;
    pass.writer.sync()?;
    let [scored, unparsed, failed] = pass.end("verifier", &settings.reward_model_id)?;
    Ok(VerifyStats {
        reused: 0,
        scored,
        unparsed,
        failed,
    })
}

/// A verifier pass: the settings it asks with.
type VerifyPass = Pass<VerifierSettings>;

/// One sample: a `/pooling` call scores every step at once; a chat judge is asked per step prefix.
async fn score_one(pass: &VerifyPass, job: VerifyJob) {
    let s = &pass.ctx;
    let input = SearchInput {
        problem_id: job.problem_id.clone(),
        question: job.question.clone(),
    };
    let mut scores = Vec::with_capacity(job.steps.len());
    let mut unparsed = None;
    let mut spend = Spend::default();
    let calls = job.steps.len() as u64;
    // A call's worst case: its body's bytes as the prompt bound, and its completion bound.
    let call_of = |body: &[u8], completion: u32| Call {
        bound: (crate::plan::prompt_bound(body.len()), u64::from(completion)),
        per_job: calls,
    };
    let answered = match s.reward_mode {
        RewardMode::Pooling => {
            let body = pooling_body(&s.reward_model_id, &input, &job.steps);
            // A pooling call generates nothing: its prompt is all it is billed for.
            let call = Call {
                per_job: 1,
                ..call_of(&body, 0)
            };
            let send = || pass.client.post_json(body.clone());
            match pass.request(call, &mut spend, send).await {
                None => false,
                Some(reply) => {
                    match parse_pooling_steps(&reply, job.steps.len()) {
                        Ok(v) => scores = v,
                        Err(text) => unparsed = Some(text),
                    }
                    true
                }
            }
        }
        _ => {
            let mut answered = true;
            for i in 1..=job.steps.len() {
                let body = judge_body(&s.reward_model_id, &input, &job.steps[..i]);
                let call = call_of(&body, JUDGE_MAX_TOKENS);
                let send = || pass.client.chat_bytes(body.clone());
                let Some(resp) = pass.request(call, &mut spend, send).await else {
                    answered = false;
                    break;
                };
                let text = resp.choices.first().map_or("", |c| c.content.as_str());
                match parse_score(text) {
                    Score::Value(v) => scores.push(v),
                    Score::Unparseable(t) => {
                        unparsed = Some(t);
                        break;
                    }
                }
            }
            answered
        }
    };
    if !answered {
        // Failed for good or stopped: asked again next time, but what it may have been billed
        // for is kept, so a resumed run's budget counts it.
        if spend.calls > 0 || spend.billable_failures > 0 {
            let _ = pass.writer.append_value(&StoredScores {
                failed: true,
                ..stored(&job, s, None, spend)
            });
        }
        return;
    }
    pass.count(if unparsed.is_none() {
        Tally::Done
    } else {
        Tally::Unreadable
    });
    let scores = unparsed.is_none().then_some(scores);
    let line = StoredScores {
        unparsed,
        ..stored(&job, s, scores, spend)
    };
    if pass.writer.append_value(&line).is_err() {
        pass.count(Tally::Failed);
    }
}

/// The line that stores `job`'s `scores` (None: unreadable) and what its requests used.
fn stored(
    job: &VerifyJob,
    s: &VerifierSettings,
    scores: Option<Vec<f64>>,
    spend: Spend,
) -> StoredScores {
    StoredScores {
        problem_id: job.problem_id.clone(),
        sample_index: job.sample_index,
        response_hash: job.response_hash.clone(),
        verifier_model: s.reward_model_id.clone(),
        steps: job.steps.len(),
        scores,
        unparsed: None,
        scored_at: now_rfc3339(),
        spend: Some(spend),
        failed: false,
    }
}

/// The verifier settings scoring uses for a run: those of its latest verification pass
/// (`verifier/settings.json`: its PRM's scores are the ones stored, its aggregations the ones
/// asked for last), else the config's `[verifier]`; None when it has neither.
pub fn run_settings(
    dir: &RunDir,
    config: Option<&VerifierSettings>,
) -> Result<Option<VerifierSettings>, BadInput> {
    let path = dir.verifier_settings();
    if !path.exists() {
        return Ok(config.cloned());
    }
    let text = crate::util::read_bounded_string(&path, crate::util::MAX_TEXT_FILE)
        .map_err(|e| BadInput(format!("{}: cannot read: {e}", path.display())))?;
    let stored: VerifierSettings = serde_json::from_str(&text)
        .map_err(|e| BadInput(format!("{}: not verifier settings: {e}", path.display())))?;
    let a = &stored.aggregations;
    if a.is_empty() || (1..a.len()).any(|i| a[..i].contains(&a[i])) {
        return Err(BadInput(format!(
            "{}: field `aggregations`: list each of min, mean, last, product at most once, and \
             at least one",
            path.display()
        )));
    }
    Ok(Some(stored))
}

/// What a pass over a run needs: the PRM, the gateway it is behind, its key and its budget
/// (from the run's [`crate::sampling::BudgetBook`]; None: nothing caps its calls).
pub struct Verifier<'a> {
    pub settings: &'a VerifierSettings,
    pub api: &'a ApiSettings,
    pub key: Option<ApiKey>,
    pub budget: Option<Budget>,
}

/// Scores the stored samples of each of `models` not yet scored by this verifier; `done` sees
/// each model's stats as its pass ends. Stops after the model in progress when `shutdown`
/// triggers. The settings are kept in `verifier/settings.json` first, for scoring.
pub fn verify_run(
    dir: &RunDir,
    models: &[&str],
    questions: &HashMap<&str, &str>,
    verifier: &Verifier,
    (shutdown, notes): (&Shutdown, &Notes),
    mut done: impl FnMut(&str, &VerifyStats),
) -> Result<(), VerifyError> {
    let settings = verifier.settings;
    let folder = dir.verifier_settings();
    let write = |path: &Path, e: std::io::Error| VerifyError::Write {
        path: path.display().to_string(),
        source: e,
    };
    if let Some(parent) = folder.parent() {
        std::fs::create_dir_all(parent).map_err(|e| write(parent, e))?;
    }
    let json = serde_json::to_vec_pretty(settings).expect("settings serialize");
    write_atomic(&folder, &json).map_err(|e| write(&folder, e))?;
    for model in models {
        let out = dir.verifier_scores(model);
        let store = VerifierScores::load(&out, &settings.reward_model_id)?;
        let (jobs, reused) = pending(dir, model, questions, &store, settings)?;
        let stats = verify_pending(verifier, jobs, &out, (shutdown, notes))?;
        done(model, &VerifyStats { reused, ..stats });
        if shutdown.is_triggered() {
            break;
        }
    }
    Ok(())
}
