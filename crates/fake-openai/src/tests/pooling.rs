//! Unit tests of `POST /pooling`: reply shape, the default and a custom responder, faults and
//! malformed bodies.

use super::*;

fn pooling_req(path: &str, body: &Value) -> String {
    request("POST", path, &[], &body.to_string())
}

fn prm_body(steps: &[&str]) -> Value {
    let tagged: String = steps.iter().map(|s| format!("{s}{STEP_TAG}")).collect();
    json!({"model": "prm", "messages": [
        {"role": "system", "content": "Please reason step by step."},
        {"role": "user", "content": "What is 2+3?"},
        {"role": "assistant", "content": tagged},
    ]})
}

#[tokio::test]
async fn default_reply_has_one_pair_per_step_tag() {
    let server = FakeServer::builder().start().await;
    let resp = one(
        &server,
        &pooling_req("/pooling", &prm_body(&["a", "b", "c"])),
    )
    .await
    .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let v = resp.json();
    assert_eq!(v["id"], "pool-0");
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "prm");
    assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(v["data"].as_array().unwrap().len(), 1);
    assert_eq!(v["data"][0]["index"], 0);
    assert_eq!(v["data"][0]["object"], "pooling");
    assert_eq!(
        v["data"][0]["data"],
        json!([[0.2, 0.8], [0.2, 0.8], [0.2, 0.8]])
    );
    let usage = &v["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0);
    assert_eq!(usage["total_tokens"], usage["prompt_tokens"]);
    assert_eq!(usage["completion_tokens"], 0);
    // The `input` form, under /v1 too; tags outside the assistant turn are not steps.
    let mut chat = prm_body(&["only"]);
    chat["messages"][1]["content"] = json!(format!("q{STEP_TAG}"));
    let input = json!({"model": "prm", "input": format!("x{STEP_TAG}y{STEP_TAG}")});
    let mut s = connect(&server).await;
    let rows = |r: Option<Resp>| r.unwrap().json()["data"][0]["data"].clone();
    let got = rows(roundtrip(&mut s, pooling_req("/v1/pooling", &input)).await);
    assert_eq!(got, json!([[0.2, 0.8], [0.2, 0.8]]));
    let got = rows(roundtrip(&mut s, pooling_req("/pooling", &chat)).await);
    assert_eq!(got, json!([[0.2, 0.8]]));
    let got = rows(roundtrip(&mut s, pooling_req("/pooling", &prm_body(&[]))).await);
    assert_eq!(got, json!([]));
}

#[tokio::test]
async fn pooling_requests_are_recorded_beside_chat_ones() {
    let server = FakeServer::builder().start().await;
    let mut s = connect(&server).await;
    let chat = body("pol", "q");
    let prm = prm_body(&["a"]);
    for raw in [
        chat_req(&chat),
        pooling_req("/pooling", &prm),
        pooling_req("/pooling", &prm),
        pooling_req("/v1/pooling", &prm),
    ] {
        assert_eq!(roundtrip(&mut s, raw).await.unwrap().status, 200);
    }
    let got: Vec<(u64, u32, String, bool)> = server
        .requests()
        .into_iter()
        .map(|r| (r.seq, r.attempt, r.path.clone(), r.is_pooling()))
        .collect();
    let want = [
        (0, 0, "/v1/chat/completions", false),
        (1, 0, "/pooling", true),
        (2, 1, "/pooling", true),
        (3, 2, "/v1/pooling", true),
    ];
    let want: Vec<_> = want
        .iter()
        .map(|&(q, a, p, b)| (q, a, p.to_string(), b))
        .collect();
    assert_eq!(got, want);
    assert_eq!(server.requests()[1].body, prm);
    assert_eq!(server.request_count(), 4);
    assert_eq!(server.hits("POST", "/pooling"), 2);
    assert_eq!(server.hits("POST", "/v1/pooling"), 1);
    assert_eq!(server.hits("POST", "/v1/chat/completions"), 1);
    assert_eq!(server.requests()[1].pooled_text(), Some("a<extra_0>"));
    assert_eq!(server.requests()[0].pooled_text(), None);
}

#[tokio::test]
async fn custom_pooling_responder_scores_each_step() {
    // Scores keyed by step content: a step holding "1/0" is bad.
    let server = FakeServer::builder()
        .pooling_responder(|r| {
            let text = r.pooled_text().unwrap_or("");
            let steps = text.split(STEP_TAG).filter(|s| !s.is_empty());
            steps
                .map(|s| match s.contains("1/0") {
                    true => json!([0.9, 0.1]),
                    false => json!([0.25, 0.75]),
                })
                .collect()
        })
        .responder(|_| Reply::repeated(1, "chat"))
        .start()
        .await;
    let resp = one(
        &server,
        &pooling_req("/pooling", &prm_body(&["x=1", "1/0"])),
    )
    .await
    .unwrap();
    assert_eq!(
        resp.json()["data"][0]["data"],
        json!([[0.25, 0.75], [0.9, 0.1]])
    );
    // The chat responder still answers chat requests.
    let resp = one(&server, &chat_req(&body("pol", "q"))).await.unwrap();
    assert_eq!(resp.json()["choices"][0]["message"]["content"], "chat");
}

