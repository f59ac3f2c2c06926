//! The two-file configuration: settings.json beside config.toml, every task key, task arrays,
//! and `--set KEY=VALUE` overrides for run, label and score.

use crate::common::{both, gpassk, ok, read, repo, run_dirs, stderr, Fixture, Toml};
use fake_openai::{FakeServer, Recorded, Reply};
use serde_json::Value;
use std::path::Path;
use std::process::Output;

/// Four sums with answers 4, 6, 8, 10.
const DATA: &str = "{\"id\":\"a\",\"question\":\"What is 2+2?\",\"answer\":\"4\"}\n\
{\"id\":\"b\",\"question\":\"What is 3+3?\",\"answer\":\"6\"}\n\
{\"id\":\"c\",\"question\":\"What is 4+4?\",\"answer\":\"8\"}\n\
{\"id\":\"d\",\"question\":\"What is 5+5?\",\"answer\":\"10\"}\n";

/// Answers each sum correctly as "最后得数为 N" (a cue no built-in rule knows) followed by a line holding another number, so only
/// a `$`-anchored regex on multi-line text finds the answer (the built-in rules take the 3).
fn sum_server() -> fake_openai::FakeServerBuilder {
    FakeServer::builder().responder(|r: &Recorded| {
        let text = r.user_text().unwrap_or("");
        let answer = ["2+2", "3+3", "4+4", "5+5"]
            .iter()
            .position(|q| text.contains(q))
            .map_or(0, |i| 2 * (i + 2));
        Reply::repeated(
            r.n(),
            &format!("推理。\n最后得数为 {answer}\n（用时 3 分钟）\n"),
        )
    })
}

/// A fixture whose config.toml has one model `m` with n = 4 and fast retries.
fn fixture(evaluation: &str) -> Fixture {
    let env = Fixture::new(DATA).with_server(sum_server());
    env.config(Toml {
        api: "max_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\nconcurrency = 2",
        sampling: "n = 4\ngreedy = false",
        models: "[[models]]\nname = \"m\"",
        evaluation,
        ..Toml::default()
    });
    env
}

/// Writes settings.json beside the fixture's config.toml.
fn settings(env: &Fixture, json: &str) {
    env.write("settings.json", json);
}

fn go(env: &Fixture, args: &[&str]) -> Output {
    env.command(args).output().expect("run gpassk")
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_str(&read(&dir.join("manifest.json"))).expect("manifest JSON")
}

