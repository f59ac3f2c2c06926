//! `gpassk run` end to end against the fake OpenAI-compatible server: faults, stops, resume, secrets.

use crate::common::{both as out_text, gpassk, Fixture, Toml};
use fake_openai::{ChoiceReply, FakeServer, Fault, Recorded, Reply};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) const KEY: &str = "sk-fake-SECRET-7f3a9c";

/// `problems` sums "What is a+b?" with a = i + 2, b = 3i + 1, as JSONL.
pub(crate) fn sums(problems: usize) -> String {
    (0..problems)
        .map(|i| {
            let (a, b) = (i + 2, 3 * i + 1);
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {a}+{b}?\",\"answer\":\"{}\"}}\n",
                a + b
            )
        })
        .collect()
}

/// Writes config.toml for the fixture's server with fast retries and the key from
/// `GPASSK_TEST_KEY`; `sampling`, `models` and `extra_api` are spliced in as TOML text over the
/// defaults.
pub(crate) fn configure(env: &Fixture, sampling: &str, models: &str, extra_api: &str) -> PathBuf {
    configure_at(env, &env.base_url(), sampling, models, extra_api)
}

/// [`configure`] with another base URL than the fixture's server.
fn configure_at(
    env: &Fixture,
    base_url: &str,
    sampling: &str,
    models: &str,
    extra_api: &str,
) -> PathBuf {
    let extra_api = with_defaults(extra_api, &[("timeout", "5"), ("concurrency", "4")]);
    let api = format!(
        "api_key_env = \"GPASSK_TEST_KEY\"\nmax_retries = 4\nbackoff_base = 0.01\nbackoff_max = 0.05\n{extra_api}"
    );
    let sampling = with_defaults(sampling, &[("temperature", "0.7"), ("seed", "42")]);
    env.config(Toml {
        base_url: Some(base_url),
        api: &api,
        sampling: &sampling,
        models,
        evaluation: "",
    })
}

/// `gpassk run --config <cfg> --quiet` in the background with the test key, output captured.
pub(crate) fn spawn_run(cfg: &Path) -> std::process::Child {
    gpassk()
        .args(["run", "--quiet", "--config", cfg.to_str().unwrap()])
        .env("GPASSK_TEST_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Ctrl-C to a running gpassk; its output once it has exited 130, as an interrupt must.
pub(crate) fn interrupt(child: std::process::Child) -> Output {
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", out_text(&out));
    out
}

/// `gpassk run --config <config.toml> ARGS` with the test key set.
pub(crate) fn run(env: &Fixture, args: &[&str]) -> Output {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    env.command(&all)
        .env("GPASSK_TEST_KEY", KEY)
        .output()
        .unwrap()
}

/// Adds `key = value` lines for keys the caller's TOML text does not set.
fn with_defaults(text: &str, defaults: &[(&str, &str)]) -> String {
    let mut out = text.to_string();
    for (k, v) in defaults {
        if !text
            .lines()
            .any(|l| l.split('=').next().map(str::trim) == Some(*k))
        {
            out.push_str(&format!("\n{k} = {v}"));
        }
    }
    out
}

pub(crate) const ONE_MODEL: &str = "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"\n";

/// Answers correctly or not as a pure function of the request, so faults cannot change results.
pub(crate) fn smart_reply(r: &Recorded) -> Reply {
    let q = r.user_text().unwrap_or_default();
    let nums: Vec<u64> = q
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .filter_map(|s| s.parse().ok())
        .collect();
    let (a, b) = match nums.as_slice() {
        [.., a, b] => (*a, *b),
        _ => (0, 0),
    };
    let seed = r.body["seed"].as_u64().unwrap_or(0);
    let greedy = r.body["temperature"].as_f64() == Some(0.0);
    let choices = (0..r.n())
        .map(|i| {
            let right = if greedy {
                a % 2 == 0
            } else {
                !(seed + i).is_multiple_of(3)
            };
            let ans = if right { a + b } else { a + b + 1 };
            ChoiceReply::stop(format!(
                "Adding gives {ans}. The answer is \\boxed{{{ans}}}."
            ))
        })
        .collect();
    Reply {
        choices,
        served_model: Some("fake-served-2024".into()),
        system_fingerprint: Some("fp_1".into()),
        usage: None,
    }
}

/// (subset, metric, k, tau) → value, from metrics.csv.
pub(crate) fn metrics(
    run_dir: &Path,
) -> BTreeMap<(String, String, String, String, String), String> {
    let mut r = csv::Reader::from_path(run_dir.join("metrics.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let (m, s, me, k, t, v) = (
        col("model"),
        col("subset"),
        col("metric"),
        col("k"),
        col("tau"),
        col("value"),
    );
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                (
                    rec[m].to_string(),
                    rec[s].to_string(),
                    rec[me].to_string(),
                    rec[k].to_string(),
                    rec[t].to_string(),
                ),
                rec[v].to_string(),
            )
        })
        .collect()
}

