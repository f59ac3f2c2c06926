//! `metrics.json`: the tidy rows plus exact fractions, per-model counts, the interval method
//! and the run's manifest (timestamps, model IDs, served model names).

use super::{rows, Exporter, MetricRow};
use crate::manifest::Manifest;
use crate::metrics::exact_text;
use crate::scoring::RunResults;
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
    manifest: Option<&'a Manifest>,
}

impl Exporter for MetricsJson {
    fn file_name(&self) -> &'static str {
        "metrics.json"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
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
            manifest: results.manifest.as_ref(),
        };
        let mut bytes = serde_json::to_vec_pretty(&report)?;
        bytes.push(b'\n');
        Ok(bytes)
    }
}
