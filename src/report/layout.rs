//! A grid of cells (a row per name, a column per header) laid out within a terminal width: rows as
//! rows, else transposed, else blocks of columns, with a legend of the names it shortened; the
//! terminal summary, the verifier section and history share it.

use crate::util::{name_legend, name_width, printable, shorten_names};

/// Shortest name width tried before the table is transposed.
pub(super) const MIN_NAME: usize = 12;
pub(super) const GAP: &str = "  ";

/// The heads of a grid's first column and first row: what its rows are, and what its columns are.
#[derive(Clone, Copy)]
pub struct Corner {
    pub rows: &'static str,
    pub columns: &'static str,
}

impl Corner {
    pub(super) const MODEL: Corner = Corner {
        rows: "model",
        columns: "metric",
    };
}

/// A grid of `cells` (a row per name, a column per `header`) laid out within `width` as
/// the run summary is laid out: rows as rows, else transposed, else blocks of columns.
pub fn layout(
    corner: Corner,
    names: &[&str],
    header: &[String],
    cells: &[Vec<String>],
    width: usize,
) -> String {
    let col_widths: Vec<usize> = (0..header.len())
        .map(|c| column_width(&header[c], cells.iter().map(|r| r[c].as_str())))
        .collect();
    let body: usize = col_widths.iter().map(|w| w + GAP.len()).sum();
    let longest = names
        .iter()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(5)
        .max(5);
    if longest + body <= width || MIN_NAME + body <= width {
        let name_width = name_width(width.saturating_sub(body))
            .min(longest)
            .max(MIN_NAME.min(longest));
        let short = shorten_names(names, name_width);
        return models_as_rows(corner.rows, &short, header, cells, 0..header.len())
            + &legend(names, &short, width);
    }
    // Metrics as rows: a model's name may take its column's width, which its cells set anyway.
    let label_width = header.iter().map(|h| h.chars().count()).max().unwrap_or(6);
    let widest_cell = cells.iter().flatten().map(|c| c.chars().count()).max();
    for name_width in [widest_cell.unwrap_or(0).max(MIN_NAME), MIN_NAME] {
        let short = shorten_names(names, name_width);
        let model_cols: usize = (0..names.len())
            .map(|i| column_width(&short[i], cells[i].iter().map(String::as_str)) + GAP.len())
            .sum();
        if label_width + model_cols <= width {
            return metrics_as_rows(corner.columns, &short, header, cells, label_width)
                + &legend(names, &short, width);
        }
    }
    // Blocks of metric columns, each with the model column: as wide as the widest block leaves.
    let mut blocks = Vec::new();
    let mut start = 0;
    while start < header.len() {
        let mut end = start;
        let mut used = longest.min(MIN_NAME);
        while end < header.len() && (end == start || used + col_widths[end] + GAP.len() <= width) {
            used += col_widths[end] + GAP.len();
            end += 1;
        }
        blocks.push(start..end);
        start = end;
    }
    let widest = blocks
        .iter()
        .map(|b| {
            col_widths[b.clone()]
                .iter()
                .map(|w| w + GAP.len())
                .sum::<usize>()
        })
        .max()
        .unwrap_or(0);
    let name_width = longest.min(name_width(width.saturating_sub(widest)).max(MIN_NAME));
    let short = shorten_names(names, name_width);
    let tables: String = blocks
        .into_iter()
        .map(|cols| models_as_rows(corner.rows, &short, header, cells, cols))
        .collect();
    tables + &legend(names, &short, width)
}

/// `short = full`, a line per name the table shortened (none when it shortened none).
pub fn legend(names: &[&str], short: &[String], width: usize) -> String {
    (name_legend(names, short).iter())
        .map(|(s, full)| {
            let line = format!("  {} = {}", printable(s), printable(full));
            super::wrap(&line, width, "    ") + "\n"
        })
        .collect()
}

fn column_width<'a>(head: &str, cells: impl Iterator<Item = &'a str>) -> usize {
    cells
        .map(|c| c.chars().count())
        .chain([head.chars().count()])
        .max()
        .unwrap_or(0)
}

fn models_as_rows(
    corner: &str,
    short: &[String],
    header: &[String],
    cells: &[Vec<String>],
    cols: std::ops::Range<usize>,
) -> String {
    let mut rows = vec![std::iter::once(corner.to_string())
        .chain(header[cols.clone()].iter().cloned())
        .collect::<Vec<_>>()];
    for (name, row) in short.iter().zip(cells) {
        let mut r = vec![name.clone()];
        r.extend(row[cols.clone()].iter().cloned());
        rows.push(r);
    }
    aligned(&rows)
}

fn metrics_as_rows(
    corner: &str,
    short: &[String],
    header: &[String],
    cells: &[Vec<String>],
    label_width: usize,
) -> String {
    let mut rows = vec![std::iter::once(format!("{corner:<label_width$}"))
        .chain(short.iter().cloned())
        .collect::<Vec<_>>()];
    for (c, label) in header.iter().enumerate() {
        let mut r = vec![label.clone()];
        r.extend(cells.iter().map(|row| row[c].clone()));
        rows.push(r);
    }
    aligned(&rows)
}

/// Rows of cells as text: first column left-aligned, the rest right-aligned, a rule under the
/// header; no trailing spaces.
fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            let pad = widths[c] - cell.chars().count();
            if c == 0 {
                line.push_str(cell);
                line.push_str(&" ".repeat(pad));
            } else {
                line.push_str(GAP);
                line.push_str(&" ".repeat(pad));
                line.push_str(cell);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + GAP.len() * cols.saturating_sub(1);
            out.push_str(&"─".repeat(total));
            out.push('\n');
        }
    }
    out
}
