//! The HTML "Verifier versus voting" section: one plot per model of accuracy versus N (pass@N,
//! maj@N, wmaj@N and bon@N of the first aggregation, the curve Math-Shepherd draws; N on a log
//! scale), a shared legend, the curves' tables, what they rest on, and the agreement with step
//! labels.

use super::super::markup::{short_names, with_short_names};
use super::super::verifier::{self as section, Kind, Series};
use super::{color, esc, key, marker, svg_open, table, Frame, DASHES};
use crate::report::Interval;
use crate::scoring::verifier_metrics::VerifierSummary;
use crate::scoring::{ModelScore, RunResults};
use std::fmt::Write;

/// Style index of a series: colour, dashes and marker.
fn style(kind: Kind) -> usize {
    match kind {
        Kind::Pass => 0,
        Kind::Majority => 1,
        Kind::Weighted(_) => 2,
        Kind::Best(_) => 3,
    }
}

/// The section; empty for a run without a verifier.
pub(super) fn section(results: &RunResults) -> String {
    let models = section::models(results);
    let Some((_, first)) = models.first() else {
        return String::new();
    };
    let mut out = format!(
        "<h2>{}</h2>\n<p>{}</p>\n",
        esc(section::TITLE),
        esc(section::MEANING)
    );
    let agg = first.aggregations.first().map_or("min", |a| a.name());
    out.push_str("<ul class=\"legend\">");
    for (i, label) in [
        "pass@N".to_string(),
        "maj@N".to_string(),
        format!("wmaj@N ({agg})"),
        format!("bon@N ({agg})"),
    ]
    .iter()
    .enumerate()
    {
        let _ = write!(out, "<li>{}{}</li>", key(i), esc(label));
    }
    out.push_str("</ul>\n<div class=\"plots\">\n");
    for (m, v) in &models {
        out.push_str(&plot(m, v));
    }
    out.push_str("</div>\n");
    let names = short_names(results);
    for grid in section::grids(results) {
        let grid = with_short_names(grid, &names);
        let _ = write!(out, "<h3>{}</h3>\n{}", esc(&grid.title), table(&grid));
    }
    let mut notes = section::coverage_notes(results);
    notes.extend(section::estimation_note(results));
    out.push_str("<ul>\n");
    for n in notes {
        let _ = writeln!(out, "<li>{}</li>", esc(&n));
    }
    out.push_str("</ul>\n");
    if let Some(grid) = section::labels_grid(results) {
        let grid = with_short_names(grid, &names);
        let _ = write!(
            out,
            "<h3>{}</h3>\n{}<p>{}</p>\n",
            esc(&grid.title),
            table(&grid),
            esc(&section::labels_meaning())
        );
    }
    out
}

/// One model's curves: x is N on a log scale, y the accuracy; the series of the first
/// aggregation, each point with its interval in a tooltip.
fn plot(m: &ModelScore, v: &VerifierSummary) -> String {
    let f = Frame {
        x0: 56.0,
        y0: 12.0,
        w: 470.0,
        h: 230.0,
    };
    let logs: Vec<f64> = v.sizes.iter().map(|&s| (s as f64).log2()).collect();
    let (lo, hi) = (logs.first().copied(), logs.last().copied());
    let x_of = |i: usize| match (lo, hi) {
        (Some(lo), Some(hi)) if hi > lo => f.x0 + 12.0 + (f.w - 24.0) * (logs[i] - lo) / (hi - lo),
        _ => f.x0 + f.w / 2.0,
    };
    let mut svg = svg_open(
        "verifier",
        f.x0 + f.w + 16.0,
        f.y0 + f.h + 44.0,
        &format!("accuracy versus N for {}", m.name),
    );
    f.percent_axis(&mut svg, "accuracy (%)");
    // Tick labels right to left, skipping any that would touch the one to its right.
    let mut right = f64::INFINITY;
    for i in (0..v.sizes.len()).rev() {
        let x = x_of(i);
        let text = v.sizes[i].to_string();
        let half = 4.0 * text.len() as f64 + 2.0;
        if x + half > right - 4.0 {
            continue;
        }
        right = x - half;
        let _ = write!(
            svg,
            "<text class=\"label\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{text}</text>",
            f.y0 + f.h + 15.0
        );
    }
    let _ = write!(
        svg,
        "<text class=\"title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">N of n = {} samples (log scale)</text>",
        f.x0 + f.w / 2.0,
        f.y0 + f.h + 36.0,
        m.n
    );
    let lines = section::series(m, v);
    for s in lines.iter().take(4) {
        svg.push_str(&line(s, &v.sizes, &f, &x_of));
    }
    let kept = m.problems.iter().filter(|p| p.n > 0).count();
    let used = kept.saturating_sub(v.excluded_problems);
    // Problems with unscored samples count at each N up to their scored ones.
    let at_n = match (v.partial_problems, v.problems_at.last()) {
        (0, _) | (_, None) => String::new(),
        (_, Some(p)) => format!(", {p} at N = {}", m.n),
    };
    format!(
        "<figure class=\"verifier\" data-model=\"{name}\"><figcaption><strong>{name}</strong><br>\
         bon@N and wmaj@N over {used} of {kept} problems{at_n}</figcaption>{svg}</svg></figure>\n",
        name = esc(&m.name)
    )
}

/// A series as a dashed, marked line; points without a value are left out.
fn line(s: &Series, sizes: &[u64], f: &Frame, x_of: &dyn Fn(usize) -> f64) -> String {
    let i = style(s.metric);
    let points: Vec<(f64, f64, String)> = (s.values.iter().enumerate())
        .filter_map(|(j, e)| {
            let e = (*e)?;
            let text = format!("N = {}: {}", sizes[j], Interval::of(Some(e)));
            Some((x_of(j), f.y(e.value?), text))
        })
        .collect();
    let path: Vec<String> = points
        .iter()
        .map(|(x, y, _)| format!("{x:.1},{y:.1}"))
        .collect();
    let mut out = format!(
        "<polyline class=\"curve\" data-series=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" \
         stroke-dasharray=\"{}\" points=\"{}\"/>",
        esc(&s.label),
        color(i),
        DASHES[i % DASHES.len()],
        path.join(" ")
    );
    for (x, y, text) in &points {
        let _ = write!(
            out,
            "<g>{}<title>{}: {text} %</title></g>",
            marker(i, *x, *y),
            esc(&s.label)
        );
    }
    out
}
