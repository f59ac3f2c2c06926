//! The "incomplete run" banner of the human reports: how much was sampled and, per headline
//! metric, how many problems its value rests on when that is fewer than the dataset holds.

use super::metric_label;
use crate::scoring::RunResults;

/// The banner's lines; empty for a complete run.
pub fn banner(results: &RunResults) -> Vec<String> {
    let total = results.models.first().map_or(0, |m| m.problems.len());
    let status = results
        .manifest
        .as_ref()
        .map(|m| m.status)
        .filter(|s| !s.is_complete());
    let missing: u64 = results.models.iter().map(|m| m.missing).sum();
    if status.is_none() && missing == 0 {
        return Vec::new();
    }
    let (usable, planned) = match &results.manifest {
        Some(m) => m.models.values().fold((0, 0), |(u, p), mm| {
            (u + mm.ok + mm.truncated, p + mm.units_planned)
        }),
        None => {
            let usable: u64 = results
                .models
                .iter()
                .map(|m| m.correct + m.wrong + m.no_answer)
                .sum();
            (usable, usable + missing)
        }
    };
    let mut lines = vec![format!(
        "INCOMPLETE RUN ({}): {usable} of {planned} planned units are usable.",
        status.map_or("units missing", |s| s.as_str())
    )];
    // "4 problems per model" → the metrics resting on that many, in headline order.
    let mut short: Vec<(String, Vec<String>)> = Vec::new();
    for metric in &results.shown {
        let counts: Vec<usize> = results
            .models
            .iter()
            .filter_map(|m| m.estimate(metric, None).map(|e| e.problems))
            .collect();
        let (Some(lo), Some(hi)) = (counts.iter().min(), counts.iter().max()) else {
            continue;
        };
        if *lo < total {
            let range = if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}–{hi}")
            };
            let label = metric_label(metric);
            match short.iter_mut().find(|(r, _)| *r == range) {
                Some((_, labels)) => labels.push(label),
                None => short.push((range, vec![label])),
            }
        }
    }
    if !short.is_empty() {
        lines.push(format!(
            "Metrics rest on fewer problems than the dataset's {total}:"
        ));
        for (range, labels) in short {
            lines.extend(item(&format!("{range} problems per model:"), &labels));
        }
    }
    lines
}

/// `  4 problems per model: Pass@4, G-Pass@4_0.5, …`, continued on lines indented by four
/// spaces so no line passes 78 characters (continuations belong to the item above).
fn item(head: &str, labels: &[String]) -> Vec<String> {
    let labels: Vec<&str> = labels.iter().map(String::as_str).collect();
    let text = super::wrap_list(&format!("  {head} "), &labels, 78, "    ");
    text.lines().map(str::to_string).collect()
}
