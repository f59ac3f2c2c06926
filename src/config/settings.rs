//! The resolved, validated configuration: defaults applied, per-model overrides merged.

use super::api::{check_base_url, default_body_limit, default_stream_deadline, ApiSettings};
use super::judge::{GraderMode, JudgeInput, JudgeSettings, DEFAULT_PROMPT, PLACEHOLDERS};
use super::raw::{RawApi, RawConfig, RawEvaluation, RawModel, RawSampling, RawTau, API_KEYS};
use super::{locate, ConfigError};
use crate::client::retry::DEFAULT_RETRY_AFTER_MAX;
use crate::client::MAX_RESPONSE_BYTES;
use crate::dataset::FewShot;
use crate::metrics::{MetricKind, Tau, MAX_N};
use crate::util::{hex, read_bounded_string, MAX_TEXT_FILE};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Everything a run needs, validated: config.toml with its settings.json task and `--set`
/// overrides applied (the file settings.json itself is a [`crate::config::TaskFile`]).
#[derive(Debug, Clone)]
pub struct RunSettings {
    pub config_path: PathBuf,
    /// sha256 of the config file's bytes, hex.
    pub config_hash: String,
    /// The config as parsed (it holds environment variable names, never keys), for the manifest.
    pub config_json: serde_json::Value,
    /// Enabled models, in file order.
    pub models: Vec<ModelSettings>,
    pub evaluation: EvalSettings,
    /// The LLM judge, when `[judge]` is present.
    pub judge: Option<JudgeSettings>,
    /// The process reward model, when `[verifier]` is present.
    pub verifier: Option<super::VerifierSettings>,
    /// The settings.json task this run came from (two-file configuration), if any.
    pub task_file: Option<super::settings_json::TaskFile>,
    /// The `--set KEY=VALUE` overrides applied, as given.
    pub overrides: Vec<String>,
    /// `[store]`: where the run is pushed when it ends.
    pub store: Option<super::store::StoreSettings>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ModelSettings {
    pub name: String,
    pub model_id: String,
    pub api: ApiSettings,
    pub sampling: SamplingSettings,
    pub strategy: super::Strategy,
    /// The resolved `[search]` table when `strategy = "mcts"`.
    pub search: Option<super::SearchSettings>,
    /// `[models.pricing]` over `[pricing]`, else the shipped price of `model_id`; None: unpriced.
    pub pricing: Option<crate::cost::Price>,
}

/// A duration of `v` seconds, which must be positive and finite (and fit a Duration).
fn positive_secs(v: f64) -> Result<Duration, String> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{v} must be a positive number of seconds"))
}

/// A duration in seconds from a key already checked elsewhere; `default` when unset or unusable.
fn secs_or(v: Option<f64>, default: Duration) -> Duration {
    v.filter(|s| s.is_finite() && *s > 0.0 && *s < 1e7)
        .map_or(default, Duration::from_secs_f64)
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SamplingSettings {
    pub n: u32,
    pub temperature: f64,
    pub top_p: f64,
    pub top_k: Option<u32>,
    pub seed: u64,
    pub max_tokens: Option<u32>,
    pub greedy: bool,
    pub use_n_param: bool,
    pub n_per_request: u32,
    pub stop: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct EvalSettings {
    pub dataset: String,
    pub fields: Option<crate::config::raw::RawFields>,
    /// The metrics the summary shows, in the order given.
    pub metrics: Vec<MetricKind>,
    /// Every k computed (from `k` and from `metrics`), ascending.
    pub ks: Vec<u64>,
    /// Every τ computed (from `g_pass_thresholds` and from `metrics`), in order of first mention.
    pub taus: Vec<Tau>,
    pub output_dir: PathBuf,
    pub prompt_template: Option<String>,
    pub answer_extract_regex: Vec<regex::Regex>,
    pub limit: Option<usize>,
    pub few_shot: FewShot,
    /// Grading policy (tolerance, list order, percent, styled letters).
    pub grading: crate::grade::Policy,
    pub grader: GraderMode,
    /// The share of a model's answers found by a heuristic past which the reports warn.
    pub heuristic_warn: f64,
    /// The run's label (settings.json `task_name`).
    pub task_name: Option<String>,
    /// False: checkpoints keep the extracted answer and a response hash, not the response.
    pub save_raw_responses: bool,
    /// Some(true): resume the latest run of this config and task; Some(false): always a new run.
    pub resume_from_checkpoint: Option<bool>,
    /// The run-wide budget (`max_cost`) in micro-units of the models' one currency.
    pub max_cost: Option<u64>,
}

impl EvalSettings {
    /// The rule grader's settings: the extraction regexes and the grading policy.
    pub fn grade_config(&self) -> crate::grade::GradeConfig {
        crate::grade::GradeConfig {
            extract_regex: self.answer_extract_regex.clone(),
            policy: self.grading,
        }
    }
}

struct ConfigText<'a> {
    text: &'a str,
    path: &'a Path,
}

impl ConfigText<'_> {
    fn err(
        &self,
        section: &str,
        index: Option<usize>,
        key: &str,
        message: impl Into<String>,
    ) -> ConfigError {
        let where_ = match (section, index) {
            ("", _) => key.to_string(),
            (s, Some(i)) => format!("{s}[{i}].{key}"),
            (s, None) => format!("{s}.{key}"),
        };
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            line: locate(self.text, section, index, key),
            message: format!("`{where_}`: {}", message.into()),
        }
    }
}

