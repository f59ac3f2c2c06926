//! Hostile servers and inputs (issue 15, items 6–12 and 14): long Retry-After, huge bodies, odd
//! `usage` and content, reflected keys, terminal escapes, CSV formulas, huge n/k, small mistakes.

use crate::common::{both, read, run, Fixture, Toml};
use fake_openai::{ChoiceReply, FakeServer, Fault, Recorded, Reply};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, Instant};

const KEY: &str = "sk-hostile-KEY-5d1e88";

/// `count` problems whose answer is 42 (what the fake server's default reply says).
fn answers_42(count: usize) -> String {
    (0..count)
        .map(|i| format!("{{\"id\":\"p{i}\",\"question\":\"Question {i}?\",\"answer\":\"42\"}}\n"))
        .collect()
}

/// config.toml for the fixture's server: the test key, fast retries, one model `m1`, plus
/// `api`, `sampling` and `evaluation` lines.
fn setup(env: &Fixture, api: &str, sampling: &str, evaluation: &str) -> PathBuf {
    let api = format!(
        "api_key_env = \"GPASSK_HOSTILE_KEY\"\nbackoff_base = 0.01\nbackoff_max = 0.02\ntimeout = 10\n{api}"
    );
    env.config(Toml {
        base_url: None,
        api: &api,
        sampling: &format!("temperature = 0.7\n{sampling}"),
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"\n",
        evaluation,
    })
}

