//! The terminal summary. The compact default fits the terminal: a row per model with the config's
//! headline metrics as `value [lo, hi]` (transposed, or split into blocks, when that is what
//! fits). The wide form (`--wide`, and `summary.txt`) has every metric of every headline k.

use super::layout::{layout, Corner, MIN_NAME};
use super::markup::{search_grid, search_notes, summaries};
use super::partial::banner;
use super::text::wrap;
use super::{metric_label, Exporter, Interval};
use crate::rundir::manifest::CostEntry;
use crate::scoring::RunResults;
use crate::util::{abbreviate, terminal_width};

/// The terminal table as an exporter; `summary.txt` holds the wide form.
pub struct SummaryTable {
    pub wide: bool,
}

impl Exporter for SummaryTable {
    fn file_name(&self) -> &'static str {
        "summary.txt"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let mut text = if self.wide {
            wide(results)
        } else {
            compact(results, terminal_width())
        };
        text.push_str(&super::found::found_block(results, SUMMARY_WIDTH));
        text.push_str(&super::failures::failures_block(results, SUMMARY_WIDTH));
        Ok(text.into_bytes())
    }
}

/// The width summary.txt's text is wrapped to (a file does not know the terminal's).
const SUMMARY_WIDTH: usize = 100;

/// The table a command prints: compact for the terminal's width unless `wide`.
pub fn terminal_table(results: &RunResults, wide: bool) -> String {
    let mut text = if wide {
        self::wide(results)
    } else {
        compact(results, terminal_width())
    };
    if let Some(line) = cost_line(results) {
        // Several payers make a long line: broken at spaces, never inside a name.
        text.push_str(&wrap(&line, terminal_width(), "  "));
        text.push('\n');
    }
    text.push_str(&super::found::found_block(results, terminal_width()));
    text
}

/// The footer's cost line from the manifest's ledger and the judge's and verifier's calls:
/// `cost: a 0.012000 USD (0.000600 per sample), …, judge j 0.000100 USD (…)`; None when nothing
/// is priced.
pub(super) fn cost_line(results: &RunResults) -> Option<String> {
    use crate::cost::show;
    let parts: Vec<String> = cost_entries(results)
        .into_iter()
        .map(|(name, c)| {
            let billed = match c.billable_failures {
                0 => String::new(),
                k => format!(", not counting {k} failed attempts the server may have billed"),
            };
            let Some(per) = c.per_sample else {
                return format!("{name} no request succeeded{billed}");
            };
            let per = format!(" ({} per sample)", show(per, &c.currency));
            let missing = match c.samples_without_usage {
                0 => billed,
                k => format!(", {k} samples without usage{billed}"),
            };
            format!("{name} {}{per}{missing}", show(c.total, &c.currency))
        })
        .collect();
    (!parts.is_empty()).then(|| format!("cost: {}", parts.join("; ")))
}

/// Every priced payer's ledger, by name: the sampled models', then the judge's and the
/// verifier's calls (`judge <model id>`).
pub(super) fn cost_entries(results: &RunResults) -> Vec<(String, &CostEntry)> {
    let models = (results.manifest.iter()).flat_map(|m| {
        (m.models.iter()).filter_map(|(name, m)| Some((name.clone(), m.cost.as_ref()?)))
    });
    let calls = (results.call_costs.iter()).map(|c| (c.label(), &c.cost));
    models.chain(calls).collect()
}

fn banner_text(results: &RunResults) -> String {
    let line = |l: &String| format!("{}\n", crate::util::printable(l));
    banner(results).iter().map(line).collect()
}

fn wide(results: &RunResults) -> String {
    let mut out = banner_text(results);
    for grid in summaries(results) {
        let mut t = comfy_table::Table::new();
        t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
        t.set_header(grid.header);
        for row in grid.rows {
            t.add_row(row);
        }
        out.push_str(&format!("{}\n{t}\n", grid.title));
    }
    out.push_str(&search_section(results, None));
    out.push_str(&super::verifier::terminal(results, None));
    out
}

/// The "Search and sampling cost" grid with its notes (empty without a search model): laid out
/// to fit `width`, or as a full grid without one.
fn search_section(results: &RunResults, width: Option<usize>) -> String {
    let Some(grid) = search_grid(results) else {
        return String::new();
    };
    let mut out = format!("\n{}\n", grid.title);
    match width {
        Some(width) => {
            let names: Vec<&str> = grid.rows.iter().map(|r| r[0].as_str()).collect();
            let cells: Vec<Vec<String>> = grid.rows.iter().map(|r| r[1..].to_vec()).collect();
            out.push_str(&layout_fitting(&names, &grid.header[1..], &cells, width));
        }
        None => {
            let mut t = comfy_table::Table::new();
            t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED);
            t.set_header(grid.header);
            for row in grid.rows {
                t.add_row(row);
            }
            out.push_str(&format!("{t}\n"));
        }
    }
    for note in search_notes(results) {
        match width {
            Some(w) => out.push_str(&format!("{}\n", wrap(&note, w, ""))),
            None => out.push_str(&format!("{note}\n")),
        }
    }
    out
}

/// Under the compact table: what the brackets hold (the same print as every other report).
const FOOTER: &str = "[lo, hi]: 95% interval, bounds rounded outward · --wide: every metric\n";