fn text_path<'a>(cx: &ConfigText<'a>) -> (&'a str, &'a Path) {
    (cx.text, cx.path)
}

pub(super) fn resolve(raw: RawConfig, text: &str, path: &Path) -> Result<RunSettings, ConfigError> {
    let cx = ConfigText { text, path };
    let config_json = serde_json::to_value(&raw).unwrap_or(serde_json::Value::Null);
    if raw.models.is_empty() {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message: "no [[models]] entries: add at least one with `name` and `model_id`".into(),
        });
    }
    let mut models = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (i, m) in raw.models.iter().enumerate() {
        let ms = resolve_model(&cx, &raw, m, i)?;
        // Checkpoint files are named after models: `alpha` and `ALPHA` collide on macOS and Windows.
        if let Some(other) = names.iter().find(|n| n.eq_ignore_ascii_case(&ms.name)) {
            let what = if *other == ms.name {
                format!("duplicate model name {:?}", ms.name)
            } else {
                format!(
                    "model name {:?} differs from {other:?} only in case; names must differ ignoring case (they name checkpoint files)",
                    ms.name
                )
            };
            return Err(cx.err("models", Some(i), "name", what));
        }
        names.push(ms.name.clone());
        if m.enabled.unwrap_or(true) {
            models.push(ms);
        }
    }
    if models.is_empty() {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            line: None,
            message: "every model has `enabled = false`: nothing to run".into(),
        });
    }
    let evaluation = resolve_eval(&cx, &raw, &models)?;
    let judge = match &raw.judge {
        None => None,
        Some(j) => Some(resolve_judge(&cx, &raw, j)?),
    };
    if evaluation.grader != GraderMode::Rule && judge.is_none() {
        return Err(cx.err(
            "evaluation",
            None,
            "grader",
            "needs a [judge] table (model_id, base_url, ...)",
        ));
    }
    let store = match &raw.store {
        None => None,
        Some(s) => {
            let url = s.url.as_deref().ok_or_else(|| {
                cx.err(
                    "store",
                    None,
                    "url",
                    "missing: sqlite:PATH or postgres://USER@HOST/DB, as in sqlite:results/gpassk.db",
                )
            })?;
            let field = |name: &str, e: crate::error::BadInput| {
                let prefix = format!("{name}: ");
                cx.err("store", None, name, e.0.trim_start_matches(&prefix))
            };
            let url = super::store::StoreUrl::parse(url, "url")
                .map_err(|e| field("url", e))?
                .with_password_env(s.password_env.as_deref(), "password_env")
                .map_err(|e| field("password_env", e))?;
            // A CA file that cannot be used stops the run before it starts, not at its push.
            if let super::store::StoreUrl::Postgres(pg) = &url {
                pg.trusted_roots()
                    .map_err(|e| cx.err("store", None, "url", e.0))?;
            }
            Some(super::store::StoreSettings {
                url,
                samples: s.samples.unwrap_or(false),
            })
        }
    };
    let verifier = super::verifier::resolve(text_path(&cx), &raw)?;
    check_verifier_metrics(&evaluation.metrics, verifier.as_ref(), &models)
        .map_err(|m| cx.err("evaluation", None, "metrics", m))?;
    Ok(RunSettings {
        config_path: path.to_path_buf(),
        config_hash: hex(&Sha256::digest(text.as_bytes())),
        config_json,
        models,
        evaluation,
        judge,
        verifier,
        task_file: None,
        overrides: Vec::new(),
        store,
    })
}

/// A declared verifier metric needs the `[verifier]` table that computes it: its aggregation
/// listed, and for maj@N an N below every model's n (at N = n it is maj@n).
fn check_verifier_metrics(
    metrics: &[MetricKind],
    verifier: Option<&super::VerifierSettings>,
    models: &[ModelSettings],
) -> Result<(), String> {
    for m in metrics.iter().filter(|m| m.is_verifier()) {
        let Some(v) = verifier else {
            return Err(format!(
                "{m} needs a [verifier] table (the process reward model whose scores it uses)"
            ));
        };
        if let Some(a) = m.aggregation().filter(|a| !v.aggregations.contains(a)) {
            return Err(format!(
                "{m} uses the {} aggregation, which `verifier.aggregation` does not list",
                a.name()
            ));
        }
        let min_n = models.iter().map(|x| u64::from(x.sampling.n)).min();
        if let (MetricKind::MajorityAt { size }, Some(n)) = (m, min_n) {
            if *size >= n {
                return Err(format!(
                    "{m}: N must be below n = {n} (maj@N at N = n is maj@n, always reported)"
                ));
            }
        }
    }
    Ok(())
}

