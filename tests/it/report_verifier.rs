//! The "Verifier versus voting" section as people read it: the six-model run of `report_html`
//! given verifier scores (two aggregations, one unreadable reply) and step labels for one model;
//! the terminal at 80 columns, Markdown tables of at most 8 columns, the HTML plots. The same
//! scores go into the run scripts/html-screenshots.sh renders.

use crate::common::{ok, read, run as gpassk};
use crate::report_html::six_model_run;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::path::Path;

/// The first 8 bytes of the response's sha256 in hex, as gpassk keys stored scores.
fn response_hash(response: &str) -> String {
    Sha256::digest(response.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (*state >> 40) as f64 / (1u64 << 24) as f64
}

/// Gives every sample of the run's models two step scores, higher for right answers but noisy
/// (a verifier that helps, not an oracle); the first model's third sample of p2 is unreadable.
/// The verifier's settings (aggregations min and last) go beside them; the first model's samples
/// of p0 and p1 get step labels.
pub(crate) fn add_verifier_scores(run: &Path) {
    let dir = run.join("verifier");
    std::fs::create_dir_all(&dir).unwrap();
    let settings = json!({"reward_model_id": "Qwen/Qwen2.5-Math-PRM-7B", "reward_base_url": null,
        "reward_api_key_env": null, "reward_mode": "pooling", "step_regex": null, "max_steps": 20,
        "aggregations": ["min", "last"]});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let mut labels = String::new();
    let mut state = 7u64;
    for entry in std::fs::read_dir(run.join("checkpoints")).unwrap() {
        let path = entry.unwrap().path();
        let model = path.file_stem().unwrap().to_str().unwrap().to_string();
        let first = model == "DeepSeek-R1-Distill-Qwen-32B";
        let mut out = String::new();
        for line in read(&path).lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            if r["sample_index"] == "greedy" {
                continue;
            }
            let response = r["response"].as_str().unwrap();
            let right = response.contains("boxed{1}");
            let base = if right { 0.55 } else { 0.3 };
            let steps = [base + 0.4 * lcg(&mut state), base + 0.4 * lcg(&mut state)];
            let unreadable = first && r["problem_id"] == "p2" && r["sample_index"] == 2;
            let scores = (!unreadable).then_some(steps);
            out.push_str(&format!(
                "{}\n",
                json!({"problem_id": r["problem_id"], "sample_index": r["sample_index"],
                    "response_hash": response_hash(response),
                    "verifier_model": "Qwen/Qwen2.5-Math-PRM-7B", "steps": 2, "scores": scores,
                    "scored_at": "2026-12-01T00:00:00Z"})
            ));
            if first && (r["problem_id"] == "p0" || r["problem_id"] == "p1") {
                for (i, s) in steps.iter().enumerate() {
                    // Rollouts agree with the verifier often, not always.
                    let correct = match (s + 0.2 * lcg(&mut state), right || i == 0) {
                        (_, false) => 0,
                        (x, true) if x > 0.85 => 4,
                        (x, true) if x > 0.75 => 2,
                        _ => 0,
                    };
                    labels.push_str(&format!(
                        "{}\n",
                        json!({"problem_id": r["problem_id"],
                            "solution_id": format!("{model}:{}:{}", r["problem_id"].as_str().unwrap(), r["sample_index"]),
                            "step_index": i + 1, "step_text": "step", "rollouts": 4,
                            "correct": correct, "he": u8::from(correct > 0), "se": f64::from(correct) / 4.0})
                    ));
                }
            }
        }
        std::fs::write(dir.join(format!("{model}.jsonl")), out).unwrap();
    }
    std::fs::create_dir_all(run.join("labels")).unwrap();
    std::fs::write(run.join("labels/labels.jsonl"), labels).unwrap();
}

/// The six-model run with verifier scores, scored.
fn scored_run(root: &Path) -> std::path::PathBuf {
    let run = six_model_run(root, true);
    add_verifier_scores(&run);
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    run
}