/// (problem, sample index) → number of usable records, per checkpoint.
pub(crate) fn usable_units(run_dir: &Path, model: &str) -> HashMap<(String, String), usize> {
    let text = std::fs::read_to_string(run_dir.join("checkpoints").join(format!("{model}.jsonl")))
        .unwrap();
    let mut m = HashMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["outcome"] != "api_error" {
            *m.entry((
                v["problem_id"].as_str().unwrap().to_string(),
                v["sample_index"].to_string(),
            ))
            .or_default() += 1;
        }
    }
    m
}

fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn faulty_server_gives_every_unit_once_and_the_same_metrics() {
    let clean = FakeServer::builder().responder(smart_reply);
    let a = Fixture::new(&sums(6)).with_server(clean);
    configure(&a, "n = 8", ONE_MODEL, "");
    let out = run(&a, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));

    // A quarter of request bodies fail on their first attempt, cycling through every fault.
    let faulty = FakeServer::builder()
        .responder(smart_reply)
        .faults(|r: &Recorded| {
            let seed = r.body["seed"].as_u64().unwrap_or(0);
            if r.attempt > 0 || !seed.is_multiple_of(4) {
                return None;
            }
            Some(match (seed / 4) % 6 {
                0 => Fault::server_error(),
                1 => Fault::Drop,
                2 => Fault::MalformedJson,
                3 => Fault::EmptyChoices,
                4 => Fault::rate_limited(0),
                _ => Fault::Hang(Duration::from_secs(3)),
            })
        });
    let b = Fixture::new(&sums(6)).with_server(faulty);
    let faulty = b.server();
    configure(&b, "n = 8", ONE_MODEL, "timeout = 1");
    let out = run(&b, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let retried = faulty.requests().iter().filter(|r| r.attempt > 0).count();
    assert!(retried >= 6, "faults were injected and retried: {retried}");

    let units = usable_units(&b.run_dir(), "m1");
    assert_eq!(units.len(), 6 * 9, "8 samples + greedy for 6 problems");
    assert!(units.values().all(|&c| c == 1), "each unit exactly once");
    assert_eq!(metrics(&a.run_dir()), metrics(&b.run_dir()));
    assert!(!metrics(&a.run_dir()).is_empty());
}