fn resolve_judge(
    cx: &ConfigText,
    raw: &RawConfig,
    j: &crate::config::raw::RawJudge,
) -> Result<JudgeSettings, ConfigError> {
    let err = |key: &str, msg: String| cx.err("judge", None, key, msg);
    let model_id = j
        .model_id
        .clone()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| err("model_id", "missing: the judge model to ask".into()))?;
    let base_url = j
        .base_url
        .clone()
        .or_else(|| raw.api.base_url.clone())
        .ok_or_else(|| err("base_url", "missing: set it in [judge] or [api]".into()))?;
    check_base_url(&base_url).map_err(|m| err("base_url", m))?;
    let num = |key: &str, v: Option<i64>, default: i64, max: i64| -> Result<i64, ConfigError> {
        let v = v.unwrap_or(default);
        if v < 1 || v > max {
            return Err(err(key, format!("{v} must be between 1 and {max}")));
        }
        Ok(v)
    };
    let timeout = positive_secs(j.timeout.or(raw.api.timeout).unwrap_or(120.0))
        .map_err(|m| err("timeout", m))?;
    let (prompt, prompt_source) = judge_prompt(cx, j)?;
    let input = match j.input.as_deref() {
        None | Some("extracted") => JudgeInput::Extracted,
        Some("response") => JudgeInput::Response,
        Some(other) => {
            return Err(err(
                "input",
                format!("{other:?}: use \"extracted\" or \"response\""),
            ))
        }
    };
    let max_tokens = num("max_tokens", j.max_tokens, 32, u32::MAX as i64)? as u32;
    // `[judge.pricing]`, else the shipped price file (`[pricing]` prices the sampled models).
    let pricing = (j.pricing.clone().unwrap_or_default())
        .price_of(&model_id)
        .map_err(|(key, m)| cx.err("judge.pricing", None, key, m))?;
    Ok(JudgeSettings {
        model_id,
        api: ApiSettings {
            base_url,
            api_key_env: j
                .api_key_env
                .clone()
                .or_else(|| raw.api.api_key_env.clone())
                .filter(|v| !v.is_empty()),
            timeout,
            max_retries: num("max_retries", j.max_retries.or(raw.api.max_retries), 3, 100)? as u32,
            concurrency: num(
                "concurrency",
                j.concurrency.or(raw.api.concurrency),
                8,
                100_000,
            )? as usize,
            rpm: None,
            tpm: None,
            backoff_base: Duration::from_secs_f64(raw.api.backoff_base.unwrap_or(0.5).max(0.001)),
            backoff_max: Duration::from_secs_f64(raw.api.backoff_max.unwrap_or(30.0).max(0.001)),
            shutdown_grace: Duration::from_secs_f64(
                raw.api
                    .shutdown_grace
                    .unwrap_or(DEFAULT_GRACE)
                    .clamp(0.0, MAX_GRACE),
            ),
            retry_after_max: secs_or(raw.api.retry_after_max, DEFAULT_RETRY_AFTER_MAX),
            max_response_bytes: default_body_limit(Some(max_tokens), 1),
            stream: j.stream.or(raw.api.stream).unwrap_or(false),
            stream_deadline: secs_or(
                raw.api.stream_deadline,
                default_stream_deadline(timeout, Some(max_tokens)),
            ),
            batch: None,
        },
        prompt,
        prompt_source,
        input,
        max_tokens,
        pricing,
        allow_unpriced: j.allow_unpriced.unwrap_or(false),
    })
}

