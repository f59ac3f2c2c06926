//! The trend page of `gpassk history`: one plot per headline metric of a dataset (a line per
//! model with its intervals, a marker where something changed), the values table and the changes.

use crate::report::Interval;
use std::fmt::Write;

/// One point of a trend: a run's value of one metric for one model, with its interval and what
/// changed for that model in that run.
#[derive(Debug, Clone)]
pub struct Point {
    pub label: String,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub changes: Vec<String>,
}

/// One line of a trend plot: a model's points over the runs.
#[derive(Debug, Clone)]
pub struct Series {
    pub model: String,
    pub points: Vec<Point>,
}

/// A trend plot: one headline metric of one dataset over the runs.
#[derive(Debug, Clone)]
pub struct Trend {
    pub dataset: String,
    pub metric: String,
    pub series: Vec<Series>,
    /// Per run, what changed for every model (settings of the run).
    pub run_changes: Vec<Vec<String>>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const COLORS: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];

/// One trend as an inline SVG: a line per model with 95% interval whiskers, runs on the x axis,
/// and a dashed vertical marker (with its reasons as a tooltip) at every run where something
/// changed.
pub fn trend_svg(t: &Trend) -> String {
    let runs = t.series.iter().map(|s| s.points.len()).max().unwrap_or(0);
    let (x0, y0, w, h) = (56.0, 12.0, 520.0, 220.0);
    let x = |i: usize| x0 + w * (i as f64 + 0.5) / runs.max(1) as f64;
    let y = |v: f64| y0 + h * (1.0 - v.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg class=\"plot trend\" width=\"100%\" viewBox=\"0 0 {:.0} {:.0}\" \
         preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{} over runs\">",
        x0 + w + 16.0,
        y0 + h + 40.0,
        esc(&t.metric)
    );
    for i in 0..=4 {
        let v = f64::from(i) / 4.0;
        let _ = write!(
            svg,
            "<line class=\"grid\" x1=\"{x0}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/>\
             <text class=\"label\" x=\"{2:.1}\" y=\"{3:.1}\" text-anchor=\"end\">{4}%</text>",
            y(v),
            x0 + w,
            x0 - 5.0,
            y(v) + 4.0,
            25 * i
        );
    }
    run_labels(t, &mut svg, runs, x, y0 + h);
    for (si, s) in t.series.iter().enumerate() {
        let c = COLORS[si % COLORS.len()];
        let pts: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.value.map(|v| format!("{:.1},{:.1}", x(i), y(v))))
            .collect();
        let _ = write!(
            svg,
            "<polyline class=\"trend-line\" data-model=\"{}\" fill=\"none\" stroke=\"{c}\" \
             stroke-width=\"2\" points=\"{}\"/>",
            esc(&s.model),
            pts.join(" ")
        );
        points(&mut svg, s, c, &x, &y);
    }
    let _ = write!(
        svg,
        "<line class=\"axis\" x1=\"{x0}\" y1=\"{y0}\" x2=\"{x0}\" y2=\"{0:.1}\"/>\
         <line class=\"axis\" x1=\"{x0}\" y1=\"{0:.1}\" x2=\"{1:.1}\" y2=\"{0:.1}\"/></svg>",
        y0 + h,
        x0 + w
    );
    svg
}