/// Exit 2 with one error line holding every `needle`.
fn bad(o: &Output, needles: &[&str]) {
    let text = both(o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    let line = text.lines().find(|l| l.starts_with("error:")).unwrap_or("");
    for n in needles {
        assert!(line.contains(n), "missing {n:?} in {line:?}\n{text}");
    }
}

#[test]
fn shipped_pair_runs_against_the_fake_server_and_a_second_invocation_resumes() {
    let env = Fixture::new("").with_server(
        FakeServer::builder()
            .responder(|r: &Recorded| Reply::repeated(r.n(), "推理过程。\n答案：7\n")),
    );
    let results = env.file("results");
    let set_url = format!("api.base_url={}", env.base_url());
    let set_out = format!("evaluation.output_dir={}", results.display());
    let config = repo().join("configs/tutorial/config.toml");
    let args = [
        "run",
        "--config",
        config.to_str().unwrap(),
        "--set",
        &set_url,
        "--set",
        &set_out,
        "--limit",
        "3",
        "--quiet",
    ];
    let first = gpassk()
        .args(args)
        .env("TAOTOKEN_API_KEY", "test-key")
        .output()
        .unwrap();
    ok(&first);
    let dirs = run_dirs(&results);
    assert_eq!(dirs.len(), 1);
    let m = manifest(&dirs[0]);
    assert_eq!(m["task_name"], "math_stability_eval");
    assert_eq!(
        m["settings"]["path"],
        repo()
            .join("configs/tutorial/settings.json")
            .display()
            .to_string()
    );
    assert_eq!(m["settings"]["content"]["checkpoint_interval"], 50);
    assert_eq!(m["settings"]["sha256"].as_str().unwrap().len(), 64);
    let ev = &m["config"]["evaluation"];
    assert_eq!(ev["g_pass_thresholds"], serde_json::json!([0.1, 0.5, 1.0]));
    assert_eq!(ev["answer_extract_regex"].as_array().unwrap().len(), 3);
    assert!(m["prompt_template"]
        .as_str()
        .unwrap()
        .starts_with("请逐步推理"));
    assert_eq!(m["overrides"], serde_json::json!([set_url, set_out]));
    let csv = read(&dirs[0].join("metrics.csv"));
    assert!(csv.contains(",all,g_pass@k,16,0.1,"), "{csv}");
    let sent = env.server().request_count();
    assert!(sent > 0);

    let second = gpassk()
        .args(args)
        .env("TAOTOKEN_API_KEY", "test-key")
        .output()
        .unwrap();
    ok(&second);
    assert_eq!(
        run_dirs(&results),
        dirs,
        "the second invocation resumes the first run"
    );
    assert_eq!(
        env.server().request_count(),
        sent,
        "nothing is sampled twice"
    );
}

#[test]
fn settings_beside_the_config_is_announced_once_and_its_keys_reach_manifest_and_metrics() {
    let env = fixture("prompt_template = \"Q: {question}\"\ng_pass_thresholds = [0.5]");
    settings(
        &env,
        r#"{
  "task_name": "sums",
  "prompt_template": "题目：{question}\n请作答。",
  "answer_extract_regex": "最后得数为 (.+)$",
  "g_pass_thresholds": [0.25, 0.75]
}"#,
    );
    let o = go(&env, &["run"]);
    ok(&o);
    let err = stderr(&o);
    assert_eq!(
        err.matches("reading task settings from").count(),
        1,
        "{err}"
    );
    let differ: Vec<&str> = err.lines().filter(|l| l.contains("both set")).collect();
    assert_eq!(differ.len(), 1, "{err}");
    assert!(differ[0].contains("`prompt_template`") && differ[0].contains("`g_pass_thresholds`"));
    assert!(!differ[0].contains("task_name"), "{err}");
    let dir = env.run_dir();
    let m = manifest(&dir);
    assert_eq!(m["task_name"], "sums");
    assert!(read(&dir.join("report.html")).contains("<title>G-Pass@k report: sums ("));
    assert!(read(&dir.join("report.md")).starts_with("# G-Pass@k report: sums ("));
    assert_eq!(m["prompt_template"], "题目：{question}\n请作答。");
    let csv = read(&dir.join("metrics.csv"));
    // The JSON's τ are computed, and its regex found every answer although a later line of each
    // response holds another number.
    assert!(csv.contains(",all,g_pass@k,4,0.25,1.0,"), "{csv}");
    assert!(csv.contains(",all,g_pass@k,4,0.75,1.0,"), "{csv}");
    assert!(!csv.contains(",g_pass@k,4,0.5,"), "{csv}");
}

