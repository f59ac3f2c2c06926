//! The `[search]` table's resolved form: the MCTS parameters of a model with `strategy = "mcts"`.

use super::api::check_base_url;
use super::raw::{RawConfig, RawModel, RawSearch};
use super::{closest, locate, ConfigError};
use serde::{Deserialize, Serialize};
use std::path::Path;
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

/// How a partial solution reaches the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Prefix {
    /// An assistant message the server continues (`continue_final_message`: vLLM, llama.cpp).
    Continue,
    /// Restated in the user turn, for servers that cannot continue a message.
    Restate,
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
    pub prefix: Prefix,
    /// The reward model's price: `reward_pricing`, else the shipped price of `reward_model_id`,
    /// else the policy's when it is the same model; None: unpriced.
    #[serde(skip)]
    pub reward_price: Option<crate::cost::Price>,
    /// `reward_allow_unpriced = true`: an unpriced reward model may run under a budget.
    #[serde(skip)]
    pub reward_allow_unpriced: bool,
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
            prefix: Prefix::Continue,
            reward_price: None,
            reward_allow_unpriced: false,
        }
    }
}

impl SearchSettings {
    /// The reward model's URL: `/pooling` at the gateway's root, or its chat endpoint; on
    /// `reward_base_url` when set, else on the policy's `base_url`.
    pub fn reward_url(&self, policy_base: &str, mode: RewardMode) -> String {
        let base = self.reward_base_url.as_deref().unwrap_or(policy_base);
        let base = base.trim_end_matches('/');
        match mode {
            RewardMode::Pooling => format!("{}/pooling", base.trim_end_matches("/v1")),
            _ if base.ends_with("/v1") => format!("{base}/chat/completions"),
            _ => format!("{base}/v1/chat/completions"),
        }
    }

    /// The fewest and most model calls (policy + reward) one search can make.
    ///
    /// Min: one policy call whose candidates all fail their code (no reward call). Max: every
    /// simulation expands a new node at each depth, each expansion one policy call plus one reward
    /// call per candidate; then the hard cap.
    pub fn call_budget(&self) -> (u64, u64) {
        let natural = u64::from(self.num_simulations)
            * u64::from(self.max_depth)
            * self.calls_per_expansion();
        let max = self
            .max_calls_per_search
            .map_or(natural, |c| natural.min(u64::from(c)));
        (1, max)
    }

    /// One policy call, plus one reward call per candidate unless `reward_mode = "none"`.
    fn calls_per_expansion(&self) -> u64 {
        1 + match self.reward_mode {
            RewardMode::None => 0,
            _ => u64::from(self.num_candidates),
        }
    }

    /// The most completion tokens one search can take: the call budget in whole expansions, each
    /// `num_candidates × policy_max_tokens` from the policy plus a chat judge's short replies.
    pub fn completion_budget(&self) -> u64 {
        let judge = match self.reward_mode {
            RewardMode::ChatJudge => u64::from(JUDGE_MAX_TOKENS),
            _ => 0,
        };
        let per_expansion =
            u64::from(self.num_candidates) * (u64::from(self.policy_max_tokens) + judge);
        self.call_budget().1.div_ceil(self.calls_per_expansion()) * per_expansion
    }
}

/// The most tokens a chat judge may reply with: a score.
pub const JUDGE_MAX_TOKENS: u32 = 16;

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
    "prefix",
    "reward_pricing",
    "reward_allow_unpriced",
];

/// Where a search key's errors point: the model's `[models.search]` line when it sets the key,
/// else `[search]` (naming the model).
struct SearchLocator<'a> {
    text: &'a str,
    path: &'a Path,
    i: usize,
    name: &'a str,
    own: &'a RawSearch,
}

impl SearchLocator<'_> {
    fn err(&self, key: &str, own: bool, msg: String) -> ConfigError {
        let (line, message) = if own {
            let line = locate_model_table(self.text, self.i, "search", key);
            (line, format!("`models[{}].search.{key}`: {msg}", self.i))
        } else {
            let line = locate(self.text, "search", None, key);
            (
                line,
                format!("`search.{key}`: {msg} (for model {})", self.name),
            )
        };
        ConfigError::Invalid {
            path: self.path.to_path_buf(),
            line,
            message,
        }
    }

    /// The model's value when it sets one, else the global one; with whose it is.
    fn pick<T: Clone>(
        &self,
        get: impl Fn(&RawSearch) -> Option<T>,
        global: &RawSearch,
    ) -> (Option<T>, bool) {
        match get(self.own) {
            Some(v) => (Some(v), true),
            None => (get(global), false),
        }
    }

    fn int(
        &self,
        key: &str,
        v: (Option<i64>, bool),
        default: u32,
        max: u32,
    ) -> Result<u32, ConfigError> {
        let (v, own) = v;
        let x = v.unwrap_or(i64::from(default));
        if x < 1 || x > i64::from(max) {
            return Err(self.err(key, own, format!("{x} must be between 1 and {max}")));
        }
        Ok(x as u32)
    }

    fn choice<T>(
        &self,
        key: &str,
        v: (Option<String>, bool),
        default: T,
        options: &[(&str, T)],
    ) -> Result<T, ConfigError>
    where
        T: Copy,
    {
        let (v, own) = v;
        let Some(s) = v else { return Ok(default) };
        if let Some((_, t)) = options.iter().find(|(n, _)| *n == s) {
            return Ok(*t);
        }
        let names: Vec<&str> = options.iter().map(|(n, _)| *n).collect();
        let hint = closest(&s, names.iter().copied())
            .map(|c| format!(" (did you mean {c:?}?)"))
            .unwrap_or_default();
        Err(self.err(
            key,
            own,
            format!("{s:?} is not one of {}{hint}", names.join(", ")),
        ))
    }
}