/// A series' points: each with its interval whisker and value tooltip, a ring where something
/// changed for the model, and a cross on the axis where it has no value but a reason.
fn points(
    svg: &mut String,
    s: &Series,
    c: &str,
    x: &impl Fn(usize) -> f64,
    y: &impl Fn(f64) -> f64,
) {
    for (i, p) in s.points.iter().enumerate() {
        let Some(v) = p.value else {
            // No value where something changed (a model that failed): a cross in the
            // model's colour on the axis, with the reason, so the change is not invisible.
            if !p.changes.is_empty() {
                let (cx, cy) = (x(i), y(0.0));
                let _ = write!(
                    *svg,
                    "<path class=\"missing\" d=\"M{:.1} {:.1}l8 8m0 -8l-8 8\" stroke=\"{c}\" \
                     stroke-width=\"2.5\"><title>{}: {}: no value; {}</title></path>",
                    cx - 4.0,
                    cy - 4.0,
                    esc(&s.model),
                    esc(&p.label),
                    esc(&p.changes.join("; "))
                );
            }
            continue;
        };
        if let Some((lo, hi)) = p.ci {
            let _ = write!(
                *svg,
                "<path class=\"axis\" d=\"M{0:.1} {1:.1}V{2:.1}\" stroke=\"{c}\"/>",
                x(i),
                y(lo),
                y(hi)
            );
        }
        let _ = write!(
            *svg,
            "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4\" fill=\"{c}\"><title>{} {}: {} %</title></circle>",
            x(i),
            y(v),
            esc(&s.model),
            esc(&p.label),
            Interval::percent(Some(v), p.ci)
        );
        // What changed for this model alone is marked on its own point.
        if !p.changes.is_empty() {
            let _ = write!(
                *svg,
                "<circle class=\"change\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"8\" fill=\"none\" \
                 stroke=\"#D55E00\" stroke-width=\"2\"><title>{}: {}</title></circle>",
                x(i),
                y(v),
                esc(&s.model),
                esc(&p.changes.join("; "))
            );
        }
    }
}

/// The run labels under the x axis, and a dashed marker (its reasons as a tooltip) at every
/// run whose settings changed for all models; `bottom` is the plot area's lower edge.
fn run_labels(t: &Trend, svg: &mut String, runs: usize, x: impl Fn(usize) -> f64, bottom: f64) {
    let (y0, h) = (12.0, bottom - 12.0);
    let label = |i: usize| {
        t.series
            .iter()
            .find_map(|s| s.points.get(i))
            .map_or(String::new(), |p| p.label.clone())
    };
    // Every `step`-th label, so labels (about 7 px a character at 12 px) never overlap.
    let widest = (0..runs)
        .map(|i| label(i).chars().count())
        .max()
        .unwrap_or(0);
    let spacing = if runs > 1 { x(1) - x(0) } else { f64::MAX };
    let step = ((widest as f64 * 7.0 + 8.0) / spacing).ceil().max(1.0) as usize;
    for i in 0..runs {
        let reasons = t.run_changes.get(i).cloned().unwrap_or_default();
        if i % step == 0 {
            let _ = write!(
                *svg,
                "<text class=\"label\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>",
                x(i),
                y0 + h + 16.0,
                esc(&label(i))
            );
        }
        if !reasons.is_empty() {
            let _ = write!(
                *svg,
                "<line class=\"change\" x1=\"{0:.1}\" y1=\"{y0}\" x2=\"{0:.1}\" y2=\"{1:.1}\" \
                 stroke=\"#D55E00\" stroke-width=\"2\" stroke-dasharray=\"5 3\"><title>{2}</title></line>\
                 <text class=\"label\" x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\">⚑</text>",
                x(i),
                y0 + h,
                esc(&reasons.join("; ")),
                y0 + h + 32.0
            );
        }
    }
}

