//! `metrics.json`: the tidy rows plus exact fractions, per-model counts, the interval method
//! and the run's manifest (timestamps, model IDs, served model names).

use super::{rows, Exporter, MetricRow};
use crate::config::Strategy;
use crate::metrics::{exact_text, to_f64};
use crate::rundir::manifest::Manifest;
use crate::scoring::verifier_metrics::VerifierSummary;
use crate::scoring::{ratio_f64, Effort, RunResults};
use num_rational::Ratio;
use serde::Serialize;
use std::collections::BTreeMap;

pub struct MetricsJson;

#[derive(Serialize)]
struct JsonRow {
    #[serde(flatten)]
    row: MetricRow,
    /// The exact mean as a reduced fraction.
    exact: Option<String>,
    excluded: usize,
    short: usize,
}

#[derive(Serialize)]
struct JsonModel<'a> {
    model: &'a str,
    model_id: &'a str,
    served_models: &'a BTreeMap<String, u64>,
    n: u32,
    problems: usize,
    correct: u64,
    wrong: u64,
    no_answer: u64,
    truncated: u64,
    missing: u64,
    /// Only in runs with a search model, so sampling-only reports keep their bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<JsonEffort>,
    /// An imported run's second verdict: the source's, beside gpassk's.
    #[serde(skip_serializing_if = "Option::is_none")]
    source: Option<JsonSource>,
    /// Only in runs with a verifier: what its scores came to (its metrics are rows of `metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    verifier: Option<JsonVerifier>,
}

#[derive(Serialize)]
struct JsonVerifier {
    reward_model: String,
    aggregations: Vec<&'static str>,
    /// The N of the curve: the k grid's values up to n, and n.
    sizes: Vec<u64>,
    samples: u64,
    scored: u64,
    /// Replies without a readable score (stored as null, never read as 0).
    unreadable: u64,
    no_steps: u64,
    not_scored: u64,
    /// Left out of bon@N and wmaj@N at every N: no usable sample has a score.
    problems_excluded: usize,
    /// Problems some of whose usable samples have no score: bon@N and wmaj@N rest on the rest.
    problems_partial: usize,
    /// Per N of `sizes`, the problems with at least N scored samples (what bon@N rests on).
    problems_at: Vec<usize>,
    /// The vote metrics enumerate every N-subset up to `exact_subsets` of them, else average
    /// `draws` seeded random subsets (their rows then carry `mc_std_error`).
    exact_subsets: u64,
    draws: u64,
    seed: u64,
    /// bon@N − maj@N (maj@n at N = n), paired over problems; p uncorrected (exploratory).
    versus_voting: Vec<JsonVersus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    label_agreement: Option<JsonLabels>,
}

#[derive(Serialize)]
struct JsonVersus {
    size: u64,
    aggregation: &'static str,
    maj: f64,
    bon: f64,
    bon_minus_maj: f64,
    p: Option<f64>,
    problems: usize,
}

#[derive(Serialize)]
struct JsonLabels {
    /// Labelled samples set against their step scores, and those left out (no score, or another
    /// number of steps).
    solutions: u64,
    unpaired: u64,
    steps: u64,
    /// A step is predicted good when its score is at least this.
    threshold: f64,
    hard: JsonAgreement,
    soft: JsonAgreement,
}

#[derive(Serialize)]
struct JsonAgreement {
    accuracy: f64,
    accuracy_exact: String,
    auc: Option<f64>,
    auc_exact: Option<String>,
}

impl JsonAgreement {
    fn new(a: &crate::metrics::agreement::Agreement) -> JsonAgreement {
        JsonAgreement {
            accuracy: to_f64(&a.accuracy),
            accuracy_exact: exact_text(&a.accuracy),
            auc: a.auc.as_ref().map(to_f64),
            auc_exact: a.auc.as_ref().map(exact_text),
        }
    }
}

