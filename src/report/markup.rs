//! What the human formats share: the summary grid (a row per model) and the per-subset grid, as
//! text cells; the table, Markdown and HTML exporters only lay them out.

use super::Interval;
use crate::config::Strategy;
use crate::metrics::MetricKind;
use crate::scoring::{Effort, ModelScore, RunResults};
use crate::util::{shorten_names, SHORT_NAME};
use num_rational::Ratio;

/// A titled grid of text cells.
pub(super) struct Grid {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// The headline metrics for one k, in report order, with their column labels.
/// Each model's (full, short) name: its one short name in every table and chart of the
/// documents ([`shorten_names`] at [`SHORT_NAME`]).
pub(super) fn short_names(results: &RunResults) -> Vec<(String, String)> {
    let names: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
    let short = shorten_names(&names, SHORT_NAME);
    names.iter().map(|n| n.to_string()).zip(short).collect()
}

/// A grid with every cell that is a model's full name replaced by its short name.
pub(super) fn with_short_names(mut grid: Grid, names: &[(String, String)]) -> Grid {
    for cell in grid.rows.iter_mut().flatten() {
        if let Some((_, short)) = names.iter().find(|(full, _)| full == cell) {
            *cell = short.clone();
        }
    }
    grid
}

pub(super) fn columns(results: &RunResults, k: u64) -> Vec<(MetricKind, String)> {
    let mut cols = vec![(MetricKind::Greedy, "Greedy".to_string())];
    cols.push((MetricKind::PassAtK { k }, format!("Pass@{k}")));
    for t in &results.taus {
        cols.push((
            MetricKind::GPassAtK { k, tau: t.clone() },
            format!("G-Pass@{k}_{}", t.text()),
        ));
    }
    cols.push((MetricKind::MGPassAtK { k }, format!("mG-Pass@{k}")));
    cols.push((MetricKind::Majority, "maj@n".to_string()));
    cols
}

/// Sample coverage of a model over the whole dataset, as a percentage.
pub(super) fn coverage(m: &ModelScore) -> String {
    m.estimate(&MetricKind::Majority, None)
        .map_or_else(|| "-".into(), |e| format!("{:.1}%", 100.0 * e.coverage))
}

/// The k values human reports show: those of the config's `metrics` list (all when it names
/// none); machine formats keep every k.
pub(super) fn headline_ks(results: &RunResults) -> Vec<u64> {
    let headline: Vec<u64> = results.shown.iter().filter_map(|m| m.k()).collect();
    results
        .ks
        .iter()
        .copied()
        .filter(|k| headline.is_empty() || headline.contains(k))
        .collect()
}

/// For one k: the header (model, then each metric) and a row per model of "value ± CI" cells.
pub(super) fn percent_table(results: &RunResults, k: u64) -> (Vec<String>, Vec<Vec<String>>) {
    let cols = columns(results, k);
    let mut header = vec!["model".to_string()];
    header.extend(cols.iter().map(|c| c.1.clone()));
    let rows = results
        .models
        .iter()
        .map(|m| {
            let mut row = vec![m.name.clone()];
            row.extend(
                cols.iter()
                    .map(|(metric, _)| Interval::of(m.estimate(metric, None)).to_string()),
            );
            row
        })
        .collect();
    (header, rows)
}

/// One grid per k: a row per model with every headline metric, coverage and no-answer counts.
pub(super) fn summaries(results: &RunResults) -> Vec<Grid> {
    let problems = results.models.first().map_or(0, |m| m.problems.len());
    headline_ks(results)
        .into_iter()
        .map(|k| {
            let (mut header, mut rows) = percent_table(results, k);
            header.extend(["n", "coverage", "no answer", "missing"].map(String::from));
            for (row, m) in rows.iter_mut().zip(&results.models) {
                row.extend([
                    m.n.to_string(),
                    coverage(m),
                    m.no_answer.to_string(),
                    m.missing.to_string(),
                ]);
            }
            Grid {
                title: format!(
                    "{} ({problems} problems), k = {k}: % with 95% CI over problems",
                    results.dataset
                ),
                header,
                rows,
            }
        })
        .collect()
}

/// Subsets present in a run, in name order.
pub(super) fn subsets(results: &RunResults) -> Vec<String> {
    let mut names: Vec<String> = results
        .models
        .iter()
        .flat_map(|m| m.estimates.iter().filter_map(|e| e.subset.clone()))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Per subset and model, the headline metrics of the largest k (point estimates only).
pub(super) fn subset_grid(results: &RunResults) -> Option<Grid> {
    let k = *results.ks.iter().max()?;
    let names = subsets(results);
    if names.is_empty() {
        return None;
    }
    let cols = columns(results, k);
    let mut header = vec![
        "subset".to_string(),
        "model".to_string(),
        "problems".to_string(),
    ];
    header.extend(cols.iter().map(|c| c.1.clone()));
    let mut rows = Vec::new();
    for s in &names {
        for m in &results.models {
            let count = m
                .problems
                .iter()
                .filter(|p| p.subset.as_deref() == Some(s))
                .count();
            let mut row = vec![s.clone(), m.name.clone(), count.to_string()];
            row.extend(
                cols.iter()
                    .map(|(metric, _)| Interval::of(m.estimate(metric, Some(s))).to_string()),
            );
            rows.push(row);
        }
    }
    Some(Grid {
        title: format!("Per subset, k = {k}: % with 95% CI over the subset's problems"),
        header,
        rows,
    })
}

/// The "Search and sampling cost" grid, a row per model; None when no model searched (reports of
/// sampling-only runs stay as they were).
pub(super) fn search_grid(results: &RunResults) -> Option<Grid> {
    if !results.any_search() {
        return None;
    }
    let header = [
        "model",
        "strategy",
        "calls/problem",
        "tokens/problem",
        "code runs/problem",
        "dead-step rate",
        "PRM parse failures",
        "cap hits",
        "time/problem",
    ];
    let rows = results
        .models
        .iter()
        .map(|m| search_row(&m.name, &m.effort))
        .collect();
    Some(Grid {
        title: "Search and sampling cost".into(),
        header: header.map(String::from).to_vec(),
        rows,
    })
}

/// Shown for a search-only figure of a sampling model.
const NOT_SEARCH: &str = "–";

fn search_row(name: &str, e: &Effort) -> Vec<String> {
    let fixed =
        |v: Option<f64>, places: usize| v.map_or_else(|| "-".into(), |v| format!("{v:.places$}"));
    let int = |v: u64| Ratio::from_integer(u128::from(v));
    let mut row = vec![
        name.to_string(),
        strategy_name(e.strategy).to_string(),
        fixed(e.per_problem(e.calls), 1),
        fixed(e.tokens.and_then(|t| e.per_problem(t)), 0),
    ];
    if e.strategy == Strategy::Mcts {
        let s = &e.search;
        row.extend([
            fixed(e.per_problem(int(s.code_executions)), 1),
            e.dead_step_rate()
                .map_or_else(|| "-".into(), |r| format!("{:.1}%", 100.0 * r)),
            s.reward_parse_failures.to_string(),
            s.cap_hits.to_string(),
        ]);
    } else {
        row.extend([NOT_SEARCH; 4].map(String::from));
    }
    row.push(
        e.per_problem(int(e.wall_ms))
            .map_or_else(|| "-".into(), |ms| format!("{:.1} s", ms / 1000.0)),
    );
    row
}

/// How a strategy is named in reports and in the config.
pub(super) fn strategy_name(s: Strategy) -> &'static str {
    match s {
        Strategy::Sample => "sample",
        Strategy::Mcts => "mcts",
    }
}

/// What the cost grid's figures mean, and what it leaves out (failed searches, replays, units
/// without usage), one line each.
pub(super) fn search_notes(results: &RunResults) -> Vec<String> {
    let mut notes = vec![
        "Per problem: totals over the scored units (greedy included) divided by the problems that \
         have one. Calls: requests for sampling (choices of one request share it), policy + \
         reward calls for search. Tokens: prompt + completion as the servers reported. Dead \
         steps: proposed steps whose code failed or timed out. Time: the units' own wall time \
         (a whole search's), not the run's elapsed time."
            .to_string(),
    ];
    for m in &results.models {
        let (e, s) = (&m.effort, &m.effort.search);
        let mut parts = Vec::new();
        if s.failed > 0 {
            parts.push(format!(
                "{} of {} searches stopped by a failed call",
                s.failed, e.units
            ));
        }
        if s.replayed_calls > 0 {
            parts.push(format!(
                "{} calls replayed from the request cache",
                s.replayed_calls
            ));
        }
        if e.units_without_usage > 0 {
            parts.push(format!(
                "{} units without token usage (not in tokens)",
                e.units_without_usage
            ));
        }
        if !parts.is_empty() {
            notes.push(format!("{}: {}.", m.name, parts.join("; ")));
        }
    }
    notes
}

/// "What these numbers mean": (term, explanation) pairs every human report carries under its
/// headline tables, so a reader need not know the paper.
pub(super) const MEANING: [(&str, &str); 5] = [
    (
        "G-Pass@k_τ",
        "the chance that at least ⌈τ·k⌉ of k samples, drawn without replacement from a \
         problem's n, are correct, averaged over problems: it rewards answering right again and \
         again, not once.",
    ),
    (
        "Pass@k",
        "G-Pass@k with ⌈τ·k⌉ = 1 (τ = 0, or τ ≤ 1/k as in G-Pass@4_0.25): at least one of k \
         correct. At τ = 1 all k must be correct.",
    ),
    (
        "mG-Pass@k",
        "G-Pass@k averaged over the thresholds above half, m = ⌈k/2⌉+1 … k (τ in (0.5, 1]), as \
         the paper defines it.",
    ),
    (
        "Greedy, maj@n",
        "one temperature-0 answer per problem; the majority answer of the n samples. Both are \
         the fraction of problems answered correctly.",
    ),
    (
        "Intervals",
        "95%, over problems (never over samples): how far the score could move on another set \
         of problems like these.",
    ),
];

/// Notes every human report carries.
pub(super) fn notes(results: &RunResults) -> Vec<String> {
    let mut notes = vec![
        "Intervals: 95%, over problems (clusters of problems that share a group count once): \
         mid-p binomial bounds on the problems' effective number, from the spread of their values \
         and each problem's exact within-problem variance; Clopper–Pearson bounds on the sum when \
         fewer than two problems' worth of the score lies on its short side (all 0 or all 1 \
         included). Never zero width; printed rounded outward so they contain the computed \
         bounds; point estimates are exact means over problems (docs/intervals.md)."
            .to_string(),
        "Problems with fewer usable samples than n are scored with their own n (coverage shows \
         how many planned samples were usable); problems with n < k are left out of that k."
            .to_string(),
        "maj@n: majority vote over a problem's samples by equivalence class of the extracted \
         answers; ties score the fraction of tied classes that are correct."
            .to_string(),
    ];
    if let Some(m) = &results.manifest {
        notes.push(match m.grading() {
            (mode, _) if mode == "rule" => "Grading: gpassk's rule-based grader.".to_string(),
            (mode, judge) => format!(
                "Grading: `{mode}` with the LLM judge {}.",
                judge.as_deref().unwrap_or("(unnamed)")
            ),
        });
    }
    if results.ks.iter().any(|k| k % 2 == 1 && *k > 1) {
        notes.push(
            "mG-Pass@k follows the paper's definition (2/k)·Σ over integer thresholds; for odd k \
             it is not the integral of G-Pass@k over τ ∈ [0.5, 1]."
                .to_string(),
        );
    }
    notes.extend(coarse_note(results));
    notes
}

/// Once for the run: the models whose n is under 2k for the largest k (every model, or each
/// by its short name with its n).
fn coarse_note(results: &RunResults) -> Option<String> {
    let k = *results.ks.iter().max()?;
    let names: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
    let short = shorten_names(&names, SHORT_NAME);
    let coarse: Vec<(String, u32)> = (results.models.iter().zip(short))
        .filter(|(m, _)| 2 * k > u64::from(m.n))
        .map(|(m, s)| (s, m.n))
        .collect();
    let first = coarse.first()?.1;
    let which = if coarse.len() == results.models.len() && coarse.iter().all(|c| c.1 == first) {
        let every = if coarse.len() > 1 {
            "every model"
        } else {
            "the model"
        };
        format!("{every} (n = {first})")
    } else {
        let each: Vec<String> = coarse
            .iter()
            .map(|(s, n)| format!("{s} (n = {n})"))
            .collect();
        each.join(", ")
    };
    Some(format!(
        "k = {k} > n/2 for {which}: G-Pass@k is coarse there; the paper uses n = 48 for k = 16 \
         (n ≥ 3k)."
    ))
}
