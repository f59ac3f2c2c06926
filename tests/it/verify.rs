//! The process reward model as verifier: the `[verifier]` table (defaults, errors naming the
//! field, exit 2) and `gpassk verify` against the fake server's `/pooling` (stored step scores,
//! unreadable replies counted, no call asked twice, an interrupted pass resumed).

use crate::common::{gpassk, stderr, Fixture, Toml};
use crate::run_fake::{configure, run, sums, KEY, ONE_MODEL};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply, STEP_TAG};
use gpassk::config::{self, Aggregation, RewardMode, DEFAULT_MAX_STEPS};
use serde_json::{json, Value};
use std::path::Path;

const BASE: &str = r#"[api]
base_url = "http://127.0.0.1:1"
api_key_env = "POLICY_KEY"
[[models]]
name = "a"
[evaluation]
dataset = "gsm8k"
[verifier]
reward_model_id = "prm"
"#;

fn load(text: &str) -> Result<config::RunSettings, config::ConfigError> {
    config::load_str(text, Path::new("cfg.toml"))
}

fn err(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

#[test]
fn verifier_table_defaults_and_choices() {
    let base = BASE.replace("[verifier]\nreward_model_id = \"prm\"\n", "");
    assert_eq!(load(&base).unwrap().verifier, None);
    let v = load(BASE).unwrap().verifier.expect("[verifier] resolved");
    assert_eq!(v.reward_model_id, "prm");
    assert_eq!(v.reward_mode, RewardMode::ChatJudge);
    assert_eq!((v.reward_base_url, v.reward_api_key_env), (None, None));
    assert_eq!((v.step_regex, v.max_steps), (None, DEFAULT_MAX_STEPS));
    assert_eq!(v.aggregations, [Aggregation::Min]);
    let full = format!(
        "{BASE}reward_mode = \"pooling\"\nreward_base_url = \"http://prm:8000/v1\"\nreward_api_key_env = \"PRM_KEY\"\nstep_regex = \"(?m)^- \"\nmax_steps = 5\naggregation = [\"product\", \"min\", \"last\", \"mean\"]\n"
    );
    let v = load(&full).unwrap().verifier.unwrap();
    assert_eq!(v.reward_mode, RewardMode::Pooling);
    assert_eq!(v.reward_base_url.as_deref(), Some("http://prm:8000/v1"));
    assert_eq!(v.reward_api_key_env.as_deref(), Some("PRM_KEY"));
    assert_eq!((v.step_regex.as_deref(), v.max_steps), (Some("(?m)^- "), 5));
    use Aggregation as A;
    assert_eq!(v.aggregations, [A::Product, A::Min, A::Last, A::Mean]);
    let names: Vec<&str> = v.aggregations.iter().map(|a| a.name()).collect();
    assert_eq!(names, ["product", "min", "last", "mean"]);
}

#[test]
fn bad_verifier_keys_name_the_field_and_line() {
    // (lines after `reward_model_id = "prm"`, the line the error names, what it says)
    let cases: [(&str, usize, &str); 10] = [
        ("reward_mode = \"none\"", 10, "`verifier.reward_mode`: \"none\" is not one of chat_judge, pooling"),
        ("reward_mode = \"poolng\"", 10, "(did you mean \"pooling\"?)"),
        ("aggregation = []", 10, "`verifier.aggregation`: is empty"),
        ("aggregation = [\"min\", \"mni\"]", 10, "`verifier.aggregation`: \"mni\" is not one of min, mean, last, product (did you mean \"min\"?)"),
        ("aggregation = [\"last\", \"last\"]", 10, "`verifier.aggregation`: \"last\" is listed twice"),
        ("max_steps = 0", 10, "`verifier.max_steps`: 0 must be between 1 and 1000"),
        ("step_regex = \"(\"", 10, "`verifier.step_regex`: not a valid regex"),
        ("reward_base_url = \"ftp://x\"", 10, "`verifier.reward_base_url`"),
        ("reward_api_key_env = \"\"", 10, "`verifier.reward_api_key_env`: must name an environment variable"),
        ("max_steps = 3\naggregation = [\"max\"]", 11, "`verifier.aggregation`: \"max\""),
    ];
    for (lines, line, want) in cases {
        let e = err(&format!("{BASE}{lines}\n"));
        assert!(
            e.starts_with(&format!("cfg.toml:{line}:")) && e.contains(want),
            "{lines}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "one line: {e}");
    }
    let e = err(&BASE.replace("reward_model_id = \"prm\"", "reward_model_id = \" \""));
    assert!(
        e.starts_with("cfg.toml:9:") && e.contains("`verifier.reward_model_id`: missing"),
        "{e}"
    );
    let e = err(&format!("{BASE}aggregate = [\"min\"]\n"));
    assert!(
        e.contains("aggregate") && e.contains("aggregation"),
        "unknown key: {e}"
    );
}

#[test]
fn a_bad_verifier_table_exits_2_before_anything_runs() {
    let env = Fixture::new("{\"id\": \"1\", \"question\": \"1+1?\", \"answer\": \"2\"}\n");
    env.config(Toml {
        sampling: "n = 2\ngreedy = false",
        models: "[[models]]\nname = \"a\"\n",
        evaluation: "[verifier]\nreward_model_id = \"prm\"\naggregation = [\"median\"]\n",
        ..Toml::default()
    });
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    let e = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("config.toml:") && e.contains("`verifier.aggregation`: \"median\""),
        "{e}"
    );
}

/// Two steps; problem p1 (3+4) always answers 99, which the PRM below cannot read.
fn two_step_reply(r: &Recorded) -> Reply {
    let q = r.user_text().unwrap_or_default();
    let answer = if q.contains("3+4") { 99 } else { 3 };
    let choices = (0..r.n())
        .map(|_| {
            ChoiceReply::stop(format!(
                "Step 1: add the numbers.\nStep 2: so the answer is \\boxed{{{answer}}}."
            ))
        })
        .collect();
    Reply::with_choices(choices)
}

/// One `[p_bad, p_good]` per step tag (0.7, then 0.6); no rows at all for an answer of 99.
fn prm_rows(r: &Recorded) -> Value {
    let text = r.pooled_text().unwrap_or_default();
    if text.contains("boxed{99}") {
        return json!([]);
    }
    let tags = text.matches(STEP_TAG).count();
    (0..tags)
        .map(|i| json!([0.3 + 0.1 * i as f64, 0.7 - 0.1 * i as f64]))
        .collect()
}

/// Appends a `[verifier]` table naming the PRM `prm`, with `extra` keys.
pub(crate) fn add_verifier(cfg: &Path, extra: &str) {
    let mut text = std::fs::read_to_string(cfg).unwrap();
    text.push_str(&format!("[verifier]\nreward_model_id = \"prm\"\n{extra}"));
    std::fs::write(cfg, text).unwrap();
}

pub(crate) fn verify(env: &Fixture, run_dir: &Path) -> std::process::Output {
    gpassk()
        .args(["verify", run_dir.to_str().unwrap(), "--config"])
        .arg(env.file("config.toml"))
        .env("GPASSK_TEST_KEY", KEY)
        .output()
        .unwrap()
}

fn stored(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn verify_scores_every_sample_once_and_resumes() {
    let env = Fixture::new(&sums(2)).with_server(
        FakeServer::builder()
            .responder(two_step_reply)
            .pooling_responder(prm_rows),
    );
    let cfg = configure(&env, "n = 3\ngreedy = false", ONE_MODEL, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = env.run_dir();
    let server = env.server();
    assert_eq!(
        server.hits("POST", "/pooling"),
        0,
        "a run without [verifier] asks no PRM"
    );
    add_verifier(&cfg, "reward_mode = \"pooling\"\n");

    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(
        e.contains(
            "m1: 3 scored, 3 unreadable (no score, never read as 0), 0 failed, 0 already stored"
        ),
        "{e}"
    );
    assert_eq!(server.hits("POST", "/pooling"), 6);
    let file = run_dir.join("verifier/m1.jsonl");
    let lines = stored(&file);
    assert_eq!(lines.len(), 6);
    for l in &lines {
        assert_eq!(l["steps"], 2, "{l}");
        assert_eq!(l["verifier_model"], "prm");
        if l["problem_id"] == "p0" {
            assert_eq!(l["scores"], json!([0.7, 0.6]), "{l}");
        } else {
            assert_eq!(
                l["scores"],
                Value::Null,
                "unreadable is no score, not 0: {l}"
            );
            assert!(
                l["unparsed"].as_str().is_some_and(|u| u.contains("data")),
                "{l}"
            );
        }
    }
    let raw = std::fs::read_to_string(&file).unwrap();
    assert!(!raw.contains(KEY), "the key is never written");
    for r in server.requests().iter().filter(|r| r.is_pooling()) {
        assert_eq!(r.model(), Some("prm"));
    }

    // Scoring again asks nothing: every sample is stored, the unreadable ones too.
    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert!(
        e.contains(
            "0 scored, 0 unreadable (no score, never read as 0), 0 failed, 6 already stored"
        ),
        "{e}"
    );
    assert_eq!(server.hits("POST", "/pooling"), 6);

    // An interrupted pass kept only what it stored: the rest is asked once more, nothing twice.
    let kept: String = raw.lines().take(4).map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, kept).unwrap();
    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("0 failed, 4 already stored"), "{e}");
    assert_eq!(server.hits("POST", "/pooling"), 8);
    let lines = stored(&file);
    assert_eq!(lines.len(), 6);
    let mut keys: Vec<(String, u64)> = lines
        .iter()
        .map(|l| {
            (
                l["problem_id"].as_str().unwrap().to_string(),
                l["sample_index"].as_u64().unwrap(),
            )
        })
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 6, "each sample stored once: {keys:?}");
}

