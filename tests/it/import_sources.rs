//! `gpassk import` of the sources of repeated samples added with the `Reader` list: Inspect AI
//! logs with epochs, NeMo-Skills seed files, τ-bench and τ²-bench trial trajectories, each
//! imported as a run of n samples per problem whose stored aggregates recompute, and a released
//! τ-bench file whose published pass^k table is recomputed exactly.

use crate::common::{both, ok, read, stderr, Fixture};
use crate::import_cli::{fixture, import, manifest, metric};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The one file of `dir` whose name ends in `ext`.
fn one(dir: &str, ext: &str) -> PathBuf {
    let dir = fixture(dir);
    let found: Vec<PathBuf> = (std::fs::read_dir(&dir).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .collect();
    assert_eq!(found.len(), 1, "{}", dir.display());
    found[0].clone()
}

/// Every aggregate of a run's manifest recomputed and matching (to the source's rounding).
fn all_match(run: &Path) -> usize {
    let m = manifest(run);
    let checks = m["imported"]["aggregates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for a in &checks {
        let (s, r) = (a["source"].as_f64().unwrap(), a["recomputed"].as_f64());
        let r = r.unwrap_or_else(|| panic!("not recomputed: {a}"));
        let tol = if s.abs() > 1.0 { 0.006 } else { 1e-6 };
        assert!((s - r).abs() <= tol, "{a}");
    }
    checks.len()
}

fn metrics(run: &Path) -> Value {
    serde_json::from_str(&read(&run.join("metrics.json"))).unwrap()
}

#[test]
fn inspect_logs_give_n_epochs_per_sample_and_their_reducers_recompute() {
    let env = Fixture::new("");
    for (dir, name) in [
        ("inspect/v0.3.285", "zstd"),
        ("inspect/v0.3.100", "deflate"),
    ] {
        let out = env.file(name);
        ok(&import("auto", &one(dir, ".eval"), &out, &["--quiet"]));
        let json = metrics(&out);
        assert_eq!(json["models"][0]["n"], 6, "{name}");
        assert_eq!(json["models"][0]["source"]["judged_by_both"], 48, "{name}");
        assert_eq!(all_match(&out), 2, "{name}");
    }
    // The .json log: one sample errored. Inspect's own accuracy leaves it out: with
    // `--errored drop` so does the import, and the reducers recompute; by default it is kept
    // (it has no answer: wrong), and the source's numbers are not recomputable from it.
    let log = one("inspect/v0.3.285", ".json");
    let kept = env.file("kept");
    let o = import("inspect", &log, &kept, &["--quiet"]);
    assert!(
        stderr(&o).contains("1 samples the harness marked as errored are kept"),
        "{}",
        both(&o)
    );
    let dropped = env.file("dropped");
    ok(&import(
        "inspect",
        &log,
        &dropped,
        &["--quiet", "--errored", "drop"],
    ));
    assert_eq!(all_match(&dropped), 2);
    let m = manifest(&kept);
    let checks = m["imported"]["aggregates"].as_array().unwrap();
    assert!(
        checks.iter().all(|a| a["recomputed"].is_null()),
        "{checks:?}"
    );
    let (k, d) = (metrics(&kept), metrics(&dropped));
    assert_eq!(
        (
            k["models"][0]["correct"].as_u64(),
            d["models"][0]["correct"].as_u64()
        ),
        (Some(7), Some(7))
    );
    assert_eq!(m["imported"]["models"]["mockllm_model"]["samples"], 12);
    assert_eq!(
        manifest(&dropped)["imported"]["models"]["mockllm_model"]["samples"],
        11
    );
}

#[test]
fn nemo_skills_seed_files_are_the_samples_and_every_stored_metric_recomputes() {
    let env = Fixture::new("");
    let out = env.file("run");
    ok(&import(
        "nemo-skills",
        &fixture("nemo-skills/stub-math"),
        &out,
        &["--quiet"],
    ));
    let json = metrics(&out);
    assert_eq!(
        (
            json["models"][0]["n"].as_u64(),
            json["models"][0]["correct"].as_u64()
        ),
        (Some(6), Some(27))
    );
    // pass@k, pass@1[avg-of-k] and majority@k for k = 1…6.
    assert_eq!(all_match(&out), 16);
    assert_eq!(manifest(&out)["dataset"]["name"], "gpk_arith");
}

/// NeMo-Skills' eval-results as its repository keeps them (NVIDIA/NeMo-Skills 0b012df8,
/// tests/data/eval_outputs: the shape in tests/fixtures/import/nemo-skills/published-shape):
/// one run per benchmark with n = the seeds, the source's verdict where the lines keep no gold,
/// every metric of metrics.json (subsets too) recomputed; a benchmark with nothing to grade is
/// left out on the console.
#[test]
fn nemo_skills_benchmarks_as_published_import_one_run_each_and_recompute() {
    let env = Fixture::new("");
    let out = env.file("runs");
    let o = import(
        "auto",
        &fixture("nemo-skills/published-shape"),
        &out,
        &["--quiet"],
    );
    ok(&o);
    assert!(stderr(&o).contains("ifeval left out"), "{}", both(&o));
    let mut matched = 0;
    for (bench, checks) in [
        ("answer-judge", 4),
        ("code", 3),
        ("lean4", 3),
        ("math_subsets", 12),
    ] {
        let run = out.join(bench);
        assert_eq!(metrics(&run)["models"][0]["n"], 2, "{bench}");
        assert_eq!(all_match(&run), checks, "{bench}");
        matched += checks;
    }
    assert_eq!(matched, 22);
    assert!(!out.join("ifeval").exists());
}

/// Two Inspect logs of one task and model (two evals) add their samples, but each log's
/// reducer scores are recomputed from its own samples; the same eval in two files (an `.eval`
/// and a re-written copy) is refused, naming both.
#[test]
fn inspect_logs_of_one_task_from_two_evals_each_recompute_their_own_scores() {
    let env = Fixture::new("");
    let out = env.file("both");
    let dir = fixture("inspect/v0.3.285");
    ok(&import(
        "inspect",
        &dir,
        &out,
        &["--quiet", "--errored", "drop"],
    ));
    assert_eq!(all_match(&out), 4);
    let logs = env.file("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let json = one("inspect/v0.3.285", ".json");
    std::fs::copy(&json, logs.join("a.json")).unwrap();
    let v: Value = serde_json::from_str(&read(&json)).unwrap();
    std::fs::write(logs.join("b.json"), serde_json::to_string(&v).unwrap()).unwrap();
    let o = import("inspect", &logs, &env.file("twice"), &["--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", both(&o));
    let e = stderr(&o);
    assert!(
        e.contains("a.json and ") && e.contains("b.json hold the same Inspect eval"),
        "{e}"
    );
}

/// τ-bench's released trajectories of gpt-4o on airline (sierra-research/tau-bench
/// 59a200c6d575d595120f1cb70fea53cef0632f6b, historical_trajectories/gpt-4o-airline.json: its
/// per-trial rewards in tests/fixtures/import/tau-bench/v1) give the table its README
/// publishes for "TC (gpt-4o)" on airline: pass^1..4 = 0.420, 0.273, 0.220, 0.200.
#[test]
fn a_released_tau_bench_file_gives_its_published_pass_hat_k_table() {
    let env = Fixture::new("");
    let out = env.file("run");
    ok(&import(
        "auto",
        &fixture("tau-bench/v1/gpt-4o-airline.json"),
        &out,
        &["--quiet"],
    ));
    let json = metrics(&out);
    let published = [0.420, 0.273, 0.220, 0.200];
    // The exact values behind the rounded table: c of 4 trials per task, 50 tasks.
    let exact = [0.42, 41.0 / 150.0, 0.22, 0.2];
    for (k, (p, e)) in (1..=4).zip(published.iter().zip(exact)) {
        let got = metric(&json, "gpt-4o", "g_pass@k", k, Some(1.0));
        assert!((got - e).abs() < 1e-12, "pass^{k}: {got} vs {e}");
        assert_eq!(format!("{got:.3}"), format!("{p:.3}"), "pass^{k}");
    }
    let md = read(&out.join("report.md"));
    assert!(
        md.contains("**pass^k**") && md.contains("G-Pass@k\\_1.0"),
        "{md}"
    );
    assert_eq!(manifest(&out)["dataset"]["name"], "airline");
    assert_eq!(json["models"][0]["source"]["judged_by_both"], 200);
}

/// τ²-bench leaves infrastructure errors out and scores each task on the trials it has: with
/// `--errored drop` the import gives its compute_metrics' pass^1..3 exactly; by default the
/// errored trial counts as a failure, and a task short of trials still scores on its own n.
#[test]
fn tau2_trials_recompute_its_pass_hat_k_under_either_convention() {
    let env = Fixture::new("");
    let e: Value = serde_json::from_str(&read(&fixture("tau-bench/tau2/expected.json"))).unwrap();
    for input in [
        "tau-bench/tau2/stub-agent_stub-domain_4trials.json",
        "tau-bench/tau2/dir",
    ] {
        let out = env.file(&input.replace('/', "_"));
        let o = import(
            "tau-bench",
            &fixture(input),
            &out,
            &["--quiet", "--errored", "drop"],
        );
        assert!(stderr(&o).contains("task t4 (3)"), "{}", both(&o));
        let json = metrics(&out);
        for (k, want) in e["tau2_compute_metrics"]["pass_hat_ks"]
            .as_object()
            .unwrap()
        {
            let k: u64 = k.parse().unwrap();
            let got = metric(&json, "stub-agent", "g_pass@k", k, Some(1.0));
            assert!(
                (got - want.as_f64().unwrap()).abs() < 1e-12,
                "{input} pass^{k}: {got} vs {want}"
            );
        }
    }
    let out = env.file("fail");
    ok(&import(
        "tau-bench",
        &fixture("tau-bench/tau2/dir"),
        &out,
        &["--quiet"],
    ));
    let got = metric(&metrics(&out), "stub-agent", "g_pass@k", 1, Some(1.0));
    // t3 keeps its errored trial as a failure (2 of 4); t4 scores on its 3 trials.
    let want = (1.0 + 0.0 + 0.75 + 0.5 + 1.0 / 3.0 + 0.75) / 6.0;
    assert!((got - want).abs() < 1e-12, "{got} vs {want}");
}

/// An Inspect task without targets (open-ended, graded by a model or a check) has no answer to
/// re-grade: the log's score is the verdict, its aggregates still recompute, and the console
/// says so. Without this the import stopped asking for a dataset of gold answers.
#[test]
fn inspect_samples_without_a_target_are_graded_by_the_logs_score() {
    let env = Fixture::new("");
    let mut log: Value = serde_json::from_str(&read(&one("inspect/v0.3.285", ".json"))).unwrap();
    let mut correct = 0;
    for s in log["samples"].as_array_mut().unwrap() {
        s["target"] = Value::String(String::new());
        correct += (s["scores"]["includes"]["value"] == "C") as u64;
    }
    let input = env.write("open-ended.json", &log.to_string());
    let out = env.file("run");
    let o = import("auto", &input, &out, &["--errored", "drop"]);
    let said = ok(&o) + &stderr(&o);
    assert!(said.contains("12 samples have no target"), "{said}");
    assert_eq!(all_match(&out), 2);
    let json = metrics(&out);
    assert_eq!(json["models"][0]["correct"].as_u64(), Some(correct));
    let source = &json["models"][0]["source"];
    assert_eq!(source["judged_by_both"].as_u64(), Some(11), "{source}");
    assert_eq!(
        (
            source["only_gpassk"].as_u64(),
            source["only_source"].as_u64()
        ),
        (Some(0), Some(0))
    );
}
