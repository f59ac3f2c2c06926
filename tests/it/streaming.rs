//! `stream = true`: server-sent events give the same checkpoints and metrics as plain replies,
//! keep reasoning apart, survive faults and cuts, and record time to first token; a stream always
//! ends (the total deadline, `[DONE]`) and ends honestly (issue 22, items 6, 7 and 11).

use crate::common::{both, Fixture};
use crate::run_fake::{configure, metrics, run, smart_reply, spawn_run, sums, ONE_MODEL};
use fake_openai::{fail_first_attempts, FakeServer, Fault, Recorded, Reply};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// [`smart_reply`] with a reasoning trace (non-ASCII, so split deltas must respect characters).
fn reasoning_reply(r: &Recorded) -> Reply {
    let mut reply = smart_reply(r);
    for c in &mut reply.choices {
        c.reasoning_content = Some(format!("Überlegung: {} — check twice.", c.content.len()));
    }
    reply
}

/// The checkpoint's lines, keyed by (problem, sample index).
fn records(run_dir: &Path) -> BTreeMap<(String, String), serde_json::Value> {
    let text = std::fs::read_to_string(run_dir.join("checkpoints/m1.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            let key = (
                v["problem_id"].as_str().unwrap().to_string(),
                v["sample_index"].to_string(),
            );
            (key, v)
        })
        .collect()
}

/// What a sample's answer is, without timing fields.
fn answer(v: &serde_json::Value) -> [&serde_json::Value; 7] {
    [
        &v["response"],
        &v["reasoning_content"],
        &v["finish_reason"],
        &v["usage"],
        &v["served_model"],
        &v["system_fingerprint"],
        &v["outcome"],
    ]
}

#[test]
fn streamed_and_plain_runs_agree_under_faults_and_keep_reasoning() {
    let plain =
        Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(reasoning_reply));
    configure(&plain, "n = 6", ONE_MODEL, "");
    let out = run(&plain, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));

    // A first attempt of every other body fails, cycling through HTTP and stream faults.
    let faulty = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(|r: &Recorded| {
            let seed = r.body["seed"].as_u64().unwrap_or(0);
            if r.attempt > 0 || !seed.is_multiple_of(2) {
                return None;
            }
            Some(match (seed / 2) % 5 {
                0 => Fault::StreamCut,
                1 => Fault::MalformedChunk,
                2 => Fault::rate_limited(0),
                3 => Fault::server_error(),
                _ => Fault::Drop,
            })
        });
    let streamed = Fixture::new(&sums(5)).with_server(faulty);
    configure(&streamed, "n = 6", ONE_MODEL, "stream = true");
    let out = run(&streamed, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));

    let reqs = streamed.server().requests();
    assert!(reqs
        .iter()
        .all(|r| r.streamed()
            && r.body["stream_options"]["include_usage"] == serde_json::json!(true)));
    let retried = reqs.iter().filter(|r| r.attempt > 0).count();
    assert!(retried >= 5, "faults were injected and retried: {retried}");
    assert!(plain.server().requests().iter().all(|r| !r.streamed()));

    let (a, b) = (records(&plain.run_dir()), records(&streamed.run_dir()));
    assert_eq!(
        a.len(),
        5 * 7,
        "6 samples + greedy for 5 problems, each once"
    );
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (key, va) in &a {
        let vb = &b[key];
        assert_eq!(answer(va), answer(vb), "{key:?}");
        assert!(va["reasoning_content"]
            .as_str()
            .unwrap()
            .starts_with("Überlegung"));
        assert!(va.get("ttft_ms").is_none(), "plain replies have no TTFT");
        assert!(
            vb["ttft_ms"].is_u64(),
            "streamed record without ttft_ms: {vb}"
        );
        assert!(vb["tokens_per_s"].is_number() || vb["tokens_per_s"].is_null());
    }
    assert_eq!(metrics(&plain.run_dir()), metrics(&streamed.run_dir()));
}

