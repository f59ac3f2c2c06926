//! Cost ledger against the fake server: prices, shares of multi-choice requests, dry-run bounds.

use crate::common::{ok, read, Fixture, Toml};
use crate::run_fake::{smart_reply, sums};
use fake_openai::FakeServer;
use serde_json::Value;

/// Two models: `shared` asks for 2 choices per request (each sample holds half the usage) and
/// is priced by its own `[models.pricing]` (the currency still comes from `[pricing]`, key by
/// key); `single` takes the global `[pricing]`.
const MODELS: &str = "[[models]]\nname = \"shared\"\nmodel_id = \"m1\"\nuse_n_param = true\nn_per_request = 2\n[models.pricing]\ninput = 3\noutput = 15\n\n[[models]]\nname = \"single\"\nmodel_id = \"m2\"\n\n[pricing]\ncurrency = \"EUR\"\ninput = 0.5\noutput = 2\n";

fn fixture() -> Fixture {
    let env = Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(smart_reply));
    env.config(Toml {
        sampling: "n = 4\ntemperature = 0.7\nseed = 1\nmax_tokens = 64",
        models: MODELS,
        ..Toml::default()
    });
    env
}

/// Σ over the checkpoint's usable records of (prompt × input + completion × output) / choices,
/// in micro-units per million tokens (divide by 10¹² for currency units).
fn hand_cost(checkpoint: &str, input: u64, output: u64) -> f64 {
    let mut total = 0.0;
    for line in checkpoint.lines() {
        let r: Value = serde_json::from_str(line).unwrap();
        if r["outcome"] == "api_error" {
            continue;
        }
        let u = &r["usage"];
        let (p, c) = (
            u["prompt_tokens"].as_u64().unwrap(),
            u["completion_tokens"].as_u64().unwrap(),
        );
        let share = r["choices_in_request"].as_u64().unwrap() as f64;
        total += (p * input + c * output) as f64 / share;
    }
    total / 1e12
}

/// The (min, max) of a dry run's cost line for `model` (in the block under its name).
fn estimate(dry: &str, model: &str) -> (f64, f64) {
    let at = dry.find(&format!("  {model}\n")).unwrap();
    let line = dry[at..]
        .lines()
        .find(|l| l.starts_with("    cost estimate: "))
        .unwrap();
    let nums: Vec<f64> = line
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    (nums[0], nums[1])
}

#[test]
fn cost_matches_the_recorded_usage_and_the_dry_run_brackets_it() {
    let env = fixture();
    let dry = ok(&env.command(&["run", "--dry-run"]).output().unwrap());
    assert!(
        dry.contains("cost estimate:") && dry.contains("EUR"),
        "{dry}"
    );
    // The closing total adds the models' bounds.
    let (shared, single) = (estimate(&dry, "shared"), estimate(&dry, "single"));
    let total = dry.lines().find(|l| l.starts_with("  cost ")).unwrap();
    let sum: Vec<f64> = total
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!((sum[0] - shared.0 - single.0).abs() < 2e-6, "{dry}");
    assert!((sum[1] - shared.1 - single.1).abs() < 2e-6, "{dry}");
    let table = ok(&env.command(&["run", "--quiet"]).output().unwrap());
    let dir = env.run_dir();
    let manifest: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    for (model, input, output, currency) in [
        ("shared", 3_000_000, 15_000_000, "EUR"),
        ("single", 500_000, 2_000_000, "EUR"),
    ] {
        let cost = &manifest["models"][model]["cost"];
        let checkpoint = read(&dir.join("checkpoints").join(format!("{model}.jsonl")));
        let want = hand_cost(&checkpoint, input, output);
        let total = cost["total"].as_f64().unwrap();
        assert!(
            want > 0.0 && (total - want).abs() < 1e-12,
            "{model}: {total} vs {want}"
        );
        assert_eq!(cost["currency"], currency);
        assert_eq!(cost["price_source"], "config");
        assert_eq!(cost["samples_without_usage"], 0);
        // Every planned unit (4 samples + greedy per problem) finished and holds its share.
        let units = manifest["models"][model]["ok"].as_u64().unwrap()
            + manifest["models"][model]["truncated"].as_u64().unwrap();
        assert_eq!(units, 25);
        let per_sample = cost["per_sample"].as_f64().unwrap();
        assert!((per_sample - total / 25.0).abs() < 1e-12, "{per_sample}");
        assert!((cost["per_problem"].as_f64().unwrap() - total / 5.0).abs() < 1e-12);
        let (min, max) = estimate(&dry, model);
        assert!(
            min <= total && total <= max,
            "{model}: {min} ≤ {total} ≤ {max}?"
        );
    }
    // Two samples per request (greedy goes alone): each sample holds half its request's usage.
    let shared = read(&dir.join("checkpoints/shared.jsonl"));
    let pairs = shared
        .lines()
        .filter(|l| l.contains("\"choices_in_request\":2"))
        .count();
    assert_eq!(pairs, 20);
    // The cost line, wrapped to the terminal, joined again.
    let footer = table.replace("\n  ", " ");
    let footer = footer
        .lines()
        .find(|l| l.starts_with("cost: "))
        .expect("a cost line");
    assert!(
        footer.contains("shared ") && footer.contains(" EUR (") && footer.contains("per sample"),
        "{footer}"
    );
    assert!(read(&dir.join("report.md")).contains("cost: shared "));
    let metrics = read(&dir.join("metrics.json"));
    assert!(metrics.contains("\"cost\""), "metrics.json has no cost");
}

