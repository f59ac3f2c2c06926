//! `gpassk merge --shards N --from DIR`: the shard runs of one evaluation found in a results
//! folder and joined into the run one unsharded run gives, or, when a shard has no complete run,
//! nothing merged and the shard named (exit 1); other configs' runs in the folder are left out.

use crate::common::{both, ok, read, run as gpassk, run_dirs, stderr, stdout, Fixture, Toml};
use crate::run_report::{dataset, reply};
use fake_openai::{FakeServer, Fault, Recorded};
use gpassk::dataset::shard::shard_of;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// One model, n = 4 with greedy, no retries (a failed unit stays failed until resumed).
fn config(env: &Fixture, base_url: Option<&str>, n: u32) -> PathBuf {
    let sampling = format!("n = {n}\ntemperature = 0.7\nseed = 7\ngreedy = true");
    env.config(Toml {
        base_url,
        api: "timeout = 5\nconcurrency = 4\nmax_retries = 0",
        sampling: &sampling,
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"",
        evaluation: "k = [1, 2]\nmetrics = [\"greedy_acc\", \"pass@2\", \"g_pass@2_t1.0\"]",
    })
}

/// `gpassk run --config CFG --shard S --quiet`; the run directory it made or resumed.
fn run_shard(cfg: &Path, shard: &str, results: &Path, extra: &[&str]) -> (i32, PathBuf) {
    std::fs::create_dir_all(results).unwrap();
    let before = run_dirs(results);
    let mut args = vec!["run", "--config", cfg.to_str().unwrap(), "--shard", shard];
    args.extend(extra);
    let out = gpassk(&args);
    let after = run_dirs(results);
    let new: Vec<&PathBuf> = after.iter().filter(|d| !before.contains(d)).collect();
    let dir = match new[..] {
        [d] => d.clone(),
        _ => PathBuf::from(extra.last().unwrap()),
    };
    (out.status.code().unwrap(), dir)
}

