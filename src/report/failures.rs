//! Why models failed, for every output: each failed or partly failed model's reasons from its
//! manifest entry, a reason several models share shown once, each with the advice its cause calls
//! for; as text for the terminal (escaped), Markdown, HTML, and raw for metrics.json.

use super::text::md_text;
use crate::client::ErrorClass;
use crate::rundir::manifest::{Manifest, ModelManifest, Status};
use crate::sampling::{cause_class, CAUSE_MAX};
use crate::util::{clip_words, printable};
use serde::Serialize;

/// What to do about a failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Advice {
    /// 401/403: the key in `env` (None: the config names no variable).
    Key { env: Option<String> },
    /// 404: a model the server does not know.
    ModelId { model_id: String },
    /// Another 4xx: the request as configured.
    Request,
    /// Nothing answered at the URL.
    Unreachable,
    /// `max_cost` stopped it.
    Budget,
    /// A server error, timeout, rate limit or odd reply: the units again later.
    Resume,
}

impl Advice {
    pub fn text(&self) -> String {
        match self {
            Advice::Key { env: Some(env) } => format!(
                "the server refused the key: check the key in ${env} (api_key_env in the config)"
            ),
            Advice::Key { env: None } => "the server wants a key: set api_key_env in the config \
                to the variable that holds it"
                .into(),
            Advice::ModelId { model_id } => format!(
                "the server does not know model_id `{model_id}`: check model_id (and base_url) in \
                 the config"
            ),
            Advice::Request => "the server refused the request as configured: check the sampling \
                settings against what it accepts"
                .into(),
            Advice::Unreachable => {
                "nothing answers at that address: start the server or fix base_url, then resume with --resume".into()
            }
            Advice::Budget => "raise max_cost, then resume with --resume".into(),
            Advice::Resume => {
                "request these units again with --resume later, once the server answers".into()
            }
        }
    }

    /// Whether resuming the run (after waiting, or starting the server) is the way on.
    pub fn resumes(&self) -> bool {
        matches!(self, Advice::Unreachable | Advice::Budget | Advice::Resume)
    }

    fn of(cause: &str, stopped: bool, m: &ModelManifest) -> Advice {
        if cause.starts_with("budget reached") {
            return Advice::Budget;
        }
        match cause_class(cause).0 {
            Some(ErrorClass::Auth) => Advice::Key {
                env: m.api_key_env.clone(),
            },
            Some(ErrorClass::NotFound) => Advice::ModelId {
                model_id: m.model_id.clone(),
            },
            Some(ErrorClass::BadRequest) => Advice::Request,
            // Connection errors are retried: one stops a model only when nothing ever answered.
            Some(ErrorClass::Connection) if stopped => Advice::Unreachable,
            _ => Advice::Resume,
        }
    }
}

/// One model's share of a reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    pub model: String,
    /// Units whose latest record failed for this reason.
    pub failed: u64,
    /// Units never answered because the model stopped for it (or was not finished).
    pub unanswered: u64,
}

/// A reason and the models that failed for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// As the server or runner said it (not escaped), at most [`CAUSE_MAX`] characters, cut at a
    /// word boundary.
    pub reason: String,
    pub models: Vec<Hit>,
    pub advice: Advice,
}

impl Failure {
    /// `model a` or `models a, b, c`.
    pub fn who(&self) -> String {
        let names: Vec<&str> = self.models.iter().map(|h| h.model.as_str()).collect();
        let s = if names.len() == 1 { "" } else { "s" };
        format!("model{s} {}", names.join(", "))
    }

    /// `9 units failed`, `1 unit failed, 29 have no answer yet`, `each …`, or per model when they
    /// differ.
    pub fn counts(&self) -> String {
        let one = |h: &Hit| match (h.failed, h.unanswered) {
            (f, 0) => format!("{} failed", units(f)),
            (0, u) => format!("{} {} no answer yet", units(u), have(u)),
            (f, u) => format!("{} failed, {u} {} no answer yet", units(f), have(u)),
        };
        let first = one(&self.models[0]);
        if self.models.iter().all(|h| one(h) == first) {
            let each = if self.models.len() > 1 { "each " } else { "" };
            return format!("{each}{first}");
        }
        let parts: Vec<String> = self
            .models
            .iter()
            .map(|h| format!("{} {}", h.model, one(h)))
            .collect();
        parts.join("; ")
    }
}

fn have(n: u64) -> &'static str {
    if n == 1 {
        "has"
    } else {
        "have"
    }
}

fn units(n: u64) -> String {
    format!("{n} unit{}", if n == 1 { "" } else { "s" })
}

