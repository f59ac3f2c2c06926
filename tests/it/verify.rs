//! The process reward model as verifier: the `[verifier]` table (defaults, errors naming the
//! field, exit 2).

use crate::common::{Fixture, Toml};
use gpassk::config::{self, Aggregation, RewardMode, DEFAULT_MAX_STEPS};
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
