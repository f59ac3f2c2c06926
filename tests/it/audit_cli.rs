//! `gpassk audit` against the shipped copy of the paper's published table.
//!
//! The run is built so its per-problem counts reproduce a published row: Qwen2.5-Math-72B-Instruct
//! on AIME2025 (Greedy 13.3, Pass@16 30.1, G-Pass@16 15.7/13.3/13.3/13.3, mG-Pass@16 13.3) with
//! 30 problems at n = 48: four always right (greedy right), three with c = 3, two with c = 6, one
//! with c = 10, twenty never right. That gives 13.3, 29.9, 15.4, 13.3, 13.3, 13.3, 13.3.

use crate::common::{run as gpassk, stderr, stdout};
use serde_json::json;
use std::path::Path;

const PUBLISHED: &str = "datasets/published/gpassk_paper_v5.csv";

/// Writes a run of one model named `mine` with the given correct counts per problem.
fn build_run(dir: &Path, n: u32, temperature: f64, counts: &[(u32, bool)]) {
    build_run_of(dir, "mine", n, temperature, counts);
}

/// [`build_run`] of a model named `model`.
fn build_run_of(dir: &Path, model: &str, n: u32, temperature: f64, counts: &[(u32, bool)]) {
    std::fs::create_dir_all(dir.join("checkpoints")).unwrap();
    let dataset = dir.join("problems.jsonl");
    let lines: String = (0..counts.len())
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("a{i}"), "question": "?", "answer": (100 + i).to_string()})
            )
        })
        .collect();
    std::fs::write(&dataset, &lines).unwrap();
    let sha = {
        use sha2::{Digest, Sha256};
        Sha256::digest(lines.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let dataset = dataset.to_str().unwrap();
    let mut records = String::new();
    let record = |i: usize, idx: serde_json::Value, right: bool| {
        let answer = if right { 100 + i } else { 1 };
        json!({
            "run_id": "audit", "model": model, "model_id": "qwen-math-72b", "served_model": null,
            "system_fingerprint": null, "problem_id": format!("a{i}"), "sample_index": idx,
            "seed": 42, "temperature": temperature, "top_p": 0.8, "max_tokens": 8192,
            "prompt_hash": "h", "response": format!("so \\boxed{{{answer}}}"),
            "finish_reason": "stop", "usage": null, "choices_in_request": 1, "latency_ms": 1,
            "started_at": "t", "finished_at": "t", "attempts": 1, "outcome": "ok"
        })
        .to_string()
    };
    for (i, &(c, greedy)) in counts.iter().enumerate() {
        for s in 0..n {
            records.push_str(&record(i, json!(s), s < c));
            records.push('\n');
        }
        records.push_str(&record(i, json!("greedy"), greedy));
        records.push('\n');
    }
    std::fs::write(dir.join(format!("checkpoints/{model}.jsonl")), records).unwrap();
    let sampling = json!({"n": n, "temperature": temperature, "top_p": 0.8, "top_k": 50, "seed": 42,
        "max_tokens": 8192, "greedy": true, "use_n_param": false, "n_per_request": 1, "stop": []});
    let manifest = json!({
        "harness": "gpassk 0.1.0", "git_commit": null, "run_id": "audit",
        "created_at": "t", "updated_at": "t", "finished_at": "t", "status": "complete",
        "config_path": "audit.toml",
        "config": {
            "api": {"base_url": "http://127.0.0.1:9"},
            "sampling": {"n": n, "temperature": temperature, "top_p": 0.8, "top_k": 50, "seed": 42,
                         "max_tokens": 8192, "greedy": true},
            "models": [{"name": model, "model_id": "qwen-math-72b"}],
            "evaluation": {"dataset": dataset, "k": [16], "g_pass_thresholds": [0.25, 0.5, 0.75, 1.0],
                           "metrics": ["greedy_acc", "pass@16", "mg_pass@16"]}
        },
        "config_hash": "c", "prompt_template": "{question}", "prompt_hash": "h",
        "few_shot_examples": 0,
        "dataset": {"name": dataset, "files": [dataset], "sha256": sha, "problems": counts.len(),
                    "limit": null},
        "models": {model: {"model_id": "qwen-math-72b", "base_url": "http://127.0.0.1:9",
            "sampling": sampling, "status": "complete", "error": null,
            "units_planned": counts.len() * (n as usize + 1), "ok": counts.len() * (n as usize + 1),
            "truncated": 0, "api_error": 0, "served_models": {}, "system_fingerprints": []}}
    });
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

fn paper_like_counts() -> Vec<(u32, bool)> {
    let mut counts = vec![(48, true); 4];
    counts.extend([(3, false); 3]);
    counts.extend([(6, false); 2]);
    counts.push((10, false));
    counts.extend([(0, false); 20]);
    counts
}

#[test]
fn audit_of_counts_built_to_match_a_published_row_is_within() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 48, 1.0, &paper_like_counts());
    let out = gpassk(&[
        "audit",
        dir.path().to_str().unwrap(),
        "--published",
        PUBLISHED,
        "--benchmark",
        "AIME2025",
        "--model-map",
        "mine=Qwen2.5-Math-72B-Instruct",
    ]);
    let stdout = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", stderr(&out));
    assert!(
        stdout.contains("mine (published as Qwen2.5-Math-72B-Instruct):"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("within") || l.contains("outside"))
        .filter(|l| !l.contains(" within, "))
        .collect();
    assert_eq!(rows.len(), 7, "{stdout}");
    assert!(rows.iter().all(|r| r.contains("within")), "{stdout}");
    let pass = rows.iter().find(|r| r.contains("Pass@16 ")).unwrap();
    assert!(
        pass.contains("30.1") && pass.contains("29.9") && pass.contains("-0.2"),
        "{pass}"
    );
    assert!(
        stdout.contains("7 within, 0 outside, 0 not measured"),
        "{stdout}"
    );
    // The protocol matches the paper's except for the grader.
    let warnings: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("LLM judge"));
}

