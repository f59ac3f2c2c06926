//! `gpassk run` against the fake server writes every report, `gpassk score` reproduces them from the
//! manifest alone, and a run split with `--shard` and joined with `gpassk merge` scores the same.

use crate::common::{ok, read, run as gpassk, run_dirs, stderr, Fixture, Toml, RUN_FILES};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use std::path::{Path, PathBuf};

/// Right or wrong as a pure function of the question and the sample's seed.
pub(crate) fn reply(r: &Recorded) -> Reply {
    Reply {
        choices: seeded_choices(r),
        served_model: Some("fake-served".into()),
        system_fingerprint: None,
        usage: None,
    }
}

/// Each choice answers the sum of the question's last two numbers, off by one when
/// (seed + choice + sum) is a multiple of 3.
pub(crate) fn seeded_choices(r: &Recorded) -> Vec<ChoiceReply> {
    let q = r.user_text().unwrap_or_default();
    let nums: Vec<u64> = q
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|s| s.parse().ok())
        .collect();
    let sum = nums.iter().rev().take(2).sum::<u64>();
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    (0..r.n())
        .map(|i| {
            let ans = if !(seed + i + sum).is_multiple_of(3) {
                sum
            } else {
                sum + 1
            };
            ChoiceReply::stop(format!("So \\boxed{{{ans}}}."))
        })
        .collect()
}

/// `problems` sums "What is i+(2i+1)?" in two subsets, "even" and "odd", as JSONL.
pub(crate) fn dataset(problems: usize) -> String {
    (0..problems)
        .map(|i| {
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {i}+{}?\",\"answer\":\"{}\",\"part\":\"{}\"}}\n",
                2 * i + 1,
                3 * i + 1,
                if i % 2 == 0 { "even" } else { "odd" }
            )
        })
        .collect()
}

/// Two models, n = 6 with greedy, subsets from `part`; `base_url` `None` is the fixture's server.
fn setup(env: &Fixture, base_url: Option<&str>) -> PathBuf {
    env.config(Toml {
        base_url,
        api: "timeout = 5\nconcurrency = 4\nmax_retries = 2",
        sampling: "n = 6\ntemperature = 0.7\nseed = 7\ngreedy = true",
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"\n\n[[models]]\nname = \"m2\"\nmodel_id = \"fake-2\"\nseed = 8",
        evaluation: "fields = { id = \"id\", subset = \"part\" }\nk = [1, 3]\nmetrics = [\"greedy_acc\", \"pass@3\", \"g_pass@3_t1.0\", \"mg_pass@3\"]",
    })
}

#[test]
fn run_writes_every_report_and_score_reproduces_them() {
    let mut env = Fixture::new(&dataset(10)).with_server(FakeServer::builder().responder(reply));
    let cfg = setup(&env, None);
    let out = ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    assert!(out.contains("mG-Pass@3"), "{out}");
    let run = run_dirs(&env.results()).pop().unwrap();
    let written: Vec<String> = RUN_FILES.iter().map(|f| read(&run.join(f))).collect();
    assert!(written[4].contains("<polyline class=\"curve\" data-model=\"m2\""));
    // Re-grading offline gives the very same bytes: nothing in them depends on when they were made.
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    for (f, before) in RUN_FILES.iter().zip(&written) {
        assert_eq!(&read(&run.join(f)), before, "{f}");
    }
    // Offline: the server may be gone.
    env.stop_server();
    ok(&gpassk(&["score", run.to_str().unwrap(), "--quiet"]));
    assert_eq!(read(&run.join("metrics.csv")), written[0]);
}

