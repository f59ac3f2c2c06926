//! The `[search]` table's resolved form: the MCTS parameters of a model with `strategy = "mcts"`.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// How a model answers: one sample per request, or one tree search per sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    Sample,
    Mcts,
}

/// How new nodes are scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RewardMode {
    /// A chat model asked for a 0–1 score at temperature 0.
    ChatJudge,
    /// vLLM's `/pooling` endpoint (Qwen2.5-Math-PRM-style step rewards).
    Pooling,
    /// No reward model: terminal values come from answer agreement only.
    None,
}

/// The value a finished path back-propagates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TerminalReward {
    /// The reward model's score of the answer step.
    Prm,
    /// The share of the search's answers so far that equal this one.
    Agreement,
    /// The mean of the two.
    Mix,
}

/// How a search's final answer is chosen among its answer steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerSelect {
    /// The answer step with the highest mean back-propagated value.
    BestValue,
    /// The answer reached most often.
    Majority,
    /// The answer step visited most.
    MostVisited,
}

/// The resolved `[search]` table (global, with a model's `[models.search]` keys on top).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchSettings {
    pub num_simulations: u32,
    pub max_depth: u32,
    pub num_candidates: u32,
    pub c_uct: f64,
    pub policy_temperature: f64,
    pub policy_max_tokens: u32,
    pub reward_model_id: Option<String>,
    /// The reward model's own gateway; None means the policy's.
    pub reward_base_url: Option<String>,
    pub reward_api_key_env: Option<String>,
    pub reward_mode: RewardMode,
    pub terminal_reward: TerminalReward,
    pub answer_select: AnswerSelect,
    pub exec_timeout: Duration,
    /// A hard cap on policy + reward calls per search; None: only the natural bound.
    pub max_calls_per_search: Option<u32>,
}

impl Default for SearchSettings {
    /// The defaults; c_uct = 2 as in rStar-Math's code (`c_puct: 2`).
    fn default() -> Self {
        SearchSettings {
            num_simulations: 32,
            max_depth: 8,
            num_candidates: 4,
            c_uct: 2.0,
            policy_temperature: 0.7,
            policy_max_tokens: 1024,
            reward_model_id: None,
            reward_base_url: None,
            reward_api_key_env: None,
            reward_mode: RewardMode::ChatJudge,
            terminal_reward: TerminalReward::Prm,
            answer_select: AnswerSelect::BestValue,
            exec_timeout: Duration::from_secs(5),
            max_calls_per_search: None,
        }
    }
}

impl SearchSettings {
    /// The fewest and most model calls (policy + reward) one search can make.
    ///
    /// Min: one policy call whose candidates all fail their code (no reward call). Max: every
    /// simulation expands a new node at each depth, each expansion one policy call plus one reward
    /// call per candidate; then the hard cap.
    pub fn call_budget(&self) -> (u64, u64) {
        let per_expansion = 1 + match self.reward_mode {
            RewardMode::None => 0,
            _ => u64::from(self.num_candidates),
        };
        let natural = u64::from(self.num_simulations) * u64::from(self.max_depth) * per_expansion;
        let max = self
            .max_calls_per_search
            .map_or(natural, |c| natural.min(u64::from(c)));
        (1, max)
    }
}

/// The `[search]` keys, for did-you-mean hints.
pub const SEARCH_KEYS: &[&str] = &[
    "num_simulations",
    "max_depth",
    "num_candidates",
    "c_uct",
    "policy_temperature",
    "policy_max_tokens",
    "reward_model_id",
    "reward_base_url",
    "reward_api_key_env",
    "reward_mode",
    "terminal_reward",
    "answer_select",
    "exec_timeout",
    "max_calls_per_search",
];
