//! The optional LLM judge: its prompt, reply parsing, verdicts stored beside the samples, and the
//! async pass that asks it about samples it has not judged yet.

use crate::checkpoint::{read_lines, CheckpointError, CheckpointWriter, Record, SampleIndex};
use crate::client::{ApiError, ApiKey, Client, ErrorClass};
use crate::config::ApiSettings;
use crate::grade::Outcome;
use crate::runner::RetryPolicy;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which grader decides correctness.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraderMode {
    /// The rule-based grader alone.
    Rule,
    /// The judge decides every sample.
    Judge,
    /// The rule grader first; the judge looks only at samples the rules did not accept.
    RuleThenJudge,
}

impl GraderMode {
    pub fn parse(s: &str) -> Option<GraderMode> {
        match s {
            "rule" => Some(GraderMode::Rule),
            "judge" => Some(GraderMode::Judge),
            "rule_then_judge" => Some(GraderMode::RuleThenJudge),
            _ => None,
        }
    }

    /// Whether a sample with this rule outcome goes to the judge.
    pub fn needs_judge(self, rule: Outcome) -> bool {
        match self {
            GraderMode::Rule => false,
            GraderMode::Judge => true,
            GraderMode::RuleThenJudge => rule != Outcome::Correct,
        }
    }
}

/// What the judge is shown as the candidate's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeInput {
    /// The answer the extractor pulled out of the response.
    Extracted,
    /// The whole response.
    Response,
}

/// The resolved `[judge]` table.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeSettings {
    pub model_id: String,
    pub api: ApiSettings,
    pub prompt: String,
    /// `default` or the prompt file's path, for the manifest.
    pub prompt_source: String,
    pub input: JudgeInput,
    pub max_tokens: u32,
}

/// gpassk's own judge prompt. Placeholders: {question}, {gold}, {answer}, {response}.
pub const DEFAULT_PROMPT: &str = "You are checking the final answer to a math problem against the reference answer.\n\n\
Problem:\n{question}\n\n\
Reference answer:\n{gold}\n\n\
Candidate answer:\n{answer}\n\n\
Treat answers as equal when they are mathematically equivalent (for example 1/2 and 0.5, or the same set \
written in another order), and ignore formatting and units. Is the candidate answer correct? Reply with \
one word: yes or no.";

/// Placeholders a judge prompt may use.
pub const PLACEHOLDERS: [&str; 4] = ["{question}", "{gold}", "{answer}", "{response}"];

/// Fills a judge prompt; other braces are left alone, since prompts often hold LaTeX.
pub fn render(template: &str, question: &str, gold: &str, answer: &str, response: &str) -> String {
    template
        .replace("{question}", question)
        .replace("{gold}", gold)
        .replace("{answer}", answer)
        .replace("{response}", response)
}

/// Reads a yes/no verdict: the first word that is yes/no (or correct/incorrect, true/false).
pub fn parse_reply(text: &str) -> Option<bool> {
    // Reasoning judges may think aloud first; look at the text after any closing think tag.
    let tail = text.rsplit("</think>").next().unwrap_or(text);
    for word in tail
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        match word.to_lowercase().as_str() {
            "yes" | "correct" | "true" | "是" => return Some(true),
            "no" | "incorrect" | "false" | "wrong" | "否" => return Some(false),
            _ => {}
        }
    }
    None
}

pub fn response_hash(response: &str) -> String {
    crate::config::hex(&Sha256::digest(response.as_bytes())[..8])
}

/// One verdict, as stored in `grades/<model>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredVerdict {
    pub problem_id: String,
    pub sample_index: SampleIndex,
    /// The verdict is reused only while the response it judged is unchanged.
    pub response_hash: String,
    pub judge_model: String,
    /// None when the reply held neither yes nor no (the rule verdict stands).
    pub correct: Option<bool>,
    pub reply: String,
    pub judged_at: String,
}

/// Verdicts loaded for scoring: re-scoring never calls the judge again.
#[derive(Debug, Clone)]
pub struct JudgeVerdicts {
    mode: GraderMode,
    map: HashMap<(String, i64), (String, Option<bool>)>,
}

impl JudgeVerdicts {
    pub fn load(path: &Path, mode: GraderMode) -> Result<JudgeVerdicts, CheckpointError> {
        let mut map = HashMap::new();
        read_lines(path, |v: StoredVerdict| {
            map.insert(
                (v.problem_id, v.sample_index.key()),
                (v.response_hash, v.correct),
            );
            Ok(())
        })?;
        Ok(JudgeVerdicts { mode, map })
    }

    pub fn has(&self, problem_id: &str, slot: SampleIndex, response: &str) -> bool {
        self.lookup(problem_id, slot, response).is_some()
    }

    fn lookup(&self, problem_id: &str, slot: SampleIndex, response: &str) -> Option<Option<bool>> {
        let (hash, v) = self.map.get(&(problem_id.to_string(), slot.key()))?;
        (*hash == response_hash(response)).then_some(*v)
    }

    /// The final outcome of a sample given the rule grader's outcome and any stored verdict.
    pub fn decide(&self, r: &Record, response: &str, rule: Outcome) -> Outcome {
        if !self.mode.needs_judge(rule) {
            return rule;
        }
        match self.lookup(&r.problem_id, r.sample_index, response) {
            Some(Some(true)) => Outcome::Correct,
            Some(Some(false)) if rule == Outcome::NoAnswer => Outcome::NoAnswer,
            Some(Some(false)) => Outcome::Wrong,
            // No usable verdict (judge failed or unparseable): the rule grader's outcome stands.
            _ => rule,
        }
    }
}

