//! `max_cost` as a guarantee (issue 22, item 3; the judge and the verifier, issue 41): what
//! cannot be read is priced at its worst case, the highest price reserves, prompts are bounded
//! for any script, replies bill the choices they carried, a resume starts from what the
//! checkpoints, verdicts and scores can have cost, and an unpriced judge or PRM under a budget is
//! refused unless allowed.

use crate::common::{both, read, Fixture, Toml};
use crate::run_fake::sums;
use fake_openai::{FakeServer, Fault, Recorded, Reply};
use serde_json::{json, Value};

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

// The judge's and the verifier's calls under `max_cost` (issue 41): priced, reserved at their
// worst case before each call, kept in their verdict and score lines, counted on resume.

/// A request body's bytes as gpassk sent it (compact JSON, sorted keys).
fn body_bytes(r: &Recorded) -> u64 {
    serde_json::to_vec(&r.body).unwrap().len() as u64
}

/// What the judge and the PRM are billed in micro-USD at 1,000 USD per million tokens.
const MICRO_PER_TOKEN: u64 = 1000;

/// The policy answers as `smart_reply`; the judge `judge-1` says yes, reporting a quarter of its
/// request's bytes as prompt tokens and one completion token.
fn judge_reports_usage(r: &Recorded) -> Reply {
    match r.model() {
        Some("judge-1") => Reply {
            usage: Some((body_bytes(r) / 4, 1)),
            ..Reply::with_choices(vec![fake_openai::ChoiceReply::stop("Yes.")])
        },
        _ => crate::run_fake::smart_reply(r),
    }
}

/// Model `m` priced at 1,000 per million tokens (`model` adds keys to its `[models.pricing]`),
/// every sample graded by the judge `judge-1` one at a time (`judge` adds keys to `[judge]`),
/// `evaluation` adds keys to `[evaluation]`.
fn judged(env: &Fixture, model: &str, judge: &str, evaluation: &str) {
    env.config(Toml {
        api: "backoff_base = 0.01\nbackoff_max = 0.02\nmax_retries = 1",
        sampling: "n = 4\ntemperature = 0.7\nseed = 5\ngreedy = false\nmax_tokens = 50",
        models: &format!(
            "[[models]]\nname = \"m\"\nmodel_id = \"fake-1\"\n[models.pricing]\ninput = 1000\noutput = 1000\n{model}\n"
        ),
        evaluation: &format!(
            "grader = \"judge\"\n{evaluation}\n[judge]\nmodel_id = \"judge-1\"\nconcurrency = 1\n{judge}"
        ),
        ..Toml::default()
    });
}

const JUDGE_PRICE: &str = "[judge.pricing]\ninput = 1000\noutput = 1000\n";

fn judge_requests(env: &Fixture) -> Vec<Recorded> {
    let all = env.server().requests();
    all.into_iter()
        .filter(|r| r.model() == Some("judge-1"))
        .collect()
}

/// What the checkpoint's replies reported they used, in micro-USD at 1,000 per million tokens.
fn sampling_billed(run_dir: &std::path::Path) -> f64 {
    let text = read(&run_dir.join("checkpoints/m.jsonl"));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|r| {
            let u = &r["usage"];
            let tokens = u["prompt_tokens"].as_u64().unwrap_or(0)
                + u["completion_tokens"].as_u64().unwrap_or(0);
            let share = r["choices_in_request"].as_u64().unwrap_or(1).max(1);
            (tokens * MICRO_PER_TOKEN) as f64 / share as f64
        })
        .sum()
}