impl JsonVerifier {
    fn new(v: &VerifierSummary) -> JsonVerifier {
        JsonVerifier {
            reward_model: v.reward_model.clone(),
            aggregations: v.aggregations.iter().map(|a| a.name()).collect(),
            sizes: v.sizes.clone(),
            samples: v.samples,
            scored: v.scored,
            unreadable: v.unreadable,
            no_steps: v.no_steps,
            not_scored: v.not_scored,
            problems_excluded: v.excluded_problems,
            problems_partial: v.partial_problems,
            problems_at: v.problems_at.clone(),
            exact_subsets: v.budget.exact_subsets,
            draws: v.budget.draws,
            seed: v.budget.seed,
            versus_voting: (v.versus.iter())
                .map(|x| JsonVersus {
                    size: x.size,
                    aggregation: x.aggregation.name(),
                    maj: x.test.a,
                    bon: x.test.b,
                    bon_minus_maj: x.test.delta,
                    p: x.test.p,
                    problems: x.test.problems,
                })
                .collect(),
            label_agreement: v.labels.as_ref().map(|l| JsonLabels {
                solutions: l.solutions,
                unpaired: l.unpaired,
                steps: l.agreement.steps,
                threshold: crate::metrics::agreement::THRESHOLD,
                hard: JsonAgreement::new(&l.agreement.hard),
                soft: JsonAgreement::new(&l.agreement.soft),
            }),
        }
    }
}

#[derive(Serialize)]
struct JsonSource {
    judged_by_both: u64,
    both_correct: u64,
    only_gpassk: u64,
    only_source: u64,
    both_wrong: u64,
    /// Every metric from the source's verdicts (the samples it judged), as the tidy rows.
    metrics: Vec<JsonRow>,
}

impl JsonSource {
    fn new(results: &RunResults, m: &crate::scoring::ModelScore) -> Option<JsonSource> {
        let s = m.source.as_ref()?;
        let a = s.agreement;
        Some(JsonSource {
            judged_by_both: a.total(),
            both_correct: a.both_correct,
            only_gpassk: a.only_gpassk,
            only_source: a.only_source,
            both_wrong: a.both_wrong,
            metrics: s
                .estimates
                .iter()
                .map(|e| JsonRow {
                    row: MetricRow::new(results, m, e),
                    exact: e.exact.as_ref().map(exact_text),
                    excluded: e.excluded,
                    short: e.short,
                })
                .collect(),
        })
    }
}

/// A model's cost, raw: totals (exact text beside fractional ones) and per-problem floats.
/// Search-only counters are null for a sampling model.
#[derive(Serialize)]
struct JsonEffort {
    strategy: Strategy,
    units: u64,
    problems: u64,
    calls: f64,
    calls_exact: String,
    calls_per_problem: Option<f64>,
    tokens: Option<f64>,
    tokens_exact: Option<String>,
    tokens_per_problem: Option<f64>,
    units_without_usage: u64,
    wall_ms: u64,
    wall_ms_per_problem: Option<f64>,
    search: Option<JsonSearch>,
}

#[derive(Serialize)]
struct JsonSearch {
    simulations: u64,
    policy_calls: u64,
    reward_calls: u64,
    code_executions: u64,
    code_executions_per_problem: Option<f64>,
    steps: u64,
    dead_steps: u64,
    dead_step_rate: Option<f64>,
    reward_parse_failures: u64,
    unvalued_terminals: u64,
    cap_hits: u64,
    failed_searches: u64,
    replayed_calls: u64,
}

/// `7` or `7/3`.
fn exact(r: Ratio<u128>) -> String {
    if *r.denom() == 1 {
        r.numer().to_string()
    } else {
        format!("{}/{}", r.numer(), r.denom())
    }
}