/// A sample waiting for the judge.
#[derive(Debug, Clone)]
pub struct JudgeJob {
    pub problem_id: String,
    pub sample_index: SampleIndex,
    pub response_hash: String,
    pub prompt: String,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct JudgeStats {
    pub judged: u64,
    pub unparsed: u64,
    pub failed: u64,
}

/// Asks the judge about every job (bounded concurrency, the runner's retry policy) and appends each
/// verdict to `out` as it arrives. A rejected key or unknown judge model stops the pass at once.
pub fn judge_pending(
    settings: &JudgeSettings,
    key: Option<ApiKey>,
    jobs: Vec<JudgeJob>,
    out: &Path,
) -> anyhow::Result<JudgeStats> {
    if jobs.is_empty() {
        return Ok(JudgeStats::default());
    }
    let writer = Arc::new(CheckpointWriter::open(out)?);
    let client = Client::new(
        settings.api.chat_url(),
        key,
        settings.api.timeout,
        settings.api.concurrency,
    )?;
    let policy = RetryPolicy {
        max_retries: settings.api.max_retries,
        base: settings.api.backoff_base,
        max: settings.api.backoff_max,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let stats = Arc::new([AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)]);
    let fatal: Arc<std::sync::Mutex<Option<ApiError>>> = Arc::default();
    rt.block_on(async {
        let sem = Arc::new(tokio::sync::Semaphore::new(settings.api.concurrency));
        let mut tasks = tokio::task::JoinSet::new();
        for job in jobs {
            if fatal.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
                break;
            }
            let permit = sem
                .clone()
                .acquire_owned()
                .await
                .expect("semaphore is never closed");
            let (client, policy, writer, stats, fatal) = (
                client.clone(),
                policy.clone(),
                writer.clone(),
                stats.clone(),
                fatal.clone(),
            );
            let model = settings.model_id.clone();
            let max_tokens = settings.max_tokens;
            tasks.spawn(async move {
                let _permit = permit;
                let body = serde_json::json!({
                    "model": model,
                    "messages": [{"role": "user", "content": job.prompt}],
                    "temperature": 0.0,
                    "max_tokens": max_tokens,
                });
                let mut attempts = 0;
                loop {
                    attempts += 1;
                    match client.chat(&body).await {
                        Ok(resp) => {
                            let reply = resp
                                .choices
                                .first()
                                .map(|c| c.content.clone())
                                .unwrap_or_default();
                            let correct = parse_reply(&reply);
                            let idx = if correct.is_some() { 0 } else { 1 };
                            stats[idx].fetch_add(1, Ordering::Relaxed);
                            let v = StoredVerdict {
                                problem_id: job.problem_id,
                                sample_index: job.sample_index,
                                response_hash: job.response_hash,
                                judge_model: resp.served_model.unwrap_or(model),
                                correct,
                                reply: reply.chars().take(2000).collect(),
                                judged_at: crate::manifest::now_rfc3339(),
                            };
                            if writer.append_value(&v).is_err() {
                                stats[2].fetch_add(1, Ordering::Relaxed);
                            }
                            return;
                        }
                        Err(e) => {
                            if !e.class.retryable() {
                                fatal
                                    .lock()
                                    .unwrap_or_else(|p| p.into_inner())
                                    .get_or_insert(e);
                                stats[2].fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                            if !policy.should_retry(&e, attempts) {
                                stats[2].fetch_add(1, Ordering::Relaxed);
                                return;
                            }
                            tokio::time::sleep(policy.delay(&e, attempts)).await;
                        }
                    }
                }
            });
            while tasks.try_join_next().is_some() {}
        }
        while tasks.join_next().await.is_some() {}
    });
    let _ = writer.sync();
    if let Some(e) = fatal.lock().unwrap_or_else(|p| p.into_inner()).take() {
        let class = if e.class == ErrorClass::Auth {
            "rejected the key"
        } else {
            "refused the request"
        };
        anyhow::bail!("judge model {} {class}: {e}", settings.model_id);
    }
    Ok(JudgeStats {
        judged: stats[0].load(Ordering::Relaxed),
        unparsed: stats[1].load(Ordering::Relaxed),
        failed: stats[2].load(Ordering::Relaxed),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_to_verdicts() {
        assert_eq!(parse_reply("Yes"), Some(true));
        assert_eq!(parse_reply("yes."), Some(true));
        assert_eq!(parse_reply("No, the candidate is off by one."), Some(false));
        assert_eq!(
            parse_reply("<think>is 0.5 = 1/2? no wait... yes</think>\nYES"),
            Some(true)
        );
        assert_eq!(parse_reply("The answer is correct"), Some(true));
        assert_eq!(parse_reply("Incorrect."), Some(false));
        assert_eq!(parse_reply("I cannot tell"), None);
        assert_eq!(parse_reply(""), None);
    }

    #[test]
    fn render_fills_known_placeholders_and_keeps_latex_braces() {
        let t = "Q: {question} G: {gold} A: {answer} R: {response} \\boxed{x}";
        assert_eq!(
            render(t, "q", "g", "a", "r"),
            "Q: q G: g A: a R: r \\boxed{x}"
        );
    }

    #[test]
    fn modes_choose_which_samples_the_judge_sees() {
        assert!(!GraderMode::Rule.needs_judge(Outcome::Wrong));
        assert!(GraderMode::Judge.needs_judge(Outcome::Correct));
        assert!(!GraderMode::RuleThenJudge.needs_judge(Outcome::Correct));
        assert!(GraderMode::RuleThenJudge.needs_judge(Outcome::Wrong));
        assert!(GraderMode::RuleThenJudge.needs_judge(Outcome::NoAnswer));
        assert_eq!(
            GraderMode::parse("rule_then_judge"),
            Some(GraderMode::RuleThenJudge)
        );
        assert_eq!(GraderMode::parse("llm"), None);
    }
}
