//! `gpassk calc` as users call it: table, JSON schema, and bad input.

use crate::common::run as gpassk;

#[test]
fn json_is_one_object_with_exact_fractions() {
    let out = gpassk(&[
        "calc", "--n", "48", "--c", "24", "--k", "16", "--tau", "0.5", "--tau", "1/3", "--json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.trim().lines().count(), 1);
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (v["n"].as_u64(), v["c"].as_u64(), v["k"].as_u64()),
        (Some(48), Some(24), Some(16))
    );
    assert_eq!(v["pass_at_k"]["exact"], "3065856/3065857");
    let g = v["g_pass_at_k"].as_array().unwrap();
    assert_eq!(g.len(), 2);
    assert_eq!(g[0]["tau"], "0.5");
    assert_eq!(g[0]["threshold"], 8);
    assert_eq!(g[0]["exact"], "1900664/3065857");
    assert!((g[0]["value"].as_f64().unwrap() - 0.619945).abs() < 1e-6);
    assert_eq!(g[1]["tau"], "1/3");
    assert_eq!(g[1]["threshold"], 6);
    assert_eq!(v["mg_pass_at_k"]["exact"], "245157/3065857");
}

#[test]
fn integers_print_as_plain_text_and_default_grid_has_four_taus() {
    let out = gpassk(&["calc", "--n", "16", "--c", "15", "--k", "16", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass_at_k"]["exact"], "1");
    let g = v["g_pass_at_k"].as_array().unwrap();
    let taus: Vec<&str> = g.iter().map(|x| x["tau"].as_str().unwrap()).collect();
    assert_eq!(taus, ["0.25", "0.5", "0.75", "1.0"]);
    assert_eq!(g[3]["exact"], "0");
    assert_eq!(g[3]["value"], 0.0);
    assert_eq!(v["mg_pass_at_k"]["exact"], "7/8");
}

#[test]
fn table_shows_every_metric() {
    let out = gpassk(&["calc", "--n", "16", "--c", "8", "--k", "4"]);
    assert_eq!(out.status.code(), Some(0));
    let s = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "pass@4",
        "G-Pass@4_0.25",
        "G-Pass@4_1.0",
        "mG-Pass@4",
        "0.961538",
        "93/130",
        "21/130",
    ] {
        assert!(s.contains(needle), "missing {needle} in\n{s}");
    }
}

#[test]
fn exact_threshold_for_float_trap() {
    let out = gpassk(&[
        "calc", "--n", "50", "--c", "20", "--k", "25", "--tau", "0.28", "--json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["g_pass_at_k"][0]["threshold"], 7);
}

#[test]
fn bad_arguments_exit_2_with_an_error_line_first() {
    for args in [
        vec!["calc", "--n", "4", "--c", "5", "--k", "2"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "5"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "0"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "2", "--tau", "1.5"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "2", "--tau", "abc"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "2", "--tau", "-0.5"],
        vec!["calc", "--n", "x", "--c", "2", "--k", "2"],
        vec!["calc", "--n", "4", "--c", "2"],
        vec!["calc", "--n", "4", "--c", "2", "--k", "2", "--bogus"],
    ] {
        let out = gpassk(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert!(err.starts_with("error: "), "{err}");
        // clap's usage errors keep clap's layout (error, usage, hint); gpassk's own are one line.
        if !err.contains("For more information, try '--help'") {
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        }
        assert!(out.stdout.is_empty());
    }
}
