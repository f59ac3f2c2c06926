//! The viewer's HTML: one function per page over `data`'s views. Every text that came from a
//! run (model output, server messages, names, ids, questions) goes through `esc`, so it is
//! shown, never parsed as markup; scripts and styles are the viewer's own static files. Model
//! names are shortened by the one short-name function, with a legend of the full names.

use super::data::{
    CompareRow, CompareView, ModelSamples, ProblemView, ProblemsView, RunView, RunsView,
    SampleView, Shown,
};
use super::math::readable;
use crate::report::esc;
use crate::util::{name_legend, shorten_names, SHORT_NAME};
use std::fmt::Write;

/// Responses longer than this are folded (their start shown, the rest one click away).
const FOLD: usize = 600;
/// Characters of a folded response shown before the click.
const FOLD_PREVIEW: usize = 200;

/// A string as one URL path segment or query value: everything but unreserved bytes encoded.
pub fn enc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The page around `body`: title, navigation, the viewer's stylesheet and script; `poll` is
/// the API path whose stamp the script watches to reload when the run grows.
fn shell(title: &str, nav: &[(String, String)], poll: &str, body: &str) -> String {
    let mut links = String::from("<a href=\"/\">runs</a>");
    for (href, text) in nav {
        let _ = write!(links, " › <a href=\"{}\">{}</a>", esc(href), esc(text));
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · gpassk view</title><link rel=\"stylesheet\" href=\"/static/view.css\">\
         <script src=\"/static/view.js\" defer></script></head>\
         <body data-poll=\"{}\"><nav>{links}</nav><main>{body}</main></body></html>\n",
        esc(title),
        esc(poll)
    )
}

fn run_href(run: &str) -> String {
    format!("/run/{}", enc(run))
}

fn problem_href(run: &str, id: &str) -> String {
    format!("/run/{}/problem?id={}", enc(run), enc(id))
}

/// One model's samples of one problem: the problem page's tab of that model.
fn samples_href(run: &str, id: &str, model: &str) -> String {
    format!("{}&model={}", problem_href(run, id), enc(model))
}

fn compare_href(a: &str, b: &str) -> String {
    format!("/compare?a={}&b={}", enc(a), enc(b))
}

fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", esc(href), esc(text))
}

/// A table in its own horizontal scroller (the page itself never scrolls sideways).
fn table(class: &str, head: &[String], rows: &[String]) -> String {
    let mut out = format!("<div class=\"scroll\"><table class=\"{class}\"><thead><tr>");
    for h in head {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str(r);
    }
    out.push_str("</tbody></table></div>");
    out
}

fn cells(cells: &[String]) -> String {
    let mut out = String::from("<tr>");
    for c in cells {
        let _ = write!(out, "<td>{c}</td>");
    }
    out.push_str("</tr>");
    out
}

/// The short name of each of `full` (the same function and width on every page).
fn short_names(full: &[String]) -> Vec<String> {
    shorten_names(full, SHORT_NAME)
}

/// A model's short name, its full name as the title.
fn name(full: &str, short: &str) -> String {
    format!(
        "<span class=\"name\" title=\"{}\">{}</span>",
        esc(full),
        esc(short)
    )
}

/// What each shortened name stands for; nothing when no name was shortened.
fn names_legend(full: &[String], short: &[String]) -> String {
    let mut out = String::new();
    for (s, f) in name_legend(full, short) {
        let _ = write!(out, "<li><b>{}</b> = {}</li>", esc(&s), esc(&f));
    }
    if out.is_empty() {
        return out;
    }
    format!("<ul class=\"names\" aria-label=\"model names\">{out}</ul>")
}

/// A value and its interval, each kept whole (a line may break between them, never inside).
fn shown(s: &Shown) -> String {
    match &s.bounds {
        Some(b) => format!(
            "<span class=\"v\">{}</span> <span class=\"ci\">{}</span>",
            esc(&s.value),
            esc(b)
        ),
        None => format!("<span class=\"v\">{}</span>", esc(&s.value)),
    }
}

pub fn error(status: u16, message: &str) -> String {
    let body = format!("<h1>{status}</h1><p class=\"error\">{}</p>", esc(message));
    shell("error", &[], "", &body)
}

