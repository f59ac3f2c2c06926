//! Loading config files: the shipped shape, overrides, defaults and error messages.

use crate::common::repo;
use gpassk::config::{self, ConfigError};
use gpassk::metrics::{MetricKind, Tau};
use std::path::Path;

fn load(text: &str) -> Result<config::RunSettings, ConfigError> {
    config::load_str(text, Path::new("cfg.toml"))
}

fn err(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

const BASE: &str = r#"
[api]
base_url = "http://127.0.0.1:1"
[[models]]
name = "a"
[evaluation]
dataset = "gsm8k"
"#;

#[test]
fn shipped_config_loads_as_is() {
    let s = config::load(&repo().join("configs/config.toml")).unwrap();
    assert_eq!(s.models.len(), 2);
    let m = &s.models[0];
    assert_eq!((m.name.as_str(), m.model_id.as_str()), ("gpt-4o", "gpt-4o"));
    assert_eq!(
        m.api.chat_url(),
        "https://taotoken.net/api/v1/chat/completions"
    );
    assert_eq!(m.api.api_key_env.as_deref(), Some("TAOTOKEN_API_KEY"));
    assert_eq!(m.api.timeout.as_secs(), 120);
    assert_eq!(m.api.max_retries, 3);
    assert_eq!(m.api.concurrency, 8);
    assert_eq!(
        (
            m.sampling.n,
            m.sampling.temperature,
            m.sampling.top_p,
            m.sampling.seed
        ),
        (16, 0.7, 0.95, 42)
    );
    assert!(m.sampling.greedy && !m.sampling.use_n_param);
    let half: Tau = "0.5".parse().unwrap();
    assert_eq!(
        s.evaluation.metrics,
        vec![
            MetricKind::Greedy,
            MetricKind::PassAtK { k: 16 },
            MetricKind::GPassAtK { k: 16, tau: half },
            MetricKind::GPassAtK {
                k: 16,
                tau: "1.0".parse().unwrap()
            },
        ]
    );
    assert_eq!(s.evaluation.ks, vec![16]);
    assert_eq!(
        s.evaluation.taus.len(),
        4,
        "default grid; the metric τs are already in it"
    );
}

#[test]
fn every_shipped_example_config_loads() {
    let dir = repo().join("configs");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        // prices.toml is the shipped price file, not a run config (src/cost.rs tests it).
        if p.extension().is_some_and(|x| x == "toml") && !p.ends_with("prices.toml") {
            config::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn url_rule() {
    let s = load(&BASE.replace("http://127.0.0.1:1", "http://h:8000/v1/")).unwrap();
    assert_eq!(
        s.models[0].api.chat_url(),
        "http://h:8000/v1/chat/completions"
    );
    let s = load(&BASE.replace("http://127.0.0.1:1", "https://api.deepseek.com")).unwrap();
    assert_eq!(
        s.models[0].api.chat_url(),
        "https://api.deepseek.com/v1/chat/completions"
    );
}

#[test]
fn per_model_overrides_apply_to_that_model_only() {
    let text = r#"
[api]
base_url = "http://x"
concurrency = 3
[sampling]
n = 8
temperature = 0.6
[[models]]
name = "a"
[[models]]
name = "b"
model_id = "vendor/b-large"
base_url = "http://y/v1"
temperature = 1.0
n = 48
concurrency = 32
max_tokens = 4096
[[models]]
name = "c"
enabled = false
[evaluation]
dataset = "gsm8k"
k = [4, 8]
"#;
    let s = load(text).unwrap();
    assert_eq!(s.models.len(), 2, "disabled model left out");
    let (a, b) = (&s.models[0], &s.models[1]);
    assert_eq!(
        (a.sampling.temperature, a.sampling.n, a.api.concurrency),
        (0.6, 8, 3)
    );
    assert_eq!(
        (b.sampling.temperature, b.sampling.n, b.api.concurrency),
        (1.0, 48, 32)
    );
    assert_eq!(b.sampling.max_tokens, Some(4096));
    assert_eq!(b.api.chat_url(), "http://y/v1/chat/completions");
    assert_eq!(b.model_id, "vendor/b-large");
    assert_eq!(a.model_id, "a");
    // Default metrics cover every k and the default τ grid.
    assert!(s
        .evaluation
        .metrics
        .contains(&MetricKind::MGPassAtK { k: 8 }));
    assert!(s.evaluation.metrics.contains(&MetricKind::Greedy));
}

#[test]
fn unknown_keys_name_file_line_and_closest_key() {
    let e = err(&BASE.replace("[[models]]", "[sampling]\ntemprature = 0.5\n[[models]]"));
    assert!(e.starts_with("cfg.toml:5:"), "{e}");
    assert!(e.contains("did you mean `temperature`"), "{e}");
    let e = err(&BASE.replace("name = \"a\"", "name = \"a\"\nmodle_id = \"x\""));
    assert!(
        e.contains("cfg.toml:6:") && e.contains("did you mean `model_id`"),
        "{e}"
    );
    let e = err(&BASE.replace("[evaluation]", "[evaluaton]"));
    assert!(e.contains("did you mean `evaluation`"), "{e}");
}

#[test]
fn a_key_written_in_the_file_is_never_echoed() {
    let e = err(&BASE.replace("[[models]]", "api_key = \"sk-live-abcdef\"\n[[models]]"));
    assert!(!e.contains("sk-live"), "{e}");
    assert!(e.contains("api_key_env"), "{e}");
}

#[test]
fn model_names_may_carry_a_plus_for_strategy_variants() {
    let s = load(&BASE.replace("name = \"a\"", "name = \"qwen+mcts\"")).unwrap();
    assert_eq!(s.models[0].name, "qwen+mcts");
    let e = err(&BASE.replace("name = \"a\"", "name = \"qwen mcts\""));
    assert!(e.contains("'-' and '+'"), "{e}");
}

#[test]
fn bad_values_name_the_key_and_line() {
    let cases = [
        (
            BASE.replace("[[models]]", "[sampling]\ntemperature = 3.5\n[[models]]"),
            "temperature",
            "cfg.toml:5",
        ),
        (
            BASE.replace("[[models]]", "[sampling]\ntop_p = 0\n[[models]]"),
            "top_p",
            "cfg.toml:5",
        ),
        (
            BASE.replace("[[models]]", "[sampling]\nn = 0\n[[models]]"),
            "n",
            "cfg.toml:5",
        ),
        (
            BASE.replace("[[models]]", "[sampling]\nn = \"many\"\n[[models]]"),
            "`n`",
            "cfg.toml:5",
        ),
        (
            BASE.replace(
                "dataset = \"gsm8k\"",
                "dataset = \"gsm8k\"\nmetrics = [\"g_pass@16_t2\"]",
            ),
            "metrics",
            "cfg.toml:8",
        ),
        (
            BASE.replace(
                "dataset = \"gsm8k\"",
                "dataset = \"gsm8k\"\nmetrics = [\"gpass@16\"]",
            ),
            "did you mean",
            "cfg.toml:8",
        ),
        (
            BASE.replace("dataset = \"gsm8k\"", "dataset = \"gsm8k\"\nk = [32]"),
            "exceeds n = 16",
            "cfg.toml:8",
        ),
        (
            BASE.replace(
                "dataset = \"gsm8k\"",
                "dataset = \"gsm8k\"\ng_pass_thresholds = [1.5]",
            ),
            "outside",
            "cfg.toml:8",
        ),
        (
            BASE.replace(
                "dataset = \"gsm8k\"",
                "dataset = \"gsm8k\"\nanswer_extract_regex = [\"(\"]",
            ),
            "pattern 0",
            "cfg.toml:8",
        ),
        (
            BASE.replace("http://127.0.0.1:1", "ftp://x"),
            "base_url",
            "cfg.toml:3",
        ),
        (
            BASE.replace("name = \"a\"", "name = \"a/b\""),
            "name",
            "cfg.toml:5",
        ),
        (
            BASE.replace("[evaluation]", "[[models]]\nname = \"a\"\n[evaluation]"),
            "duplicate model name",
            "cfg.toml:",
        ),
        (
            BASE.replace("dataset = \"gsm8k\"", ""),
            "dataset",
            "cfg.toml:",
        ),
    ];
    for (text, needle, loc) in cases {
        let e = err(&text);
        assert!(e.contains(needle), "{needle}: {e}");
        assert!(e.starts_with(loc), "{loc}: {e}");
    }
}

#[test]
fn thresholds_accept_numbers_strings_and_fractions_exactly() {
    let s = load(&BASE.replace(
        "dataset = \"gsm8k\"",
        "dataset = \"gsm8k\"\ng_pass_thresholds = [0.28, \"1/3\", 1.0]\nk = [16]",
    ))
    .unwrap();
    let texts: Vec<&str> = s.evaluation.taus.iter().map(|t| t.text()).collect();
    assert_eq!(texts, ["0.28", "1/3", "1.0"]);
    assert_eq!(s.evaluation.taus[0].threshold(25), 7);
}
