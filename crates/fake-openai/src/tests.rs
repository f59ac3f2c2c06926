//! Unit tests of the fake server over raw TCP: framing, routing, faults, recording.

use super::serve::MAX_HEAD;
use super::*;
use std::time::Instant;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

mod pooling;

#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("response body is JSON")
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (n, v) in headers {
        req.push_str(&format!("{n}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    req
}

fn chat_req(body: &Value) -> String {
    request("POST", "/v1/chat/completions", &[], &body.to_string())
}

/// Sends raw bytes and reads one response; `None` when the server closed without a byte.
async fn roundtrip(s: &mut TcpStream, raw: impl AsRef<[u8]>) -> Option<Resp> {
    s.write_all(raw.as_ref()).await.unwrap();
    read_response(s).await
}

async fn read_response(s: &mut TcpStream) -> Option<Resp> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p;
        }
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap_or(0);
        if n == 0 {
            assert!(buf.is_empty(), "connection closed mid-response");
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = std::str::from_utf8(&buf[..head_end]).unwrap().to_string();
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap().split(' ').nth(1).unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.trim().to_string(), v.trim().to_string())
        })
        .collect();
    let mut resp = Resp {
        status: status.parse().unwrap(),
        headers,
        body: Vec::new(),
    };
    let len: usize = resp.header("content-length").unwrap().parse().unwrap();
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).await.unwrap();
        assert!(n > 0, "connection closed mid-body");
        body.extend_from_slice(&chunk[..n]);
    }
    resp.body = body;
    Some(resp)
}

async fn connect(server: &FakeServer) -> TcpStream {
    TcpStream::connect(server.addr()).await.unwrap()
}

async fn one(server: &FakeServer, raw: &str) -> Option<Resp> {
    roundtrip(&mut connect(server).await, raw).await
}

async fn assert_eof(s: &mut TcpStream) {
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut rest))
        .await
        .expect("server closes the connection")
        .unwrap_or(0);
    assert_eq!(
        n,
        0,
        "unexpected bytes: {:?}",
        String::from_utf8_lossy(&rest)
    );
}

fn body(model: &str, prompt: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": prompt}]})
}

fn server_with_fault(f: Fault) -> FakeServerBuilder {
    FakeServer::builder().faults(move |_| Some(f.clone()))
}

#[tokio::test]
async fn normal_reply_shape_with_n_choices() {
    let server = FakeServer::builder().start().await;
    let mut b = body("m1", "What is 6*7?");
    b["n"] = json!(3);
    let resp = one(&server, &chat_req(&b)).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let v = resp.json();
    assert_eq!(v["id"], "chatcmpl-0");
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "m1");
    assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
    assert!(v["system_fingerprint"].is_null());
    let choices = v["choices"].as_array().unwrap();
    assert_eq!(choices.len(), 3);
    for (i, c) in choices.iter().enumerate() {
        assert_eq!(c["index"], i);
        assert_eq!(c["message"]["role"], "assistant");
        assert_eq!(c["message"]["content"], DEFAULT_ANSWER);
        assert!(c["message"].get("reasoning_content").is_none());
        assert_eq!(c["finish_reason"], "stop");
    }
    let u = &v["usage"];
    let (p, c) = (u["prompt_tokens"].as_u64(), u["completion_tokens"].as_u64());
    assert!(p.unwrap() >= 1 && c.unwrap() >= 3);
    assert_eq!(u["total_tokens"].as_u64(), Some(p.unwrap() + c.unwrap()));
    // Without `n` there is one choice.
    let v = one(&server, &chat_req(&body("m1", "x")))
        .await
        .unwrap()
        .json();
    assert_eq!(v["choices"].as_array().unwrap().len(), 1);
    assert_eq!(v["id"], "chatcmpl-1");
}

#[tokio::test]
async fn seeded_responder_picks_the_answer_by_the_requests_seed() {
    let answers = ["zero", "one", "two"].map(String::from).to_vec();
    let server = FakeServer::builder()
        .shared_responder(seeded_responder(answers))
        .start()
        .await;
    for (seed, want) in [
        (None, "zero"),
        (Some(4), "one"),
        (Some(5), "two"),
        (Some(6), "zero"),
    ] {
        let mut b = body("m", "q");
        if let Some(s) = seed {
            b["seed"] = json!(s);
        }
        b["n"] = json!(2);
        let v = one(&server, &chat_req(&b)).await.unwrap().json();
        for c in v["choices"].as_array().unwrap() {
            assert_eq!(c["message"]["content"], want, "seed {seed:?}");
        }
    }
}

