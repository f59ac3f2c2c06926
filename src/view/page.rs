//! The viewer's HTML: one function per page over `data`'s views. Every text that came from a
//! run (model output, server messages, names, ids, questions) goes through `esc`, so it is
//! shown, never parsed as markup; scripts and styles are the viewer's own static files.

use super::data::{
    CompareView, ModelSamples, ProblemView, ProblemsView, RunView, RunsView, SampleView,
};
use crate::report::esc;
use crate::util::shorten_names;
use std::fmt::Write;

/// Responses longer than this are folded (their start shown, the rest one click away).
const FOLD: usize = 1200;
/// Characters of a folded response shown before the click.
const FOLD_PREVIEW: usize = 240;
/// Width model names are shortened to in grid headers (the full name is the cell's title).
const NAME_WIDTH: usize = 18;

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

pub fn error(status: u16, message: &str) -> String {
    let body = format!("<h1>{status}</h1><p class=\"error\">{}</p>", esc(message));
    shell("error", &[], "", &body)
}

pub fn runs(v: &RunsView) -> String {
    let mut body = format!("<h1>Runs</h1><p class=\"muted\">{}</p>", esc(&v.folder));
    let head: Vec<String> = ["run", "dataset", "date", "status", "models", "changes", ""]
        .map(String::from)
        .to_vec();
    let rows: Vec<String> = v.runs.iter().map(run_row).collect();
    body.push_str(&table("sortable runs", &head, &rows));
    if !v.history.is_empty() {
        body.push_str("<h2>History</h2>");
        body.push_str(&history_table(v));
    }
    for note in &v.history_notes {
        let _ = write!(body, "<p class=\"muted\">History: {}</p>", esc(note));
    }
    list(&mut body, "Changes", &v.changes);
    list(&mut body, "Skipped", &v.skipped);
    shell("runs", &[], "/api/stamp", &body)
}

fn run_row(r: &super::data::RunRow) -> String {
    let compare = r.previous.as_ref().map_or_else(String::new, |p| {
        let href = format!("/compare?a={}&b={}", enc(p), enc(&r.name));
        link(&href, "compare with previous")
    });
    let shard = (r.shard.iter()).map(|s| format!("shard {s}: not in the history"));
    let marks: Vec<String> = (shard.chain(r.marks.iter().cloned()))
        .map(|m| format!("<span class=\"mark\">{}</span>", esc(&m)))
        .collect();
    cells(&[
        link(&run_href(&r.name), &r.name),
        esc(&r.dataset),
        esc(&r.created_at),
        format!("<span class=\"status s-{0}\">{0}</span>", esc(&r.status)),
        models_list(r),
        marks.join(" "),
        compare,
    ])
}