#[test]
fn a_bad_price_names_its_key() {
    let env = Fixture::new(&sums(1));
    env.config(Toml {
        models: "[[models]]\nname = \"a\"\n[models.pricing]\ninput = -1\noutput = 2\n",
        ..Toml::default()
    });
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pricing.input") && err.contains("price per million"),
        "{err}"
    );
    assert!(!err.contains("panicked"));
}

#[test]
fn shipped_prices_apply_by_model_id_and_unknown_models_stay_unpriced() {
    let env = Fixture::new(&sums(2));
    env.config(Toml {
        sampling: "n = 2\nmax_tokens = 100",
        models: "[[models]]\nname = \"mini\"\nmodel_id = \"gpt-4o-mini\"\n[[models]]\nname = \"other\"\nmodel_id = \"no-such-model\"\n",
        ..Toml::default()
    });
    let dry = ok(&env.command(&["run", "--dry-run"]).output().unwrap());
    assert!(dry.contains("price: prices.toml (as of 20"), "{dry}");
    assert_eq!(dry.matches("cost estimate:").count(), 1, "{dry}");
}

/// One model at 1000 per million tokens (so a request costs a few hundredths), 25 units.
fn budget_config(env: &Fixture, max_cost: &str) {
    let models = format!(
        "[[models]]\nname = \"m\"\n[models.pricing]\ninput = 1000\noutput = 1000\nmax_cost = {max_cost}\n"
    );
    env.config(Toml {
        sampling: "n = 4\ntemperature = 0.7\nseed = 3\nmax_tokens = 64",
        models: &models,
        ..Toml::default()
    });
}

