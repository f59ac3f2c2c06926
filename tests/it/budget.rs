//! `max_cost` as a guarantee (issue 22, item 3): what cannot be read is priced at its worst case,
//! the highest price reserves, prompts are bounded for any script, replies bill the choices they
//! carried, and a resume starts from what the checkpoints can have cost.

use crate::common::{both, read, Fixture, Toml};
use crate::run_fake::sums;
use fake_openai::{FakeServer, Fault, Recorded, Reply};
use serde_json::Value;

/// One model `m` priced at `pricing` (per million tokens) with `max_cost = cap`.
fn priced(env: &Fixture, sampling: &str, pricing: &str, cap: &str, api: &str) {
    let models =
        format!("[[models]]\nname = \"m\"\n[models.pricing]\n{pricing}\nmax_cost = {cap}\n");
    env.config(Toml {
        api: &format!("backoff_base = 0.01\nbackoff_max = 0.02\n{api}"),
        sampling: &format!("temperature = 0.7\nseed = 5\ngreedy = false\n{sampling}"),
        models: &models,
        ..Toml::default()
    });
}

fn run(env: &Fixture, args: &[&str]) -> std::process::Output {
    let mut all = vec!["run", "--quiet"];
    all.extend_from_slice(args);
    env.command(&all).output().expect("run gpassk")
}

fn resume(env: &Fixture) -> std::process::Output {
    run(env, &["--resume", &env.run_dir().display().to_string()])
}

/// A chat completion whose one choice answers 42, with this `usage` JSON.
fn with_usage(usage: &str) -> String {
    format!(
        r#"{{"id":"c","object":"chat.completion","model":"fake-1","choices":[{{"index":0,"message":{{"role":"assistant","content":"\\boxed{{42}}"}},"finish_reason":"stop"}}],"usage":{usage}}}"#
    )
}

#[test]
fn replies_without_readable_usage_are_priced_at_their_worst_case_across_resumes() {
    // 10,000 tokens at 1,000 per million: a request's worst case is just over 10; 32 allows 3.
    for usage in [
        "{}",
        r#"{"prompt_tokens":null,"completion_tokens":null}"#,
        r#"{"prompt_tokens":"n/a","completion_tokens":"n/a"}"#,
        r#"{"prompt_tokens":-5,"completion_tokens":-9}"#,
    ] {
        let body = with_usage(usage);
        let server =
            FakeServer::builder().faults(move |_: &Recorded| Some(Fault::reply_body(body.clone())));
        let env = Fixture::new(&sums(5)).with_server(server);
        let sampling = "n = 4\nmax_tokens = 10000";
        priced(&env, sampling, "input = 1000\noutput = 1000", "32", "");
        let out = run(&env, &[]);
        assert_eq!(out.status.code(), Some(1), "{usage}: {}", both(&out));
        let first = env.server().request_count();
        assert!(
            (1..=3).contains(&first),
            "{usage}: {first} of 20 requests sent"
        );
        // The same cap again: the checkpoints already spent it, whatever the server reported.
        for _ in 0..2 {
            let out = resume(&env);
            assert_eq!(out.status.code(), Some(1), "{usage}: {}", both(&out));
            assert!(both(&out).contains("budget reached"), "{}", both(&out));
        }
        assert_eq!(
            env.server().request_count(),
            first,
            "{usage}: resumes sent more"
        );
    }
}

