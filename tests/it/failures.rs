//! Every failure has its reason, in every report and at the end of the run: a server's message
//! whole (escaped, bounded at a word boundary), a reason several models share shown once, advice
//! that fits the cause, and a server that cannot be reached stopping the run early.

use crate::common::{both, read, stderr, Fixture, Toml, NO_SERVER};
use crate::run_fake::{configure, run, smart_reply, sums};
use fake_openai::{FakeServer, Fault, Recorded};
use std::path::Path;

const THREE_MODELS: &str = "[[models]]\nname = \"good\"\nmodel_id = \"good-1\"\n\
     [[models]]\nname = \"broken-a\"\nmodel_id = \"broken-1\"\n\
     [[models]]\nname = \"broken-b\"\nmodel_id = \"broken-2\"\n";

/// A CUDA crash as vLLM reports it: colons inside, markup a report must escape, and a tail long
/// enough that it has to be cut.
fn crash_message() -> String {
    let tail = "while <running> the_kernel | retry ".repeat(20);
    format!("CUDA error: an illegal memory access was encountered; {tail}")
}

/// A server answering `good` and failing every request of the `broken-*` models with a 500.
fn half_broken() -> fake_openai::FakeServerBuilder {
    let body = serde_json::json!({"error": {"message": crash_message(), "type": "server_error"}});
    FakeServer::builder()
        .responder(smart_reply)
        .faults(move |r: &Recorded| {
            r.model()?.starts_with("broken").then(|| Fault::Status {
                code: 500,
                body: body.to_string(),
                retry_after: None,
            })
        })
}

fn metrics_json(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&run_dir.join("metrics.json"))).unwrap()
}

#[test]
fn an_all_500_model_has_its_reason_once_in_every_format_cut_at_a_word() {
    let env = Fixture::new(&sums(3)).with_server(half_broken());
    configure(&env, "n = 2", THREE_MODELS, "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let dir = env.run_dir();
    let head = "CUDA error: an illegal memory access was encountered";
    let err = stderr(&out);
    let summary = read(&dir.join("summary.txt"));
    let md = read(&dir.join("report.md"));
    let html = read(&dir.join("report.html"));
    // Shared by both broken models: named once, with both names, in every human format.
    for (name, text) in [("stderr", &err), ("summary.txt", &summary)] {
        let who = "models broken-a, broken-b: server (HTTP 500):";
        assert_eq!(text.matches(who).count(), 1, "{name}:\n{text}");
        assert!(text.contains("--resume"), "{name}:\n{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains(head), "{name}:\n{text}");
    }
    assert_eq!(
        md.matches("**models broken-a, broken-b**").count(),
        1,
        "{md}"
    );
    assert!(md.contains(&format!("server (HTTP 500): {head}")), "{md}");
    assert!(
        md.contains("&lt;running&gt; the\\_kernel \\| retry"),
        "{md}"
    );
    assert_eq!(
        html.matches("<strong>models broken-a, broken-b</strong>")
            .count(),
        1
    );
    assert!(
        html.contains("&lt;running&gt; the_kernel | retry"),
        "{html}"
    );
    assert!(!html.contains("<running>"), "{html}");
    // metrics.json: the reason raw, bounded at a word boundary, with its models and advice.
    let json = metrics_json(&dir);
    let failures = json["failures"].as_array().expect("failures");
    assert_eq!(failures.len(), 1, "{failures:?}");
    let reason = failures[0]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("server (HTTP 500): {head}")),
        "{reason}"
    );
    assert!(reason.contains("<running> the_kernel | retry"), "{reason}");
    assert!(reason.chars().count() <= 300, "{reason}");
    let cut = reason.strip_suffix('…').expect("cut with an ellipsis");
    let words = ["while", "<running>", "the_kernel", "|", "retry"];
    let last = cut.split_whitespace().last().unwrap();
    assert!(words.contains(&last), "cut mid-word: {reason}");
    assert_eq!(failures[0]["models"].as_array().unwrap().len(), 2);
    assert_eq!(failures[0]["advice"]["kind"], "resume");
}

#[test]
fn a_refused_key_names_its_variable_and_never_suggests_resume() {
    let server = FakeServer::builder().faults(|_: &Recorded| Some(Fault::unauthorized()));
    let env = Fixture::new(&sums(3)).with_server(server);
    configure(&env, "n = 2", crate::run_fake::ONE_MODEL, "");
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let err = stderr(&out);
    let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("model m1: auth (HTTP 401): Incorrect API key provided"),
        "{err}"
    );
    assert!(flat.contains("check the key in $GPASSK_TEST_KEY"), "{err}");
    assert!(!err.contains("--resume"), "{err}");
    let md = read(&env.run_dir().join("report.md"));
    assert!(md.contains("$GPASSK\\_TEST\\_KEY"), "{md}");
    assert!(!md.contains("--resume"), "{md}");
}

#[test]
fn an_unreachable_server_stops_early_naming_its_url_once_for_all_models() {
    let env = Fixture::new(&sums(20));
    let models = "[pricing]\ninput = 1.0\noutput = 2.0\n\
                  [[models]]\nname = \"a\"\nmodel_id = \"a\"\n[[models]]\nname = \"b\"\nmodel_id = \"b\"\n\
                  [[models]]\nname = \"c\"\nmodel_id = \"c\"\n";
    env.config(Toml {
        base_url: Some(NO_SERVER),
        api: "max_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\ntimeout = 5\nconcurrency = 2",
        sampling: "n = 2\nmax_tokens = 64",
        models,
        evaluation: "",
    });
    let out = run(&env, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let err = stderr(&out);
    let url = format!("{NO_SERVER}/v1/chat/completions");
    let flat = err.split_whitespace().collect::<Vec<_>>().join(" ");
    // Once as it happened (the other models refer to it), once in the summary.
    assert_eq!(
        flat.matches(&format!("cannot reach {url}")).count(),
        2,
        "{err}"
    );
    assert_eq!(flat.matches("as model ").count(), 2, "{err}");
    assert!(
        flat.contains("error: models a, b, c: connection: cannot reach"),
        "{err}"
    );
    assert!(flat.contains("nothing answers at that address"), "{err}");
    assert!(
        both(&out).contains("no values: no model answered any unit"),
        "{err}"
    );
    // Stopped after the bound (2 × concurrency attempts in a row), not after every unit's retries.
    for m in ["a", "b", "c"] {
        let path = env.run_dir().join(format!("checkpoints/{m}.jsonl"));
        let records = std::fs::read_to_string(path).map_or(0, |t| t.lines().count());
        assert!(records <= 4, "{m}: {records} units tried");
    }
    let md = read(&env.run_dir().join("report.md"));
    assert!(md.contains("no request succeeded"), "{md}");
    assert!(!md.contains("0.000000"), "{md}");
    let failures = metrics_json(&env.run_dir())["failures"].clone();
    assert_eq!(failures.as_array().map(Vec::len), Some(1), "{failures}");
    assert_eq!(failures[0]["advice"]["kind"], "unreachable");
}