pub fn runs(v: &RunsView) -> String {
    let mut body = format!("<h1>Runs</h1><p class=\"muted\">{}</p>", esc(&v.folder));
    let mut full: Vec<String> = Vec::new();
    for m in v.runs.iter().flat_map(|r| &r.models) {
        if !full.contains(&m.name) {
            full.push(m.name.clone());
        }
    }
    let short = short_names(&full);
    let short_of = |n: &str| {
        (full.iter().position(|f| f == n)).map_or_else(|| n.to_string(), |i| short[i].clone())
    };
    let head: Vec<String> = ["run", "models: headline % and changes"]
        .map(String::from)
        .to_vec();
    let rows: Vec<String> = v.runs.iter().map(|r| run_row(r, &short_of)).collect();
    body.push_str(&table("sortable runs", &head, &rows));
    body.push_str(&names_legend(&full, &short));
    body.push_str(
        "<p class=\"muted\">▲/▼: a significant change from the run before (exact paired test, \
         Holm-corrected); each run's page has the intervals.</p>",
    );
    for note in &v.history_notes {
        let _ = write!(body, "<p class=\"muted\">History: {}</p>", esc(note));
    }
    list(&mut body, "Changes", &v.changes);
    list(&mut body, "Skipped", &v.skipped);
    shell("runs", &[], "/api/stamp", &body)
}

fn run_row(r: &super::data::RunRow, short: &dyn Fn(&str) -> String) -> String {
    let compare = r.previous.as_ref().map_or_else(String::new, |p| {
        format!(
            " {}",
            link(&compare_href(p, &r.name), "compare with previous")
        )
    });
    let dataset = std::path::Path::new(&r.dataset)
        .file_name()
        .map_or_else(|| r.dataset.clone(), |n| n.to_string_lossy().into_owned());
    let mut marks: Vec<String> = (r.shard.iter())
        .map(|s| {
            format!(
                "<span class=\"mark\">shard {}: not in the history</span>",
                esc(s)
            )
        })
        .collect();
    for m in &r.marks {
        let who = if m.all {
            format!("all {} models", m.models.len())
        } else {
            let names: Vec<String> = m.models.iter().map(|n| short(n)).collect();
            names.join(", ")
        };
        marks.push(format!(
            "<span class=\"mark\">{}: {}</span>",
            esc(&who),
            esc(&m.change)
        ));
    }
    cells(&[
        format!(
            "{0}<br><time datetime=\"{1}\">{2}</time><br><span class=\"status s-{3}\">{3}</span> \
             · <small title=\"{4}\">{5}</small>",
            link(&run_href(&r.name), &r.name),
            esc(&r.created_at),
            esc(&r.when),
            esc(&r.status),
            esc(&r.dataset),
            esc(&dataset)
        ),
        format!(
            "{}<p class=\"marks\">{}{compare}</p>",
            models_table(r, short),
            marks.join(" ")
        ),
    ])
}

