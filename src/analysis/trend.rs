//! The trend page of `gpassk history`: per dataset, one plot per headline metric (a line per
//! model with its intervals; a ring where something changed for a model, a triangle where a
//! change from the run before is flagged, a numbered marker under each run with notes), the
//! notes themselves (readable without hovering), and the values table (a row per run and model).

use crate::report::Interval;
use std::fmt::Write;

/// One point of a trend: a run's value of one metric for one model, with its interval, what
/// changed for that model in that run, and the flag of the change from the run before.
#[derive(Debug, Clone)]
pub struct Point {
    pub label: String,
    pub value: Option<f64>,
    pub ci: Option<(f64, f64)>,
    pub changes: Vec<String>,
    pub flag: Option<Flag>,
}

/// A change from the run before that the paired test flags (compare's and history's rule).
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    pub up: bool,
    /// `REGRESSED -12.1 points, p (Holm) 0.0060`.
    pub note: String,
}

/// One line of a trend plot: a model's points over the runs; `name` is how the plot names it.
#[derive(Debug, Clone)]
pub struct Series {
    pub model: String,
    pub name: String,
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
    /// Per run, the number of its notes on the page (none: nothing to say).
    pub numbers: Vec<Option<usize>>,
}

/// One dataset's part of the page: its plots, the notes per run (numbered as on the plots), the
/// values table, and the model names the plots and the table shorten.
pub struct DatasetPage<'a> {
    pub dataset: &'a str,
    pub trends: Vec<&'a Trend>,
    /// (number, run label, lines) for each run with something to say.
    pub notes: Vec<(usize, String, Vec<String>)>,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// (short, full) of each model whose name was shortened.
    pub names: Vec<(String, String)>,
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// The models' line colours (Okabe–Ito, told apart with colour-blindness).
const COLORS: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];
/// Markers (changes, flags, note numbers) are drawn in ink, never in a model's colour.
const INK: &str = "#111";

/// One trend as an inline SVG: a line per model with 95% interval whiskers, runs on the x axis,
/// a dashed vertical line where the settings changed for every model, and under the axis at
/// every run with notes its number.
pub fn trend_svg(t: &Trend) -> String {
    let runs = t.series.iter().map(|s| s.points.len()).max().unwrap_or(0);
    let (x0, y0, w, h) = (56.0, 12.0, 520.0, 220.0);
    let x = |i: usize| x0 + w * (i as f64 + 0.5) / runs.max(1) as f64;
    let y = |v: f64| y0 + h * (1.0 - v.clamp(0.0, 1.0));
    let mut svg = format!(
        "<svg class=\"plot trend\" width=\"100%\" viewBox=\"0 0 {:.0} {:.0}\" \
         preserveAspectRatio=\"xMinYMin meet\" role=\"img\" aria-label=\"{} over runs\">",
        x0 + w + 16.0,
        y0 + h + 48.0,
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

/// A series' points: each with its interval whisker and value tooltip, an ink ring where
/// something changed for the model, an ink triangle (down or up) where the change from the run
/// before is flagged, and a cross on the axis where it has no value but a reason.
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
                    esc(&s.name),
                    esc(&p.label),
                    esc(&p.changes.join("; "))
                );
            }
            continue;
        };
        let (px, py) = (x(i), y(v));
        if let Some((lo, hi)) = p.ci {
            let _ = write!(
                *svg,
                "<path class=\"axis\" d=\"M{px:.1} {:.1}V{:.1}\" stroke=\"{c}\"/>",
                y(lo),
                y(hi)
            );
        }
        let _ = write!(
            *svg,
            "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"4\" fill=\"{c}\"><title>{} {}: {} %</title></circle>",
            esc(&s.name),
            esc(&p.label),
            Interval::percent(Some(v), p.ci)
        );
        // What changed for this model alone is marked on its own point.
        if !p.changes.is_empty() {
            let _ = write!(
                *svg,
                "<circle class=\"change\" cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"8\" fill=\"none\" \
                 stroke=\"{INK}\" stroke-width=\"1.5\" stroke-dasharray=\"3 2\"><title>{}: {}</title></circle>",
                esc(&s.name),
                esc(&p.changes.join("; "))
            );
        }
        if let Some(f) = &p.flag {
            // Beside the point, pointing the way it moved.
            let d = if f.up {
                format!("M{:.1} {:.1}l6 -9l6 9z", px + 7.0, py + 3.0)
            } else {
                format!("M{:.1} {:.1}l6 9l6 -9z", px + 7.0, py - 3.0)
            };
            let _ = write!(
                *svg,
                "<path class=\"flag {}\" d=\"{d}\" fill=\"{INK}\" stroke=\"#fff\" stroke-width=\"1\">\
                 <title>{}: {}</title></path>",
                if f.up { "up" } else { "down" },
                esc(&s.name),
                esc(&f.note)
            );
        }
    }
}

