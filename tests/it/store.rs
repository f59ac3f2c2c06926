//! `gpassk store` over SQLite and a real PostgreSQL server: scored runs with their exact values,
//! a second push of the same run writing nothing, a changed run replaced whole, concurrent
//! pushes, a push killed mid-transaction leaving nothing, the schema upgraded from its first
//! version, per-sample rows, Parquet exports, and one-line errors that never show a password.

use crate::common::db::{admin, free_port, TestDb, PASSWORD, PASSWORD_ENV};
use crate::common::{both, read, stdout, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums, KEY};
use fake_openai::{FakeServer, Fault, Recorded};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const TWO_MODELS: &str = "[[models]]\nname = \"a\"\nmodel_id = \"a-1\"\n\
     [[models]]\nname = \"b\"\nmodel_id = \"b-1\"\n";

pub(crate) fn finished_run() -> Fixture {
    let env = Fixture::new(&sums(6)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 4", TWO_MODELS, "");
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    env
}

pub(crate) fn push(db: &TestDb, dirs: &[&Path]) -> std::process::Output {
    let mut args = vec!["store", "push"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    db.run(&args)
}

fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
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

fn export(db: &TestDb, table: &str) -> Vec<BTreeMap<String, String>> {
    let out = db.run(&["store", "export", table]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    csv_rows(&stdout(&out))
}

/// What a write would change: the SQLite file's bytes; on PostgreSQL every row's version
/// (`xmin` changes whenever a row is written, even with equal values).
fn written(db: &TestDb) -> String {
    match db {
        TestDb::Sqlite(p) => format!("{:?}", std::fs::read(p).unwrap()),
        TestDb::Postgres { .. } => gpassk::store::schema::TABLES
            .iter()
            .map(|t| {
                db.value(&format!(
                    "SELECT COALESCE(string_agg(xmin::text, ',' ORDER BY xmin::text), '') FROM {t}"
                ))
            })
            .collect::<Vec<_>>()
            .join(";"),
    }
}

#[test]
fn a_pushed_run_holds_its_exact_values_and_a_second_push_writes_nothing() {
    let env = finished_run();
    let dir = env.run_dir();
    for db in TestDb::both(&env.path().join("store/gpassk.db")) {
        let first = push(&db, &[&dir]);
        assert!(stdout(&first).contains(": pushed in "), "{}", both(&first));
        let before = written(&db);
        let again = push(&db, &[&dir]);
        assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
        assert!(written(&db) == before, "{db:?}: the second push wrote");

        // Every overall value of metrics.json is in the store, with its exact fraction.
        let metrics: serde_json::Value =
            serde_json::from_str(&read(&dir.join("metrics.json"))).unwrap();
        let stored = export(&db, "metric_values");
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
        let problems = export(&db, "problem_counts");
        assert_eq!(problems.len(), 2 * 6, "{problems:?}");
        assert!(problems.iter().all(|p| p["n"] == "4"), "{problems:?}");
        let ls = stdout(&db.run(&["store", "ls"]));
        assert_eq!(ls.lines().count(), 1, "{ls}");
        assert!(ls.contains("complete") && ls.contains("2 models"), "{ls}");
    }
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
    let dbs = TestDb::both(&env.path().join("gpassk.db"));
    for db in &dbs {
        assert_eq!(push(db, &[&dir]).status.code(), Some(0));
        let models = export(db, "run_models");
        let b_row = models.iter().find(|m| m["model"] == "b").expect("b stored");
        assert_eq!(b_row["status"], "failed", "{models:?}");
    }

    broken.store(false, Ordering::SeqCst);
    let out = run(&env, &["--quiet", "--resume", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    for db in &dbs {
        let out = push(db, &[&dir]);
        assert!(stdout(&out).contains("replaced"), "{}", both(&out));
        let models = export(db, "run_models");
        assert_eq!(models.len(), 2, "{models:?}");
        assert!(
            models.iter().all(|m| m["status"] == "complete"),
            "{models:?}"
        );
        let problems = export(db, "problem_counts");
        assert_eq!(problems.len(), 2 * 6, "no row left twice: {problems:?}");
        assert!(problems.iter().all(|p| p["n"] == "4"), "{problems:?}");
        let runs = export(db, "runs");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0]["status"], "complete");
    }
}

#[test]
fn a_newer_schema_and_bad_urls_are_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    for db in TestDb::both(&dir.path().join("new.db")) {
        assert_eq!(db.run(&["store", "ls"]).status.code(), Some(0));
        db.execute("INSERT INTO gpassk_schema VALUES (99, 'later')");
        let out = db.run(&["store", "ls"]);
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        let err = crate::common::stderr(&out);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("schema version 99 is newer"), "{err}");
    }
    for url in [
        "mysql://x/y",
        "sqlite:",
        "postgres://me@h:99999/d",
        "postgres://me@h/d?sslmode=verify",
    ] {
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

/// Runs `gpassk` with the password variable set to `password`, and checks the one-line error
/// with exit 2 that must come, without the password anywhere.
pub(crate) fn refused(args: &[&str], password: &str, says: &str) {
    let out = crate::common::gpassk()
        .args(args)
        .env(PASSWORD_ENV, password)
        .env("PGPASSWORD", password)
        .output()
        .unwrap();
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {text}");
    assert_eq!(crate::common::stderr(&out).lines().count(), 1, "{text}");
    assert!(text.contains(says), "{args:?}: {text}");
    assert!(!text.contains(password), "the password was shown: {text}");
}

#[test]
fn postgres_refused_connections_wrong_passwords_and_urls_are_one_line_errors_never_showing_it() {
    let db = TestDb::postgres();
    // The right password works over the socket and over TCP.
    for url in [db.url(), db.tcp_url()] {
        let out = crate::common::gpassk()
            .args(["store", "ls", "--db", &url, "--password-env", PASSWORD_ENV])
            .env(PASSWORD_ENV, PASSWORD)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{url}: {}", both(&out));
    }
    let wrong = "wrong-pw-8c1e5f";
    let url = db.url();
    let ls = ["store", "ls", "--db", &url, "--password-env", PASSWORD_ENV];
    refused(&ls, wrong, "password authentication failed");
    // PGPASSWORD, as psql reads it, when no variable is named.
    refused(
        &["store", "ls", "--db", &url],
        wrong,
        "password authentication failed",
    );
    let closed = format!("postgres://gpassk@127.0.0.1:{}/x", free_port());
    refused(
        &["store", "ls", "--db", &closed],
        PASSWORD,
        "cannot connect",
    );
    let in_url = format!("postgres://gpassk:{PASSWORD}@127.0.0.1/x");
    refused(
        &["store", "ls", "--db", &in_url],
        PASSWORD,
        "password in the URL",
    );
    refused(
        &[
            "history",
            "--db",
            &url,
            "--password-env",
            "GPASSK_TEST_UNSET_VAR",
        ],
        PASSWORD,
        "GPASSK_TEST_UNSET_VAR is not set",
    );
}

/// A dashboard's role may only read: it opens the store, lists and exports, never writes.
#[test]
fn a_role_that_may_only_read_reads_the_store() {
    let env = finished_run();
    let db = TestDb::postgres();
    assert_eq!(push(&db, &[&env.run_dir()]).status.code(), Some(0));
    let TestDb::Postgres { name } = &db else {
        unreachable!()
    };
    admin(name).batch_execute(&format!(
        "CREATE ROLE reader_{name} LOGIN PASSWORD '{PASSWORD}'; \
         GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader_{name}"
    ));
    let url = db.url().replace("gpassk@", &format!("reader_{name}@"));
    for args in [
        &["store", "ls"][..],
        &["store", "export", "runs"],
        &["history"],
    ] {
        let out = crate::common::gpassk()
            .args(args)
            .args(["--db", &url, "--password-env", PASSWORD_ENV])
            .env(PASSWORD_ENV, PASSWORD)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", both(&out));
    }
    // A new run is for a role that may write.
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let newest = crate::common::run_dirs(&env.results()).pop().unwrap();
    let out = crate::common::gpassk()
        .args(["store", "push", newest.to_str().unwrap()])
        .args(["--db", &url, "--password-env", PASSWORD_ENV])
        .env(PASSWORD_ENV, PASSWORD)
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0), "{}", both(&out));
    assert!(both(&out).contains("permission denied"), "{}", both(&out));
}

#[test]
fn a_run_with_a_store_pushes_when_it_ends_and_a_failed_push_keeps_the_run() {
    let env = Fixture::new(&sums(4)).with_server(FakeServer::builder().responder(smart_reply));
    for db in TestDb::both(&env.path().join("db/results.db")) {
        let models = format!("{}{TWO_MODELS}", db.store_table());
        configure(&env, "n = 2", &models, "");
        let mut command = env.command(&["run", "--quiet"]);
        let out = db
            .env(&mut command)
            .env("GPASSK_TEST_KEY", KEY)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        assert!(both(&out).contains("stored in "), "{}", both(&out));
        assert!(!both(&out).contains(PASSWORD));
        let runs = export(&db, "runs");
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0]["status"], "complete");
        // What the run pushed is what scoring its folder again gives.
        let text = stdout(&out);
        let dir = text
            .lines()
            .find_map(|l| l.strip_prefix("results: "))
            .unwrap_or_else(|| panic!("no results line in {text}"));
        let again = push(&db, &[Path::new(dir)]);
        assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
    }

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