#[tokio::test]
async fn fault_policy_applies_to_pooling_requests() {
    let cases = [
        (Fault::unauthorized(), 401, None, "invalid_api_key"),
        (
            Fault::rate_limited(3),
            429,
            Some("3"),
            "rate_limit_exceeded",
        ),
        (Fault::server_error(), 500, None, "server_error"),
    ];
    for (fault, code, retry_after, kind) in cases {
        // Only pooling requests fault: the chat route keeps working.
        let server = FakeServer::builder()
            .faults(move |r| r.is_pooling().then(|| fault.clone()))
            .start()
            .await;
        let mut s = connect(&server).await;
        let resp = roundtrip(&mut s, pooling_req("/pooling", &prm_body(&["a"])))
            .await
            .unwrap();
        assert_eq!(resp.status, code);
        assert_eq!(resp.header("retry-after"), retry_after);
        let err = &resp.json()["error"];
        assert!(err["code"] == kind || err["type"] == kind, "{err}");
        let resp = roundtrip(&mut s, chat_req(&body("pol", "q")))
            .await
            .unwrap();
        assert_eq!(resp.status, 200);
        assert_eq!(server.request_count(), 2, "faulted requests are recorded");
    }
    let server = FakeServer::builder()
        .faults(fail_first_attempts(1, Fault::server_error))
        .start()
        .await;
    let mut s = connect(&server).await;
    let mut statuses = Vec::new();
    for _ in 0..2 {
        let raw = pooling_req("/pooling", &prm_body(&["a"]));
        statuses.push(roundtrip(&mut s, raw).await.unwrap().status);
    }
    assert_eq!(statuses, [500, 200]);
}

#[tokio::test]
async fn broken_reply_faults_on_pooling() {
    let raw = pooling_req("/pooling", &prm_body(&["a"]));
    let server = server_with_fault(Fault::Drop).start().await;
    assert!(one(&server, &raw).await.is_none());
    assert_eq!(server.hits("POST", "/pooling"), 1);
    let server = server_with_fault(Fault::MalformedJson).start().await;
    let resp = one(&server, &raw).await.unwrap();
    assert_eq!(resp.status, 200);
    assert!(serde_json::from_slice::<Value>(&resp.body).is_err());
    let server = server_with_fault(Fault::EmptyChoices).start().await;
    let v = one(&server, &raw).await.unwrap().json();
    assert_eq!(
        (v["object"].clone(), v["data"].clone()),
        (json!("list"), json!([]))
    );
    let server = server_with_fault(Fault::Hang(Duration::from_millis(50)))
        .start()
        .await;
    let started = Instant::now();
    let v = one(&server, &raw).await.unwrap().json();
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(v["data"][0]["data"], json!([[0.2, 0.8]]));
}

#[tokio::test]
async fn malformed_pooling_bodies_get_400_and_the_connection_survives() {
    let called = Arc::new(Mutex::new(0u32));
    let seen = called.clone();
    let server = FakeServer::builder()
        .pooling_responder(move |_| {
            *seen.lock().unwrap() += 1;
            json!([])
        })
        .start()
        .await;
    let mut s = connect(&server).await;
    let cases = [
        ("not json {", "not valid JSON"),
        (r#"[1, 2]"#, "JSON object"),
        (r#"{"input": "x"}"#, "`model`"),
        (r#"{"model": 7, "input": "x"}"#, "`model`"),
        (r#"{"model": "prm"}"#, "`messages` (array) or `input`"),
        (
            r#"{"model": "prm", "input": ["x"]}"#,
            "`messages` (array) or `input`",
        ),
        (
            r#"{"model": "prm", "messages": "x"}"#,
            "`messages` (array) or `input`",
        ),
        (
            r#"{"model": "prm", "messages": [], "input": "x"}"#,
            "not both",
        ),
        (
            r#"{"model": "prm", "messages": [{"role": "user"}]}"#,
            "messages[0]",
        ),
        (
            r#"{"model": "prm", "messages": [{"role": "user", "content": "a"}, {"content": "b"}]}"#,
            "messages[1]",
        ),
    ];
    for (raw, needle) in cases {
        let resp = roundtrip(&mut s, request("POST", "/pooling", &[], raw))
            .await
            .unwrap();
        assert_eq!(resp.status, 400, "{raw}");
        let message = resp.json()["error"]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(message.contains(needle), "{raw}: {message}");
    }
    assert_eq!(
        *called.lock().unwrap(),
        0,
        "the responder never sees a bad body"
    );
    let resp = roundtrip(&mut s, pooling_req("/pooling", &prm_body(&["a"])))
        .await
        .unwrap();
    assert_eq!(resp.status, 200);
    // GET is not a pooling route.
    let resp = roundtrip(&mut s, request("GET", "/pooling", &[], ""))
        .await
        .unwrap();
    assert_eq!(resp.status, 404);
}