/// The judge's prompt (gpassk's own, or `prompt_file`'s) and where it came from.
fn judge_prompt(
    cx: &ConfigText,
    j: &crate::config::raw::RawJudge,
) -> Result<(String, String), ConfigError> {
    let err = |key: &str, msg: String| cx.err("judge", None, key, msg);
    let (prompt, prompt_source) = match &j.prompt_file {
        None => (DEFAULT_PROMPT.to_string(), "default".to_string()),
        Some(f) => {
            let path = cx.path.parent().unwrap_or(Path::new(".")).join(f);
            let text = read_bounded_string(&path, MAX_TEXT_FILE).map_err(|e| {
                err(
                    "prompt_file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?;
            (text, path.display().to_string())
        }
    };
    if !prompt.contains("{gold}") || !(prompt.contains("{answer}") || prompt.contains("{response}"))
    {
        return Err(err(
            "prompt_file",
            format!("the judge prompt must use {{gold}} and {{answer}} or {{response}} (placeholders: {})", PLACEHOLDERS.join(", ")),
        ));
    }
    Ok((prompt, prompt_source))
}

/// Seconds in-flight requests may finish after a stop signal, by default and at most.
const DEFAULT_GRACE: f64 = 5.0;
const MAX_GRACE: f64 = 600.0;

/// Where a model's keys are checked: errors point at the model's own line when it overrides the
/// key, else at `[api]`/`[sampling]`.
struct ModelLocator<'a> {
    cx: &'a ConfigText<'a>,
    m: &'a RawModel,
    i: usize,
}

impl ModelLocator<'_> {
    fn err(&self, key: &str, msg: String) -> ConfigError {
        if locate_exact(self.cx.text, "models", Some(self.i), key) {
            return self.cx.err("models", Some(self.i), key, msg);
        }
        let sec = if API_KEYS.contains(&key) {
            "api"
        } else {
            "sampling"
        };
        let name = self.m.name.as_deref().unwrap_or("?");
        self.cx
            .err(sec, None, key, format!("{msg} (for model {name})"))
    }

    fn secs(&self, key: &str, v: Option<f64>, default: f64) -> Result<Duration, ConfigError> {
        let v = v.unwrap_or(default);
        if !(v.is_finite() && v > 0.0 && v < 1e7) {
            return Err(self.err(key, format!("{v} must be a positive number of seconds")));
        }
        Ok(Duration::from_secs_f64(v))
    }

    /// `shutdown_grace`: 0 to [`MAX_GRACE`] seconds, default [`DEFAULT_GRACE`].
    fn grace(&self, v: Option<f64>) -> Result<Duration, ConfigError> {
        let v = v.unwrap_or(DEFAULT_GRACE);
        if !(v.is_finite() && (0.0..=MAX_GRACE).contains(&v)) {
            return Err(self.err(
                "shutdown_grace",
                format!("{v} must be between 0 and {MAX_GRACE} seconds"),
            ));
        }
        Ok(Duration::from_secs_f64(v))
    }

    fn int(
        &self,
        key: &str,
        v: Option<i64>,
        default: i64,
        min: i64,
        max: i64,
    ) -> Result<i64, ConfigError> {
        let v = v.unwrap_or(default);
        if v < min || v > max {
            return Err(self.err(key, format!("{v} must be between {min} and {max}")));
        }
        Ok(v)
    }

    fn rate(&self, key: &str, v: Option<f64>) -> Result<Option<f64>, ConfigError> {
        match v {
            Some(x) if !(x.is_finite() && x > 0.0) => {
                Err(self.err(key, format!("{x} must be a positive number")))
            }
            other => Ok(other),
        }
    }

    fn optional_u32(&self, key: &str, v: Option<i64>) -> Result<Option<u32>, ConfigError> {
        v.map(|v| {
            self.int(key, Some(v), 0, 1, u32::MAX as i64)
                .map(|v| v as u32)
        })
        .transpose()
    }
}

fn resolve_model(
    cx: &ConfigText,
    raw: &RawConfig,
    m: &RawModel,
    i: usize,
) -> Result<ModelSettings, ConfigError> {
    let name = model_name(cx, m, i)?;
    let mc = ModelLocator { cx, m, i };
    let mut api = resolve_api(&mc, &raw.api, &name)?;
    let sampling = resolve_sampling(&mc, &raw.sampling)?;
    if m.max_response_bytes
        .or(raw.api.max_response_bytes)
        .is_none()
    {
        let choices = if sampling.use_n_param {
            sampling.n_per_request.min(sampling.n)
        } else {
            1
        };
        api.max_response_bytes = default_body_limit(sampling.max_tokens, choices);
    }
    let (strategy, search) = super::search::resolve(text_path(cx), raw, m, i, &name)?;
    if search.is_some() && api.batch.is_some() {
        // A search decides each call from the replies before it: nothing to send as one file.
        return Err(mc.err(
            "batch",
            format!("model {name} has strategy = \"mcts\": a tree search cannot go through the Batch API (each call depends on the replies before it); set batch = false for it"),
        ));
    }
    // A search has no greedy counterpart: its units are the n searches.
    let mut sampling = sampling;
    sampling.greedy &= search.is_none();
    if let (Some(s), None) = (&search, m.max_response_bytes.or(raw.api.max_response_bytes)) {
        // A policy reply holds num_candidates steps of at most policy_max_tokens each.
        api.max_response_bytes = default_body_limit(Some(s.policy_max_tokens), s.num_candidates);
    }
    let model_id = m.model_id.clone().unwrap_or_else(|| name.clone());
    // A search's calls are bounded by `policy_max_tokens` (and the judge's 16), whatever [sampling] says.
    let bound = search.as_ref().map(|s| s.policy_max_tokens);
    if m.stream_deadline.or(raw.api.stream_deadline).is_none() {
        api.stream_deadline = default_stream_deadline(api.timeout, bound.or(sampling.max_tokens));
    }
    let pricing = model_pricing(cx, raw, m, i, &model_id, bound.or(sampling.max_tokens))?;
    let mut search = search;
    if let Some(s) = search.as_mut().filter(|s| s.reward_price.is_none()) {
        // The policy scoring its own steps costs what the policy costs.
        if s.reward_model_id.as_deref() == Some(model_id.as_str()) {
            s.reward_price = pricing.clone().map(|p| crate::cost::Price {
                max_cost: None,
                ..p
            });
        }
    }
    Ok(ModelSettings {
        model_id,
        name,
        api,
        sampling,
        strategy,
        search,
        pricing,
    })
}

/// The model's price: its `[models.pricing]` keys over `[pricing]`, else the shipped price file.
fn model_pricing(
    cx: &ConfigText,
    raw: &RawConfig,
    m: &RawModel,
    i: usize,
    model_id: &str,
    max_tokens: Option<u32>,
) -> Result<Option<crate::cost::Price>, ConfigError> {
    use crate::cost::Price;
    let global = raw.pricing.clone().unwrap_or_default();
    let fields = m
        .pricing
        .as_ref()
        .map_or(global.clone(), |p| p.over(&global));
    let resolved =
        fields.price_of(model_id).and_then(|p| {
            match (&p, max_tokens) {
        (
            Some(Price {
                max_cost: Some(_), ..
            }),
            None,
        ) => Err((
            "max_cost",
            "needs [sampling] max_tokens: each request reserves its worst case before it is sent"
                .into(),
        )),
        _ => Ok(p),
    }
        });
    match resolved {
        Ok(p) => Ok(p),
        Err((key, msg)) => Err(match m.pricing.as_ref() {
            Some(_) => cx.err("models", Some(i), &format!("pricing.{key}"), msg),
            None => cx.err("pricing", None, key, msg),
        }),
    }
}

fn model_name(cx: &ConfigText, m: &RawModel, i: usize) -> Result<String, ConfigError> {
    let name = m
        .name
        .clone()
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            cx.err(
                "models",
                Some(i),
                "name",
                "every [[models]] entry needs a non-empty `name`",
            )
        })?;
    if let Some(problem) = crate::util::path_name_problem(&name) {
        return Err(cx.err(
            "models",
            Some(i),
            "name",
            format!("{problem} (it names the checkpoint file and the tree folder); put the provider's name in `model_id`"),
        ));
    }
    Ok(name)
}

