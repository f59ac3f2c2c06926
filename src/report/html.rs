//! `report.html`: one self-contained page (inline CSS and SVG, no scripts, no external references):
//! summary tables, G-Pass@k versus τ curves (one per model), greedy versus mG-Pass@k bars, a
//! per-subset table, a histogram of c/n per model, and the manifest.

use super::markup::{notes, pct, subset_grid, summaries, Grid};
use super::Exporter;
use crate::metrics::MetricKind;
use crate::scoring::{ModelScore, RunResults};
use std::fmt::Write;

pub struct HtmlReport;

const PALETTE: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;\
text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}\
pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px}svg{margin:0.5em 1em 1em 0}\
.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}\
.label{font-size:11px;fill:#444}.hist{display:inline-block}";

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

fn table(grid: &Grid) -> String {
    let mut out = String::from("<table>\n<tr>");
    for h in &grid.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for row in &grid.rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
    out
}

/// Plot area: x from 50 to 50+W, y from 20 to 20+H.
const W: f64 = 480.0;
const H: f64 = 240.0;
const X0: f64 = 50.0;
const Y0: f64 = 20.0;

fn y_of(v: f64) -> f64 {
    Y0 + H * (1.0 - v.clamp(0.0, 1.0))
}

/// Horizontal grid lines and labels for 0..100%.
fn y_axis(out: &mut String) {
    for i in 0..=4 {
        let v = i as f64 / 4.0;
        let y = y_of(v);
        let _ = write!(
            out,
            "<line class=\"grid\" x1=\"{X0}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\
             <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}%</text>",
            X0 + W,
            X0 - 6.0,
            y + 4.0,
            (v * 100.0) as u32
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{X0}\" y1=\"{Y0}\" x2=\"{X0}\" y2=\"{:.1}\"/>\
         <line class=\"axis\" x1=\"{X0}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>",
        Y0 + H,
        Y0 + H,
        X0 + W,
        Y0 + H
    );
}

/// G-Pass@k versus τ for the largest k: one polyline per model; τ = 0 shows pass@k.
fn curves(results: &RunResults, k: u64) -> String {
    let width = X0 + W + 190.0;
    let height = Y0 + H + 40.0;
    let mut out = format!(
        "<svg class=\"curves\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         role=\"img\" aria-label=\"G-Pass@{k} versus tau\">"
    );
    y_axis(&mut out);
    let x_of = |t: f64| X0 + W * t;
    for i in 0..=4 {
        let t = i as f64 / 4.0;
        let _ = write!(
            out,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
            x_of(t),
            Y0 + H + 16.0
        );
    }
    let _ = write!(
        out,
        "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">τ (τ = 0: Pass@{k})</text>",
        X0 + W / 2.0,
        Y0 + H + 34.0
    );
    for (i, m) in results.models.iter().enumerate() {
        let mut points: Vec<(f64, f64)> = Vec::new();
        if let Some(v) = m
            .estimate(&MetricKind::PassAtK { k }, None)
            .and_then(|e| e.value)
        {
            points.push((0.0, v));
        }
        for t in &results.taus {
            let metric = MetricKind::GPassAtK { k, tau: t.clone() };
            if let Some(v) = m.estimate(&metric, None).and_then(|e| e.value) {
                points.push((t.to_f64(), v));
            }
        }
        let path: Vec<String> = points
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", x_of(t), y_of(v)))
            .collect();
        let _ = write!(
            out,
            "<polyline class=\"curve\" data-model=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>",
            esc(&m.name),
            color(i),
            path.join(" ")
        );
        for &(t, v) in &points {
            let _ = write!(
                out,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{}: {:.1}%</title></circle>",
                x_of(t),
                y_of(v),
                color(i),
                esc(&m.name),
                100.0 * v
            );
        }
        let ly = Y0 + 14.0 * i as f64 + 6.0;
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"4\" fill=\"{}\"/>\
             <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
            X0 + W + 14.0,
            ly - 4.0,
            color(i),
            X0 + W + 30.0,
            ly + 1.0,
            esc(&m.name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Greedy accuracy versus mG-Pass@k per model, with 95% interval whiskers.
fn bars(results: &RunResults, k: u64) -> String {
    let n = results.models.len().max(1) as f64;
    let group = W / n;
    let bar = (group / 3.0).min(40.0);
    let width = X0 + W + 20.0;
    let height = Y0 + H + 50.0;
    let mut out = format!(
        "<svg class=\"bars\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" \
         role=\"img\" aria-label=\"Greedy versus mG-Pass@{k}\">"
    );
    y_axis(&mut out);
    let metrics = [
        (MetricKind::Greedy, "#999999", "Greedy"),
        (MetricKind::MGPassAtK { k }, "#1f77b4", "mG-Pass"),
    ];
    for (i, m) in results.models.iter().enumerate() {
        let gx = X0 + group * i as f64 + group / 2.0 - bar;
        for (j, (metric, fill, label)) in metrics.iter().enumerate() {
            let x = gx + bar * j as f64;
            let Some(e) = m.estimate(metric, None) else {
                continue;
            };
            let Some(v) = e.value else { continue };
            let _ = write!(
                out,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\">\
                 <title>{} {label}: {:.1}%</title></rect>",
                y_of(v),
                bar - 2.0,
                Y0 + H - y_of(v),
                esc(&m.name),
                100.0 * v
            );
            if let Some((lo, hi)) = e.ci {
                let cx = x + (bar - 2.0) / 2.0;
                let _ = write!(
                    out,
                    "<line class=\"axis\" x1=\"{cx:.1}\" y1=\"{:.1}\" x2=\"{cx:.1}\" y2=\"{:.1}\"/>",
                    y_of(lo),
                    y_of(hi)
                );
            }
        }
        let _ = write!(
            out,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
            gx + bar,
            Y0 + H + 16.0,
            esc(&m.name)
        );
    }
    let _ = write!(
        out,
        "<rect x=\"{X0}\" y=\"{:.1}\" width=\"12\" height=\"8\" fill=\"#999999\"/>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\">Greedy</text>\
         <rect x=\"{:.1}\" y=\"{:.1}\" width=\"12\" height=\"8\" fill=\"#1f77b4\"/>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\">mG-Pass@{k}</text>",
        Y0 + H + 32.0,
        X0 + 16.0,
        Y0 + H + 40.0,
        X0 + 90.0,
        Y0 + H + 32.0,
        X0 + 106.0,
        Y0 + H + 40.0
    );
    out.push_str("</svg>\n");
    out
}

/// A histogram of c/n over a model's problems (10 bins; c/n = 1 falls in the last one).
fn histogram(m: &ModelScore, i: usize) -> String {
    let mut bins = [0usize; 10];
    for p in m.problems.iter().filter(|p| p.n > 0) {
        let b = ((p.c as f64 / p.n as f64) * 10.0).floor() as usize;
        bins[b.min(9)] += 1;
    }
    let max = bins.iter().copied().max().unwrap_or(0).max(1) as f64;
    let (w, h, x0, y0) = (300.0, 140.0, 34.0, 10.0);
    let mut out = format!(
        "<svg class=\"histogram\" data-model=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" \
         role=\"img\" aria-label=\"c/n histogram\">",
        esc(&m.name),
        w + x0 + 10.0,
        h + y0 + 34.0,
        w + x0 + 10.0,
        h + y0 + 34.0
    );
    let bw = w / 10.0;
    for (b, &count) in bins.iter().enumerate() {
        let bh = h * count as f64 / max;
        let _ = write!(
            out,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"{}\">\
             <title>c/n in [{:.1}, {:.1}{}: {count} problems</title></rect>",
            x0 + bw * b as f64,
            y0 + h - bh,
            bw - 2.0,
            color(i),
            b as f64 / 10.0,
            (b + 1) as f64 / 10.0,
            if b == 9 { "]" } else { ")" }
        );
    }
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{x0}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\"/>\
         <text class=\"label\" x=\"{x0}\" y=\"{:.1}\">0</text>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">1</text>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">c/n · {} ({} problems, max bin {})</text>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        y0 + h,
        x0 + w,
        y0 + h,
        y0 + h + 14.0,
        x0 + w,
        y0 + h + 14.0,
        x0 + w / 2.0,
        y0 + h + 30.0,
        esc(&m.name),
        m.problems.len(),
        max as usize,
        x0 - 4.0,
        y0 + 8.0,
        max as usize
    );
    out.push_str("</svg>\n");
    out
}

impl Exporter for HtmlReport {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let title = format!("G-Pass@k report: {}", results.dataset);
        let mut out = format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
             <p>Run <code>{}</code> · dataset <code>{}</code> · sha256 <code>{}</code></p>\n",
            esc(&title),
            esc(&title),
            esc(&results.run_id),
            esc(&results.dataset),
            esc(&results.dataset_sha256)
        );
        for grid in summaries(results) {
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        if let Some(&k) = results.ks.iter().max() {
            let _ = write!(
                out,
                "<h2>G-Pass@{k} versus τ</h2>\n{}<h2>Greedy versus mG-Pass@{k}</h2>\n{}",
                curves(results, k),
                bars(results, k)
            );
        }
        if let Some(grid) = subset_grid(results) {
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        out.push_str("<h2>Correct samples per problem (c/n)</h2>\n");
        for (i, m) in results.models.iter().enumerate() {
            let _ = writeln!(out, "<div class=\"hist\">{}</div>", histogram(m, i));
        }
        out.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in notes(results) {
            let _ = writeln!(out, "<li>{}</li>", esc(&n));
        }
        out.push_str("</ul>\n");
        let counts: Vec<String> = results
            .models
            .iter()
            .map(|m| {
                format!(
                    "{}: greedy {}%, {} correct, {} wrong, {} no answer, {} missing",
                    m.name,
                    pct(m.estimate(&MetricKind::Greedy, None).and_then(|e| e.value)),
                    m.correct,
                    m.wrong,
                    m.no_answer,
                    m.missing
                )
            })
            .collect();
        let _ = write!(
            out,
            "<h2>Samples</h2>\n<pre>{}</pre>\n",
            esc(&counts.join("\n"))
        );
        if let Some(m) = &results.manifest {
            let text = serde_json::to_string_pretty(m)?;
            let _ = write!(
                out,
                "<h2>Manifest</h2>\n<pre id=\"manifest\">{}</pre>\n",
                esc(&text)
            );
        }
        out.push_str("</body>\n</html>\n");
        Ok(out.into_bytes())
    }
}
