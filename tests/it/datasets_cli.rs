//! End-to-end tests of `gpassk datasets` and `gpassk datasets show`.

use crate::common::{gpassk as command, repo, run as gpassk, stderr, stdout};
use std::path::Path;
use std::process::Output;

fn gpassk_with_env(args: &[&str], datasets_dir: Option<&Path>) -> Output {
    let mut command = command();
    command.args(args);
    if let Some(dir) = datasets_dir {
        command.env("GPASSK_DATASETS_DIR", dir);
    }
    command.output().expect("run gpassk")
}

#[test]
fn lists_every_dataset_with_counts_subsets_and_sha256() {
    let output = command()
        .args(["datasets"])
        .env("COLUMNS", "400")
        .output()
        .unwrap();
    let text = stdout(&output);
    assert!(output.status.success(), "{text}\n{}", stderr(&output));
    for (name, count) in [
        ("livemathbench_202412", "119"),
        ("livemathbench_202412_hard", "21"),
        ("math500", "500"),
        ("math500_l5", "134"),
        ("aime24", "30"),
        ("amc23", "40"),
        ("gsm8k", "1319"),
        ("cmath", "600"),
        ("arith_demo", "50"),
    ] {
        let row = text
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no row for {name} in\n{text}"));
        assert!(row.contains(count), "{row}");
        let has_sha = row
            .split_whitespace()
            .any(|cell| cell.len() == 12 && cell.chars().all(|c| c.is_ascii_hexdigit()));
        assert!(has_sha, "{row}");
    }
    let json = stdout(&gpassk(&["datasets", "--json"]));
    let first: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(first["sha256"].as_str().unwrap().len(), 64, "{first}");
    assert!(text.contains("CNMO, CCEE, AMC, WLPMC"));
    assert!(text.contains("Counting & Probability"));
    assert!(text.contains("DEMO SET"));
}

#[test]
fn the_list_fits_an_80_column_terminal() {
    let output = command()
        .args(["datasets"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    for line in text.lines() {
        assert!(
            line.chars().count() <= 80,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    assert!(text.contains("727fb04fc64b"), "{text}");
    // Issue 25 item 8: nothing a user copies is broken across lines: each name stands on a line of
    // its own, and each subset and hash is whole on one line.
    let json = stdout(&gpassk(&["datasets", "--json"]));
    for line in json.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = d["dataset"].as_str().unwrap();
        assert!(
            text.lines().any(|l| l == name),
            "{name} is not whole:\n{text}"
        );
        let sha = &d["sha256"].as_str().unwrap()[..12];
        assert!(text.contains(sha), "{sha}:\n{text}");
        for subset in d["subsets"].as_array().unwrap() {
            let subset = subset.as_str().unwrap();
            assert!(
                text.lines().any(|l| l.contains(subset)),
                "{subset}:\n{text}"
            );
        }
    }
}

#[test]
fn show_prints_rendered_prompts() {
    let output = gpassk(&["datasets", "show", "gsm8k", "--limit", "2"]);
    let stdout = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout.matches("=== ").count(), 2, "{stdout}");
    assert!(stdout.contains("=== 0 (reference answer: 18)"));
    assert!(stdout.contains("step by step"));
    assert!(stdout.contains("\\boxed{}"));
    assert!(stdout.contains("Janet"));
}

#[test]
fn show_defaults_to_three_problems() {
    let output = gpassk(&["datasets", "show", "aime24"]);
    assert!(output.status.success());
    assert_eq!(stdout(&output).matches("=== ").count(), 3);
}

#[test]
fn show_chinese_dataset_uses_chinese_prompt() {
    let output = gpassk(&["datasets", "show", "cmath", "--limit", "1"]);
    let stdout = stdout(&output);
    assert!(output.status.success());
    assert!(stdout.contains("请一步一步地推理"), "{stdout}");
}

#[test]
fn show_subset_and_template() {
    let output = gpassk(&[
        "datasets",
        "show",
        "math500",
        "--subset",
        "Geometry",
        "--limit",
        "1",
        "--template",
        "[{subset}, level {level}] {question} \\boxed{{}}",
    ]);
    let stdout = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout.contains("[Geometry, level "), "{stdout}");
    assert!(stdout.contains(" \\boxed{}"), "{stdout}");
}

#[test]
fn show_few_shot_turns_before_the_question() {
    let output = gpassk(&[
        "datasets",
        "show",
        "arith_demo",
        "--limit",
        "1",
        "--few-shot",
        "2",
    ]);
    let stdout = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    let roles: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("--- "))
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    // The shown problem (arith-00) is not its own example.
    assert_eq!(stdout.matches("What is 19+7?").count(), 1, "{stdout}");
}

#[test]
fn unknown_placeholder_fails_naming_it() {
    let output = gpassk(&[
        "datasets",
        "show",
        "amc23",
        "--template",
        "{question} {nope}",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("{nope}"));
}

#[test]
fn unknown_dataset_suggests_the_closest() {
    let output = gpassk(&["datasets", "show", "math5000"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr(&output);
    assert!(stderr.contains("unknown dataset `math5000`"), "{stderr}");
    assert!(stderr.contains("did you mean `math500`?"), "{stderr}");
}

#[test]
fn show_a_custom_jsonl_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.jsonl");
    std::fs::write(
        &path,
        "{\"question\": \"What is 5+5?\", \"answer\": \"10\"}\n",
    )
    .unwrap();
    let output = gpassk(&["datasets", "show", path.to_str().unwrap()]);
    let stdout = stdout(&output);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout.contains("=== 0 (reference answer: 10)"), "{stdout}");
}

#[test]
fn bad_custom_file_reports_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"question\": \"q\", \"answer\": \"1\"}\n{oops\n").unwrap();
    let output = gpassk(&["datasets", "show", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = stderr(&output);
    assert!(
        stderr.contains(&format!("{}:2: invalid JSON", path.display())),
        "{stderr}"
    );
}

#[test]
fn datasets_dir_from_environment() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = repo().join("datasets");
    std::fs::copy(shipped.join("amc23.jsonl"), dir.path().join("amc23.jsonl")).unwrap();
    let output = gpassk_with_env(
        &["datasets", "show", "amc23", "--limit", "1"],
        Some(dir.path()),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("(reference answer: 27)"));
    // Listing with files missing still prints the table, then fails naming the missing files.
    let output = gpassk_with_env(&["datasets"], Some(dir.path()));
    assert_eq!(output.status.code(), Some(1));
    let stdout = stdout(&output);
    assert!(stdout.contains("amc23"));
    let stderr = stderr(&output);
    assert!(stderr.contains("gsm8k_test.jsonl: cannot read"), "{stderr}");
}

#[test]
fn show_json_prints_chat_messages() {
    let output = gpassk(&[
        "datasets",
        "show",
        "livemathbench_202412",
        "--subset",
        "AMC",
        "--limit",
        "2",
        "--json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let stdout = stdout(&output);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["id"], "AMC/0");
    assert_eq!(lines[0]["subset"], "AMC");
    assert_eq!(lines[0]["answer"], "2");
    assert_eq!(lines[0]["messages"][0]["role"], "user");
    let content = lines[0]["messages"][0]["content"].as_str().unwrap();
    assert!(content.ends_with("What is the value of $9901 \\times 101 - 99 \\times 10101$?"));
}