fn resolve_api(mc: &ModelLocator, a: &RawApi, name: &str) -> Result<ApiSettings, ConfigError> {
    let m = mc.m;
    let base_url = m
        .base_url
        .clone()
        .or_else(|| a.base_url.clone())
        .ok_or_else(|| {
            mc.cx.err(
                "api",
                None,
                "base_url",
                format!("missing: set it in [api] or in model {name}"),
            )
        })?;
    check_base_url(&base_url).map_err(|m| mc.err("base_url", m))?;
    let timeout = mc.secs("timeout", m.timeout.or(a.timeout), 120.0)?;
    Ok(ApiSettings {
        base_url,
        api_key_env: m
            .api_key_env
            .clone()
            .or_else(|| a.api_key_env.clone())
            .filter(|v| !v.is_empty()),
        timeout,
        max_retries: mc.int("max_retries", m.max_retries.or(a.max_retries), 3, 0, 100)? as u32,
        concurrency: mc.int(
            "concurrency",
            m.concurrency.or(a.concurrency),
            8,
            1,
            100_000,
        )? as usize,
        rpm: mc.rate("rpm", m.rpm.or(a.rpm))?,
        tpm: mc.rate("tpm", m.tpm.or(a.tpm))?,
        backoff_base: mc.secs("backoff_base", m.backoff_base.or(a.backoff_base), 0.5)?,
        backoff_max: mc.secs("backoff_max", m.backoff_max.or(a.backoff_max), 30.0)?,
        shutdown_grace: mc.grace(a.shutdown_grace)?,
        retry_after_max: mc.secs(
            "retry_after_max",
            m.retry_after_max.or(a.retry_after_max),
            DEFAULT_RETRY_AFTER_MAX.as_secs_f64(),
        )?,
        max_response_bytes: mc.int(
            "max_response_bytes",
            m.max_response_bytes.or(a.max_response_bytes),
            MAX_RESPONSE_BYTES as i64,
            1024,
            MAX_RESPONSE_BYTES as i64,
        )? as u64,
        stream: m.stream.or(a.stream).unwrap_or(false),
        // Unset: resolve_model ties it to the max_tokens that applies.
        stream_deadline: match m.stream_deadline.or(a.stream_deadline) {
            Some(v) => mc.secs("stream_deadline", Some(v), 0.0)?,
            None => default_stream_deadline(timeout, None),
        },
        batch: m.batch.or(a.batch).unwrap_or(false).then_some(mc.secs(
            "batch_poll_interval",
            m.batch_poll_interval.or(a.batch_poll_interval),
            30.0,
        )?),
    })
}

