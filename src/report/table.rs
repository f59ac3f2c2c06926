//! The terminal summary (comfy-table): per k, a row per model with every headline metric as a
//! percentage with its 95% interval, coverage and no-answer counts.

use super::markup::summaries;
use super::Exporter;
use crate::scoring::RunResults;

pub struct SummaryTable;

impl Exporter for SummaryTable {
    fn file_name(&self) -> &'static str {
        "summary.txt"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut out = String::new();
        for grid in summaries(results) {
            let mut t = comfy_table::Table::new();
            t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
            t.set_header(grid.header);
            for row in grid.rows {
                t.add_row(row);
            }
            out.push_str(&format!("{}\n{t}\n", grid.title));
        }
        Ok(out.into_bytes())
    }
}