#[test]
fn audit_flags_far_values_and_protocol_differences() {
    let dir = tempfile::tempdir().unwrap();
    // Everything right at n = 16 and temperature 0.7: far above the published row.
    build_run(dir.path(), 16, 0.7, &[(16, true); 30]);
    let out = gpassk(&[
        "audit",
        dir.path().to_str().unwrap(),
        "--published",
        PUBLISHED,
        "--benchmark",
        "AIME2025",
        "--model-map",
        "mine=Qwen2.5-Math-72B-Instruct",
    ]);
    let stdout = stdout(&out);
    assert_eq!(out.status.code(), Some(0));
    assert!(stdout.contains("0 within, 7 outside"), "{stdout}");
    assert!(stdout.contains("warning: n = 16 samples per problem; the paper uses n = 48"));
    assert!(stdout.contains("warning: temperature 0.7"));
}

#[test]
fn audit_bad_input_names_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 16, 1.0, &[(1, false); 3]);
    let run = dir.path().to_str().unwrap();
    let unknown = gpassk(&[
        "audit",
        run,
        "--published",
        PUBLISHED,
        "--benchmark",
        "AIME2025",
        "--model-map",
        "mine=Nobody",
    ]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(stderr(&unknown).contains("has no model \"Nobody\""));
    let no_bench = gpassk(&["audit", run, "--published", PUBLISHED]);
    assert_eq!(no_bench.status.code(), Some(2));
    assert!(stderr(&no_bench).contains("pass --benchmark"));
    let small = gpassk(&[
        "audit",
        run,
        "--published",
        PUBLISHED,
        "--benchmark",
        "AIME2025",
        "--model-map",
        "mine=Qwen2.5-Math-72B-Instruct",
    ]);
    assert_eq!(small.status.code(), Some(0));
    assert!(stdout(&small).contains("warning: the run scored 3 problems; AIME2025 has 30"));
    let bad_csv = dir.path().join("bad.csv");
    std::fs::write(
        &bad_csv,
        "source,benchmark,model,metric,value\ns,AIME2025,M,Pass@16,high\n",
    )
    .unwrap();
    let out = gpassk(&["audit", run, "--published", bad_csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("bad.csv:2:") && err.contains("`value`"),
        "{err}"
    );
}

/// `gpassk audit <dir> --published … --benchmark AIME2025 EXTRA…` at 80 columns.
fn audit_at_80(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "audit",
        dir.to_str().unwrap(),
        "--published",
        PUBLISHED,
        "--benchmark",
        "AIME2025",
    ];
    args.extend_from_slice(extra);
    crate::common::gpassk()
        .args(&args)
        .env("COLUMNS", "80")
        .output()
        .unwrap()
}