fn resolve_sampling(mc: &ModelLocator, s: &RawSampling) -> Result<SamplingSettings, ConfigError> {
    let m = mc.m;
    let temperature = m.temperature.or(s.temperature).unwrap_or(0.7);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(mc.err(
            "temperature",
            format!("{temperature} must be between 0 and 2"),
        ));
    }
    let top_p = m.top_p.or(s.top_p).unwrap_or(1.0);
    if !(top_p > 0.0 && top_p <= 1.0) {
        return Err(mc.err("top_p", format!("{top_p} must be in (0, 1]")));
    }
    let n = m.n.or(s.n).unwrap_or(16);
    if n > MAX_N as i64 {
        return Err(mc.err("n", format!("{n} is above {MAX_N}, the largest n the exact metrics are computed for in reasonable time")));
    }
    Ok(SamplingSettings {
        n: mc.int("n", Some(n), 16, 1, MAX_N as i64)? as u32,
        temperature,
        top_p,
        top_k: mc.optional_u32("top_k", m.top_k.or(s.top_k))?,
        seed: mc.int("seed", m.seed.or(s.seed), 42, 0, i64::MAX)? as u64,
        max_tokens: mc.optional_u32("max_tokens", m.max_tokens.or(s.max_tokens))?,
        greedy: m.greedy.or(s.greedy).unwrap_or(true),
        use_n_param: m.use_n_param.or(s.use_n_param).unwrap_or(false),
        n_per_request: mc.int(
            "n_per_request",
            m.n_per_request.or(s.n_per_request),
            16,
            1,
            1024,
        )? as u32,
        stop: m
            .stop
            .clone()
            .or_else(|| s.stop.clone())
            .unwrap_or_default(),
    })
}

fn locate_exact(text: &str, section: &str, index: Option<usize>, key: &str) -> bool {
    // `locate` falls back to the header line; check the line really holds the key.
    locate(text, section, index, key)
        .and_then(|l| text.lines().nth(l - 1))
        .and_then(|l| l.split_once('='))
        .is_some_and(|(k, _)| k.trim().trim_matches('"') == key)
}

fn resolve_eval(
    cx: &ConfigText,
    raw: &RawConfig,
    models: &[ModelSettings],
) -> Result<EvalSettings, ConfigError> {
    let ev = &raw.evaluation;
    let err = |(key, msg): (&str, String)| cx.err("evaluation", None, key, msg);
    let dataset = ev
        .dataset
        .clone()
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            err((
                "dataset",
                "missing: name a shipped dataset or a path to a .jsonl file".into(),
            ))
        })?;
    let mut taus = thresholds(ev).map_err(err)?;
    let (metrics, ks) = metrics_and_ks(ev, models, &mut taus).map_err(err)?;
    let limit = match ev.limit {
        None => None,
        Some(l) if l >= 1 => Some(l as usize),
        Some(l) => return Err(err(("limit", format!("{l} must be at least 1")))),
    };
    let few_shot = few_shot(ev).map_err(|msg| cx.err("evaluation.few_shot", None, "count", msg))?;
    if let Some(t) = &ev.prompt_template {
        if !t.contains("{question}") {
            return Err(err(("prompt_template", "must contain {question}".into())));
        }
    }
    let grader = match ev.grader.as_deref() {
        None => GraderMode::Rule,
        Some(g) => GraderMode::parse(g).ok_or_else(|| {
            let names: Vec<String> = GraderMode::NAMES.iter().map(|n| format!("{n:?}")).collect();
            err(("grader", format!("{g:?}: use one of {}", names.join(", "))))
        })?,
    };
    let heuristic_warn = match ev.heuristic_warn {
        None => DEFAULT_HEURISTIC_WARN,
        Some(x) if (0.0..=1.0).contains(&x) => x,
        Some(x) => {
            return Err(err((
                "heuristic_warn",
                format!("{x} must be a share between 0 and 1 (0.2 warns past 20%)"),
            )))
        }
    };
    Ok(EvalSettings {
        grader,
        heuristic_warn,
        dataset,
        fields: ev.fields.clone(),
        metrics,
        ks,
        taus,
        output_dir: PathBuf::from(ev.output_dir.clone().unwrap_or_else(|| "./results".into())),
        prompt_template: ev.prompt_template.clone(),
        answer_extract_regex: answer_regexes(ev).map_err(err)?,
        limit,
        few_shot,
        grading: grading_policy(ev).map_err(err)?,
        task_name: ev.task_name.clone(),
        save_raw_responses: ev.save_raw_responses.unwrap_or(true),
        resume_from_checkpoint: ev.resume_from_checkpoint,
        max_cost: run_budget(ev, models).map_err(err)?,
    })
}

/// The default `[evaluation] heuristic_warn`: the reports warn when more than a fifth of a
/// model's answers were found by the last math span or number.
pub const DEFAULT_HEURISTIC_WARN: f64 = 0.2;

