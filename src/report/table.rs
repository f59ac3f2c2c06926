//! The terminal summary: a row per model, the configured metrics as rounded percentages.

use super::Exporter;
use crate::metrics::to_f64;
use crate::score::RunResults;

pub struct SummaryTable;

impl Exporter for SummaryTable {
    fn file_name(&self) -> &'static str {
        "summary.txt"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        let mut header = vec!["model".to_string()];
        header.extend(results.shown.iter().map(|m| m.to_string()));
        header.extend(["problems", "n", "short", "no answer", "missing"].map(String::from));
        t.set_header(header);
        for m in &results.models {
            let mut row = vec![m.name.clone()];
            for metric in &results.shown {
                let cell = match m.aggregate.get(metric, None).and_then(|v| v.value.as_ref()) {
                    Some(v) => format!("{:.1}", 100.0 * to_f64(v)),
                    None => "-".into(),
                };
                row.push(cell);
            }
            let short = m.problems.iter().filter(|p| p.n < m.n as u64).count();
            row.extend([
                m.problems.len().to_string(),
                m.n.to_string(),
                short.to_string(),
                m.no_answer.to_string(),
                m.missing.to_string(),
            ]);
            t.add_row(row);
        }
        Ok(format!(
            "{} ({} problems), values in %\n{t}\n",
            results.dataset,
            results.models.first().map_or(0, |m| m.problems.len())
        )
        .into_bytes())
    }
}