#[test]
fn a_reasoning_price_above_output_is_reserved() {
    // Every reply spends all 10,000 tokens thinking, at 1,000 per million: 10 a request.
    let body = with_usage(
        r#"{"prompt_tokens":10,"completion_tokens":10000,"completion_tokens_details":{"reasoning_tokens":10000}}"#,
    );
    let server =
        FakeServer::builder().faults(move |_: &Recorded| Some(Fault::reply_body(body.clone())));
    let env = Fixture::new(&sums(5)).with_server(server);
    let pricing = "input = 1\noutput = 1\nreasoning = 1000";
    priced(&env, "n = 4\nmax_tokens = 10000", pricing, "32", "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let sent = env.server().request_count() as f64;
    assert!(
        sent * 10.0 <= 32.0,
        "{sent} requests at 10 each under a cap of 32"
    );
    let manifest: Value =
        serde_json::from_str(&read(&env.run_dir().join("manifest.json"))).unwrap();
    let spent = manifest["models"]["m"]["cost"]["total"].as_f64().unwrap();
    assert!(spent <= 32.0, "spent {spent}");
}

/// A Chinese question of `chars` characters whose answer is 42.
fn chinese(chars: usize) -> String {
    let q: String = "一二三四五六七八九十".chars().cycle().take(chars).collect();
    format!("{{\"id\":\"p0\",\"question\":\"{q}\",\"answer\":\"42\"}}\n")
}

#[test]
fn chinese_prompts_are_bounded_by_their_bytes_not_characters_over_four() {
    // One token per character, as Chinese text is tokenised: 2,000 tokens at 1,000 per million
    // is 2 a request, which characters ÷ 4 would have estimated at 0.5.
    let responder = |r: &Recorded| Reply {
        usage: Some((r.user_text().map_or(0, |t| t.chars().count()) as u64, 1)),
        ..Reply::repeated(r.n().max(1), "\\boxed{42}")
    };
    let env = Fixture::new(&chinese(2000)).with_server(FakeServer::builder().responder(responder));
    priced(
        &env,
        "n = 16\nmax_tokens = 1",
        "input = 1000\noutput = 1000",
        "13",
        "",
    );
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(env.server().request_count() >= 1, "{}", both(&out));
    let manifest: Value =
        serde_json::from_str(&read(&env.run_dir().join("manifest.json"))).unwrap();
    let spent = manifest["models"]["m"]["cost"]["total"].as_f64().unwrap();
    assert!(spent <= 13.0, "spent {spent} under a cap of 13");
}

#[test]
fn a_reply_with_extra_choices_bills_the_records_it_fills_plain_or_streamed() {
    // 100 choices to a one-choice request, billed for all of them: 10 + 100 × 50 tokens at
    // 1,000 per million, about 5 a request.
    let responder = |_: &Recorded| Reply {
        usage: Some((10, 5000)),
        ..Reply::repeated(100, "\\boxed{42}")
    };
    for stream in ["false", "true"] {
        let env = Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(responder));
        let api = format!("stream = {stream}");
        priced(
            &env,
            "n = 4\nmax_tokens = 50",
            "input = 1000\noutput = 1000",
            "12",
            &api,
        );
        let out = run(&env, &[]);
        assert_eq!(
            out.status.code(),
            Some(1),
            "stream {stream}: {}",
            both(&out)
        );
        let first = env.server().request_count();
        for _ in 0..4 {
            let out = resume(&env);
            assert_eq!(
                out.status.code(),
                Some(1),
                "stream {stream}: {}",
                both(&out)
            );
        }
        assert_eq!(
            env.server().request_count(),
            first,
            "stream {stream}: resumes sent more"
        );
        let records = read(&env.run_dir().join("checkpoints/m.jsonl"));
        for line in records.lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            assert_eq!(r["choices_in_request"], 1, "{line}");
        }
    }
}

#[test]
fn timeouts_may_be_billed_and_count_against_the_budget_on_resume() {
    // Every request times out after the server had it: each may have been generated and billed.
    let server = FakeServer::builder()
        .faults(|_: &Recorded| Some(Fault::Hang(std::time::Duration::from_secs(30))));
    let env = Fixture::new(&sums(5)).with_server(server);
    let sampling = "n = 4\nmax_tokens = 10000";
    priced(
        &env,
        sampling,
        "input = 1000\noutput = 1000",
        "32",
        "timeout = 0.3\nmax_retries = 1",
    );
    let out = run(&env, &[]);
    let first = env.server().request_count();
    assert!((1..=3).contains(&first), "{first} requests: {}", both(&out));
    // The report says the total leaves them out, in every place it shows the cost.
    let billed = format!("not counting {first} failed attempts the server may have billed");
    let md = read(&env.run_dir().join("report.md"));
    assert!(md.contains(&billed), "{md}");
    let html = read(&env.run_dir().join("report.html"));
    assert!(
        html.contains("Failed attempts maybe billed (not in Total)"),
        "{html}"
    );
    let manifest: Value =
        serde_json::from_str(&read(&env.run_dir().join("manifest.json"))).unwrap();
    assert_eq!(
        manifest["models"]["m"]["cost"]["billable_failures"], first,
        "{manifest}"
    );
    let out = resume(&env);
    assert!(both(&out).contains("budget reached"), "{}", both(&out));
    assert_eq!(env.server().request_count(), first, "the resume sent more");
}
