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
/// `text` without ANSI escape sequences.
fn plain(text: &str) -> String {
    gpassk::util::unpainted(text)
}

/// Issue 40: compare of the weekly job at 80 columns is one screen of verdicts, then one table:
/// at most 50 lines, every model's verdict (every flagged metric named, never "and 1 more") in
/// the first 24, the fingerprint change of every model said once, the significant rows named
/// on the last line, and nothing wider than 80 but the run paths.
#[test]
fn the_weekly_compare_fits_one_screen_of_verdicts_and_one_table() {
    let (_env, [a, b]) = weekly::fixture();
    let out = weekly::at(80, &["compare", arg(&a), arg(&b), "--fail-on-drift"]);
    assert_eq!(out.status.code(), Some(1), "drift fails the gate");
    let text = crate::common::stdout(&out);
    let err = crate::common::stderr(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() <= 50, "{} lines:\n{text}", lines.len());
    assert!(!text.contains('\x1b'), "no colour in a pipe");
    for line in &lines[2..] {
        assert!(line.chars().count() <= 80, "{line}");
    }
    // Every verdict in the first screen, under its model's name: short = full.
    let screen = lines[..24].join("\n");
    for (name, _, _) in weekly::MODELS {
        let at = (lines.iter())
            .position(|l| l.ends_with(&format!(" = {name}")))
            .unwrap_or_else(|| panic!("{name}:\n{text}"));
        assert!(
            at + 1 < 24,
            "{name}'s verdict below the first screen:\n{text}"
        );
        assert!(lines[at + 1].starts_with("  "), "{text}");
    }
    let llama = (lines.iter())
        .position(|l| l.ends_with(&format!(" = {}", weekly::MODELS[0].0)))
        .unwrap();
    assert!(lines[llama + 1].starts_with("  ▼ REGRESSED: "), "{text}");
    assert!(!text.contains(" more"), "{text}");
    // The same fingerprint change of all six models, once, and once on stderr.
    let shared = "all 6 models: system fingerprint: fp_week1 → fp_week2 (100.0% of samples)";
    assert_eq!(text.matches("fp_week1").count(), 1, "{text}");
    assert!(screen.contains(shared), "{text}");
    assert_eq!(err.matches("fp_week1").count(), 1, "{err}");
    assert!(err.contains(&format!("drift: {shared}")), "{err}");
    // One table of the tested family: a row per model and headline metric.
    let rows = (lines.iter())
        .filter(|l| l.contains(" → ") && !l.contains("fingerprint") && !l.starts_with("model "))
        .count();
    assert_eq!(rows, 6 * 5, "{text}");
    assert!(!lines.iter().any(|l| l.ends_with("exploratory")), "{text}");
    // The last line names the significant rows, the flagged fall of the first model among them.
    let last = text
        .trim_end()
        .rsplit_once("\nsignificant")
        .map(|(_, l)| l)
        .unwrap_or_default();
    assert!(last.starts_with(" ("), "{text}");
    let short = lines[llama].split(" = ").next().unwrap();
    assert!(last.contains(&format!("{short} Greedy ▼")), "{text}");
    // Wider terminals give the names more room: whole at 120.
    let wide = crate::common::stdout(&weekly::at(120, &["compare", arg(&a), arg(&b)]));
    for (name, _, _) in weekly::MODELS {
        assert!(wide.contains(&format!("\n{name}  ")), "{name}:\n{wide}");
    }
    // --all adds the exploratory rows, never flagged.
    let all = crate::common::stdout(&weekly::at(80, &["compare", arg(&a), arg(&b), "--all"]));
    assert!(
        all.contains("exploratory") && all.lines().count() > 80,
        "{all}"
    );
    assert!(
        !all.lines()
            .any(|l| l.contains("exploratory") && l.contains('▼')),
        "{all}"
    );
}

