//! `strategy = "mcts"` and the `[search]` table: defaults, per-model overrides, errors with
//! file:line:key and the dry run's call budget (runs themselves: `search_run`).

use crate::common::{ok, Fixture, Toml};
use gpassk::config::{self, AnswerSelect, RewardMode, Strategy, TerminalReward};
use std::path::Path;
use std::time::Duration;

const BASE: &str = r#"[api]
base_url = "http://127.0.0.1:1"
[search]
reward_model_id = "prm"
[[models]]
name = "plain"
[[models]]
name = "tree"
strategy = "mcts"
[evaluation]
dataset = "gsm8k"
"#;

fn load(text: &str) -> Result<config::RunSettings, config::ConfigError> {
    config::load_str(text, Path::new("cfg.toml"))
}

fn err(text: &str) -> String {
    load(text).unwrap_err().to_string()
}

#[test]
fn mcts_models_get_the_issue_defaults_and_sample_models_none() {
    let s = load(BASE).unwrap();
    assert_eq!(s.models[0].strategy, Strategy::Sample);
    assert_eq!(s.models[0].search, None);
    let t = s.models[1].search.clone().expect("search settings");
    assert_eq!(s.models[1].strategy, Strategy::Mcts);
    assert_eq!(
        (
            t.num_simulations,
            t.max_depth,
            t.num_candidates,
            t.policy_max_tokens
        ),
        (32, 8, 4, 1024)
    );
    assert_eq!((t.c_uct, t.policy_temperature), (2.0, 0.7));
    assert_eq!(t.reward_mode, RewardMode::ChatJudge);
    assert_eq!(t.terminal_reward, TerminalReward::Prm);
    assert_eq!(t.answer_select, AnswerSelect::BestValue);
    assert_eq!(t.exec_timeout, Duration::from_secs(5));
    assert_eq!(t.max_calls_per_search, None);
    assert_eq!(t.call_budget(), (1, 32 * 8 * 5));
    assert!(!s.models[1].sampling.greedy, "a search has no greedy unit");
    assert_eq!(t.prefix, gpassk::config::Prefix::Continue);
    // A policy reply carries 4 candidates of up to 1024 tokens: its body limit says so.
    assert_eq!(
        s.models[1].api.max_response_bytes,
        64 * 1024 + 64 * 1024 * 4
    );
}

#[test]
fn a_models_search_table_overrides_the_global_one() {
    let text = BASE.replace(
        "strategy = \"mcts\"\n",
        "strategy = \"mcts\"\n[models.search]\nnum_simulations = 2\nreward_mode = \"none\"\nterminal_reward = \"agreement\"\nanswer_select = \"majority\"\nmax_calls_per_search = 5\n",
    );
    let t = load(&text).unwrap().models[1].search.clone().unwrap();
    assert_eq!((t.num_simulations, t.max_depth), (2, 8));
    assert_eq!(t.reward_mode, RewardMode::None);
    assert_eq!(t.answer_select, AnswerSelect::Majority);
    assert_eq!(t.call_budget(), (1, 5));
}

#[test]
fn bad_search_keys_name_file_line_key_and_suggestion() {
    let e = err(&BASE.replace("reward_model_id", "num_simulation = 3\nreward_model_id"));
    assert!(
        e.starts_with("cfg.toml:4:") && e.contains("did you mean `num_simulations`"),
        "{e}"
    );
    let e = err(&BASE.replace("strategy = \"mcts\"", "strategy = \"mtcs\""));
    assert!(
        e.starts_with("cfg.toml:9:")
            && e.contains("`models[1].strategy`")
            && e.contains("did you mean \"mcts\""),
        "{e}"
    );
    let e = err(&BASE.replace(
        "reward_model_id = \"prm\"",
        "reward_model_id = \"prm\"\nanswer_select = \"most_visits\"",
    ));
    assert!(
        e.starts_with("cfg.toml:5:")
            && e.contains("search.answer_select")
            && e.contains("(for model tree)")
            && e.contains("did you mean \"most_visited\""),
        "{e}"
    );
    let own = BASE.replace(
        "strategy = \"mcts\"\n",
        "strategy = \"mcts\"\n[models.search]\nc_uct = -1.0\n",
    );
    let e = err(&own);
    assert!(
        e.starts_with("cfg.toml:11:")
            && e.contains("`models[1].search.c_uct`: -1 must be between 0 and 100"),
        "{e}"
    );
    let e = err(&BASE.replace("reward_model_id = \"prm\"", "num_candidates = 0"));
    assert!(
        e.starts_with("cfg.toml:4:") && e.contains("num_candidates"),
        "{e}"
    );
    let e = err(&BASE.replace("reward_model_id = \"prm\"", "max_depth = 3"));
    assert!(
        e.starts_with("cfg.toml:3:")
            && e.contains("`search.reward_model_id`: is needed unless `reward_mode = \"none\"`")
            && e.ends_with("(for model tree)"),
        "{e}"
    );
    let e = err(&BASE.replace("reward_model_id = \"prm\"", "reward_mode = \"none\""));
    assert!(
        e.contains("terminal_reward") && e.contains("agreement"),
        "{e}"
    );
    let e = err(&BASE.replace(
        "name = \"plain\"",
        "name = \"plain\"\n[models.search]\nmax_depth = 2",
    ));
    assert!(
        e.contains("`models[0].search`") && e.contains("strategy = \"mcts\""),
        "{e}"
    );
}