/// `gpassk run --config config.toml --quiet` with the test key, killed after `limit`.
fn run_with_key(env: &Fixture, limit: Duration) -> Output {
    let mut child = env
        .command(&["run", "--quiet"])
        .env("GPASSK_HOSTILE_KEY", KEY)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn gpassk");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("gpassk run still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// Every checkpoint line of model m1 as JSON.
fn checkpoint(env: &Fixture) -> Vec<serde_json::Value> {
    read(&env.run_dir().join("checkpoints/m1.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("checkpoint line is JSON"))
        .collect()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn retry_after_of_a_day_or_2099_is_capped_by_retry_after_max() {
    for header in ["100000", "Thu, 01 Jan 2099 00:00:00 GMT"] {
        let server = FakeServer::builder()
            .faults(move |r: &Recorded| (r.attempt == 0).then(|| Fault::retry_after(header)));
        let env = Fixture::new(&answers_42(2)).with_server(server);
        setup(&env, "retry_after_max = 0.2", "n = 2", "");
        let start = Instant::now();
        let out = run_with_key(&env, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(0), "{header}: {}", both(&out));
        assert!(start.elapsed() < Duration::from_secs(30), "{header}");
        assert!(env.server().request_count() >= 8, "every unit was retried");
    }
}

#[test]
fn an_oversized_reply_is_an_error_class_and_never_stored() {
    // max_tokens = 16 allows a reply of well under 100 KiB; the server sends 2 MiB every time.
    let server = FakeServer::builder().faults(|_: &Recorded| Some(Fault::oversized(2 << 20)));
    let env = Fixture::new(&answers_42(1)).with_server(server);
    setup(
        &env,
        "max_retries = 1",
        "n = 1\nmax_tokens = 16\ngreedy = false",
        "",
    );
    let out = run_with_key(&env, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let ckpt = env.run_dir().join("checkpoints/m1.jsonl");
    let size = std::fs::metadata(&ckpt).unwrap().len();
    assert!(size < 16 * 1024, "checkpoint holds {size} bytes");
    let lines = checkpoint(&env);
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l["error_class"] == "too_large"),
        "{lines:?}"
    );
    assert_eq!(
        env.server().request_count(),
        2,
        "retried once, as configured"
    );
}

#[test]
fn odd_usage_is_unknown_content_parts_are_joined_and_null_content_is_retried() {
    let reply = |content: &str, usage: &str| {
        Fault::reply_body(format!(
            r#"{{"id":"c","object":"chat.completion","model":"fake-1","choices":[{{"index":0,"message":{{"role":"assistant","content":{content}}},"finish_reason":"stop"}}],"usage":{usage}}}"#
        ))
    };
    let server = FakeServer::builder().faults(move |r: &Recorded| {
        let parts =
            r#"[{"type":"text","text":"The answer is "},{"type":"text","text":"\\boxed{42}."}]"#;
        Some(
            match (
                r.user_text().unwrap_or_default().contains("Question 0"),
                r.attempt,
            ) {
                (true, 0) => reply("null", "{}"),
                (true, _) => reply(
                    r#""\\boxed{42}""#,
                    r#"{"prompt_tokens":5.0,"completion_tokens":"7"}"#,
                ),
                (false, _) => reply(
                    parts,
                    r#"{"prompt_tokens":null,"completion_tokens":"many"}"#,
                ),
            },
        )
    });
    let env = Fixture::new(&answers_42(2)).with_server(server);
    setup(&env, "", "n = 2\ngreedy = false", "");
    let out = run_with_key(&env, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let lines = checkpoint(&env);
    let ok: Vec<_> = lines.iter().filter(|l| l["outcome"] == "ok").collect();
    assert_eq!(ok.len(), 4, "{lines:?}");
    let joined = ok.iter().find(|l| l["problem_id"] == "p1").unwrap();
    assert_eq!(joined["response"], "The answer is \\boxed{42}.");
    assert!(joined["usage"].get("prompt_tokens").is_none(), "{joined}");
    let counted = ok.iter().find(|l| l["problem_id"] == "p0").unwrap();
    assert_eq!(counted["usage"]["prompt_tokens"], 5);
    assert_eq!(counted["usage"]["completion_tokens"], 7);
    // The null-content reply of p0 was not a sample: each of its units was asked for twice.
    let p0 = env
        .server()
        .requests()
        .iter()
        .filter(|r| r.user_text().unwrap_or_default().contains("Question 0"))
        .count();
    assert_eq!(p0, 4);
}

#[test]
fn a_key_reflected_by_the_server_reaches_no_file_and_no_stream() {
    let server = FakeServer::builder().responder(|r: &Recorded| Reply {
        choices: (0..r.n())
            .map(|_| ChoiceReply::stop(format!("\\boxed{{42}} (your key is {KEY})")))
            .collect(),
        served_model: Some(format!("fake-1-{KEY}")),
        system_fingerprint: Some(format!("fp_{KEY}")),
        usage: None,
    });
    let env = Fixture::new(&answers_42(2)).with_server(server);
    setup(&env, "", "n = 2", "");
    let out = run_with_key(&env, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(!both(&out).contains(KEY));
    let files = files_under(&env.run_dir());
    assert!(files.len() > 5, "{files:?}");
    for f in files {
        let text = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).into_owned();
        assert!(!text.contains(KEY), "key in {}", f.display());
    }
    assert!(read(&env.run_dir().join("manifest.json")).contains("fake-1-[REDACTED]"));
}

#[test]
fn credentials_in_base_url_are_refused_without_echoing_them() {
    let env = Fixture::new(&answers_42(1));
    for (api, judge) in [
        ("base_url = \"http://user:hunter2pw@127.0.0.1:9\"", ""),
        ("", "grader = \"judge\"\n[judge]\nmodel_id = \"j\"\nbase_url = \"https://hunter2pw@example.com/v1\""),
    ] {
        let text = format!(
            "[api]\n{}\n[[models]]\nname = \"m1\"\n[evaluation]\ndataset = \"{}\"\noutput_dir = \"{}\"\n{judge}\n",
            if api.is_empty() { "base_url = \"http://127.0.0.1:9\"" } else { api },
            env.file("data.jsonl").display(),
            env.results().display()
        );
        env.write("config.toml", &text);
        let out = env.command(&["run"]).output().unwrap();
        let said = both(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains("base_url") && said.contains("credentials"), "{said}");
        assert!(said.contains("config.toml:"), "{said}");
        assert!(!said.contains("hunter2pw"), "{said}");
        assert!(!env.results().exists());
    }
}

#[test]
fn control_characters_from_a_server_are_escaped_on_stderr() {
    let server = FakeServer::builder().faults(|_: &Recorded| {
        Some(Fault::Status {
            code: 401,
            body: r#"{"error":{"message":"bad key\u001b[2J\u001b]0;pwned\u0007\r\nerror: forged line"}}"#
                .into(),
            retry_after: None,
        })
    });
    let env = Fixture::new(&answers_42(1)).with_server(server);
    setup(&env, "", "n = 1", "");
    let out = env
        .command(&["run"])
        .env("GPASSK_HOSTILE_KEY", KEY)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("bad key"), "{err}");
    assert!(
        !err.contains('\u{1b}') && !err.contains('\u{7}') && !err.contains('\r'),
        "{err:?}"
    );
    assert!(!err.contains("\nerror: forged line"), "{err:?}");
    assert!(err.contains("\\u{1b}[2J"), "{err:?}");
}

#[test]
fn formula_cells_in_csv_reports_are_neutralised_and_json_keeps_them() {
    let ids = [
        "=HYPERLINK(\"http://x\")",
        "+cmd|' /C calc'!A0",
        "@SUM(1)",
        "-2+3",
    ];
    let data: String = ids
        .iter()
        .map(|id| {
            serde_json::json!({"pid": id, "q": format!("Question {id}"), "a": "42", "level": "=1+1"})
                .to_string()
                + "\n"
        })
        .collect();
    let server = FakeServer::builder();
    let env = Fixture::new(&data).with_server(server);
    setup(
        &env,
        "",
        "n = 1\ngreedy = false",
        "k = [1]\n[evaluation.fields]\nid = \"pid\"\nquestion = \"q\"\nanswer = \"a\"\nsubset = \"level\"",
    );
    let out = run_with_key(&env, Duration::from_secs(60));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    for file in ["per_problem.csv", "metrics.csv"] {
        let text = read(&env.run_dir().join(file));
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .from_reader(text.as_bytes());
        for rec in r.records() {
            for cell in rec.unwrap().iter() {
                let risky = cell.starts_with(['=', '+', '@', '\t', '\r'])
                    || (cell.starts_with('-') && cell.parse::<f64>().is_err());
                assert!(!risky, "{file}: cell {cell:?}");
            }
        }
        assert!(text.contains("'=1+1"), "{file}: {text}");
    }
    let per_problem = read(&env.run_dir().join("per_problem.csv"));
    for id in ids {
        assert!(
            per_problem.contains(&format!("'{}", id.replace('"', "\"\""))),
            "{id}: {per_problem}"
        );
    }
    let json = read(&env.run_dir().join("metrics.json"));
    assert!(json.contains("\"=1+1\""), "raw value kept in JSON");
}

#[test]
fn calc_and_config_refuse_n_and_k_beyond_the_exact_engine() {
    let start = Instant::now();
    let out = run(&["calc", "--n", "100000", "--c", "50000", "--k", "50000"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(both(&out).contains("above 10000"), "{}", both(&out));
    let out = run(&["calc", "--n", "3000000000", "--c", "1", "--k", "1500000000"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    // The largest allowed n still answers.
    ok_within(&["calc", "--n", "10000", "--c", "5000", "--k", "16", "--json"]);

    let env = Fixture::new(&answers_42(1));
    for (sampling, evaluation, key) in [
        ("n = 1000000", "k = [500000]", "`sampling.n`"),
        ("n = 16", "k = [500000]", "`evaluation.k`"),
        (
            "n = 16",
            "metrics = [\"pass@600000\"]",
            "`evaluation.metrics`",
        ),
    ] {
        env.config(Toml {
            sampling,
            models: "[[models]]\nname = \"m1\"\n",
            evaluation,
            ..Toml::default()
        });
        let out = env.command(&["run", "--dry-run"]).output().unwrap();
        let said = both(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(
            said.contains("above 10000") && said.contains(key),
            "{key}: {said}"
        );
    }
}

fn ok_within(args: &[&str]) {
    let start = Instant::now();
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn small_mistakes_are_refused_before_anything_is_created() {
    let env = Fixture::new(&answers_42(1));
    let long = "m".repeat(300);
    let cases = [
        format!("[[models]]\nname = \"{long}\"\n"),
        "[[models]]\nname = \"alpha\"\n[[models]]\nname = \"ALPHA\"\n".to_string(),
    ];
    for (models, what) in cases.iter().zip(["300 characters", "case"]) {
        env.config(Toml {
            models,
            ..Toml::default()
        });
        let out = env.command(&["run"]).output().unwrap();
        let said = both(&out);
        assert_eq!(out.status.code(), Some(2), "{what}: {said}");
        assert!(
            said.contains("config.toml:") && said.contains("name"),
            "{said}"
        );
        assert!(said.contains(what), "{said}");
        assert!(!env.results().exists(), "{what}: no run directory");
    }
    for tol in ["inf", "NaN", "-1"] {
        let out = run(&[
            "grade",
            "--gold",
            "1",
            "--pred",
            "1",
            &format!("--rel-tol={tol}"),
        ]);
        assert_eq!(out.status.code(), Some(2), "{tol}: {}", both(&out));
        assert!(both(&out).contains("--rel-tol"), "{}", both(&out));
    }
    let out = run(&[
        "grade",
        "--gold",
        "1",
        "--pred",
        "1",
        "--extract-regex",
        "(abc",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(both(&out).trim().lines().count(), 1, "{}", both(&out));
    // Broken TOML and a bad regex in a config: one line naming file:line.
    let broken = [
        (
            "[[models]]\nname = \"m1\"\n",
            "answer_extract_regex = [\"(abc\"]",
        ),
        ("[[models]]\nname = \"m1\n", ""),
        ("[[models]]\nname = \"m1\"\n", "limit = [1, \"x\"\nk = 3"),
    ];
    for (models, evaluation) in broken {
        env.config(Toml {
            models,
            evaluation,
            ..Toml::default()
        });
        let out = env.command(&["run", "--dry-run"]).output().unwrap();
        let said = both(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert_eq!(said.trim().lines().count(), 1, "{said}");
        assert!(said.contains("config.toml:"), "{said}");
    }
}

#[test]
fn a_key_variable_set_but_empty_is_reported_as_such() {
    let env = Fixture::new(&answers_42(1));
    setup(&env, "", "n = 1", "");
    for (value, says) in [("", "set but empty"), ("  ", "set but empty")] {
        let out = env
            .command(&["run"])
            .env("GPASSK_HOSTILE_KEY", value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(both(&out).contains(says), "{}", both(&out));
    }
    let out = env
        .command(&["run"])
        .env_remove("GPASSK_HOSTILE_KEY")
        .output()
        .unwrap();
    assert!(both(&out).contains("is not set"), "{}", both(&out));
}

#[test]
fn a_judge_that_fails_every_request_makes_run_exit_1() {
    let server = FakeServer::builder()
        .faults(|r: &Recorded| (r.model() == Some("judge-1")).then(Fault::server_error));
    let env = Fixture::new(&answers_42(2)).with_server(server);
    setup(
        &env,
        "max_retries = 1",
        "n = 2",
        "grader = \"judge\"\n[judge]\nmodel_id = \"judge-1\"",
    );
    let out = run_with_key(&env, Duration::from_secs(60));
    let said = both(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("judge-1") && said.contains("every request"),
        "{said}"
    );
    assert!(said.contains("--resume"), "{said}");
    let judged = env
        .server()
        .requests()
        .iter()
        .filter(|r| r.model() == Some("judge-1"))
        .count();
    assert!(judged > 0);
    // The samples are kept: the checkpoint holds every unit.
    assert_eq!(checkpoint(&env).len(), 2 * 3);
}
