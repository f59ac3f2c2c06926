//! The config file as written: serde structs that reject unknown keys.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub api: RawApi,
    #[serde(default)]
    pub sampling: RawSampling,
    #[serde(default)]
    pub models: Vec<RawModel>,
    #[serde(default)]
    pub evaluation: RawEvaluation,
    pub judge: Option<RawJudge>,
    /// Prices for every model; `[models.pricing]` overrides them key by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cost::PriceFields>,
    /// MCTS parameters for models with `strategy = "mcts"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<RawSearch>,
    /// The results database a run pushes to when it ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<RawStore>,
    /// The process reward model that scores stored samples (`gpassk verify`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<RawVerifier>,
}

/// The `[store]` table; see `config::store::StoreSettings`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    pub url: Option<String>,
    /// The environment variable holding a PostgreSQL password (never the password itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password_env: Option<String>,
    /// Also push a row per sample (`gpassk store push --samples`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<bool>,
}

/// The `[verifier]` table; see `config::VerifierSettings`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawVerifier {
    pub reward_model_id: Option<String>,
    pub reward_base_url: Option<String>,
    pub reward_api_key_env: Option<String>,
    pub reward_mode: Option<String>,
    pub step_regex: Option<String>,
    pub max_steps: Option<i64>,
    pub aggregation: Option<Vec<String>>,
    /// `[verifier.pricing]`: the PRM's prices, as `[models.pricing]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cost::PriceFields>,
    /// Run an unpriced PRM under a budget, its calls not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unpriced: Option<bool>,
}

/// The `[search]` table (and a model's `[models.search]` override); see `config::SearchSettings`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSearch {
    pub num_simulations: Option<i64>,
    pub max_depth: Option<i64>,
    pub num_candidates: Option<i64>,
    pub c_uct: Option<f64>,
    pub policy_temperature: Option<f64>,
    pub policy_max_tokens: Option<i64>,
    pub reward_model_id: Option<String>,
    pub reward_base_url: Option<String>,
    pub reward_api_key_env: Option<String>,
    pub reward_mode: Option<String>,
    pub terminal_reward: Option<String>,
    pub answer_select: Option<String>,
    pub exec_timeout: Option<f64>,
    pub max_calls_per_search: Option<i64>,
    pub prefix: Option<String>,
    /// `[search.reward_pricing]`: the reward model's prices (it is another model than the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_pricing: Option<crate::cost::PriceFields>,
    /// Run an unpriced reward model under a budget, its calls not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_allow_unpriced: Option<bool>,
}

/// The optional LLM judge.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawJudge {
    pub model_id: Option<String>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub prompt_file: Option<String>,
    /// `extracted` (default) or `response`.
    pub input: Option<String>,
    pub timeout: Option<f64>,
    pub max_retries: Option<i64>,
    pub concurrency: Option<i64>,
    pub max_tokens: Option<i64>,
    /// Server-sent events; defaults to `[api] stream`.
    pub stream: Option<bool>,
    /// `[judge.pricing]`: the judge's prices, as `[models.pricing]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cost::PriceFields>,
    /// Run an unpriced judge under a budget, its calls not counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unpriced: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawApi {
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout: Option<f64>,
    pub max_retries: Option<i64>,
    pub concurrency: Option<i64>,
    pub rpm: Option<f64>,
    pub tpm: Option<f64>,
    pub backoff_base: Option<f64>,
    pub backoff_max: Option<f64>,
    pub shutdown_grace: Option<f64>,
    pub retry_after_max: Option<f64>,
    pub max_response_bytes: Option<i64>,
    /// Server-sent events instead of one JSON reply (long reasoning outlives idle-cutting gateways).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Seconds a whole streamed request may take (default: timeout + max_tokens / 5; see
    /// docs/providers.md, "Streaming").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_deadline: Option<f64>,
    /// Drive the OpenAI Batch API (upload, create, poll, download) instead of live requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<bool>,
    /// Seconds between polls of a batch (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_poll_interval: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawSampling {
    pub n: Option<i64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub seed: Option<i64>,
    pub max_tokens: Option<i64>,
    pub greedy: Option<bool>,
    pub use_n_param: Option<bool>,
    pub n_per_request: Option<i64>,
    pub stop: Option<Vec<String>>,
}

