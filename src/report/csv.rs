//! `metrics.csv`: the tidy table, one row per model × dataset × subset × metric × k × τ.

use super::{rows, Exporter};
use crate::score::RunResults;

pub struct MetricsCsv;

impl Exporter for MetricsCsv {
    fn file_name(&self) -> &'static str {
        "metrics.csv"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut w = ::csv::Writer::from_writer(Vec::new());
        for (row, _) in rows(results) {
            w.serialize(row)?;
        }
        if results.models.iter().all(|m| m.aggregate.values.is_empty()) {
            w.write_record([
                "model", "model_id", "dataset", "subset", "metric", "k", "tau", "value",
                "problems", "n",
            ])?;
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }
}
