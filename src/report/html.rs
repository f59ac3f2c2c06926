//! `report.html`: one self-contained, responsive page (inline CSS and SVG, no scripts, no external
//! references): an "incomplete" banner when the run is partial, percentage and count tables, what
//! the numbers mean, a G-Pass@k versus τ plot per k, greedy versus mG-Pass@k bars, with a verifier
//! its curves against voting (`verifier`), per-subset values, histograms of c per model on a shared
//! scale, and the manifest folded away.

use super::markup::{
    columns, coverage, headline_ks, notes, percent_table, search_grid, search_notes, short_names,
    subset_grid, with_short_names, Grid, MEANING,
};
use super::metric_label;
use super::text::esc;
use super::{Exporter, Interval};
use crate::metrics::MetricKind;
use crate::rundir::manifest::Status;
use crate::scoring::{ModelScore, RunResults};
use crate::stats::Estimate;
use crate::util::{abbreviate, printable};
use std::fmt::Write;

mod verifier;

pub struct HtmlReport;

/// Okabe–Ito: distinguishable with the common colour-vision deficiencies; yellow last, as it is
/// faint on white. Markers and dashes vary too, so no series depends on colour alone.
const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];
const DASHES: [&str; 4] = ["none", "7 3", "2 3", "9 3 2 3"];
const GREEDY_FILL: &str = "#E69F00";
const MGPASS_FILL: &str = "#0072B2";

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1em auto;padding:0 1em;\
color:#222;max-width:1600px}h1{font-size:1.5em}h2{font-size:1.25em}h1,h2,p,li,figcaption,summary{overflow-wrap:anywhere}\
.scroll{overflow-x:auto;max-width:100%;margin:0.5em 0 1.5em}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;white-space:nowrap}\
td:first-child,th:first-child{text-align:left;position:sticky;left:0;background:#fff}\
th,th:first-child{background:#f3f3f3}.t{text-align:left}\
td.reason{white-space:normal;min-width:14em;text-align:left}\
pre{background:#f7f7f7;padding:1em;overflow:auto;font-size:12px;max-height:40em}\
figure{margin:0 0 1.5em;min-width:0}svg.plot{display:block;width:100%;height:auto;max-width:680px}\
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,440px),1fr));gap:1em 2em}\
.hists{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,260px),1fr));gap:1em 2em}\
.hists svg.plot{max-width:420px}\
.legend{list-style:none;padding:0;margin:0.3em 0;display:flex;flex-wrap:wrap;gap:0.2em 1.2em;\
font-size:0.9em}.legend li{min-width:0;overflow-wrap:anywhere}\
.legend svg{width:30px;height:12px;vertical-align:middle;margin-right:0.3em;flex:none}\
.banner{border:2px solid #D55E00;background:#fff3e8;padding:0.6em 1em;margin:1em 0}\
.banner ul{margin:0.3em 0 0}.failed{color:#9b2c00}.failures li{overflow-wrap:anywhere}\
.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}\
.label{font-size:12.5px;fill:#444}.title{font-size:13px;fill:#222}\
table.headline{margin:0.5em 0 1em}table.headline td,table.headline th{white-space:normal}\
table.headline td:first-child,table.headline th:first-child{position:static;max-width:24em;\
overflow-wrap:anywhere}table.headline td small{display:block;color:#555;white-space:nowrap}\
table.models td{white-space:normal;overflow-wrap:anywhere}table.models td:first-child{white-space:nowrap}\
details.all{margin:0 0 1.5em}details.all summary{cursor:pointer;font-weight:600}\
@media (max-width:760px){table.headline,table.headline tbody,table.headline tr,\
table.headline td{display:block}table.headline thead{display:none}\
table.headline tr{border:1px solid #ccc;margin:0 0 0.8em;padding:0.3em 0.6em}\
table.headline td{border:none;display:grid;grid-template-columns:1fr auto 8.5em;\
align-items:baseline;gap:0 0.6em;padding:2px 0}table.headline td::before{content:attr(data-label);color:#444;text-align:left}\
table.headline td small{display:inline}table.headline td:first-child{display:block;font-weight:600}\
table.headline td:first-child::before{content:none}\
table.models tr:first-child{display:none}table.models,table.models tbody,table.models tr,\
table.models td{display:block}table.models tr{border:1px solid #ccc;margin:0 0 0.5em;padding:0.2em 0.6em}\
table.models td{border:none;padding:1px 0}table.models td:first-child{font-weight:600}}";

fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// Model i's marker centred on (x, y): eight shapes, so series differ without colour.
fn marker(i: usize, x: f64, y: f64) -> String {
    let c = color(i);
    let r = 4.0;
    let poly = |pts: &[(f64, f64)]| {
        let p: Vec<String> = pts
            .iter()
            .map(|(dx, dy)| format!("{:.1},{:.1}", x + dx * r, y + dy * r))
            .collect();
        format!("<polygon points=\"{}\" fill=\"{c}\"/>", p.join(" "))
    };
    match (i + i / PALETTE.len()) % 8 {
        0 => format!("<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{r}\" fill=\"{c}\"/>"),
        1 => poly(&[(-0.9, -0.9), (0.9, -0.9), (0.9, 0.9), (-0.9, 0.9)]),
        2 => poly(&[(0.0, -1.1), (1.0, 0.8), (-1.0, 0.8)]),
        3 => poly(&[(0.0, -1.2), (1.0, 0.0), (0.0, 1.2), (-1.0, 0.0)]),
        4 => poly(&[(0.0, 1.1), (1.0, -0.8), (-1.0, -0.8)]),
        5 => format!(
            "<path d=\"M{:.1} {y:.1}h{:.1}M{x:.1} {:.1}v{:.1}\" stroke=\"{c}\" stroke-width=\"2.5\"/>",
            x - r,
            2.0 * r,
            y - r,
            2.0 * r
        ),
        6 => format!(
            "<path d=\"M{:.1} {:.1}l{:.1} {:.1}M{:.1} {:.1}l{:.1} {:.1}\" stroke=\"{c}\" stroke-width=\"2.5\"/>",
            x - r,
            y - r,
            2.0 * r,
            2.0 * r,
            x - r,
            y + r,
            2.0 * r,
            -2.0 * r
        ),
        _ => format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"{:.1}\" fill=\"white\" stroke=\"{c}\" stroke-width=\"2\"/>",
            r - 0.5
        ),
    }
}

/// A small inline key: model i's dash pattern and marker.
fn key(i: usize) -> String {
    format!(
        "<svg viewBox=\"0 0 30 12\" aria-hidden=\"true\"><line x1=\"1\" y1=\"6\" x2=\"29\" y2=\"6\" \
         stroke=\"{}\" stroke-width=\"2\" stroke-dasharray=\"{}\"/>{}</svg>",
        color(i),
        DASHES[i % DASHES.len()],
        marker(i, 15.0, 6.0)
    )
}

/// A grid as a table that scrolls inside its own box, never the page.
fn table(grid: &Grid) -> String {
    // Numbers align right; columns of names (after the first, sticky one) left.
    let is_text =
        |c: &String| !c.starts_with(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '–');
    let text: Vec<bool> = (0..grid.header.len())
        .map(|i| i > 0 && grid.rows.iter().any(|r| r.get(i).is_some_and(is_text)))
        .collect();
    let class = |i: usize| {
        if text.get(i) == Some(&true) {
            " class=\"t\""
        } else {
            ""
        }
    };
    let mut out = String::from("<div class=\"scroll\"><table>\n<tr>");
    for (i, h) in grid.header.iter().enumerate() {
        let _ = write!(out, "<th{}>{}</th>", class(i), esc(h));
    }
    out.push_str("</tr>\n");
    for row in &grid.rows {
        out.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let _ = write!(out, "<td{}>{}</td>", class(i), esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

/// The manifest's cost ledger, and the judge's and verifier's calls, as a table; None when
/// nothing is priced.
fn cost_grid(results: &RunResults) -> Option<Grid> {
    let amount = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.6}"));
    let entries = super::summary::cost_entries(results);
    let billed = entries.iter().any(|(_, c)| c.billable_failures > 0);
    let rows: Vec<Vec<String>> = entries
        .into_iter()
        .map(|(name, c)| {
            // A total of nothing would read as a cheap model, not as one that never answered.
            let total = match c.per_sample {
                Some(_) => amount(Some(c.total)),
                None => "no request succeeded".into(),
            };
            let mut row = vec![
                name,
                total,
                amount(c.per_sample),
                amount(c.per_problem),
                c.currency.clone(),
                c.samples_without_usage.to_string(),
                c.price_source.clone(),
            ];
            if billed {
                row.push(c.billable_failures.to_string());
            }
            row
        })
        .collect();
    let mut header = vec![
        "Model",
        "Total",
        "Per sample",
        "Per problem",
        "Currency",
        "Samples without usage",
        "Price source",
    ];
    // Shown only when some model has them, so most reports keep their columns.
    if billed {
        header.push("Failed attempts maybe billed (not in Total)");
    }
    (!rows.is_empty()).then(|| Grid {
        title: "Cost".into(),
        header: header.iter().map(|h| h.to_string()).collect(),
        rows,
    })
}

/// A model's status in the run's manifest.
fn status(results: &RunResults, m: &ModelScore) -> String {
    let entry = results
        .manifest
        .as_ref()
        .and_then(|x| x.models.get(&m.name));
    entry.map_or_else(|| "no manifest entry".to_string(), |e| e.status.to_string())
}

/// The run's failures, each reason once with its models and advice; empty when nothing failed.
fn failures_section(results: &RunResults) -> String {
    let all = results
        .manifest
        .as_ref()
        .map(super::failures)
        .unwrap_or_default();
    if all.is_empty() {
        return String::new();
    }
    let mut out = String::from("<h2>Failures</h2>\n<ul class=\"failures\">\n");
    for f in &all {
        let _ = writeln!(
            out,
            "<li><strong>{}</strong>: <span class=\"failed\">{}</span><br>{}; {}</li>",
            esc(&f.who()),
            esc(&printable(&f.reason)),
            esc(&f.counts()),
            esc(&f.advice.text())
        );
    }
    out.push_str("</ul>\n");
    out
}

/// A model none of whose planned units gave a usable answer.
fn no_data(m: &ModelScore) -> bool {
    m.problems.iter().all(|p| p.n == 0 && p.greedy.is_none())
}

fn dataset_size(results: &RunResults) -> usize {
    results.models.first().map_or(0, |m| m.problems.len())
}

/// Why a run is partial, one line per cause; empty when it is complete.
fn partial_causes(results: &RunResults) -> Vec<String> {
    let mut causes = Vec::new();
    if let Some(m) = &results.manifest {
        if !m.status.is_complete() {
            causes.push(format!("run status: {}", m.status));
        }
    }
    for m in &results.models {
        let entry = results
            .manifest
            .as_ref()
            .and_then(|x| x.models.get(&m.name));
        let state = entry.map_or(Status::Complete, |e| e.status);
        if m.missing == 0 && state.is_complete() {
            continue;
        }
        let mut line = format!("{}: {}", m.name, status(results, m));
        if m.missing > 0 {
            match entry {
                Some(e) => write!(
                    line,
                    " — {} of {} units unusable",
                    m.missing, e.units_planned
                ),
                None => write!(line, " — {} units unusable", m.missing),
            }
            .expect("writing to a String");
        }
        causes.push(line);
    }
    causes
}

fn banner(results: &RunResults, causes: &[String]) -> String {
    let mut out = format!(
        "<div class=\"banner\" role=\"status\"><strong>Incomplete run.</strong> Values below rest \
         on fewer problems or samples than the dataset's {} problems; see \
         <em>Problems behind each value</em>.<ul>",
        dataset_size(results)
    );
    for c in causes {
        let _ = write!(out, "<li>{}</li>", esc(c));
    }
    out.push_str("</ul></div>\n");
    out
}

/// Every headline metric once, in report order (greedy and maj@n are shared by all k).
fn headline_metrics(results: &RunResults) -> Vec<(MetricKind, String)> {
    let mut all: Vec<(MetricKind, String)> = Vec::new();
    for k in headline_ks(results) {
        for c in columns(results, k) {
            if !all.iter().any(|a| a.0 == c.0) {
                all.push(c);
            }
        }
    }
    all
}

/// The headline: per model the tested family's metrics (the config's `metrics`, else the
/// largest k's), each cell its value over its interval. Narrow screens get one card per model
/// instead of a table (the CSS's `table.headline`), so nothing scrolls sideways.
fn headline_table(results: &RunResults, partial: bool) -> String {
    let metrics = results.tested_family();
    let total = dataset_size(results);
    let scope = if partial { "run incomplete; " } else { "" };
    let mut out = format!(
        "<h2>Headline: % with 95% CI over problems ({scope}{total} problems)</h2>\n\
         <table class=\"headline\">\n<thead><tr><th>model</th>"
    );
    let labels: Vec<String> = metrics.iter().map(|m| esc(&metric_label(m))).collect();
    for label in &labels {
        let _ = write!(out, "<th>{label}</th>");
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (model, (full, short)) in results.models.iter().zip(short_names(results)) {
        let _ = write!(out, "<tr><td title=\"{}\">{}</td>", esc(&full), esc(&short));
        for (m, label) in metrics.iter().zip(&labels) {
            let interval = Interval::of(model.estimate(m, None));
            let ci = (interval.bounds_text())
                .map_or(String::new(), |b| format!("<small>{}</small>", esc(&b)));
            let _ = write!(
                out,
                "<td data-label=\"{label}\"><b>{}</b>{ci}</td>",
                esc(&interval.value_text())
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
    out
}

/// Per model and metric, how many problems entered the value, out of the dataset's.
fn problem_counts(results: &RunResults) -> Grid {
    let cols = headline_metrics(results);
    let total = dataset_size(results);
    let mut header = vec!["model".to_string()];
    header.extend(cols.iter().map(|c| c.1.clone()));
    let rows = results
        .models
        .iter()
        .map(|m| {
            let mut row = vec![m.name.clone()];
            row.extend(cols.iter().map(|(metric, _)| {
                let used = m.estimate(metric, None).map_or(0, |e| e.problems);
                format!("{used}/{total}")
            }));
            row
        })
        .collect();
    Grid {
        title: format!("Problems behind each value (of {total})"),
        header,
        rows,
    }
}

/// Per headline k: a row per model with every metric as "value [low, high]" (percentages only).
fn percent_grids(results: &RunResults, partial: bool) -> Vec<Grid> {
    let total = dataset_size(results);
    headline_ks(results)
        .into_iter()
        .map(|k| {
            let (header, rows) = percent_table(results, k);
            let scope = if partial {
                format!("up to {total} problems; run incomplete")
            } else {
                format!("{total} problems")
            };
            Grid {
                title: format!("k = {k}: % with 95% CI over problems ({scope})"),
                header,
                rows,
            }
        })
        .collect()
}

/// The models: the short name every table and chart shows, the full name, and where they say
/// something else, the model id and the names the servers answered as; nothing when every name
/// is shown whole and is its model id.
fn models_table(results: &RunResults) -> String {
    let names = short_names(results);
    let shortened = names.iter().any(|(full, short)| full != short);
    let served = |m: &ModelScore| -> String {
        let names: Vec<&str> = m.served_models.keys().map(String::as_str).collect();
        names.join(", ")
    };
    let ids = results.models.iter().any(|m| m.model_id != m.name);
    let answered =
        (results.models.iter()).any(|m| !m.served_models.is_empty() && served(m) != m.model_id);
    if !shortened && !ids && !answered {
        return String::new();
    }
    let mut out =
        String::from("<h2>Models</h2>\n<div class=\"scroll\"><table class=\"models\">\n<tr>");
    if shortened {
        out.push_str("<th>short name</th>");
    }
    out.push_str("<th class=\"t\">model</th>");
    if ids {
        out.push_str("<th class=\"t\">model id</th>");
    }
    if answered {
        out.push_str("<th class=\"t\">served as</th>");
    }
    out.push_str("</tr>\n");
    for (m, (full, short)) in results.models.iter().zip(&names) {
        out.push_str("<tr>");
        if shortened {
            let _ = write!(out, "<td>{}</td>", esc(short));
        }
        let _ = write!(out, "<td class=\"t\">{}</td>", esc(full));
        if ids {
            let _ = write!(out, "<td class=\"t\">{}</td>", esc(&m.model_id));
        }
        if answered {
            let _ = write!(out, "<td class=\"t\">{}</td>", esc(&served(m)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

/// Sample counts per model (never percentages), with each model's status (reasons: Failures).
fn counts_table(results: &RunResults) -> String {
    let mut out = String::from(
        "<div class=\"scroll\"><table>\n<tr><th>model</th><th class=\"t\">status</th><th>n</th>\
         <th>coverage</th><th>greedy answered</th><th>correct</th><th>wrong</th><th>no answer</th>\
         <th>truncated</th><th>missing</th></tr>\n",
    );
    for (m, (_, short)) in results.models.iter().zip(short_names(results)) {
        let greedy = m.problems.iter().filter(|p| p.greedy.is_some()).count();
        let status = status(results, m);
        let class = if no_data(m) {
            "reason failed"
        } else {
            "reason"
        };
        let _ = writeln!(
            out,
            "<tr><td title=\"{}\">{}</td><td class=\"{class}\">{}</td><td>{}</td><td>{}</td>\
             <td>{greedy}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&m.name),
            esc(&short),
            esc(&status),
            m.n,
            esc(&coverage(m)),
            m.correct,
            m.wrong,
            m.no_answer,
            m.truncated,
            m.missing
        );
    }
    out.push_str("</table></div>\n");
    out
}

/// A plot frame: the plot area spans x0..x0+w and y0..y0+h inside the SVG's viewBox.
struct Frame {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

impl Frame {
    /// A fraction in [0, 1] on the y axis.
    fn y(&self, v: f64) -> f64 {
        self.y0 + self.h * (1.0 - v.clamp(0.0, 1.0))
    }

    /// Grid lines at 0, 25, …, 100%, both axes and the rotated y-axis title.
    fn percent_axis(&self, out: &mut String, title: &str) {
        for i in 0..=4 {
            let v = f64::from(i) / 4.0;
            let y = self.y(v);
            let _ = write!(
                out,
                "<line class=\"grid\" x1=\"{}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/>\
                 <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}%</text>",
                self.x0,
                self.x0 + self.w,
                self.x0 - 5.0,
                y + 4.0,
                25 * i
            );
        }
        self.axes(out, title);
    }

    fn axes(&self, out: &mut String, y_title: &str) {
        let (x0, y0, bottom) = (self.x0, self.y0, self.y0 + self.h);
        let cy = y0 + self.h / 2.0;
        let _ = write!(
            out,
            "<line class=\"axis\" x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{bottom:.1}\"/>\
             <line class=\"axis\" x1=\"{x0}\" y1=\"{bottom:.1}\" x2=\"{:.1}\" y2=\"{bottom:.1}\"/>\
             <text class=\"title\" transform=\"translate(13 {cy:.1}) rotate(-90)\" \
             text-anchor=\"middle\">{}</text>",
            x0 + self.w,
            esc(y_title)
        );
    }
}

/// An SVG that scales to its box: `width` 100% with the viewBox keeping its proportions.
fn svg_open(class: &str, width: f64, height: f64, label: &str) -> String {
    format!(
        "<svg class=\"plot {class}\" width=\"100%\" viewBox=\"0 0 {width:.0} {height:.0}\" \
         preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{}\">",
        esc(label)
    )
}

/// A model's G-Pass@k points (τ, estimate) for τ = 0 (Pass@k) and every τ of the run.
fn tau_points<'a>(results: &RunResults, m: &'a ModelScore, k: u64) -> Vec<(f64, &'a Estimate)> {
    let mut points = Vec::new();
    let pass = m.estimate(&MetricKind::PassAtK { k }, None);
    points.extend(pass.map(|e| (0.0, e)));
    for t in &results.taus {
        let metric = MetricKind::GPassAtK { k, tau: t.clone() };
        points.extend(m.estimate(&metric, None).map(|e| (t.to_f64(), e)));
    }
    points.retain(|(_, e)| e.value.is_some());
    points
}

/// G-Pass@k versus τ for one k: a dashed, marked line per model and an HTML legend with full names
/// (HTML wraps where SVG text would clip); models without values say why in the legend.
fn curves(results: &RunResults, k: u64) -> String {
    let f = Frame {
        x0: 56.0,
        y0: 12.0,
        w: 470.0,
        h: 230.0,
    };
    let x_of = |t: f64| f.x0 + f.w * t;
    let mut svg = svg_open(
        "curves",
        f.x0 + f.w + 16.0,
        f.y0 + f.h + 44.0,
        &format!("G-Pass@{k} versus tau"),
    );
    f.percent_axis(&mut svg, &format!("G-Pass@{k} (%)"));
    for i in 0..=4 {
        let t = f64::from(i) / 4.0;
        let _ = write!(
            svg,
            "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{t}</text>",
            x_of(t),
            f.y0 + f.h + 15.0
        );
    }
    let _ = write!(
        svg,
        "<text class=\"title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">threshold τ (τ = 0 shows Pass@{k})</text>",
        f.x0 + f.w / 2.0,
        f.y0 + f.h + 36.0
    );
    let mut legend = String::from("<ul class=\"legend\">");
    let names = short_names(results);
    for (i, m) in results.models.iter().enumerate() {
        let short = &names[i].1;
        let points = tau_points(results, m, k);
        if points.is_empty() {
            let _ = write!(
                legend,
                "<li class=\"failed\">{}{}: no values ({})</li>",
                key(i),
                esc(short),
                esc(&status(results, m))
            );
            continue;
        }
        let y_of = |e: &Estimate| f.y(e.value.unwrap_or(0.0));
        let path: Vec<String> = points
            .iter()
            .map(|&(t, e)| format!("{:.1},{:.1}", x_of(t), y_of(e)))
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"curve\" data-model=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" \
             stroke-dasharray=\"{}\" points=\"{}\"/>",
            esc(&m.name),
            color(i),
            DASHES[i % DASHES.len()],
            path.join(" ")
        );
        for &(t, e) in &points {
            let _ = write!(
                svg,
                "<g>{}<title>{}: {} %</title></g>",
                marker(i, x_of(t), y_of(e)),
                esc(&m.name),
                Interval::of(Some(e))
            );
        }
        let _ = write!(
            legend,
            "<li title=\"{}\">{}{}</li>",
            esc(&m.name),
            key(i),
            esc(short)
        );
    }
    format!("<figure>{svg}</svg>{legend}</ul></figure>\n")
}

/// Approximate width of a 12.5px label character, generous (capitals and `…` are wide) so
/// estimates err towards more room.
const CHAR_W: f64 = 8.5;

/// Greedy accuracy versus mG-Pass@k per model, with 95% interval whiskers. Model labels stay
/// horizontal when they fit their group, else turn 45° (with room reserved so none is clipped).
fn bars(results: &RunResults, k: u64) -> String {
    let count = results.models.len().max(1);
    let (w, h) = (470.0, 230.0);
    let group = w / count as f64;
    // The models' short names, as every table shows them (the Models table has them in full).
    let labels: Vec<String> = short_names(results).into_iter().map(|(_, s)| s).collect();
    let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64 * CHAR_W;
    let rotate = longest > group - 8.0;
    let reach = if rotate {
        longest * std::f64::consts::FRAC_1_SQRT_2
    } else {
        0.0
    };
    let f = Frame {
        x0: (reach - group / 2.0 + 8.0).max(56.0),
        y0: 12.0,
        w,
        h,
    };
    let height = f.y0 + f.h + 24.0 + reach;
    let mut svg = svg_open(
        "bars",
        f.x0 + f.w + 16.0,
        height,
        &format!("Greedy versus mG-Pass@{k}"),
    );
    f.percent_axis(&mut svg, "accuracy (%)");
    let bar = (group / 3.0).min(40.0);
    let metrics = [
        (MetricKind::Greedy, GREEDY_FILL, "Greedy"),
        (MetricKind::MGPassAtK { k }, MGPASS_FILL, "mG-Pass"),
    ];
    for (i, m) in results.models.iter().enumerate() {
        let cx = f.x0 + group * (i as f64 + 0.5);
        let mut drawn = false;
        for (j, (metric, fill, label)) in metrics.iter().enumerate() {
            let Some(e) = m.estimate(metric, None) else {
                continue;
            };
            let Some(v) = e.value else { continue };
            drawn = true;
            let x = cx - bar + bar * j as f64;
            let _ = write!(
                svg,
                "<rect class=\"bar\" x=\"{x:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"{fill}\">\
                 <title>{} {label}: {} %</title></rect>",
                f.y(v),
                bar - 2.0,
                f.y0 + f.h - f.y(v),
                esc(&m.name),
                Interval::of(Some(e))
            );
            if let Some((lo, hi)) = e.ci {
                let wx = x + (bar - 2.0) / 2.0;
                let _ =
                    write!(
                    svg,
                    "<path class=\"axis\" d=\"M{:.1} {:.1}h6M{wx:.1} {:.1}V{:.1}M{:.1} {:.1}h6\"/>",
                    wx - 3.0, f.y(lo), f.y(lo), f.y(hi), wx - 3.0, f.y(hi)
                );
            }
        }
        if !drawn {
            let _ = write!(
                svg,
                "<text class=\"label no-data\" transform=\"translate({:.1} {:.1}) rotate(-90)\">no values ({})</text>",
                cx + 4.0,
                f.y0 + f.h - 6.0,
                esc(&abbreviate(&status(results, m), 24))
            );
        }
        let ly = f.y0 + f.h + 15.0;
        let placement = if rotate {
            format!("text-anchor=\"end\" transform=\"translate({cx:.1} {ly:.1}) rotate(-45)\"")
        } else {
            format!("text-anchor=\"middle\" x=\"{cx:.1}\" y=\"{ly:.1}\"")
        };
        let _ = write!(
            svg,
            "<text class=\"label model\" {placement}><title>{}</title>{}</text>",
            esc(&m.name),
            esc(&labels[i])
        );
    }
    format!("<figure>{svg}</svg>{}</figure>\n", bars_legend(k))
}

/// The bar colours.
fn bars_legend(k: u64) -> String {
    format!(
        "<ul class=\"legend\"><li><svg viewBox=\"0 0 30 12\" aria-hidden=\"true\"><rect x=\"8\" y=\"1\" \
         width=\"14\" height=\"10\" fill=\"{GREEDY_FILL}\"/></svg>Greedy</li><li><svg viewBox=\"0 0 30 12\" \
         aria-hidden=\"true\"><rect x=\"8\" y=\"1\" width=\"14\" height=\"10\" fill=\"{MGPASS_FILL}\"/></svg>\
         mG-Pass@{k}</li><li>whiskers: 95% CI</li></ul>"
    )
}

/// How many of a model's problems have c = 0, 1, …, n correct samples (problems without a usable
/// sample are left out).
fn c_counts(m: &ModelScore) -> Vec<usize> {
    let mut bins = vec![0usize; m.n as usize + 1];
    for p in m.problems.iter().filter(|p| p.n > 0) {
        bins[(p.c as usize).min(m.n as usize)] += 1;
    }
    bins
}

/// A histogram's caption: the model's short name (the full one on hover and in the Models
/// table) and what its bars count.
fn hist_caption(m: &ModelScore, short: &str, bins: &[usize]) -> String {
    let n = m.n as usize;
    let scored: usize = bins.iter().sum();
    let fewer = m
        .problems
        .iter()
        .filter(|p| p.n > 0 && p.n < u64::from(m.n))
        .count();
    let mut caption = format!(
        "<figcaption><strong title=\"{}\">{}</strong><br>",
        esc(&m.name),
        esc(short)
    );
    if scored > 0 {
        let _ = write!(
            caption,
            "{scored} problems scored · never solved (c = 0): {} · always solved (c = n): {} · ",
            bins[0], bins[n]
        );
    }
    if fewer > 0 {
        let _ = write!(caption, "{fewer} with fewer than n samples · ");
    }
    if scored < m.problems.len() {
        let _ = write!(
            caption,
            "{} without a usable sample",
            m.problems.len() - scored
        );
    }
    format!("{}</figcaption>", caption.trim_end_matches(" · "))
}

/// The histogram of c for one model: one bar per value 0…n on the y-scale `top` shared by every
/// model, counts printed over c = 0 (never solved) and c = n (always solved).
fn histogram(results: &RunResults, m: &ModelScore, i: usize, top: usize) -> String {
    let bins = c_counts(m);
    let n = m.n as usize;
    let scored: usize = bins.iter().sum();
    let short = (short_names(results).into_iter())
        .find(|(full, _)| *full == m.name)
        .map_or_else(|| m.name.clone(), |(_, s)| s);
    let caption = hist_caption(m, &short, &bins);
    if scored == 0 {
        return format!(
            "<figure class=\"hist\" data-model=\"{}\">{caption}<p class=\"failed\">No samples to \
             count: {}</p></figure>\n",
            esc(&m.name),
            esc(&status(results, m))
        );
    }
    let f = Frame {
        x0: 44.0,
        y0: 16.0,
        w: 300.0,
        h: 130.0,
    };
    let mut svg = svg_open(
        "histogram",
        f.x0 + f.w + 8.0,
        f.y0 + f.h + 40.0,
        &format!("histogram of c for {}", m.name),
    );
    let top = top.max(1) as f64;
    let _ = write!(
        svg,
        "<line class=\"grid\" x1=\"{}\" y1=\"{}\" x2=\"{:.1}\" y2=\"{}\"/>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\
         <text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>",
        f.x0,
        f.y0,
        f.x0 + f.w,
        f.y0,
        f.x0 - 5.0,
        f.y0 + 4.0,
        top as usize,
        f.x0 - 5.0,
        f.y0 + f.h + 4.0
    );
    f.axes(&mut svg, "problems");
    let bw = f.w / (n + 1) as f64;
    let step = (n + 1).div_ceil(8).max(1);
    for (c, &count) in bins.iter().enumerate() {
        let bh = f.h * count as f64 / top;
        let x = f.x0 + bw * c as f64;
        let _ = write!(
            svg,
            "<rect class=\"cbar\" data-c=\"{c}\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" \
             fill=\"{}\"><title>c = {c}: {count} problems</title></rect>",
            x + 0.5,
            f.y0 + f.h - bh,
            (bw - 1.0).max(0.5),
            color(i)
        );
        let tick = c == 0 || c == n || (c % step == 0 && n - c >= step.div_ceil(2).max(1));
        if tick {
            let _ = write!(
                svg,
                "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{c}</text>",
                x + bw / 2.0,
                f.y0 + f.h + 14.0
            );
        }
        if c == 0 || c == n {
            let _ = write!(
                svg,
                "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{count}</text>",
                x + bw / 2.0,
                f.y0 + f.h - bh - 3.0
            );
        }
    }
    let _ = write!(
        svg,
        "<text class=\"title\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">c = correct samples of n = {n}</text>",
        f.x0 + f.w / 2.0,
        f.y0 + f.h + 32.0
    );
    format!(
        "<figure class=\"hist\" data-model=\"{}\">{caption}{svg}</svg></figure>\n",
        esc(&m.name)
    )
}

fn histograms(results: &RunResults) -> String {
    let top = results
        .models
        .iter()
        .flat_map(|m| c_counts(m).into_iter())
        .max()
        .unwrap_or(0);
    let mut out = format!(
        "<h2>Correct samples per problem (c of n)</h2>\n<p>Problems per value of c; one y-scale \
         (0–{top}) for every model. c = 0 and c = n are the never- and always-solved problems \
         that drive G-Pass@k at τ = 1.</p>\n<div class=\"hists\">\n"
    );
    for (i, m) in results.models.iter().enumerate() {
        out.push_str(&histogram(results, m, i, top));
    }
    out.push_str("</div>\n");
    out
}

impl HtmlReport {
    fn head(results: &RunResults, partial: bool) -> String {
        let title = format!(
            "G-Pass@k report: {}{}",
            results.label(),
            if partial { " (incomplete)" } else { "" }
        );
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}{}</style>\n</head>\n<body>\n<h1>{}</h1>\n\
             <p>Run <code>{}</code> · dataset <code>{}</code> · sha256 <code>{}</code></p>\n",
            esc(&title),
            super::found::STYLE,
            esc(&title),
            esc(&results.run_id),
            esc(&results.dataset),
            esc(&results.dataset_sha256)
        )
    }

    fn plots(results: &RunResults) -> String {
        let mut out = String::from("<h2>G-Pass@k versus τ</h2>\n<div class=\"plots\">\n");
        for &k in &results.ks {
            let _ = writeln!(out, "<div><h3>k = {k}</h3>{}</div>", curves(results, k));
        }
        out.push_str("</div>\n");
        if let Some(&k) = results.ks.iter().max() {
            let _ = write!(
                out,
                "<h2>Greedy versus mG-Pass@{k}</h2>\n{}",
                bars(results, k)
            );
        }
        out
    }
}

/// "What these numbers mean", a list of terms.
fn meaning() -> String {
    let mut out = String::from("<h2>What these numbers mean</h2>\n<ul>\n");
    for (term, text) in MEANING {
        let _ = writeln!(out, "<li><b>{}</b>: {}</li>", esc(term), esc(text));
    }
    out.push_str("</ul>\n");
    out
}

impl Exporter for HtmlReport {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn export(&self, results: &RunResults) -> anyhow::Result<Vec<u8>> {
        let causes = partial_causes(results);
        let partial = !causes.is_empty();
        let mut out = HtmlReport::head(results, partial);
        if partial {
            out.push_str(&banner(results, &causes));
        }
        out.push_str(&failures_section(results));
        out.push_str(&models_table(results));
        out.push_str(&headline_table(results, partial));
        let names = short_names(results);
        let short = |grid: Grid| with_short_names(grid, &names);
        let grids: Vec<Grid> = percent_grids(results, partial)
            .into_iter()
            .map(short)
            .collect();
        let ks: Vec<String> = headline_ks(results).iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "<details class=\"all\">\n<summary>Every metric, k = {} ({} table{})</summary>",
            ks.join(", "),
            grids.len(),
            if grids.len() == 1 { "" } else { "s" }
        );
        for grid in grids {
            let _ = write!(out, "<h3>{}</h3>\n{}", esc(&grid.title), table(&grid));
        }
        out.push_str("</details>\n");
        out.push_str(&meaning());
        if partial {
            let grid = short(problem_counts(results));
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        let _ = write!(
            out,
            "<h2>Samples per model (counts)</h2>\n{}",
            counts_table(results)
        );
        // Models by the short names every table here shows (the Models table has them in full).
        let mut found = super::found_summary(results);
        for m in &mut found.models {
            if let Some((_, s)) = names.iter().find(|(full, _)| *full == m.model) {
                m.model = s.clone();
            }
        }
        out.push_str(&super::found_html(&found));
        if let Some(grid) = cost_grid(results).map(short) {
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        if let Some(grid) = search_grid(results).map(short) {
            let _ = write!(out, "<h2>{}</h2>\n{}<ul>\n", esc(&grid.title), table(&grid));
            for n in search_notes(results) {
                let _ = writeln!(out, "<li>{}</li>", esc(&n));
            }
            out.push_str("</ul>\n");
        }
        let provenance = super::imported::provenance(results);
        if !provenance.is_empty() {
            out.push_str("<h2>Imported from</h2>\n<ul>\n");
            for l in &provenance {
                let _ = writeln!(out, "<li>{}</li>", esc(l));
            }
            out.push_str("</ul>\n");
        }
        for grid in super::imported::grids(results).into_iter().map(short) {
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        out.push_str(&HtmlReport::plots(results));
        out.push_str(&verifier::section(results));
        if let Some(grid) = subset_grid(results).map(short) {
            let _ = write!(out, "<h2>{}</h2>\n{}", esc(&grid.title), table(&grid));
        }
        out.push_str(&histograms(results));
        out.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in notes(results) {
            let _ = writeln!(out, "<li>{}</li>", esc(&n));
        }
        out.push_str("</ul>\n");
        if let Some(m) = &results.manifest {
            let text = serde_json::to_string_pretty(m)?;
            let _ = write!(
                out,
                "<details>\n<summary>Manifest (manifest.json)</summary>\n<pre id=\"manifest\">{}</pre>\n</details>\n",
                esc(&text)
            );
        }
        out.push_str("</body>\n</html>\n");
        Ok(out.into_bytes())
    }
}