fn fixture() -> Fixture {
    let env = Fixture::new("{\"id\": \"1\", \"question\": \"1+1?\", \"answer\": \"2\"}\n{\"id\": \"2\", \"question\": \"2+2?\", \"answer\": \"4\"}\n");
    env.config(Toml {
        sampling: "n = 3\ngreedy = false",
        models: "[[models]]\nname = \"tree\"\nstrategy = \"mcts\"\n",
        evaluation: "[search]\nreward_model_id = \"prm\"\nnum_simulations = 2\nmax_depth = 3\nnum_candidates = 2\n",
        ..Toml::default()
    });
    env
}

#[test]
fn dry_run_prints_the_call_budget() {
    let env = fixture();
    let out = ok(&env.command(&["run", "--dry-run"]).output().unwrap());
    // 2 problems × 3 searches; each 1 to 2 sims × depth 3 × (1 policy + 2 reward) = 18 calls.
    // Completion tokens: 108 calls / 3 per expansion = 36 expansions × (2 × 1024 + 2 × 16).
    assert!(
        out.contains("  tree\n    2 problems × 3 searches → 6 searches\n    6–108 calls (policy + reward), ≤ 74880 completion tokens"),
        "{out}"
    );
    assert!(
        out.contains("total: 6 units in 0 requests + 6–108 search calls\n  ~0 prompt tokens + the searches', ≤ 74880 completion tokens"),
        "{out}"
    );
}

/// A tree search cannot be a batch file: `[api] batch = true` and `--export-batch` are refused
/// for mcts models (exit 2, naming the model and the line), never sent as plain samples.
#[test]
fn searches_never_go_through_the_batch_api() {
    let env = fixture();
    let text = std::fs::read_to_string(env.path().join("config.toml")).unwrap();
    let batched = text.replace(
        "strategy = \"mcts\"\n",
        "strategy = \"mcts\"\nbatch = true\n",
    );
    std::fs::write(env.path().join("config.toml"), &batched).unwrap();
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    let e = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("config.toml:") && e.contains("batch") && e.contains("tree"),
        "{e}"
    );
    std::fs::write(env.path().join("config.toml"), &text).unwrap();
    let file = env.path().join("requests.jsonl");
    let out = env
        .command(&["run", "--export-batch", file.to_str().unwrap()])
        .output()
        .unwrap();
    let e = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("model tree") && e.contains("batch file"), "{e}");
    assert!(!file.exists());
}

/// Without a sandbox an mcts run is refused before anything is written: exit 2 naming the model
/// and the missing bubblewrap, never code run unsandboxed, no run directory left behind.
#[test]
fn no_sandbox_is_bad_input_and_leaves_no_run_directory() {
    let env = fixture();
    let out = env
        .command(&["run", "--quiet"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    let e = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(e.contains("model tree") && e.contains("bubblewrap"), "{e}");
    assert!(!env.results().exists() || crate::common::run_dirs(&env.results()).is_empty());
}

/// A search's reward model has a price of its own: `[search.reward_pricing]` (a model's
/// `[models.search.reward_pricing]` key by key over it), else the shipped price file's, else the
/// policy's when it scores its own steps; unpriced under a budget, a run is refused before anything
/// is sent unless `reward_allow_unpriced = true`.
#[test]
fn the_reward_model_has_its_own_price_and_an_unpriced_one_is_refused_under_a_budget() {
    let reward = |text: &str| {
        let s = load(text).unwrap();
        let p = s.models[1].search.clone().unwrap().reward_price;
        p.map(|p| (p.input, p.output))
    };
    assert_eq!(reward(BASE), None, "prm is in no price file");
    let priced = BASE.replace(
        "reward_model_id = \"prm\"\n",
        "reward_model_id = \"prm\"\n[search.reward_pricing]\ninput = 3\noutput = 4\n",
    );
    assert_eq!(reward(&priced), Some((3_000_000, 4_000_000)));
    let own = priced.replace(
        "strategy = \"mcts\"\n",
        "strategy = \"mcts\"\n[models.search.reward_pricing]\noutput = 5\n",
    );
    assert_eq!(reward(&own), Some((3_000_000, 5_000_000)));
    let shipped = BASE.replace("\"prm\"", "\"gpt-4o-mini\"");
    assert_eq!(reward(&shipped), Some((150_000, 600_000)));
    let itself = BASE.replace("\"prm\"", "\"tree\"") + "[pricing]\ninput = 2\noutput = 2\n";
    assert_eq!(reward(&itself), Some((2_000_000, 2_000_000)));
    let capped = priced.replace("output = 4\n", "output = 4\nmax_cost = 1\n");
    let e = err(&capped);
    assert!(
        e.contains(
            "`search.reward_pricing.max_cost`: reward calls count under the model's own max_cost"
        ),
        "{e}"
    );
    // Under a budget, unpriced: refused, the dry run too, naming where the price goes.
    let env = fixture();
    let cfg = env.path().join("config.toml");
    let text = std::fs::read_to_string(&cfg).unwrap().replace(
        "strategy = \"mcts\"\n",
        "strategy = \"mcts\"\n[models.pricing]\ninput = 1\noutput = 1\nmax_cost = 5\n",
    );
    std::fs::write(&cfg, &text).unwrap();
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    let e = crate::common::stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{e}");
    assert!(
        e.contains("the reward model prm of model tree has no price")
            && e.contains("[search.reward_pricing]")
            && e.contains("reward_allow_unpriced = true in [search]"),
        "{e}"
    );
    let allowed = text.replace("[search]\n", "[search]\nreward_allow_unpriced = true\n");
    std::fs::write(&cfg, allowed).unwrap();
    ok(&env.command(&["run", "--dry-run"]).output().unwrap());
}
