//! `gpassk run --export-batch` / `--import-batch`: OpenAI Batch API files round-trip to the same
//! results as a live run.

use crate::common::{both, read, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums, ONE_MODEL};
use fake_openai::{BatchPlan, FakeServer, Recorded};
use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};

const SAMPLING: &str = "n = 5\nuse_n_param = true\nn_per_request = 2";

/// A test-side batch server: sends each request line's body to the fake server at `addr` (its
/// reply logic) and writes the output line the Batch API would.
fn batch_server(addr: &str, requests: &str) -> String {
    let mut out = String::new();
    for (i, line) in requests.lines().enumerate() {
        let req: Value = serde_json::from_str(line).expect("request line is JSON");
        assert_eq!(req["method"], "POST");
        let body = req["body"].to_string();
        let url = req["url"].as_str().expect("url");
        let mut tcp = TcpStream::connect(addr).expect("connect");
        write!(
            tcp,
            "POST {url} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        tcp.read_to_string(&mut reply).unwrap();
        let (head, text) = reply.split_once("\r\n\r\n").expect("an HTTP reply");
        let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
        let body: Value = serde_json::from_str(text).expect("JSON reply");
        let line = serde_json::json!({
            "id": format!("batch_req_{i}"),
            "custom_id": req["custom_id"],
            "response": {"status_code": status, "request_id": format!("r{i}"), "body": body},
            "error": null,
        });
        out.push_str(&format!("{line}\n"));
    }
    out
}

/// The run directory named on a `run directory: …` line of the export's stdout.
fn exported_dir(text: &str) -> PathBuf {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("run directory: "))
        .unwrap_or_else(|| panic!("no run directory line in {text}"));
    PathBuf::from(line)
}