#[test]
fn audit_formats_filters_fail_outside_and_did_you_mean() {
    let far = tempfile::tempdir().unwrap();
    build_run(far.path(), 16, 0.7, &[(16, true); 30]);
    let map = ["--model-map", "mine=Qwen2.5-Math-72B-Instruct"];
    let table = audit_at_80(far.path(), &map);
    assert_eq!(table.status.code(), Some(0));
    for line in stdout(&table).lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    let failing = audit_at_80(far.path(), &[&map[..], &["--fail-outside"]].concat());
    assert_eq!(failing.status.code(), Some(1));
    assert!(stderr(&failing).contains("--fail-outside: 7 of 7 values outside their intervals"));
    let close = tempfile::tempdir().unwrap();
    build_run(close.path(), 48, 1.0, &paper_like_counts());
    assert_eq!(
        audit_at_80(close.path(), &[&map[..], &["--fail-outside"]].concat())
            .status
            .code(),
        Some(0)
    );

    let csv = audit_at_80(
        close.path(),
        &[&map[..], &["--format", "csv", "--metric", "Pass@16"]].concat(),
    );
    let csv = stdout(&csv);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "model,published_as,metric,published,files,sources,contested,measured,ci_low,ci_high,difference,verdict"
    );
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(
        lines[1].starts_with(
            "mine,Qwen2.5-Math-72B-Instruct,Pass@16,30.1,datasets/published/gpassk_paper_v5.csv,arXiv2412.13147v5:Table9,false,29.9"
        ),
        "{csv}"
    );
    let json = audit_at_80(
        close.path(),
        &[&map[..], &["--format", "json", "--k", "16"]].concat(),
    );
    let v: serde_json::Value = serde_json::from_str(&stdout(&json)).unwrap();
    let metrics: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics.len(), 6, "{metrics:?}");
    assert!(metrics.iter().all(|m| m.contains("@16")));
    assert!(v[0]["ci_low"].as_f64().is_some());
    // Warnings go to stderr so the JSON stays parseable.
    assert!(stderr(&json).contains("warning: graded by gpassk's rule-based grader"));
    let md = stdout(&audit_at_80(
        close.path(),
        &[&map[..], &["--format", "md"]].concat(),
    ));
    assert!(
        md.contains(
            "| model | published as | metric | published | src | measured [95% CI] | diff | verdict |"
        ),
        "{md}"
    );

    let typo = audit_at_80(
        close.path(),
        &["--model-map", "mine=Qwen2.5-Math-72B-Instrct"],
    );
    assert_eq!(typo.status.code(), Some(2));
    assert!(
        stderr(&typo).contains("did you mean Qwen2.5-Math-72B-Instruct?"),
        "{}",
        stderr(&typo)
    );
    let unmapped = audit_at_80(close.path(), &[]);
    assert_eq!(unmapped.status.code(), Some(2));
    let err = stderr(&unmapped);
    assert!(
        err.contains(
            "no run model matches a published model by name;\n  map them with --model-map \
             RUN=PUBLISHED:\n  mine\n    did you mean Qwen2.5-Math-72B-Instruct?"
        ),
        "{err}"
    );
}