#[tokio::test]
async fn custom_responder_fields_are_rendered() {
    let server = FakeServer::builder()
        .responder(|r| Reply {
            choices: vec![
                ChoiceReply {
                    content: format!("echo {}", r.user_text().unwrap_or("")),
                    reasoning_content: Some("thinking".into()),
                    finish_reason: "length".into(),
                },
                ChoiceReply::stop("second"),
            ],
            served_model: Some("served-x".into()),
            system_fingerprint: Some("fp_1".into()),
            usage: Some((11, 22)),
        })
        .start()
        .await;
    let v = one(&server, &chat_req(&body("asked", "hi")))
        .await
        .unwrap()
        .json();
    assert_eq!(v["model"], "served-x");
    assert_eq!(v["system_fingerprint"], "fp_1");
    assert_eq!(v["choices"][0]["message"]["content"], "echo hi");
    assert_eq!(v["choices"][0]["message"]["reasoning_content"], "thinking");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert!(v["choices"][1]["message"]
        .get("reasoning_content")
        .is_none());
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33})
    );
}

#[tokio::test]
async fn keep_alive_serves_two_requests_on_one_connection() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    for i in 0..2 {
        let resp = roundtrip(&mut s, &chat_req(&body("m", &format!("q{i}"))))
            .await
            .unwrap();
        assert_eq!(resp.status, 200);
        assert!(resp.header("connection").is_none());
    }
    // The other chat path shares the handler.
    let raw = request(
        "POST",
        "/chat/completions",
        &[],
        &body("m", "q").to_string(),
    );
    assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
    assert_eq!(server.request_count(), 3);
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert_eq!(
        paths,
        [
            "/v1/chat/completions",
            "/v1/chat/completions",
            "/chat/completions"
        ]
    );
}

#[tokio::test]
async fn connection_close_is_honoured() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let raw = request("GET", "/health", &[("Connection", "close")], "");
    let resp = roundtrip(&mut s, &raw).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("connection"), Some("close"));
    assert_eof(&mut s).await;
    // HTTP/1.0 without keep-alive closes too.
    let mut s = connect(&server).await;
    s.write_all(b"GET /health HTTP/1.0\r\n\r\n").await.unwrap();
    assert_eq!(read_response(&mut s).await.unwrap().status, 200);
    assert_eof(&mut s).await;
}

#[tokio::test]
async fn status_faults_carry_body_and_retry_after() {
    let cases = [
        (
            Fault::rate_limited(7),
            429,
            Some("7"),
            "rate_limit_exceeded",
        ),
        (Fault::unauthorized(), 401, None, "invalid_api_key"),
        (Fault::unknown_model("nope"), 404, None, "model_not_found"),
    ];
    for (fault, code, retry_after, err_code) in cases {
        let server = server_with_fault(fault).start().await;
        let resp = one(&server, &chat_req(&body("nope", "x"))).await.unwrap();
        assert_eq!(resp.status, code);
        assert_eq!(resp.header("retry-after"), retry_after);
        assert_eq!(resp.json()["error"]["code"], err_code);
        assert_eq!(server.request_count(), 1, "faulted requests are recorded");
    }
    let unauthorized = server_with_fault(Fault::unauthorized()).start().await;
    let v = one(&unauthorized, &chat_req(&body("m", "x")))
        .await
        .unwrap()
        .json();
    assert_eq!(v["error"]["message"], "Incorrect API key provided");
    assert_eq!(v["error"]["type"], "invalid_request_error");
    let server = server_with_fault(Fault::server_error()).start().await;
    let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
    assert_eq!(resp.status, 500);
    assert_eq!(resp.json()["error"]["type"], "server_error");
    // An HTTP-date Retry-After passes through verbatim; the connection stays usable.
    let date = "Wed, 21 Oct 2015 07:28:00 GMT";
    let server = server_with_fault(Fault::Status {
        code: 503,
        body: "{}".into(),
        retry_after: Some(date.into()),
    })
    .start()
    .await;
    let mut s = connect(&server).await;
    for _ in 0..2 {
        let resp = roundtrip(&mut s, &chat_req(&body("m", "x"))).await.unwrap();
        assert_eq!((resp.status, resp.header("retry-after")), (503, Some(date)));
    }
}

