//! `metrics.csv`: the tidy table, one row per model × dataset × subset × metric × k × τ.

use super::{rows, Exporter, METRIC_COLUMNS};
use crate::scoring::RunResults;

pub struct MetricsCsv;

impl Exporter for MetricsCsv {
    fn file_name(&self) -> &'static str {
        "metrics.csv"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let all = rows(results);
        let mut w = ::csv::Writer::from_writer(Vec::new());
        if all.is_empty() {
            w.write_record(METRIC_COLUMNS)?;
        }
        for (row, _) in all {
            w.serialize(row)?;
        }
        w.into_inner().map_err(|e| anyhow::anyhow!("{e}"))
    }
}