fn compact(results: &RunResults, width: usize) -> String {
    let problems = results.models.first().map_or(0, |m| m.problems.len());
    let metrics = results.headline();
    let mut header: Vec<String> = metrics.iter().map(metric_label).collect();
    let mut cells: Vec<Vec<String>> = results
        .models
        .iter()
        .map(|m| {
            metrics
                .iter()
                .map(|k| Interval::of(m.estimate(k, None)).to_string())
                .collect()
        })
        .collect();
    if results.models.iter().any(|m| m.missing > 0) {
        header.push("coverage".into());
        for (row, m) in cells.iter_mut().zip(&results.models) {
            row.push(super::markup::coverage(m));
        }
    }
    let names: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
    let mut out = banner_text(results);
    let title = format!(" ({problems} problems): % [95% CI]");
    let room = width.saturating_sub(title.chars().count()).max(MIN_NAME);
    let label = crate::util::printable(&results.label()).into_owned();
    out.push_str(&format!("{}{title}\n", abbreviate(&label, room)));
    out.push_str(&layout_fitting(&names, &header, &cells, width));
    out.push_str(FOOTER);
    out.push_str(&search_section(results, Some(width)));
    out.push_str(&super::verifier::terminal(results, Some(width)));
    out
}

/// Models as rows when that fits (shortening long names down to [`MIN_NAME`], kept apart by
/// [`shorten_names`]), else metrics as rows, else models as rows in blocks of columns.
fn layout_fitting(
    names: &[&str],
    header: &[String],
    cells: &[Vec<String>],
    width: usize,
) -> String {
    layout(Corner::MODEL, names, header, cells, width)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The widest cell a percentage interval prints.
    const CELL: &str = "100.0 [88.4, 100.0]";

    fn grid(models: usize, metrics: usize) -> (Vec<String>, Vec<String>, Vec<Vec<String>>) {
        let names = (0..models)
            .map(|i| format!("DeepSeek-R1-Distill-Qwen-{i}B"))
            .collect();
        let header = (0..metrics).map(|j| format!("G-Pass@16_0.{j}")).collect();
        let cells = (0..models)
            .map(|_| (0..metrics).map(|_| CELL.to_string()).collect())
            .collect();
        (names, header, cells)
    }

    fn layout(models: usize, metrics: usize, width: usize) -> String {
        let (names, header, cells) = grid(models, metrics);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        layout_fitting(&names, &header, &cells, width)
    }

    #[test]
    fn every_layout_fits_its_width() {
        for (models, metrics) in [(1, 8), (6, 4), (6, 8), (12, 2), (2, 12)] {
            for width in [60, 80, 120] {
                let text = layout(models, metrics, width);
                for line in text.lines() {
                    assert!(
                        line.chars().count() <= width,
                        "{models}×{metrics} at {width}:\n{text}"
                    );
                }
                // Every cell is still shown.
                assert_eq!(text.matches(CELL).count(), models * metrics, "{text}");
            }
        }
    }

    #[test]
    fn few_models_with_many_metrics_turn_metrics_into_rows() {
        let text = layout(1, 8, 80);
        assert!(text.starts_with("metric "), "{text}");
        let wide = layout(2, 2, 120);
        assert!(
            wide.starts_with("model ") && wide.contains("DeepSeek-R1-Distill-Qwen-0B"),
            "{wide}"
        );
        // Long names give way to the columns: what they all share goes, and a legend under the
        // table gives each name in full.
        let narrow = layout(6, 2, 60);
        let rows: Vec<&str> = narrow.lines().skip(2).take(6).collect();
        for (i, r) in rows.iter().enumerate() {
            assert!(r.starts_with(&format!("{i}B ")), "{narrow}");
            assert!(
                narrow.contains(&format!("\n  {i}B = DeepSeek-R1-Distill-Qwen-{i}B\n")),
                "{narrow}"
            );
        }
    }

    /// The model names a layout shows, per block (header rows hold them when metrics are rows).
    fn shown_names(text: &str) -> Vec<Vec<String>> {
        let mut blocks = Vec::new();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.starts_with("metric ") {
                blocks.push(line.split_whitespace().skip(1).map(String::from).collect());
            } else if line.starts_with("model ") {
                // The rows end at the next block or at the legend (`  short = full`).
                let rows = lines[i + 2..]
                    .iter()
                    .take_while(|l| !l.starts_with("model ") && !l.starts_with("  "));
                blocks.push(
                    rows.map(|r| r.split("  ").next().unwrap_or("").to_string())
                        .collect(),
                );
            }
        }
        blocks
    }

    #[test]
    fn names_that_differ_inside_or_at_the_end_stay_apart_in_every_layout() {
        let names = [
            "Llama-3.1-70B-Instruct",
            "Llama-3.1-8B-Instruct",
            "Qwen2.5-Math-7B-Instruct",
            "Qwen2.5-Math-7B-Instruct-search",
        ];
        for metrics in 1..=8 {
            let header: Vec<String> = (0..metrics).map(|j| format!("G-Pass@16_0.{j}")).collect();
            let cells = vec![vec![CELL.to_string(); metrics]; names.len()];
            for width in [50, 60, 80, 120] {
                let text = layout_fitting(&names, &header, &cells, width);
                let blocks = shown_names(&text);
                assert!(!blocks.is_empty(), "{text}");
                for shown in blocks {
                    let mut apart = shown.clone();
                    apart.sort();
                    apart.dedup();
                    assert_eq!(apart.len(), names.len(), "{metrics} at {width}:\n{text}");
                }
            }
        }
    }
}