#[test]
fn the_terminal_shows_each_models_curve_within_80_columns() {
    let dir = tempfile::tempdir().unwrap();
    let run = scored_run(dir.path());
    let out = crate::common::gpassk()
        .args(["report", run.to_str().unwrap(), "--format", "table"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let wide = ok(&out);
    assert!(wide.contains("Verifier versus voting"), "{wide}");
    let out = crate::common::gpassk()
        .args(["score", run.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = ok(&out);
    let section = &text[text.find("Verifier versus voting").expect(&text)..];
    for line in section.lines() {
        assert!(line.chars().count() <= 80, "{line}\n{section}");
    }
    // Five models have samples (the sixth failed before its first): a curve each, first
    // aggregation only, with its trend.
    assert_eq!(section.matches("\nbon@N min").count(), 5, "{section}");
    assert!(!section.contains("bon@N last"), "{section}");
    assert_eq!(section.matches("\nbon−maj min").count(), 5, "{section}");
    assert!(section.contains("--wide: every aggregation"), "{section}");
    let joined = section.replace('\n', " ");
    assert!(
        joined.contains("DeepSeek-R1-Distill-Qwen-32B: bon@N and wmaj@N rest on each problem's scored samples: 1 samples on 1 of 24 problems have none (unreadable replies: 1), never read as 0. Problems counted: all 24 up to N = 4, 23 at N = 16."),
        "{section}"
    );
    assert!(
        joined.contains("against step labels (64 steps of 32 samples)"),
        "{section}"
    );
    let summary = read(&run.join("summary.txt"));
    assert!(
        summary.contains("bon@N last"),
        "the wide form has every aggregation"
    );
}

#[test]
fn markdown_tables_of_the_section_fit_eight_columns() {
    let dir = tempfile::tempdir().unwrap();
    let run = scored_run(dir.path());
    let md = read(&run.join("report.md"));
    let at = md.find("## Verifier versus voting").expect("the section");
    let section = &md[at..md[at..].find("\n## Notes").map_or(md.len(), |e| at + e)];
    assert!(
        section.contains("### Verifier versus voting, min of the step scores"),
        "{section}"
    );
    assert!(
        section.contains("### Verifier versus voting, last of the step scores"),
        "{section}"
    );
    assert!(
        section.contains("## Verifier against step labels"),
        "{section}"
    );
    for line in section.lines().filter(|l| l.starts_with('|')) {
        assert!(line.matches(" | ").count() < 8, "{line}: at most 8 columns");
    }
    // Long model names are their short names, spelled out in the Models table.
    let short = (md.lines())
        .find(|l| l.starts_with("| ") && !l.starts_with("| short name"))
        .and_then(|l| l.split(" | ").next())
        .map(|c| c.trim_start_matches("| ").to_string())
        .expect("a Models table row");
    assert!(
        section.contains(&format!("| {short} | 16 |")),
        "{short}: {section}"
    );
}

#[test]
fn html_plots_each_model_against_n() {
    let dir = tempfile::tempdir().unwrap();
    let run = scored_run(dir.path());
    let html = read(&run.join("report.html"));
    assert!(html.contains("<h2>Verifier versus voting</h2>"));
    assert_eq!(html.matches("<figure class=\"verifier\"").count(), 5);
    let plot = &html[html.find("<svg class=\"plot verifier\"").unwrap()..];
    let plot = &plot[..plot.find("</svg>").unwrap()];
    for series in ["pass@N", "maj@N", "wmaj@N min", "bon@N min"] {
        assert!(
            plot.contains(&format!("data-series=\"{series}\"")),
            "{series}: {plot}"
        );
    }
    // N = 1, 4, 16 on a log scale, with their tick labels.
    for n in ["1", "4", "16"] {
        assert!(
            plot.contains(&format!("text-anchor=\"middle\">{n}</text>")),
            "{plot}"
        );
    }
    assert!(html.contains("Verifier against step labels"));
    // The model whose id needs escaping is escaped in the section too.
    assert!(!html.contains("<rerun"));
}