/// The plot's legend: each model's colour beside its whole name (wrapped, never cut), and what
/// the markers mean when the plot has any.
fn legend(t: &Trend) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (si, s) in t.series.iter().enumerate() {
        let _ = write!(
            out,
            "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            COLORS[si % COLORS.len()],
            esc(&s.model)
        );
    }
    let marked = t
        .series
        .iter()
        .any(|s| s.points.iter().any(|p| !p.changes.is_empty()));
    if marked {
        out.push_str("<li><span class=\"ring\"></span>changed for that model (hover for why)</li>");
    }
    let lost = t
        .series
        .iter()
        .any(|s| (s.points.iter()).any(|p| p.value.is_none() && !p.changes.is_empty()));
    if lost {
        out.push_str("<li><b class=\"cross\">×</b>no value for that model (hover for why)</li>");
    }
    if t.run_changes.iter().any(|c| !c.is_empty()) {
        out.push_str("<li>⚑ settings changed for every model</li>");
    }
    out.push_str("</ul>");
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1em auto;padding:0 1em;\
color:#222;max-width:1600px}h1,h2,h3,p,li{overflow-wrap:anywhere}\
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,440px),1fr));gap:1em 2em}\
svg.plot{display:block;width:100%;height:auto;max-width:700px}\
.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}\
.label{font-size:12px;fill:#444}.changes li{color:#9b2c00}\
.legend{list-style:none;padding:0;margin:.3em 0;font-size:13px;overflow-wrap:anywhere}\
.legend li{margin:.15em 0}figure{margin:0}.cross{color:#444;margin-right:.4em}.swatch{display:inline-block;width:1.4em;height:.35em;\
vertical-align:middle;margin-right:.4em}.ring{display:inline-block;width:.7em;height:.7em;\
border:2px solid #D55E00;border-radius:50%;vertical-align:middle;margin-right:.4em}";

/// The history page: a trend plot per headline metric, then a table (header and text cells,
/// escaped here) and the list of changes.
pub fn html_page(
    trends: &[Trend],
    header: &[&str],
    rows: &[Vec<String>],
    changes: &[String],
) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>gpassk history</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Run history</h1>\n"
    );
    let mut dataset = None;
    for t in trends {
        if dataset != Some(&t.dataset) {
            if dataset.is_some() {
                out.push_str("</div>\n");
            }
            let _ = write!(out, "<h2>{}</h2>\n<div class=\"plots\">\n", esc(&t.dataset));
            dataset = Some(&t.dataset);
        }
        let _ = writeln!(
            out,
            "<figure><h3>{}</h3>{}{}</figure>",
            esc(&t.metric),
            trend_svg(t),
            legend(t)
        );
    }
    if dataset.is_some() {
        out.push_str("</div>\n");
    }
    if !changes.is_empty() {
        out.push_str("<h2>Changes</h2>\n<ul class=\"changes\">\n");
        for c in changes {
            let _ = writeln!(out, "<li>{}</li>", esc(c));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("<h2>Values</h2>\n<div class=\"scroll\"><table>\n<tr>");
    for h in header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model's own change rings its own point; a settings change of the run is the dashed
    /// line; the legend names every model whole.
    #[test]
    fn trend_marks_changed_runs_and_escapes_text() {
        let point = |v: f64, changes: Vec<String>| Point {
            label: "<w1>".into(),
            value: Some(v),
            ci: Some((v / 2.0, v)),
            changes,
        };
        let t = Trend {
            dataset: "d".into(),
            metric: "Pass@2".into(),
            series: vec![Series {
                model: "m<script>".into(),
                points: vec![
                    point(0.5, vec![]),
                    point(0.6, vec!["system fingerprint: a → <b>".into()]),
                ],
            }],
            run_changes: vec![vec![], vec!["grader: rule → judge".into()]],
        };
        let svg = trend_svg(&t);
        assert_eq!(svg.matches("<line class=\"change\"").count(), 1, "{svg}");
        assert!(svg.contains("grader: rule → judge"));
        assert_eq!(svg.matches("<circle class=\"change\"").count(), 1, "{svg}");
        assert!(svg.contains("m&lt;script&gt;: system fingerprint: a → &lt;b&gt;"));
        assert!(!svg.contains("<script>") && !svg.contains("<w1>"));
        assert_eq!(svg.matches("<circle").count(), 3);
        let legend = legend(&t);
        assert!(
            legend.contains("m&lt;script&gt;</li>") && legend.contains("changed for that model")
        );
        let quiet = Trend {
            run_changes: vec![vec![], vec![]],
            ..t.clone()
        };
        assert_eq!(
            trend_svg(&quiet).matches("<line class=\"change\"").count(),
            0
        );
    }
}
