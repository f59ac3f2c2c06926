//! Reporters: one [`Exporter`] trait, one file per format. Exporters return bytes; callers write them.

mod csv;
mod json;
mod table;

pub use self::csv::MetricsCsv;
pub use self::json::MetricsJson;
pub use self::table::SummaryTable;

use crate::metrics::{to_f64, MetricValue};
use crate::score::{ModelScore, RunResults};
use serde::Serialize;

/// Turns run results into the bytes of one output format.
pub trait Exporter {
    /// The file name this format is written to inside a run directory.
    fn file_name(&self) -> &'static str;
    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>>;
}

/// One tidy row: model × dataset × subset × metric × k × τ. Raw values, never rounded.
#[derive(Debug, Clone, Serialize)]
pub struct MetricRow {
    pub model: String,
    pub model_id: String,
    pub dataset: String,
    /// `all` for the whole dataset.
    pub subset: String,
    pub metric: &'static str,
    pub k: Option<u64>,
    pub tau: Option<String>,
    /// A fraction in [0, 1]; empty when no problem could be scored.
    pub value: Option<f64>,
    pub problems: usize,
    pub n: u32,
}

impl MetricRow {
    pub fn new(results: &RunResults, m: &ModelScore, v: &MetricValue) -> MetricRow {
        MetricRow {
            model: m.name.clone(),
            model_id: m.model_id.clone(),
            dataset: results.dataset.clone(),
            subset: v.subset.clone().unwrap_or_else(|| "all".into()),
            metric: v.metric.family(),
            k: v.metric.k(),
            tau: v.metric.tau().map(|t| t.text().to_string()),
            value: v.value.as_ref().map(to_f64),
            problems: v.problems,
            n: m.n,
        }
    }
}

/// Every row of a run, model by model, in the aggregate's order.
pub fn rows(results: &RunResults) -> Vec<(MetricRow, &MetricValue)> {
    results
        .models
        .iter()
        .flat_map(|m| {
            m.aggregate
                .values
                .iter()
                .map(move |v| (MetricRow::new(results, m, v), v))
        })
        .collect()
}