/// A run's models by its headline metrics: each value (its interval, change and flag in the
/// title), ▲/▼ where history flags a change from the run before.
fn models_table(r: &super::data::RunRow, short: &dyn Fn(&str) -> String) -> String {
    let mut out = String::from("<div class=\"scroll\"><table class=\"values\"><tr><th>model</th>");
    for m in &r.metrics {
        let _ = write!(out, "<th>{}</th>", esc(m));
    }
    out.push_str("</tr>");
    for m in &r.models {
        let _ = write!(out, "<tr><td>{}</td>", name(&m.name, &short(&m.name)));
        for v in &m.values {
            let Some(v) = v else {
                out.push_str("<td>-</td>");
                continue;
            };
            let (mark, class) = match v.flag.as_str() {
                "REGRESSED" => (" ▼", " class=\"down\""),
                "improved" => (" ▲", " class=\"up\""),
                _ => ("", ""),
            };
            let mut title = v.shown.bounds.clone().unwrap_or_default();
            if !v.delta.is_empty() {
                let _ = write!(title, "; Δ {} (p Holm {}) {}", v.delta, v.p_holm, v.flag);
            }
            let _ = write!(
                out,
                "<td{class} title=\"{}\">{}{mark}</td>",
                esc(title.trim_end()),
                esc(&v.shown.value)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></div>");
    out
}

fn list(body: &mut String, title: &str, items: &[String]) {
    if items.is_empty() {
        return;
    }
    let _ = write!(body, "<h2>{title}</h2><ul>");
    for i in items {
        let _ = write!(body, "<li>{}</li>", esc(i));
    }
    body.push_str("</ul>");
}

pub fn run(v: &RunView) -> String {
    let mut body = format!(
        "<h1>{}</h1><p>run {} · {} · started <time datetime=\"{}\">{}</time> · {} problems</p><p>{} · {} · {}</p>",
        esc(&v.label),
        esc(&v.name),
        esc(&v.status),
        esc(&v.created_at),
        esc(&v.when),
        v.problems,
        link(&format!("{}/problems", run_href(&v.name)), "problems"),
        link(&format!("{}/report", run_href(&v.name)), "full report"),
        v.previous.as_ref().map_or_else(
            || "no previous run".to_string(),
            |p| link(&compare_href(p, &v.name), "compare with previous")
        ),
    );
    let mut head = vec!["model".to_string(), "status".into(), "n".into()];
    head.extend(v.metrics.iter().map(|m| esc(m)));
    head.extend(["correct", "wrong", "no answer", "missing"].map(String::from));
    let rows: Vec<String> = v.models.iter().map(|m| model_row(v, m)).collect();
    body.push_str(&table("sortable headline", &head, &rows));
    body.push_str(
        "<p class=\"muted\">% [95% CI]. Each value links to the problems it rests on: that \
         model's value of that metric per problem.</p>",
    );
    body.push_str(&crate::report::found_html(&v.answers_found));
    shell(
        &v.name,
        &[(run_href(&v.name), v.name.clone())],
        &stamp(&v.name),
        &body,
    )
}

fn stamp(run: &str) -> String {
    format!("/api/stamp?run={}", enc(run))
}

/// The problems grid focused on one model's value of one metric.
fn metric_href(run: &str, model: &str, metric: &str) -> String {
    format!(
        "{}/problems?model={}&metric={}",
        run_href(run),
        enc(model),
        enc(metric)
    )
}

fn model_row(v: &RunView, m: &super::data::ModelRow) -> String {
    let mut row = vec![
        format!(
            "<span class=\"name\">{}</span><br><small>{}</small>",
            esc(&m.name),
            esc(&m.model_id)
        ),
        esc(&m.status),
        m.n.to_string(),
    ];
    row.extend((v.metrics.iter().zip(&m.values)).map(|(metric, x)| {
        format!(
            "<a class=\"value\" href=\"{}\">{}</a>",
            esc(&metric_href(&v.name, &m.name, metric)),
            shown(x)
        )
    }));
    row.extend([m.correct, m.wrong, m.no_answer, m.missing].map(|x| x.to_string()));
    cells(&row)
}

/// The filters of the problems grid (the script applies them to the rows' data attributes).
const FILTERS: [(&str, &str); 5] = [
    ("unstable", "unstable only"),
    ("disagree", "models disagree"),
    ("changed", "changed since previous run"),
    ("judge", "grader and judge disagree"),
    ("noanswer", "no answer"),
];

/// The grid's colour scale, darkest at the ends: each step's class and what it holds.
const SCALE: [(u8, &str); 7] = [
    (0, "0"),
    (1, "≤ 20%"),
    (2, "≤ 40%"),
    (3, "40–60%"),
    (4, "≥ 60%"),
    (5, "≥ 80%"),
    (6, "all"),
];

/// What the problems grid is focused on: a model (`?model=`), and one of its metrics
/// (`&metric=`, a headline metric of the run: the grid then shows its per-problem values).
#[derive(Debug, Default, Clone, Copy)]
pub struct Focus<'a> {
    pub model: Option<&'a str>,
    pub metric: Option<&'a str>,
}

pub fn problems(v: &ProblemsView, focus: Focus<'_>) -> String {
    let model = focus
        .model
        .and_then(|m| v.models.iter().position(|x| x == m));
    let metric = focus
        .metric
        .and_then(|k| v.metrics.iter().position(|x| x == k));
    let column = model.zip(metric);
    let short = short_names(&v.models);
    let mut body = format!("<h1>Problems of {}</h1>", esc(&v.run));
    if let Some((m, k)) = column {
        let _ = write!(
            body,
            "<p class=\"focus-note\">{} of {} per problem (its value on the run page is the \
             mean of this column), least first. {}</p>",
            esc(&v.metrics[k]),
            name(&v.models[m], &short[m]),
            link(&format!("{}/problems", run_href(&v.run)), "every problem")
        );
    }
    body.push_str(&filters(v, column.is_some()));
    let _ = write!(
        body,
        "<p class=\"muted\"><span data-count>{}</span> problems; cells are c/n (correct of \
         samples) and link to that model's samples; colour by share correct:{}</p>",
        v.rows.len(),
        scale()
    );
    let mut head = vec!["problem".to_string()];
    if let Some((m, k)) = column {
        head.push(format!(
            "<span class=\"focus\">{} %</span><br><small>{}</small>",
            esc(&v.metrics[k]),
            esc(&short[m])
        ));
    }
    for (i, (full, s)) in v.models.iter().zip(&short).enumerate() {
        let mark = if model == Some(i) && column.is_none() {
            " focus"
        } else {
            ""
        };
        head.push(format!(
            "<span class=\"name{mark}\" title=\"{}\">{}</span>",
            esc(full),
            esc(s)
        ));
    }
    head.push("question".into());
    let rows: Vec<String> = (v.rows.iter())
        .map(|r| problem_row(v, r, model, column))
        .collect();
    body.push_str(&table("sortable grid", &head, &rows));
    body.push_str(&names_legend(&v.models, &short));
    let nav = [
        (run_href(&v.run), v.run.clone()),
        (format!("{}/problems", run_href(&v.run)), "problems".into()),
    ];
    shell("problems", &nav, &stamp(&v.run), &body)
}

/// The grid's filters; with a metric in focus, "below full marks on it" (checked).
fn filters(v: &ProblemsView, metric: bool) -> String {
    let mut out = String::from("<form class=\"filters\">");
    if metric {
        out.push_str(
            "<label><input type=\"checkbox\" data-filter=\"below\" checked> below 100% on it</label> ",
        );
    }
    for (key, text) in FILTERS {
        let off = (key == "changed" && v.previous.is_none()) || (key == "judge" && !v.judged);
        let disabled = if off { " disabled" } else { "" };
        let _ = write!(
            out,
            "<label><input type=\"checkbox\" data-filter=\"{key}\"{disabled}> {text}</label> "
        );
    }
    out.push_str("<label>id or text <input type=\"search\" data-filter=\"text\"></label></form>");
    out
}

fn scale() -> String {
    let mut out = String::from(" <span class=\"scale\">");
    for (shade, text) in SCALE {
        let _ = write!(out, "<span class=\"s{shade}\">{text}</span>");
    }
    out.push_str("</span>");
    out
}

/// One problem's row; `focus`: the model in focus, `column` its metric in focus.
fn problem_row(
    v: &ProblemsView,
    r: &super::data::ProblemRow,
    focus: Option<usize>,
    column: Option<(usize, usize)>,
) -> String {
    let flags = [
        r.unstable,
        r.disagree,
        r.changed,
        r.judge_disagrees,
        r.no_answer,
    ];
    let mut out = String::from("<tr");
    for ((key, _), on) in FILTERS.iter().zip(flags) {
        let _ = write!(out, " data-{key}=\"{}\"", u8::from(on));
    }
    let focused = column.and_then(|(m, k)| r.cells.get(m)?.values.get(k).copied().flatten());
    if column.is_some() {
        let below = focused.is_some_and(|x| x < 1.0);
        let _ = write!(out, " data-below=\"{}\"", u8::from(below));
    }
    let _ = write!(
        out,
        " data-text=\"{}\">",
        esc(&format!("{} {}", r.id, r.preview))
    );
    let _ = write!(
        out,
        "<td>{}</td>",
        link(&problem_href(&v.run, &r.id), &r.id)
    );
    if column.is_some() {
        let (sort, text) = focused.map_or((-1.0, "-".to_string()), |x| {
            (
                x,
                crate::report::Interval::percent(Some(x), None).value_text(),
            )
        });
        let _ = write!(out, "<td class=\"num\" data-sort=\"{sort}\">{text}</td>");
    }
    for (i, (c, model)) in r.cells.iter().zip(&v.models).enumerate() {
        let fc = if focus == Some(i) { " fc" } else { "" };
        let share = if c.n == 0 {
            -1.0
        } else {
            c.c as f64 / c.n as f64
        };
        let _ = write!(
            out,
            "<td class=\"c-{} s{}{fc}\" data-sort=\"{share}\" title=\"{} without an answer\"><a href=\"{}\">{}/{}</a></td>",
            c.class,
            c.shade,
            c.no_answer,
            esc(&samples_href(&v.run, &r.id, model)),
            c.c,
            c.n
        );
    }
    let _ = write!(out, "<td class=\"q\">{}</td></tr>", esc(&r.preview));
    out
}

/// How a problem page shows math: readable (the default) or as the LaTeX source.
fn math_text(s: &str, source: bool) -> String {
    if source {
        s.to_string()
    } else {
        readable(s)
    }
}

/// The problem page: the question and gold answer, a tab per model (all models: each one's
/// answers by votes, this run and the previous side by side), and on a model's tab its samples
/// beside the previous run's. `source`: math as written instead of readable.
pub fn problem(v: &ProblemView, model: Option<&str>, source: bool) -> String {
    let tab = model.and_then(|m| v.models.iter().position(|x| x.model == m));
    let here = |m: Option<&str>, source: bool| {
        let mut href = problem_href(&v.run, &v.id);
        if let Some(m) = m {
            let _ = write!(href, "&model={}", enc(m));
        }
        if source {
            href.push_str("&math=source");
        }
        href
    };
    let toggle = if source {
        link(&here(model, false), "readable math")
    } else {
        link(&here(model, true), "LaTeX source")
    };
    let subset = v
        .subset
        .as_deref()
        .map_or_else(String::new, |s| format!(" · {}", esc(s)));
    let mut body = format!(
        "<h1>Problem {}</h1><p class=\"muted\">run {}{subset} · math shown {} · {toggle}</p>\
         <h2>Question</h2><pre class=\"text\">{}</pre><h2>Gold answer</h2><pre class=\"text gold\">{}</pre>",
        esc(&v.id),
        esc(&v.run),
        if source { "as written" } else { "readable" },
        esc(&math_text(&v.question, source)),
        esc(&math_text(&v.gold, source))
    );
    let full: Vec<String> = v.models.iter().map(|m| m.model.clone()).collect();
    let short = short_names(&full);
    body.push_str("<nav class=\"tabs\" aria-label=\"models\">");
    let current = |on: bool| if on { " aria-current=\"page\"" } else { "" };
    let _ = write!(
        body,
        "<a href=\"{}\"{}>all models</a>",
        esc(&here(None, source)),
        current(tab.is_none())
    );
    for (i, m) in v.models.iter().enumerate() {
        let _ = write!(
            body,
            "<a href=\"{}\"{} title=\"{}\">{} <small>{}/{}</small></a>",
            esc(&here(Some(&m.model), source)),
            current(tab == Some(i)),
            esc(&m.model),
            esc(&short[i]),
            m.c,
            m.n
        );
    }
    body.push_str("</nav>");
    match tab {
        Some(i) => body.push_str(&model_tab(v, &v.models[i], source)),
        None => {
            body.push_str(&overview(v, &short, source));
            body.push_str(&names_legend(&full, &short));
        }
    }
    let nav = [
        (run_href(&v.run), v.run.clone()),
        (format!("{}/problems", run_href(&v.run)), "problems".into()),
        (problem_href(&v.run, &v.id), v.id.clone()),
    ];
    shell(&v.id, &nav, &stamp(&v.run), &body)
}

/// Every model on one line each: its answers by votes in this run and in the previous one.
fn overview(v: &ProblemView, short: &[String], source: bool) -> String {
    let prev = v.before.as_ref();
    let mut head = vec!["model".to_string(), "this run".to_string()];
    if let Some(b) = prev {
        head.push(format!(
            "previous run {}",
            link(&problem_href(&b.run, &v.id), &b.run)
        ));
    }
    let rows: Vec<String> = (v.models.iter().zip(short))
        .map(|(m, s)| {
            let mut row = vec![
                format!(
                    "<a href=\"{}\">{}</a>",
                    esc(&samples_href(&v.run, &v.id, &m.model)),
                    name(&m.model, s)
                ),
                summary(m, source),
            ];
            if let Some(b) = prev {
                let before = b.models.iter().find(|x| x.model == m.model);
                row.push(before.map_or_else(|| "not in that run".into(), |x| summary(x, source)));
            }
            cells(&row)
        })
        .collect();
    table("overview", &head, &rows)
}

/// `c of n correct`, a square per sample (its verdict), and the answers by votes.
fn summary(m: &ModelSamples, source: bool) -> String {
    let mut out = format!(
        "<p><b>{} of {}</b> correct ({} stored)</p><p class=\"dots\" aria-hidden=\"true\">",
        m.c,
        m.n,
        m.samples.len()
    );
    for s in m.samples.iter().filter(|s| s.index != "greedy") {
        let _ = write!(
            out,
            "<span class=\"dot v-{}\"></span>",
            s.verdict.replace(' ', "-")
        );
    }
    out.push_str("</p>");
    out.push_str(&clusters(m, source));
    out
}

fn clusters(m: &ModelSamples, source: bool) -> String {
    let mut out = String::from("<ul class=\"clusters\">");
    for c in &m.clusters {
        let class = if c.correct { "correct" } else { "wrong" };
        let _ = write!(
            out,
            "<li class=\"v-{class}\"><code>{}</code> × {}</li>",
            esc(&math_text(&c.answer, source)),
            c.votes
        );
    }
    out.push_str("</ul>");
    out
}

/// One model's tab: its samples in this run beside the previous run's.
fn model_tab(v: &ProblemView, m: &ModelSamples, source: bool) -> String {
    let mut out = format!(
        "<h2 class=\"name\">{}</h2><div class=\"pair\">",
        esc(&m.model)
    );
    let _ = write!(
        out,
        "<section class=\"model\"><h3>This run</h3>{}",
        summary(m, source)
    );
    out.push_str(&samples(&v.run, &v.id, m, source));
    out.push_str("</section>");
    if let Some(b) = &v.before {
        let _ = write!(
            out,
            "<section class=\"model before\"><h3>Previous run {}</h3>",
            link(&samples_href(&b.run, &v.id, &m.model), &b.run)
        );
        match b.models.iter().find(|x| x.model == m.model) {
            Some(x) => {
                out.push_str(&summary(x, source));
                out.push_str(&samples(&b.run, &v.id, x, source));
            }
            None => out.push_str("<p>not in that run</p>"),
        }
        out.push_str("</section>");
    }
    out.push_str("</div>");
    out
}

fn samples(run: &str, id: &str, m: &ModelSamples, source: bool) -> String {
    let mut out = String::from("<div class=\"samples\">");
    for s in &m.samples {
        out.push_str(&sample(run, id, &m.model, s, source));
    }
    out.push_str("</div>");
    out
}

fn sample(run: &str, id: &str, model: &str, s: &SampleView, source: bool) -> String {
    let verdict = if s.rule == s.verdict {
        esc(s.verdict)
    } else {
        format!("rule: {} · judge: {}", esc(s.rule), esc(s.verdict))
    };
    let tokens = s
        .completion_tokens
        .map_or_else(String::new, |t| format!(" · {t} tokens"));
    let mut out =
        format!(
        "<article class=\"sample v-{}\"><header><b>#{}</b> {verdict} · <code>{}</code></header>\
         <p class=\"meta\">found by {} · {}{tokens} · {} ms</p>",
        s.verdict.replace(' ', "-"),
        esc(&s.index),
        esc(&s.extracted.as_deref().map_or_else(|| "(no answer)".into(), |x| math_text(x, source))),
        found_by(s),
        esc(&format!(
            "{} {}",
            s.outcome,
            s.finish_reason.as_deref().unwrap_or("")
        )),
        s.latency_ms,
    );
    if let Some(search) = &s.search {
        out.push_str("<p>chosen path:</p><ol class=\"path\">");
        for step in &search.path {
            let _ = write!(out, "<li><pre class=\"text\">{}</pre></li>", esc(step));
        }
        let href = format!(
            "/run/{}/tree?model={}&id={}&index={}",
            enc(run),
            enc(model),
            enc(id),
            enc(&s.index)
        );
        let _ = write!(out, "</ol><p>{}</p>", link(&href, "search tree"));
    }
    out.push_str(&response(&math_text(&s.response, source)));
    if let Some(e) = &s.error {
        let _ = write!(out, "<p class=\"error\">{}</p>", esc(e));
    }
    out.push_str("</article>");
    out
}

/// How a sample's answer was found, a guess marked as one.
fn found_by(s: &SampleView) -> String {
    match s.found_by {
        None => "not recorded".into(),
        Some(way) if s.heuristic => format!("<span class=\"mark\">{} (a guess)</span>", esc(way)),
        Some(way) => esc(way),
    }
}

fn response(text: &str) -> String {
    if text.chars().count() <= FOLD {
        return format!("<pre class=\"text\">{}</pre>", esc(text));
    }
    let preview: String = text.chars().take(FOLD_PREVIEW).collect();
    format!(
        "<details><summary><span class=\"text\">{}</span>… ({} characters)</summary><pre class=\"text\">{}</pre></details>",
        esc(&preview),
        text.chars().count(),
        esc(text)
    )
}

pub fn compare(v: &CompareView) -> String {
    let full: Vec<String> = v.verdicts.iter().map(|m| m.model.clone()).collect();
    let short = short_names(&full);
    let short_of = |n: &str| {
        (full.iter().position(|f| f == n)).map_or_else(|| n.to_string(), |i| short[i].clone())
    };
    let mut body = format!(
        "<h1>Compare</h1><p>A: {} · B: {} (B − A in percentage points, exact paired test)</p>",
        link(&run_href(&v.a), &v.a),
        link(&run_href(&v.b), &v.b)
    );
    for d in &v.differences {
        let _ = write!(body, "<p class=\"warning\">The runs differ: {}</p>", esc(d));
    }
    body.push_str(&verdicts_section(v, &short));
    body.push_str(&names_legend(&full, &short));
    body.push_str(&flagged_section(v, &short_of));
    let _ = write!(
        body,
        "<section class=\"models\"><h2>Every row, by model</h2>"
    );
    for (m, s) in full.iter().zip(&short) {
        body.push_str(&model_rows(v, m, s));
    }
    body.push_str("</section>");
    list(&mut body, "Not compared", &v.skipped);
    shell("compare", &[], "", &body)
}

/// The verdict per model in compare's words (with its reason and drift), then what every
/// compared model shares said once.
fn verdicts_section(v: &CompareView, short: &[String]) -> String {
    let mut out = format!(
        "<section class=\"verdicts\"><h2>Verdict per model</h2><p class=\"muted\">Tested: the \
         headline metrics; Holm at 5% over {} tests; {} flagged.</p><ul class=\"verdicts\">",
        v.tested, v.flagged
    );
    for (m, s) in v.verdicts.iter().zip(short) {
        let mut why = esc(&m.reason);
        for d in &m.drift {
            let _ = write!(why, "; drift: {}", esc(d));
        }
        let _ = write!(
            out,
            "<li class=\"verdict k-{}\">{} <b class=\"word\">{}</b> <span class=\"why\">{why}</span></li>",
            m.kind,
            name(&m.model, s),
            esc(m.verdict)
        );
    }
    out.push_str("</ul>");
    for d in &v.shared {
        let _ = write!(out, "<p class=\"shared\">drift: {}</p>", esc(d));
    }
    out.push_str("</section>");
    out
}

/// The flagged rows, each with the problems that moved.
fn flagged_section(v: &CompareView, short: &dyn Fn(&str) -> String) -> String {
    let flagged: Vec<&CompareRow> = v.rows.iter().filter(|r| r.flagged).collect();
    let mut out = String::from("<section class=\"flagged\"><h2>Flagged changes</h2>");
    if flagged.is_empty() {
        let _ = write!(
            out,
            "<p>No headline change is significant at 5% family-wise (Holm over {} tests).</p>",
            v.tested
        );
    }
    for r in flagged {
        let _ = write!(
            out,
            "<details class=\"cmp k-{}\" open><summary>{} · {} · {} → {} · Δ {} · {} · <b class=\"word\">{}</b></summary>{}</details>",
            if r.flag == "improved" { "improved" } else { "regressed" },
            name(&r.model, &short(&r.model)),
            esc(&r.metric),
            esc(&r.a),
            esc(&r.b),
            esc(&r.delta),
            p_text(r.p_holm),
            esc(r.flag),
            moved(v, r)
        );
    }
    out.push_str("</section>");
    out
}

fn p_text(p: Option<f64>) -> String {
    match p {
        None => "untested".into(),
        Some(p) if p < 1e-4 => "p (Holm) &lt; 0.0001".into(),
        Some(p) => format!("p (Holm) {p:.4}"),
    }
}

/// One model's rows (flagged first): the tested family as a table, exploratory rows folded.
fn model_rows(v: &CompareView, model: &str, short: &str) -> String {
    let verdict = v.verdicts.iter().find(|m| m.model == model);
    let rows: Vec<&CompareRow> = v.rows.iter().filter(|r| r.model == model).collect();
    let flagged = rows.iter().filter(|r| r.flagged).count();
    let mut out = format!(
        "<details class=\"model k-{}\"><summary>{} <b class=\"word\">{}</b> · {} rows, {flagged} flagged</summary>",
        verdict.map_or("", |m| m.kind),
        name(model, short),
        esc(verdict.map_or("", |m| m.verdict)),
        rows.len()
    );
    let head: Vec<String> = [
        "metric",
        "A %",
        "B %",
        "B − A",
        "p (Holm)",
        "flag",
        "problems moved",
    ]
    .map(String::from)
    .to_vec();
    let line = |r: &&CompareRow| {
        cells(&[
            esc(&r.metric),
            esc(&r.a),
            esc(&r.b),
            esc(&r.delta),
            r.p_holm.map_or_else(|| "-".into(), |p| format!("{p:.4}")),
            format!("<b class=\"word\">{}</b>", esc(r.flag)),
            moved(v, r),
        ])
    };
    let (family, exploratory): (Vec<&CompareRow>, Vec<&CompareRow>) =
        rows.iter().partition(|r| r.family);
    out.push_str(&table(
        "diffs",
        &head,
        &family.iter().map(line).collect::<Vec<_>>(),
    ));
    if !exploratory.is_empty() {
        let _ = write!(
            out,
            "<details><summary>{} exploratory rows (not tested)</summary>{}</details>",
            exploratory.len(),
            table(
                "diffs",
                &head,
                &exploratory.iter().map(line).collect::<Vec<_>>()
            )
        );
    }
    out.push_str("</details>");
    out
}

/// The problems whose value moved, each linking to that model's samples in B and in A.
fn moved(v: &CompareView, r: &CompareRow) -> String {
    if r.problems.is_empty() {
        return format!("0 of {} problems moved", r.shared);
    }
    let mut out = format!(
        "<details class=\"moved\"><summary>{} of {} problems moved</summary><ul>",
        r.problems.len(),
        r.shared
    );
    for d in &r.problems {
        let _ = write!(
            out,
            "<li>{} {:.1} → {:.1} ({})</li>",
            link(&samples_href(&v.b, &d.id, &r.model), &d.id),
            100.0 * d.a,
            100.0 * d.b,
            link(&samples_href(&v.a, &d.id, &r.model), "in A")
        );
    }
    out.push_str("</ul></details>");
    out
}

pub fn tree(run: &str, what: &str, text: &str) -> String {
    let body = format!(
        "<h1>Search tree</h1><p>{}</p><pre class=\"text\">{}</pre>",
        esc(what),
        esc(text)
    );
    shell(
        "search tree",
        &[(run_href(run), run.to_string())],
        "",
        &body,
    )
}
