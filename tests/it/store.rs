//! `gpassk store`: scored runs in SQLite with their exact values, a second push of the same run
//! writing nothing, a changed run replaced whole, a newer schema refused, bad URLs exit 2.

use crate::common::{both, read, stdout, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums};
use fake_openai::{FakeServer, Fault, Recorded};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const TWO_MODELS: &str = "[[models]]\nname = \"a\"\nmodel_id = \"a-1\"\n\
     [[models]]\nname = \"b\"\nmodel_id = \"b-1\"\n";

fn finished_run() -> Fixture {
    let env = Fixture::new(&sums(6)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 4", TWO_MODELS, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    env
}

fn store(args: &[&str], db: &Path) -> std::process::Output {
    let url = format!("sqlite:{}", db.display());
    let mut all = vec!["store"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--db", &url]);
    crate::common::run(&all)
}

fn csv_rows(text: &str) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

#[test]
fn a_pushed_run_holds_its_exact_values_and_a_second_push_writes_nothing() {
    let env = finished_run();
    let dir = env.run_dir();
    let db = env.path().join("store/gpassk.db");
    let first = store(&["push", dir.to_str().unwrap()], &db);
    assert!(
        stdout(&first).contains(": pushed in sqlite:"),
        "{}",
        both(&first)
    );
    let before = std::fs::read(&db).unwrap();
    let again = store(&["push", dir.to_str().unwrap()], &db);
    assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
    assert_eq!(std::fs::read(&db).unwrap(), before, "the second push wrote");

    // Every overall value of metrics.json is in the store, with its exact fraction.
    let metrics: serde_json::Value =
        serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
    let stored = csv_rows(&stdout(&store(&["export", "metric_values"], &db)));
    let mut checked = 0;
    for row in stored
        .iter()
        .filter(|r| r["subset"].is_empty() && !r["value"].is_empty())
    {
        let num: f64 = row["exact_numerator"].parse().unwrap();
        let den: f64 = row["exact_denominator"].parse().unwrap();
        let value: f64 = row["value"].parse().unwrap();
        assert!((num / den - value).abs() < 1e-12, "{row:?}");
        let lo: f64 = row["ci_low"].parse().unwrap();
        let hi: f64 = row["ci_high"].parse().unwrap();
        assert!(lo <= value && value <= hi, "{row:?}");
        checked += 1;
    }
    assert!(checked >= 2 * 5, "{checked} values: {stored:?}");
    let text = metrics.to_string();
    assert!(text.contains("\"a\"") && text.contains("\"b\""));
    let problems = csv_rows(&stdout(&store(&["export", "problem_counts"], &db)));
    assert_eq!(problems.len(), 2 * 6, "{problems:?}");
    assert!(problems.iter().all(|p| p["n"] == "4"), "{problems:?}");
    let ls = stdout(&store(&["ls"], &db));
    assert_eq!(ls.lines().count(), 1, "{ls}");
    assert!(ls.contains("complete") && ls.contains("2 models"), "{ls}");
}

#[test]
fn a_resumed_run_is_replaced_whole_in_one_push() {
    // Model b fails every unit the first time, and answers once the run is resumed.
    let broken = Arc::new(AtomicBool::new(true));
    let b = broken.clone();
    let server = FakeServer::builder()
        .responder(smart_reply)
        .faults(move |r: &Recorded| {
            (b.load(Ordering::SeqCst) && r.model() == Some("b-1")).then(Fault::unauthorized)
        });
    let env = Fixture::new(&sums(6)).with_server(server);
    configure(&env, "n = 4", TWO_MODELS, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let dir = env.run_dir();
    let db = env.path().join("gpassk.db");
    assert_eq!(
        store(&["push", dir.to_str().unwrap()], &db).status.code(),
        Some(0)
    );
    let models = csv_rows(&stdout(&store(&["export", "run_models"], &db)));
    let b_row = models.iter().find(|m| m["model"] == "b").expect("b stored");
    assert_eq!(b_row["status"], "failed", "{models:?}");

    broken.store(false, Ordering::SeqCst);
    let out = run(&env, &["--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let out = store(&["push", dir.to_str().unwrap()], &db);
    assert!(stdout(&out).contains("replaced"), "{}", both(&out));
    let models = csv_rows(&stdout(&store(&["export", "run_models"], &db)));
    assert_eq!(models.len(), 2, "{models:?}");
    assert!(
        models.iter().all(|m| m["status"] == "complete"),
        "{models:?}"
    );
    let problems = csv_rows(&stdout(&store(&["export", "problem_counts"], &db)));
    assert_eq!(problems.len(), 2 * 6, "no row left twice: {problems:?}");
    assert!(problems.iter().all(|p| p["n"] == "4"), "{problems:?}");
    let runs = csv_rows(&stdout(&store(&["export", "runs"], &db)));
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "complete");
}

#[test]
fn a_newer_schema_and_bad_urls_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.db");
    assert_eq!(store(&["ls"], &db).status.code(), Some(0));
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("INSERT INTO gpassk_schema VALUES (99, 'later')", [])
        .unwrap();
    drop(conn);
    let out = store(&["ls"], &db);
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
    let err = crate::common::stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("schema version 99 is newer"), "{err}");
    for url in ["mysql://x/y", "sqlite:"] {
        let out = crate::common::run(&["store", "ls", "--db", url]);
        assert_eq!(out.status.code(), Some(2), "{url}: {}", both(&out));
        assert_eq!(
            crate::common::stderr(&out).lines().count(),
            1,
            "{}",
            both(&out)
        );
    }
}

#[test]
fn a_run_with_a_store_pushes_when_it_ends_and_a_failed_push_keeps_the_run() {
    let env = Fixture::new(&sums(4)).with_server(FakeServer::builder().responder(smart_reply));
    let db = env.path().join("db/results.db");
    let models = format!("[store]\nurl = \"sqlite:{}\"\n{TWO_MODELS}", db.display());
    configure(&env, "n = 2", &models, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(both(&out).contains("stored in sqlite:"), "{}", both(&out));
    let runs = csv_rows(&stdout(&store(&["export", "runs"], &db)));
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "complete");

    // A store that cannot be opened: the run is kept whole, the way to push it again is given.
    let blocker = env.write("blocker", "a file, not a folder");
    let models = format!(
        "[store]\nurl = \"sqlite:{}/x.db\"\n{TWO_MODELS}",
        blocker.display()
    );
    configure(&env, "n = 2", &models, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let text = both(&out);
    assert!(
        text.contains("the run directory is intact; push it with"),
        "{text}"
    );
    assert!(text.contains("gpassk store push "), "{text}");
    let newest = crate::common::run_dirs(&env.path().join("results"));
    let last = newest.last().unwrap();
    assert!(last.join("report.md").exists() && last.join("manifest.json").exists());
}

#[test]
fn a_store_table_without_a_url_or_with_an_unknown_key_is_bad_input() {
    let env = Fixture::new(&sums(2));
    for (table, field) in [
        ("[store]\n", "store.url"),
        ("[store]\nurl = \"sqlite:x.db\"\nuser = \"me\"\n", "user"),
    ] {
        configure(&env, "n = 2", &format!("{table}{TWO_MODELS}"), "");
        let out = run(&env, &["--dry-run"]);
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        let err = crate::common::stderr(&out);
        assert!(err.contains(field), "{field}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_stored_run_reads_back_with_every_value_and_interval_exactly_as_its_folder() {
    let env = finished_run();
    let dir = gpassk::rundir::RunDir::at(env.run_dir());
    let db = env.path().join("gpassk.db");
    assert_eq!(
        store(&["push", dir.path().to_str().unwrap()], &db)
            .status
            .code(),
        Some(0)
    );
    let url = gpassk::store::StoreUrl::parse(&format!("sqlite:{}", db.display()), "db").unwrap();
    let store = gpassk::store::Store::open(&url).unwrap();
    let (notes, _) = gpassk::util::Notes::collect();
    let folder = gpassk::scoring::load_run(&dir, &notes).unwrap();
    let stored = store
        .results(&folder.run_id)
        .unwrap()
        .expect("the run is stored");
    assert!(store.results("no-such-run").unwrap().is_none());
    assert_eq!(stored.dataset, folder.dataset);
    assert_eq!((&stored.ks, &stored.taus), (&folder.ks, &folder.taus));
    assert_eq!(stored.models.len(), folder.models.len());
    for (s, f) in stored.models.iter().zip(&folder.models) {
        assert_eq!((&s.name, s.n, &s.problems), (&f.name, f.n, &f.problems));
        assert_eq!(s.estimates.len(), f.estimates.len(), "{}", f.name);
        for (a, b) in s.estimates.iter().zip(&f.estimates) {
            let key = (
                &a.metric, &a.subset, &a.exact, a.problems, a.excluded, a.short,
            );
            assert_eq!(
                key,
                (&b.metric, &b.subset, &b.exact, b.problems, b.excluded, b.short)
            );
            assert_eq!(
                a.value.map(f64::to_bits),
                b.value.map(f64::to_bits),
                "{:?}",
                a.metric
            );
            assert_eq!(
                a.ci.map(|c| (c.0.to_bits(), c.1.to_bits())),
                b.ci.map(|c| (c.0.to_bits(), c.1.to_bits()))
            );
        }
    }
}
