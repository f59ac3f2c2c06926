//! `gpassk compare` of the weekly job (six long-named models, 30 problems, n = 16, one model much
//! weaker, one a little, every fingerprint changed) as its users rely on it: filters that never
//! change a flag, the verdicts first and one screen at 80 columns, colour only on a terminal.

use crate::common::ok;
use crate::common::weekly::{self, arg};
use std::path::PathBuf;

/// (model, metric) → (p (Holm), flag) of compare's JSON rows.
fn flags(json: &str) -> Vec<((String, String), (serde_json::Value, String))> {
    let rows: serde_json::Value = serde_json::from_str(json).unwrap();
    (rows.as_array().unwrap().iter())
        .map(|r| {
            let key = (
                r["model"].as_str().unwrap().to_string(),
                r["metric"].as_str().unwrap().to_string(),
            );
            (
                key,
                (r["p_holm"].clone(), r["flag"].as_str().unwrap().to_string()),
            )
        })
        .collect()
}

/// `--metric` and `--k` narrow the rows shown, never Holm's family: every shown row keeps the
/// p-value and flag it has without them, and a filter on exploratory metrics flags nothing.
#[test]
fn filters_never_change_a_p_value_or_a_flag() {
    let (_env, [a, b]) = weekly::fixture();
    let compare = |extra: &[&str]| {
        let mut args = vec!["compare", arg(&a), arg(&b), "--format", "json"];
        args.extend_from_slice(extra);
        ok(&weekly::at(80, &args))
    };
    let all = flags(&compare(&[]));
    assert!(all.iter().any(|(_, (_, f))| f == "REGRESSED"), "{all:?}");
    for filter in [
        &["--metric", "G-Pass@16_1.0,mG-Pass@16"][..],
        &["--metric", "Pass@16"],
        &["--k", "16"],
        &["--metric", "G-Pass@4_0.5,G-Pass@16_1.0"],
    ] {
        let shown = flags(&compare(filter));
        assert!(!shown.is_empty(), "{filter:?}");
        for (key, value) in &shown {
            let whole = all.iter().find(|(k, _)| k == key).map(|(_, v)| v);
            assert_eq!(Some(value), whole, "{filter:?} {key:?}");
        }
    }
    // A filter naming only exploratory metrics shows them unflagged, whatever their p-values.
    let exploratory = flags(&compare(&["--metric", "G-Pass@4_0.5"]));
    assert!(
        exploratory
            .iter()
            .all(|(_, (p, f))| p.is_null() && f == "exploratory"),
        "{exploratory:?}"
    );
    // --fail-on-regression reads the same flags: a filter cannot make it fire, or stop it firing
    // for a row it shows.
    let gate = |extra: &[&str]| {
        let mut args = vec!["compare", arg(&a), arg(&b), "--fail-on-regression", "5"];
        args.extend_from_slice(extra);
        weekly::at(80, &args).status.code()
    };
    assert_eq!(gate(&[]), Some(1));
    assert_eq!(gate(&["--metric", "G-Pass@4_0.5"]), Some(0));
}
/// Builds the weekly runs into `GPASSK_WEEKLY_DIR` (for looking at them by hand).
#[test]
#[ignore = "writes the weekly runs for a person to look at (GPASSK_WEEKLY_DIR)"]
pub(crate) fn write_weekly_runs() {
    let root = PathBuf::from(std::env::var("GPASSK_WEEKLY_DIR").expect("GPASSK_WEEKLY_DIR"));
    std::fs::create_dir_all(&root).unwrap();
    weekly::two_weeks(&root);
}

/// Serves week `GPASSK_WEEK` (1 or 2) until the file `GPASSK_SERVE_UNTIL` is removed, its base
/// URL written to that file: for a live run in a terminal.
#[test]
#[ignore = "serves the weekly job's server for a person to run against"]
fn serve_week() {
    let week: usize = std::env::var("GPASSK_WEEK").map_or(1, |w| w.parse().unwrap());
    let flag = PathBuf::from(std::env::var("GPASSK_SERVE_UNTIL").expect("GPASSK_SERVE_UNTIL"));
    let slow = weekly::server(week).faults(|_| {
        Some(fake_openai::Fault::Hang(std::time::Duration::from_millis(
            40,
        )))
    });
    let server = fake_openai::FakeServer::start_blocking(slow);
    std::fs::write(&flag, server.base_url()).unwrap();
    while flag.exists() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}