/// Issue 40: six long run names that hold the published names with what the runs add (an org,
/// a quantisation, a server, `-weekly`): the error is short lines, each run name whole on its
/// own line with the published name it holds under it.
#[test]
fn a_run_name_holding_a_published_name_is_found_and_the_error_is_short_lines() {
    let runs = [
        (
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B-bf16-weekly",
            "DeepSeek-Distill-Qwen-32B",
        ),
        (
            "mistralai-Mistral-Large-Instruct-2411-int4-weekly",
            "Mistral-Large-Instruct-2411",
        ),
        (
            "google-gemma-2-27b-it-sglang-tp2-bf16-canary-weekly",
            "Gemma-2-27b-it",
        ),
        (
            "Qwen-Qwen2.5-Math-72B-Instruct-vllm-tp4-fp16-weekly",
            "Qwen2.5-Math-72B-Instruct",
        ),
    ];
    for (run, want) in runs {
        let dir = tempfile::tempdir().unwrap();
        build_run_of(dir.path(), run, 16, 0.7, &[(16, true); 30]);
        let out = crate::common::gpassk()
            .args([
                "audit",
                dir.path().to_str().unwrap(),
                "--benchmark",
                "AIME2024-45",
            ])
            .env("COLUMNS", "80")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("\n  {run}\n    did you mean {want}?")),
            "{err}"
        );
        for line in err.lines() {
            assert!(line.chars().count() <= 100, "{line}");
        }
    }
}

#[test]
fn audit_prints_warnings_before_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 16, 0.7, &[(16, true); 30]);
    let out = audit_at_80(
        dir.path(),
        &["--model-map", "mine=Qwen2.5-Math-72B-Instruct"],
    );
    let stdout = stdout(&out);
    let lines: Vec<&str> = stdout.lines().collect();
    let first = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|l| pred(l)).unwrap();
    let warning = first(&|l| l.starts_with("warning:"));
    let last_warning = lines
        .iter()
        .rposition(|l| l.starts_with("warning:"))
        .unwrap();
    let verdict = first(&|l| l.ends_with("outside"));
    let counts = first(&|l| l.contains(" within, "));
    assert!(
        warning < verdict && last_warning < verdict && verdict < counts,
        "{stdout}"
    );
}

