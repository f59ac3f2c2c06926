//! The HTML report as a user opens it: six models with real-length names (one interrupted, one
//! failed, server text that needs escaping), n = 16, k ∈ {1, 4, 16}. The same run feeds
//! scripts/html-screenshots.sh through the ignored test `write_screenshot_run`.

use crate::common::{ok, repo, run as gpassk};
use std::path::{Path, PathBuf};

const N: u32 = 16;
const PROBLEMS: usize = 24;
const INTERRUPTED_AFTER: usize = 15;

/// A model of a fixture run: name, model id and skill.
type Model = (&'static str, &'static str, f64);

/// The fourth is interrupted and the sixth failed in the partial run.
const MODELS: [Model; 6] = [
    (
        "DeepSeek-R1-Distill-Qwen-32B",
        "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
        0.9,
    ),
    (
        "Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-8B-Instruct",
        0.35,
    ),
    (
        "Qwen2.5-Math-72B-Instruct",
        "Qwen/Qwen2.5-Math-72B-Instruct",
        0.8,
    ),
    (
        "Mistral-Small-24B-Instruct-2501",
        "mistralai/Mistral-Small-24B-Instruct-2501",
        0.55,
    ),
    ("QwQ-32B-Preview", "Qwen/QwQ-32B-Preview <rerun & 'b'>", 0.7),
    ("gemma-2-27b-it", "google/gemma-2-27b-it", 0.5),
];
const FAILED: &str = "connection refused ×25 (http://127.0.0.1:9/v1/chat/completions)";
/// Server text in the interrupted model's error: it must reach the page escaped.
const STOPPED: &str = "HTTP 503: <h1>Service Unavailable</h1>";

/// The short name report.html shows for `full`, from its Models table (the full name when the
/// table does not shorten it).
fn short_of(html: &str, full: &str) -> String {
    let cell = format!("</td><td class=\"t\">{full}</td>");
    html.find(&cell).map_or_else(
        || full.to_string(),
        |at| {
            let row = &html[..at];
            row[row.rfind("<td>").unwrap() + 4..].to_string()
        },
    )
}

/// Correct samples of a model of `skill` on problem `i`: harder problems later, c = 0 and c = n
/// both occur.
fn correct(i: usize, skill: f64) -> u32 {
    let difficulty = i as f64 / (PROBLEMS - 1) as f64;
    let p = (skill + 0.6 - 1.3 * difficulty).clamp(0.0, 1.0);
    (p * f64::from(N)).round() as u32
}

/// Writes a scored-to-be run directory under `root`; with `partial`, model 4 stops after
/// [`INTERRUPTED_AFTER`] problems and model 6 has no checkpoint at all.
pub(crate) fn six_model_run(root: &Path, partial: bool) -> PathBuf {
    run_of(root, partial, &MODELS)
}

/// [`six_model_run`] with other models (the fourth and sixth as there when `partial`).
fn run_of(root: &Path, partial: bool, models: &[Model]) -> PathBuf {
    let week = Week {
        name: "six-models",
        partial,
        ..Week::default()
    };
    six_model_week(root, &week, models)
}

/// One run of the weekly job: which model did worse and whose fingerprint changed this week.
#[derive(Default)]
pub(crate) struct Week {
    pub name: &'static str,
    /// Model 4 interrupted and model 6 failed.
    pub partial: bool,
    /// Models whose skill fell this week, and by how much.
    pub weaker: &'static [(usize, f64)],
    /// A model served with another system fingerprint this week.
    pub fingerprint: Option<usize>,
}

