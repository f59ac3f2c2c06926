//! `gpassk run --export-batch` / `--import-batch`: OpenAI Batch API files round-trip to the same
//! results as a live run.

use crate::common::{both, read, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums, ONE_MODEL};
use fake_openai::FakeServer;
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
