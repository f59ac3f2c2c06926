//! The Markdown reader: the GPassK README's result tables. Each table follows a heading naming its
//! benchmark (`### *AIME2025*`); its first column is the model (trailing markers like ⚽ dropped),
//! the others are metrics. Tables whose header names no metric are not results and are skipped;
//! fenced code is skipped.

use super::{
    canonical_benchmark, metric_spelling, parse_metric, percent, Published, PublishedError,
};
use crate::metrics::MetricKind;
use std::path::Path;

/// The table being read: its benchmark and its metric columns.
struct Table {
    benchmark: String,
    metrics: Vec<(String, MetricKind)>,
}

/// Where the reader is: outside tables, in a table that is not results, or in a results table.
enum State {
    Outside,
    Skipping,
    Results(Table),
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<Published>, PublishedError> {
    let source = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let (mut heading, mut fenced, mut state) = (None::<String>, false, State::Outside);
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let (line, trimmed) = (i + 1, raw.trim());
        if trimmed.starts_with("```") {
            fenced = !fenced;
        }
        if fenced || !trimmed.starts_with('|') {
            state = State::Outside;
            if !fenced && trimmed.starts_with('#') {
                heading = Some(heading_text(trimmed));
            }
            continue;
        }
        let cells = cells(trimmed);
        match &state {
            State::Outside => {
                state = match header(&cells, heading.as_deref(), path, line)? {
                    Some(t) => State::Results(t),
                    None => State::Skipping,
                }
            }
            State::Skipping => {}
            State::Results(_) if cells.iter().all(|c| is_rule(c)) => {}
            State::Results(t) => out.extend(row(t, &cells, (path, line), &source)?),
        }
    }
    Ok(out)
}

/// `### *AIME2025*` → `AIME2025`.
fn heading_text(line: &str) -> String {
    let t = line.trim_start_matches('#').trim();
    t.trim_matches(|c: char| c == '*' || c == '_' || c.is_whitespace())
        .to_string()
}

fn cells(line: &str) -> Vec<&str> {
    let inner = line.strip_prefix('|').unwrap_or(line);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    inner.split('|').map(str::trim).collect()
}

/// `--`, `:-:`: the line under a header.
fn is_rule(cell: &str) -> bool {
    !cell.is_empty() && cell.chars().all(|c| c == '-' || c == ':')
}

/// A results table's header, or `None` for a table that names no metric.
fn header(
    cells: &[&str],
    heading: Option<&str>,
    path: &Path,
    line: usize,
) -> Result<Option<Table>, PublishedError> {
    let parsed: Vec<Option<MetricKind>> = cells.iter().skip(1).map(|c| parse_metric(c)).collect();
    if parsed.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut metrics = Vec::new();
    for (name, metric) in cells.iter().skip(1).zip(parsed) {
        let metric = metric.ok_or_else(|| {
            let msg = "is not Greedy, Pass@K, G-Pass@K_TAU or mG-Pass@K";
            PublishedError::bad(path, line, format!("column {name:?} {msg}"))
        })?;
        metrics.push((metric_spelling(name), metric));
    }
    let benchmark = heading.ok_or_else(|| {
        PublishedError::bad(
            path,
            line,
            "a results table with no heading naming its benchmark",
        )
    })?;
    Ok(Some(Table {
        benchmark: canonical_benchmark(benchmark),
        metrics,
    }))
}

/// One model's row; `-` and empty cells are values the table does not give.
fn row(
    t: &Table,
    cells: &[&str],
    (path, line): (&Path, usize),
    source: &str,
) -> Result<Vec<Published>, PublishedError> {
    if cells.len() != t.metrics.len() + 1 {
        let msg = format!(
            "{} cells; the header has {}",
            cells.len(),
            t.metrics.len() + 1
        );
        return Err(PublishedError::bad(path, line, msg));
    }
    // Markers after the name (⚽ general, 🏐 math, 🏀 o1-like) are not part of it.
    let model = cells[0].trim_end_matches(|c: char| !c.is_ascii() || c.is_whitespace());
    if model.is_empty() {
        return Err(PublishedError::bad(
            path,
            line,
            "no model name in the first cell",
        ));
    }
    let mut out = Vec::new();
    for ((name, metric), raw) in t.metrics.iter().zip(&cells[1..]) {
        if raw.is_empty() || *raw == "-" {
            continue;
        }
        let (value, decimals) =
            percent(raw, name).map_err(|m| PublishedError::bad(path, line, m))?;
        out.push(Published {
            source: format!("{source}:{line}"),
            file: 0,
            benchmark: t.benchmark.clone(),
            model: model.to_string(),
            metric_name: name.clone(),
            metric: metric.clone(),
            value,
            decimals,
            line,
        });
    }
    Ok(out)
}