#[tokio::test]
async fn drop_closes_without_bytes() {
    let server = server_with_fault(Fault::Drop).start().await;
    let mut s = connect(&server).await;
    assert!(roundtrip(&mut s, &chat_req(&body("m", "x")))
        .await
        .is_none());
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn hang_delays_then_answers_normally() {
    let server = server_with_fault(Fault::Hang(Duration::from_millis(300)))
        .start()
        .await;
    let started = Instant::now();
    let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json()["choices"][0]["message"]["content"],
        DEFAULT_ANSWER
    );
    // A client timeout fires first.
    let mut s = connect(&server).await;
    let fut = roundtrip(&mut s, chat_req(&body("m", "y")));
    let timed_out = tokio::time::timeout(Duration::from_millis(50), fut).await;
    assert!(timed_out.is_err());
}

#[tokio::test]
async fn malformed_json_and_empty_choices() {
    let server = server_with_fault(Fault::MalformedJson).start().await;
    let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
    assert_eq!(resp.status, 200);
    assert!(serde_json::from_slice::<Value>(&resp.body).is_err());
    let server = server_with_fault(Fault::EmptyChoices).start().await;
    let resp = one(&server, &chat_req(&body("m", "x"))).await.unwrap();
    assert_eq!(resp.status, 200);
    let v = resp.json();
    assert_eq!(v["choices"], json!([]));
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["model"], "m");
}

#[tokio::test]
async fn attempts_count_identical_bodies() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let a = body("m", "a");
    let b = body("m", "b");
    // Same JSON with keys in another order is the same body.
    let a_reordered = r#"{"messages":[{"content":"a","role":"user"}],"model":"m"}"#;
    for raw in [
        chat_req(&a),
        chat_req(&a),
        chat_req(&b),
        request("POST", "/v1/chat/completions", &[], a_reordered),
    ] {
        assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
    }
    let got: Vec<(u64, u32)> = server
        .requests()
        .iter()
        .map(|r| (r.seq, r.attempt))
        .collect();
    assert_eq!(got, [(0, 0), (1, 1), (2, 0), (3, 2)]);
    assert_eq!(server.requests()[2].body, b);
}

#[tokio::test]
async fn fail_first_attempts_then_succeed() {
    let server = FakeServer::builder()
        .faults(fail_first_attempts(2, Fault::server_error))
        .start()
        .await;
    let mut s = connect(&server).await;
    let statuses: Vec<u16> = {
        let mut v = Vec::new();
        for _ in 0..3 {
            v.push(
                roundtrip(&mut s, &chat_req(&body("m", "x")))
                    .await
                    .unwrap()
                    .status,
            );
        }
        v
    };
    assert_eq!(statuses, [500, 500, 200]);
}

#[tokio::test]
async fn authorization_header_is_recorded() {
    let server = FakeServer::builder().start().await;
    let b = body("m", "x").to_string();
    let with = request(
        "POST",
        "/v1/chat/completions",
        &[("authorization", "Bearer sk-test")],
        &b,
    );
    one(&server, &with).await.unwrap();
    one(&server, &request("POST", "/v1/chat/completions", &[], &b))
        .await
        .unwrap();
    let auth: Vec<Option<String>> = server
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(auth, [Some("Bearer sk-test".to_string()), None]);
}

#[tokio::test]
async fn chunked_chat_body_is_answered_and_recorded() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let b = body("m", "x").to_string();
    let raw = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{b}\r\n0\r\n\r\n",
        b.len()
    );
    let resp = roundtrip(&mut s, &raw).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(server.requests()[0].body, body("m", "x"));
    // The connection stays usable.
    let resp = roundtrip(&mut s, &chat_req(&body("m", "y"))).await.unwrap();
    assert_eq!(resp.status, 200);
}

#[tokio::test]
async fn non_json_body_is_400_and_connection_survives() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let raw = request("POST", "/v1/chat/completions", &[], "not json {");
    let resp = roundtrip(&mut s, &raw).await.unwrap();
    assert_eq!(resp.status, 400);
    assert!(resp.json()["error"]["message"].is_string());
    assert_eq!(server.request_count(), 0);
    let resp = roundtrip(&mut s, &chat_req(&body("m", "x"))).await.unwrap();
    assert_eq!(resp.status, 200);
}