/// The 1-based line of `key` in the `index`-th `[[models]]` entry's `[models.<table>]`.
fn locate_model_table(text: &str, index: usize, table: &str, key: &str) -> Option<usize> {
    let sub = format!("[models.{table}]");
    let (mut seen, mut inside, mut header_line) = (0usize, false, None);
    for (n, l) in text.lines().enumerate() {
        let t = l.split('#').next().unwrap_or("").trim();
        if t.starts_with('[') {
            if t == "[[models]]" {
                seen += 1;
            }
            inside = seen == index + 1 && t == sub;
            if inside {
                header_line = Some(n + 1);
            }
            continue;
        }
        if inside
            && l.split_once('=')
                .is_some_and(|(k, _)| k.trim().trim_matches('"') == key)
        {
            return Some(n + 1);
        }
    }
    header_line
}

/// A model's strategy and, for `mcts`, its search settings (`[search]` under its own
/// `[models.search]` keys).
pub(super) fn resolve(
    (text, path): (&str, &Path),
    raw: &RawConfig,
    m: &RawModel,
    i: usize,
    name: &str,
) -> Result<(Strategy, Option<SearchSettings>), ConfigError> {
    let empty = RawSearch::default();
    let sx = SearchLocator {
        text,
        path,
        i,
        name,
        own: m.search.as_ref().unwrap_or(&empty),
    };
    let model_err = |key: &str, msg: String| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: super::locate(text, "models", Some(i), key),
        message: format!("`models[{i}].{key}`: {msg}"),
    };
    let strategy = match m.strategy.as_deref() {
        None | Some("sample") => Strategy::Sample,
        Some("mcts") => Strategy::Mcts,
        Some(other) => {
            let hint = closest(other, ["sample", "mcts"].into_iter())
                .map(|c| format!(" (did you mean {c:?}?)"))
                .unwrap_or_default();
            return Err(model_err(
                "strategy",
                format!("{other:?} is not one of sample, mcts{hint}"),
            ));
        }
    };
    if strategy == Strategy::Sample {
        if m.search.is_some() {
            return Err(model_err(
                "search",
                "a [models.search] table needs `strategy = \"mcts\"` in this model".into(),
            ));
        }
        return Ok((strategy, None));
    }
    let g = raw.search.as_ref().unwrap_or(&empty);
    Ok((strategy, Some(resolve_search(&sx, g)?)))
}

fn resolve_search(sx: &SearchLocator, g: &RawSearch) -> Result<SearchSettings, ConfigError> {
    let d = SearchSettings::default();
    let num_simulations = sx.int(
        "num_simulations",
        sx.pick(|r| r.num_simulations, g),
        d.num_simulations,
        100_000,
    )?;
    let max_depth = sx.int("max_depth", sx.pick(|r| r.max_depth, g), d.max_depth, 1000)?;
    let num_candidates = sx.int(
        "num_candidates",
        sx.pick(|r| r.num_candidates, g),
        d.num_candidates,
        128,
    )?;
    let policy_max_tokens = sx.int(
        "policy_max_tokens",
        sx.pick(|r| r.policy_max_tokens, g),
        d.policy_max_tokens,
        1 << 20,
    )?;
    let (c, own) = sx.pick(|r| r.c_uct, g);
    let c_uct = c.unwrap_or(d.c_uct);
    if !(c_uct.is_finite() && (0.0..=100.0).contains(&c_uct)) {
        return Err(sx.err("c_uct", own, format!("{c_uct} must be between 0 and 100")));
    }
    let (t, own) = sx.pick(|r| r.policy_temperature, g);
    let policy_temperature = t.unwrap_or(d.policy_temperature);
    if !(policy_temperature.is_finite() && (0.0..=2.0).contains(&policy_temperature)) {
        return Err(sx.err(
            "policy_temperature",
            own,
            format!("{policy_temperature} must be between 0 and 2"),
        ));
    }
    let (t, own) = sx.pick(|r| r.exec_timeout, g);
    let secs = t.unwrap_or(5.0);
    if !(secs.is_finite() && secs > 0.0 && secs <= 3600.0) {
        return Err(sx.err(
            "exec_timeout",
            own,
            format!("{secs} must be a positive number of seconds, at most 3600"),
        ));
    }
    let cap = sx.pick(|r| r.max_calls_per_search, g);
    let max_calls_per_search = match cap.0 {
        None => None,
        Some(_) => Some(sx.int("max_calls_per_search", cap, 1, u32::MAX)?),
    };
    let mut s = SearchSettings {
        num_simulations,
        max_depth,
        num_candidates,
        c_uct,
        policy_temperature,
        policy_max_tokens,
        exec_timeout: Duration::from_secs_f64(secs),
        max_calls_per_search,
        ..d
    };
    s.prefix = sx.choice(
        "prefix",
        sx.pick(|r| r.prefix.clone(), g),
        Prefix::Continue,
        &[("continue", Prefix::Continue), ("restate", Prefix::Restate)],
    )?;
    resolve_reward(sx, g, &mut s)?;
    Ok(s)
}