/// `gpassk verify RUN_DIR` alone, from a folder without `configs/config.toml`.
fn verify_alone(env: &Fixture, run_dir: &Path, args: &[&str]) -> std::process::Output {
    gpassk()
        .arg("verify")
        .arg(run_dir)
        .args(args)
        .current_dir(env.path())
        .env("GPASSK_TEST_KEY", KEY)
        .output()
        .unwrap()
}

#[test]
fn verify_reads_the_runs_own_config_and_writes_the_reports() {
    // The PRM is down while the run samples: the run keeps its samples, unscored.
    let down = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let prm_down = down.clone();
    let server = FakeServer::builder()
        .responder(two_step_reply)
        .pooling_responder(prm_rows)
        .faults(move |r: &Recorded| {
            let off = r.is_pooling() && prm_down.load(std::sync::atomic::Ordering::SeqCst);
            off.then(|| fake_openai::Fault::unknown_model("prm"))
        });
    let env = Fixture::new(&sums(2)).with_server(server);
    let cfg = configure(&env, "n = 3\ngreedy = false", ONE_MODEL, "");
    add_verifier(&cfg, "reward_mode = \"pooling\"\n");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let run_dir = env.run_dir();
    // bon@N values in metrics.json (rows without problems have none).
    let bon_values = || {
        let text = std::fs::read_to_string(run_dir.join("metrics.json")).unwrap();
        let json: Value = serde_json::from_str(&text).unwrap();
        let rows = json["metrics"].as_array().unwrap().clone();
        rows.iter()
            .filter(|r| r["metric"] == "bon@k" && !r["value"].is_null())
            .count()
    };
    assert_eq!(bon_values(), 0, "nothing scored yet");
    // The config file is gone: the run's manifest holds its config, [verifier] included.
    std::fs::remove_file(&cfg).unwrap();
    down.store(false, std::sync::atomic::Ordering::SeqCst);
    let before = env.server().hits("POST", "/pooling");
    let out = verify_alone(&env, &run_dir, &[]);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("m1: 3 scored, 3 unreadable"), "{e}");
    assert_eq!(env.server().hits("POST", "/pooling"), before + 6);
    // The reports carry the verifier's metrics without a `gpassk score`.
    assert!(bon_values() > 0, "bon@N reported");
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(md.contains("Verifier versus voting"), "{md}");
}