/// Every failed or partly failed model's reasons, a reason shared by several models once: the
/// reasons models stopped on first, then by units, most first.
pub fn failures(manifest: &Manifest) -> Vec<Failure> {
    let mut all: Vec<Failure> = Vec::new();
    for (name, m) in &manifest.models {
        for (reason, advice, hit) in model_reasons(name, m) {
            match all
                .iter_mut()
                .find(|f| f.reason == reason && f.advice == advice)
            {
                Some(f) => f.models.push(hit),
                None => all.push(Failure {
                    reason,
                    models: vec![hit],
                    advice,
                }),
            }
        }
    }
    let weight = |f: &Failure| {
        let stopped = f.models.iter().any(|h| h.unanswered > 0);
        let units: u64 = f.models.iter().map(|h| h.failed + h.unanswered).sum();
        (std::cmp::Reverse(stopped), std::cmp::Reverse(units))
    };
    all.sort_by_key(weight);
    all
}

/// One model's reasons: what it stopped on (absorbing the failed units of the same class), then
/// the other causes of its failed units.
fn model_reasons(name: &str, m: &ModelManifest) -> Vec<(String, Advice, Hit)> {
    if m.status.is_complete() {
        return Vec::new();
    }
    let unanswered = m
        .units_planned
        .saturating_sub(m.ok + m.truncated + m.api_error);
    let stop = m.error.as_deref().map(|e| stop_reason(name, m, e));
    let stop_class = stop.as_deref().and_then(|s| cause_class(s).0);
    let hit = |failed, unanswered| Hit {
        model: name.to_string(),
        failed,
        unanswered,
    };
    let mut out = Vec::new();
    let mut absorbed = 0;
    for (cause, &n) in &m.failure_causes {
        let same = stop.as_deref() == Some(cause.as_str())
            || (stop_class.is_some() && cause_class(cause).0 == stop_class);
        if same {
            absorbed += n;
        } else {
            out.push((cause.clone(), Advice::of(cause, false, m), hit(n, 0)));
        }
    }
    match stop {
        Some(s) => {
            let advice = Advice::of(&s, true, m);
            out.insert(0, (s, advice, hit(absorbed, unanswered)));
        }
        // Stopped by the user (Ctrl-C, a signal): units left, nothing failed.
        None if m.status == Status::Interrupted => {}
        None if unanswered > 0 => {
            let reason = format!("{}, no error recorded", m.status);
            out.push((reason, Advice::Resume, hit(0, unanswered)));
        }
        None => {}
    }
    out
}

/// The reason a model stopped without the `model NAME (ID) stopped: ` its message starts with, so
/// models that stopped alike share it; bounded like a cause.
fn stop_reason(name: &str, m: &ModelManifest, error: &str) -> String {
    let heads = [
        format!("model {name} ({}) stopped: ", m.model_id),
        format!("model {name}: "),
    ];
    let rest = heads
        .iter()
        .find_map(|h| error.strip_prefix(h.as_str()))
        .unwrap_or(error);
    let clean: Vec<&str> = rest
        .split(|c: char| c.is_control() || c.is_whitespace())
        .filter(|w| !w.is_empty())
        .collect();
    clip_words(&clean.join(" "), CAUSE_MAX).into_owned()
}

/// The failures as terminal text, escaped and wrapped to `width`: `{lead}{who}: {reason}`, then
/// the counts and the advice indented below; empty when nothing failed.
pub fn failures_text(failures: &[Failure], lead: &str, width: usize) -> String {
    let mut out = String::new();
    for f in failures {
        let head = format!("{lead}{}: {}", f.who(), printable(&f.reason));
        out.push_str(&super::wrap(&head, width, "    "));
        out.push('\n');
        let tail = format!("  {}; {}", f.counts(), f.advice.text());
        out.push_str(&super::wrap(&tail, width, "    "));
        out.push('\n');
    }
    out
}

/// The failures as a Markdown section; empty when nothing failed.
pub(super) fn failures_md(failures: &[Failure]) -> String {
    if failures.is_empty() {
        return String::new();
    }
    let mut md = String::from("## Failures\n\n");
    for f in failures {
        md.push_str(&format!(
            "- **{}**: {}  \n  {}; {}\n",
            md_text(&f.who()),
            md_text(&f.reason),
            f.counts(),
            md_text(&f.advice.text())
        ));
    }
    md.push('\n');
    md
}

/// The failures of a run as the terminal and summary.txt show them, under a `failures:` line;
/// empty when nothing failed (or the run has no manifest).
pub fn failures_block(results: &crate::scoring::RunResults, width: usize) -> String {
    let all = results.manifest.as_ref().map(failures).unwrap_or_default();
    if all.is_empty() {
        return String::new();
    }
    format!("failures:\n{}", failures_text(&all, "  ", width))
}