/// The run stopped before it was scored: the push at its end scores what the checkpoints hold.
#[test]
fn an_interrupted_run_is_pushed_as_interrupted() {
    let slow = FakeServer::builder().responder(|r: &Recorded| {
        std::thread::sleep(Duration::from_millis(20));
        smart_reply(r)
    });
    let env = Fixture::new(&sums(10)).with_server(slow);
    let slow = env.server();
    let db = TestDb::sqlite(&env.path().join("gpassk.db"));
    let models = format!("{}{TWO_MODELS}", db.store_table());
    let cfg = configure(&env, "n = 8", &models, "concurrency = 2");
    let child = crate::run_fake::spawn_run(&cfg);
    wait_for("a few requests", || slow.request_count() >= 5);
    let out = crate::run_fake::interrupt(child);
    assert!(both(&out).contains("stored in sqlite:"), "{}", both(&out));
    let runs = export(&db, "runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "interrupted");
    let again = push(&db, &[&env.run_dir()]);
    assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
}

#[test]
fn a_store_table_without_a_url_or_with_an_unknown_key_is_bad_input() {
    let env = Fixture::new(&sums(2));
    for (table, field) in [
        ("[store]\n", "store.url"),
        ("[store]\nurl = \"sqlite:x.db\"\nuser = \"me\"\n", "user"),
        (
            "[store]\nurl = \"sqlite:x.db\"\npassword_env = \"PW\"\n",
            "store.password_env",
        ),
        ("[store]\nurl = \"postgres://me:pw@h/d\"\n", "store.url"),
        // A CA file is read with the config, not when the run ends and pushes.
        (
            "[store]\nurl = \"postgres://me@db.example/d?sslrootcert=/nonexistent/ca.pem\"\n",
            "`store.url`: sslrootcert /nonexistent/ca.pem: cannot read",
        ),
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
    let (notes, _) = gpassk::util::Notes::collect();
    let folder = gpassk::scoring::load_run(&dir, &notes).unwrap();
    for db in TestDb::both(&env.path().join("gpassk.db")) {
        assert_eq!(push(&db, &[dir.path()]).status.code(), Some(0));
        let url = gpassk::store::StoreUrl::parse(&db.url(), "db")
            .unwrap()
            .with_password_env(
                matches!(db, TestDb::Postgres { .. }).then_some(PASSWORD_ENV),
                "x",
            )
            .unwrap();
        let mut store = gpassk::store::Store::open(&url).unwrap();
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
            assert!(f.found_by.is_some());
            assert_eq!(s.found_by, f.found_by, "{}", f.name);
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
}

/// Two runs of the fixture's config, finished.
fn two_runs() -> (Fixture, Vec<std::path::PathBuf>) {
    let env = finished_run();
    let out = run(&env, &["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let runs = crate::common::run_dirs(&env.results());
    assert_eq!(runs.len(), 2);
    (env, runs)
}

/// The gpassk sessions of the test cluster waiting for a lock, by the statement they wait in.
fn waiting(db: &TestDb) -> Vec<String> {
    db.column(
        "SELECT query FROM pg_stat_activity WHERE application_name = 'gpassk' \
         AND wait_event_type = 'Lock' AND datname = current_database()",
    )
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    // Generous: only a machine that stalled for minutes fails it.
    for _ in 0..1200 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("gave up waiting for {what}");
}

#[test]
fn two_concurrent_pushes_of_different_runs_both_land() {
    let (env, runs) = two_runs();
    for db in TestDb::both(&env.path().join("gpassk.db")) {
        // On the server, a lock the test holds stops both pushes in the middle of their
        // transactions, so they are open at the same time; then both go on.
        let mut held = matches!(db, TestDb::Postgres { .. }).then(|| {
            let TestDb::Postgres { name } = &db else {
                unreachable!()
            };
            let _ = db.run(&["store", "ls"]); // the schema exists before the table is locked
            let mut a = admin(name);
            a.batch_execute("BEGIN; LOCK TABLE fingerprint_counts IN ACCESS EXCLUSIVE MODE");
            a
        });
        let children: Vec<_> = runs
            .iter()
            .map(|r| {
                let mut c = db.command(&["store", "push", r.to_str().unwrap()]);
                c.stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        if let Some(a) = held.as_mut() {
            wait_for("both pushes inside their transactions", || {
                waiting(&db).len() == 2
            });
            a.batch_execute("COMMIT");
        }
        for child in children {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0), "{db:?}: {}", both(&out));
            assert!(stdout(&out).contains("pushed"), "{}", both(&out));
        }
        assert_eq!(export(&db, "runs").len(), 2, "{db:?}");
        assert_eq!(export(&db, "problem_counts").len(), 2 * 2 * 6, "{db:?}");
    }
}

#[test]
fn a_push_killed_mid_transaction_leaves_nothing_half_written() {
    let env = finished_run();
    let dir = env.run_dir();
    let db = TestDb::postgres();
    let TestDb::Postgres { name } = &db else {
        unreachable!()
    };
    assert_eq!(db.run(&["store", "ls"]).status.code(), Some(0));
    let mut lock = admin(name);
    lock.batch_execute("BEGIN; LOCK TABLE fingerprint_counts IN ACCESS EXCLUSIVE MODE");
    let mut child = db
        .command(&["store", "push", dir.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The push has written its run, models, metric values and problem counts, and waits to
    // write the fingerprint counts: killed there, it never commits.
    wait_for("the push to reach the fingerprint counts", || {
        waiting(&db)
            .iter()
            .any(|q| q.starts_with("INSERT INTO fingerprint_counts"))
    });
    child.kill().unwrap();
    child.wait().unwrap();
    lock.batch_execute("COMMIT");
    wait_for("the killed push's session to end", || {
        db.value(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = 'gpassk' \
             AND datname = current_database()",
        ) == "0"
    });
    for table in gpassk::store::schema::TABLES {
        assert_eq!(
            db.value(&format!("SELECT COUNT(*) FROM {table}")),
            "0",
            "{table} holds rows of a push that never committed"
        );
    }
    let out = push(&db, &[&dir]);
    assert!(stdout(&out).contains(": pushed in "), "{}", both(&out));
    assert_eq!(export(&db, "problem_counts").len(), 2 * 6);
}

/// A value as a SQL literal (the test writes the first schema's rows the way its SQL reads).
fn literal(v: &gpassk::store::rows::Value) -> String {
    use gpassk::store::rows::Value;
    match v {
        Value::Null => "NULL".into(),
        Value::Int(n) => n.to_string(),
        Value::Real(x) => format!("{x:?}"),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
    }
}

/// SQL that makes a database of schema `version` holding `results`' rows as the gpassk of that
/// version pushed them (`samples`: with a row per graded sample): the tables it had, the sample
/// rows without the columns added since, and the content digest it recorded.
fn old_database(
    version: usize,
    dir: &gpassk::rundir::RunDir,
    results: &gpassk::scoring::RunResults,
    samples: bool,
) -> String {
    use gpassk::store::rows::{RowDigest, Value};
    use gpassk::store::schema::{MIGRATIONS, VERSION_TABLE};
    let rows = gpassk::store::rows::of_run(dir, results).unwrap();
    let mut sql = format!("{VERSION_TABLE};\n");
    for (i, m) in MIGRATIONS[..version].iter().enumerate() {
        sql.push_str(&format!(
            "{m}\nINSERT INTO gpassk_schema VALUES ({}, 'then');\n",
            i + 1
        ));
    }
    // Tables and columns added after `version`, which that gpassk neither wrote nor digested.
    let later = MIGRATIONS[version..].join("\n");
    let known = |table: &str| !later.contains(&format!("CREATE TABLE {table} "));
    let mut digest = RowDigest::default();
    let mut inserts: Vec<(&str, Vec<(&str, Value)>)> = Vec::new();
    let added = |c: &str| later.contains(&format!("ADD COLUMN {c} "));
    for (table, table_rows) in rows.tables().into_iter().skip(1) {
        for row in table_rows.iter().filter(|_| known(table)) {
            let mut row = row.clone();
            row.retain(|(c, _)| !added(c));
            digest.add(&row);
            inserts.push((table, row));
        }
    }
    let mut run = rows.runs[0].clone();
    digest.add(&run);
    if samples {
        let (plan, _) = gpassk::scoring::load_plan(dir, &[]).unwrap();
        let (notes, _) = gpassk::util::Notes::collect();
        for (m, settings) in results.models.iter().zip(&plan.settings.models) {
            gpassk::scoring::for_each_sample(&plan, dir, settings, &notes, |s| {
                let mut row = gpassk::store::rows::sample_row(&results.run_id, &m.name, &s);
                row.retain(|(c, _)| !later.contains(&format!("ADD COLUMN {c} ")));
                digest.add(&row);
                inserts.push(("samples", row));
                Ok(())
            })
            .unwrap();
        }
    }
    run.push(("content_sha256", Value::Text(digest.finish())));
    inserts.insert(0, ("runs", run));
    for (table, row) in inserts {
        let columns: Vec<&str> = row.iter().map(|(c, _)| *c).collect();
        let values: Vec<String> = row.iter().map(|(_, v)| literal(v)).collect();
        sql.push_str(&format!(
            "INSERT INTO {table} ({}) VALUES ({});\n",
            columns.join(", "),
            values.join(", ")
        ));
    }
    sql
}

/// Every schema version this gpassk applies, as `versions` reads them back.
fn every_version() -> Vec<String> {
    (1..=gpassk::store::schema::VERSION)
        .map(|v| v.to_string())
        .collect()
}

fn versions(db: &TestDb) -> Vec<String> {
    db.column("SELECT version FROM gpassk_schema ORDER BY version")
}

#[test]
fn a_first_version_database_upgrades_and_keeps_its_rows() {
    let env = finished_run();
    let dir = gpassk::rundir::RunDir::at(env.run_dir());
    let (notes, _) = gpassk::util::Notes::collect();
    let results = gpassk::scoring::load_run(&dir, &notes).unwrap();
    let rows = gpassk::store::rows::of_run(&dir, &results).unwrap();
    let sql = old_database(1, &dir, &results, false);
    for db in TestDb::both(&env.path().join("v1.db")) {
        db.execute(&sql);
        let out = db.run(&["store", "ls"]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        assert_eq!(versions(&db), every_version());
        for (table, rows) in rows.tables() {
            let kept = if table == "found_by_counts" {
                0
            } else {
                rows.len()
            };
            assert_eq!(export(&db, table).len(), kept, "{table}");
        }
        assert_eq!(export(&db, "samples").len(), 0);
        // The rows kept are the rows that gpassk made of the run: pushing it adds only how its
        // answers were found, once.
        let again = push(&db, &[dir.path()]);
        assert!(stdout(&again).contains("replaced"), "{}", both(&again));
        assert_eq!(
            export(&db, "found_by_counts").len(),
            rows.found_by_counts.len()
        );
        let again = push(&db, &[dir.path()]);
        assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
        let samples = db.run(&["store", "push", "--samples", dir.path().to_str().unwrap()]);
        assert!(
            stdout(&samples).contains("samples stored"),
            "{}",
            both(&samples)
        );
        assert_eq!(export(&db, "samples").len(), 2 * 6 * 5);
    }
}

/// The store's read-back of `run_id` on `db`.
fn stored(db: &TestDb, run_id: &str) -> gpassk::scoring::RunResults {
    let url = gpassk::store::StoreUrl::parse(&db.url(), "db")
        .unwrap()
        .with_password_env(
            matches!(db, TestDb::Postgres { .. }).then_some(PASSWORD_ENV),
            "x",
        )
        .unwrap();
    let mut store = gpassk::store::Store::open(&url).unwrap();
    store.results(run_id).unwrap().expect("the run is stored")
}

#[test]
fn a_third_version_database_gains_how_answers_were_found_and_a_push_fills_it_in() {
    let env = finished_run();
    let dir = gpassk::rundir::RunDir::at(env.run_dir());
    let (notes, _) = gpassk::util::Notes::collect();
    let results = gpassk::scoring::load_run(&dir, &notes).unwrap();
    let sql = old_database(3, &dir, &results, true);
    for db in TestDb::both(&env.path().join("v3.db")) {
        db.execute(&sql);
        let out = db.run(&["store", "ls"]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        assert_eq!(versions(&db), every_version());
        // The old rows are kept; how their answers were found is not known.
        let samples = export(&db, "samples");
        assert_eq!(samples.len(), 2 * 6 * 5);
        assert!(
            samples.iter().all(|s| s["found_by"].is_empty()),
            "{samples:?}"
        );
        assert_eq!(export(&db, "found_by_counts").len(), 0);
        let old = stored(&db, &results.run_id);
        assert!(old.models.iter().all(|m| m.found_by.is_none()));
        // The reports of a run read back from it say so, never a share of nothing.
        let text = gpassk::report::found_block(&old, 80);
        assert_eq!(text, "", "no model says how its answers were found");

        let out = db.run(&["store", "push", "--samples", dir.path().to_str().unwrap()]);
        assert!(stdout(&out).contains("replaced"), "{}", both(&out));
        let samples = export(&db, "samples");
        assert_eq!(samples.len(), 2 * 6 * 5);
        let grade = gpassk::grade::GradeConfig::default();
        let (plan, _) = gpassk::scoring::load_plan(&dir, &[]).unwrap();
        let checkpoint = read(&dir.checkpoint("a"));
        for line in checkpoint.lines() {
            let r: serde_json::Value = serde_json::from_str(line).unwrap();
            let index = match &r["sample_index"] {
                serde_json::Value::Number(n) => n.to_string(),
                _ => "-1".to_string(),
            };
            let row = (samples.iter())
                .find(|s| {
                    s["model"] == "a"
                        && s["problem_id"] == r["problem_id"].as_str().unwrap()
                        && s["sample"] == index
                })
                .expect("a row per unit");
            let gold = (plan.problems.iter())
                .find(|p| p.id == r["problem_id"].as_str().unwrap())
                .map(|p| p.answer.as_str())
                .unwrap();
            let v = gpassk::grade::grade(gold, r["response"].as_str().unwrap(), &grade);
            assert_eq!(row["found_by"], v.found_by.as_str(), "{line}");
        }
        // Per model, the answers by way: as many as its sample rows, as the folder counts them.
        let counts = export(&db, "found_by_counts");
        for m in &results.models {
            let sum: u64 = (counts.iter())
                .filter(|c| c["model"] == m.name)
                .map(|c| c["answers"].parse::<u64>().unwrap())
                .sum();
            assert_eq!(sum, 6 * 5, "{}", m.name);
        }
        let new = stored(&db, &results.run_id);
        for (s, f) in new.models.iter().zip(&results.models) {
            assert!(f.found_by.is_some());
            assert_eq!(s.found_by, f.found_by, "{}", f.name);
        }
        assert_eq!(
            gpassk::report::found_block(&new, 80),
            gpassk::report::found_block(&results, 80)
        );
    }
}

#[test]
fn samples_are_pushed_with_their_verdicts_answers_and_response_hashes() {
    let env = finished_run();
    let dir = env.run_dir();
    let checkpoint = read(&dir.join("checkpoints/a.jsonl"));
    let record: serde_json::Value =
        serde_json::from_str(checkpoint.lines().next().unwrap()).unwrap();
    for db in TestDb::both(&env.path().join("gpassk.db")) {
        let out = db.run(&["store", "push", "--samples", dir.to_str().unwrap()]);
        assert!(stdout(&out).contains(": pushed in "), "{}", both(&out));
        let samples = export(&db, "samples");
        // 4 samples and the greedy answer (-1) per problem and model.
        assert_eq!(samples.len(), 2 * 6 * 5, "{samples:?}");
        assert_eq!(
            samples.iter().filter(|s| s["sample"] == "-1").count(),
            2 * 6
        );
        let problems = export(&db, "problem_counts");
        let correct: u64 = problems
            .iter()
            .map(|p| p["c"].parse::<u64>().unwrap())
            .sum();
        let correct_samples = samples
            .iter()
            .filter(|s| s["sample"] != "-1" && s["verdict"] == "correct")
            .count() as u64;
        assert_eq!(correct_samples, correct);
        // The first record of model a, by its response's sha256 and the answer read from it.
        let index = match &record["sample_index"] {
            serde_json::Value::Number(n) => n.to_string(),
            _ => "-1".to_string(),
        };
        let row = samples
            .iter()
            .find(|s| {
                s["model"] == "a"
                    && s["problem_id"] == record["problem_id"].as_str().unwrap()
                    && s["sample"] == index
            })
            .expect("the record's row");
        let response = record["response"].as_str().unwrap();
        let sha = gpassk::util::hex(&<sha2::Sha256 as sha2::Digest>::digest(response));
        assert_eq!(row["response_sha256"], sha);
        let grade = gpassk::grade::GradeConfig::default();
        assert_eq!(
            Some(row["extracted"].clone()),
            gpassk::grade::extract(response, &grade)
        );
        let again = db.run(&["store", "push", "--samples", dir.to_str().unwrap()]);
        assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
        // A push without --samples of the same run leaves its sample rows alone.
        let plain = push(&db, &[&dir]);
        assert!(stdout(&plain).contains("unchanged"), "{}", both(&plain));
        assert_eq!(export(&db, "samples").len(), 2 * 6 * 5);
    }
}

#[test]
fn a_table_exported_to_parquet_reads_back_with_the_rows_of_its_csv() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let env = finished_run();
    let dir = env.run_dir();
    for db in TestDb::both(&env.path().join("gpassk.db")) {
        let out = db.run(&["store", "push", "--samples", dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        for table in gpassk::store::schema::TABLES {
            let file = env.path().join(format!("{table}.parquet"));
            let out = db.run(&["store", "export", table, "-o", file.to_str().unwrap()]);
            assert_eq!(out.status.code(), Some(0), "{}", both(&out));
            let csv = export(&db, table);
            let reader = SerializedFileReader::new(std::fs::File::open(&file).unwrap()).unwrap();
            let rows: Vec<parquet::record::Row> = reader
                .get_row_iter(None)
                .unwrap()
                .map(Result::unwrap)
                .collect();
            assert_eq!(rows.len(), csv.len(), "{table}");
            // A run without a verifier has no per-problem values beyond its counts.
            assert!(!rows.is_empty() || table == "problem_values", "{table}");
            for (row, expected) in rows.iter().zip(&csv) {
                for (name, field) in row.get_column_iter() {
                    let text = match field {
                        Field::Null => String::new(),
                        Field::Long(n) => n.to_string(),
                        Field::Double(x) => x.to_string(),
                        Field::Str(s) => gpassk::report::csv_cell(s).into_owned(),
                        other => panic!("{table}.{name}: {other:?}"),
                    };
                    assert_eq!(text, expected[name], "{table}.{name}");
                }
            }
        }
    }
}

/// A shard run is part of an evaluation: it is not stored on its own; `merge` stores the
/// merged run once (its per-sample rows too, from the plan its manifest records), as `run`
/// stores a whole one.
#[test]
fn shard_runs_are_not_stored_and_their_merge_is() {
    let env = Fixture::new(&sums(6)).with_server(FakeServer::builder().responder(smart_reply));
    for (i, db) in TestDb::both(&env.path().join("db/results.db"))
        .into_iter()
        .enumerate()
    {
        let table = format!("{}samples = true\n", db.store_table());
        let results = env.path().join(format!("results{i}"));
        let extra = format!("output_dir = \"{}\"", results.display());
        configure(&env, "n = 2", &format!("{table}{TWO_MODELS}"), "");
        let cfg = env.file("config.toml");
        let text = read(&cfg).replace(
            &format!("output_dir = \"{}/results\"", env.path().display()),
            &extra,
        );
        std::fs::write(&cfg, text).unwrap();
        for shard in ["0/2", "1/2"] {
            let mut command = env.command(&["run", "--shard", shard]);
            let out = db
                .env(&mut command)
                .env("GPASSK_TEST_KEY", KEY)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(0), "{}", both(&out));
            assert!(
                both(&out).contains("a shard run is not stored"),
                "{}",
                both(&out)
            );
        }
        if let TestDb::Sqlite(path) = &db {
            assert!(!path.exists(), "a shard run was stored");
        } else {
            assert!(export(&db, "runs").is_empty(), "a shard run was stored");
        }
        let merged = env.path().join(format!("merged{i}"));
        let mut command = crate::common::gpassk();
        command.args(["merge", "--shards", "2", "--from"]);
        command.arg(&results).arg("--out").arg(&merged);
        let out = db.env(&mut command).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", both(&out));
        assert!(both(&out).contains("stored in "), "{}", both(&out));
        let runs = export(&db, "runs");
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0]["run_id"], format!("merged{i}"));
        assert_eq!(runs[0]["status"], "complete");
        // Every unit of both shards: 6 problems × (2 samples + greedy) × 2 models.
        assert_eq!(export(&db, "samples").len(), 36);
        // What merge stored is what pushing the merged folder again gives.
        let again = db.run(&["store", "push", "--samples", merged.to_str().unwrap()]);
        assert!(stdout(&again).contains("unchanged"), "{}", both(&again));
    }
}

/// `scores.json`, kept beside the reports, reads back what grading the run gives, and only while
/// every file it rests on is unchanged: a new checkpoint line, a judge verdict or another grader
/// setting means grading again.
#[test]
fn kept_scores_read_back_what_grading_gives_and_only_while_the_files_are_unchanged() {
    let env = finished_run();
    let dir = gpassk::rundir::RunDir::at(env.run_dir());
    let (notes, _) = gpassk::util::Notes::collect();
    let graded = gpassk::scoring::load_run(&dir, &notes).unwrap();
    let (plan, manifest) = gpassk::scoring::load_plan(&dir, &[]).unwrap();
    let kept = gpassk::scoring::stored::read_back(&dir, &plan, &manifest).expect("fresh scores");
    crate::common::assert_same_scores(&kept, &graded);
    assert!(kept.models.iter().any(|m| m
        .values
        .rows
        .iter()
        .any(|r| r.iter().any(Option::is_some))));

    // Another grader setting: the kept parts are not those of this plan.
    let (strict, _) = gpassk::scoring::load_plan(&dir, &["evaluation.precision=0".into()]).unwrap();
    assert!(gpassk::scoring::stored::read_back(&dir, &strict, &manifest).is_none());
    // A grades file that appears (judge verdicts), then a checkpoint that grows.
    let grades = dir.grades("a");
    std::fs::create_dir_all(grades.parent().unwrap()).unwrap();
    std::fs::write(&grades, "").unwrap();
    assert!(gpassk::scoring::stored::read_back(&dir, &plan, &manifest).is_none());
    std::fs::remove_file(&grades).unwrap();
    assert!(gpassk::scoring::stored::read_back(&dir, &plan, &manifest).is_some());
    let checkpoint = dir.checkpoint("a");
    let text = read(&checkpoint);
    let first = text.lines().next().unwrap();
    std::fs::write(&checkpoint, format!("{text}{first}\n")).unwrap();
    assert!(gpassk::scoring::stored::read_back(&dir, &plan, &manifest).is_none());
    // Scoring again keeps the new parts: fresh again.
    crate::common::ok(&crate::common::run(&[
        "score",
        dir.path().to_str().unwrap(),
        "--quiet",
    ]));
    let kept = gpassk::scoring::stored::read_back(&dir, &plan, &manifest).expect("rescored");
    let graded = gpassk::scoring::load_run(&dir, &notes).unwrap();
    crate::common::assert_same_scores(&kept, &graded);
}
