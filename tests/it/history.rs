//! `gpassk history` and `compare --baseline previous --fail-on-drift` over four weekly runs of one
//! config against the fake server, whose system fingerprint changes from the third run on.

use crate::common::db::TestDb;
use crate::common::{gpassk, ok, run as run_gpassk, run_dirs, stderr, stdout, Fixture, Toml};
use fake_openai::{FakeServer, Recorded, Reply};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// "What is i+(2i+1)?" for `problems` values of i.
fn dataset(problems: usize) -> String {
    (0..problems)
        .map(|i| {
            format!(
                "{{\"id\":\"p{i}\",\"question\":\"What is {i}+{}?\",\"answer\":\"{}\"}}\n",
                2 * i + 1,
                3 * i + 1
            )
        })
        .collect()
}

/// Right or wrong by the question and seed; the fingerprint is `fp-A` until week 3, then `fp-B`.
fn reply(r: &Recorded, week: u32) -> Reply {
    Reply {
        choices: crate::run_report::seeded_choices(r),
        served_model: None,
        system_fingerprint: Some(if week >= 3 { "fp-B" } else { "fp-A" }.into()),
        usage: None,
    }
}

fn weekly_runs(env: &Fixture, week: &AtomicU32) -> Vec<PathBuf> {
    let cfg = env.config(Toml {
        api: "timeout = 5\nconcurrency = 2",
        sampling: "n = 4\ntemperature = 0.7\nseed = 7",
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"",
        evaluation: "k = [2]\nmetrics = [\"pass@2\", \"g_pass@2_t1.0\"]",
        ..Toml::default()
    });
    let mut runs = Vec::new();
    for w in 1..=4 {
        week.store(w, Ordering::SeqCst);
        ok(&run_gpassk(&[
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--quiet",
        ]));
        let new: Vec<PathBuf> = run_dirs(&env.results())
            .into_iter()
            .filter(|d| !runs.contains(d))
            .collect();
        assert_eq!(new.len(), 1, "{new:?}");
        runs.push(new[0].clone());
    }
    runs
}

/// A fixture whose server answers as week 1, 2, 3 and 4, and its four runs.
fn four_weeks() -> (Fixture, Vec<PathBuf>) {
    let week = Arc::new(AtomicU32::new(1));
    let w = week.clone();
    let env = Fixture::new(&dataset(12)).with_server(
        FakeServer::builder().responder(move |r: &Recorded| reply(r, w.load(Ordering::SeqCst))),
    );
    let runs = weekly_runs(&env, &week);
    (env, runs)
}

fn baseline_previous(run: &Path) -> std::process::Output {
    run_gpassk(&[
        "compare",
        "--baseline",
        "previous",
        run.to_str().unwrap(),
        "--fail-on-drift",
    ])
}

