//! What a user sees in the terminal during and after `run`: progress that matches the checkpoints
//! (after Ctrl-C and on resume), the cause of failed units, once for the models it stopped, a
//! dry run and tables that fit 80 columns, and Markdown that pastes into a PR.

use crate::common::{both, gpassk, stderr, Fixture, Toml, NO_SERVER};
use fake_openai::{ChoiceReply, FakeServer, Recorded, Reply};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TWO_MODELS: &str = "[[models]]\nname = \"DeepSeek-R1-Distill-Qwen-32B\"\nmodel_id = \"a\"\n[[models]]\nname = \"m2\"\nmodel_id = \"b\"\n";

fn problems(count: usize) -> String {
    (0..count)
        .map(|i| {
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {i}+1?\",\"answer\":\"{}\"}}\n",
                i + 1
            )
        })
        .collect()
}

fn reply(r: &Recorded) -> Reply {
    Reply::with_choices(
        (0..r.n())
            .map(|_| ChoiceReply::stop("\\boxed{1}"))
            .collect(),
    )
}

fn config(env: &Fixture, base_url: Option<&str>, sampling: &str, models: &str) {
    env.config(Toml {
        base_url,
        api: "max_retries = 1\nbackoff_base = 0.01\nbackoff_max = 0.02\ntimeout = 5\nconcurrency = 2",
        sampling: &format!("temperature = 0.7\nseed = 1\n{sampling}"),
        models,
        evaluation: "",
    });
}

/// Checkpoint lines of one model (every record, answers and errors alike).
fn records(env: &Fixture, model: &str) -> usize {
    let path = env.run_dir().join(format!("checkpoints/{model}.jsonl"));
    std::fs::read_to_string(path).map_or(0, |t| t.lines().count())
}

/// The last progress line printed for a model (progress lines start with its padded name).
fn last_progress<'a>(text: &'a str, name: &str) -> &'a str {
    text.lines()
        .rev()
        .find(|l| l.starts_with(name) && l.contains(" units"))
        .unwrap_or_else(|| panic!("no progress line for {name} in:\n{text}"))
}

/// `12/34` at the start of "12/34 units" in a progress line.
fn counts(line: &str) -> (usize, usize) {
    let field = line
        .split_whitespace()
        .find(|w| w.contains('/'))
        .unwrap_or_else(|| panic!("no counts in {line}"));
    let (a, b) = field.split_once('/').unwrap();
    (a.parse().unwrap(), b.trim_end_matches(',').parse().unwrap())
}

#[test]
fn a_dead_server_is_named_once_for_all_models_in_stderr_and_each_manifest_entry() {
    let env = Fixture::new(&problems(3));
    config(&env, Some(NO_SERVER), "n = 2", TWO_MODELS);
    let out = env.command(&["run"]).env("COLUMNS", "80").output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    // Both models stopped for one reason: named once, with both names, the URL and the cause.
    let head = "error: models DeepSeek-R1-Distill-Qwen-32B, m2: connection: cannot reach";
    assert_eq!(err.matches(head).count(), 1, "{err}");
    let summary = err[err.find(head).unwrap()..]
        .split_whitespace()
        .collect::<Vec<_>>();
    let summary = summary.join(" ");
    assert!(
        summary.contains(&format!("{NO_SERVER}/v1/chat/completions"))
            && summary.to_lowercase().contains("refused"),
        "{err}"
    );
    let manifest: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(env.run_dir().join("manifest.json")).unwrap(),
    )
    .unwrap();
    for name in ["DeepSeek-R1-Distill-Qwen-32B", "m2"] {
        let m = &manifest["models"][name];
        let causes = m["failure_causes"].as_object().expect("failure_causes");
        assert_eq!(causes.len(), 1, "{causes:?}");
        let (cause, count) = causes.iter().next().unwrap();
        assert!(cause.starts_with("connection: ") && cause.to_lowercase().contains("refused"));
        assert_eq!(count.as_u64(), m["api_error"].as_u64());
    }
    // Every progress line fits 80 columns and abbreviates the long name the same way (the stop
    // note names the URL whole, unwrapped, so it can be copied).
    for l in err
        .lines()
        .filter(|l| !l.contains("/tmp") && !l.contains(" stopped: "))
    {
        assert!(l.chars().count() <= 80, "{l}");
    }
    // The long name is shortened once, said before the progress (`short = full`), and every
    // progress line of the model starts with that short name.
    let legend = (err.lines())
        .find(|l| l.ends_with(" = DeepSeek-R1-Distill-Qwen-32B"))
        .unwrap_or_else(|| panic!("no legend: {err}"));
    let short = legend.split(" = ").next().unwrap();
    assert!(
        short.chars().count() < "DeepSeek-R1-Distill-Qwen-32B".len(),
        "{short}"
    );
    let long: Vec<&str> = err.lines().filter(|l| l.contains("/9 units")).collect();
    assert!(
        long.iter().any(|l| l.starts_with(&format!("{short} "))),
        "{err}"
    );
}