/// [`run_of`] for one week: the run directory `root/<week.name>`.
pub(crate) fn six_model_week(root: &Path, week: &Week, models: &[Model]) -> PathBuf {
    use sha2::{Digest, Sha256};
    let data = root.join("levels.jsonl");
    let lines: String = (0..PROBLEMS)
        .map(|i| {
            let level = 1 + i * 5 / PROBLEMS;
            format!("{{\"id\": \"p{i}\", \"level\": \"Level {level}\", \"question\": \"question {i}\", \"answer\": \"1\"}}\n")
        })
        .collect();
    std::fs::write(&data, &lines).unwrap();
    let sha: String = Sha256::digest(lines.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let run = root.join(week.name);
    std::fs::create_dir_all(run.join("checkpoints")).unwrap();
    let fixture = repo().join("tests/fixtures/report_run");
    let text = std::fs::read_to_string(fixture.join("manifest.json")).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&text).unwrap();
    let path = data.to_str().unwrap();
    m["run_id"] = week.name.into();
    let partial = week.partial;
    m["status"] = if partial { "interrupted" } else { "complete" }.into();
    m["dataset"] = serde_json::json!({"name": path, "files": [path], "sha256": sha,
        "problems": PROBLEMS, "limit": null});
    let ev = &mut m["config"]["evaluation"];
    ev["dataset"] = path.into();
    ev["k"] = serde_json::json!([1, 4, 16]);
    ev.as_object_mut().unwrap().remove("metrics");
    ev["fields"] = serde_json::json!({"id": "id", "subset": "level"});
    m["config"]["sampling"]["n"] = N.into();
    m["config"]["models"] = models
        .iter()
        .map(|(name, id, _)| serde_json::json!({"name": name, "model_id": id}))
        .collect();
    let template = m["models"]["alpha"].clone();
    let entries = m["models"].as_object_mut().unwrap();
    entries.clear();
    let planned = PROBLEMS as u64 * u64::from(N + 1);
    for (j, &(name, id, skill)) in models.iter().enumerate() {
        let mut e = template.clone();
        e["model_id"] = id.into();
        e["sampling"]["n"] = N.into();
        e["units_planned"] = planned.into();
        let (status, error, done) = match j {
            3 if partial => ("interrupted", Some(STOPPED), INTERRUPTED_AFTER),
            5 if partial => ("failed", Some(FAILED), 0),
            _ => ("complete", None, PROBLEMS),
        };
        e["status"] = status.into();
        e["error"] = error.into();
        e["ok"] = (done as u64 * u64::from(N + 1)).into();
        e["served_models"] = serde_json::json!({});
        let fingerprint = (week.fingerprint == Some(j)).then_some("fp_b");
        if let Some(f) = fingerprint {
            e["system_fingerprints"] = serde_json::json!([f]);
        }
        entries.insert(name.to_string(), e);
        if done > 0 {
            let fell = (week.weaker.iter())
                .find(|(m, _)| *m == j)
                .map_or(0.0, |w| w.1);
            write_checkpoint(&run, &fixture, (name, id, skill - fell), fingerprint, done);
        }
    }
    std::fs::write(run.join("manifest.json"), m.to_string()).unwrap();
    run
}

/// A model's samples and greedy answer for its first `done` problems, served with
/// `fingerprint`.
fn write_checkpoint(
    run: &Path,
    fixture: &Path,
    (name, id, skill): Model,
    fingerprint: Option<&str>,
    done: usize,
) {
    let template = std::fs::read_to_string(fixture.join("checkpoints/alpha.jsonl")).unwrap();
    let mut r: serde_json::Value = serde_json::from_str(template.lines().next().unwrap()).unwrap();
    r["run_id"] = run.file_name().unwrap().to_str().unwrap().into();
    if let Some(f) = fingerprint {
        r["system_fingerprint"] = f.into();
    }
    r["model"] = name.into();
    r["model_id"] = id.into();
    let mut out = String::new();
    for i in 0..done {
        let c = correct(i, skill);
        for s in 0..=N {
            r["problem_id"] = format!("p{i}").into();
            r["sample_index"] = if s == N { "greedy".into() } else { s.into() };
            let right = if s == N { 2 * c >= N } else { s < c };
            let answer = if right { 1 } else { 2 };
            r["response"] = format!("The final answer is $\\boxed{{{answer}}}$.").into();
            out.push_str(&format!("{r}\n"));
        }
    }
    std::fs::write(run.join(format!("checkpoints/{name}.jsonl")), out).unwrap();
}

fn html_of(run: &Path) -> String {
    ok(&gpassk(&[
        "report",
        run.to_str().unwrap(),
        "--format",
        "html",
    ]))
}

fn partial_html() -> String {
    let dir = tempfile::tempdir().unwrap();
    html_of(&six_model_run(dir.path(), true))
}

/// The text between `start` and the next `end` after it, for every occurrence of `start`.
fn sections<'a>(html: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    html.match_indices(start)
        .map(|(i, _)| {
            let rest = &html[i..];
            &rest[..rest.find(end).expect("closing tag")]
        })
        .collect()
}