/// The run labels under the x axis, a dashed ink line at every run whose settings changed for
/// all models, and each run's note number in an ink disc; `bottom` is the plot area's lower edge.
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
                 stroke=\"{INK}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"><title>{2}</title></line>",
                x(i),
                y0 + h,
                esc(&reasons.join("; "))
            );
        }
        if let Some(n) = t.numbers.get(i).copied().flatten() {
            let _ = write!(
                *svg,
                "<circle class=\"note\" cx=\"{0:.1}\" cy=\"{1:.1}\" r=\"8\" fill=\"{INK}\"/>\
                 <text class=\"note\" x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{n}</text>",
                x(i),
                y0 + h + 32.0,
                y0 + h + 36.0
            );
        }
    }
}

/// The plot's legend: each model's colour beside its name, and what the markers mean when the
/// plot has any (the notes they point to are listed on the page, not only in tooltips).
fn legend(t: &Trend) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (si, s) in t.series.iter().enumerate() {
        let _ = write!(
            out,
            "<li title=\"{}\"><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            esc(&s.model),
            COLORS[si % COLORS.len()],
            esc(&s.name)
        );
    }
    let any = |f: &dyn Fn(&Point) -> bool| t.series.iter().any(|s| s.points.iter().any(f));
    if any(&|p| p.value.is_some() && !p.changes.is_empty()) {
        out.push_str("<li><span class=\"ring\"></span>changed for that model</li>");
    }
    if any(&|p| p.flag.as_ref().is_some_and(|f| !f.up)) {
        out.push_str("<li><b class=\"mark\">▼</b>significant drop from the run before</li>");
    }
    if any(&|p| p.flag.as_ref().is_some_and(|f| f.up)) {
        out.push_str("<li><b class=\"mark\">▲</b>significant rise from the run before</li>");
    }
    if any(&|p| p.value.is_none() && !p.changes.is_empty()) {
        out.push_str("<li><b class=\"cross\">×</b>no value for that model</li>");
    }
    if t.run_changes.iter().any(|c| !c.is_empty()) {
        out.push_str("<li><span class=\"dash\"></span>settings changed for every model</li>");
    }
    if t.numbers.iter().any(Option::is_some) {
        out.push_str("<li><span class=\"disc\">1</span>what happened: the numbered notes</li>");
    }
    out.push_str("</ul>");
    out
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1em auto;padding:0 1em;\
color:#222;max-width:1600px}h1,h2,h3,p,li{overflow-wrap:anywhere}\
.scroll{overflow-x:auto;max-width:100%}table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}td{white-space:nowrap}\
.plots{display:grid;grid-template-columns:repeat(auto-fit,minmax(min(100%,440px),1fr));gap:1em 2em}\
svg.plot{display:block;width:100%;height:auto;max-width:700px}\
.axis{stroke:#444;stroke-width:1}.grid{stroke:#ddd;stroke-width:1}\
.label{font-size:12px;fill:#444}text.note{font-size:11px;font-weight:700;fill:#fff}\
.legend{list-style:none;padding:0;margin:.3em 0;font-size:13px;overflow-wrap:anywhere}\
.legend li{display:inline-block;margin:.15em 1em .15em 0}figure{margin:0}\
.cross,.mark{color:#111;margin-right:.4em}.swatch{display:inline-block;width:1.4em;height:.35em;\
vertical-align:middle;margin-right:.4em}.ring{display:inline-block;width:.7em;height:.7em;\
border:1.5px dashed #111;border-radius:50%;vertical-align:middle;margin-right:.4em}\
.dash{display:inline-block;width:0;height:1em;border-left:1.5px dashed #111;vertical-align:middle;\
margin:0 .5em}.disc{display:inline-block;min-width:1.3em;height:1.3em;line-height:1.3em;\
border-radius:50%;background:#111;color:#fff;font-size:11px;font-weight:700;text-align:center;\
margin-right:.4em}ol.notes{list-style:none;padding:0}ol.notes>li{margin:.5em 0}\
ol.notes ul{margin:.2em 0;padding-left:1.6em}.names{font-size:13px;color:#444}";

/// The history page: per dataset its plots, its numbered notes and its values table, every
/// text escaped here.
pub fn html_page(pages: &[DatasetPage]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>gpassk history</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>Run history</h1>\n"
    );
    for page in pages {
        let _ = write!(
            out,
            "<h2>{}</h2>\n<div class=\"plots\">\n",
            esc(page.dataset)
        );
        for t in &page.trends {
            let _ = writeln!(
                out,
                "<figure><h3>{}</h3>{}{}</figure>",
                esc(&t.metric),
                trend_svg(t),
                legend(t)
            );
        }
        out.push_str("</div>\n");
        names(&mut out, &page.names);
        notes(&mut out, &page.notes);
        values(&mut out, page);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn names(out: &mut String, names: &[(String, String)]) {
    if names.is_empty() {
        return;
    }
    out.push_str("<p class=\"names\">Models: ");
    let items: Vec<String> = (names.iter())
        .map(|(short, full)| format!("<b>{}</b> = {}", esc(short), esc(full)))
        .collect();
    out.push_str(&items.join("; "));
    out.push_str("</p>\n");
}

fn notes(out: &mut String, notes: &[(usize, String, Vec<String>)]) {
    if notes.is_empty() {
        return;
    }
    out.push_str("<h3>Changes</h3>\n<ol class=\"notes\">\n");
    for (n, run, lines) in notes {
        let _ = write!(
            out,
            "<li><span class=\"disc\">{n}</span><b>{}</b><ul>",
            esc(run)
        );
        for l in lines {
            let _ = write!(out, "<li>{}</li>", esc(l));
        }
        out.push_str("</ul></li>\n");
    }
    out.push_str("</ol>\n");
}

fn values(out: &mut String, page: &DatasetPage) {
    out.push_str("<h3>Values</h3>\n<div class=\"scroll\"><table>\n<tr>");
    for h in &page.header {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr>\n");
    for r in &page.rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model's own change rings its own point in ink; a flagged change is a triangle; a
    /// settings change of the run is the dashed line; a run with notes has its number; no marker
    /// takes a model's colour; the legend names every model.
    #[test]
    fn trend_marks_changed_runs_and_escapes_text() {
        let point = |v: f64, changes: Vec<String>, flag: Option<Flag>| Point {
            label: "<w1>".into(),
            value: Some(v),
            ci: Some((v / 2.0, v)),
            changes,
            flag,
        };
        let drop = Flag {
            up: false,
            note: "REGRESSED -10.0 points".into(),
        };
        let t = Trend {
            dataset: "d".into(),
            metric: "Pass@2".into(),
            series: vec![Series {
                model: "m<script>".into(),
                name: "m<script>".into(),
                points: vec![
                    point(0.5, vec![], None),
                    point(0.4, vec!["system fingerprint: a → <b>".into()], Some(drop)),
                ],
            }],
            run_changes: vec![vec![], vec!["grader: rule → judge".into()]],
            numbers: vec![None, Some(1)],
        };
        let svg = trend_svg(&t);
        assert_eq!(svg.matches("<line class=\"change\"").count(), 1, "{svg}");
        assert!(svg.contains("grader: rule → judge"));
        assert_eq!(svg.matches("<circle class=\"change\"").count(), 1, "{svg}");
        assert_eq!(svg.matches("<path class=\"flag down\"").count(), 1, "{svg}");
        assert!(svg.contains("<text class=\"note\" x=\"446.0\""), "{svg}");
        assert!(svg.contains("m&lt;script&gt;: system fingerprint: a → &lt;b&gt;"));
        assert!(!svg.contains("<script>") && !svg.contains("<w1>"));
        for marker in ["class=\"change\"", "class=\"flag", "class=\"note\""] {
            for part in svg.split(marker).skip(1) {
                let tag = &part[..part.find('>').unwrap()];
                assert!(COLORS.iter().all(|c| !tag.contains(c)), "{marker}{tag}");
            }
        }
        let legend = legend(&t);
        assert!(
            legend.contains("m&lt;script&gt;</li>") && legend.contains("changed for that model")
        );
        assert!(legend.contains("significant drop"), "{legend}");
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