/// A model entry: its identity plus optional overrides of any `[api]` or `[sampling]` key.
///
/// The override fields are spelled out because serde's `flatten` cannot be combined with
/// `deny_unknown_fields`, and unknown keys must stay errors.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub name: Option<String>,
    pub model_id: Option<String>,
    pub enabled: Option<bool>,
    /// `sample` (default) or `mcts`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// `[models.search]`: this model's overrides of `[search]` keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<RawSearch>,
    // [api] overrides
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub timeout: Option<f64>,
    pub max_retries: Option<i64>,
    pub concurrency: Option<i64>,
    pub rpm: Option<f64>,
    pub tpm: Option<f64>,
    pub backoff_base: Option<f64>,
    pub backoff_max: Option<f64>,
    pub retry_after_max: Option<f64>,
    pub max_response_bytes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    /// Seconds a whole streamed request may take (default: timeout + max_tokens / 5; see
    /// docs/providers.md, "Streaming").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_deadline: Option<f64>,
    /// Drive the OpenAI Batch API (upload, create, poll, download) instead of live requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<bool>,
    /// Seconds between polls of a batch (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_poll_interval: Option<f64>,
    // [sampling] overrides
    pub n: Option<i64>,
    pub temperature: Option<f64>,
    pub top_p: Option<f64>,
    pub top_k: Option<i64>,
    pub seed: Option<i64>,
    pub max_tokens: Option<i64>,
    pub greedy: Option<bool>,
    pub use_n_param: Option<bool>,
    pub n_per_request: Option<i64>,
    pub stop: Option<Vec<String>>,
    /// `[models.pricing]`: this model's prices, over the global `[pricing]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cost::PriceFields>,
}

/// A τ written as a TOML number (0.5) or string ("1/3").
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum RawTau {
    Number(f64),
    Text(String),
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawEvaluation {
    pub dataset: Option<String>,
    pub metrics: Option<Vec<String>>,
    pub output_dir: Option<String>,
    pub prompt_template: Option<String>,
    pub k: Option<Vec<i64>>,
    pub g_pass_thresholds: Option<Vec<RawTau>>,
    pub answer_extract_regex: Option<Vec<String>>,
    pub limit: Option<i64>,
    pub fields: Option<RawFields>,
    pub few_shot: Option<RawFewShot>,
    pub rel_tol: Option<f64>,
    /// Decimal places two decimals must agree to (default 6); excludes `rel_tol`.
    pub precision: Option<i64>,
    /// `any` (default) or `as_written`.
    pub list_order: Option<String>,
    /// `either` (default) or `strip`.
    pub percent: Option<String>,
    /// `distinct` (default) or `same`.
    pub styled_letters: Option<String>,
    /// What a comma between a gold's digits is: `auto` (default: by its shape), `point` (never
    /// a decimal comma) or `comma` (always).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decimal_mark: Option<String>,
    /// `rule` (default), `judge`, `rule_then_judge` or `rule_then_judge_uncertain`.
    pub grader: Option<String>,
    /// The share of a model's answers found by a heuristic (the last math span or number)
    /// past which the reports warn (default 0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heuristic_warn: Option<f64>,
    /// The run's label; settings.json keys of the same names land here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_raw_responses: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_from_checkpoint: Option<bool>,
    /// The run-wide budget across all models, in their one currency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFields {
    pub id: Option<String>,
    pub question: Option<String>,
    pub answer: Option<String>,
    pub subset: Option<String>,
}

/// `[evaluation.fields]` with its defaults filled in; restating a default changes nothing.
pub fn field_map(raw: Option<&RawFields>) -> Option<crate::dataset::FieldMap> {
    raw.map(|f| crate::dataset::FieldMap {
        id: f.id.clone(),
        question: f.question.clone().unwrap_or_else(|| "question".into()),
        answer: f.answer.clone().unwrap_or_else(|| "answer".into()),
        subset: f.subset.clone(),
    })
    .filter(|m| m.id.is_some() || !is_default(m))
}

/// Fields that read a file exactly as no `[evaluation.fields]` would (`id = "id"` included, for
/// comparing runs: both take ids from the `id` field).
pub fn is_default(m: &crate::dataset::FieldMap) -> bool {
    matches!(m.id.as_deref(), None | Some("id"))
        && m.question == "question"
        && m.answer == "answer"
        && m.subset.is_none()
}

/// Few-shot examples: drawn from a dataset (`count` + `dataset`) or listed inline (`examples`).
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFewShot {
    pub count: Option<i64>,
    pub dataset: Option<String>,
    pub examples: Option<Vec<RawExample>>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawExample {
    pub question: String,
    pub answer: String,
}

/// The `[api]` keys (a model's override of one of these is reported against `[api]`).
pub const API_KEYS: &[&str] = &[
    "base_url",
    "api_key_env",
    "timeout",
    "max_retries",
    "concurrency",
    "rpm",
    "tpm",
    "backoff_base",
    "backoff_max",
    "shutdown_grace",
    "retry_after_max",
    "max_response_bytes",
    "stream",
    "stream_deadline",
    "batch",
    "batch_poll_interval",
];
