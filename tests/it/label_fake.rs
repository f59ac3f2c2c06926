//! `gpassk label` against the fake server, scripted so that continuations from a prefix holding the
//! wrong step ("add 3, 2x = 14") never reach the gold answer.

use crate::common::{both, Fixture, Toml};
use fake_openai::{ChoiceReply, FakeServer, FakeServerBuilder, Recorded, Reply};
use std::path::Path;
use std::process::Output;

fn rollout_reply(r: &Recorded) -> Reply {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    let prefix = messages
        .iter()
        .rev()
        .find(|m| m["role"] == "assistant")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let is_rollout = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .is_some_and(|c| c.starts_with("Continue"));
    let text = if !is_rollout {
        "Step 1: subtract 3, 2x = 8\nStep 2: divide by 2, x = 4\nStep 3: The answer is \\boxed{4}"
            .to_string()
    } else if prefix.contains("2x = 14") {
        "so x = 7, and the answer is \\boxed{7}".to_string()
    } else {
        "so x = 4, and the answer is \\boxed{4}".to_string()
    };
    Reply::with_choices(
        (0..r.n())
            .map(|_| ChoiceReply::stop(text.clone()))
            .collect(),
    )
}

/// One problem (2x + 3 = 11), three solutions to label, and a config pointing at `server`.
fn label_fixture(server: Option<FakeServerBuilder>) -> Fixture {
    let mut env =
        Fixture::new("{\"id\":\"p0\",\"question\":\"Solve 2x + 3 = 11.\",\"answer\":\"4\"}\n");
    if let Some(server) = server {
        env = env.with_server(server);
    }
    env.config(Toml {
        api: "backoff_base = 0.01",
        sampling: "n = 2\nseed = 1",
        models: "[[models]]\nname = \"m\"",
        evaluation: "k = [1]",
        ..Toml::default()
    });
    let sols = [
        ("good", "Step 1: subtract 3, 2x = 8\nStep 2: divide by 2, x = 4\nStep 3: The answer is \\\\boxed{4}"),
        ("bad", "Step 1: add 3, 2x = 14\nStep 2: divide by 2, x = 7\nStep 3: The answer is \\\\boxed{7}"),
        ("late", "Step 1: subtract 3, 2x = 8\nStep 2: add 3, 2x = 14\nStep 3: so \\\\boxed{7}"),
    ];
    let lines: String = sols
        .iter()
        .map(|(id, s)| {
            format!(
                "{{\"problem_id\":\"p0\",\"solution_id\":\"{id}\",\"solution\":\"{}\"}}\n",
                s.replace('\n', "\\n")
            )
        })
        .collect();
    env.write("solutions.jsonl", &lines);
    env
}

/// `gpassk label --solutions solutions.jsonl --k 4 EXTRA…` on the fixture.
fn label_k4(env: &Fixture, extra: &[&str]) -> Output {
    let sols = env.file("solutions.jsonl");
    let mut args = vec!["label", "--solutions", sols.to_str().unwrap(), "--k", "4"];
    args.extend_from_slice(extra);
    gpassk(env, &args)
}

/// `gpassk SUBCOMMAND --config <config.toml> --quiet REST…`.
fn gpassk(env: &Fixture, args: &[&str]) -> Output {
    let mut all = vec![args[0], "--quiet"];
    all.extend_from_slice(&args[1..]);
    env.command(&all).output().unwrap()
}