#[test]
fn sharded_runs_merged_score_like_one_run() {
    let whole = Fixture::new(&dataset(12)).with_server(FakeServer::builder().responder(reply));
    let cfg = setup(&whole, None);
    ok(&gpassk(&[
        "run",
        "--config",
        cfg.to_str().unwrap(),
        "--quiet",
    ]));
    let whole_run = run_dirs(&whole.results()).pop().unwrap();

    let split = Fixture::new(&dataset(12));
    let cfg = setup(&split, Some(&whole.base_url()));
    let cfg = cfg.to_str().unwrap();
    let mut shard_dirs = Vec::new();
    for shard in ["0/3", "1/3", "2/3"] {
        ok(&gpassk(&[
            "run", "--config", cfg, "--shard", shard, "--quiet",
        ]));
        let dirs: Vec<PathBuf> = run_dirs(&split.results())
            .into_iter()
            .filter(|d| !shard_dirs.contains(d))
            .collect();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        let m: serde_json::Value =
            serde_json::from_str(&read(&dirs[0].join("manifest.json"))).unwrap();
        assert_eq!(m["shard"]["count"], 3);
        shard_dirs.push(dirs[0].clone());
    }
    let problems: u64 = shard_dirs
        .iter()
        .map(|d| {
            let m: serde_json::Value =
                serde_json::from_str(&read(&d.join("manifest.json"))).unwrap();
            m["dataset"]["problems"].as_u64().unwrap()
        })
        .sum();
    assert_eq!(problems, 12);
    let merged = split.file("merged");
    let mut args = vec!["merge"];
    args.extend(shard_dirs.iter().map(|d| d.to_str().unwrap()));
    args.extend(["--out", merged.to_str().unwrap()]);
    ok(&gpassk(&args));
    ok(&gpassk(&["score", merged.to_str().unwrap(), "--quiet"]));
    // The dataset column names each run's own copy of the data file.
    let strip = |text: String, dir: &Path| text.replace(&dir.display().to_string(), "<DIR>");
    for f in ["metrics.csv", "per_problem.csv", "summary.txt"] {
        assert_eq!(
            strip(read(&merged.join(f)), split.path()),
            strip(read(&whole_run.join(f)), whole.path()),
            "{f}"
        );
    }
    let m: serde_json::Value = serde_json::from_str(&read(&merged.join("manifest.json"))).unwrap();
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
    assert!(stderr(&resume).contains("shard 0/3 → 1/3"));
}

/// Shards of one evaluation share a results folder on a cluster: `resume_from_checkpoint` and
/// `--resume latest` continue the run of the shard asked for, never another shard's (which
/// resume would refuse, so a requeued array task could not restart).
#[test]
fn each_shard_resumes_its_own_run_in_a_shared_folder() {
    let env = Fixture::new(&dataset(8)).with_server(FakeServer::builder().responder(reply));
    let cfg = env.config(Toml {
        base_url: None,
        api: "timeout = 5\nconcurrency = 4\nmax_retries = 0",
        sampling: "n = 2\nseed = 7",
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"",
        evaluation: "k = [1]\nmetrics = [\"pass@1\"]\nresume_from_checkpoint = true",
    });
    let cfg = cfg.to_str().unwrap();
    let shard = |s: &str, extra: &[&str]| {
        let mut args = vec!["run", "--config", cfg, "--shard", s];
        args.extend(extra);
        gpassk(&args)
    };
    ok(&shard("0/2", &["--quiet"]));
    let first = run_dirs(&env.results());
    assert_eq!(first.len(), 1);
    // Shard 1 starts its own run rather than taking shard 0's.
    ok(&shard("1/2", &["--quiet"]));
    let both = run_dirs(&env.results());
    assert_eq!(both.len(), 2, "{both:?}");
    let second = both.iter().find(|d| !first.contains(d)).unwrap().clone();
    // Run again (a requeued task): each resumes its own directory, and no third one appears.
    for (s, dir) in [("1/2", &second), ("0/2", &first[0])] {
        let out = shard(s, &[]);
        ok(&out);
        let want = format!("resuming {}", dir.display());
        assert!(stderr(&out).contains(&want), "{s}: {}", stderr(&out));
        let out = shard(s, &["--resume", "latest"]);
        ok(&out);
        let want = format!("run directory: {}", dir.display());
        assert!(stderr(&out).contains(&want), "{s}: {}", stderr(&out));
    }
    assert_eq!(run_dirs(&env.results()).len(), 2);
}