#[test]
fn verify_needs_a_verifier_table_and_the_key() {
    let env = Fixture::new(&sums(1)).with_server(FakeServer::builder().responder(two_step_reply));
    let cfg = configure(&env, "n = 1\ngreedy = false", ONE_MODEL, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = env.run_dir();
    let out = verify(&env, &run_dir);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no [verifier] table"),
        "{}",
        stderr(&out)
    );
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str(
        "[verifier]\nreward_model_id = \"prm\"\nreward_api_key_env = \"GPASSK_PRM_KEY_UNSET\"\n",
    );
    std::fs::write(&cfg, text).unwrap();
    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("GPASSK_PRM_KEY_UNSET is not set"), "{e}");
    assert!(!run_dir.join("verifier").exists());
}

/// The policy's two-step samples, and a chat-judge PRM: 0.9 for step 1, 0.4 for step 2, and no
/// number at all for problem p1 (3+4).
fn judge_or_policy(r: &Recorded) -> Reply {
    if r.model() != Some("prm") {
        return two_step_reply(r);
    }
    let user = r.user_text().unwrap_or_default();
    let text = if user.contains("3+4") {
        "I cannot tell."
    } else if user.contains("Score of step 2") {
        "Score: 0.4"
    } else {
        "0.9"
    };
    Reply::with_choices(vec![ChoiceReply::stop(text.to_string())])
}

