//! `gpassk import`: other harnesses' sample logs become runs that score, report and compare like
//! native ones; the metrics are checked against values computed here from the fixture files.

use crate::common::{
    both, copy_dir, gpassk as command, ok, read, repo, run as gpassk, run_dirs, stderr, Fixture,
    Toml, RUN_FILES,
};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub(crate) fn fixture(rel: &str) -> PathBuf {
    repo().join("tests/fixtures/import").join(rel)
}

/// `gpassk import FORMAT INPUT --out OUT ARGS…`.
pub(crate) fn import(
    format: &str,
    input: &Path,
    out: &Path,
    args: &[&str],
) -> std::process::Output {
    let mut argv = vec![
        "import",
        format,
        input.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    argv.extend(args);
    gpassk(&argv)
}

/// An imported run's manifest.
pub(crate) fn manifest(run: &Path) -> Value {
    serde_json::from_str(&read(&run.join("manifest.json"))).unwrap()
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
pub(crate) fn metric(json: &Value, model: &str, name: &str, k: u64, tau: Option<f64>) -> f64 {
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

/// A folder holding several datasets gives one run each, named after it, never one mixed run;
/// `--task` takes one of them, whose run is `--out` itself.
#[test]
fn a_folder_of_several_datasets_becomes_one_run_per_dataset() {
    let env = Fixture::new("");
    let out = env.file("lm");
    let o = import("lm-eval", &fixture("lm-eval/v0.4.13"), &out, &[]);
    let said = ok(&o);
    assert!(
        said.contains("== dataset gpk_arith ") && said.contains("== dataset gpk_arith_greedy"),
        "{said}"
    );
    for (task, n, problems) in [("gpk_arith", 6, 8), ("gpk_arith_greedy", 1, 8)] {
        let m = manifest(&out.join(task));
        assert_eq!(m["dataset"]["name"], task);
        assert_eq!(m["models"]["stub-math"]["sampling"]["n"], n, "{task}");
        let json: Value =
            serde_json::from_str(&read(&out.join(task).join("metrics.json"))).unwrap();
        assert_eq!(
            json["models"][0]["problems"], problems,
            "{task}: {}",
            json["models"][0]
        );
    }
    // OpenCompass: two datasets of split prediction files in one work folder.
    let work = env.file("oc-work");
    opencompass_two_datasets(&work, "");
    let oc = env.file("oc");
    ok(&import("opencompass", &work, &oc, &["--quiet"]));
    for abbr in ["gsm8k", "math"] {
        let m = manifest(&oc.join(abbr));
        let checks = m["imported"]["aggregates"].as_array().unwrap();
        assert!(
            !checks.is_empty()
                && checks.iter().all(|a| a["recomputed"] == a["source"]
                    || (a["recomputed"].as_f64().unwrap() - a["source"].as_f64().unwrap()).abs()
                        < 0.006),
            "{abbr}: {checks:?}"
        );
    }
    // EvalScope: two benchmarks of one model.
    let es = env.file("es-work");
    copy_dir(&fixture("evalscope/v1.14.1"), &es);
    let reviews = es.join("reviews/stub-math");
    let rows = read(&reviews.join("gsm8k_main.jsonl")).replace('\n', " \n");
    std::fs::write(reviews.join("math_500_default.jsonl"), rows).unwrap();
    let esout = env.file("es");
    ok(&import("evalscope", &es, &esout, &["--quiet"]));
    let runs: Vec<String> = run_dirs(&esout)
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs, ["gsm8k", "math_500"]);
    let one = env.file("one");
    ok(&import(
        "evalscope",
        &es,
        &one,
        &["--quiet", "--task", "math_500"],
    ));
    assert_eq!(manifest(&one)["dataset"]["name"], "math_500");
}

/// An OpenCompass work folder of two datasets, `gsm8k` and `math`, each the split prediction
/// files of `n-replicas-split` (`<abbr>_0..2.json`) and its results file; `tag` makes the bytes
/// of another such folder differ (two datasets' files never hold the same bytes either).
fn opencompass_two_datasets(work: &Path, tag: &str) {
    for abbr in ["gsm8k", "math"] {
        for kind in ["predictions", "results"] {
            let from = fixture("opencompass/n-replicas-split")
                .join(kind)
                .join("stub-math");
            let to = work.join(kind).join("stub-math");
            std::fs::create_dir_all(&to).unwrap();
            for f in std::fs::read_dir(from).unwrap() {
                let f = f.unwrap().path();
                let name = f
                    .file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .replace("gpk_arith", abbr);
                let prefix = format!("\"prediction\": \"{abbr}{tag} ");
                // The results hold no prediction: a blank line sets them apart.
                let blank = if tag.is_empty() { "" } else { "\n" };
                let text = read(&f).replace("\"prediction\": \"", &prefix) + blank;
                std::fs::write(to.join(name), text).unwrap();
            }
        }
    }
}

/// The files an imported run lists (`imported.files`), each named with the folder above its own
/// (`predictions/gsm8k_0.json`), and per checkpoint record the file its `source.file` points at.
fn listed_and_cited(run: &Path) -> (Vec<String>, Vec<String>) {
    let m = manifest(run);
    let name = |f: &Value| {
        let path = PathBuf::from(f["path"].as_str().unwrap());
        let dir = path
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .file_name()
            .unwrap();
        format!(
            "{}/{}",
            dir.to_str().unwrap(),
            path.file_name().unwrap().to_str().unwrap()
        )
    };
    let files: Vec<String> = m["imported"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(name)
        .collect();
    let cited = json_lines(&run.join("checkpoints/stub-math.jsonl"))
        .iter()
        .map(|r| files[r["source"]["file"].as_u64().unwrap() as usize].clone())
        .collect();
    (files, cited)
}

/// Each run of a folder of several datasets lists its own input files alone (predictions and
/// results of its dataset), each sample naming its own file by place in that list; such runs
/// score, and merge with the same dataset's run of another folder, as one import would.
#[test]
fn each_run_of_a_several_dataset_folder_lists_only_its_own_input_files() {
    let env = Fixture::new("");
    for (work, tag) in [("work-a", ""), ("work-b", "-b")] {
        opencompass_two_datasets(&env.file(work), tag);
        let out = env.file(work.replace("work", "oc").as_str());
        let o = import("opencompass", &env.file(work), &out, &["--quiet"]);
        ok(&o);
    }
    let a = env.file("oc-a");
    for abbr in ["gsm8k", "math"] {
        let (files, cited) = listed_and_cited(&a.join(abbr));
        let own: Vec<String> = (0..3)
            .map(|i| format!("predictions/{abbr}_{i}.json"))
            .chain([format!("results/{abbr}.json")])
            .collect();
        let mut sorted = files.clone();
        sorted.sort();
        assert_eq!(sorted, own, "{abbr}: {files:?}");
        assert_eq!(cited.len(), 32, "{abbr}");
        for i in 0..3 {
            let file = format!("predictions/{abbr}_{i}.json");
            assert!(cited.contains(&file), "{abbr}: no sample cites {file}");
        }
        assert!(
            cited
                .iter()
                .all(|c| c.starts_with(&format!("predictions/{abbr}_"))),
            "{cited:?}"
        );
    }
    // Scored again, the same metrics as the one dataset imported alone.
    let alone = env.file("alone");
    ok(&import(
        "opencompass",
        &fixture("opencompass/n-replicas-split"),
        &alone,
        &["--quiet"],
    ));
    let metrics = |dir: &Path| -> Value {
        let mut v: Value = serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
        for row in v["metrics"].as_array_mut().unwrap() {
            row.as_object_mut().unwrap().remove("dataset");
        }
        v["metrics"].clone()
    };
    ok(&gpassk(&[
        "score",
        a.join("gsm8k").to_str().unwrap(),
        "--quiet",
    ]));
    assert_eq!(metrics(&a.join("gsm8k")), metrics(&alone));
    // The gsm8k runs of two folders merge: eight files, each sample still citing its own.
    let merged = env.file("merged");
    let b = env.file("oc-b").join("gsm8k");
    let (ga, gb) = (a.join("gsm8k"), b);
    let o = gpassk(&[
        "merge",
        ga.to_str().unwrap(),
        gb.to_str().unwrap(),
        "--out",
        merged.to_str().unwrap(),
    ]);
    ok(&o);
    ok(&gpassk(&["score", merged.to_str().unwrap(), "--quiet"]));
    let (files, cited) = listed_and_cited(&merged);
    assert_eq!(files.len(), 8, "{files:?}");
    assert!(files.iter().all(|f| f.contains("gsm8k")), "{files:?}");
    let records = json_lines(&merged.join("checkpoints/stub-math.jsonl"));
    assert_eq!(records.len(), 64);
    for (r, file) in records.iter().zip(&cited) {
        assert!(file.starts_with("predictions/gsm8k_"), "{r}");
        // A sample of work-b says so in its text and cites a file listed after work-a's four.
        let of_b = r["response"].as_str().unwrap().starts_with("gsm8k-b ");
        assert_eq!(of_b, r["source"]["file"].as_u64().unwrap() >= 4, "{r}");
    }
    let json: Value = serde_json::from_str(&read(&merged.join("metrics.json"))).unwrap();
    assert_eq!(json["models"][0]["n"], 8, "{}", json["models"][0]);

    // EvalScope, two benchmarks: each run lists its reviews and report, and the run config both
    // read; a disagreement names its own benchmark's file.
    let es = env.file("es-work");
    copy_dir(&fixture("evalscope/v0.17.1"), &es);
    let reviews = es.join("reviews/stub-math");
    let rows = read(&reviews.join("gsm8k_main.jsonl")).replace('\n', " \n");
    std::fs::write(reviews.join("math_500_default.jsonl"), rows).unwrap();
    let (esout, dis) = (env.file("es"), env.file("disagree.jsonl"));
    ok(&import(
        "evalscope",
        &es,
        &esout,
        &["--quiet", "--disagreements", dis.to_str().unwrap()],
    ));
    // A file is named with the folder above its own: the config's is the work folder.
    let config = "es-work/task_config_0e8411.yaml";
    for (run, want) in [
        (
            "gsm8k",
            vec![config, "reviews/gsm8k_main.jsonl", "reports/gsm8k.json"],
        ),
        (
            "math_500_default",
            vec![config, "reviews/math_500_default.jsonl"],
        ),
    ] {
        let (files, cited) = listed_and_cited(&esout.join(run));
        assert_eq!(files, want, "{run}");
        assert!(cited.iter().all(|c| *c == want[1]), "{run}: {cited:?}");
    }
    let lines = json_lines(&dis);
    assert_eq!(lines.len(), 2, "{lines:?}");
    for d in lines {
        let bench = d["dataset"].as_str().unwrap();
        let from = d["from"].as_str().unwrap();
        assert!(from.contains(&format!("reviews/stub-math/{bench}")), "{d}");
    }
}

/// The notes an imported run's manifest keeps (`imported.notes`).
fn notes_of(run: &Path) -> Vec<String> {
    let m = manifest(run);
    (m["imported"]["notes"].as_array().into_iter().flatten())
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// Of a folder of several datasets, each run's manifest keeps the notes of its own dataset (a
/// reader's, the sink's counts, records skipped) and never another dataset's; a note of the
/// import as a whole (a dataset left out, settings no file holds) is kept by every run; the
/// console says each note once, named after its dataset.
#[test]
fn each_run_of_several_datasets_keeps_its_own_notes_and_the_console_names_their_datasets() {
    let env = Fixture::new("");
    // JSON lines of two datasets: alpha repeats a record and has a malformed line; beta comes in
    // two seed files (samples numbered on) and holds a model --model leaves out.
    let line = |d: &str, m: &str, i: u32, r: &str| {
        format!("{{\"dataset\": \"{d}\", \"model\": \"{m}\", \"problem_id\": \"p\", \"gold\": \"1\", \"sample_index\": {i}, \"response\": \"\\\\boxed{{{r}}}\"}}\n")
    };
    let dir = env.file("mixed");
    std::fs::create_dir_all(&dir).unwrap();
    let alpha = [line("alpha", "m", 0, "1"), line("alpha", "m", 0, "2")].concat() + "not json\n";
    std::fs::write(dir.join("alpha.jsonl"), alpha + &line("alpha", "m", 1, "1")).unwrap();
    for seed in 0..2 {
        let answer = seed.to_string();
        let text = [line("beta", "m", 0, &answer), line("beta", "other", 0, "1")].concat();
        std::fs::write(dir.join(format!("beta_seed{seed}.jsonl")), text).unwrap();
    }
    let out = env.file("mixed-runs");
    let o = import(
        "jsonl",
        &dir,
        &out,
        &["--quiet", "--skip-bad", "--model", "m"],
    );
    let said = stderr(&o);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    let repeat = "repeat a sample their own file gave already";
    let renumbered = "numbered after them";
    let left_out = "model other: 2 samples left out";
    let (a, b) = (notes_of(&out.join("alpha")), notes_of(&out.join("beta")));
    assert!(a.iter().any(|n| n.contains(repeat)), "{a:?}");
    assert!(
        !a.iter()
            .any(|n| n.contains(renumbered) || n.contains(left_out)),
        "{a:?}"
    );
    assert!(b.iter().any(|n| n.contains(renumbered)), "{b:?}");
    assert!(b.iter().any(|n| n.contains(left_out)), "{b:?}");
    assert!(!b.iter().any(|n| n.contains(repeat)), "{b:?}");
    let bad = |run: &str| manifest(&out.join(run))["imported"]["bad_records"].as_u64();
    assert_eq!((bad("alpha"), bad("beta")), (Some(1), None));
    for want in [
        format!("note: dataset alpha: model m: 1 records {repeat}"),
        "note: dataset beta: model m: 1 samples of problems".to_string(),
        format!("note: dataset beta: {left_out}"),
    ] {
        assert_eq!(said.matches(&want).count(), 1, "{want}: {said}");
    }

    // A reader's notes: OpenCompass says per dataset what its items were, in its own run alone
    // (one such note a run, not one of each dataset).
    let work = env.file("oc-work");
    opencompass_two_datasets(&work, "");
    let oc = env.file("oc");
    let o = import("opencompass", &work, &oc, &["--quiet"]);
    ok(&o);
    let said = stderr(&o);
    let settings = "OpenCompass keeps the generation settings";
    for abbr in ["gsm8k", "math"] {
        let notes = notes_of(&oc.join(abbr));
        let items: Vec<&String> = notes.iter().filter(|n| n.contains(" items; ")).collect();
        assert_eq!(items.len(), 1, "{abbr}: {notes:?}");
        assert!(
            notes.iter().any(|n| n.starts_with(settings)),
            "{abbr}: {notes:?}"
        );
        let named = format!("note: dataset {abbr}: model stub-math: 32 items; ");
        assert!(said.contains(&named), "{named}: {said}");
    }
    assert_eq!(said.matches(settings).count(), 1, "{said}");

    // NeMo-Skills: each benchmark's verdict note in its own run; the benchmark left out (ifeval,
    // no run of its own) is the import's, kept by every run.
    let ns = env.file("ns");
    let published = fixture("nemo-skills/published-shape");
    let o = import("nemo-skills", &published, &ns, &["--quiet"]);
    ok(&o);
    let said = stderr(&o);
    let marks = [
        ("answer-judge", "`judgement` agreeing"),
        ("code", "`is_correct`"),
        ("lean4", "`proof_status`"),
        ("math_subsets", "`symbolic_correct`"),
    ];
    for (bench, mark) in marks {
        let notes = notes_of(&ns.join(bench));
        for (other, its) in marks {
            let held = notes.iter().filter(|n| n.contains(its)).count();
            assert_eq!(held, (other == bench) as usize, "{bench}: {notes:?}");
        }
        assert!(
            notes.iter().any(|n| n.contains("ifeval left out")),
            "{bench}: {notes:?}"
        );
        let named = format!("note: dataset {bench}: ");
        assert!(
            said.contains(&named) && said.contains(mark),
            "{named}: {said}"
        );
    }
    assert_eq!(said.matches("ifeval left out").count(), 1, "{said}");
}

/// Files of the same problems (seeds, shards) add samples, numbered one after another, and the
/// console says so; the same file given twice, a hard link to it or a byte copy is refused.
#[test]
fn seed_files_add_samples_and_the_same_file_twice_is_refused() {
    let env = Fixture::new("");
    let line = |p: &str, answers: [&str; 4]| {
        let responses: Vec<String> = answers
            .iter()
            .map(|a| format!("so \\\\boxed{{{a}}}"))
            .collect();
        format!(
            "{{\"problem_id\": \"{p}\", \"gold\": \"4\", \"responses\": [{}]}}\n",
            responses
                .iter()
                .map(|r| format!("\"{r}\""))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let dir = env.file("seeds");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("run_seed0.jsonl"),
        line("a", ["4", "4", "5", "4"]) + &line("b", ["1", "4", "4", "4"]),
    )
    .unwrap();
    std::fs::write(
        dir.join("run_seed1.jsonl"),
        line("a", ["4", "5", "5", "5"]) + &line("b", ["4", "4", "4", "4"]),
    )
    .unwrap();
    let out = env.file("run");
    let o = import("jsonl", &dir, &out, &["--model", "m"]);
    let said = both(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    assert!(
        said.contains("8 samples of problems an earlier file gave too are numbered after them"),
        "{said}"
    );
    let json: Value = serde_json::from_str(&read(&out.join("metrics.json"))).unwrap();
    assert_eq!(
        (
            json["models"][0]["n"].as_u64(),
            json["models"][0]["correct"].as_u64()
        ),
        (Some(8), Some(11))
    );
    // `--model` keeps one model, and says what it left out.
    let two = env.write(
        "two.jsonl",
        &(line("a", ["4", "4", "4", "4"]).replacen("{", "{\"model\": \"x\", ", 1)
            + &line("a", ["5", "5", "5", "5"]).replacen("{", "{\"model\": \"y\", ", 1)),
    );
    let o = import(
        "jsonl",
        &two,
        &env.file("only-x"),
        &["--model", "x", "--quiet"],
    );
    assert!(
        stderr(&o).contains("model y: 4 samples left out"),
        "{}",
        both(&o)
    );
    let o = import("jsonl", &two, &env.file("none"), &["--model", "z"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("every sample") && stderr(&o).contains("model x: 4 samples"),
        "{}",
        stderr(&o)
    );
    let seed0 = dir.join("run_seed0.jsonl");
    let twice = gpassk(&[
        "import",
        "jsonl",
        seed0.to_str().unwrap(),
        dir.join("./run_seed0.jsonl").to_str().unwrap(),
        "--out",
        env.file("twice").to_str().unwrap(),
    ]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("are the same file"),
        "{}",
        stderr(&twice)
    );
    for (name, make) in [("linked", true), ("copied", false)] {
        let other = env.file(&format!("{name}.jsonl"));
        if make {
            std::fs::hard_link(&seed0, &other).unwrap();
        } else {
            std::fs::copy(&seed0, &other).unwrap();
        }
        let o = gpassk(&[
            "import",
            "jsonl",
            seed0.to_str().unwrap(),
            other.to_str().unwrap(),
            "--out",
            env.file(name).to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", both(&o));
        let e = stderr(&o);
        assert!(
            e.contains("run_seed0.jsonl") && e.contains(&format!("{name}.jsonl")),
            "{name}: {e}"
        );
        assert!(!env.file(name).exists());
    }
}

/// An import writes its runs beside `--out` and moves them into place at the end: killed
/// midway, it leaves nothing at `--out`; the next import says what was left beside it.
#[test]
fn an_import_killed_midway_leaves_nothing_at_out() {
    let env = Fixture::new("");
    let mut text = String::new();
    for p in 0..500 {
        for i in 0..20 {
            text.push_str(&format!("{{\"problem_id\": \"p{p}\", \"gold\": \"{p}\", \"response\": \"the answer is \\\\boxed{{{i}}}\"}}\n"));
        }
    }
    let input = env.write("big.jsonl", &text);
    let out = env.file("run");
    let mut child = command()
        .args([
            "import",
            "jsonl",
            input.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--quiet",
        ])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let staging = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".run.importing-")
            })
            .collect()
    };
    // Killed as soon as anything of the import is on disk.
    while staging(env.path()).is_empty() && !out.exists() && child.try_wait().unwrap().is_none() {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    // Either it was killed while staging (nothing at --out) or it had finished (a whole run).
    if out.exists() {
        assert_eq!(manifest(&out)["status"], "complete");
        assert!(staging(env.path()).is_empty());
    } else {
        assert_eq!(staging(env.path()).len(), 1);
        let o = import("jsonl", &input, &out, &["--quiet"]);
        assert!(
            stderr(&o).contains("is left from an import that did not finish"),
            "{}",
            stderr(&o)
        );
        assert_eq!(manifest(&out)["status"], "complete");
    }
}

/// A Git LFS pointer where a file should be is named as one, at `auto` and at reading.
#[test]
fn a_git_lfs_pointer_is_named() {
    let env = Fixture::new("");
    let dir = env.file("es");
    copy_dir(&fixture("evalscope/v1.14.1"), &dir);
    let pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 48213\n";
    std::fs::write(dir.join("reviews/stub-math/gsm8k_main.jsonl"), pointer).unwrap();
    std::fs::remove_dir_all(dir.join("predictions")).unwrap();
    let o = import("evalscope", &dir, &env.file("run"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    let e = stderr(&o);
    assert!(
        e.contains("gsm8k_main.jsonl") && e.contains("Git LFS pointer") && e.contains("48213-byte"),
        "{e}"
    );
    let o = import("auto", &dir.join("reviews"), &env.file("run"), &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("Git LFS pointer"), "{}", stderr(&o));
}

/// `--disagreements` may not overwrite an input, land in an input folder or inside the new run.
#[test]
fn disagreements_never_overwrite_an_input_or_land_in_the_new_run() {
    let env = Fixture::new("");
    let dir = env.file("es");
    copy_dir(&fixture("evalscope/v0.17.1"), &dir);
    let input = dir.join("reviews/stub-math/gsm8k_main.jsonl");
    let before = read(&input);
    let out = env.file("run");
    for (from, target, why) in [
        (&input, input.clone(), "it is an input file"),
        (
            &dir,
            dir.join("reviews/disagree.jsonl"),
            "inside the input folder",
        ),
        (&dir, out.join("disagree.jsonl"), "inside the new run"),
    ] {
        let o = import(
            "evalscope",
            from,
            &out,
            &["--disagreements", target.to_str().unwrap()],
        );
        assert_eq!(o.status.code(), Some(2), "{why}");
        assert!(stderr(&o).contains(why), "{why}: {}", stderr(&o));
        assert!(!out.exists());
    }
    assert_eq!(read(&input), before);
}

/// A byte-order mark, CRLF and CR-only line ends read as plain line ends.
#[test]
fn bom_crlf_and_cr_line_ends_import_alike() {
    let env = Fixture::new("");
    let text = read(&fixture("jsonl/one-sample-per-line.jsonl"));
    let metrics = |name: &str, bytes: String| -> Value {
        let input = env.write(&format!("{name}.jsonl"), &bytes);
        let out = env.file(name);
        ok(&import(
            "jsonl",
            &input,
            &out,
            &["--quiet", "--name", "stub-math"],
        ));
        let v: Value = serde_json::from_str(&read(&out.join("metrics.json"))).unwrap();
        v["metrics"].clone()
    };
    let plain = metrics("plain", text.clone());
    assert_eq!(metrics("bom", format!("\u{feff}{text}")), plain);
    assert_eq!(metrics("crlf", text.replace('\n', "\r\n")), plain);
    assert_eq!(metrics("cr", text.replace('\n', "\r")), plain);
}

/// A verdict out of range (7.5, NaN) and a sample index past what gpassk scores stop the import
/// with exit 2, naming the input file and line; nothing is left at `--out`.
#[test]
fn bad_verdicts_and_sample_indices_name_the_input_file_and_line() {
    let env = Fixture::new("");
    let dir = env.file("es");
    copy_dir(&fixture("evalscope/v1.14.1"), &dir);
    let path = dir.join("reviews/stub-math/gsm8k_main.jsonl");
    let text = read(&path);
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let original = lines[2].clone();
    for (bad, said) in [("7.5", "7.5 is not a verdict"), ("NaN", "NaN")] {
        let mut v: Value = serde_json::from_str(&original).unwrap();
        let main = v["sample_score"]["score"]["main_score_name"]
            .as_str()
            .unwrap()
            .to_string();
        v["sample_score"]["score"]["value"][&main] = Value::String("X".into());
        lines[2] = v.to_string().replace("\"X\"", bad);
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let out = env.file("run");
        let o = import("evalscope", &dir, &out, &[]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", both(&o));
        let e = stderr(&o);
        assert!(
            e.contains("gsm8k_main.jsonl:3") && e.contains(said),
            "{bad}: {e}"
        );
        assert!(!out.exists());
    }
    let input = env.write(
        "far.jsonl",
        "{\"problem_id\": \"a\", \"gold\": \"1\", \"response\": \"1\", \"sample_index\": 10000}\n",
    );
    let o = import("jsonl", &input, &env.file("far"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    let e = stderr(&o);
    assert!(e.contains("far.jsonl:1") && e.contains("10000"), "{e}");
    assert!(!e.contains("manifest"), "{e}");
}

/// lm-eval's results file is found by what it holds whatever its name, and a run recorded with
/// `do_sample: false` is recorded as greedy (temperature 0) in the run's settings.
#[test]
fn lm_eval_results_are_found_by_content_and_greedy_comes_from_their_settings() {
    let env = Fixture::new("");
    let dir = env.file("gsm8k");
    std::fs::create_dir_all(&dir).unwrap();
    let from = fixture("lm-eval/v0.4.13/stub-math");
    let samples = "samples_gpk_arith_2026-12-01T16-18-04.660489.jsonl";
    std::fs::copy(from.join(samples), dir.join(samples)).unwrap();
    let mut res: Value =
        serde_json::from_str(&read(&from.join("results_2026-12-01T16-18-04.660489.json"))).unwrap();
    res["configs"]["gpk_arith"]["generation_kwargs"]["do_sample"] = false.into();
    res["configs"]["gpk_arith"]["generation_kwargs"]["temperature"] = 0.into();
    std::fs::write(
        dir.join("gsm8k_2026-12-01T16-18-04.660489.json"),
        res.to_string(),
    )
    .unwrap();
    let out = env.file("run");
    ok(&import(
        "lm-eval",
        &dir,
        &out,
        &["--quiet", "--field", "verdict=exact_match,strict-first"],
    ));
    let m = manifest(&out);
    let model = &m["imported"]["models"]["stub-math"];
    assert_eq!(model["settings"]["temperature"], 0.0, "{model}");
    assert_eq!(m["models"]["stub-math"]["sampling"]["temperature"], 0.0);
    let checks = m["imported"]["aggregates"].as_array().unwrap();
    assert_eq!(checks.len(), 3, "{checks:?}");
}

/// The formats are listed once: `--help` shows every one, an unknown one is refused naming them.
#[test]
fn the_help_and_the_errors_list_every_format() {
    let help = ok(&gpassk(&["import", "--help"]));
    for name in [
        "auto",
        "lm-eval",
        "opencompass",
        "lighteval",
        "evalscope",
        "inspect",
        "nemo-skills",
        "tau-bench",
        "qwen-math",
        "jsonl",
    ] {
        assert!(help.contains(name), "{name}: {help}");
    }
    let o = gpassk(&["import", "helm", "x", "--out", "y"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("tau-bench"), "{}", stderr(&o));
}

/// `--format auto` on an lm-eval folder holding a generic JSONL file too: the import stops and
/// names both formats and the file, rather than reading one and leaving the other unread.
#[test]
fn auto_names_a_generic_jsonl_file_beside_another_harnesss_files() {
    let env = Fixture::new("");
    let dir = env.file("lm");
    copy_dir(&fixture("lm-eval/v0.4.13"), &dir);
    let extra = dir.join("stub-math/extra.jsonl");
    std::fs::copy(fixture("jsonl/one-sample-per-line.jsonl"), &extra).unwrap();
    let out = env.file("run");
    let o = import("auto", &dir, &out, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    let e = stderr(&o);
    assert!(
        e.contains("several formats")
            && e.contains("jsonl: 1 file, e.g. ")
            && e.contains("extra.jsonl")
            && e.contains("lm-eval: 2 files"),
        "{e}"
    );
    assert!(!out.exists());
    // Named one format at a time, each imports.
    ok(&import("jsonl", &extra, &env.file("generic"), &["--quiet"]));
    std::fs::remove_file(&extra).unwrap();
    ok(&import("auto", &dir, &out, &["--quiet"]));
}

/// A record repeating a sample its own file gave already is counted on the console (the first
/// kept), never dropped in silence.
#[test]
fn a_repeated_record_is_counted_on_the_console_and_the_first_kept() {
    let env = Fixture::new("");
    let input = env.write(
        "dup.jsonl",
        "{\"problem_id\": \"a\", \"gold\": \"1\", \"response\": \"\\\\boxed{1}\", \"sample_index\": 0}\n\
         {\"problem_id\": \"a\", \"gold\": \"1\", \"response\": \"\\\\boxed{2}\", \"sample_index\": 0}\n\
         {\"problem_id\": \"a\", \"gold\": \"1\", \"response\": \"\\\\boxed{1}\", \"sample_index\": 1}\n",
    );
    let out = env.file("run");
    let o = import("jsonl", &input, &out, &["--quiet"]);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    assert!(
        stderr(&o).contains("1 records repeat a sample their own file gave already"),
        "{}",
        stderr(&o)
    );
    let json: Value = serde_json::from_str(&read(&out.join("metrics.json"))).unwrap();
    assert_eq!(
        (
            json["models"][0]["n"].as_u64(),
            json["models"][0]["correct"].as_u64()
        ),
        (Some(2), Some(2))
    );
}