#[test]
fn regex_list_is_tried_in_order_before_the_built_in_rules() {
    let env = fixture("");
    let with = r#"{"answer_extract_regex": "答案：(.+)$", "answer_extract_regex_list": ["最后得数[是为：\\s]*(.+)$"]}"#;
    settings(&env, with);
    ok(&go(&env, &["run", "--quiet"]));
    let good = read(&env.run_dir().join("per_problem.csv"));
    std::fs::remove_dir_all(env.results()).unwrap();
    settings(&env, r#"{"task_name": "none"}"#);
    ok(&go(&env, &["run", "--quiet"]));
    let worse = read(&env.run_dir().join("per_problem.csv"));
    assert_ne!(
        good, worse,
        "without the regexes the built-in rules take the trailing 3"
    );
    let m = manifest(&env.run_dir());
    assert!(m["config"]["evaluation"]["answer_extract_regex"].is_null());
}

#[test]
fn dataset_path_is_relative_to_the_settings_file_and_a_missing_one_suggests_a_shipped_dataset() {
    let env = fixture("");
    std::fs::create_dir_all(env.file("tasks/data")).unwrap();
    std::fs::write(
        env.file("tasks/data/two.jsonl"),
        &DATA[..DATA.find("\n{\"id\":\"c\"").unwrap() + 1],
    )
    .unwrap();
    env.write("tasks/s.json", r#"{"dataset_path": "./data/two.jsonl"}"#);
    let o = go(
        &env,
        &[
            "run",
            "--settings",
            env.file("tasks/s.json").to_str().unwrap(),
            "--dry-run",
        ],
    );
    assert!(ok(&o).contains("— 2 problems"), "{}", both(&o));

    env.write(
        "tasks/s.json",
        "{\n  \"dataset_path\": \"./data/livemathbench_202412.jsonl\"\n}",
    );
    let o = go(
        &env,
        &[
            "run",
            "--settings",
            env.file("tasks/s.json").to_str().unwrap(),
            "--dry-run",
        ],
    );
    bad(
        &o,
        &[
            "s.json:2:3",
            "`dataset_path`",
            "./data/livemathbench_202412.jsonl",
            "\"dataset_path\": \"livemathbench_202412\"",
        ],
    );
}

#[test]
fn bad_json_unknown_keys_and_bad_values_exit_2_with_line_and_column() {
    let env = fixture("");
    let cases: &[(&str, &[&str])] = &[
        (
            "{\n  \"task_name\": \"x\",\n}",
            &["settings.json:3:1", "trailing comma"],
        ),
        (
            "{\n  \"task_name\": \"x\",\n  \"concurency\": 4\n}",
            &[
                "settings.json:3:",
                "unknown key `concurency`",
                "did you mean `concurrency`?",
            ],
        ),
        (
            "{\n  \"concurrency\": \"8\"\n}",
            &["settings.json:2:", "`concurrency`", "invalid type"],
        ),
        (
            "{\n  \"concurrency\": 0\n}",
            &[
                "settings.json:2:3",
                "`concurrency`: 0 must be between 1 and 100000",
            ],
        ),
        (
            "{\n  \"g_pass_thresholds\": [0.5, 1.5]\n}",
            &["settings.json:2:3", "`g_pass_thresholds`"],
        ),
        (
            "{\n  \"g_pass_thresholds\": []\n}",
            &["settings.json:2:3", "at least one"],
        ),
        (
            "{\n  \"prompt_template\": \"no placeholder\"\n}",
            &[
                "settings.json:2:3",
                "`prompt_template`: must contain {question}",
            ],
        ),
        (
            "{\n  \"answer_extract_regex\": \"(unclosed\"\n}",
            &[
                "settings.json:2:3",
                "`answer_extract_regex`",
                "does not compile",
            ],
        ),
        ("{\"task_name\": \"a\"}\n", &[]),
        (
            "{\n  \"answer_extract_regex_list\": [\"ok (.+)\", \"[bad\"]\n}",
            &["settings.json:2:3", "`answer_extract_regex_list`", "[bad"],
        ),
        (
            "{\n  \"save_raw_responses\": \"no\"\n}",
            &[
                "settings.json:2:",
                "`save_raw_responses`",
                "expected a boolean",
            ],
        ),
        (
            "{\n  \"resume_from_checkpoint\": 1\n}",
            &[
                "settings.json:2:",
                "`resume_from_checkpoint`",
                "expected a boolean",
            ],
        ),
        (
            "{\n  \"checkpoint_interval\": 0\n}",
            &[
                "settings.json:2:3",
                "`checkpoint_interval`: 0 must be at least 1",
            ],
        ),
        (
            "{\n  \"task_name\": \" \"\n}",
            &["settings.json:2:3", "`task_name`"],
        ),
        (
            "[{\"task_name\": \"a\"},\n {\"task_name\": \"a\"}]",
            &["settings.json:2:3", "\"a\" names two tasks"],
        ),
    ];
    for (json, needles) in cases {
        settings(&env, json);
        let o = go(&env, &["run", "--dry-run"]);
        if needles.is_empty() {
            ok(&o);
        } else {
            bad(&o, needles);
        }
    }
}

#[test]
fn concurrency_becomes_each_models_own_over_api() {
    let env = fixture("");
    settings(&env, r#"{"concurrency": 3}"#);
    let o = go(&env, &["run", "--quiet"]);
    ok(&o);
    let m = manifest(&env.run_dir());
    assert_eq!(m["config"]["models"][0]["concurrency"], 3);
    assert_eq!(m["config"]["api"]["concurrency"], 2);
}

#[test]
fn checkpoint_interval_is_accepted_and_said_once() {
    let env = fixture("");
    settings(
        &env,
        r#"[{"task_name": "a", "checkpoint_interval": 50}, {"task_name": "b", "checkpoint_interval": 50}]"#,
    );
    let o = go(&env, &["run", "--dry-run"]);
    ok(&o);
    assert_eq!(
        stderr(&o).matches("checkpoint_interval").count(),
        1,
        "{}",
        stderr(&o)
    );
}

#[test]
fn without_raw_responses_checkpoints_keep_the_answer_and_a_hash_and_score_cannot_re_extract() {
    let env = fixture("");
    settings(
        &env,
        r#"{"answer_extract_regex": "最后得数为 (.+)$", "save_raw_responses": false}"#,
    );
    let o = go(&env, &["run", "--quiet"]);
    ok(&o);
    let dir = env.run_dir();
    let ck = read(&dir.join("checkpoints/m.jsonl"));
    for line in ck.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        assert!(r["response"].is_null(), "{line}");
        assert!(!line.contains("用时"), "{line}");
        assert_eq!(r["response_sha256"].as_str().unwrap().len(), 64);
        assert!(
            ["4", "6", "8", "10"].contains(&r["extracted"].as_str().unwrap()),
            "{line}"
        );
    }
    let metrics = read(&dir.join("metrics.csv"));
    let s = gpassk()
        .args(["score", dir.to_str().unwrap()])
        .output()
        .unwrap();
    ok(&s);
    assert!(stderr(&s).contains("cannot re-extract"), "{}", both(&s));
    assert_eq!(
        read(&dir.join("metrics.csv")),
        metrics,
        "the stored answers grade the same"
    );
    let again = gpassk()
        .args([
            "score",
            dir.to_str().unwrap(),
            "--set",
            "evaluation.answer_extract_regex=[\"x(.+)\"]",
        ])
        .output()
        .unwrap();
    bad(
        &again,
        &[
            "--set evaluation.answer_extract_regex",
            "cannot be re-extracted",
        ],
    );
    let label = go(
        &env,
        &["label", "--from-run", dir.to_str().unwrap(), "--dry-run"],
    );
    bad(
        &label,
        &["no stored responses", "save_raw_responses = false"],
    );
}

#[test]
fn resume_from_checkpoint_false_always_starts_a_new_run_and_true_resumes() {
    let env = fixture("");
    settings(&env, r#"{"resume_from_checkpoint": false}"#);
    ok(&go(&env, &["run", "--quiet"]));
    ok(&go(&env, &["run", "--quiet"]));
    assert_eq!(run_dirs(&env.results()).len(), 2);
    // Another settings file is another task: `true` finds no run of its own and starts one.
    settings(&env, r#"{"resume_from_checkpoint": true}"#);
    ok(&go(&env, &["run", "--quiet"]));
    assert_eq!(run_dirs(&env.results()).len(), 3);
    let sent = env.server().request_count();
    let o = go(&env, &["run"]);
    ok(&o);
    assert!(stderr(&o).contains("resuming"), "{}", stderr(&o));
    assert_eq!(run_dirs(&env.results()).len(), 3);
    assert_eq!(env.server().request_count(), sent);
}

#[test]
fn an_array_of_tasks_runs_each_into_its_own_directory_and_the_summary_names_them() {
    let env = fixture("");
    env.write("one.jsonl", &DATA[..DATA.find("\n").unwrap() + 1]);
    settings(
        &env,
        r#"[{"task_name": "all", "dataset_path": "data.jsonl"},
            {"task_name": "first", "dataset_path": "./one.jsonl", "g_pass_thresholds": [1.0]}]"#,
    );
    let o = go(&env, &["run"]);
    let out = ok(&o);
    assert!(
        out.contains("== task all ==") && out.contains("== task first =="),
        "{out}"
    );
    let dirs = run_dirs(&env.results());
    assert_eq!(dirs.len(), 2);
    let names: Vec<String> = dirs
        .iter()
        .map(|d| manifest(d)["task_name"].as_str().unwrap().to_string())
        .collect();
    assert!(names.contains(&"all".to_string()) && names.contains(&"first".to_string()));
    for d in &dirs {
        let m = manifest(d);
        let want = if m["task_name"] == "all" { 4 } else { 1 };
        assert_eq!(m["dataset"]["problems"], want);
        assert_eq!(m["settings"]["index"], if want == 4 { 0 } else { 1 });
        assert!(
            out.contains(&format!(
                "{}: {}",
                m["task_name"].as_str().unwrap(),
                d.display()
            )),
            "{out}"
        );
    }
    let r = go(&env, &["run", "--resume", "latest"]);
    bad(&r, &["--resume", "2 tasks"]);
    let missing = go(&env, &["run", "--settings", "no-such.json", "--dry-run"]);
    bad(&missing, &["no-such.json", "cannot read the settings file"]);
}

#[test]
fn set_overrides_are_validated_like_the_file_recorded_and_shown_in_the_dry_run() {
    let env = fixture("");
    env.config(Toml {
        sampling: "n = 4\ngreedy = false",
        models: "[[models]]\nname = \"m\"\n[[models]]\nname = \"deepseek-v2.5\"",
        ..Toml::default()
    });
    let o = go(
        &env,
        &[
            "run",
            "--dry-run",
            "--set",
            "sampling.n=2",
            "--set",
            "models.deepseek-v2.5.enabled=false",
        ],
    );
    let out = ok(&o);
    assert!(out.contains("  m\n    4 problems × (2 samples)"), "{out}");
    assert!(!out.contains("  deepseek-v2.5\n"), "{out}");
    assert!(out.contains("override: --set sampling.n=2"), "{out}");
    let cases: &[(&str, &[&str])] = &[
        (
            "sampling.nn=2",
            &[
                "--set sampling.nn=2",
                "unknown key `nn`",
                "did you mean `n`?",
            ],
        ),
        ("sampling.n=two", &["--set sampling.n=two", "invalid type"]),
        ("sampling.n=0", &["--set sampling.n=0", "must be between 1"]),
        (
            "models.m2.enabled=false",
            &[
                "--set models.m2.enabled=false",
                "no [[models]] entry named \"m2\"",
                "did you mean m?",
            ],
        ),
        (
            "api.base_url=ftp://x",
            &["--set api.base_url=ftp://x", "must start with http://"],
        ),
        ("sampling.n", &["--set sampling.n", "KEY=VALUE"]),
        (
            "models.m.temperature=5",
            &["--set models.m.temperature=5: 5 must be between 0 and 2"],
        ),
        (
            "evaluation.grader=judge",
            &["--set evaluation.grader=judge: needs a [judge] table"],
        ),
    ];
    for (set, needles) in cases {
        bad(&go(&env, &["run", "--dry-run", "--set", set]), needles);
    }
    ok(&go(
        &env,
        &[
            "run",
            "--quiet",
            "--set",
            "sampling.n=2",
            "--set",
            "models.deepseek-v2.5.enabled=false",
        ],
    ));
    let m = manifest(&env.run_dir());
    assert_eq!(
        m["overrides"],
        serde_json::json!(["sampling.n=2", "models.deepseek-v2.5.enabled=false"])
    );
    assert_eq!(m["models"]["m"]["sampling"]["n"], 2);
}

#[test]
fn set_reaches_label_and_score_where_it_makes_sense() {
    let env = fixture("");
    ok(&go(&env, &["run", "--quiet"]));
    let dir = env.run_dir();
    let d = dir.to_str().unwrap();
    bad(
        &gpassk()
            .args(["score", d, "--set", "sampling.n=8"])
            .output()
            .unwrap(),
        &["--set sampling.n=8", "only evaluation.* keys"],
    );
    let s = gpassk()
        .args([
            "score",
            d,
            "--quiet",
            "--set",
            "evaluation.answer_extract_regex=[\"最后得数为 (.+)$\"]",
        ])
        .output()
        .unwrap();
    ok(&s);
    let rescored = read(&dir.join("per_problem.csv"));
    ok(&gpassk().args(["score", d, "--quiet"]).output().unwrap());
    assert_ne!(
        read(&dir.join("per_problem.csv")),
        rescored,
        "the override changed the grading"
    );
    let l = go(
        &env,
        &[
            "label",
            "--from-run",
            d,
            "--k",
            "2",
            "--dry-run",
            "--set",
            "models.m.max_tokens=50",
        ],
    );
    assert!(ok(&l).contains("≤"), "{}", both(&l));
    bad(
        &go(
            &env,
            &[
                "label",
                "--from-run",
                d,
                "--dry-run",
                "--set",
                "models.x.n=2",
            ],
        ),
        &["--set models.x.n=2"],
    );
}

#[test]
fn the_demo_config_has_no_settings_json_beside_it() {
    // README command 1 promises the arithmetic demo; a settings.json in configs/ would replace its task.
    let out = gpassk()
        .args(["run", "--config", "configs/local.toml", "--dry-run"])
        .output()
        .unwrap();
    let text = ok(&out);
    assert!(text.contains("dataset arith_demo"), "{text}");
    assert!(!stderr(&out).contains("task settings"), "{}", stderr(&out));
}