/// Colour only where a person reads it: on a terminal (or forced with CLICOLOR_FORCE), never in
/// a pipe or a file, never with NO_COLOR; the text is the same either way.
#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let (_env, [a, b]) = weekly::fixture();
    let run = |env: &[(&str, &str)]| {
        let mut c = crate::common::gpassk();
        c.args(["compare", arg(&a), arg(&b)]).env("COLUMNS", "80");
        c.env_remove("NO_COLOR").env_remove("CLICOLOR_FORCE");
        for (k, v) in env {
            c.env(k, v);
        }
        crate::common::stdout(&c.output().unwrap())
    };
    let piped = run(&[]);
    assert!(!piped.contains('\x1b'), "{piped}");
    let forced = run(&[("CLICOLOR_FORCE", "1")]);
    assert!(
        forced.contains("\x1b[1;31m▼\x1b[0m \x1b[1;31mREGRESSED\x1b[0m"),
        "{forced}"
    );
    assert_eq!(plain(&forced), piped);
    assert!(!run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\x1b'));
    // On a terminal (a pseudo-terminal from `script`), colour without asking; not with NO_COLOR.
    let gpassk = env!("CARGO_BIN_EXE_gpassk");
    let tty = |no_color: bool| {
        let set = if no_color { "NO_COLOR=1 " } else { "" };
        let cmd = format!("{set}COLUMNS=80 {gpassk} compare {} {}", arg(&a), arg(&b));
        let out = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env("TERM", "xterm")
            .output()
            .expect("script(1) from util-linux");
        String::from_utf8_lossy(&out.stdout).replace('\r', "")
    };
    let on_tty = tty(false);
    assert!(on_tty.contains("\x1b[1;31mREGRESSED\x1b[0m"), "{on_tty}");
    assert_eq!(plain(&on_tty), piped);
    assert!(!tty(true).contains('\x1b'));
}

/// Builds the weekly runs into `GPASSK_WEEKLY_DIR` (for looking at them by hand).
#[test]
#[ignore = "writes the weekly runs for a person to look at (GPASSK_WEEKLY_DIR)"]
pub(crate) fn write_weekly_runs() {
    let root = PathBuf::from(std::env::var("GPASSK_WEEKLY_DIR").expect("GPASSK_WEEKLY_DIR"));
    std::fs::create_dir_all(&root).unwrap();
    weekly::two_weeks(&root);
}

/// Serves week `GPASSK_WEEK` (1 or 2), each reply `GPASSK_SERVE_DELAY_MS` late (40), until the
/// file `GPASSK_SERVE_UNTIL` is removed, its base URL written to that file: for a live run in a
/// terminal.
#[test]
#[ignore = "serves the weekly job's server for a person to run against"]
fn serve_week() {
    let week: usize = std::env::var("GPASSK_WEEK").map_or(1, |w| w.parse().unwrap());
    let flag = PathBuf::from(std::env::var("GPASSK_SERVE_UNTIL").expect("GPASSK_SERVE_UNTIL"));
    let delay: u64 = std::env::var("GPASSK_SERVE_DELAY_MS").map_or(40, |d| d.parse().unwrap());
    let slow = weekly::server(week).faults(move |_| {
        Some(fake_openai::Fault::Hang(std::time::Duration::from_millis(
            delay,
        )))
    });
    let server = fake_openai::FakeServer::start_blocking(slow);
    std::fs::write(&flag, server.base_url()).unwrap();
    while flag.exists() {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `gpassk plan` of the weekly job (six long-named models) at 80 columns: no line wider, each
/// long name shortened and spelled out once where its plan starts, one compact row per metric,
/// each mark and note said once per model, not once per metric.
#[test]
fn the_weekly_plan_fits_80_columns() {
    let (_env, [a, _]) = weekly::fixture();
    let plan = [
        "plan",
        "--from",
        arg(&a),
        "--detect",
        "10",
        "--metric",
        "G-Pass@16_1.0",
    ];
    let out = weekly::at(80, &plan);
    let text = crate::common::stdout(&out);
    assert!(
        out.status.code() == Some(0) || out.status.code() == Some(1),
        "{text}"
    );
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} wide: {line}\n{text}",
            line.chars().count()
        );
    }
    for (name, _, _) in weekly::MODELS {
        let header = (text.lines())
            .filter(|l| l.ends_with(&format!(" = {name}")))
            .count();
        assert_eq!(header, 1, "{name}:\n{text}");
    }
    // One row per planned metric and model, under one header per model.
    let headers = text
        .lines()
        .filter(|l| l.trim_start().starts_with("metric "))
        .count();
    assert_eq!(headers, 6, "{text}");
    let rows = text
        .lines()
        .filter(|l| l.trim_start().starts_with("G-Pass@16_1.0 "))
        .count();
    assert_eq!(rows, 6, "{text}");
    for mark in ["* within-problem variance", "moves: share of problems"] {
        assert!(text.matches(mark).count() <= 6, "{mark}:\n{text}");
    }
}
