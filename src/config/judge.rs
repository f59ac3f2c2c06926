//! The `[judge]` table's resolved form: which grader decides, what the judge sees, its prompt.

use super::api::ApiSettings;
use crate::grade::{FoundBy, Outcome};
use serde::{Deserialize, Serialize};

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
    /// The rule grader first; the judge looks only at the verdicts whose answer the rules could
    /// not anchor: found by a heuristic (the last math span or number), or not found at all
    /// (shown only when the judge sees the whole response), whatever their rule outcome.
    RuleThenJudgeUncertain,
}

impl GraderMode {
    pub fn parse(s: &str) -> Option<GraderMode> {
        match s {
            "rule" => Some(GraderMode::Rule),
            "judge" => Some(GraderMode::Judge),
            "rule_then_judge" => Some(GraderMode::RuleThenJudge),
            "rule_then_judge_uncertain" => Some(GraderMode::RuleThenJudgeUncertain),
            _ => None,
        }
    }

    /// The names [`GraderMode::parse`] takes, for messages.
    pub const NAMES: [&'static str; 4] = [
        "rule",
        "judge",
        "rule_then_judge",
        "rule_then_judge_uncertain",
    ];

    /// Whether a sample with this rule outcome, its answer found this way (None: the run did not
    /// record how), goes to the judge.
    pub fn needs_judge(self, rule: Outcome, found_by: Option<FoundBy>) -> bool {
        match self {
            GraderMode::Rule => false,
            GraderMode::Judge => true,
            GraderMode::RuleThenJudge => rule != Outcome::Correct,
            // A way not recorded may have been a guess: it is checked too.
            GraderMode::RuleThenJudgeUncertain => {
                found_by.is_none_or(|f| f.is_heuristic() || f == FoundBy::None)
            }
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
    /// `[judge.pricing]`, else the shipped price of `model_id`; None: unpriced.
    pub pricing: Option<crate::cost::Price>,
    /// `allow_unpriced = true`: an unpriced judge may run under a budget, its calls not counted.
    pub allow_unpriced: bool,
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