impl JsonEffort {
    fn new(e: &Effort) -> JsonEffort {
        let int = |v: u64| Ratio::from_integer(u128::from(v));
        let s = &e.search;
        JsonEffort {
            strategy: e.strategy,
            units: e.units,
            problems: e.problems,
            calls: ratio_f64(e.calls),
            calls_exact: exact(e.calls),
            calls_per_problem: e.per_problem(e.calls),
            tokens: e.tokens.map(ratio_f64),
            tokens_exact: e.tokens.map(exact),
            tokens_per_problem: e.tokens.and_then(|t| e.per_problem(t)),
            units_without_usage: e.units_without_usage,
            wall_ms: e.wall_ms,
            wall_ms_per_problem: e.per_problem(int(e.wall_ms)),
            search: (e.strategy == Strategy::Mcts).then(|| JsonSearch {
                simulations: s.simulations,
                policy_calls: s.policy_calls,
                reward_calls: s.reward_calls,
                code_executions: s.code_executions,
                code_executions_per_problem: e.per_problem(int(s.code_executions)),
                steps: s.steps,
                dead_steps: s.dead_steps,
                dead_step_rate: e.dead_step_rate(),
                reward_parse_failures: s.reward_parse_failures,
                unvalued_terminals: s.unvalued_terminals,
                cap_hits: s.cap_hits,
                failed_searches: s.failed,
                replayed_calls: s.replayed_calls,
            }),
        }
    }
}

#[derive(Serialize)]
struct Intervals {
    method: &'static str,
    level: f64,
    over: &'static str,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    run_id: &'a str,
    dataset: &'a str,
    dataset_sha256: &'a str,
    intervals: Intervals,
    models: Vec<JsonModel<'a>>,
    metrics: Vec<JsonRow>,
    /// Why models failed, each reason once with its models (raw text, not escaped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    failures: Vec<JsonFailure>,
    /// What the judge's and the verifier's calls cost, beside the models' in the manifest.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    call_costs: &'a [crate::scoring::paid::CallCost],
    /// How each model's answers were found, its guessed share and the warning past
    /// `heuristic_warn` (absent when no model says).
    #[serde(skip_serializing_if = "Option::is_none")]
    answers_found: Option<super::FoundSummary>,
    manifest: Option<&'a Manifest>,
}

#[derive(Serialize)]
struct JsonFailure {
    #[serde(flatten)]
    failure: super::Failure,
    advice_text: String,
}

impl Exporter for MetricsJson {
    fn file_name(&self) -> &'static str {
        "metrics.json"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let searched = results.any_search();
        let report = JsonReport {
            run_id: &results.run_id,
            dataset: &results.dataset,
            dataset_sha256: &results.dataset_sha256,
            intervals: Intervals {
                method: crate::stats::INTERVAL_METHOD,
                level: crate::stats::LEVEL,
                over: "problems",
            },
            models: results
                .models
                .iter()
                .map(|m| JsonModel {
                    model: &m.name,
                    model_id: &m.model_id,
                    served_models: &m.served_models,
                    n: m.n,
                    problems: m.problems.len(),
                    correct: m.correct,
                    wrong: m.wrong,
                    no_answer: m.no_answer,
                    truncated: m.truncated,
                    missing: m.missing,
                    effort: searched.then(|| JsonEffort::new(&m.effort)),
                    source: JsonSource::new(results, m),
                    verifier: m.verifier.as_ref().map(JsonVerifier::new),
                })
                .collect(),
            metrics: rows(results)
                .into_iter()
                .map(|(row, e)| JsonRow {
                    row,
                    exact: e.exact.as_ref().map(exact_text),
                    excluded: e.excluded,
                    short: e.short,
                })
                .collect(),
            failures: (results.manifest.as_ref().map(super::failures))
                .unwrap_or_default()
                .into_iter()
                .map(|f| JsonFailure {
                    advice_text: f.advice.text(),
                    failure: f,
                })
                .collect(),
            call_costs: &results.call_costs,
            answers_found: Some(super::found_summary(results)).filter(super::FoundSummary::any),
            manifest: results.manifest.as_ref(),
        };
        let mut bytes = serde_json::to_vec_pretty(&report)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