#[test]
fn auth_and_unknown_model_stop_that_model_only() {
    let server = FakeServer::builder()
        .responder(smart_reply)
        .faults(|r: &Recorded| match r.model() {
            Some("locked") => Some(Fault::unauthorized()),
            Some("ghost") => Some(Fault::unknown_model("ghost")),
            _ => None,
        });
    let env = Fixture::new(&sums(4)).with_server(server);
    let server = env.server();
    let models = "[[models]]\nname = \"good\"\nmodel_id = \"fake-1\"\n\
                  [[models]]\nname = \"bad-key\"\nmodel_id = \"locked\"\n\
                  [[models]]\nname = \"no-such\"\nmodel_id = \"ghost\"\n";
    configure(&env, "n = 4", models, "concurrency = 8");
    let out = run(&env, &["--quiet"]);
    let text = out_text(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let reqs = server.requests();
    assert_eq!(
        reqs.iter().filter(|r| r.model() == Some("locked")).count(),
        1
    );
    assert_eq!(
        reqs.iter().filter(|r| r.model() == Some("ghost")).count(),
        1
    );
    assert!(
        text.contains("bad-key") && text.contains("401") && text.contains("Incorrect API key"),
        "{text}"
    );
    assert!(text.contains("no-such") && text.contains("404"), "{text}");
    assert_eq!(usable_units(&env.run_dir(), "good").len(), 4 * 5);
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.run_dir().join("manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["models"]["good"]["status"], "complete");
    assert_eq!(manifest["models"]["bad-key"]["status"], "failed");
    assert_eq!(manifest["models"]["no-such"]["status"], "failed");
}

#[test]
fn retry_after_is_honoured() {
    let seen: Arc<Mutex<Vec<(u64, u32, Instant)>>> = Arc::default();
    let log = seen.clone();
    let server = FakeServer::builder()
        .responder(smart_reply)
        .faults(move |r: &Recorded| {
            log.lock().unwrap().push((
                r.body["seed"].as_u64().unwrap_or(0),
                r.attempt,
                Instant::now(),
            ));
            (r.attempt == 0).then(|| Fault::rate_limited(1))
        });
    let env = Fixture::new(&sums(2)).with_server(server);
    configure(&env, "n = 1\ngreedy = false", ONE_MODEL, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let seen = seen.lock().unwrap();
    for &(seed, attempt, at) in seen.iter().filter(|s| s.1 == 1) {
        let first = seen
            .iter()
            .find(|s| s.0 == seed && s.1 == attempt - 1)
            .unwrap()
            .2;
        assert!(
            at - first >= Duration::from_millis(990),
            "retried after {:?}",
            at - first
        );
    }
    assert_eq!(seen.iter().filter(|s| s.1 == 1).count(), 2);
}

#[test]
fn resume_after_kill_matches_uninterrupted_run_and_torn_line_is_redone() {
    let slow = FakeServer::builder().responder(|r: &Recorded| {
        std::thread::sleep(Duration::from_millis(15));
        smart_reply(r)
    });
    let env = Fixture::new(&sums(8)).with_server(slow);
    let slow = env.server();
    configure(&env, "n = 6", ONE_MODEL, "concurrency = 2");
    let mut child = spawn_run(&env.path().join("config.toml"));
    // Kill it hard once some, but not all, samples are checkpointed.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let lines = std::fs::read_dir(env.path().join("results"))
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| std::fs::read_to_string(e.ok()?.path().join("checkpoints/m1.jsonl")).ok())
            .map_or(0, |t| t.lines().count());
        if lines >= 10 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let run_dir = env.run_dir();
    let before = usable_units(&run_dir, "m1").len();
    assert!(before < 8 * 7, "killed midway ({before} units)");
    // Tear the last line as a crash mid-write would.
    let ck = run_dir.join("checkpoints/m1.jsonl");
    let text = std::fs::read_to_string(&ck).unwrap();
    let keep = text.trim_end().rfind('\n').map_or(0, |i| i + 1);
    let torn = &text[..keep + (text.len() - keep) / 2];
    std::fs::write(&ck, torn).unwrap();
    let after_tear = usable_units_lenient(&ck);

    // Requests the killed process had sent may still be reaching the server: wait until it is quiet.
    let mut requests_before = slow.request_count();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = slow.request_count();
        if now == requests_before {
            break;
        }
        requests_before = now;
    }
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let units = usable_units(&run_dir, "m1");
    assert_eq!(units.len(), 8 * 7);
    assert!(units.values().all(|&c| c == 1));
    assert_eq!(
        slow.request_count() - requests_before,
        8 * 7 - after_tear,
        "only missing units are requested"
    );

    let reference = FakeServer::builder().responder(smart_reply);
    let whole = Fixture::new(&sums(8)).with_server(reference);
    configure(&whole, "n = 6", ONE_MODEL, "");
    assert_eq!(run(&whole, &["--quiet"]).status.code(), Some(0));
    assert_eq!(metrics(&run_dir), metrics(&whole.run_dir()));
}

fn usable_units_lenient(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["outcome"] != "api_error")
        .count()
}

#[test]
fn raising_n_requests_only_the_new_samples() {
    let server = FakeServer::builder().responder(smart_reply);
    let env = Fixture::new(&sums(3)).with_server(server);
    let server = env.server();
    configure(&env, "n = 4", ONE_MODEL, "");
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    assert_eq!(server.request_count(), 3 * 5);
    configure(&env, "n = 8", ONE_MODEL, "");
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    assert_eq!(server.request_count(), 3 * 5 + 3 * 4);
    assert_eq!(usable_units(&env.run_dir(), "m1").len(), 3 * 9);
    // A changed temperature is refused unless forced.
    configure(&env, "n = 8\ntemperature = 1.0", ONE_MODEL, "");
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out_text(&out).contains("temperature 0.7 → 1"),
        "{}",
        out_text(&out)
    );
}

