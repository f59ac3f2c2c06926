//! `gpassk import`: other harnesses' sample logs become runs that score, report and compare like
//! native ones; the metrics are checked against values computed here from the fixture files.

use crate::common::{ok, read, repo, run as gpassk, run_dirs, stderr, Fixture, Toml, RUN_FILES};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(rel: &str) -> PathBuf {
    repo().join("tests/fixtures/import").join(rel)
}

fn json_lines(path: &Path) -> Vec<Value> {
    read(path)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Per problem of the generic fixture: (question, gold, samples, marked correct), read here.
fn generic_counts() -> BTreeMap<String, (String, String, u64, u64)> {
    let mut out: BTreeMap<String, (String, String, u64, u64)> = BTreeMap::new();
    for v in json_lines(&fixture("jsonl/one-sample-per-line.jsonl")) {
        let e = out
            .entry(v["problem_id"].as_str().unwrap().to_string())
            .or_insert_with(|| {
                let q = v["question"].as_str().unwrap().to_string();
                (q, v["gold"].as_str().unwrap().to_string(), 0, 0)
            });
        e.2 += 1;
        e.3 += v["correct"].as_bool().unwrap() as u64;
    }
    out
}

fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// G-Pass@k_τ of one problem by its definition: P(at least ⌈τk⌉ correct among k drawn of n).
fn g_pass(n: u64, c: u64, k: u64, tau: f64) -> f64 {
    let need = ((tau * k as f64).ceil() as u64).max(1);
    (need..=k)
        .map(|j| choose(c, j) * choose(n - c, k - j) / choose(n, k))
        .sum()
}

/// The value of one metric row of metrics.json (model, metric, k, τ, overall).
fn metric(json: &Value, model: &str, name: &str, k: u64, tau: Option<f64>) -> f64 {
    let rows = json["metrics"].as_array().unwrap();
    let row = rows
        .iter()
        .find(|r| {
            r["model"] == model
                && r["metric"] == name
                && r["k"] == k
                && r["subset"] == "all"
                && tau.is_none_or(|t| {
                    let text = r["tau"].as_str().unwrap_or("-1");
                    (text.parse::<f64>().unwrap_or(-1.0) - t).abs() < 1e-9
                })
        })
        .unwrap_or_else(|| panic!("no row {model} {name} k={k} tau={tau:?}"));
    row["value"].as_f64().unwrap()
}

/// Answers every question with the gold of the generic fixture, so the native run is all
/// correct: the comparison has something to find.
fn gold_reply(r: &Recorded) -> Reply {
    let q = r.user_text().unwrap_or_default();
    let gold = generic_counts()
        .into_values()
        .find(|(question, ..)| q.contains(question.as_str()))
        .map_or("0".to_string(), |(_, g, ..)| g);
    Reply {
        choices: (0..r.n())
            .map(|_| ChoiceReply::stop(format!("So \\boxed{{{gold}}}.")))
            .collect(),
        served_model: None,
        system_fingerprint: None,
        usage: None,
    }
}

fn dataset_text() -> String {
    generic_counts()
        .iter()
        .map(|(id, (q, gold, ..))| {
            let line = serde_json::json!({"id": id, "question": q, "answer": gold});
            format!("{line}\n")
        })
        .collect()
}

#[test]
fn an_imported_run_scores_exactly_reports_both_verdicts_and_compares_with_a_native_run() {
    let env =
        Fixture::new(&dataset_text()).with_server(FakeServer::builder().responder(gold_reply));
    let cfg = env.config(Toml {
        base_url: None,
        api: "timeout = 5\nconcurrency = 2",
        sampling: "n = 6\ntemperature = 0.7\nseed = 3",
        models: "[[models]]\nname = \"stub-math\"\nmodel_id = \"stub-math\"",
        evaluation: "",
    });
    ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    let native = env.run_dir();

    let imported = env.file("imported");
    let data = env.file("data.jsonl");
    let out = ok(&gpassk(&[
        "import",
        "jsonl",
        fixture("jsonl/one-sample-per-line.jsonl").to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
        "--dataset",
        data.to_str().unwrap(),
        "--disagreements",
        env.file("disagree.jsonl").to_str().unwrap(),
    ]));
    assert!(out.contains("imported 47 samples of 8 problems"), "{out}");
    assert!(out.contains("Source verdicts beside gpassk's"), "{out}");

    // Exact values against the definition, from the fixture's own counts (arith-04 has 5).
    let counts = generic_counts();
    let json: Value = serde_json::from_str(&read(&imported.join("metrics.json"))).unwrap();
    for tau in [0.5, 1.0] {
        let want: f64 = counts
            .values()
            .map(|&(_, _, n, c)| g_pass(n, c, 4, tau))
            .sum::<f64>()
            / counts.len() as f64;
        let got = metric(&json, "stub-math", "g_pass@k", 4, Some(tau));
        assert!((got - want).abs() < 1e-9, "τ={tau}: {got} vs {want}");
    }
    let model = &json["models"][0];
    assert_eq!(model["source"]["judged_by_both"], 47, "{model}");
    let m: Value = serde_json::from_str(&read(&imported.join("manifest.json"))).unwrap();
    assert_eq!(m["imported"]["format"], "jsonl");
    assert_eq!(
        m["imported"]["files"][0]["sha256"].as_str().unwrap().len(),
        64
    );
    // Nothing the source did not record is invented.
    assert!(m["imported"]["models"]["stub-math"]["settings"]["temperature"].is_null());
    let line: Value = serde_json::from_str(
        read(&imported.join("checkpoints/stub-math.jsonl"))
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert!(
        line["temperature"].is_null() && line["source"]["at"] == "line 1",
        "{line}"
    );
    let md = read(&imported.join("report.md"));
    assert!(md.contains("## Imported from") && md.contains("## Metrics from each verdict"));

    // Re-scoring offline gives the same bytes.
    let before: Vec<String> = RUN_FILES.iter().map(|f| read(&imported.join(f))).collect();
    ok(&gpassk(&["score", imported.to_str().unwrap(), "--quiet"]));
    for (f, b) in RUN_FILES.iter().zip(&before) {
        assert_eq!(&read(&imported.join(f)), b, "{f}");
    }
    // The native run answered every problem right; the imported one did not.
    let cmp = ok(&gpassk(&[
        "compare",
        native.to_str().unwrap(),
        imported.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let rows: Value = serde_json::from_str(&cmp).unwrap();
    let rows = rows.as_array().or_else(|| rows["rows"].as_array()).unwrap();
    assert!(
        rows.iter().any(|r| r["model"] == "stub-math"
            && r["metric"] == "G-Pass@4_0.5"
            && r["delta"].as_f64().unwrap() < 0.0),
        "{cmp}"
    );
    let published = repo().join("datasets/published/gpassk_paper_v5.csv");
    let audit = gpassk(&[
        "audit",
        imported.to_str().unwrap(),
        "--published",
        published.to_str().unwrap(),
        "--benchmark",
        "LiveMathBench-202412",
        "--model-map",
        "stub-math=Llama-3.1-8B-Instruct",
    ]);
    // Audited like a native run: the protocol warnings name what the source did not record.
    assert!(
        audit.status.code().is_some_and(|c| c < 2),
        "{}",
        stderr(&audit)
    );
    let history = ok(&gpassk(&["history", env.path().to_str().unwrap()]));
    assert!(history.contains("stub-math"), "{history}");
}

#[test]
fn a_malformed_line_stops_with_exit_2_naming_file_and_line_and_leaves_nothing() {
    let env = Fixture::new("");
    let mut text = read(&fixture("jsonl/one-sample-per-line.jsonl"));
    let lines: Vec<&str> = text.lines().collect();
    let broken = format!(
        "{}\n{}\n{{\"problem_id\": \"arith-00\", oops\n{}\n",
        lines[0],
        lines[1],
        lines[2..].join("\n")
    );
    text = broken;
    let input = env.write("samples.jsonl", &text);
    let out_dir = env.file("run");
    let o = gpassk(&[
        "import",
        "jsonl",
        input.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("samples.jsonl:3"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!out_dir.exists());

    let o = ok(&gpassk(&[
        "import",
        "jsonl",
        input.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
        "--skip-bad",
    ]));
    assert!(o.contains("1 malformed records skipped"), "{o}");
    let m: Value = serde_json::from_str(&read(&out_dir.join("manifest.json"))).unwrap();
    assert_eq!(m["imported"]["bad_records"], 1);

    // An existing --out is never written into.
    let again = gpassk(&[
        "import",
        "jsonl",
        input.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("already exists"));
    assert_eq!(run_dirs(env.path()).len(), 1);
}

#[test]
fn samples_without_questions_or_verdicts_import_and_are_graded_by_gpassk_alone() {
    let env = Fixture::new("");
    let input = env.write(
        "bare.jsonl",
        "{\"problem_id\": \"a\", \"gold\": \"4\", \"response\": \"so \\\\boxed{4}\"}\n\
         {\"problem_id\": \"a\", \"gold\": \"4\", \"response\": \"so \\\\boxed{5}\"}\n\
         {\"problem_id\": \"b\", \"gold\": \"1/2\", \"response\": \"\\\\boxed{0.5}\"}\n",
    );
    let run = env.file("run");
    let out = ok(&gpassk(&[
        "import",
        "jsonl",
        input.to_str().unwrap(),
        "--out",
        run.to_str().unwrap(),
    ]));
    assert!(!out.contains("Source verdicts beside"), "{out}");
    let json: Value = serde_json::from_str(&read(&run.join("metrics.json"))).unwrap();
    assert_eq!(json["models"][0]["correct"], 2, "{}", json["models"][0]);
    assert!(json["models"][0]["source"].is_null());
}

/// Every fixture format through the command line, told apart by `auto`: each aggregate the
/// source stored is recomputed from its own verdicts and matches.
#[test]
fn every_format_imports_by_auto_and_its_stored_aggregates_recompute() {
    let env = Fixture::new("");
    for (dir, format, args, aggregates) in [
        (
            "lm-eval/v0.4.13",
            "lm-eval",
            &["--task", "gpk_arith"][..],
            true,
        ),
        ("lm-eval/v0.4.13-chat", "lm-eval", &[][..], true),
        ("lm-eval/v0.4.2", "lm-eval", &[][..], true),
        ("opencompass/n-replicas", "opencompass", &[][..], true),
        ("opencompass/n-replicas-split", "opencompass", &[][..], true),
        (
            "opencompass/replication-idx-2024-12",
            "opencompass",
            &[][..],
            true,
        ),
        (
            "opencompass/num-return-sequences",
            "opencompass",
            &[][..],
            false,
        ),
        ("lighteval/v0.13.0", "lighteval", &[][..], true),
        ("lighteval/v0.10-predictions", "lighteval", &[][..], true),
        ("evalscope/v1.14.1", "evalscope", &[][..], true),
        ("evalscope/v0.17.1", "evalscope", &[][..], true),
        ("qwen-math", "qwen-math", &[][..], true),
        ("jsonl/one-sample-per-line.jsonl", "jsonl", &[][..], false),
    ] {
        let out = env.file(&dir.replace('/', "_"));
        let input = fixture(dir);
        let mut argv = vec!["import", "auto", input.to_str().unwrap()];
        argv.extend(["--out", out.to_str().unwrap(), "--quiet"]);
        argv.extend(args);
        let o = gpassk(&argv);
        assert_eq!(o.status.code(), Some(0), "{dir}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(&format!("these are {format} files")),
            "{dir}"
        );
        let m: Value = serde_json::from_str(&read(&out.join("manifest.json"))).unwrap();
        let stored = m["imported"]["aggregates"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(!stored.is_empty(), aggregates, "{dir}: {stored:?}");
        for a in &stored {
            let (s, r) = (a["source"].as_f64().unwrap(), a["recomputed"].as_f64());
            let r = r.unwrap_or_else(|| panic!("{dir}: {a} not recomputed"));
            let tol = if s.abs() > 1.0 { 0.006 } else { 1e-6 };
            assert!((s - r).abs() <= tol, "{dir}: {a}");
        }
        assert!(
            read(&out.join("report.md")).contains("## Imported from"),
            "{dir}"
        );
    }
}

/// EvalScope 0.17.1's GSM8K parser keeps the last number, so it marks `\boxed{3/8}` correct for
/// gold 7/8: the one sample where the verdicts part is written out for a person to judge.
#[test]
fn disagreements_are_written_with_both_verdicts_and_where_the_sample_was_read() {
    let env = Fixture::new("");
    let (out, file) = (env.file("run"), env.file("disagree.jsonl"));
    ok(&gpassk(&[
        "import",
        "evalscope",
        fixture("evalscope/v0.17.1").to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--disagreements",
        file.to_str().unwrap(),
        "--quiet",
    ]));
    let lines = json_lines(&file);
    assert_eq!(lines.len(), 1, "{lines:?}");
    let d = &lines[0];
    assert_eq!(
        (d["source_verdict"].as_bool(), d["gpassk_verdict"].as_str()),
        (Some(true), Some("wrong")),
        "{d}"
    );
    assert!(
        d["response_excerpt"].as_str().unwrap().contains("3/8"),
        "{d}"
    );
    assert!(d["from"].as_str().unwrap().contains("reviews"), "{d}");
    // How gpassk found its answer, raw.
    assert_eq!(d["gpassk_found_by"], "boxed", "{d}");
    let md = read(&out.join("report.md"));
    assert!(md.contains("| stub-math | 48 | 27 | 0 | 1 | 20 |"), "{md}");
}

/// Imports of parts of one evaluation merge into the run one import of all the files gives:
/// the same metrics, every input file listed, each sample still naming its own file.
#[test]
fn imported_runs_merge_like_one_import_and_refuse_what_is_not_one_evaluation() {
    let env = Fixture::new("");
    let text = read(&fixture("jsonl/one-sample-per-line.jsonl"));
    let (low, high): (Vec<&str>, Vec<&str>) = text.lines().partition(|l| {
        ["arith-00", "arith-01", "arith-02", "arith-03"]
            .iter()
            .any(|p| l.contains(p))
    });
    let a = env.write("a.jsonl", &(low.join("\n") + "\n"));
    let b = env.write("b.jsonl", &(high.join("\n") + "\n"));
    let import = |out: &str, files: &[&Path]| {
        let mut args = vec!["import".to_string(), "jsonl".into()];
        args.extend(files.iter().map(|f| f.display().to_string()));
        args.extend([
            "--out".into(),
            env.file(out).display().to_string(),
            "--quiet".into(),
        ]);
        gpassk(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    for (out, files) in [
        ("whole", vec![&*a, &*b]),
        ("a", vec![&*a]),
        ("b", vec![&*b]),
    ] {
        ok(&import(out, &files));
    }
    let merged = env.file("merged");
    let arg = |p: &Path| p.display().to_string();
    let merge = |inputs: &[&str], out: &Path| {
        let mut args = vec!["merge".to_string()];
        args.extend(inputs.iter().map(|i| arg(&env.file(i))));
        args.extend(["--out".into(), arg(out)]);
        gpassk(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    ok(&merge(&["a", "b"], &merged));
    ok(&gpassk(&["score", merged.to_str().unwrap(), "--quiet"]));
    let metrics = |dir: &Path| -> Value {
        let mut v: Value = serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
        v.as_object_mut()
            .unwrap()
            .retain(|k, _| k == "metrics" || k == "models");
        v
    };
    assert_eq!(metrics(&merged), metrics(&env.file("whole")));
    let m: Value = serde_json::from_str(&read(&merged.join("manifest.json"))).unwrap();
    let files = m["imported"]["files"].as_array().unwrap();
    assert!(
        files[0]["path"].as_str().unwrap().ends_with("a.jsonl"),
        "{m}"
    );
    assert!(
        files[1]["path"].as_str().unwrap().ends_with("b.jsonl"),
        "{m}"
    );
    assert_eq!(m["imported"]["models"]["stub-math"]["samples"], 47);
    let records = json_lines(&merged.join("checkpoints/stub-math.jsonl"));
    let of_b = records
        .iter()
        .find(|r| r["problem_id"] == "arith-07")
        .unwrap();
    assert_eq!(of_b["source"]["file"], 1, "{of_b}");

    // Samples without a stated repeat are numbered on: two files of `x` give x four samples.
    let bare = |name: &str, answers: [&str; 2]| {
        let lines: String = answers
            .iter()
            .map(|r| format!("{{\"model\": \"m\", \"problem_id\": \"x\", \"gold\": \"4\", \"response\": \"\\\\boxed{{{r}}}\"}}\n"))
            .collect();
        env.write(name, &lines)
    };
    let (c, d) = (bare("c.jsonl", ["4", "5"]), bare("d.jsonl", ["4", "4"]));
    ok(&import("c", &[&c]));
    ok(&import("d", &[&d]));
    let cd = env.file("cd");
    ok(&merge(&["c", "d"], &cd));
    ok(&gpassk(&["score", cd.to_str().unwrap(), "--quiet"]));
    let json: Value = serde_json::from_str(&read(&cd.join("metrics.json"))).unwrap();
    assert_eq!(json["models"][0]["correct"], 3, "{}", json["models"][0]);
    assert_eq!(json["models"][0]["n"], 4, "{}", json["models"][0]);

    // Not one evaluation: refused with exit 2, naming why, writing nothing.
    let refused = |inputs: &[&str], why: &str| {
        let out = env.file("refused");
        let o = merge(inputs, &out);
        assert_eq!(o.status.code(), Some(2), "{inputs:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(why), "{inputs:?}: {}", stderr(&o));
        assert!(!out.join("manifest.json").exists());
    };
    ok(&import("a-again", &[&a]));
    refused(&["a", "a-again"], "the same file was imported");
    let other_gold = env.write("e.jsonl", &low[0].replace("\"gold\": \"", "\"gold\": \"9"));
    ok(&import("e", &[&other_gold]));
    refused(&["a", "e"], "has gold");
    refused(&["a", "c"], "refusing to merge");
}

/// Python's `json` writes float NaN and infinities as bare `NaN`/`-Infinity`; OpenCompass files
/// that hold them import as if the value were absent, with the same samples and metrics.
#[test]
fn python_nan_and_infinity_in_streamed_files_read_as_absent() {
    let env = Fixture::new("");
    let from = fixture("opencompass/n-replicas");
    let to = env.file("oc");
    for rel in [
        "predictions/stub-math/gpk_arith.json",
        "results/stub-math/gpk_arith.json",
    ] {
        let text = read(&from.join(rel));
        let text = if rel.starts_with("predictions") {
            text.replace(
                "\"prediction\": ",
                "\"entropy\": -Infinity, \"nll\": NaN, \"prediction\": ",
            )
        } else {
            text
        };
        std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
        std::fs::write(to.join(rel), text).unwrap();
    }
    let metrics = |input: &Path, out: &str| -> Value {
        let out = env.file(out);
        ok(&gpassk(&[
            "import",
            "opencompass",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ]));
        let v: Value = serde_json::from_str(&read(&out.join("metrics.json"))).unwrap();
        v["metrics"].clone()
    };
    assert_eq!(metrics(&to, "with-nan"), metrics(&from, "plain"));
}