fn merge_from(results: &Path, out: &Path, config: Option<&Path>) -> std::process::Output {
    let mut args = vec![
        "merge",
        "--shards",
        "3",
        "--from",
        results.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    if let Some(c) = config {
        args.extend(["--config", c.to_str().unwrap()]);
    }
    gpassk(&args)
}

#[test]
fn merge_from_a_folder_equals_the_unsharded_run_and_names_missing_or_incomplete_shards() {
    let whole = Fixture::new(&dataset(12)).with_server(FakeServer::builder().responder(reply));
    let cfg = config(&whole, None, 4);
    ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    let whole_run = run_dirs(&whole.results()).pop().unwrap();

    // Problem p3 fails until the server is mended: its shard ends incomplete.
    let broken = Arc::new(AtomicBool::new(true));
    let b = broken.clone();
    let server = FakeServer::builder()
        .responder(reply)
        .faults(move |r: &Recorded| {
            let p3 = r.user_text().is_some_and(|q| q.contains("What is 3+7?"));
            (b.load(Ordering::SeqCst) && p3).then(Fault::server_error)
        });
    let split = Fixture::new(&dataset(12)).with_server(server);
    let cfg = config(&split, None, 4);
    let results = split.results();
    let bad = shard_of("p3", 3);
    let missing = (bad + 1) % 3;
    let good = (bad + 2) % 3;
    let (code, bad_dir) = run_shard(&cfg, &format!("{bad}/3"), &results, &["--quiet"]);
    assert_eq!(code, 1, "the broken shard should end incomplete");
    let (code, _) = run_shard(&cfg, &format!("{good}/3"), &results, &["--quiet"]);
    assert_eq!(code, 0);

    let out = split.file("merged");
    let refused = merge_from(&results, &out, None);
    assert_eq!(refused.status.code(), Some(1), "{}", both(&refused));
    let err = stderr(&refused);
    assert!(err.contains("not merged: 2 of 3 shards"), "{err}");
    assert!(
        err.contains(&format!("shard {missing}/3: missing")),
        "{err}"
    );
    let incomplete = format!(
        "shard {bad}/3: not complete: {} (incomplete)",
        bad_dir.display()
    );
    assert!(err.contains(&incomplete), "{err}");
    assert!(
        err.contains(&format!("--resume {}", bad_dir.display())),
        "{err}"
    );
    assert!(!err.contains(&format!("shard {good}/3")), "{err}");
    assert!(!out.exists(), "a refused merge wrote {}", out.display());

    // The missing shard arrives; the incomplete one is still named, alone.
    let (code, _) = run_shard(&cfg, &format!("{missing}/3"), &results, &["--quiet"]);
    assert_eq!(code, 0);
    let refused = merge_from(&results, &out, None);
    assert_eq!(refused.status.code(), Some(1), "{}", both(&refused));
    let err = stderr(&refused);
    assert!(err.contains("not merged: 1 of 3 shards"), "{err}");
    assert!(!err.contains(&format!("shard {missing}/3")), "{err}");

    broken.store(false, Ordering::SeqCst);
    let dir = bad_dir.to_str().unwrap();
    let (code, _) = run_shard(
        &cfg,
        &format!("{bad}/3"),
        &results,
        &["--quiet", "--resume", dir],
    );
    assert_eq!(code, 0);
    let merged = ok(&merge_from(&results, &out, None));
    assert!(merged.contains("merged 3 runs"), "{merged}");
    ok(&gpassk(&["score", out.to_str().unwrap(), "--quiet"]));
    let strip = |text: String, dir: &Path| text.replace(&dir.display().to_string(), "<DIR>");
    for f in ["metrics.csv", "per_problem.csv", "summary.txt"] {
        assert_eq!(
            strip(read(&out.join(f)), split.path()),
            strip(read(&whole_run.join(f)), whole.path()),
            "{f}"
        );
    }
}

#[test]
fn merge_from_leaves_out_other_configs_and_takes_the_newest_complete_run_of_a_shard() {
    let env = Fixture::new(&dataset(9)).with_server(FakeServer::builder().responder(reply));
    let results = env.results();
    // Another config (n = 2) has every shard in the same folder, and an unsharded run too.
    let other = config(&env, None, 2);
    let other = std::fs::rename(&other, env.file("other.toml")).map(|()| env.file("other.toml"));
    let other = other.unwrap();
    for s in ["0/3", "1/3", "2/3"] {
        assert_eq!(run_shard(&other, s, &results, &["--quiet"]).0, 0);
    }
    ok(&gpassk(&[
        "run",
        "--config",
        other.to_str().unwrap(),
        "--quiet",
    ]));
    let cfg = config(&env, None, 4);
    // None of this config's shards yet: the other config's runs are not taken for them.
    let out = env.file("merged");
    let none = merge_from(&results, &out, Some(&cfg));
    assert_eq!(none.status.code(), Some(1), "{}", both(&none));
    let err = stderr(&none);
    assert!(err.contains("not merged: 3 of 3 shards"), "{err}");
    assert!(err.contains("left out: 4 other runs there"), "{err}");
    let mut mine = Vec::new();
    for s in ["0/3", "1/3", "2/3"] {
        let (code, dir) = run_shard(&cfg, s, &results, &["--quiet"]);
        assert_eq!(code, 0);
        mine.push(dir);
    }
    // Two evaluations of 3 shards: which to merge is not guessed.
    let ambiguous = merge_from(&results, &out, None);
    assert_eq!(ambiguous.status.code(), Some(2), "{}", both(&ambiguous));
    let err = stderr(&ambiguous);
    assert!(err.contains("more than one evaluation"), "{err}");
    assert!(err.contains("--config FILE"), "{err}");
    assert!(!out.exists());

    // Shard 1 sampled again from scratch: its newer complete run is taken, the older named.
    let (code, again) = run_shard(&cfg, "1/3", &results, &["--quiet"]);
    assert_eq!(code, 0);
    assert_ne!(again, mine[1]);
    let merged = merge_from(&results, &out, Some(&cfg));
    let text = ok(&merged);
    let line = format!(
        "shard 1/3: {} (the newest complete run)\n  left out: {} (complete)",
        again.display(),
        mine[1].display()
    );
    assert!(text.contains(&line), "{text}");
    let m: serde_json::Value = serde_json::from_str(&read(&out.join("manifest.json"))).unwrap();
    let from: Vec<String> = m["merged_from"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(from.len(), 3, "{from:?}");
    for dir in [&mine[0], &again, &mine[2]] {
        let name = dir.file_name().unwrap().to_str().unwrap();
        assert!(from.iter().any(|f| f.starts_with(name)), "{name}: {from:?}");
    }
    assert_eq!(m["models"]["m1"]["sampling"]["n"], 4);
    assert_eq!(m["dataset"]["problems"], 9);
    assert!(stdout(&merged).contains("merged 3 runs"));
}

#[test]
fn merge_from_says_what_the_folder_holds_when_no_shard_is_there() {
    let env = Fixture::new(&dataset(6)).with_server(FakeServer::builder().responder(reply));
    let cfg = config(&env, None, 2);
    let results = env.results();
    for s in ["0/2", "1/2"] {
        assert_eq!(run_shard(&cfg, s, &results, &["--quiet"]).0, 0);
    }
    let out = merge_from(&results, &env.file("merged"), Some(&cfg));
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let err = stderr(&out);
    for i in 0..3 {
        assert!(err.contains(&format!("shard {i}/3: missing")), "{err}");
    }
    assert!(
        err.contains("the shard runs there are of 2 shards"),
        "{err}"
    );
    // A folder that does not exist is bad input, not missing shards.
    let out = merge_from(&env.file("nowhere"), &env.file("merged"), None);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(stderr(&out).contains("--from"), "{}", stderr(&out));
}

#[test]
fn history_and_the_previous_baseline_of_a_shared_folder_are_its_merged_runs() {
    let env = Fixture::new(&dataset(6)).with_server(FakeServer::builder().responder(reply));
    let cfg = config(&env, None, 2);
    let results = env.results();
    // Two weeks of a 2-shard evaluation, each merged into the same folder as its shards.
    for week in ["merged-1", "merged-2"] {
        for s in ["0/2", "1/2"] {
            assert_eq!(run_shard(&cfg, s, &results, &["--quiet"]).0, 0);
        }
        let out = results.join(week);
        let args = [
            "merge",
            "--shards",
            "2",
            "--from",
            results.to_str().unwrap(),
        ];
        ok(&gpassk(
            &[&args[..], &["--out", out.to_str().unwrap()]].concat(),
        ));
        ok(&gpassk(&["score", out.to_str().unwrap(), "--quiet"]));
    }
    let shards: Vec<String> = (run_dirs(&results).iter())
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("merged-"))
        .collect();
    assert_eq!(shards.len(), 4, "{shards:?}");

    let history = gpassk(&["history", results.to_str().unwrap(), "--format", "csv"]);
    let rows = ok(&history);
    assert!(
        rows.contains("merged-1") && rows.contains("merged-2"),
        "{rows}"
    );
    for s in &shards {
        assert!(
            !rows.contains(s.as_str()),
            "shard run {s} in the history:\n{rows}"
        );
    }
    let note = stderr(&history);
    assert!(note.contains("4 shard runs left out"), "{note}");
    assert!(note.contains("gpassk merge --shards 2 --from"), "{note}");

    // The viewer's runs page keeps the rule: every run listed, the shards marked, none in its
    // history.
    let served = crate::view::serve(&results);
    let api = crate::view::get(&served, "/api/runs").body;
    let runs: serde_json::Value = serde_json::from_str(&api).unwrap();
    let listed = runs["runs"].as_array().unwrap();
    assert_eq!(listed.len(), 6, "{api}");
    for r in listed {
        let shard = shards.iter().any(|s| r["name"] == s.as_str());
        assert_eq!(r["shard"].is_string(), shard, "{r}");
    }
    let series = runs["history"].as_array().unwrap();
    assert!(series.iter().any(|h| h["run"] == "merged-2"), "{api}");
    assert!(
        series
            .iter()
            .all(|h| !shards.iter().any(|s| h["run"] == s.as_str())),
        "a shard run in the viewer's history: {api}"
    );
    assert!(
        runs["history_notes"][0]
            .as_str()
            .is_some_and(|n| n.contains("4 shard runs left out")),
        "{api}"
    );
    let page = crate::view::get(&served, "/").body;
    assert!(page.contains("shard 1/2: not in the history"), "{page}");

    let latest = results.join("merged-2");
    let compare = gpassk(&[
        "compare",
        latest.to_str().unwrap(),
        "--baseline",
        "previous",
    ]);
    let text = both(&compare);
    assert!(text.contains("merged-1"), "{text}");
    for s in &shards {
        assert!(
            !text.contains(s.as_str()),
            "shard run {s} taken as the baseline:\n{text}"
        );
    }
}

#[test]
fn merge_refuses_a_run_another_process_holds_and_writes_nothing() {
    let env = Fixture::new(&dataset(6)).with_server(FakeServer::builder().responder(reply));
    let cfg = config(&env, None, 2);
    let results = env.results();
    let (code, first) = run_shard(&cfg, "0/2", &results, &["--quiet"]);
    assert_eq!(code, 0);
    let (code, second) = run_shard(&cfg, "1/2", &results, &["--quiet"]);
    assert_eq!(code, 0);
    let out = env.file("merged");
    let plain = || {
        gpassk(&[
            "merge",
            first.to_str().unwrap(),
            second.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
    };
    // This test process holds the second run, as a `run --resume` writing it would.
    let held = gpassk::rundir::lock::RunLock::acquire(&second).unwrap();
    for refused in [plain(), {
        let from = [
            "merge",
            "--shards",
            "2",
            "--from",
            results.to_str().unwrap(),
        ];
        gpassk(&[&from[..], &["--out", out.to_str().unwrap()]].concat())
    }] {
        let err = both(&refused);
        assert_eq!(refused.status.code(), Some(2), "{err}");
        assert!(err.contains("refusing to merge: run directory"), "{err}");
        assert!(
            err.contains("is in use by another gpassk process (pid"),
            "{err}"
        );
        assert!(!out.exists(), "a refused merge wrote {}", out.display());
    }
    drop(held);
    let merged = ok(&plain());
    assert!(merged.contains("merged 2 runs"), "{merged}");
}