fn export(env: &Fixture) -> (PathBuf, String) {
    let file = env.file("requests.jsonl");
    // No key variable set: exporting sends nothing, so needs none.
    let out = env
        .command(&["run", "--export-batch", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    (exported_dir(&both(&out)), read(&file))
}

fn import(env: &Fixture, dir: &Path, output: &str) -> std::process::Output {
    let file = env.write("output.jsonl", output);
    env.command(&[
        "run",
        "--import-batch",
        file.to_str().unwrap(),
        "--resume",
        dir.to_str().unwrap(),
    ])
    .output()
    .unwrap()
}

#[test]
fn export_then_import_gives_the_same_metrics_as_a_live_run() {
    let live = Fixture::new(&sums(4)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&live, SAMPLING, ONE_MODEL, "");
    let out = run(&live, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));

    let env = Fixture::new(&sums(4)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, SAMPLING, ONE_MODEL, "");
    let (dir, requests) = export(&env);
    assert_eq!(env.run_dir(), dir);
    assert_eq!(env.server().request_count(), 0, "export sends nothing");
    // Greedy + 5 samples in requests of 2: 1 + 3 requests per problem.
    assert_eq!(requests.lines().count(), 4 * 4);
    let first: Value = serde_json::from_str(requests.lines().nth(1).unwrap()).unwrap();
    assert_eq!(first["url"], "/v1/chat/completions");
    assert_eq!(first["body"]["n"], 2);
    assert_eq!(first["body"]["model"], "fake-1");

    let addr = env.base_url().trim_start_matches("http://").to_string();
    let output = batch_server(&addr, &requests);
    let out = import(&env, &dir, &output);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    // Byte-identical but for the fixture's own temporary directory in the dataset column.
    let metrics = |env: &Fixture, d: &Path| {
        read(&d.join("metrics.csv")).replace(&env.path().display().to_string(), "TMP")
    };
    assert_eq!(metrics(&live, &live.run_dir()), metrics(&env, &dir));
    assert!(metrics(&env, &dir).lines().count() > 2);

    // The records hold the same responses and seeds as the live run's.
    let units = |d: &Path| {
        let mut v: Vec<(String, String, String, String)> = read(&d.join("checkpoints/m1.jsonl"))
            .lines()
            .map(|l| {
                let r: Value = serde_json::from_str(l).unwrap();
                let f = |k: &str| r[k].to_string();
                (f("problem_id"), f("sample_index"), f("seed"), f("response"))
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(units(&live.run_dir()), units(&dir));
    assert_eq!(units(&dir).len(), 4 * 6);

    // A second import of the same file changes nothing.
    let out = import(&env, &dir, &output);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(both(&out).contains("24 already done"), "{}", both(&out));
    assert_eq!(units(&dir).len(), 4 * 6);
}

#[test]
fn bad_output_lines_are_refused_or_recorded_as_api_errors() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 2\ngreedy = false", ONE_MODEL, "");
    let (dir, requests) = export(&env);
    let addr = env.base_url().trim_start_matches("http://").to_string();
    let output = batch_server(&addr, &requests);
    let lines: Vec<&str> = output.lines().collect();
    assert_eq!(lines.len(), 4);

    let unknown = output.replacen("\"custom_id\":\"", "\"custom_id\":\"00", 1);
    let out = import(&env, &dir, &unknown);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        both(&out).contains("output.jsonl:1: custom_id"),
        "{}",
        both(&out)
    );

    let twice = format!("{output}{}\n", lines[2]);
    let out = import(&env, &dir, &twice);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(
        both(&out).contains("output.jsonl:5:") && both(&out).contains("already answered on line 3"),
        "{}",
        both(&out)
    );
    // Refused files write nothing.
    assert!(
        !dir.join("checkpoints/m1.jsonl").exists()
            || read(&dir.join("checkpoints/m1.jsonl")).is_empty()
    );

    // One request failed in the batch: its unit is an api_error record and the run exits 1.
    let mut failed: Value = serde_json::from_str(lines[0]).unwrap();
    failed["response"] = Value::Null;
    failed["error"] = serde_json::json!({"code": "batch_expired", "message": "expired"});
    let mixed = format!("{failed}\n{}\n", lines[1..].join("\n"));
    let out = import(&env, &dir, &mixed);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let records = read(&dir.join("checkpoints/m1.jsonl"));
    let errors: Vec<Value> = records
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["outcome"] == "api_error")
        .collect();
    assert_eq!(errors.len(), 1, "{records}");
    assert!(errors[0]["error"]
        .as_str()
        .unwrap()
        .contains("batch_expired"));
}

/// A fixture whose fake server runs batches by `plan`, configured with `batch = true`.
fn batch_env(plan: BatchPlan, interval: &str) -> Fixture {
    let server = FakeServer::builder()
        .responder(smart_reply)
        .batch_plan(plan);
    let env = Fixture::new(&sums(4)).with_server(server);
    let api = format!("batch = true\nbatch_poll_interval = {interval}");
    configure(&env, SAMPLING, ONE_MODEL, &api);
    env
}

fn plan(polls: u32, end: &str) -> BatchPlan {
    BatchPlan {
        polls,
        end: end.to_string(),
        ..BatchPlan::default()
    }
}

/// metrics.csv without the fixture's own temporary directory.
fn metrics(env: &Fixture) -> String {
    read(&env.run_dir().join("metrics.csv")).replace(&env.path().display().to_string(), "TMP")
}

#[test]
fn batch_mode_gives_the_same_metrics_as_a_live_run() {
    let live = Fixture::new(&sums(4)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&live, SAMPLING, ONE_MODEL, "");
    let out = run(&live, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));

    let env = batch_env(plan(2, "completed"), "0.01");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(metrics(&live), metrics(&env));
    let s = env.server();
    assert_eq!(s.hits("POST", "/v1/files"), 1);
    assert_eq!(s.hits("POST", "/v1/batches"), 1);
    assert_eq!(s.hits("GET", "/v1/batches/batch_0"), 3);
    assert_eq!(
        s.hits("POST", "/v1/chat/completions"),
        0,
        "nothing sent live"
    );
    assert_eq!(s.request_count(), 4 * 4, "every request line answered once");
    let text = both(&out);
    assert!(
        text.contains("batch batch_0 (model m1): in_progress, 0/16 done, 0 failed"),
        "{text}"
    );
    assert!(
        text.contains("batch batch_0 (model m1): completed, 16/16 done"),
        "{text}"
    );
    // Imported: the manifest no longer names a batch to poll.
    assert!(!read(&env.run_dir().join("manifest.json")).contains("batch_id"));
}

