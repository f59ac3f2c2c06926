//! The `[verifier]` table's resolved form: the process reward model that scores stored samples
//! (`gpassk verify`), how solutions split into steps, and how step scores become one score.

use super::api::check_base_url;
use super::raw::RawConfig;
use super::search::RewardMode;
use super::{closest, locate, ConfigError};
pub use crate::metrics::Aggregation;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The resolved `[verifier]` table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifierSettings {
    pub reward_model_id: String,
    /// The PRM's own gateway; None means `[api] base_url`.
    pub reward_base_url: Option<String>,
    /// None means `[api] api_key_env`.
    pub reward_api_key_env: Option<String>,
    /// `chat_judge` or `pooling`, as in `[search]`.
    pub reward_mode: RewardMode,
    /// A regex whose matches start steps, as `gpassk label --step-regex`; None: `Step N:`,
    /// paragraphs, lines.
    pub step_regex: Option<String>,
    /// At most this many steps per solution; the rest joins the last (`label --max-steps`).
    pub max_steps: usize,
    /// In the order given, without repeats.
    pub aggregations: Vec<Aggregation>,
    /// `[verifier.pricing]`, else the shipped price of `reward_model_id`; None: unpriced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pricing: Option<crate::cost::Price>,
    /// `allow_unpriced = true`: an unpriced PRM may run under a budget, its calls not counted.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unpriced: bool,
}

impl VerifierSettings {
    /// The variable holding the PRM's key: `reward_api_key_env`, else `[api] api_key_env`.
    pub fn key_env<'a>(&'a self, api: &'a super::ApiSettings) -> Option<&'a str> {
        self.reward_api_key_env
            .as_deref()
            .or(api.api_key_env.as_deref())
    }
}

/// The default of `max_steps`, `gpassk label`'s.
pub const DEFAULT_MAX_STEPS: usize = 20;

pub(super) fn resolve(
    (text, path): (&str, &Path),
    raw: &RawConfig,
) -> Result<Option<VerifierSettings>, ConfigError> {
    let Some(v) = &raw.verifier else {
        return Ok(None);
    };
    let err = |key: &str, msg: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: locate(text, "verifier", None, key),
        message: format!("`verifier.{key}`: {msg}"),
    };
    let price_err = |key: &str, msg: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: locate(text, "verifier.pricing", None, key),
        message: format!("`verifier.pricing.{key}`: {msg}"),
    };
    let reward_model_id = v
        .reward_model_id
        .clone()
        .filter(|m| !m.trim().is_empty())
        .ok_or_else(|| {
            err(
                "reward_model_id",
                "missing: name the process reward model".into(),
            )
        })?;
    let reward_mode = match v.reward_mode.as_deref() {
        None | Some("chat_judge") => RewardMode::ChatJudge,
        Some("pooling") => RewardMode::Pooling,
        Some(other) => {
            let hint = closest(other, ["chat_judge", "pooling"].into_iter())
                .map(|c| format!(" (did you mean {c:?}?)"))
                .unwrap_or_default();
            return Err(err(
                "reward_mode",
                format!("{other:?} is not one of chat_judge, pooling{hint}"),
            ));
        }
    };
    if let Some(u) = &v.reward_base_url {
        check_base_url(u).map_err(|m| err("reward_base_url", m))?;
    }
    if v.reward_api_key_env
        .as_deref()
        .is_some_and(|e| e.trim().is_empty())
    {
        return Err(err(
            "reward_api_key_env",
            "must name an environment variable".into(),
        ));
    }
    if let Some(re) = &v.step_regex {
        regex::Regex::new(re).map_err(|e| {
            let first = e.to_string();
            let first = first.lines().last().unwrap_or("").trim().to_string();
            err("step_regex", format!("not a valid regex: {first}"))
        })?;
    }
    let max_steps = match v.max_steps {
        None => DEFAULT_MAX_STEPS,
        Some(x) if (1..=1000).contains(&x) => x as usize,
        Some(x) => return Err(err("max_steps", format!("{x} must be between 1 and 1000"))),
    };
    let pricing = (v.pricing.clone().unwrap_or_default())
        .price_of(&reward_model_id)
        .map_err(|(key, m)| price_err(key, m))?;
    Ok(Some(VerifierSettings {
        reward_model_id,
        reward_base_url: v.reward_base_url.clone(),
        reward_api_key_env: v.reward_api_key_env.clone(),
        reward_mode,
        step_regex: v.step_regex.clone(),
        max_steps,
        aggregations: aggregations(v.aggregation.as_deref()).map_err(|m| err("aggregation", m))?,
        pricing,
        allow_unpriced: v.allow_unpriced.unwrap_or(false),
    }))
}

fn aggregations(names: Option<&[String]>) -> Result<Vec<Aggregation>, String> {
    let Some(names) = names else {
        return Ok(vec![Aggregation::Min]);
    };
    if names.is_empty() {
        return Err("is empty: list at least one of min, mean, last, product".into());
    }
    let mut out = Vec::with_capacity(names.len());
    for n in names {
        let Some((_, a)) = Aggregation::ALL.iter().find(|(name, _)| name == n) else {
            let hint = closest(n, Aggregation::ALL.iter().map(|(n, _)| *n))
                .map(|c| format!(" (did you mean {c:?}?)"))
                .unwrap_or_default();
            return Err(format!(
                "{n:?} is not one of min, mean, last, product{hint}"
            ));
        };
        if out.contains(a) {
            return Err(format!("{n:?} is listed twice"));
        }
        out.push(*a);
    }
    Ok(out)
}