#[test]
fn api_key_never_lands_in_files_or_output() {
    let server = FakeServer::builder()
        .responder(smart_reply)
        .faults(|r: &Recorded| {
            (r.model() == Some("echo")).then(|| Fault::Status {
                code: 401,
                body: format!(r#"{{"error":{{"message":"Incorrect API key provided: {KEY}"}}}}"#),
                retry_after: None,
            })
        });
    let env = Fixture::new(&sums(2)).with_server(server);
    let server = env.server();
    let models = "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"\n[[models]]\nname = \"m2\"\nmodel_id = \"echo\"\n";
    configure(&env, "n = 2", models, "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(server
        .requests()
        .iter()
        .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {KEY}"))));
    assert!(!out_text(&out).contains(KEY), "{}", out_text(&out));
    assert!(out_text(&out).contains("[REDACTED]"));
    for f in all_files(&env.run_dir()) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "key in {}",
            f.display()
        );
    }
}

#[test]
fn missing_key_variable_fails_before_any_request() {
    let server = FakeServer::builder().responder(smart_reply);
    let env = Fixture::new(&sums(2)).with_server(server);
    let server = env.server();
    let cfg = configure(&env, "n = 2", ONE_MODEL, "");
    let out = gpassk()
        .args(["run", "--config", cfg.to_str().unwrap()])
        .env_remove("GPASSK_TEST_KEY")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out_text(&out).contains("GPASSK_TEST_KEY"),
        "{}",
        out_text(&out)
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn checkpoint_lines_carry_the_documented_fields_and_distinct_seeds() {
    let server = FakeServer::builder().responder(smart_reply);
    let env = Fixture::new(&sums(2)).with_server(server);
    let server = env.server();
    configure_at(
        &env,
        &format!("{}/v1", server.base_url()),
        "n = 4\nmax_tokens = 64",
        ONE_MODEL,
        "",
    );
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    assert!(server
        .requests()
        .iter()
        .all(|r| r.path == "/v1/chat/completions"));
    let text = std::fs::read_to_string(env.run_dir().join("checkpoints/m1.jsonl")).unwrap();
    let mut seeds = std::collections::HashSet::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for f in [
            "model",
            "model_id",
            "served_model",
            "system_fingerprint",
            "problem_id",
            "sample_index",
            "seed",
            "response",
            "finish_reason",
            "outcome",
            "started_at",
            "finished_at",
            "prompt_hash",
            "latency_ms",
            "attempts",
            "temperature",
            "top_p",
            "max_tokens",
            "run_id",
        ] {
            assert!(v.get(f).is_some(), "missing {f} in {line}");
        }
        assert_eq!(v["served_model"], "fake-served-2024");
        assert_eq!(v["model_id"], "fake-1");
        assert!(v["started_at"].as_str().unwrap().ends_with('Z'));
        if v["sample_index"] == "greedy" {
            assert_eq!(v["temperature"], 0.0);
        } else {
            assert!(seeds.insert(v["seed"].as_u64().unwrap()), "seed reused");
        }
    }
    assert_eq!(seeds.len(), 2 * 4);
    let manifest = std::fs::read_to_string(env.run_dir().join("manifest.json")).unwrap();
    assert!(manifest.contains("fake-served-2024"));
}

#[test]
fn n_param_batches_and_asks_again_for_missing_choices() {
    // The server returns one choice fewer than asked on each body's first attempt.
    let server = FakeServer::builder().responder(|r: &Recorded| {
        let mut reply = smart_reply(r);
        if r.attempt == 0 && reply.choices.len() > 1 {
            reply.choices.pop();
        }
        reply
    });
    let env = Fixture::new(&sums(2)).with_server(server);
    let server = env.server();
    configure(
        &env,
        "n = 5\nuse_n_param = true\nn_per_request = 3\ngreedy = false",
        ONE_MODEL,
        "",
    );
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let units = usable_units(&env.run_dir(), "m1");
    assert_eq!(units.len(), 2 * 5);
    assert!(units.values().all(|&c| c == 1));
    assert!(server.requests().iter().any(|r| r.n() == 3));
}

#[test]
fn dry_run_sends_nothing_and_prints_the_plan() {
    let server = FakeServer::builder().responder(smart_reply);
    let env = Fixture::new(&sums(5)).with_server(server);
    let server = env.server();
    configure(&env, "n = 4\nmax_tokens = 100", ONE_MODEL, "");
    let out = run(&env, &["--dry-run", "--limit", "3"]);
    assert_eq!(out.status.code(), Some(0));
    let text = out_text(&out);
    assert!(text.contains("15 units"), "{text}");
    assert_eq!(server.request_count(), 0);
    assert!(!env.path().join("results").exists());
}