fn labels(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("labels.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn he_of(labels: &[serde_json::Value], solution: &str) -> Vec<u64> {
    labels
        .iter()
        .filter(|l| l["solution_id"] == solution)
        .map(|l| l["he"].as_u64().unwrap())
        .collect()
}

#[test]
fn labels_are_one_before_the_wrong_step_and_zero_from_it_on() {
    let server = FakeServer::builder().responder(rollout_reply);
    let env = label_fixture(Some(server));
    let server = env.server();
    let out_dir = env.file("labels");
    let o = label_k4(&env, &["--out", out_dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    let l = labels(&out_dir);
    assert_eq!(l.len(), 9);
    assert_eq!(he_of(&l, "good"), [1, 1, 1]);
    assert_eq!(he_of(&l, "bad"), [0, 0, 0]);
    assert_eq!(he_of(&l, "late"), [1, 0, 0]);
    let late: Vec<f64> = l
        .iter()
        .filter(|x| x["solution_id"] == "late")
        .map(|x| x["se"].as_f64().unwrap())
        .collect();
    assert_eq!(late, [1.0, 0.0, 0.0]);
    for x in &l {
        assert_eq!(x["rollouts"], 4);
        for f in [
            "problem_id",
            "solution_id",
            "step_index",
            "step_text",
            "correct",
            "he",
            "se",
        ] {
            assert!(x.get(f).is_some(), "{f}");
        }
    }
    assert_eq!(l[1]["step_text"], "Step 2: divide by 2, x = 4");
    let csv = std::fs::read_to_string(out_dir.join("solutions.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "problem_id,solution_id,steps,final_correct,first_he0_step,mean_se"
    );
    assert_eq!(rows[1], "p0,good,3,true,,1.0");
    assert_eq!(rows[2], "p0,bad,3,false,1,0.0");
    assert!(
        rows[3].starts_with("p0,late,3,false,2,0.333"),
        "{}",
        rows[3]
    );
    assert!(
        both(&o).contains("wrong final answers that have an HE-0 step: 2/2"),
        "{}",
        both(&o)
    );
    assert_eq!(server.request_count(), 9 * 4);
}

#[test]
fn rerun_requests_only_missing_rollouts_and_dry_run_counts_them() {
    let server = FakeServer::builder().responder(rollout_reply);
    let env = label_fixture(Some(server));
    let server = env.server();
    let out_dir = env.file("labels");
    let dry = label_k4(&env, &["--dry-run"]);
    assert_eq!(dry.status.code(), Some(0));
    assert!(both(&dry).contains("36 rollouts"), "{}", both(&dry));
    assert_eq!(server.request_count(), 0);
    let first = label_k4(&env, &["--limit", "1", "--out", out_dir.to_str().unwrap()]);
    assert_eq!(first.status.code(), Some(0), "{}", both(&first));
    assert_eq!(server.request_count(), 3 * 4);
    let all = label_k4(&env, &["--out", out_dir.to_str().unwrap()]);
    assert_eq!(all.status.code(), Some(0), "{}", both(&all));
    assert_eq!(
        server.request_count(),
        9 * 4,
        "the first solution's rollouts were reused"
    );
    assert_eq!(labels(&out_dir).len(), 9);
}

#[test]
fn from_run_labels_the_stored_samples() {
    let server = FakeServer::builder().responder(rollout_reply);
    let env = label_fixture(Some(server));
    let o = gpassk(&env, &["run"]);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    let run_dir = env.run_dir();
    let out_dir = env.file("from-run");
    let o = gpassk(
        &env,
        &[
            "label",
            "--from-run",
            run_dir.to_str().unwrap(),
            "--k",
            "2",
            "--out",
            out_dir.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    let l = labels(&out_dir);
    assert_eq!(l.len(), 3 * 3, "2 samples + greedy, 3 steps each");
    assert!(l.iter().all(|x| x["he"] == 1));
    assert!(l.iter().any(|x| x["solution_id"] == "m:p0:greedy"));
}

#[test]
fn bad_solutions_file_names_the_line() {
    let env = label_fixture(None);
    std::fs::write(
        env.file("bad.jsonl"),
        "{\"problem_id\":\"p0\",\"solution_id\":\"a\",\"solution\":\"x\"}\n{oops\n",
    )
    .unwrap();
    let bad = env.file("bad.jsonl");
    let o = gpassk(&env, &["label", "--solutions", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(both(&o).contains("bad.jsonl:2:"), "{}", both(&o));
    std::fs::write(
        env.file("bad.jsonl"),
        "{\"problem_id\":\"p9\",\"solution_id\":\"a\",\"solution\":\"x\"}\n",
    )
    .unwrap();
    let o = gpassk(&env, &["label", "--solutions", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(both(&o).contains("p9"), "{}", both(&o));
}

#[test]
fn from_run_without_out_labels_into_the_run() {
    let server = FakeServer::builder().responder(rollout_reply);
    let env = label_fixture(Some(server));
    let o = gpassk(&env, &["run"]);
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    let run_dir = env.run_dir();
    let o = gpassk(
        &env,
        &["label", "--from-run", run_dir.to_str().unwrap(), "--k", "2"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", both(&o));
    // Where scoring finds them to set a verifier's step scores against.
    assert_eq!(labels(&run_dir.join("labels")).len(), 3 * 3);
    // The run's own files are untouched, and it is still the only run.
    assert!(run_dir.join("labels/checkpoints").is_dir());
    assert_eq!(crate::common::run_dirs(&env.results()).len(), 1);
}