/// `[evaluation] max_cost`: every model priced, with max_tokens, in one currency.
fn run_budget(ev: &RawEvaluation, models: &[ModelSettings]) -> Result<Option<u64>, EvalError> {
    let fields = crate::cost::PriceFields {
        max_cost: ev.max_cost,
        ..Default::default()
    };
    let Some(budget) = fields.budget()? else {
        return Ok(None);
    };
    let mut currency: Option<&str> = None;
    for m in models {
        let Some(p) = &m.pricing else {
            return Err((
                "max_cost",
                format!(
                    "needs a price for model {:?}: give [pricing] input/output",
                    m.name
                ),
            ));
        };
        if m.sampling.max_tokens.is_none() {
            return Err(("max_cost", format!("needs [sampling] max_tokens for model {:?}: each request reserves its worst case", m.name)));
        }
        match currency {
            Some(c) if c != p.currency => {
                return Err((
                    "max_cost",
                    format!(
                        "needs one currency: model {:?} is priced in {} but another in {c}",
                        m.name, p.currency
                    ),
                ));
            }
            _ => currency = Some(&p.currency),
        }
    }
    Ok(Some(budget))
}

/// An `[evaluation]` problem: the key and the message.
type EvalError = (&'static str, String);

/// Adds τ unless an equal fraction is already listed.
fn push_tau(taus: &mut Vec<Tau>, t: Tau) {
    if !taus
        .iter()
        .any(|x| x.numer() == t.numer() && x.denom() == t.denom())
    {
        taus.push(t);
    }
}

/// `g_pass_thresholds`, or the default grid.
fn thresholds(ev: &RawEvaluation) -> Result<Vec<Tau>, EvalError> {
    let mut taus = Vec::new();
    let Some(list) = &ev.g_pass_thresholds else {
        Tau::default_grid()
            .into_iter()
            .for_each(|t| push_tau(&mut taus, t));
        return Ok(taus);
    };
    if list.is_empty() {
        return Err(("g_pass_thresholds", "must list at least one τ".into()));
    }
    for t in list {
        let text = match t {
            // A TOML float like 1.0 prints as "1"; keep the decimal point users wrote.
            RawTau::Number(x) if x.fract() == 0.0 => format!("{x:.1}"),
            RawTau::Number(x) => format!("{x}"),
            RawTau::Text(s) => s.clone(),
        };
        let tau: Tau = text
            .parse()
            .map_err(|e| ("g_pass_thresholds", format!("{e}")))?;
        push_tau(&mut taus, tau);
    }
    Ok(taus)
}

/// The metrics the summary shows and every k computed; metrics add their k and τ.
fn metrics_and_ks(
    ev: &RawEvaluation,
    models: &[ModelSettings],
    taus: &mut Vec<Tau>,
) -> Result<(Vec<MetricKind>, Vec<u64>), EvalError> {
    let min_model = models.iter().min_by_key(|m| m.sampling.n);
    let min_n = min_model.map_or(1, |m| u64::from(m.sampling.n));
    let min_n_model = min_model.map(|m| m.name.clone()).unwrap_or_default();
    let largest_k_within_n = || {
        [16u64, 8, 4, 1]
            .into_iter()
            .find(|&k| k <= min_n)
            .unwrap_or(1)
    };
    let mut ks: Vec<u64> = Vec::new();
    if let Some(list) = &ev.k {
        if list.is_empty() {
            return Err(("k", "must list at least one k".into()));
        }
        for &k in list {
            if k < 1 {
                return Err(("k", format!("{k} must be at least 1")));
            }
            ks.push(k as u64);
        }
    }
    let greedy_any = models.iter().any(|m| m.sampling.greedy);
    let mut metrics = Vec::new();
    match &ev.metrics {
        Some(list) => {
            for name in list {
                let m = parse_metric(name).map_err(|msg| ("metrics", msg))?;
                if m == MetricKind::Greedy && !greedy_any {
                    let msg = "greedy_acc needs `greedy = true` in [sampling]";
                    return Err(("metrics", msg.into()));
                }
                ks.extend(m.k());
                if let Some(t) = m.tau() {
                    push_tau(taus, t.clone());
                }
                metrics.push(m);
            }
        }
        None => {
            if ks.is_empty() {
                ks.push(largest_k_within_n());
            }
            metrics = default_metrics(&ks, taus, greedy_any);
        }
    }
    if ks.is_empty() {
        ks.push(largest_k_within_n());
    }
    ks.sort_unstable();
    ks.dedup();
    check_ks(&ks, ev.k.as_deref(), (min_n, &min_n_model))?;
    Ok((metrics, ks))
}

/// Without `metrics`: greedy accuracy (when sampled), then per k pass@k, every G-Pass@k_τ, mG.
fn default_metrics(ks: &[u64], taus: &[Tau], greedy: bool) -> Vec<MetricKind> {
    let mut metrics = Vec::new();
    if greedy {
        metrics.push(MetricKind::Greedy);
    }
    for &k in ks {
        metrics.push(MetricKind::PassAtK { k });
        for t in taus {
            metrics.push(MetricKind::GPassAtK { k, tau: t.clone() });
        }
        metrics.push(MetricKind::MGPassAtK { k });
    }
    metrics
}

fn answer_regexes(ev: &RawEvaluation) -> Result<Vec<regex::Regex>, EvalError> {
    let mut out = Vec::new();
    for (i, pat) in ev.answer_extract_regex.iter().flatten().enumerate() {
        let re = super::compile_answer_regex(pat).map_err(|e| {
            (
                "answer_extract_regex",
                format!("pattern {i} does not compile: {}", super::regex_error(&e)),
            )
        })?;
        out.push(re);
    }
    Ok(out)
}

fn few_shot(ev: &RawEvaluation) -> Result<FewShot, String> {
    let Some(f) = &ev.few_shot else {
        return Ok(FewShot::None);
    };
    match (&f.examples, f.count, &f.dataset) {
        (Some(ex), None, None) => Ok(FewShot::Inline(
            ex.iter()
                .map(|e| (e.question.clone(), e.answer.clone()))
                .collect(),
        )),
        (None, Some(c), Some(d)) if c >= 0 => Ok(FewShot::FromDataset {
            count: c as usize,
            source: d.clone(),
            fields: None,
        }),
        _ => Err(
            "give either `examples = [{question, answer}, ...]` or both `count` and `dataset`"
                .into(),
        ),
    }
}

/// `[evaluation]` grading choices: `precision` or `rel_tol`, `list_order`, `percent`,
/// `styled_letters`, `decimal_mark`.
fn grading_policy(ev: &RawEvaluation) -> Result<crate::grade::Policy, EvalError> {
    use crate::grade::{
        DecimalMark, ListOrder, Percent, Policy, StyledLetters, Tolerance, MAX_DECIMALS,
    };
    let tolerance = match (ev.precision, ev.rel_tol) {
        (Some(_), Some(_)) => {
            return Err((
                "rel_tol",
                "give either `precision` or `rel_tol`, not both".into(),
            ))
        }
        (Some(d), None) => match u32::try_from(d) {
            Ok(d) if d <= MAX_DECIMALS => Tolerance::Decimals(d),
            _ => return Err(("precision", format!("{d} must be 0 to {MAX_DECIMALS}"))),
        },
        (None, Some(t)) if t.is_finite() && t >= 0.0 => Tolerance::Relative(t),
        (None, Some(t)) => return Err(("rel_tol", format!("{t} must be a non-negative number"))),
        (None, None) => Tolerance::default(),
    };
    fn pick<T: Default>(
        v: &Option<String>,
        field: &'static str,
        parse: fn(&str) -> Option<T>,
        ok: &str,
    ) -> Result<T, (&'static str, String)> {
        match v {
            None => Ok(T::default()),
            Some(s) => parse(s).ok_or_else(|| (field, format!("{s:?}: use {ok}"))),
        }
    }
    Ok(Policy {
        tolerance,
        list_order: pick(
            &ev.list_order,
            "list_order",
            ListOrder::parse,
            "\"any\" or \"as_written\"",
        )?,
        percent: pick(
            &ev.percent,
            "percent",
            Percent::parse,
            "\"either\" or \"strip\"",
        )?,
        styled_letters: pick(
            &ev.styled_letters,
            "styled_letters",
            StyledLetters::parse,
            "\"distinct\" or \"same\"",
        )?,
        decimal_mark: pick(
            &ev.decimal_mark,
            "decimal_mark",
            DecimalMark::parse,
            "\"auto\", \"point\" or \"comma\"",
        )?,
    })
}

/// Every k must be within the exact engine's limit and at most the smallest model's n; the error
/// names the key (`k` when the list holds it, else `metrics`).
fn check_ks(
    ks: &[u64],
    listed: Option<&[i64]>,
    (min_n, min_n_model): (u64, &str),
) -> Result<(), (&'static str, String)> {
    let key = |k: u64| {
        if listed.is_some_and(|l| l.contains(&(k as i64))) {
            "k"
        } else {
            "metrics"
        }
    };
    if let Some(&k) = ks.iter().find(|&&k| k > MAX_N) {
        return Err((key(k), format!("k = {k} is above {MAX_N}, the largest k the exact metrics are computed for in reasonable time")));
    }
    if let Some(&k) = ks.iter().find(|&&k| k > min_n) {
        return Err((
            key(k),
            format!("k = {k} exceeds n = {min_n} of model {min_n_model}; raise n or lower k"),
        ));
    }
    Ok(())
}

/// A config's metric name, in either spelling `MetricKind` reads (`g_pass@16_t0.5` or
/// `G-Pass@16_0.5`; the verifier metrics `bon@N_AGG`, `wmaj@N_AGG`, `maj@N`), maj@n aside.
pub fn parse_metric(name: &str) -> Result<MetricKind, String> {
    match name.parse::<MetricKind>() {
        // maj@n is computed by `stats`, never asked for in a config.
        Ok(MetricKind::Majority) => Err(crate::metrics::MetricNameError::unknown(name).to_string()),
        parsed => parsed.map_err(|e| e.to_string()),
    }
}
