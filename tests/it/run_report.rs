//! `gpassk run` against the fake server writes every report, `gpassk score` reproduces them from the
//! manifest alone, and a run split with `--shard` and joined with `gpassk merge` scores the same.

use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const FILES: [&str; 6] = [
    "metrics.csv",
    "per_problem.csv",
    "metrics.json",
    "report.md",
    "report.html",
    "summary.txt",
];

fn gpassk(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_gpassk"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Right or wrong as a pure function of the question and the sample's seed.
fn reply(r: &Recorded) -> Reply {
    let q = r.user_text().unwrap_or_default();
    let nums: Vec<u64> = q
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let sum = nums.iter().rev().take(2).sum::<u64>();
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let choices = (0..r.n())
        .map(|i| {
            let ans = if (seed + i + sum) % 3 != 0 {
                sum
            } else {
                sum + 1
            };
            ChoiceReply::stop(format!("So \\boxed{{{ans}}}."))
        })
        .collect();
    Reply {
        choices,
        served_model: Some("fake-served".into()),
        system_fingerprint: None,
        usage: None,
    }
}

/// A dataset of `problems` sums in two subsets and a config pointing at `base_url`.
fn setup(dir: &Path, base_url: &str, problems: usize) -> PathBuf {
    let data: String = (0..problems)
        .map(|i| {
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {i}+{}?\",\"answer\":\"{}\",\"part\":\"{}\"}}\n",
                2 * i + 1,
                3 * i + 1,
                if i % 2 == 0 { "even" } else { "odd" }
            )
        })
        .collect();
    std::fs::write(dir.join("data.jsonl"), data).unwrap();
    let d = dir.display();
    let text = format!(
        r#"[api]
base_url = "{base_url}"
timeout = 5
concurrency = 4
max_retries = 2

[sampling]
n = 6
temperature = 0.7
seed = 7
greedy = true

[[models]]
name = "m1"
model_id = "fake-1"

[[models]]
name = "m2"
model_id = "fake-2"
seed = 8

[evaluation]
dataset = "{d}/data.jsonl"
fields = {{ id = "id", subset = "part" }}
output_dir = "{d}/results"
k = [1, 3]
metrics = ["greedy_acc", "pass@3", "g_pass@3_t1.0", "mg_pass@3"]
"#
    );
    let cfg = dir.join("config.toml");
    std::fs::write(&cfg, text).unwrap();
    cfg
}

fn run_dirs(results: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn read(dir: &Path, f: &str) -> String {
    std::fs::read_to_string(dir.join(f))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(f).display()))
}

#[test]
fn run_writes_every_report_and_score_reproduces_them() {
    let server = FakeServer::builder().responder(reply).start_blocking();
    let tmp = tempfile::tempdir().unwrap();
    let cfg = setup(tmp.path(), &server.base_url(), 10);
    let out = ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    assert!(out.contains("mG-Pass@3"), "{out}");
    let run = run_dirs(&tmp.path().join("results")).pop().unwrap();
    let written: Vec<String> = FILES.iter().map(|f| read(&run, f)).collect();
    assert!(written[4].contains("<polyline class=\"curve\" data-model=\"m2\""));
    // Re-grading offline gives the very same bytes: nothing in them depends on when they were made.
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    for (f, before) in FILES.iter().zip(&written) {
        assert_eq!(&read(&run, f), before, "{f}");
    }
    // Offline: the server may be gone.
    drop(server);
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    assert_eq!(read(&run, "metrics.csv"), written[0]);
}

#[test]
fn sharded_runs_merged_score_like_one_run() {
    let server = FakeServer::builder().responder(reply).start_blocking();
    let whole = tempfile::tempdir().unwrap();
    let cfg = setup(whole.path(), &server.base_url(), 12);
    ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    let whole_run = run_dirs(&whole.path().join("results")).pop().unwrap();

    let split = tempfile::tempdir().unwrap();
    let cfg = setup(split.path(), &server.base_url(), 12);
    let cfg = cfg.to_str().unwrap();
    let mut shard_dirs = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        ok(&gpassk(&[
            "run", "--config", cfg, "--shard", shard, "--quiet",
        ]));
        let dirs: Vec<PathBuf> = run_dirs(&split.path().join("results"))
            .into_iter()
            .filter(|d| !shard_dirs.contains(d))
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let m: serde_json::Value = serde_json::from_str(&read(&dirs[0], "manifest.json")).unwrap();
        assert_eq!(m["shard"]["count"], 3);
        shard_dirs.push(dirs[0].clone());
    }
    let problems: u64 = shard_dirs
        .iter()
        .map(|d| {
            let m: serde_json::Value = serde_json::from_str(&read(d, "manifest.json")).unwrap();
            m["dataset"]["problems"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(problems, 12);
    let merged = split.path().join("merged");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    ok(&gpassk(&args));
    ok(&gpassk(&["score", merged.to_str().unwrap(), "--quiet"]));
    // The dataset column names each run's own copy of the data file.
    let strip = |text: String, dir: &Path| text.replace(&dir.display().to_string(), "<DIR>");
    for f in ["metrics.csv", "per_problem.csv", "summary.txt"] {
        assert_eq!(
            strip(read(&merged, f), split.path()),
            strip(read(&whole_run, f), whole.path()),
            "{f}"
        );
    }
    let m: serde_json::Value = serde_json::from_str(&read(&merged, "manifest.json")).unwrap();
    assert_eq!(m["status"], "complete");
    assert_eq!(m["models"]["m1"]["ok"], 12 * 7);
    // Resuming a shard run as another shard is refused.
    let resume = gpassk(&[
        "run",
        "--config",
        cfg,
        "--shard",
        "1/3",
        "--resume",
        shard_dirs[0].to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(resume.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&resume.stderr).contains("shard 0/3 → 1/3"));
}