#[test]
fn judge_calls_stop_before_the_run_budget_and_a_resume_counts_them() {
    let server = FakeServer::builder().responder(judge_reports_usage);
    let env = Fixture::new(&sums(5)).with_server(server);
    judged(&env, "", JUDGE_PRICE, "max_cost = 3");
    let out = run(&env, &[]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "judge model judge-1 stopped: budget reached: [evaluation] max_cost 3.000000 USD"
        ),
        "{text}"
    );
    // What the server billed, sampling and judge together, stays under the limit.
    let judged = judge_requests(&env);
    let judge_billed: u64 = (judged.iter())
        .map(|r| (body_bytes(r) / 4 + 1) * MICRO_PER_TOKEN)
        .sum();
    let run_dir = env.run_dir();
    let billed = judge_billed as f64 + sampling_billed(&run_dir);
    assert!(
        !judged.is_empty() && judged.len() < 20,
        "{} of 20 samples judged: {text}",
        judged.len()
    );
    assert!(billed <= 3e6, "billed {billed} micro-USD: {text}");
    // Each verdict keeps what its request used.
    let grades = read(&run_dir.join("grades/m.jsonl"));
    assert_eq!(grades.lines().count(), judged.len());
    for line in grades.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["spend"]["calls"], 1, "{line}");
        assert!(
            v["spend"]["usage"]["prompt_tokens"].as_u64().unwrap() > 0,
            "{line}"
        );
    }
    // The same cap again: the verdicts already spent it.
    let out = resume(&env);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("budget reached"), "{}", both(&out));
    assert_eq!(
        judge_requests(&env).len(),
        judged.len(),
        "the resume judged more"
    );
    // A raised cap finishes the judging, no sample judged twice; the reports show its cost.
    let dir = run_dir.display().to_string();
    let out = run(
        &env,
        &["--resume", &dir, "--set", "evaluation.max_cost=1000"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(judge_requests(&env).len(), 20);
    let md = read(&run_dir.join("report.md"));
    let cost = md.lines().find(|l| l.starts_with("cost: ")).expect(&md);
    assert!(cost.contains("; judge judge-1 "), "{cost}");
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    let judge = &json["call_costs"][0];
    assert_eq!(
        (&judge["role"], &judge["model"]),
        (&json!("judge"), &json!("judge-1"))
    );
    let total: f64 = (judge_requests(&env).iter())
        .map(|r| ((body_bytes(r) / 4 + 1) * MICRO_PER_TOKEN) as f64 / 1e6)
        .sum();
    let reported = judge["cost"]["total"].as_f64().unwrap();
    assert!(
        (reported - total).abs() < 1e-9,
        "{reported} against {total}"
    );
    let html = read(&run_dir.join("report.html"));
    assert!(
        html.contains("judge judge-1"),
        "the cost table lists the judge"
    );
}

#[test]
fn judge_replies_without_usage_are_priced_at_their_worst_case() {
    // The judge's replies say yes and nothing about usage: each costs its worst case.
    let body = r#"{"id":"j","object":"chat.completion","model":"judge-1","choices":[{"index":0,"message":{"role":"assistant","content":"Yes."},"finish_reason":"stop"}]}"#;
    let server = FakeServer::builder()
        .responder(crate::run_fake::smart_reply)
        .faults(move |r: &Recorded| {
            (r.model() == Some("judge-1")).then(|| Fault::reply_body(body))
        });
    let env = Fixture::new(&sums(5)).with_server(server);
    judged(&env, "", &format!("{JUDGE_PRICE}max_cost = 3\n"), "");
    let out = run(&env, &[]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("budget reached: judge.pricing.max_cost 3.000000 USD"),
        "{text}"
    );
    // Each call at its worst case: the prompt's bytes (and the template's 32 tokens) and the
    // judge's 32 completion tokens, all within the limit.
    let judged = judge_requests(&env);
    let worst: u64 = (judged.iter())
        .map(|r| (body_bytes(r) + 32 + 32) * MICRO_PER_TOKEN)
        .sum();
    assert!(!judged.is_empty() && worst <= 3_000_000, "{worst}: {text}");
    let grades = read(&env.run_dir().join("grades/m.jsonl"));
    for line in grades.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["spend"]["usage"]["prompt_tokens"].is_null(), "{line}");
    }
    let out = resume(&env);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert_eq!(
        judge_requests(&env).len(),
        judged.len(),
        "the resume judged more"
    );
}

/// Two-step samples and a `/pooling` PRM scoring both steps.
fn pooled_server() -> fake_openai::FakeServerBuilder {
    FakeServer::builder()
        .responder(crate::run_fake::smart_reply)
        .pooling_responder(|r: &Recorded| {
            let steps = r
                .pooled_text()
                .unwrap_or_default()
                .matches(fake_openai::STEP_TAG);
            Value::Array(steps.map(|_| json!([0.2, 0.8])).collect())
        })
}

/// The prompt tokens the PRM's stored scores say it used (the fake server's own count).
fn verifier_billed(run_dir: &std::path::Path) -> u64 {
    let text = read(&run_dir.join("verifier/m.jsonl"));
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| v["spend"]["usage"]["prompt_tokens"].as_u64().unwrap() * MICRO_PER_TOKEN)
        .sum()
}

