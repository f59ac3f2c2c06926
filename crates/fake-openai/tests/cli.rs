//! The `fake-openai` binary: starts, prints its address and answers a chat request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `fake-openai ARGS`, sends one chat request with `body`, and returns the reply's
/// first choice and how long the reply took.
fn ask(args: &[&str], body: &str) -> (String, Duration) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-openai"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fake-openai");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the address");
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();

    let mut s = TcpStream::connect(&addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let sent = Instant::now();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).expect("read the reply");
    let took = sent.elapsed();
    let _ = child.kill();
    let _ = child.wait();

    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let json = &reply[reply.find("\r\n\r\n").expect("head end") + 4..];
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON body");
    let content = v["choices"][0]["message"]["content"].as_str().unwrap();
    (content.to_string(), took)
}

#[test]
fn fake_openai_answers_a_chat_request_with_the_given_answer() {
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let (answer, _) = ask(&["--port", "0", "--answer", "\\boxed{7}"], body);
    assert_eq!(answer, "\\boxed{7}");
}

/// What `scripts/slurm-e2e.sh` relies on: answers that vary with the sample's seed, and replies
/// slow enough that a task can be stopped mid-run.
#[test]
fn fake_openai_picks_the_answer_by_seed_and_waits_the_delay() {
    let body = r#"{"model":"m","seed":4,"messages":[{"role":"user","content":"hi"}]}"#;
    let args = [
        "--answer",
        "a",
        "--answer",
        "b",
        "--answer",
        "c",
        "--delay-ms",
        "300",
    ];
    let (answer, took) = ask(&args, body);
    assert_eq!(answer, "b");
    assert!(took >= Duration::from_millis(300), "{took:?}");
}

#[test]
fn fake_openai_bad_flag_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_fake-openai"))
        .args(["--port", "not-a-port"])
        .output()
        .expect("run fake-openai");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--port"), "{err}");
}