/// The reward model keys and the choices that depend on it.
fn resolve_reward(
    sx: &SearchLocator,
    g: &RawSearch,
    s: &mut SearchSettings,
) -> Result<(), ConfigError> {
    use RewardMode as M;
    s.reward_mode = sx.choice(
        "reward_mode",
        sx.pick(|r| r.reward_mode.clone(), g),
        M::ChatJudge,
        &[
            ("chat_judge", M::ChatJudge),
            ("pooling", M::Pooling),
            ("none", M::None),
        ],
    )?;
    use TerminalReward as T;
    let tr = sx.pick(|r| r.terminal_reward.clone(), g);
    let tr_own = tr.1;
    s.terminal_reward = sx.choice(
        "terminal_reward",
        tr,
        T::Prm,
        &[
            ("prm", T::Prm),
            ("agreement", T::Agreement),
            ("mix", T::Mix),
        ],
    )?;
    use AnswerSelect as A;
    s.answer_select = sx.choice(
        "answer_select",
        sx.pick(|r| r.answer_select.clone(), g),
        A::BestValue,
        &[
            ("best_value", A::BestValue),
            ("majority", A::Majority),
            ("most_visited", A::MostVisited),
        ],
    )?;
    let (id, own) = sx.pick(|r| r.reward_model_id.clone(), g);
    s.reward_model_id = id.filter(|v| !v.trim().is_empty());
    if s.reward_mode == M::None {
        if s.terminal_reward != T::Agreement {
            return Err(sx.err("terminal_reward", tr_own, "needs a reward model; with `reward_mode = \"none\"` use `terminal_reward = \"agreement\"`".into()));
        }
    } else if s.reward_model_id.is_none() {
        return Err(sx.err(
            "reward_model_id",
            own,
            "is needed unless `reward_mode = \"none\"`: name the process reward model".into(),
        ));
    }
    let (url, own) = sx.pick(|r| r.reward_base_url.clone(), g);
    if let Some(u) = &url {
        check_base_url(u).map_err(|m| sx.err("reward_base_url", own, m))?;
    }
    s.reward_base_url = url;
    let (env, own) = sx.pick(|r| r.reward_api_key_env.clone(), g);
    if env.as_deref().is_some_and(|e| e.trim().is_empty()) {
        return Err(sx.err(
            "reward_api_key_env",
            own,
            "must name an environment variable".into(),
        ));
    }
    s.reward_api_key_env = env;
    resolve_reward_price(sx, g, s)
}

/// `reward_pricing` (the model's keys over `[search]`'s), else the shipped price file; a
/// `max_cost` there is refused: reward calls count under the model's own budget.
fn resolve_reward_price(
    sx: &SearchLocator,
    g: &RawSearch,
    s: &mut SearchSettings,
) -> Result<(), ConfigError> {
    let own = sx.own.reward_pricing.as_ref();
    let fields = match (own, g.reward_pricing.as_ref()) {
        (Some(o), Some(g)) => o.over(g),
        (o, g) => o.or(g).cloned().unwrap_or_default(),
    };
    let err = |key: &str, msg: String| sx.err(&format!("reward_pricing.{key}"), own.is_some(), msg);
    if fields.max_cost.is_some() {
        return Err(err(
            "max_cost",
            "reward calls count under the model's own max_cost: set it in [models.pricing]".into(),
        ));
    }
    let id = s.reward_model_id.as_deref().unwrap_or_default();
    s.reward_price = fields.price_of(id).map_err(|(k, m)| err(k, m))?;
    let (allow, _) = sx.pick(|r| r.reward_allow_unpriced, g);
    s.reward_allow_unpriced = allow.unwrap_or(false);
    Ok(())
}