/// `gpassk run` in the background, returned once it has polled its batch twice.
fn spawn_polling(env: &Fixture) -> std::process::Child {
    let child = crate::run_fake::spawn_run(&env.file("config.toml"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while env.server().hits("GET", "/v1/batches/batch_0") < 2 {
        assert!(std::time::Instant::now() < deadline, "never polled");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child
}

#[test]
fn a_killed_batch_run_resumes_polling_the_same_batch() {
    // 1,500 polls at 20 ms leave the kill 30 s to land, however loaded the machine; the resume then
    // polls fast.
    let env = batch_env(plan(1500, "completed"), "0.02");
    let mut child = spawn_polling(&env);
    child.kill().unwrap();
    child.wait().unwrap();
    let dir = env.run_dir();
    assert!(read(&dir.join("manifest.json")).contains("\"batch_id\": \"batch_0\""));
    assert_eq!(
        env.server().request_count(),
        0,
        "not completed before the kill"
    );

    let fast = "api.batch_poll_interval=0.001";
    let out = run(&env, &["--resume", dir.to_str().unwrap(), "--set", fast]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let s = env.server();
    assert_eq!(s.hits("POST", "/v1/files"), 1, "no second upload");
    assert_eq!(s.hits("POST", "/v1/batches"), 1, "no second batch");
    assert_eq!(s.hits("GET", "/v1/batches/batch_0"), 1501);
    assert_eq!(s.request_count(), 4 * 4);
    assert!(metrics(&env).lines().count() > 2);
}

#[test]
fn a_failed_or_expired_batch_exits_1_naming_it() {
    for end in ["failed", "expired"] {
        let env = batch_env(plan(0, end), "0.01");
        let out = run(&env, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", both(&out));
        let text = both(&out);
        assert!(
            text.contains(&format!("batch batch_0 ended `{end}`")),
            "{text}"
        );
        assert_eq!(env.server().request_count(), 0);
    }
}

#[test]
fn batch_is_a_per_model_key_and_a_bad_interval_is_refused() {
    let env = batch_env(plan(0, "completed"), "0.01");
    let models =
        format!("{ONE_MODEL}[[models]]\nname = \"m2\"\nmodel_id = \"fake-2\"\nbatch = false\n");
    configure(
        &env,
        SAMPLING,
        &models,
        "batch = true\nbatch_poll_interval = 0.01",
    );
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let s = env.server();
    assert_eq!(s.hits("POST", "/v1/batches"), 1, "only m1 goes by batch");
    assert_eq!(
        s.hits("POST", "/v1/chat/completions"),
        4 * 4,
        "m2 goes live"
    );
    let batched = s
        .requests()
        .iter()
        .filter(|r| r.model() == Some("fake-1"))
        .count();
    assert_eq!(batched, 4 * 4);

    configure(
        &env,
        SAMPLING,
        ONE_MODEL,
        "batch = true\nbatch_poll_interval = -1",
    );
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    assert!(both(&out).contains("batch_poll_interval"), "{}", both(&out));
}

#[test]
fn ctrl_c_while_polling_stops_and_keeps_the_batch_id() {
    // The batch never finishes: only the interrupt ends the run.
    let env = batch_env(plan(u32::MAX, "completed"), "0.02");
    let child = spawn_polling(&env);
    let out = crate::run_fake::interrupt(child);
    assert!(both(&out).contains("--resume"), "{}", both(&out));
    let manifest: Value =
        serde_json::from_str(&read(&env.run_dir().join("manifest.json"))).unwrap();
    assert_eq!(manifest["status"], "interrupted");
    assert_eq!(manifest["models"]["m1"]["batch_id"], "batch_0");
    assert_eq!(env.server().request_count(), 0);
}

/// Every file under `dir`, recursively, with its text (lossy).
fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(all_files(&p));
        } else {
            let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
            out.push((p, text));
        }
    }
    out
}

/// Asserts that the key is in no file under the fixture and not in `out`.
fn no_key_anywhere(env: &Fixture, out: &std::process::Output) {
    use crate::run_fake::KEY;
    assert!(!both(out).contains(KEY), "{}", both(out));
    for (path, text) in all_files(&env.results()) {
        assert!(!text.contains(KEY), "the key is in {}", path.display());
    }
}

/// A batch fixture with `plan` whose replies echo the key in their content and model.
fn echoing_env(plan: BatchPlan) -> Fixture {
    let echo = |r: &Recorded| {
        let mut reply = smart_reply(r);
        for c in &mut reply.choices {
            c.content = format!("{} (key {})", c.content, crate::run_fake::KEY);
        }
        reply.served_model = Some(format!("model-{}", crate::run_fake::KEY));
        reply
    };
    let server = FakeServer::builder().responder(echo).batch_plan(plan);
    let env = Fixture::new(&sums(4)).with_server(server);
    configure(
        &env,
        SAMPLING,
        ONE_MODEL,
        "batch = true\nbatch_poll_interval = 0.01",
    );
    env
}

#[test]
fn a_key_echoed_by_the_batch_path_reaches_no_file_and_no_message() {
    use crate::run_fake::KEY;
    // Echoed in output lines' content and model, and in an error file's message.
    let errors = Some((2, format!("Incorrect API key provided: {KEY}")));
    let env = echoing_env(BatchPlan {
        error_lines: errors,
        ..plan(1, "completed")
    });
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let text = read(&env.run_dir().join("checkpoints/m1.jsonl"));
    assert!(text.contains("[REDACTED]"), "{text}");
    let manifest = read(&env.run_dir().join("manifest.json"));
    assert!(
        manifest.contains("failure_causes") && manifest.contains("[REDACTED]"),
        "{manifest}"
    );
    no_key_anywhere(&env, &out);

    // Echoed in the id of a poll reply.
    let env = echoing_env(BatchPlan {
        reported_id: Some(format!("batch_{KEY}")),
        ..plan(1, "completed")
    });
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    no_key_anywhere(&env, &out);
}

#[test]
fn a_batch_the_server_forgot_is_dropped_once_and_its_units_are_sent_anew() {
    // Polled once, then 404 for good: a kept id must not block every resume.
    let env = batch_env(
        BatchPlan {
            gone_after: Some(1),
            ..plan(5, "completed")
        },
        "0.01",
    );
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let text = both(&out);
    assert_eq!(
        text.matches("batch batch_0 is no longer known").count(),
        1,
        "{text}"
    );
    let manifest: Value =
        serde_json::from_str(&read(&env.run_dir().join("manifest.json"))).unwrap();
    assert!(
        manifest["models"]["m1"].get("batch_id").is_none(),
        "{manifest}"
    );
    // The resume submits a new batch (batch_1), which the plan lets finish.
    let dir = env.run_dir().display().to_string();
    let out = run(&env, &["--resume", &dir, "--force"]);
    let s = env.server();
    assert_eq!(s.hits("POST", "/v1/batches"), 2, "{}", both(&out));
    assert!(s.hits("GET", "/v1/batches/batch_1") >= 1);
}

#[test]
fn file_ids_from_the_server_are_checked_before_they_reach_a_url() {
    let env = batch_env(
        BatchPlan {
            reported_output_file_id: Some("../batches/batch_0".into()),
            ..plan(0, "completed")
        },
        "0.01",
    );
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(
        both(&out).contains("unusable output_file_id"),
        "{}",
        both(&out)
    );
    let s = env.server();
    assert_eq!(s.hits("GET", "/v1/batches/batch_0/content"), 0);
    assert_eq!(s.hits("GET", "/v1/batches/batch_0"), 1);
}

#[test]
fn a_completed_batch_that_lost_lines_says_which_units_have_no_answer() {
    // 16 requests (n = 5 in pairs of 2 plus greedy, 4 problems), 2 of them answered.
    let env = batch_env(
        BatchPlan {
            keep_lines: Some(2),
            ..plan(0, "completed")
        },
        "0.01",
    );
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let text = both(&out);
    assert!(!text.contains("0 units still failed"), "{text}");
    assert!(text.contains("have no answer yet"), "{text}");
    assert!(text.contains("its output answers no request for"), "{text}");
}

#[test]
fn aliased_or_foreign_output_lines_are_refused_naming_the_line() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 2\ngreedy = false", ONE_MODEL, "");
    let (dir, requests) = export(&env);
    let addr = env.base_url().trim_start_matches("http://").to_string();
    let output = batch_server(&addr, &requests);
    let first: Value = serde_json::from_str(output.lines().next().unwrap()).unwrap();
    let id = first["custom_id"].as_str().unwrap().to_string();
    let (head, hash) = id.rsplit_once('.').unwrap();
    let (prefix, slot) = head.rsplit_once('.').unwrap();
    // Aliases of the first line's unit: upper-case hex, a padded or signed slot, a repeated one.
    for alias in [
        format!("{}.{slot}.{hash}", prefix.to_uppercase()),
        format!("{prefix}.0{slot}.{hash}"),
        format!("{prefix}.+{slot}.{hash}"),
        format!("{prefix}.{slot}_{slot}.{hash}"),
    ] {
        let mut line = first.clone();
        line["custom_id"] = alias.clone().into();
        let out = import(&env, &dir, &format!("{output}{line}\n"));
        assert_eq!(out.status.code(), Some(2), "{alias}: {}", both(&out));
        assert!(
            both(&out).contains("output.jsonl:5:"),
            "{alias}: {}",
            both(&out)
        );
    }
    // Output exported from another run (other temperature) is refused, not stamped as ours.
    let other = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    configure(
        &other,
        "n = 2\ngreedy = false\ntemperature = 1.3",
        ONE_MODEL,
        "",
    );
    let (_, foreign_requests) = export(&other);
    let foreign = batch_server(&addr, &foreign_requests);
    let out = import(&env, &dir, &foreign);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let text = both(&out);
    assert!(
        text.contains("output.jsonl:1:") && text.contains("another request"),
        "{text}"
    );
    assert!(
        !dir.join("checkpoints/m1.jsonl").exists()
            || read(&dir.join("checkpoints/m1.jsonl")).is_empty()
    );
}

#[test]
fn a_batch_output_over_its_reply_limits_is_refused_while_streaming_and_not_fetched_again() {
    // One reply of 3 MB where each line may hold 1,024 bytes (plus its envelope): the files
    // together pass their cap long before they are read whole.
    let big = |r: &Recorded| {
        let mut reply = smart_reply(r);
        if r.user_text().is_some_and(|q| q.contains("What is 2+1?")) {
            reply.choices[0].content = "x".repeat(3 << 20);
        }
        reply
    };
    let server = FakeServer::builder()
        .responder(big)
        .batch_plan(plan(0, "completed"));
    let env = Fixture::new(&sums(4)).with_server(server);
    let api = "batch = true\nbatch_poll_interval = 0.01\nmax_response_bytes = 1024";
    configure(&env, SAMPLING, ONE_MODEL, api);
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("larger than"), "{}", both(&out));
    let dir = env.run_dir();
    assert!(!dir.join(format!("batch-{}.output.jsonl", "6d31")).exists());
    assert!(!read(&dir.join("manifest.json")).contains("batch_id"));
    let downloads = env.server().hits("GET", "/v1/files/file-1/content");
    assert_eq!(downloads, 1, "one download, cut short");
}