/// The value of attribute `name` in `tag` text.
fn attr<'a>(tag: &'a str, name: &str) -> &'a str {
    let key = format!(" {name}=\"");
    let at = tag
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {tag}"))
        + key.len();
    &tag[at..at + tag[at..].find('"').unwrap()]
}

#[test]
fn page_is_responsive_tables_scroll_and_plots_scale() {
    let html = partial_html();
    assert!(
        html.contains("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
    );
    assert!(!html.contains("max-width:1100px"));
    // Every table sits in its own scrolling box; value cells never wrap.
    assert_eq!(
        html.matches("<table>").count(),
        html.matches("<div class=\"scroll\"><table>").count()
    );
    assert!(html.contains(".scroll{overflow-x:auto"));
    assert!(html.contains("white-space:nowrap"));
    let plots = sections(&html, "<svg class=\"plot", ">");
    assert_eq!(
        plots.len(),
        3 + 1 + 5,
        "three τ-plots, bars, five histograms"
    );
    for svg in plots {
        assert_eq!(attr(svg, "width"), "100%");
        assert!(attr(svg, "viewBox").starts_with("0 0 "));
    }
    // Counts and percentages live in separate tables.
    let counts = sections(&html, "<h2>Samples per model (counts)</h2>", "</table>");
    assert!(counts[0].contains("<th>no answer</th>"));
    let pcts = sections(
        &html,
        "% with 95% CI over problems (up to 24 problems; run incomplete)</h3>",
        "</table>",
    );
    assert_eq!(pcts.len(), 3);
    // The headline comes first: the largest k's metrics (the config names none), each cell its
    // value over its interval, labelled for the narrow-screen cards; the full grids fold.
    let headline = sections(&html, "<table class=\"headline\">", "</table>");
    assert_eq!(headline.len(), 1);
    let head = headline[0];
    for m in ["Greedy", "Pass@16", "G-Pass@16_1.0", "mG-Pass@16", "maj@n"] {
        assert!(head.contains(&format!("<th>{m}</th>")), "{m}: {head}");
    }
    assert!(!head.contains("Pass@4"), "{head}");
    assert!(
        head.contains("<td data-label=\"G-Pass@16_1.0\"><b>"),
        "{head}"
    );
    assert!(html.find("<table class=\"headline\">") < html.find("<details class=\"all\">"));
    for pct in pcts {
        assert!(!pct.contains("no answer") && !pct.contains("missing"));
        assert!(
            pct.contains("<th>G-Pass@16_0.25</th>")
                || pct.contains("<th>G-Pass@4_0.25</th>")
                || pct.contains("<th>G-Pass@1_0.25</th>")
        );
    }
    // The manifest is folded away.
    assert!(html
        .contains("<details>\n<summary>Manifest (manifest.json)</summary>\n<pre id=\"manifest\">"));
}

#[test]
fn one_tau_plot_per_k_with_a_line_per_model_that_has_values() {
    let html = partial_html();
    let plots = sections(&html, "<svg class=\"plot curves\"", "</figure>");
    assert_eq!(plots.len(), 3);
    for (plot, k) in plots.iter().zip([1, 4, 16]) {
        assert!(plot.contains(&format!("aria-label=\"G-Pass@{k} versus tau\"")));
        assert!(
            plot.contains(&format!(">G-Pass@{k} (%)</text>")),
            "y-axis title"
        );
        assert_eq!(plot.matches("<polyline class=\"curve\"").count(), 5);
        // Every model is in the legend by its short name (the full one on hover); the failed one
        // with its status (its reason is in the Failures section, once).
        for full in [
            "DeepSeek-R1-Distill-Qwen-32B",
            "Mistral-Small-24B-Instruct-2501",
        ] {
            let item = format!("<li title=\"{full}\">");
            assert!(plot.contains(&item), "{plot}");
            assert!(
                plot.contains(&format!("{}</li>", short_of(&html, full))),
                "{plot}"
            );
        }
        assert!(plot.contains("gemma-2-27b-it: no values (failed)</li>"));
        assert!(!plot.contains("connection refused"));
    }
}

#[test]
fn histograms_have_one_bar_per_c_on_a_shared_scale() {
    let html = partial_html();
    let figures = sections(&html, "<figure class=\"hist\"", "</figure>");
    assert_eq!(figures.len(), 6);
    let mut ratio = None;
    for (j, fig) in figures.iter().enumerate().take(5) {
        let bars = sections(fig, "<rect class=\"cbar\"", ">");
        let cs: Vec<String> = bars.iter().map(|b| attr(b, "data-c").to_string()).collect();
        let expected: Vec<String> = (0..=N).map(|c| c.to_string()).collect();
        assert_eq!(cs, expected, "model {j}");
        let done = if j == 3 { INTERRUPTED_AFTER } else { PROBLEMS };
        for c in [0, N] {
            let count = (0..done).filter(|&i| correct(i, MODELS[j].2) == c).count();
            assert!(
                fig.contains(&format!("<title>c = {c}: {count} problems</title>")),
                "model {j} c = {c}"
            );
        }
        for bar in &bars {
            let height: f64 = attr(bar, "height").parse().unwrap();
            let c: u32 = attr(bar, "data-c").parse().unwrap();
            let count = (0..done).filter(|&i| correct(i, MODELS[j].2) == c).count() as f64;
            if count > 0.0 {
                let r = height / count;
                let shared = *ratio.get_or_insert(r);
                assert!(
                    (r - shared).abs() < 0.01,
                    "model {j} c = {c}: {r} vs {shared}"
                );
            }
        }
    }
    assert!(
        figures[0].contains("never solved (c = 0)") && figures[0].contains("always solved (c = n)")
    );
    assert!(figures[5].contains("No samples to count: failed</p>"));
}

#[test]
fn failed_and_interrupted_models_are_named_with_their_reason() {
    let html = partial_html();
    let banner = sections(&html, "<div class=\"banner\"", "</div>");
    assert_eq!(banner.len(), 1);
    assert!(banner[0].contains("<strong>Incomplete run.</strong>"));
    assert!(banner[0].contains("run status: interrupted"));
    assert!(banner[0].contains("gemma-2-27b-it: failed — "));
    assert!(banner[0].contains("Mistral-Small-24B-Instruct-2501: interrupted"));
    // Each reason once, in the Failures section, with what to do about it.
    let page = &html[..html.find("<details>").expect("the manifest")];
    assert_eq!(page.matches(FAILED).count(), 1, "{page}");
    let failures = sections(&html, "<ul class=\"failures\">", "</ul>");
    assert!(failures[0].contains(&format!(
        "<strong>model gemma-2-27b-it</strong>: <span class=\"failed\">{FAILED}</span>"
    )));
    assert!(failures[0].contains("--resume"), "{}", failures[0]);
    assert!(
        html.contains("<title>G-Pass@k report: levels.jsonl (incomplete)</title>")
            || html.contains(" (incomplete)</title>")
    );
    // Per-metric problem counts show what each value rests on.
    let counts = sections(
        &html,
        "<h2>Problems behind each value (of 24)</h2>",
        "</table>",
    );
    assert_eq!(counts.len(), 1);
    for (full, used) in [
        ("Mistral-Small-24B-Instruct-2501", 15),
        ("gemma-2-27b-it", 0),
        ("Llama-3.1-8B-Instruct", 24),
    ] {
        let row = format!("<td>{}</td><td>{used}/24</td>", short_of(&html, full));
        assert!(counts[0].contains(&row), "{row}: {}", counts[0]);
    }
    // The bar chart says why a model has no bars instead of leaving a gap.
    let bars = sections(&html, "<svg class=\"plot bars\"", "</svg>");
    assert!(bars[0].contains(">no values (failed)</text>"));
    assert_eq!(bars[0].matches("<rect class=\"bar\"").count(), 10);
}

#[test]
fn a_complete_run_has_no_banner() {
    let dir = tempfile::tempdir().unwrap();
    let html = html_of(&six_model_run(dir.path(), false));
    assert!(!html.contains("class=\"banner\""));
    assert!(!html.contains("Problems behind each value"));
    assert!(!html.contains("(incomplete)"));
    assert_eq!(html.matches("<polyline class=\"curve\"").count(), 18);
}

#[test]
fn names_are_escaped_and_long_labels_turn_without_clipping() {
    let html = partial_html();
    assert!(!html.contains("<rerun") && !html.contains("<h1>Service"));
    assert!(
        html.contains("<td class=\"t\">Qwen/QwQ-32B-Preview &lt;rerun &amp; &#39;b&#39;&gt;</td>")
    );
    assert!(html.contains(
        "<span class=\"failed\">HTTP 503: &lt;h1&gt;Service Unavailable&lt;/h1&gt;</span>"
    ));
    let bars = sections(&html, "<svg class=\"plot bars\"", "</svg>")[0];
    let labels = sections(bars, "<text class=\"label model\"", "</text>");
    assert_eq!(labels.len(), 6);
    for l in &labels {
        assert!(l.contains("rotate(-45)"), "{l}");
    }
    // Long names are their one short name in the chart (as in every table), listed in full in
    // the Models table at the top, and named in full on hover.
    let short = short_of(&html, "Mistral-Small-24B-Instruct-2501");
    assert_ne!(short, "Mistral-Small-24B-Instruct-2501");
    assert!(bars.contains(&format!(">{short}<")), "{bars}");
    assert!(bars.contains("<title>Mistral-Small-24B-Instruct-2501</title>"));
    let models = sections(&html, "<h2>Models</h2>", "</table>")[0];
    assert!(
        models.contains(&format!(
            "<td>{short}</td><td class=\"t\">Mistral-Small-24B-Instruct-2501</td>"
        )),
        "{models}"
    );
    // The rotated labels have room: the viewBox leaves enough below and left of the plot.
    let view: Vec<f64> = attr(bars, "viewBox")
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(view[3] > 12.0 + 230.0 + 17.0 * 7.5 * 0.7, "{view:?}");
}

/// A sampling and a search variant that differ only at the end, and two sizes that differ only
/// inside; every name longer than the bar chart's labels and the 80-column table's name column.
const ALIKE: [Model; 4] = [
    (
        "Qwen2.5-Math-7B-Instruct-sample",
        "Qwen/Qwen2.5-Math-7B-Instruct",
        0.6,
    ),
    (
        "Qwen2.5-Math-7B-Instruct-search",
        "Qwen/Qwen2.5-Math-7B-Instruct",
        0.8,
    ),
    (
        "Llama-3.1-70B-Instruct-sampling",
        "meta-llama/Llama-3.1-70B-Instruct",
        0.7,
    ),
    (
        "Llama-3.1-8B-Instruct-sampling",
        "meta-llama/Llama-3.1-8B-Instruct",
        0.4,
    ),
];

/// Whether `shown` holds one distinct label per model of [`ALIKE`].
fn apart(shown: &[&str]) -> bool {
    let mut distinct = shown.to_vec();
    distinct.sort();
    distinct.dedup();
    distinct.len() == ALIKE.len() && shown.len() == ALIKE.len()
}

#[test]
fn names_alike_stay_apart_in_the_bar_chart_and_the_terminal_table() {
    let dir = tempfile::tempdir().unwrap();
    let run = run_of(dir.path(), false, &ALIKE);
    let html = html_of(&run);
    let bars = sections(&html, "<svg class=\"plot bars\"", "</svg>")[0];
    let labels: Vec<&str> = sections(bars, "<text class=\"label model\"", "</text>")
        .iter()
        .map(|l| l.rsplit('>').next().unwrap())
        .collect();
    assert!(apart(&labels), "{labels:?}");
    assert!(
        labels[0].ends_with("sample") && labels[1].ends_with("search"),
        "{labels:?}"
    );
    assert!(labels.iter().all(|l| l.chars().count() <= 20), "{labels:?}");
    let out = crate::common::gpassk()
        .args(["report", run.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = ok(&out);
    // Every block of the table names each model once, in a column no wider than it needs.
    for block in text.split("\nmodel ").skip(1) {
        let names: Vec<&str> = block
            .lines()
            .skip(2)
            .take(ALIKE.len())
            .map(|l| l.split("  ").next().unwrap())
            .collect();
        assert!(apart(&names), "{names:?} in\n{text}");
        assert!(names.iter().any(|n| n.contains("70B")), "{text}");
    }
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

/// Writes the six-model run to `$GPASSK_HTML_RUN` and its report there; scripts/html-screenshots.sh
/// renders it in headless Chromium.
#[test]
#[ignore = "run by scripts/html-screenshots.sh"]
fn write_screenshot_run() {
    let root = PathBuf::from(std::env::var("GPASSK_HTML_RUN").expect("GPASSK_HTML_RUN"));
    std::fs::create_dir_all(&root).unwrap();
    let run = six_model_run(&root, true);
    crate::report_verifier::add_verifier_scores(&run);
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    assert!(run.join("report.html").is_file());
}

/// The weekly job's two runs: in week 2 the Llama model is much weaker and QwQ a little, the
/// Qwen-Math model is served with another fingerprint, and gemma has failed.
pub(crate) fn two_weeks(root: &Path) -> (PathBuf, PathBuf) {
    let week1 = six_model_week(
        root,
        &Week {
            name: "2026-11-23",
            ..Week::default()
        },
        &MODELS,
    );
    let week2 = Week {
        name: "2026-11-30",
        partial: true,
        weaker: &[(1, 0.6), (4, 0.1)],
        fingerprint: Some(2),
    };
    (week1, six_model_week(root, &week2, &MODELS))
}

/// compare opens with a verdict per model that names the regression, the fingerprint change
/// and the failure with its reason, and fits 80 columns.
#[test]
fn compare_of_two_weeks_delivers_a_verdict_per_model() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = two_weeks(dir.path());
    for run in [&a, &b] {
        ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    }
    let out = crate::common::gpassk()
        .args(["compare", a.to_str().unwrap(), b.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    // A model's verdict: the indented lines under its name (`short = full`, or the name when
    // it fits), joined.
    let verdict = |model: &str| -> String {
        let lines: Vec<&str> = text.lines().collect();
        let at = (lines.iter())
            .position(|l| *l == model || l.ends_with(&format!(" = {model}")))
            .unwrap_or_else(|| panic!("{model}: {text}"));
        let under: Vec<&str> = lines[at + 1..]
            .iter()
            .take_while(|l| l.starts_with("  "))
            .map(|l| l.trim())
            .collect();
        under.join(" ")
    };
    assert!(
        verdict("Llama-3.1-8B-Instruct").starts_with("▼ REGRESSED: Pass@16 -45.8"),
        "{text}"
    );
    assert!(
        verdict("Qwen2.5-Math-72B-Instruct").contains("drift: system fingerprint"),
        "{text}"
    );
    let failed = verdict("gemma-2-27b-it");
    assert!(
        failed.starts_with("not comparable: failed in run B: connection refused"),
        "{text}"
    );
    let steady = verdict("DeepSeek-R1-Distill-Qwen-32B");
    assert_eq!(
        steady,
        "no detectable change: every headline value is the same on all 24 problems (a flag \
         needs at least 11 of them to move one way)",
        "{text}"
    );
    // A model that moved without a flag says how large a change could have been seen.
    let small = verdict("QwQ-32B-Preview");
    assert!(
        small.starts_with("no detectable change: 80% power only from about"),
        "{text}"
    );
    // The verdicts come before the rows, and nothing but the run paths is wider than 80.
    assert!(text.find("REGRESSED: ").unwrap() < text.find("A → B").unwrap());
    assert!(
        text.trim_end()
            .ends_with("significant (1 of 40): Llama-3.1-8B… Pass@16 ▼"),
        "{text}"
    );
    for line in text
        .lines()
        .filter(|l| !l.starts_with("A: ") && !l.starts_with("B: "))
    {
        assert!(line.chars().count() <= 80, "{line}");
    }
}

/// Writes the two weeks (and a third like the second) to `$GPASSK_WEEKS_DIR`, scored, for
/// scripts/html-screenshots.sh to render `compare` and `history` from.
#[test]
#[ignore = "run by scripts/html-screenshots.sh"]
fn write_two_weeks() {
    let root = PathBuf::from(std::env::var("GPASSK_WEEKS_DIR").expect("GPASSK_WEEKS_DIR"));
    std::fs::create_dir_all(&root).unwrap();
    for run in three_weeks(&root) {
        ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    }
}

/// [`two_weeks`] and a third week like the second.
fn three_weeks(root: &Path) -> [PathBuf; 3] {
    let (a, b) = two_weeks(root);
    let week3 = Week {
        name: "2026-12-07",
        partial: true,
        weaker: &[(1, 0.6), (4, 0.1)],
        fingerprint: Some(2),
    };
    [a, b, six_model_week(root, &week3, &MODELS)]
}

/// A model that failed two weeks running is marked once, where it started failing; the
/// fingerprint change is marked on that model's points only; every plot has a legend.
#[test]
fn history_marks_what_changed_for_each_model_once() {
    let dir = tempfile::tempdir().unwrap();
    for run in three_weeks(dir.path()) {
        ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    }
    let html = ok(&gpassk(&[
        "history",
        dir.path().to_str().unwrap(),
        "--format",
        "html",
    ]));
    let changes = &html[html.find("<h3>Changes</h3>").expect("a Changes list")..];
    let changes = &changes[..changes.find("</ol>").unwrap()];
    assert_eq!(
        changes.matches("gemma-2-27b-it: partial coverage").count(),
        1,
        "{changes}"
    );
    let week2 = &changes[changes.find("<b>2026-11-30</b>").unwrap()..];
    assert!(
        week2[..week2.find("</ul>").unwrap()].contains("gemma-2-27b-it: partial coverage"),
        "{changes}"
    );
    // Names the page shortened are mapped to their whole names once.
    let shown = |full: &str| -> String {
        let at = html.find(&format!("</b> = {full}")).map(|i| &html[..i]);
        at.map_or(full, |h| &h[h.rfind("<b>").unwrap() + 3..])
            .to_string()
    };
    let qwen = shown("Qwen2.5-Math-72B-Instruct");
    assert_eq!(
        changes
            .matches(&format!("{qwen}: system fingerprint"))
            .count(),
        1,
        "{changes}"
    );
    let plots = html.matches("<svg class=\"plot trend\"").count();
    assert_eq!(html.matches("<ul class=\"legend\">").count(), plots);
    let mistral = shown("Mistral-Small-24B-Instruct-2501");
    assert!(html.contains(&format!("{mistral}</li>")), "{html}");
    // gemma has no value after it failed: a cross on the axis with the reason, once per plot.
    assert_eq!(
        html.matches("<path class=\"missing\"").count(),
        plots,
        "{html}"
    );
    assert!(html.contains("gemma-2-27b-it: 2026-11-30: no value; partial coverage"));
    // Nothing changed for every model: no run-wide marker.
    assert_eq!(html.matches("<line class=\"change\"").count(), 0);

    // The terminal at 80 columns: a grid per model (not one per model and metric), each run
    // named once per grid, intervals and notes whole on their lines.
    let text = ok(&crate::common::gpassk()
        .args(["history", dir.path().to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap());
    // One values table: a row per model and run, blocks of metric columns; each model's short
    // name heads its rows once per block and is spelled out under the table.
    let blocks = text
        .lines()
        .filter(|l| l.starts_with("model ") && l.contains(" run "))
        .count();
    assert!(blocks >= 2, "{text}");
    let short = |model: &str| -> String {
        (text.lines())
            .find_map(|l| {
                l.strip_suffix(&format!(" = {model}"))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_else(|| model.to_string())
    };
    for (model, _, _) in MODELS {
        let first = format!("{} ", short(model));
        assert_eq!(
            text.lines().filter(|l| l.starts_with(&first)).count(),
            blocks,
            "{model}:\n{text}"
        );
    }
    // Every run on a line of its own, its id whole.
    for d in ["2026-11-23", "2026-11-30", "2026-12-07"] {
        assert!(
            text.contains(&format!("\n  {d}, 2026-01-01 00:00\n")),
            "{text}"
        );
    }
    assert!(text.lines().count() < 18 * MODELS.len(), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line}");
        assert_eq!(
            line.matches('[').count(),
            line.matches(']').count(),
            "{line}"
        );
    }
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "{}, 2026-11-30: system fingerprint: (none) → fp_b",
            short("Qwen2.5-Math-72B-Instruct")
        )),
        "{text}"
    );
    // A failed model's marker says why it failed.
    assert!(
        flat.contains("(status failed: connection refused"),
        "{text}"
    );
    let llama = short("Llama-3.1-8B-Instruct");
    assert!(
        flat.contains(&format!(
            "{llama}, 2026-11-30: Pass@16 REGRESSED -45.8 points, p (Holm) 0.0391"
        )),
        "{text}"
    );
    let marked =
        (text.lines()).find(|l| l.trim_start().starts_with("2026-11-30") && l.contains('▼'));
    assert!(marked.is_some(), "{text}");
}
