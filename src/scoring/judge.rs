//! The optional LLM judge: its prompt, reply parsing, verdicts stored beside the samples, and the
//! async pass that asks it about samples it has not judged yet.

use super::calls::{Call, Pass, Tally};
use super::JudgeCall;
use crate::config::{GraderMode, JudgeSettings};
use crate::cost::Spend;
use crate::grade::{FoundBy, Outcome};
use crate::rundir::record::{read_lines, CheckpointError, CheckpointWriter, SampleIndex};
use crate::util::{hex, now_rfc3339};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

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
    hex(&Sha256::digest(response.as_bytes())[..8])
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
    /// What the request cost in tokens, as the budget and the reports price it (absent in
    /// verdicts stored before calls were priced).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spend: Option<Spend>,
    /// A request that failed after the server may have billed it: kept for its `spend`, never
    /// a verdict (the sample is asked again).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub failed: bool,
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
            if v.failed {
                return Ok(());
            }
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

    /// The final outcome of a sample (its slot and the text it was graded on) given the rule
    /// grader's outcome, how its answer was found, and any stored verdict.
    pub fn decide(
        &self,
        problem_id: &str,
        (slot, response): (SampleIndex, &str),
        rule: Outcome,
        found_by: Option<FoundBy>,
    ) -> Outcome {
        if !self.mode.needs_judge(rule, found_by) {
            return rule;
        }
        match self.lookup(problem_id, slot, response) {
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

/// Asks the judge about every job (bounded concurrency, the one retry policy, each request
/// reserved on `call`'s budget first) and appends each verdict to `out` as it arrives. A rejected
/// key or unknown judge model, or the budget, stops the pass at once; `shutdown` stops queueing
/// jobs and abandons retries.
pub fn judge_pending(
    settings: &JudgeSettings,
    call: &JudgeCall,
    jobs: Vec<JudgeJob>,
    out: &Path,
) -> anyhow::Result<JudgeStats> {
    if jobs.is_empty() {
        return Ok(JudgeStats::default());
    }
    let pass = Pass::new(
        CheckpointWriter::open(out, call.notes)?,
        settings.api.chat_client(call.key.clone())?,
        settings.api.retry_policy(),
        call.shutdown,
        (settings.model_id.clone(), settings.max_tokens),
    );
    let pass = Arc::new(pass.with_budget(call.budget.clone()));
    // As for sampling: after a stop, requests in flight get the grace period, then are dropped.
    let grace = Some(settings.api.shutdown_grace);
    pass.run(
        jobs,
        settings.api.concurrency,
        grace,
        |pass, job| async move { judge_one(&pass, job).await },
    )?;
    let _ = pass.writer.sync();
    let [judged, unparsed, failed] = pass.end("judge", &settings.model_id)?;
    Ok(JudgeStats {
        judged,
        unparsed,
        failed,
    })
}

/// A judge pass: its model and reply length.
type JudgePass = Pass<(String, u32)>;

async fn judge_one(pass: &JudgePass, job: JudgeJob) {
    let (model, max_tokens) = &pass.ctx;
    let mut body = serde_json::json!({
        "model": model,
        "messages": [{"role": "user", "content": job.prompt}],
        "temperature": 0.0,
        "max_tokens": max_tokens,
    });
    if pass.client.streams() {
        crate::client::ask_to_stream(&mut body);
    }
    let bytes = serde_json::to_vec(&body).map_or(0, |b| b.len());
    let call = Call {
        bound: (crate::plan::prompt_bound(bytes), u64::from(*max_tokens)),
        per_job: 1,
    };
    let mut spend = Spend::default();
    let resp = pass
        .request(call, &mut spend, || pass.client.chat(&body))
        .await;
    let Some(resp) = resp else {
        if spend.billable_failures > 0 {
            // No verdict, but maybe billed: kept so a resumed run's budget counts it.
            let v = StoredVerdict {
                correct: None,
                reply: String::new(),
                judge_model: model.clone(),
                failed: true,
                ..verdict(job, spend)
            };
            let _ = pass.writer.append_value(&v);
        }
        return;
    };
    let reply = resp
        .choices
        .first()
        .map(|c| c.content.clone())
        .unwrap_or_default();
    let correct = parse_reply(&reply);
    pass.count(if correct.is_some() {
        Tally::Done
    } else {
        Tally::Unreadable
    });
    let v = StoredVerdict {
        judge_model: resp.served_model.unwrap_or_else(|| model.clone()),
        correct,
        reply: reply.chars().take(2000).collect(),
        ..verdict(job, spend)
    };
    if pass.writer.append_value(&v).is_err() {
        pass.count(Tally::Failed);
    }
}

/// A verdict line about `job` with its `spend`, before its verdict is known.
fn verdict(job: JudgeJob, spend: Spend) -> StoredVerdict {
    StoredVerdict {
        problem_id: job.problem_id,
        sample_index: job.sample_index,
        response_hash: job.response_hash,
        judge_model: String::new(),
        correct: None,
        reply: String::new(),
        judged_at: now_rfc3339(),
        spend: Some(spend),
        failed: false,
    }
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
        let boxed = Some(FoundBy::Boxed);
        assert!(!GraderMode::Rule.needs_judge(Outcome::Wrong, boxed));
        assert!(GraderMode::Judge.needs_judge(Outcome::Correct, boxed));
        assert!(!GraderMode::RuleThenJudge.needs_judge(Outcome::Correct, boxed));
        assert!(GraderMode::RuleThenJudge.needs_judge(Outcome::Wrong, boxed));
        assert!(GraderMode::RuleThenJudge.needs_judge(Outcome::NoAnswer, Some(FoundBy::None)));
        assert_eq!(
            GraderMode::parse("rule_then_judge"),
            Some(GraderMode::RuleThenJudge)
        );
        assert_eq!(GraderMode::parse("llm"), None);
        for name in GraderMode::NAMES {
            assert!(GraderMode::parse(name).is_some(), "{name}");
        }
    }

    #[test]
    fn the_uncertain_policy_sends_guesses_and_answers_not_found_whatever_their_outcome() {
        let mode = GraderMode::parse("rule_then_judge_uncertain").unwrap();
        for outcome in [Outcome::Correct, Outcome::Wrong, Outcome::NoAnswer] {
            for f in FoundBy::ALL {
                let sent = f.is_heuristic() || f == FoundBy::None;
                assert_eq!(mode.needs_judge(outcome, Some(f)), sent, "{f} {outcome:?}");
            }
            // A way the run did not record may have been a guess.
            assert!(mode.needs_judge(outcome, None));
        }
    }

    #[test]
    fn a_stored_verdict_decides_only_what_the_policy_sends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.jsonl");
        let line = |p: &str, correct: bool| {
            let v = StoredVerdict {
                problem_id: p.into(),
                sample_index: SampleIndex::Sample(0),
                response_hash: response_hash("r"),
                judge_model: "j".into(),
                correct: Some(correct),
                reply: String::new(),
                judged_at: String::new(),
                spend: None,
                failed: false,
            };
            serde_json::to_string(&v).unwrap() + "\n"
        };
        std::fs::write(&path, line("a", false) + &line("b", true)).unwrap();
        let v = JudgeVerdicts::load(&path, GraderMode::RuleThenJudgeUncertain).unwrap();
        let at = (SampleIndex::Sample(0), "r");
        let guess = Some(FoundBy::LastNumber);
        // A guess the rules accepted, the judge rejects; a boxed answer keeps its rule verdict.
        assert_eq!(v.decide("a", at, Outcome::Correct, guess), Outcome::Wrong);
        let boxed = Some(FoundBy::Boxed);
        assert_eq!(v.decide("a", at, Outcome::Correct, boxed), Outcome::Correct);
        assert_eq!(v.decide("b", at, Outcome::Wrong, guess), Outcome::Correct);
        assert_eq!(v.decide("b", at, Outcome::Wrong, boxed), Outcome::Wrong);
    }
}