#[test]
fn history_and_compare_baseline_show_a_fingerprint_change() {
    let (env, runs) = four_weeks();
    let results = env.results();
    let third = runs[2].file_name().unwrap().to_string_lossy().into_owned();

    let table = gpassk()
        .args(["history", results.to_str().unwrap()])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let table = ok(&table);
    // One values table: a row per model and run, the headline metrics as columns; the runs
    // share a day, so the table numbers them, each number spelled out above with the run's id
    // whole.
    let header = table
        .lines()
        .find(|l| l.starts_with("model "))
        .unwrap_or_default();
    assert!(
        header.contains(" run ") && header.contains("Pass@2") && header.contains("G-Pass@2_1.0"),
        "{table}"
    );
    assert_eq!(
        table.lines().filter(|l| l.starts_with("m1 ")).count(),
        1,
        "{table}"
    );
    for (i, run) in runs.iter().enumerate() {
        let name = run.file_name().unwrap().to_string_lossy().into_owned();
        let id = format!("  run {} = {name}, ", i + 1);
        assert_eq!(
            table.lines().filter(|l| l.starts_with(&id)).count(),
            1,
            "one line for {name}:\n{table}"
        );
    }
    let change = table
        .lines()
        .find(|l| l.contains("system fingerprint: fp-A → fp-B (100.0% of samples)"))
        .unwrap_or_else(|| panic!("no fingerprint change in\n{table}"));
    assert!(change.contains("m1, run 3: "), "{change}");
    assert!(table.contains(&format!("  run 3 = {third}, ")), "{table}");
    assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");
    assert_eq!(
        table.lines().filter(|l| l.contains("fp-A → fp-B")).count(),
        1,
        "only the third run changed:\n{table}"
    );

    let html = ok(&run_gpassk(&[
        "history",
        results.to_str().unwrap(),
        "--format",
        "html",
    ]));
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(
        html.matches("<svg class=\"plot trend\"").count(),
        2,
        "{html}"
    );
    // One marker per plot, on m1's point of the third run only; nothing changed for every model.
    assert_eq!(
        html.matches("<circle class=\"change\"").count(),
        2,
        "{html}"
    );
    assert_eq!(html.matches("<line class=\"change\"").count(), 0, "{html}");
    assert!(html.contains("m1: system fingerprint: fp-A → fp-B"));
    // Runs of one minute are labelled by name under the axis (as many as fit), so no two
    // labels are the same.
    let names: Vec<String> = runs
        .iter()
        .map(|r| r.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let plot = &html[..html.find("</svg>").unwrap()];
    let shown: Vec<&str> = plot
        .split("<text class=\"label\"")
        .skip(1)
        .filter(|t| t.contains("text-anchor=\"middle\">"))
        .filter_map(|t| t.split("middle\">").nth(1)?.split("</text>").next())
        .filter(|t| !t.is_empty())
        .collect();
    assert!(shown.len() >= 2, "{plot}");
    assert!(
        shown.iter().all(|t| names.iter().any(|n| n == t)),
        "{shown:?}"
    );
    assert_eq!(
        shown
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        shown.len()
    );
    // Every plot names its models in a visible legend.
    assert_eq!(html.matches("<ul class=\"legend\">").count(), 2, "{html}");
    assert_eq!(
        html.matches("<polyline class=\"trend-line\" data-model=\"m1\"")
            .count(),
        2
    );

    let csv = ok(&run_gpassk(&[
        "history",
        results.to_str().unwrap(),
        "--format",
        "csv",
    ]));
    // A row per run and model, per headline metric its value, bounds, change, p-value and flag.
    let mut lines = csv.lines();
    let per = |m: &str| format!("{m},{m} ci_low,{m} ci_high,{m} delta,{m} p_holm,{m} flag");
    assert_eq!(
        lines.next(),
        Some(
            format!(
                "dataset,run,date,model,{},{},changes",
                per("Pass@2"),
                per("G-Pass@2_1.0")
            )
            .as_str()
        )
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert!(rows[2].ends_with(",system fingerprint"), "{csv}");
    // The long form, a row per run, model and metric, is JSON's.
    let json = ok(&run_gpassk(&[
        "history",
        results.to_str().unwrap(),
        "--format",
        "json",
    ]));
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 8);

    let drift = baseline_previous(&runs[2]);
    assert_eq!(drift.status.code(), Some(1), "{}", stderr(&drift));
    let err = stderr(&drift);
    assert!(
        err.contains("drift: m1: system fingerprint: fp-A → fp-B (100.0% of samples)"),
        "{err}"
    );
    assert!(
        err.contains(&format!("baseline: {}", runs[1].display())),
        "{err}"
    );
    let same = baseline_previous(&runs[1]);
    assert_eq!(same.status.code(), Some(0), "{}", stderr(&same));
    assert!(stderr(&same).contains(&format!("baseline: {}", runs[0].display())));
    // The fourth run's fingerprint matches the third's: no drift.
    assert_eq!(baseline_previous(&runs[3]).status.code(), Some(0));
    let first = baseline_previous(&runs[0]);
    assert_eq!(first.status.code(), Some(2));
    assert!(
        stderr(&first).contains("--baseline previous: no earlier run"),
        "{}",
        stderr(&first)
    );
}

#[test]
fn history_of_a_folder_without_runs_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_gpassk(&["history", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("no run found"), "{}", stderr(&out));
    let missing = dir.path().join("nope");
    let out = run_gpassk(&["history", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("cannot read the results folder"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_changed_config_is_marked_and_never_a_baseline() {
    let env = Fixture::new(&dataset(12))
        .with_server(FakeServer::builder().responder(|r: &Recorded| reply(r, 1)));
    let mut runs = Vec::new();
    for temperature in ["0.7", "0.9"] {
        let cfg = env.config(Toml {
            sampling: &format!("n = 4\ntemperature = {temperature}\nseed = 7"),
            models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"",
            evaluation: "k = [2]\nmetrics = [\"pass@2\"]",
            ..Toml::default()
        });
        ok(&run_gpassk(&[
            "run",
            "--config",
            cfg.to_str().unwrap(),
            "--quiet",
        ]));
        runs = run_dirs(&env.results());
    }
    assert_eq!(runs.len(), 2);
    let json = ok(&run_gpassk(&[
        "history",
        env.results().to_str().unwrap(),
        "--format",
        "json",
        "--model",
        "m1",
    ]));
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "{json}");
    assert_eq!(rows[0]["changes"], "");
    assert_eq!(rows[1]["changes"], "config hash changed", "{json}");
    assert!(rows[1]["delta"].is_number() && rows[0]["delta"].is_null());
    // The second run has no earlier run of its own config.
    let out = baseline_previous(&runs[1]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let none = run_gpassk(&[
        "history",
        env.results().to_str().unwrap(),
        "--model",
        "nobody",
    ]);
    assert_eq!(none.status.code(), Some(2));
    assert!(
        stderr(&none).contains("--model nobody"),
        "{}",
        stderr(&none)
    );
}

#[test]
fn one_unreadable_run_is_skipped_with_a_warning_naming_it() {
    let env = Fixture::new(&dataset(4))
        .with_server(FakeServer::builder().responder(|r: &Recorded| reply(r, 1)));
    env.write("other.jsonl", &dataset(3));
    let cfg = env.config(Toml {
        sampling: "n = 2\nseed = 7",
        models: "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"",
        evaluation: "k = [1]\nmetrics = [\"pass@1\"]",
        ..Toml::default()
    });
    let other = format!("evaluation.dataset={}", env.file("other.jsonl").display());
    for set in [None, None, None, Some(other.as_str())] {
        let mut args = vec!["run", "--config", cfg.to_str().unwrap(), "--quiet"];
        args.extend(set.iter().flat_map(|s| ["--set", *s]));
        ok(&run_gpassk(&args));
    }
    let runs = run_dirs(&env.results());
    assert_eq!(runs.len(), 4);
    // The second run's checkpoint gets a corrupt middle line; the fourth run's dataset goes.
    let ck = runs[1].join("checkpoints/m1.jsonl");
    let text = std::fs::read_to_string(&ck).unwrap();
    let (head, tail) = text.split_once('\n').unwrap();
    std::fs::write(&ck, format!("{head}\n{{not json\n{tail}")).unwrap();
    std::fs::remove_file(env.file("other.jsonl")).unwrap();

    let out = run_gpassk(&[
        "history",
        env.results().to_str().unwrap(),
        "--format",
        "csv",
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 2, "{err}");
    let name = |d: &Path| d.file_name().unwrap().to_string_lossy().into_owned();
    assert!(warnings[0].contains(&name(&runs[1])), "{err}");
    assert!(warnings[0].contains("m1.jsonl:2"), "{err}");
    assert!(warnings[1].contains(&name(&runs[3])), "{err}");
    assert!(warnings[1].contains("other.jsonl"), "{err}");
    let csv = ok(&out);
    // A row per run and model: the run is the second column.
    let shown: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(shown, [name(&runs[0]), name(&runs[2])], "{csv}");
}

/// The cells of a Markdown table row, trimmed.
fn md_cells(row: &str) -> Vec<&str> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split(" | ").map(str::trim).collect()
}

#[test]
fn an_interval_prints_the_same_in_report_and_history() {
    let dir = tempfile::tempdir().unwrap();
    let run = crate::report_html::six_model_run(dir.path(), false);
    let report = ok(&run_gpassk(&[
        "report",
        run.to_str().unwrap(),
        "--format",
        "md",
    ]));
    let terminal = gpassk()
        .args(["report", run.to_str().unwrap()])
        .env("COLUMNS", "200")
        .output()
        .unwrap();
    let terminal = ok(&terminal);
    let root = dir.path().to_str().unwrap();
    let history = ok(&run_gpassk(&["history", root, "--format", "md"]));
    // Every table stands apart from the text around it, or GitHub reads the text as rows.
    let md_lines: Vec<&str> = history.lines().collect();
    for w in md_lines.windows(2) {
        let (a, b) = (w[0].starts_with('|'), w[1].starts_with('|'));
        assert!(
            a == b || w[0].is_empty() || w[1].is_empty(),
            "{}\n{}",
            w[0],
            w[1]
        );
    }
    // Both show a model by its one short name (the report's Models table is its legend), and
    // history has one values table: a row per model and run, the headline metrics as columns.
    let tables: Vec<Vec<Vec<&str>>> = {
        let mut out: Vec<Vec<Vec<&str>>> = Vec::new();
        let mut inside = false;
        for line in history.lines() {
            if !line.starts_with('|') {
                inside = false;
                continue;
            }
            if !inside {
                out.push(Vec::new());
                inside = true;
            }
            out.last_mut().unwrap().push(md_cells(line));
        }
        out
    };
    let values: Vec<&Vec<Vec<&str>>> = (tables.iter())
        .filter(|t| t[0][..2] == ["model", "run"])
        .collect();
    assert!(!values.is_empty(), "{history}");
    let models: Vec<(String, String)> = (report.lines())
        .map(md_cells)
        .filter(|c| c.len() >= 2 && c[0] != "short name" && !c[0].starts_with("---"))
        .take_while(|_| true)
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect();
    let model_of = |short: &str| -> String {
        (models.iter().find(|m| m.0 == short)).map_or(short.to_string(), |m| m.1.clone())
    };
    let short_of = |model: &str| -> String {
        (models.iter().find(|m| m.1 == model)).map_or(model.to_string(), |m| m.0.clone())
    };
    // The one run's cell of a model's metric in history's values table.
    let history_cell = |model: &str, metric: &str| -> Option<String> {
        let short = short_of(model);
        values.iter().find_map(|t| {
            let col = t[0].iter().position(|h| *h == metric)?;
            let row = t[2..].iter().find(|r| r[0] == short)?;
            Some(row[col].to_string())
        })
    };
    let lines: Vec<&str> = report.lines().collect();
    let mut checked = 0;
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("| model | ") {
            continue;
        }
        let header = md_cells(line);
        for row in lines[i + 2..].iter().take_while(|l| l.starts_with('|')) {
            let cells = md_cells(row);
            let model = model_of(cells[0]);
            for (metric, cell) in header.iter().zip(&cells).filter(|(_, c)| c.contains('[')) {
                // History shows the metrics it follows over runs (the tested family).
                let Some(shown) = history_cell(&model, metric) else {
                    continue;
                };
                assert_eq!(&shown, cell, "{model} {metric}");
                // The terminal table shows the config's metrics (maj@n is not among them here).
                if *metric != "maj@n" {
                    assert!(terminal.contains(cell), "{cell} not in\n{terminal}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 5 * 7, "{checked} intervals in\n{report}");
}

/// `history --db` over the runs pushed to a database prints what `history` prints over their
/// folder, in every format, fingerprint shares included.
#[test]
fn history_from_the_database_equals_history_from_the_folder() {
    let (env, runs) = four_weeks();
    let results = env.results();
    for db in TestDb::both(&env.path().join("history.db")) {
        let mut push = vec!["store", "push"];
        let paths: Vec<String> = runs.iter().map(|r| r.display().to_string()).collect();
        push.extend(paths.iter().map(String::as_str));
        ok(&db.run(&push));
        for format in ["table", "md", "csv", "json", "html"] {
            let folder = gpassk()
                .args(["history", results.to_str().unwrap(), "--format", format])
                .env("COLUMNS", "100")
                .output()
                .unwrap();
            let folder = ok(&folder);
            let mut stored = db.command(&["history", "--format", format]);
            let stored = ok(&stored.env("COLUMNS", "100").output().unwrap());
            assert!(folder.contains("fp-A → fp-B") || format == "csv" || format == "json");
            assert_eq!(stored, folder, "{db:?} --format {format}");
        }
    }
}

/// `compare` of the same two runs from their folders and from a results database: the same
/// output and exit status; the one difference is how the A and B lines (and the `baseline:`
/// note) name a run: its folder as given, or its id.
#[test]
fn compare_from_the_database_equals_compare_from_the_folders() {
    let (env, runs) = four_weeks();
    let id = |d: &Path| d.file_name().unwrap().to_string_lossy().into_owned();
    for db in TestDb::both(&env.path().join("compare.db")) {
        let mut push = vec!["store", "push"];
        let paths: Vec<String> = runs.iter().map(|r| r.display().to_string()).collect();
        push.extend(paths.iter().map(String::as_str));
        ok(&db.run(&push));
        // (the run checked, its baseline): the previous run, and a run named by its id.
        let first_id = id(&runs[0]);
        let cases = [
            (&runs[1], "previous", &runs[0]),
            (&runs[2], "previous", &runs[1]),
            (&runs[3], "previous", &runs[2]),
            (&runs[3], first_id.as_str(), &runs[0]),
        ];
        for (run, baseline, base) in cases {
            for format in ["table", "md", "json", "csv"] {
                let args = [
                    "--baseline",
                    baseline,
                    "--fail-on-drift",
                    "--format",
                    format,
                ];
                let folder = gpassk()
                    .arg("compare")
                    .args(args)
                    .arg(run)
                    .env("COLUMNS", "100")
                    .output()
                    .unwrap();
                let run_id = id(run);
                let mut all = vec!["compare"];
                all.extend(args);
                all.push(&run_id);
                let stored = db.command(&all).env("COLUMNS", "100").output().unwrap();
                let what = format!("{db:?} {run_id} --baseline {baseline} --format {format}");
                assert_eq!(stored.status.code(), folder.status.code(), "{what}");
                assert!(
                    matches!(folder.status.code(), Some(0 | 1)),
                    "{what}: {}",
                    stderr(&folder)
                );
                let (f_out, s_out) = (stdout(&folder), stdout(&stored));
                let named = |text: &str, a: &str, b: &str| {
                    text.replace(&format!("A: {a}\n"), "A: <A>\n")
                        .replace(&format!("B: {b}\n"), "B: <B>\n")
                };
                let f_named = named(
                    &f_out,
                    &base.display().to_string(),
                    &run.display().to_string(),
                );
                let s_named = named(&s_out, &id(base), &run_id);
                if format == "table" || format == "md" {
                    assert!(
                        f_named.contains("A: <A>\n") && s_named.contains("B: <B>\n"),
                        "{s_out}"
                    );
                }
                assert_eq!(s_named, f_named, "{what}");
                let notes =
                    |text: &str, base: &str| text.replace(&format!("baseline: {base}\n"), "");
                assert_eq!(
                    notes(&stderr(&stored), &id(base)),
                    notes(&stderr(&folder), &base.display().to_string()),
                    "{what}"
                );
            }
        }
        let first = db.run(&["compare", "--baseline", "previous", &id(&runs[0])]);
        assert_eq!(first.status.code(), Some(2));
        assert!(stderr(&first).contains("--baseline previous: no earlier run"));
        let missing = db.run(&["compare", "--baseline", "previous", "no-such-run"]);
        assert_eq!(missing.status.code(), Some(2));
        assert!(
            stderr(&missing).contains("no run `no-such-run`"),
            "{}",
            stderr(&missing)
        );
    }
}

/// The history page of issue 40's weekly job: every drop history flags is a triangle on its
/// plot and a line under "Changes"; no marker takes a model's colour; what a marker's tooltip
/// says is also on the page (phones have no hover), numbered as under the run on the plots; the
/// values table has a row per run and model, the headline metrics as columns.
#[test]
fn the_history_page_shows_flagged_drops_in_ink_with_notes_readable_without_hover() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = crate::view::long_weeks(dir.path());
    let root = dir.path().to_str().unwrap();
    let html = ok(&run_gpassk(&["history", root, "--format", "html"]));
    // JSON keeps a row per model, metric and run, each with its flag.
    let json = ok(&run_gpassk(&["history", root, "--format", "json"]));
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let drops: Vec<(String, String)> = (rows.iter())
        .filter(|r| r["flag"] == "REGRESSED")
        .map(|r| {
            (
                r["model"].as_str().unwrap().into(),
                r["metric"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(drops.len() > 1, "{json}");
    let notes = between(&html, "<h3>Changes</h3>", "</ol>");
    for (model, metric) in &drops {
        let plot = between(&html, &format!("<h3>{metric}</h3>"), "</figure>");
        assert_eq!(
            plot.matches("<path class=\"flag down\"").count(),
            1,
            "{metric}"
        );
        let short = short_name(&html, model);
        assert!(
            notes.contains(&format!("{short}: {metric} REGRESSED")),
            "{model} {metric}: {notes}"
        );
    }
    assert_eq!(
        html.matches("<path class=\"flag down\"").count(),
        drops.len()
    );
    // Markers are in ink: none has the colour of a model's line.
    let colours: Vec<&str> = html
        .split("<polyline class=\"trend-line\"")
        .skip(1)
        .map(|l| between(l, "stroke=\"", "\" ").trim_start_matches("stroke=\""))
        .collect();
    assert_eq!(colours.len(), 8 * LONG_MODELS);
    for marker in ["class=\"change\"", "class=\"flag", "class=\"note\""] {
        for tag in html.split(marker).skip(1) {
            let tag = &tag[..tag.find('>').unwrap()];
            assert!(colours.iter().all(|c| !tag.contains(c)), "{marker}{tag}");
        }
    }
    // Each tooltip's words are on the page too, and the run has its number under the axis.
    let visible = notes.replace("<li>", "\n");
    for title in html.split("<circle class=\"change\"").skip(1) {
        let said = between(title, "<title>", "</title>").trim_start_matches("<title>");
        for what in said[said.find(": ").unwrap() + 2..].split("; ") {
            assert!(visible.contains(what), "{what} only in a tooltip");
        }
    }
    assert!(
        notes.contains("<span class=\"disc\">1</span><b>2026-11-30</b>"),
        "{notes}"
    );
    assert_eq!(
        html.matches("<text class=\"note\"").count(),
        8,
        "week 2's number on every plot"
    );
    assert_eq!(
        notes.matches("fp_a → fp_b").count(),
        1,
        "the fingerprint every model shares, once: {notes}"
    );
    // Values: a row per model and run (as the terminal's), the headline metrics as columns.
    let table = between(&html, "<h3>Values</h3>", "</table>");
    let head = between(table, "<tr>", "</tr>");
    assert_eq!(head.matches("<th>").count(), 2 + 8, "{head}");
    assert_eq!(
        table.matches("<tr>").count(),
        1 + 2 * LONG_MODELS,
        "{table}"
    );
    for run in [&a, &b] {
        let label = run.file_name().unwrap().to_str().unwrap();
        assert_eq!(
            table.matches(&format!("</td><td>{label}</td>")).count(),
            LONG_MODELS,
            "{table}"
        );
    }
}

const LONG_MODELS: usize = crate::view::LONG.len();

/// The name `html` shows for `full`: its short name from the page's legend, else itself.
fn short_name(html: &str, full: &str) -> String {
    let Some(at) = html.find(&format!("</b> = {full}")) else {
        return full.to_string();
    };
    let head = &html[..at];
    head[head.rfind("<b>").unwrap() + 3..].to_string()
}

/// The text from the first `start` to the next `end` after it (the end left out).
fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
    let at = text
        .find(start)
        .unwrap_or_else(|| panic!("no {start:?} in {text}"));
    let rest = &text[at..];
    &rest[..rest.find(end).unwrap_or(rest.len())]
}
