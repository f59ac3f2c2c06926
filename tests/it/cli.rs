//! The top-level command line: usage, help with examples, completions, man pages; the fake
//! server is not part of the product.

use crate::common::{run, stderr, stdout};

#[test]
fn serve_fake_is_not_a_subcommand() {
    let out = run(&["serve-fake", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("serve-fake"), "{err}");
    assert!(err.starts_with("error: "), "{err}");
}

#[test]
fn help_does_not_mention_serve_fake() {
    let out = run(&["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert!(help.contains("calc"), "{help}");
    assert!(!help.contains("serve-fake"), "{help}");
}

#[test]
fn bare_gpassk_prints_usage_and_exits_2() {
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("Usage: gpassk <COMMAND>"), "{err}");
    assert!(err.contains("Examples:"), "{err}");
    assert!(err.lines().count() > 10, "help must keep its layout: {err}");
}

#[test]
fn every_subcommand_help_has_examples() {
    for sub in [
        "run", "score", "report", "audit", "calc", "label", "datasets", "merge",
    ] {
        let out = run(&[sub, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{sub}");
        let help = stdout(&out);
        assert!(help.contains("Examples:\n  gpassk "), "{sub}: {help}");
    }
}

#[test]
fn completions_and_man_pages_are_generated() {
    for (shell, marker) in [
        ("bash", "_gpassk()"),
        ("zsh", "#compdef gpassk"),
        ("fish", "complete -c gpassk"),
    ] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("score"), "{shell}");
    }
    let man = stdout(&run(&["man"]));
    assert!(man.contains(".TH gpassk 1"), "{man}");
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["man", "--out", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    for page in ["gpassk.1", "gpassk-run.1", "gpassk-score.1"] {
        assert!(dir.path().join(page).is_file(), "{page}");
    }
}

/// `gpassk … | head`: a reader that goes away is no error (exit 0, nothing on stderr), whether
/// the command writes its output at once or line by line (`println!`).
#[test]
fn a_closed_stdout_pipe_is_not_an_error() {
    let dry_run = ["run", "--config", "configs/local.toml", "--dry-run"];
    for args in [
        &["datasets", "--json"][..],
        &["completions", "bash"],
        &dry_run,
    ] {
        let mut child = crate::common::gpassk()
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Closed before the program has written anything (it loads every dataset first).
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

/// Issue 25 item 7: where a user looks for what G-Pass@k_τ is (the top help, `calc --help`,
/// the man pages), the tool says it.
#[test]
fn the_help_and_the_man_pages_say_what_the_metrics_are() {
    let top = stdout(&run(&["--help"]));
    assert!(
        top.contains("G-Pass@k_τ: the chance that ⌈τ·k⌉ or more of k samples drawn from n"),
        "{top}"
    );
    let calc = crate::common::gpassk()
        .args(["calc", "--help"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let calc = stdout(&calc);
    for said in [
        "at least m = ⌈τ·k⌉ of the k are correct",
        "drawn again without replacement",
        "τ = 0 counts\n               as m = 1, which is pass@k",
        "  mG-Pass@k    (2/k)·Σ G-Pass@k over m = ⌈k/2⌉+1 … k",
        "  m            the threshold: how many of the k must be correct",
    ] {
        assert!(calc.contains(said), "calc --help lacks {said:?}:\n{calc}");
    }
    assert!(calc.lines().all(|l| l.chars().count() <= 80), "{calc}");
    let man = stdout(&run(&["man"]));
    let dir = tempfile::tempdir().unwrap();
    run(&["man", "--out", dir.path().to_str().unwrap()]);
    let calc_page = crate::common::read(&dir.path().join("gpassk-calc.1"));
    for page in [&man, &calc_page] {
        let section = &page[page.find(".SH METRICS\n").expect("a METRICS section")..];
        assert!(section.contains(".TP\n\\fBG\\-Pass@k_τ\\fR\n"), "{section}");
        assert!(section.contains("\\fBmG\\-Pass@k\\fR"), "{section}");
        assert!(
            section.contains(".TP\n\\fBm\\fR\nthe threshold"),
            "{section}"
        );
        assert!(
            section.find(".SH OPTIONS") > Some(0),
            "before OPTIONS: {page}"
        );
    }
}

/// Issue 25 item 8: at 80 columns the top-level examples keep one command a line (no wrapped
/// tails), so each can be copied whole.
#[test]
fn the_top_level_examples_fit_80_columns() {
    let out = crate::common::gpassk()
        .arg("--help")
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let help = stdout(&out);
    let examples = &help[help.find("Examples:\n").expect("examples")..];
    let lines: Vec<&str> = examples
        .lines()
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect();
    assert!(lines.len() >= 8, "{examples}");
    for line in lines {
        assert!(line.starts_with("  gpassk "), "a wrapped example: {line:?}");
        assert!(line.chars().count() <= 80, "{line}");
    }
    assert!(help.lines().all(|l| l.chars().count() <= 80), "{help}");
}
