//! `gpassk run --export-batch` / `--import-batch`: OpenAI Batch API files round-trip to the same
//! results as a live run.

use crate::common::{both, read, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums, ONE_MODEL};
use fake_openai::{BatchPlan, FakeServer};
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