#[test]
fn a_stream_cut_every_time_is_an_api_error_never_a_half_answer() {
    let cutting = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(|_: &Recorded| Some(Fault::StreamCut));
    let env = Fixture::new(&sums(2)).with_server(cutting);
    // Streaming set for the model only, not in [api].
    let model = format!("{ONE_MODEL}stream = true\nmax_retries = 1\n");
    configure(&env, "n = 2\ngreedy = false", &model, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let reqs = env.server().requests();
    assert_eq!(reqs.len(), 2 * 2 * 2, "every unit tried twice");
    assert!(reqs.iter().all(Recorded::streamed));
    let recs = records(&env.run_dir());
    assert_eq!(recs.len(), 4);
    for v in recs.values() {
        assert_eq!(v["outcome"], "api_error", "{v}");
        assert_eq!(v["error_class"], "connection", "{v}");
        assert!(
            v["response"].is_null() && v.get("reasoning_content").is_none(),
            "{v}"
        );
        assert!(v["error"].as_str().unwrap().contains("cut mid-way"), "{v}");
    }
}

#[test]
fn a_key_echoed_in_a_stream_is_redacted_everywhere() {
    use crate::run_fake::KEY;
    // The server reflects the Authorization header into the answer, reasoning and model name.
    let echo = FakeServer::builder().responder(|r: &Recorded| {
        let auth = r.authorization.clone().unwrap_or_default();
        let mut reply = Reply::repeated(1, &format!("\\boxed{{1}} {auth}"));
        reply.choices[0].reasoning_content = Some(auth.clone());
        reply.served_model = Some(auth);
        reply
    });
    let env = Fixture::new(&sums(1)).with_server(echo);
    configure(&env, "n = 1\ngreedy = false", ONE_MODEL, "stream = true");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(env.server().requests().iter().all(Recorded::streamed));
    assert!(!both(&out).contains(KEY));
    let recs = records(&env.run_dir());
    let line = recs.values().next().unwrap().to_string();
    assert!(line.contains("[REDACTED]") && !line.contains(KEY), "{line}");
    assert!(line.contains("ttft_ms"), "{line}");
}

/// `gpassk run --quiet` on the fixture's config; the test fails if it still runs after `limit`
/// (generous: only "it ends" is asserted, never how fast).
fn run_within(env: &Fixture, limit: Duration) -> Output {
    let mut child = spawn_run(&env.file("config.toml"));
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!("gpassk run still running after {limit:?}: {}", both(&out));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().unwrap()
}

/// Every record is a timeout `api_error` that names the deadline, each unit tried twice.
fn assert_deadline_timeouts(env: &Fixture, out: &Output) {
    assert_eq!(out.status.code(), Some(1), "{}", both(out));
    let recs = records(&env.run_dir());
    assert_eq!(recs.len(), 1);
    for v in recs.values() {
        assert_eq!(v["outcome"], "api_error", "{v}");
        assert_eq!(v["error_class"], "timeout", "{v}");
        assert!(v["response"].is_null(), "{v}");
        let error = v["error"].as_str().unwrap();
        assert!(error.contains("deadline passed"), "{v}");
    }
    assert_eq!(
        env.server().request_count(),
        2,
        "a timeout is retried like any other"
    );
}

#[test]
fn keep_alive_comments_forever_end_at_the_stream_deadline_as_a_timeout() {
    // `:` every 200 ms never lets the 1 s silence timeout fire; only the 2 s deadline can.
    let server = FakeServer::builder()
        .faults(|_: &Recorded| Some(Fault::Trickle(Duration::from_millis(200))));
    let env = Fixture::new(&sums(1)).with_server(server);
    let model = format!("{ONE_MODEL}max_retries = 1\n");
    configure(
        &env,
        "n = 1\ngreedy = false",
        &model,
        "stream = true\ntimeout = 1\nstream_deadline = 2",
    );
    let out = run_within(&env, Duration::from_secs(60));
    assert_deadline_timeouts(&env, &out);
}

#[test]
fn plain_json_trickled_to_a_stream_request_ends_at_the_stream_deadline() {
    // A server that ignores `stream` and sends its JSON one byte per 200 ms (over a minute).
    let server = FakeServer::builder()
        .faults(|_: &Recorded| Some(Fault::TrickleJson(Duration::from_millis(200))));
    let env = Fixture::new(&sums(1)).with_server(server);
    // The deadline set for the model only, over the [api] default.
    let model = format!("{ONE_MODEL}max_retries = 1\nstream_deadline = 2\n");
    configure(
        &env,
        "n = 1\ngreedy = false",
        &model,
        "stream = true\ntimeout = 1",
    );
    let out = run_within(&env, Duration::from_secs(60));
    assert_deadline_timeouts(&env, &out);
}

#[test]
fn a_stream_held_open_after_done_is_ok_with_one_request_per_unit() {
    let server = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(|_: &Recorded| Some(Fault::HoldAfterDone));
    let env = Fixture::new(&sums(2)).with_server(server);
    configure(&env, "n = 2", ONE_MODEL, "stream = true\ntimeout = 2");
    let out = run_within(&env, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let recs = records(&env.run_dir());
    assert_eq!(recs.len(), 2 * 3, "2 samples + greedy for 2 problems");
    for v in recs.values() {
        assert_eq!(v["outcome"], "ok", "{v}");
        assert_eq!(v["finish_reason"], "stop", "{v}");
        assert_eq!(v["attempts"], 1, "{v}");
    }
    assert_eq!(env.server().request_count(), 6, "no unit was paid twice");
}

#[test]
fn done_after_an_unfinished_choice_is_never_ok() {
    // Always unfinished: every unit is a retried cut, never the text it did get.
    let server = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(|_: &Recorded| Some(Fault::DoneUnfinished));
    let env = Fixture::new(&sums(2)).with_server(server);
    let model = format!("{ONE_MODEL}max_retries = 1\n");
    configure(&env, "n = 2\ngreedy = false", &model, "stream = true");
    let out = run_within(&env, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let recs = records(&env.run_dir());
    assert_eq!(recs.len(), 4);
    for v in recs.values() {
        assert_eq!(v["outcome"], "api_error", "{v}");
        assert_eq!(v["error_class"], "connection", "{v}");
        assert!(v["response"].is_null(), "{v}");
        assert!(v["error"].as_str().unwrap().contains("[DONE]"), "{v}");
    }
    assert_eq!(env.server().request_count(), 4 * 2);

    // Unfinished once: the retry's whole answer is what is kept.
    let server = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(fail_first_attempts(1, || Fault::DoneUnfinished));
    let env = Fixture::new(&sums(2)).with_server(server);
    configure(&env, "n = 2\ngreedy = false", ONE_MODEL, "stream = true");
    let out = run_within(&env, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    for v in records(&env.run_dir()).values() {
        assert_eq!(
            (&v["outcome"], &v["attempts"]),
            (&"ok".into(), &2.into()),
            "{v}"
        );
        assert_eq!(v["finish_reason"], "stop", "{v}");
    }
}

#[test]
fn a_bom_led_stream_keeps_its_first_event() {
    // The first event carries the first half of the reasoning: dropping it would show.
    let server = FakeServer::builder()
        .responder(reasoning_reply)
        .faults(|_: &Recorded| Some(Fault::LeadingBom));
    let env = Fixture::new(&sums(2)).with_server(server);
    configure(&env, "n = 2\ngreedy = false", ONE_MODEL, "stream = true");
    let out = run_within(&env, Duration::from_secs(120));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let recs = records(&env.run_dir());
    assert_eq!(recs.len(), 4);
    for v in recs.values() {
        assert_eq!(v["outcome"], "ok", "{v}");
        let response = v["response"].as_str().unwrap();
        let reasoning = v["reasoning_content"].as_str().unwrap();
        let want = format!("Überlegung: {} — check twice.", response.len());
        assert_eq!(reasoning, want, "{v}");
    }
    assert_eq!(env.server().request_count(), 4);
}