#[test]
fn verifier_calls_stop_before_their_budget_and_verify_resumes_with_a_raised_one() {
    let env = Fixture::new(&sums(5)).with_server(pooled_server());
    priced(
        &env,
        "n = 4\nmax_tokens = 50",
        "input = 1000\noutput = 1000",
        "1000",
        "concurrency = 1",
    );
    let cfg = env.file("config.toml");
    let verifier = "[verifier]\nreward_model_id = \"prm\"\nreward_mode = \"pooling\"\n\
                    [verifier.pricing]\ninput = 1000\noutput = 1000\nmax_cost = 0.5\n";
    std::fs::write(&cfg, read(&cfg) + verifier).unwrap();
    let out = run(&env, &[]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains(
            "verifier model prm stopped: budget reached: verifier.pricing.max_cost 0.500000 USD"
        ),
        "{text}"
    );
    let run_dir = env.run_dir();
    let scored = env.server().hits("POST", "/pooling");
    assert!((1..20).contains(&scored), "{scored} of 20 samples scored");
    assert!(verifier_billed(&run_dir) <= 500_000, "{text}");
    // `verify` alone opens the same ledger: nothing more fits.
    let dir = run_dir.display().to_string();
    let out = env.command(&["verify", &dir, "--quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    assert!(both(&out).contains("budget reached"), "{}", both(&out));
    assert_eq!(env.server().hits("POST", "/pooling"), scored);
    // A raised cap scores the rest, none twice.
    let raise = "verifier.pricing.max_cost=100";
    let out = crate::common::gpassk()
        .args(["verify", &dir, "--quiet", "--set", raise])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(env.server().hits("POST", "/pooling"), 20);
    let json: Value = serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap();
    assert_eq!(
        json["call_costs"][0]["role"], "verifier",
        "{}",
        json["call_costs"]
    );
}

#[test]
fn an_unpriced_judge_or_verifier_under_a_budget_is_refused_unless_allowed() {
    let server = FakeServer::builder().responder(judge_reports_usage);
    let env = Fixture::new(&sums(2)).with_server(server);
    judged(&env, "max_cost = 100", "", "");
    let out = run(&env, &[]);
    let e = both(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("the judge judge-1 has no price and this run has a budget (max_cost)")
            && e.contains("[judge.pricing] input and output")
            && e.contains("allow_unpriced = true in [judge]"),
        "{e}"
    );
    assert_eq!(env.server().request_count(), 0, "nothing sent");
    assert!(!env.results().exists(), "no run directory");
    // The dry run refuses it too.
    let out = run(&env, &["--dry-run"]);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    // Priced, but only the model has a budget: counted, not capped, and said so.
    judged(&env, "max_cost = 100", JUDGE_PRICE, "");
    let out = env.command(&["run"]).output().unwrap();
    let e = both(&out).replace("\n  ", " ");
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains("the judge judge-1's calls are priced but no max_cost caps them"),
        "{e}"
    );
    std::fs::remove_dir_all(env.results()).unwrap();
    // Allowed: the run goes on and says its calls are not counted.
    judged(&env, "max_cost = 100", "allow_unpriced = true\n", "");
    let out = env.command(&["run"]).output().unwrap();
    let e = both(&out).replace("\n  ", " ");
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains("note: the judge judge-1's calls are not priced (allow_unpriced = true)"),
        "{e}"
    );
    // The verifier likewise, for `run` and for `verify`.
    let cfg = env.file("config.toml");
    let text = read(&cfg) + "[verifier]\nreward_model_id = \"prm\"\nreward_mode = \"pooling\"\n";
    std::fs::write(&cfg, &text).unwrap();
    let out = run(&env, &[]);
    let e = both(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("the verifier prm has no price"), "{e}");
    let dir = env.run_dir().display().to_string();
    let out = env.command(&["verify", &dir]).output().unwrap();
    let e = both(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("[verifier.pricing] input and output"), "{e}");
    assert_eq!(env.server().hits("POST", "/pooling"), 0);
}

#[test]
fn judge_and_verifier_prices_resolve_like_a_models_and_bad_ones_name_their_key() {
    let base = "[api]\nbase_url = \"http://127.0.0.1:1\"\n[[models]]\nname = \"a\"\n\
                [evaluation]\ndataset = \"gsm8k\"\ngrader = \"judge\"\n[judge]\nmodel_id = \"j\"\n";
    let load = |t: &str| gpassk::config::load_str(t, std::path::Path::new("cfg.toml"));
    let s = load(base).unwrap();
    assert_eq!(s.judge.unwrap().pricing, None, "j is in no price file");
    let s = load(&base.replace("\"j\"", "\"gpt-4o-mini\"")).unwrap();
    let p = s.judge.unwrap().pricing.unwrap();
    assert_eq!(
        (p.input, p.output),
        (150_000, 600_000),
        "the shipped price file"
    );
    let text = format!("{base}[judge.pricing]\ninput = 2\noutput = 3\nmax_cost = 4\n");
    let j = load(&text).unwrap().judge.unwrap();
    let p = j.pricing.unwrap();
    assert_eq!(
        (p.input, p.output, p.max_cost),
        (2_000_000, 3_000_000, Some(4_000_000))
    );
    let cases = [
        (
            "[judge.pricing]\ninput = -1\noutput = 3\n",
            11,
            "`judge.pricing.input`",
        ),
        (
            "[judge.pricing]\nmax_cost = 4\n",
            11,
            "`judge.pricing.max_cost`: needs a price",
        ),
        (
            "[verifier]\nreward_model_id = \"prm\"\n[verifier.pricing]\ninput = 1\n",
            12,
            "`verifier.pricing.output`: is needed once any price is given",
        ),
    ];
    for (extra, line, want) in cases {
        let e = load(&format!("{base}{extra}")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!("cfg.toml:{line}:")) && e.contains(want),
            "{extra}: {e}"
        );
    }
}