#[test]
fn bad_config_exits_2_naming_file_line_and_suggestion() {
    let env = Fixture::new(&sums(1));
    let cfg = configure(&env, "n = 4\ntemprature = 0.5", ONE_MODEL, "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(2));
    let text = out_text(&out);
    assert!(text.contains(&format!("{}:", cfg.display())), "{text}");
    assert!(text.contains("did you mean `temperature`"), "{text}");
    configure(&env, "n = 4\ntop_p = 3", ONE_MODEL, "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out_text(&out).contains("top_p"), "{}", out_text(&out));
    let out = run(&env, &["--models", "m2"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn ctrl_c_saves_and_exits_130_with_the_resume_command() {
    let slow = FakeServer::builder().responder(|r: &Recorded| {
        std::thread::sleep(Duration::from_millis(20));
        smart_reply(r)
    });
    let env = Fixture::new(&sums(10)).with_server(slow);
    let slow = env.server();
    let cfg = configure(&env, "n = 8", ONE_MODEL, "concurrency = 2");
    let child = spawn_run(&cfg);
    let deadline = Instant::now() + Duration::from_secs(60);
    while slow.request_count() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let text = out_text(&interrupt(child));
    assert!(text.contains("--resume"), "{text}");
    let run_dir = env.run_dir();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["status"], "interrupted");
    let saved = usable_units(&run_dir, "m1").len();
    assert!(saved > 0 && saved < 10 * 9, "{saved}");
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    assert_eq!(usable_units(&run_dir, "m1").len(), 10 * 9);
}

/// `n = 4` samples of one model, graded by rule then by the judge `judge-1` (`judge` keys added).
pub(crate) fn configure_judged(env: &Fixture, judge: &str) {
    let cfg = configure(env, "n = 4", ONE_MODEL, "");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "[evaluation]\n",
        "[evaluation]\ngrader = \"rule_then_judge\"\n",
    );
    std::fs::write(&cfg, text + "[judge]\nmodel_id = \"judge-1\"\n" + judge).unwrap();
}

/// The policy answers as [`smart_reply`] does and the judge `judge-1` accepts every answer.
pub(crate) fn judge_says_yes(r: &Recorded) -> Reply {
    match r.model() {
        Some("judge-1") => Reply::with_choices(vec![ChoiceReply::stop("Yes.")]),
        _ => smart_reply(r),
    }
}

#[test]
fn judge_rescues_rule_rejections_and_is_asked_only_once() {
    let server = FakeServer::builder().responder(|r: &Recorded| {
        if r.model() == Some("judge-1") {
            let text = r.user_text().unwrap_or_default();
            assert!(
                text.contains("Reference answer:") && text.contains("Candidate answer:"),
                "{text}"
            );
            Reply::with_choices(vec![ChoiceReply::stop("Yes.")])
        } else {
            smart_reply(r)
        }
    });
    let env = Fixture::new(&sums(3)).with_server(server);
    let server = env.server();
    configure_judged(&env, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let judged = server
        .requests()
        .iter()
        .filter(|r| r.model() == Some("judge-1"))
        .count();
    let samples = usable_units(&env.run_dir(), "m1").len();
    assert!(
        judged > 0 && judged < samples,
        "only rule rejections go to the judge: {judged} of {samples}"
    );
    let grades = std::fs::read_to_string(env.run_dir().join("grades/m1.jsonl")).unwrap();
    assert_eq!(grades.lines().count(), judged);
    let m = metrics(&env.run_dir());
    let greedy = m
        .iter()
        .find(|(k, _)| k.1 == "all" && k.2 == "greedy_acc")
        .unwrap()
        .1;
    assert_eq!(greedy, "1.0", "every answer accepted by the judge");
    // Scoring again reads the stored verdicts; the judge is not asked twice.
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.model() == Some("judge-1"))
            .count(),
        judged
    );
    assert_eq!(metrics(&env.run_dir()), m);

    // Scoring kept, per problem, the samples the judge saw otherwise: the viewer's filter reads
    // them (no grading again), and they match the verdicts asked for.
    let dir = gpassk::rundir::RunDir::at(env.run_dir());
    let (plan, manifest) = gpassk::scoring::load_plan(&dir, &[]).unwrap();
    let kept = gpassk::scoring::stored::read_back(&dir, &plan, &manifest).expect("fresh scores");
    let overruled = kept.models[0]
        .judge_overruled
        .clone()
        .expect("a judged run");
    assert_eq!(overruled.iter().sum::<u32>() as usize, judged);
    let (notes, _) = gpassk::util::Notes::collect();
    crate::common::assert_same_scores(&kept, &gpassk::scoring::load_run(&dir, &notes).unwrap());
    let served = crate::view::serve(&env.results());
    let name = env
        .run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let grid = crate::view::get(&served, &format!("/api/run/{name}/problems"));
    let grid: serde_json::Value = serde_json::from_str(&grid.body).unwrap();
    assert_eq!(grid["judged"], true);
    let flagged: Vec<bool> = (grid["rows"].as_array().unwrap().iter())
        .map(|r| r["judge_disagrees"] == true)
        .collect();
    let expected: Vec<bool> = overruled.iter().map(|&c| c > 0).collect();
    assert_eq!(flagged, expected);
    assert!(flagged.contains(&true), "{grid}");
}

#[test]
fn a_checkpoint_that_cannot_be_written_is_a_disk_error() {
    let server = FakeServer::builder().responder(smart_reply);
    let env = Fixture::new(&sums(20)).with_server(server);
    let cfg = configure(&env, "n = 4", ONE_MODEL, "");
    // A 32 KiB file-size limit (SIGXFSZ ignored, so writes past it fail with EFBIG) lets the
    // manifest and the partial run's reports through and stops the checkpoint (some 54 KiB
    // whole) after about sixty lines.
    let script = format!(
        "trap '' XFSZ; ulimit -f 64; exec '{}' run --config '{}' --quiet",
        env!("CARGO_BIN_EXE_gpassk"),
        cfg.display()
    );
    let out = Command::new("sh")
        .args(["-c", &script])
        .env("GPASSK_TEST_KEY", KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = out_text(&out);
    assert_ne!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("disk error"), "{text}");
    assert!(!text.contains("connection"), "{text}");
}

/// `[judge] stream = true` (or `[api] stream`): judge requests ask for server-sent events, and
/// the streamed verdicts count as plain ones do.
#[test]
fn the_judge_streams_when_asked() {
    let server = FakeServer::builder().responder(judge_says_yes);
    let env = Fixture::new(&sums(3)).with_server(server);
    configure_judged(&env, "stream = true\n");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", out_text(&out));
    let judged: Vec<Recorded> = env
        .server()
        .requests()
        .into_iter()
        .filter(|r| r.model() == Some("judge-1"))
        .collect();
    assert!(!judged.is_empty() && judged.iter().all(Recorded::streamed));
    let grades = std::fs::read_to_string(env.run_dir().join("grades/m1.jsonl")).unwrap();
    assert_eq!(grades.lines().count(), judged.len());
    let m = metrics(&env.run_dir());
    let greedy = m
        .iter()
        .find(|(k, _)| k.1 == "all" && k.2 == "greedy_acc")
        .unwrap()
        .1;
    assert_eq!(greedy, "1.0", "every streamed verdict accepted");
}

#[test]
fn a_second_ctrl_c_quits_at_once_and_the_manifest_says_interrupted() {
    // Requests hang, so the first Ctrl-C waits out the grace period; the second ends it at once.
    let server =
        FakeServer::builder().faults(|_: &Recorded| Some(Fault::Hang(Duration::from_secs(60))));
    let env = Fixture::new(&sums(3)).with_server(server);
    let cfg = configure(
        &env,
        "n = 2",
        ONE_MODEL,
        "shutdown_grace = 60\ntimeout = 120",
    );
    let child = spawn_run(&cfg);
    let deadline = Instant::now() + Duration::from_secs(60);
    while env.server().request_count() == 0 {
        assert!(Instant::now() < deadline, "no request sent");
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = child.id().to_string();
    let signal = || {
        let status = Command::new("kill").args(["-INT", &pid]).status().unwrap();
        assert!(status.success());
    };
    signal();
    // The first signal is being handled once the run says so on stderr; a fixed pause is enough
    // here because the grace period (60 s) is far longer.
    std::thread::sleep(Duration::from_millis(300));
    signal();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", out_text(&out));
    let manifest: serde_json::Value =
        serde_json::from_str(&crate::common::read(&env.run_dir().join("manifest.json"))).unwrap();
    assert_eq!(manifest["status"], "interrupted", "{manifest}");
}
