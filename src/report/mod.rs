//! Reporters: one [`Exporter`] trait, one file per format. Exporters return bytes; callers write them.
//!
//! Machine formats (`metrics.csv`, `per_problem.csv`, `metrics.json`) keep raw fractions in [0, 1];
//! the human formats (terminal table, Markdown, HTML) show percentages rounded to one decimal with
//! their 95% intervals, printed by [`Interval`]. CSV and JSON rows are both [`MetricRow`]s.

mod csv;
mod failures;
mod found;
mod html;
mod imported;
mod interval;
mod json;
mod layout;
mod markdown;
mod markup;
mod partial;
mod paste;
mod per_problem;
mod summary;
mod tabular;
mod text;
mod verifier;

pub use self::csv::{safe_cell as csv_cell, MetricsCsv};
pub use self::failures::{failures, failures_block, failures_text, Advice, Failure, Hit};
pub use self::found::{found_block, found_html, found_summary, FoundSummary, ModelWays};
pub use self::html::HtmlReport;
pub use self::imported::{import_summary, source_agreement};
pub use self::interval::Interval;
pub use self::json::MetricsJson;
pub use self::layout::{layout, legend as name_lines, Corner};
pub use self::markdown::MarkdownReport;
pub use self::partial::banner as partial_banner;
pub use self::paste::table as md_table;
pub use self::per_problem::PerProblemCsv;
pub use self::summary::{terminal_table, SummaryTable};
pub use self::tabular::{Cell, TableFormat, Tabular};
pub(crate) use self::text::esc;
pub use self::text::{md_code, md_safe, md_text, wrap, wrap_list};

use crate::metrics::MetricKind;
use crate::rundir::RunDir;
use crate::scoring::{ModelScore, RunResults};
use crate::stats::Estimate;
use crate::util::write_atomic;
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Turns run results into the bytes of one output format.
pub trait Exporter {
    /// The file name this format is written to inside a run directory.
    fn file_name(&self) -> &'static str;
    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>>;
}

/// The formats `gpassk report --format` offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Terminal table: per k, a row per model, percentages with 95% CIs.
    Table,
    /// metrics.csv: one tidy row per model × dataset × subset × metric × k × τ.
    Csv,
    /// per_problem.csv: one row per model × problem.
    PerProblem,
    /// metrics.json: the tidy rows, exact fractions, per-model counts and the manifest.
    Json,
    /// report.md: a Markdown write-up.
    Md,
    /// report.html: one self-contained page with inline SVG plots.
    Html,
}

impl Format {
    pub const ALL: [Format; 6] = [
        Format::Table,
        Format::Csv,
        Format::PerProblem,
        Format::Json,
        Format::Md,
        Format::Html,
    ];

    /// The names `--format` takes, in [`Format::ALL`] order.
    pub const NAMES: [&'static str; 6] = ["table", "csv", "per-problem", "json", "md", "html"];

    /// The format of a name in [`Format::NAMES`].
    pub fn from_name(name: &str) -> Option<Format> {
        let i = Format::NAMES.iter().position(|n| *n == name)?;
        Some(Format::ALL[i])
    }

    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Table => &SummaryTable { wide: true },
            Format::Csv => &MetricsCsv,
            Format::PerProblem => &PerProblemCsv,
            Format::Json => &MetricsJson,
            Format::Md => &MarkdownReport,
            Format::Html => &HtmlReport,
        }
    }
}

/// A metric as the human reports name it: `Greedy`, `Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`,
/// `maj@n`; the verifier metrics by their config names (`bon@16_min`, `wmaj@16_min`, `maj@4`).
pub fn metric_label(metric: &MetricKind) -> String {
    metric.label()
}

/// Writes every format into the run directory (atomically, file by file); returns the paths.
pub fn write_all(run_dir: &RunDir, results: &RunResults) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for format in Format::ALL {
        let exporter = format.exporter();
        let bytes = exporter.export(results)?;
        let path = run_dir.file(exporter.file_name());
        write_atomic(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    // The exact parts behind every figure, for readers that must not grade again (the viewer).
    if let Some(bytes) = crate::scoring::stored::bytes(run_dir, results) {
        let path = run_dir.scores();
        write_atomic(&path, &bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(written)
}

/// One tidy row: model × dataset × subset × metric × k × τ. Raw values in [0, 1], never rounded.
///
/// The column order is the CSV header: `model,model_id,dataset,subset,metric,k,tau,value,ci_low,
/// ci_high,problems,n,coverage,aggregation,mc_std_error`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricRow {
    pub model: String,
    pub model_id: String,
    pub dataset: String,
    /// `all` for the whole dataset.
    pub subset: String,
    /// `greedy_acc`, `pass@k`, `g_pass@k`, `mg_pass@k`, `maj@n`, or the verifier's `bon@k`,
    /// `wmaj@k`, `maj@k` (k is N there).
    pub metric: String,
    pub k: Option<u64>,
    pub tau: Option<String>,
    /// Empty when no problem could be scored.
    pub value: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Problems that entered the mean.
    pub problems: usize,
    /// The run's samples per problem for this model.
    pub n: u32,
    /// Usable units over planned units (see [`Estimate::coverage`]).
    pub coverage: f64,
    /// How the verifier's step scores became a solution's (`min`, `mean`, `last`, `product`) for
    /// bon@k and wmaj@k; empty otherwise.
    pub aggregation: Option<String>,
    /// The Monte Carlo standard error of `value` where some problem's value was estimated from
    /// sampled subsets; empty where it is exact.
    pub mc_std_error: Option<f64>,
}

/// The CSV header, also written when a run has no rows.
pub const METRIC_COLUMNS: [&str; 15] = [
    "model",
    "model_id",
    "dataset",
    "subset",
    "metric",
    "k",
    "tau",
    "value",
    "ci_low",
    "ci_high",
    "problems",
    "n",
    "coverage",
    "aggregation",
    "mc_std_error",
];

impl MetricRow {
    pub fn new(results: &RunResults, m: &ModelScore, e: &Estimate) -> MetricRow {
        MetricRow {
            model: m.name.clone(),
            model_id: m.model_id.clone(),
            dataset: results.dataset.clone(),
            subset: e.subset.clone().unwrap_or_else(|| "all".into()),
            metric: e.metric.family().to_string(),
            k: e.metric.k(),
            tau: e.metric.tau().map(|t| t.text().to_string()),
            value: e.value,
            ci_low: e.ci.map(|c| c.0),
            ci_high: e.ci.map(|c| c.1),
            problems: e.problems,
            n: m.n,
            coverage: e.coverage,
            aggregation: e.metric.aggregation().map(|a| a.name().to_string()),
            mc_std_error: e.mc_std_error,
        }
    }
}

/// Every row of a run, model by model, in the estimates' order (overall, then subsets).
pub fn rows(results: &RunResults) -> Vec<(MetricRow, &Estimate)> {
    results
        .models
        .iter()
        .flat_map(|m| {
            m.estimates
                .iter()
                .map(move |e| (MetricRow::new(results, m, e), e))
        })
        .collect()
}