#[test]
fn a_budget_stops_before_it_is_exceeded_and_a_raised_one_resumes() {
    let env = Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(smart_reply));
    budget_config(&env, "0.3");
    let out = env.command(&["run", "--quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", crate::common::both(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("budget reached: max_cost 0.300000 USD"),
        "{err}"
    );
    assert!(
        err.contains("units left could cost up to") && err.contains("--resume"),
        "{err}"
    );
    let dir = env.run_dir();
    let manifest: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    let m = &manifest["models"]["m"];
    let spent = m["cost"]["total"].as_f64().unwrap();
    assert!(spent > 0.0 && spent <= 0.3, "{spent}");
    let first = env.server().request_count();
    assert!(first > 0 && first < 25, "{first} requests");
    assert_eq!(m["status"], "failed");

    budget_config(&env, "100");
    let dir_arg = dir.display().to_string();
    ok(&env
        .command(&["run", "--quiet", "--resume", &dir_arg])
        .output()
        .unwrap());
    let manifest: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    let m = &manifest["models"]["m"];
    assert_eq!(
        (m["status"].as_str(), m["ok"].as_u64()),
        (Some("complete"), Some(25))
    );
    // Each unit was asked for once across both runs, and the ledger covers both.
    assert_eq!(env.server().request_count(), 25);
    assert!(m["cost"]["total"].as_f64().unwrap() > spent);
}

#[test]
fn a_budget_needs_a_price_and_max_tokens() {
    let env = Fixture::new(&sums(1));
    env.config(Toml {
        models: "[[models]]\nname = \"a\"\n[models.pricing]\nmax_cost = 1\n",
        ..Toml::default()
    });
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pricing.max_cost`: needs a price"));
    env.config(Toml {
        models: "[[models]]\nname = \"a\"\n[models.pricing]\ninput = 1\noutput = 1\nmax_cost = 1\n",
        ..Toml::default()
    });
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs [sampling] max_tokens"));
}

/// Two models at 1000 per million tokens sharing `[evaluation] max_cost`, 25 units each.
fn run_budget_config(env: &Fixture, max_cost: &str) {
    let evaluation = format!("max_cost = {max_cost}");
    env.config(Toml {
        sampling: "n = 4\ntemperature = 0.7\nseed = 3\nmax_tokens = 64",
        models: "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\n[pricing]\ninput = 1000\noutput = 1000\n",
        evaluation: &evaluation,
        ..Toml::default()
    });
}

fn total_cost(dir: &std::path::Path) -> (f64, Value) {
    let manifest: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    let total = ["a", "b"]
        .iter()
        .map(|m| manifest["models"][m]["cost"]["total"].as_f64().unwrap())
        .sum();
    (total, manifest)
}

#[test]
fn a_run_wide_budget_caps_all_models_together_and_a_raised_one_resumes() {
    let env = Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(smart_reply));
    run_budget_config(&env, "0.3");
    let out = env.command(&["run", "--quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", crate::common::both(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("budget reached: [evaluation] max_cost 0.300000 USD (spent ")
            && err.contains("units left could cost up to"),
        "{err}"
    );
    let dir = env.run_dir();
    let (spent, _) = total_cost(&dir);
    // Per-model ledgers of 0.3 each would allow up to 0.6 in total: the sum proves one shared ledger.
    assert!(spent > 0.0 && spent <= 0.3, "{spent}");
    let first = env.server().request_count();
    assert!(first > 0 && first < 50, "{first} requests");

    run_budget_config(&env, "100");
    let dir_arg = dir.display().to_string();
    ok(&env
        .command(&["run", "--quiet", "--resume", &dir_arg])
        .output()
        .unwrap());
    let (total, manifest) = total_cost(&dir);
    for m in ["a", "b"] {
        assert_eq!(manifest["models"][m]["status"], "complete", "{m}");
    }
    assert_eq!(env.server().request_count(), 50);
    assert!(total > spent, "{total} after {spent}");
}

#[test]
fn a_resume_counts_what_the_checkpoints_already_cost_against_the_run_budget() {
    let env = Fixture::new(&sums(5)).with_server(FakeServer::builder().responder(smart_reply));
    run_budget_config(&env, "0.3");
    let out = env.command(&["run", "--quiet"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", crate::common::both(&out));
    let first = env.server().request_count();
    let dir_arg = env.run_dir().display().to_string();
    // Same cap: the checkpoints already used it, so the resume sends (almost) nothing more.
    let out = env
        .command(&["run", "--quiet", "--resume", &dir_arg])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", crate::common::both(&out));
    let (spent, _) = total_cost(&env.run_dir());
    assert!(spent <= 0.3, "{spent}");
    let now = env.server().request_count();
    assert!(now >= first && now < 50, "{first} then {now} requests");
}

#[test]
fn a_run_budget_needs_every_model_priced_with_max_tokens_in_one_currency() {
    let env = Fixture::new(&sums(1));
    let cases = [
        (
            "n = 1\nmax_tokens = 8",
            "[[models]]\nname = \"a\"\nmodel_id = \"no-such\"\n",
            "needs a price for model \"a\"",
        ),
        (
            "n = 1",
            "[[models]]\nname = \"a\"\n[pricing]\ninput = 1\noutput = 1\n",
            "needs [sampling] max_tokens for model \"a\"",
        ),
        (
            "n = 1\nmax_tokens = 8",
            "[[models]]\nname = \"a\"\n[[models]]\nname = \"b\"\n[models.pricing]\ncurrency = \"EUR\"\n[pricing]\ninput = 1\noutput = 1\n",
            "needs one currency",
        ),
    ];
    for (sampling, models, want) in cases {
        env.config(Toml {
            sampling,
            models,
            evaluation: "max_cost = 1",
            ..Toml::default()
        });
        let out = env.command(&["run", "--dry-run"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{models}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("evaluation.max_cost") && err.contains(want),
            "{err}"
        );
    }
    env.config(Toml {
        sampling: "n = 1\nmax_tokens = 8",
        models: "[[models]]\nname = \"a\"\n[pricing]\ninput = 1\noutput = 1\n",
        evaluation: "max_cost = -1",
        ..Toml::default()
    });
    let out = env.command(&["run", "--dry-run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_html_report_shows_a_cost_table_from_the_ledger() {
    let env = fixture();
    ok(&env.command(&["run", "--quiet"]).output().unwrap());
    let dir = env.run_dir();
    let html = read(&dir.join("report.html"));
    let manifest: Value = serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    assert!(html.contains("<h2>Cost</h2>"), "no cost section");
    assert!(html.contains("<th class=\"t\">Price source</th>"), "{html}");
    for model in ["shared", "single"] {
        let c = &manifest["models"][model]["cost"];
        let row = format!(
            "<tr><td>{model}</td><td>{:.6}</td><td>{:.6}</td><td>{:.6}</td><td class=\"t\">EUR</td><td>0</td><td class=\"t\">config</td></tr>",
            c["total"].as_f64().unwrap(),
            c["per_sample"].as_f64().unwrap(),
            c["per_problem"].as_f64().unwrap()
        );
        assert!(html.contains(&row), "{model}: {row} not in the report");
    }
    // Unpriced runs get no cost section.
    let plain = Fixture::new(&sums(1)).with_server(FakeServer::builder().responder(smart_reply));
    plain.config(Toml {
        models: "[[models]]\nname = \"a\"\nmodel_id = \"no-such\"\n",
        ..Toml::default()
    });
    ok(&plain.command(&["run", "--quiet"]).output().unwrap());
    assert!(!read(&plain.run_dir().join("report.html")).contains("<h2>Cost</h2>"));
}