#[test]
fn a_chat_judge_verifier_is_asked_once_per_step() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(judge_or_policy));
    let cfg = configure(&env, "n = 3\ngreedy = false", ONE_MODEL, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = env.run_dir();
    add_verifier(&cfg, "");
    let prm_calls = |env: &Fixture| {
        env.server()
            .requests()
            .iter()
            .filter(|r| r.model() == Some("prm"))
            .count()
    };
    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("m1: 3 scored, 3 unreadable"), "{e}");
    // p0: 3 samples × 2 steps; p1: the first step's reply is unreadable, so 1 call each.
    assert_eq!(prm_calls(&env), 9);
    assert_eq!(env.server().hits("POST", "/pooling"), 0);
    for l in stored(&run_dir.join("verifier/m1.jsonl")) {
        if l["problem_id"] == "p0" {
            assert_eq!(l["scores"], json!([0.9, 0.4]), "{l}");
        } else {
            assert_eq!(l["scores"], Value::Null, "{l}");
            assert_eq!(l["unparsed"], "I cannot tell.", "{l}");
        }
    }
    let out = verify(&env, &run_dir);
    assert!(
        stderr(&out).contains("6 already stored"),
        "{}",
        stderr(&out)
    );
    assert_eq!(prm_calls(&env), 9, "nothing asked twice");
}

/// A chat-judge PRM that answers in the forms judges use: labelled ("Score of step 1: 0.2"),
/// signed, with an exponent, as a percent, out of range. p0 (2+1) is readable at both steps,
/// p1 (3+4) is negative, p2 (4+7) is out of range at its second step.
fn judge_forms(r: &Recorded) -> Reply {
    if r.model() != Some("prm") {
        return two_step_reply(r);
    }
    let user = r.user_text().unwrap_or_default();
    let step2 = user.contains("Score of step 2");
    let text = match (user.contains("2+1"), user.contains("3+4"), step2) {
        (true, _, false) => "Score of step 1: 0.2",
        (true, _, true) => "1e-3",
        (_, true, _) => "-0.9",
        (_, _, false) => "80%",
        (_, _, true) => "Score of step 2 (0 to 1): 1.5",
    };
    Reply::with_choices(vec![ChoiceReply::stop(text.to_string())])
}

#[test]
fn a_judge_score_is_the_number_that_scores_and_unreadable_ones_are_counted() {
    let env = Fixture::new(&sums(3)).with_server(FakeServer::builder().responder(judge_forms));
    let cfg = configure(&env, "n = 2\ngreedy = false", ONE_MODEL, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let run_dir = env.run_dir();
    add_verifier(&cfg, "");
    let out = verify(&env, &run_dir);
    let e = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{e}");
    assert!(e.contains("m1: 2 scored, 4 unreadable"), "{e}");
    for l in stored(&run_dir.join("verifier/m1.jsonl")) {
        let (scores, unparsed) = (&l["scores"], &l["unparsed"]);
        match l["problem_id"].as_str().unwrap() {
            "p0" => assert_eq!(scores, &json!([0.2, 0.001]), "{l}"),
            "p1" => assert_eq!((scores, unparsed.as_str()), (&Value::Null, Some("-0.9"))),
            _ => assert_eq!(
                (scores, unparsed.as_str()),
                (&Value::Null, Some("Score of step 2 (0 to 1): 1.5"))
            ),
        }
    }
}

#[test]
fn declared_verifier_metrics_need_their_verifier() {
    let with = |metrics: &str, verifier: &str| {
        let base = BASE.replace("[verifier]\nreward_model_id = \"prm\"\n", "");
        format!("{base}metrics = [{metrics}]\n{verifier}")
    };
    let table = "[verifier]\nreward_model_id = \"prm\"\naggregation = [\"min\", \"last\"]\n";
    let s = load(&with(
        "\"pass@4\", \"bon@4_min\", \"wmaj@2_last\", \"maj@2\"",
        table,
    ))
    .unwrap();
    use gpassk::metrics::MetricKind as M;
    assert_eq!(
        s.evaluation.metrics[1..],
        [
            M::BestOfN {
                size: 4,
                aggregation: Aggregation::Min
            },
            M::WeightedMajority {
                size: 2,
                aggregation: Aggregation::Last
            },
            M::MajorityAt { size: 2 },
        ]
    );
    assert_eq!(s.evaluation.ks, [2, 4], "their N join the k grid");
    let cases = [
        (
            with("\"bon@4_min\"", ""),
            "bon@4_min needs a [verifier] table",
        ),
        (
            with("\"bon@4_mean\"", table),
            "bon@4_mean uses the mean aggregation, which `verifier.aggregation` does not list",
        ),
        (
            with("\"bon@4_max\"", table),
            "\"max\" is not one of min, mean, last, product",
        ),
        (
            with("\"maj@16\"", table).replace("[evaluation]", "[sampling]\nn = 16\n[evaluation]"),
            "maj@16: N must be below n = 16",
        ),
        (
            with("\"bonn@4_min\"", table),
            "did you mean \"bon@16_min\"?",
        ),
    ];
    for (text, want) in cases {
        let e = err(&text);
        assert!(
            e.contains("`evaluation.metrics`") && e.contains(want),
            "{want}: {e}"
        );
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}