#[test]
fn progress_after_ctrl_c_and_on_resume_matches_the_checkpoints() {
    let slow = FakeServer::builder().responder(|r: &Recorded| {
        std::thread::sleep(Duration::from_millis(20));
        reply(r)
    });
    let env = Fixture::new(&problems(10)).with_server(slow);
    let server = env.server();
    config(
        &env,
        None,
        "n = 8",
        "[[models]]\nname = \"m1\"\nmodel_id = \"x\"\n",
    );
    let child = env
        .command(&["run", "--progress-interval", "0.05"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.request_count() < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(kill.unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    let err = stderr(&out);
    let last = last_progress(&err, "m1 ");
    let saved = records(&env, "m1");
    assert_eq!(counts(last), (saved, 90), "{err}");
    assert!(
        saved < 90 && last.contains("stopped") && !last.contains("ETA"),
        "{last}"
    );

    let out = env
        .command(&["run", "--progress-interval", "0.05", "--resume"])
        .arg(env.run_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let err = stderr(&out);
    let first = err
        .lines()
        .find(|l| l.starts_with("m1 ") && l.contains(" units"))
        .unwrap();
    assert_eq!(
        counts(first).1,
        90 - saved,
        "the total is what was missing: {err}"
    );
    let last = last_progress(&err, "m1 ");
    assert_eq!(counts(last), (90 - saved, 90 - saved), "{err}");
    assert!(last.contains("done"), "{last}");
    assert_eq!(records(&env, "m1"), 90);
    let _ = gpassk;
}

const SIX: [&str; 6] = [
    "DeepSeek-R1-Distill-Qwen-32B",
    "Llama-3.1-8B-Instruct",
    "Qwen2.5-Math-72B-Instruct",
    "Mistral-Large-Instruct-2411",
    "gemma-2-27b-it-long-name",
    "Phi-3.5-mini-instruct-x",
];

/// A finished run of six long-named models on the fake server; returns its directory.
fn six_model_run(env: &Fixture) -> std::path::PathBuf {
    let models: String = SIX
        .iter()
        .map(|m| format!("[[models]]\nname = \"{m}\"\nmodel_id = \"{m}\"\n"))
        .collect();
    config(env, None, "n = 4\ngreedy = true", &models);
    let out = env
        .command(&["run", "--quiet"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    for line in crate::common::stdout(&out).lines() {
        if !line.starts_with("results: ") {
            assert!(
                line.chars().count() <= 80,
                "run printed a {}-column line:\n{line}",
                line.chars().count()
            );
        }
    }
    env.run_dir()
}

#[test]
fn the_summary_table_fits_80_columns_with_six_long_names_unless_wide() {
    let env = Fixture::new(&problems(4)).with_server(FakeServer::builder().responder(reply));
    let run_dir = six_model_run(&env);
    let dir = run_dir.to_str().unwrap();
    for args in [vec!["report", dir], vec!["score", dir]] {
        let out = gpassk().args(&args).env("COLUMNS", "80").output().unwrap();
        let text = crate::common::ok(&out);
        for line in text.lines().filter(|l| !l.starts_with("wrote ")) {
            assert!(line.chars().count() <= 80, "{args:?}: {line}");
        }
        for name in SIX {
            assert!(
                text.lines()
                    .any(|l| shortens(l.split("  ").next().unwrap(), name)),
                "{name} missing:\n{text}"
            );
        }
        assert!(
            text.contains("G-Pass@4_") && text.contains("[lo, hi]: 95% interval"),
            "{text}"
        );
        assert!(!text.contains("INCOMPLETE"), "{text}");
    }
    let wide = gpassk()
        .args(["report", dir, "--wide"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let wide = crate::common::ok(&wide);
    assert!(
        wide.lines().any(|l| l.chars().count() > 80),
        "--wide keeps every column"
    );
    for name in SIX {
        assert!(wide.contains(name), "{wide}");
    }
    // At 200 columns the full names fit and are printed as they are.
    let roomy = gpassk()
        .args(["report", dir])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let roomy = crate::common::ok(&roomy);
    for name in SIX {
        assert!(roomy.contains(name), "{roomy}");
    }
}

/// Whether `shown` is `name` or a shortening of it: its pieces between ellipses in order, the
/// first at the start and the last at the end.
fn shortens(shown: &str, name: &str) -> bool {
    let pieces: Vec<&str> = shown.split('…').collect();
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    let mut rest = match name.strip_prefix(first) {
        Some(rest) if pieces.len() > 1 => rest,
        Some(rest) => return rest.is_empty(),
        None => return false,
    };
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.ends_with(last)
}

#[test]
fn a_partial_run_says_so_with_problem_counts_in_the_table_and_report_md() {
    // The server answers only the first problems, then refuses everything after a few requests.
    let server = FakeServer::builder().responder(|r: &Recorded| {
        if r.user_text().unwrap_or_default().contains("What is 3+1") {
            Reply::with_choices(Vec::new())
        } else {
            reply(r)
        }
    });
    let env = Fixture::new(&problems(5)).with_server(server);
    config(
        &env,
        None,
        "n = 2",
        "[[models]]\nname = \"m1\"\nmodel_id = \"x\"\n",
    );
    let out = env
        .command(&["run", "--quiet"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let text = crate::common::stdout(&out);
    assert!(
        text.contains("INCOMPLETE RUN (incomplete): 12 of 15 planned units are usable."),
        "{text}"
    );
    assert!(
        text.contains("Metrics rest on fewer problems than the dataset's 5:"),
        "{text}"
    );
    assert!(
        text.contains("  4 problems per model: Greedy, Pass@1, G-Pass@1_0.25,"),
        "{text}"
    );
    let md = std::fs::read_to_string(env.run_dir().join("report.md")).unwrap();
    assert!(
        md.contains("> **INCOMPLETE RUN (incomplete): 12 of 15 planned units are usable.**"),
        "{md}"
    );
    assert!(
        md.contains("> - 4 problems per model: Greedy, Pass@1, G-Pass@1_0.25,"),
        "{md}"
    );
}

/// Issue 25 item 8: the dry run of six long-named models fits 80 columns, keeps every name whole
/// on a line of its own and ends with the total of what the models would send.
#[test]
fn the_dry_run_fits_80_columns_and_ends_with_the_total() {
    let env = Fixture::new(&problems(4));
    let mut models: String = SIX
        .iter()
        .map(|m| format!("[[models]]\nname = \"{m}\"\nmodel_id = \"{m}\"\n"))
        .collect();
    models.push_str("[pricing]\ninput = 1\noutput = 2\n");
    config(&env, Some(NO_SERVER), "n = 4\nmax_tokens = 100", &models);
    let out = env
        .command(&["run", "--dry-run"])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = crate::common::ok(&out);
    for line in text.lines().filter(|l| !l.starts_with("dataset /")) {
        assert!(line.chars().count() <= 80, "{line}");
    }
    for name in SIX {
        assert!(text.contains(&format!("\n  {name}\n")), "{name}:\n{text}");
    }
    // Each model: 4 problems × (4 samples + greedy) = 20 units of at most 100 tokens.
    assert_eq!(
        text.matches("→ 20 units in 20 requests\n").count(),
        6,
        "{text}"
    );
    let tail: Vec<&str> = text.lines().rev().take(4).collect();
    assert_eq!(tail[3], "total: 120 units in 120 requests", "{text}");
    assert!(tail[2].ends_with(", ≤ 12000 completion tokens"), "{text}");
    assert!(
        tail[1].starts_with("  cost ") && tail[1].contains(" USD – "),
        "{text}"
    );
    assert!(tail[0].contains("worst case"), "{text}");
}

/// The Markdown tables of `text`: each a list of rows (the rule row second), each a list of cells.
fn markdown_tables(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables: Vec<Vec<Vec<String>>> = Vec::new();
    let mut inside = false;
    for line in text.lines() {
        let Some(body) = line.strip_prefix('|').and_then(|l| l.strip_suffix('|')) else {
            inside = false;
            continue;
        };
        let row = body.split('|').map(|c| c.trim().to_string()).collect();
        if !inside {
            tables.push(Vec::new());
            inside = true;
        }
        tables.last_mut().unwrap().push(row);
    }
    tables
}

/// Issue 25 item 8 and issue 40: report.md and `compare --format md` of six long-named models
/// paste into a PR: at most 8 columns a table, numbers right-aligned, each long name once, in a
/// legend beside its short name, the short name the same in both and in the terminal table.
#[test]
fn markdown_tables_fit_a_pr_with_right_aligned_numbers_and_a_legend() {
    let env = Fixture::new(&problems(4)).with_server(FakeServer::builder().responder(reply));
    let run_dir = six_model_run(&env);
    let dir = run_dir.to_str().unwrap();
    let md = crate::common::read(&run_dir.join("report.md"));
    let compare = crate::common::ok(
        &gpassk()
            .args(["compare", dir, dir, "--format", "md"])
            .output()
            .unwrap(),
    );
    let terminal = crate::common::ok(
        &gpassk()
            .args(["report", dir])
            .env("COLUMNS", "80")
            .output()
            .unwrap(),
    );
    // report.md: the Models table is the legend.
    let tables = markdown_tables(&md);
    let legend = tables
        .iter()
        .position(|t| t[0][0] == "short name")
        .unwrap_or_else(|| panic!("report.md: no legend:\n{md}"));
    let mut shorts = Vec::new();
    for name in SIX {
        let row = (tables[legend].iter())
            .find(|r| r[1] == name)
            .unwrap_or_else(|| panic!("{name} not in the legend:\n{md}"));
        shorts.push(row[0].clone());
        // compare's verdicts spell out the same short name, and so does the terminal.
        let verdict = format!("- **{}** = {}: ", row[0], name.replace('_', "\\_"));
        assert!(compare.contains(&verdict), "{verdict}\n{compare}");
        assert!(
            terminal.contains(&format!("  {} = {name}\n", row[0])),
            "{terminal}"
        );
    }
    for (what, text) in [("report.md", &md), ("compare", &compare)] {
        let tables = markdown_tables(text);
        for (t, table) in tables.iter().enumerate() {
            assert!(
                table[0].len() <= 8,
                "{what}: {} columns: {:?}",
                table[0].len(),
                table[0]
            );
            for (c, rule) in table[1].iter().enumerate() {
                let numbers = table[2..]
                    .iter()
                    .all(|r| r[c].starts_with(|ch: char| ch.is_ascii_digit()));
                assert!(
                    !numbers || rule == "---:",
                    "{what}: {:?} not right-aligned",
                    table[0][c]
                );
            }
            let is_legend = what == "report.md" && t == legend;
            let names_outside =
                !is_legend && table.iter().flatten().any(|c| SIX.contains(&c.as_str()));
            assert!(
                !names_outside,
                "{what}: a long name outside the legend: {table:?}"
            );
            if !is_legend && table[0][0] == "model" {
                assert!(
                    table[2..].iter().all(|r| shorts.contains(&r[0])),
                    "{what}: {table:?}"
                );
            }
        }
    }
    assert!(md.contains("## What these numbers mean\n"), "{md}");
}

/// Issue 40: a run of six long-named models stopped with Ctrl-C at 80 columns ends with no line
/// wider than the terminal, the command to continue broken at spaces into lines the shell reads
/// as one (the run id whole), and no model called a failure: they were interrupted, the server
/// was fine. `report` of the run says the same.
#[test]
fn an_interrupted_run_ends_with_a_command_that_fits_and_no_failures() {
    use crate::common::weekly;
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("data.jsonl"), weekly::dataset()).unwrap();
    let server = FakeServer::start_blocking(
        weekly::server(1).faults(|_| Some(fake_openai::Fault::Hang(Duration::from_millis(50)))),
    );
    let config = weekly::config(root.path(), &server.base_url());
    let child = gpassk()
        .args(["run", "--config", config.to_str().unwrap()])
        .env("COLUMNS", "80")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.request_count() < 40 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let kill = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(kill.unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    let err = stderr(&out);
    for line in err.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
    assert!(
        !err.contains("once the server answers") && !err.contains("failure"),
        "{err}"
    );
    let run_dir = crate::common::run_dirs(&root.path().join("results"))
        .pop()
        .unwrap();
    let tail = &err[err.find("continue with:\n").expect("how to continue") + 15..];
    let command = tail.replace(" \\\n    ", " ");
    let command = command.lines().next().unwrap().trim();
    assert_eq!(
        command,
        format!(
            "gpassk run --config {} --resume {}",
            config.display(),
            run_dir.display()
        ),
        "{err}"
    );
    assert!(
        tail.lines().count() >= 2,
        "the command is longer than 80: broken\n{err}"
    );
    let report = gpassk()
        .args(["report", run_dir.to_str().unwrap()])
        .env("COLUMNS", "80")
        .output()
        .unwrap();
    let text = crate::common::ok(&report);
    assert!(text.contains("INCOMPLETE RUN (interrupted)"), "{text}");
    assert!(
        !text.contains("failures:") && !text.contains("once the server"),
        "{text}"
    );
}