/// The run's models, each with its one headline value.
fn models_list(r: &super::data::RunRow) -> String {
    let mut out = String::from("<ul class=\"models\">");
    for name in &r.models {
        let _ = write!(out, "<li><span class=\"name\">{}</span>", esc(name));
        if let Some(h) = r.headline.iter().find(|h| &h.model == name) {
            let _ = write!(out, " <small>{} {}</small>", esc(&h.metric), esc(&h.value));
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>");
    out
}

fn history_table(v: &RunsView) -> String {
    let head: Vec<String> = [
        "dataset",
        "model",
        "metric",
        "run",
        "% [95% CI]",
        "Δ",
        "p (Holm)",
        "flag",
        "changes",
    ]
    .map(String::from)
    .to_vec();
    let rows: Vec<String> = (v.history.iter())
        .map(|h| {
            cells(&[
                esc(&h.dataset),
                esc(&h.model),
                esc(&h.metric),
                link(&run_href(&h.run), &h.run),
                esc(&h.value),
                esc(&h.delta),
                esc(&h.p_holm),
                esc(&h.flag),
                esc(&h.changes),
            ])
        })
        .collect();
    table("sortable history", &head, &rows)
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
        "<h1>{}</h1><p>run {} · {} · started {} · {} problems</p><p>{} · {} · {}</p>",
        esc(&v.label),
        esc(&v.name),
        esc(&v.status),
        esc(&v.created_at),
        v.problems,
        link(&format!("{}/problems", run_href(&v.name)), "problems"),
        link(&format!("{}/report", run_href(&v.name)), "full report"),
        v.previous.as_ref().map_or_else(
            || "no previous run".to_string(),
            |p| link(
                &format!("/compare?a={}&b={}", enc(p), enc(&v.name)),
                "compare with previous"
            )
        ),
    );
    let mut head = vec!["model".to_string(), "status".into(), "n".into()];
    head.extend(v.metrics.iter().map(|m| esc(m)));
    head.extend(["correct", "wrong", "no answer", "missing"].map(String::from));
    let rows: Vec<String> = v.models.iter().map(|m| model_row(v, m)).collect();
    body.push_str(&table("sortable headline", &head, &rows));
    body.push_str("<p class=\"muted\">Each value links to the problems it rests on.</p>");
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

fn model_row(v: &RunView, m: &super::data::ModelRow) -> String {
    let href = format!("{}/problems?model={}", run_href(&v.name), enc(&m.name));
    let mut row = vec![
        format!(
            "<span class=\"name\">{}</span><br><small>{}</small>",
            esc(&m.name),
            esc(&m.model_id)
        ),
        esc(&m.status),
        m.n.to_string(),
    ];
    row.extend(m.values.iter().map(|x| link(&href, x)));
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

pub fn problems(v: &ProblemsView, focus: Option<&str>) -> String {
    let mut body = format!(
        "<h1>Problems of {}</h1><form class=\"filters\">",
        esc(&v.run)
    );
    for (key, text) in FILTERS {
        let off = (key == "changed" && v.previous.is_none()) || (key == "judge" && !v.judged);
        let disabled = if off { " disabled" } else { "" };
        let _ = write!(
            body,
            "<label><input type=\"checkbox\" data-filter=\"{key}\"{disabled}> {text}</label> "
        );
    }
    body.push_str("<label>id or text <input type=\"search\" data-filter=\"text\"></label></form>");
    let _ = write!(body, "<p class=\"muted\"><span data-count>{}</span> problems; cells are c/n (correct of samples): <span class=\"c-never\">never</span> <span class=\"c-sometimes\">sometimes</span> <span class=\"c-always\">always</span>.</p>", v.rows.len());
    let short = shorten_names(&v.models, NAME_WIDTH);
    let mut head = vec!["problem".to_string()];
    for (full, s) in v.models.iter().zip(&short) {
        let mark = if focus == Some(full.as_str()) {
            " class=\"focus\""
        } else {
            ""
        };
        head.push(format!(
            "<span title=\"{}\"{mark}>{}</span>",
            esc(full),
            esc(s)
        ));
    }
    head.push("question".into());
    let rows: Vec<String> = v.rows.iter().map(|r| problem_row(v, r)).collect();
    body.push_str(&table("sortable grid", &head, &rows));
    let nav = [
        (run_href(&v.run), v.run.clone()),
        (format!("{}/problems", run_href(&v.run)), "problems".into()),
    ];
    shell("problems", &nav, &stamp(&v.run), &body)
}

fn problem_row(v: &ProblemsView, r: &super::data::ProblemRow) -> String {
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
    let _ = write!(
        out,
        " data-text=\"{}\">",
        esc(&format!("{} {}", r.id, r.first_line))
    );
    let _ = write!(
        out,
        "<td>{}</td>",
        link(&problem_href(&v.run, &r.id), &r.id)
    );
    for c in &r.cells {
        let share = if c.n == 0 {
            -1.0
        } else {
            c.c as f64 / c.n as f64
        };
        let _ = write!(
            out,
            "<td class=\"c-{}\" data-sort=\"{share}\" title=\"{} without an answer\">{}/{}</td>",
            c.class, c.no_answer, c.c, c.n
        );
    }
    let _ = write!(out, "<td class=\"q\">{}</td></tr>", esc(&r.first_line));
    out
}

pub fn problem(v: &ProblemView) -> String {
    let mut body = format!(
        "<h1>Problem {}</h1><label class=\"toggle\"><input type=\"checkbox\" data-math> readable math</label>\
         <h2>Question</h2><pre class=\"text math\">{}</pre><h2>Gold answer</h2><pre class=\"text math gold\">{}</pre>",
        esc(&v.id),
        esc(&v.question),
        esc(&v.gold)
    );
    for m in &v.models {
        body.push_str(&model_section(&v.run, &v.id, m));
    }
    if let Some(b) = &v.before {
        let _ = write!(
            body,
            "<h2>Before: run {}</h2><div class=\"before\">",
            link(&problem_href(&b.run, &v.id), &b.run)
        );
        for m in &b.models {
            let _ = write!(
                body,
                "<div class=\"card\"><h3 class=\"name\">{}</h3><p>{} of {} correct</p>{}</div>",
                esc(&m.model),
                m.c,
                m.n,
                clusters(m)
            );
        }
        body.push_str("</div>");
    }
    let nav = [
        (run_href(&v.run), v.run.clone()),
        (format!("{}/problems", run_href(&v.run)), "problems".into()),
        (problem_href(&v.run, &v.id), v.id.clone()),
    ];
    shell(&v.id, &nav, &stamp(&v.run), &body)
}

fn clusters(m: &ModelSamples) -> String {
    let mut out = String::from("<ul class=\"clusters\">");
    for c in &m.clusters {
        let class = if c.correct { "correct" } else { "wrong" };
        let _ = write!(
            out,
            "<li class=\"v-{class}\"><code class=\"math\">{}</code> × {}</li>",
            esc(&c.answer),
            c.votes
        );
    }
    out.push_str("</ul>");
    out
}

fn model_section(run: &str, id: &str, m: &ModelSamples) -> String {
    let mut out = format!(
        "<section class=\"model\"><h2 class=\"name\">{}</h2><p>{} of {} samples correct ({} stored)</p>\
         <h3>Answers by votes</h3>{}<div class=\"samples\">",
        esc(&m.model),
        m.c,
        m.n,
        m.samples.len(),
        clusters(m)
    );
    for s in &m.samples {
        out.push_str(&sample(run, id, &m.model, s));
    }
    out.push_str("</div></section>");
    out
}

fn sample(run: &str, id: &str, model: &str, s: &SampleView) -> String {
    let verdict = if s.rule == s.verdict {
        esc(s.verdict)
    } else {
        format!("rule: {} · judge: {}", esc(s.rule), esc(s.verdict))
    };
    let mut out = format!(
        "<article class=\"sample v-{}\"><header><b>#{}</b> {verdict}</header><dl>\
         <dt>answer</dt><dd><code class=\"math\">{}</code></dd><dt>found by</dt><dd>{}</dd>\
         <dt>finish</dt><dd>{}</dd><dt>tokens</dt><dd>{}</dd><dt>latency</dt><dd>{} ms</dd></dl>",
        s.verdict.replace(' ', "-"),
        esc(&s.index),
        esc(s.extracted.as_deref().unwrap_or("(none)")),
        found_by(s),
        esc(&format!(
            "{} {}",
            s.outcome,
            s.finish_reason.as_deref().unwrap_or("")
        )),
        s.completion_tokens
            .map_or_else(|| "-".into(), |t| t.to_string()),
        s.latency_ms,
    );
    if let Some(search) = &s.search {
        out.push_str("<p>chosen path:</p><ol class=\"path\">");
        for step in &search.path {
            let _ = write!(out, "<li><pre class=\"text math\">{}</pre></li>", esc(step));
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
    out.push_str(&response(&s.response));
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
        return format!("<pre class=\"text math\">{}</pre>", esc(text));
    }
    let preview: String = text.chars().take(FOLD_PREVIEW).collect();
    format!(
        "<details><summary><span class=\"text\">{}</span>… ({} characters)</summary><pre class=\"text math\">{}</pre></details>",
        esc(&preview),
        text.chars().count(),
        esc(text)
    )
}

pub fn compare(v: &CompareView) -> String {
    let mut body = format!(
        "<h1>Compare</h1><p>A: {} · B: {} (B − A in percentage points, exact paired test, Holm-corrected)</p>",
        link(&run_href(&v.a), &v.a),
        link(&run_href(&v.b), &v.b)
    );
    for r in &v.rows {
        let flag = if r.flagged {
            " <b class=\"flag\">flagged</b>"
        } else {
            ""
        };
        let p = r
            .p_holm
            .map_or_else(|| "untested".into(), |p| format!("p (Holm) {p:.4}"));
        let _ = write!(
            body,
            "<details class=\"cmp\"><summary><span class=\"name\">{}</span> · {} · A {} · B {} · Δ {} · {p}{flag} · {} of {} problems moved</summary>",
            esc(&r.model), esc(&r.metric), esc(&r.a), esc(&r.b), esc(&r.delta), r.problems.len(), r.shared
        );
        let head: Vec<String> = ["problem", "A", "B", "B − A"].map(String::from).to_vec();
        let rows: Vec<String> = (r.problems.iter())
            .map(|d| {
                cells(&[
                    format!(
                        "{} ({})",
                        link(&problem_href(&v.b, &d.id), &d.id),
                        link(&problem_href(&v.a, &d.id), "in A")
                    ),
                    format!("{:.3}", d.a),
                    format!("{:.3}", d.b),
                    format!("{:+.3}", d.b - d.a),
                ])
            })
            .collect();
        body.push_str(&table("sortable diffs", &head, &rows));
        body.push_str("</details>");
    }
    list(&mut body, "Not compared", &v.skipped);
    shell("compare", &[], "", &body)
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