#[test]
fn audit_hints_the_nearest_benchmark_when_none_matches() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 16, 1.0, &[(1, false); 3]);
    let run = dir.path().to_str().unwrap();
    let out = gpassk(&[
        "audit",
        run,
        "--published",
        PUBLISHED,
        "--benchmark",
        "aime2024",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("--benchmark \"aime2024\": not in datasets/published/gpassk_paper_v5.csv; did you mean AIME2024-45?"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A run mapped to DeepSeek-Distill-Qwen-32B on AIME2024-45, audited against the shipped sources
/// (no `--published`): the paper and README say 31.3 for G-Pass@16_1.0, the leaderboard 33.6.
#[test]
fn audit_of_the_shipped_sources_lists_their_disagreements() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 48, 1.0, &paper_like_counts());
    let args = [
        "audit",
        dir.path().to_str().unwrap(),
        "--benchmark",
        "AIME2024-45",
        "--model-map",
        "mine=DeepSeek-Distill-Qwen-32B",
    ];
    let out = crate::common::gpassk()
        .args(args)
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let stdout = stdout(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", stderr(&out));
    // The sources are cited by what they are and where to find them, not by a local path.
    for source in [
        "[1] arXiv:2412.13147v5 Table6, Table7, Table8, Table9 (https://arxiv.org/abs/2412.13147v5)",
        "[2] GPassK at 20a02a1 README.md (https://github.com/open-compass/GPassK/tree/20a02a1)",
        "[3] GPassK at 20a02a1 docs/results.json (https://github.com/open-compass/GPassK/tree/20a02a1)",
    ] {
        assert!(stdout.lines().any(|l| l == source), "{source}: {stdout}");
    }
    assert!(!stdout.contains("datasets/published"), "{stdout}");
    assert!(
        stdout.contains("* the sources disagree on DeepSeek-Distill-Qwen-32B G-Pass@16_1.0: 31.3 [1, 2] vs 33.6 [3]"),
        "{stdout}"
    );
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("G-Pass@16_1.0 "))
        .collect();
    assert_eq!(rows.len(), 2, "{stdout}");
    assert!(
        rows[0].contains("31.3") && rows[0].contains("1,2*"),
        "{}",
        rows[0]
    );
    assert!(
        rows[1].contains("33.6") && rows[1].contains(" 3* "),
        "{}",
        rows[1]
    );
    let pass = stdout.lines().find(|l| l.starts_with("Pass@16 ")).unwrap();
    assert!(pass.contains(" 1 "), "only the paper gives Pass@16: {pass}");
}

/// Three sources of one's own, one per format: a value they agree on within rounding is one row
/// citing all three; a value they disagree on is a row per claim, flagged in the machine formats.
#[test]
fn audit_reads_several_sources_and_cites_each_value() {
    let dir = tempfile::tempdir().unwrap();
    build_run(dir.path(), 48, 1.0, &paper_like_counts());
    let csv = dir.path().join("paper.csv");
    std::fs::write(&csv, "source,benchmark,model,metric,value\nT9,AIME2025,Qwen2.5-Math-72B-Instruct,Greedy,13.3\nT9,AIME2025,Qwen2.5-Math-72B-Instruct,G-Pass@16_1.0,13.3\n").unwrap();
    let md = dir.path().join("README.md");
    std::fs::write(&md, "### *AIME2025*\n|LLMs|Greedy|G-Pass@16_1.0|\n|--|--|--|\n|Qwen2.5-Math-72B-Instruct 🏐|13.3|13.3|\n").unwrap();
    let json = dir.path().join("results.json");
    std::fs::write(&json, r#"{"Qwen2.5 Math 72B Instruct": {"Greedy": {"AIME2025": 13.33}, "G-Pass@16-1.0": {"AIME2025": 4.4}}}"#).unwrap();
    let [csv, md, json] = [&csv, &md, &json].map(|p| p.to_str().unwrap().to_string());
    let run = dir.path().to_str().unwrap();
    let base = [
        "audit",
        run,
        "--published",
        &csv,
        "--published",
        &md,
        "--published",
        &json,
    ];
    let map = [
        "--benchmark",
        "AIME2025",
        "--model-map",
        "mine=Qwen2.5-Math-72B-Instruct",
    ];
    let out = crate::common::gpassk()
        .args([&base[..], &map[..], &["--format", "json"]].concat())
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let rows: Vec<(&str, f64, &str, bool)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap();
            (
                s("metric"),
                r["published"].as_f64().unwrap(),
                s("sources"),
                r["contested"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("Greedy", 13.33, "T9; README.md:4; results.json", false),
            ("G-Pass@16_1.0", 13.3, "T9; README.md:4", true),
            ("G-Pass@16_1.0", 4.4, "results.json", true),
        ]
    );
    assert!(stderr(&out).contains("* the sources disagree on Qwen2.5-Math-72B-Instruct G-Pass@16_1.0: 13.3 [1, 2] vs 4.4 [3]"), "{}", stderr(&out));
    let bad = dir.path().join("bad.md");
    std::fs::write(
        &bad,
        "## AIME2025\n|LLMs|Greedy|\n|--|--|\n|M|13.3|\n|N|n/a|\n",
    )
    .unwrap();
    let out = gpassk(&[
        "audit",
        run,
        "--published",
        &csv,
        "--published",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("bad.md:5: field `Greedy`: \"n/a\""),
        "{}",
        stderr(&out)
    );
}