#[tokio::test]
async fn routes_unknown_paths_health_and_models() {
    let server = FakeServer::builder()
        .models(vec!["a".into(), "b".into()])
        .start()
        .await;
    let mut s = connect(&server).await;
    for (method, path, status) in [
        ("GET", "/nope", 404),
        ("POST", "/v1/completions", 404),
        ("GET", "/v1/chat/completions", 404),
        ("GET", "/health", 200),
        ("GET", "/v1/models?x=1", 200),
    ] {
        let resp = roundtrip(&mut s, &request(method, path, &[], ""))
            .await
            .unwrap();
        assert_eq!(resp.status, status, "{method} {path}");
        if path == "/health" {
            assert_eq!(resp.json(), json!({"status": "ok"}));
        }
        if path.starts_with("/v1/models") {
            let v = resp.json();
            assert_eq!(v["data"][1]["id"], "b");
        }
    }
    assert_eq!(server.request_count(), 0);
}

#[tokio::test]
async fn malformed_requests_get_400_and_close() {
    let server = FakeServer::builder().start().await;
    let raws: [&[u8]; 5] = [
        b"garbage\r\n\r\n",
        b"GET /health HTTP/2.0\r\n\r\n",
        b"GET /health HTTP/1.1\r\nno colon here\r\n\r\n",
        b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -3\r\n\r\n",
        b"GET /\xff HTTP/1.1\r\n\r\n",
    ];
    for raw in raws {
        let mut s = connect(&server).await;
        let resp = roundtrip(&mut s, raw).await.unwrap();
        assert_eq!(resp.status, 400, "{}", String::from_utf8_lossy(raw));
        // hyper's automatic reply omits the header but closes all the same.
        assert_eof(&mut s).await;
    }
    // An oversized head is refused rather than buffered forever.
    let mut s = connect(&server).await;
    let huge = format!("GET /health HTTP/1.1\r\nX: {}", "a".repeat(MAX_HEAD * 2));
    let resp = roundtrip(&mut s, &huge).await.unwrap();
    assert_eq!(resp.status, 431);
    // A body over the limit is refused before it is read.
    let mut s = connect(&server).await;
    let big = "POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n{";
    let resp = roundtrip(&mut s, big).await.unwrap();
    assert_eq!(resp.status, 413);
    assert_eof(&mut s).await;
    // A client that disconnects mid-body does not disturb the server.
    let mut s = connect(&server).await;
    s.write_all(b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        .await
        .unwrap();
    drop(s);
    assert_eq!(
        one(&server, &request("GET", "/health", &[], ""))
            .await
            .unwrap()
            .status,
        200
    );
}

#[tokio::test]
async fn shutdown_closes_open_connections() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let resp = roundtrip(&mut s, &request("GET", "/health", &[], "")).await;
    assert_eq!(resp.unwrap().status, 200);
    server.shutdown();
    assert_eof(&mut s).await;
}

#[tokio::test]
async fn reqwest_client_works_with_keep_alive() {
    let server = FakeServer::builder().start().await;
    let client = reqwest::Client::new();
    let url = format!("{}/v1/chat/completions", server.base_url());
    for i in 0..3 {
        let resp = client
            .post(&url)
            .header("Authorization", "Bearer k")
            .header("Content-Type", "application/json")
            .body(body("m", &format!("q{i}")).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let v: Value = serde_json::from_str(&resp.text().await.unwrap()).unwrap();
        assert_eq!(v["choices"][0]["message"]["content"], DEFAULT_ANSWER);
    }
    let resp = client
        .get(format!("{}/v1/models", server.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(server.request_count(), 3);
    assert!(server.base_url().starts_with("http://127.0.0.1:"));
}

#[test]
fn start_blocking_serves_plain_tests() {
    use std::io::{Read, Write};
    let server = FakeServer::start_blocking(FakeServer::builder());
    let mut s = std::net::TcpStream::connect(server.addr()).unwrap();
    let raw = request(
        "POST",
        "/v1/chat/completions",
        &[("Connection", "close")],
        &body("m", "x").to_string(),
    );
    s.write_all(raw.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200 OK\r\n"), "{out}");
    assert!(out.contains(r#""finish_reason":"stop""#));
    assert_eq!(server.request_count(), 1);
    // Dropping the guard stops the server and its runtime.
    let addr = server.addr();
    drop(server);
    assert!(std::net::TcpStream::connect(addr).is_err());
}

/// Rough throughput check: `cargo test --release -p fake-openai --lib tests::throughput -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn throughput() {
    let server = FakeServer::builder().keep_requests(false).start().await;
    let (conns, per_conn) = (8, 5_000);
    let raw = Arc::new(chat_req(&body("m", "What is 6*7?")));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..conns {
        let mut s = connect(&server).await;
        let raw = raw.clone();
        tasks.spawn(async move {
            for _ in 0..per_conn {
                assert_eq!(roundtrip(&mut s, raw.as_bytes()).await.unwrap().status, 200);
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let total = conns * per_conn;
    let rate = total as f64 / started.elapsed().as_secs_f64();
    println!("{total} requests, {rate:.0} req/s");
    assert_eq!(server.request_count(), total);
}

fn multipart_upload(lines: &str, purpose: &str) -> String {
    let b = "XyZbound";
    let body = format!(
        "--{b}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\nContent-Type: application/jsonl\r\n\r\n{lines}\r\n--{b}--\r\n"
    );
    let ct = format!("multipart/form-data; boundary={b}");
    request("POST", "/v1/files", &[("Content-Type", &ct)], &body)
}

fn batch_line(id: &str, prompt: &str) -> String {
    json!({"custom_id": id, "method": "POST", "url": "/v1/chat/completions", "body": body("m1", prompt)})
        .to_string()
}

/// Uploads two request lines and creates a batch over them; returns the batch id.
async fn create_batch(server: &FakeServer) -> String {
    let lines = format!("{}\n{}\n", batch_line("a", "p1"), batch_line("b", "p2"));
    let up = one(server, &multipart_upload(&lines, "batch"))
        .await
        .unwrap();
    assert_eq!(up.status, 200, "{:?}", String::from_utf8_lossy(&up.body));
    assert_eq!(up.json()["bytes"], lines.len());
    let create = json!({"input_file_id": up.json()["id"], "endpoint": "/v1/chat/completions", "completion_window": "24h"});
    let resp = one(
        server,
        &request("POST", "/v1/batches", &[], &create.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json()["request_counts"]["total"], 2);
    resp.json()["id"].as_str().unwrap().to_string()
}

async fn poll(server: &FakeServer, id: &str) -> Value {
    let resp = one(
        server,
        &request("GET", &format!("/v1/batches/{id}"), &[], ""),
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 200);
    resp.json()
}

#[tokio::test]
async fn batch_completes_after_planned_polls_with_output_file() {
    let plan = BatchPlan {
        polls: 2,
        end: "completed".into(),
        ..BatchPlan::default()
    };
    let server = FakeServer::builder().batch_plan(plan).start().await;
    let id = create_batch(&server).await;
    assert_eq!(poll(&server, &id).await["status"], "in_progress");
    assert_eq!(poll(&server, &id).await["status"], "in_progress");
    assert_eq!(
        server.request_count(),
        0,
        "nothing answered before completion"
    );
    let done = poll(&server, &id).await;
    assert_eq!(done["status"], "completed");
    assert_eq!(done["request_counts"]["completed"], 2);
    let out = done["output_file_id"].as_str().unwrap();
    let path = format!("/v1/files/{out}/content");
    let resp = one(&server, &request("GET", &path, &[], "")).await.unwrap();
    assert_eq!(resp.status, 200);
    let rows: Vec<Value> = String::from_utf8(resp.body)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["custom_id"], "a");
    assert_eq!(rows[1]["custom_id"], "b");
    assert_eq!(rows[0]["response"]["status_code"], 200);
    let msg = &rows[0]["response"]["body"]["choices"][0]["message"]["content"];
    assert_eq!(msg, DEFAULT_ANSWER);
    // A later poll does not answer the requests again.
    assert_eq!(poll(&server, &id).await["output_file_id"], out);
    assert_eq!(server.request_count(), 2);
    assert_eq!(server.hits("POST", "/v1/files"), 1);
    assert_eq!(server.hits("POST", "/v1/batches"), 1);
    assert_eq!(server.hits("GET", &format!("/v1/batches/{id}")), 4);
}

#[tokio::test]
async fn failed_batch_has_no_output_and_bad_requests_are_refused() {
    let plan = BatchPlan {
        polls: 0,
        end: "failed".into(),
        ..BatchPlan::default()
    };
    let server = FakeServer::builder().batch_plan(plan).start().await;
    let id = create_batch(&server).await;
    let v = poll(&server, &id).await;
    assert_eq!(v["status"], "failed");
    assert!(v["output_file_id"].is_null());
    assert_eq!(server.request_count(), 0);
    let wrong = one(&server, &multipart_upload("{}\n", "fine-tune"))
        .await
        .unwrap();
    assert_eq!(wrong.status, 400);
    let missing = one(&server, &request("GET", "/v1/batches/batch_9", &[], ""))
        .await
        .unwrap();
    assert_eq!(missing.status, 404);
    let nofile = json!({"input_file_id": "file-7", "endpoint": "/v1/chat/completions"});
    let resp = one(
        &server,
        &request("POST", "/v1/batches", &[], &nofile.to_string()),
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 404);
    let gone = one(
        &server,
        &request("GET", "/v1/files/file-7/content", &[], ""),
    )
    .await
    .unwrap();
    assert_eq!(gone.status, 404);
}

/// Posts a streamed chat request with reqwest: the response, headers read.
async fn post_streamed(server: &FakeServer) -> reqwest::Response {
    let mut b = body("m", "q");
    b["stream"] = json!(true);
    reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.base_url()))
        .body(b.to_string())
        .send()
        .await
        .unwrap()
}

/// Reads body chunks until `until` holds for the text so far, or the body ends.
async fn read_until(resp: &mut reqwest::Response, until: impl Fn(&[u8]) -> bool) -> Vec<u8> {
    let mut got = Vec::new();
    while !until(&got) {
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .expect("a chunk within 10 s")
            .unwrap();
        match chunk {
            Some(c) => got.extend_from_slice(&c),
            None => break,
        }
    }
    got
}

fn content_type(resp: &reqwest::Response) -> String {
    resp.headers()[reqwest::header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .to_string()
}

#[tokio::test]
async fn trickle_faults_keep_a_request_alive_slowly() {
    let server = server_with_fault(Fault::Trickle(Duration::from_millis(10)))
        .start()
        .await;
    let mut resp = post_streamed(&server).await;
    assert_eq!(content_type(&resp), "text/event-stream");
    let got = read_until(&mut resp, |b| b.len() >= 10).await;
    assert_eq!(
        got,
        b":\n".repeat(got.len() / 2),
        "only keep-alive comments"
    );

    let server = server_with_fault(Fault::TrickleJson(Duration::from_millis(1)))
        .start()
        .await;
    let start = Instant::now();
    let resp = post_streamed(&server).await;
    assert_eq!(content_type(&resp), "application/json");
    let text = resp.text().await.unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["choices"][0]["message"]["content"], DEFAULT_ANSWER);
    assert!(start.elapsed() >= Duration::from_millis(text.len() as u64));
}

#[tokio::test]
async fn stream_quirk_faults_hold_leave_unfinished_or_lead_with_a_bom() {
    let done = |b: &[u8]| String::from_utf8_lossy(b).contains("data: [DONE]\n\n");
    let server = server_with_fault(Fault::HoldAfterDone).start().await;
    let mut resp = post_streamed(&server).await;
    let got = read_until(&mut resp, done).await;
    assert!(String::from_utf8_lossy(&got).contains(r#""finish_reason":"stop""#));
    let more = tokio::time::timeout(Duration::from_millis(300), resp.chunk()).await;
    assert!(more.is_err(), "the body stays open after [DONE]");

    let server = server_with_fault(Fault::DoneUnfinished).start().await;
    let text = post_streamed(&server).await.text().await.unwrap();
    assert!(
        text.ends_with("data: [DONE]\n\n") && text.contains("boxed"),
        "{text}"
    );
    assert!(!text.contains(r#""finish_reason":"stop""#), "{text}");

    let server = server_with_fault(Fault::LeadingBom).start().await;
    let bytes = post_streamed(&server).await.bytes().await.unwrap();
    assert!(bytes.starts_with(b"\xEF\xBB\xBFdata: {"), "{bytes:?}");
    assert!(done(&bytes));
    // Plain requests get the normal reply under these faults.
    let resp = one(&server, &chat_req(&body("m", "q"))).await.unwrap();
    assert_eq!(
        resp.json()["choices"][0]["message"]["content"],
        DEFAULT_ANSWER
    );
}
