//! The results database never loses or replaces a run silently, on SQLite and on the test
//! PostgreSQL cluster: another run with the same id (same folder name, or two machines starting
//! one config in the same second) is refused naming both, a run moved or copied is the same run,
//! a push without `--samples` keeps the samples stored, `store export -o` never writes over the
//! database, a lock held past 30 s ends with "locked", and the command printed after a failed
//! push names the password variable.

use crate::common::db::{admin, free_port, TestDb, PASSWORD, PASSWORD_ENV};
use crate::common::{both, copy_dir, read, stderr, stdout, Fixture};
use crate::run_fake::{configure, smart_reply, sums, KEY};
use crate::store::{finished_run, push};
use fake_openai::FakeServer;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn rows(db: &TestDb, table: &str) -> usize {
    db.value(&format!("SELECT COUNT(*) FROM {table}"))
        .parse()
        .unwrap()
}

/// A copy of run `dir` at `to/<its name>` with manifest fields set to `changes`.
fn copy_with(dir: &Path, to: &Path, changes: &[(&str, &str)]) -> PathBuf {
    let copy = to.join(dir.file_name().unwrap());
    copy_dir(dir, &copy);
    let path = copy.join("manifest.json");
    let mut m: serde_json::Value = serde_json::from_str(&read(&path)).unwrap();
    for (key, value) in changes {
        m[key] = (*value).into();
    }
    std::fs::write(&path, m.to_string()).unwrap();
    copy
}

#[test]
fn another_run_with_the_same_id_is_refused_naming_both() {
    let env = finished_run();
    let dir = env.run_dir();
    let manifest: serde_json::Value =
        serde_json::from_str(&read(&dir.join("manifest.json"))).unwrap();
    let origin = manifest["origin"]
        .as_str()
        .expect("a new run records its origin");
    assert!(origin.ends_with(&format!(":{}", dir.canonicalize().unwrap().display())));
    let created = manifest["created_at"].as_str().unwrap();
    // The same run moved to another folder (or machine): the same run, nothing to write.
    let moved = copy_with(&dir, &env.path().join("moved"), &[]);
    // One config started on two machines in the same second: same id and time, another place.
    let twin = copy_with(
        &dir,
        &env.path().join("other-machine"),
        &[("origin", "gpu-node-7:/scratch/results/run")],
    );
    // Another run given the same folder name: same id, another start.
    let namesake = copy_with(
        &dir,
        &env.path().join("namesake"),
        &[("created_at", "2026-11-30T06:00:00.000Z")],
    );
    for db in TestDb::both(&env.path().join("gpassk.db")) {
        assert!(stdout(&push(&db, &[&dir])).contains(": pushed in "));
        let out = push(&db, &[&moved]);
        assert!(stdout(&out).contains("unchanged"), "{db:?}: {}", both(&out));
        let held = db.column("SELECT manifest FROM runs");
        for (other, says) in [
            (&twin, "created 2026"),
            (&namesake, "created 2026-11-30T06:00:00.000Z"),
        ] {
            let out = push(&db, &[other]);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{db:?}: {}", both(&out));
            assert!(
                err.contains("already holds another run with the id"),
                "{err}"
            );
            assert!(
                err.contains(&format!("created {created} at {origin}")),
                "{err}"
            );
            assert!(err.contains(says), "{err}");
            assert!(err.contains("nothing was written"), "{err}");
            assert_eq!(db.column("SELECT manifest FROM runs"), held, "{db:?}");
        }
        assert!(
            stderr(&push(&db, &[&twin])).contains("at gpu-node-7:/scratch/results/run"),
            "the other place is named"
        );
        assert_eq!(db.column("SELECT origin FROM runs"), [origin]);
    }
}

#[test]
fn a_push_without_samples_keeps_the_stored_samples_while_the_run_is_unchanged() {
    let env = finished_run();
    let dir = env.run_dir();
    let path = dir.to_str().unwrap();
    let dbs = TestDb::both(&env.path().join("gpassk.db"));
    for db in &dbs {
        let first = db.run(&["store", "push", "--samples", path]);
        assert!(stdout(&first).contains(": pushed in "), "{}", both(&first));
        assert_eq!(rows(db, "samples"), 2 * 6 * 5);
        let plain = db.run(&["store", "push", path]);
        assert!(stdout(&plain).contains("unchanged"), "{}", both(&plain));
        assert_eq!(
            rows(db, "samples"),
            2 * 6 * 5,
            "{db:?}: the samples are kept"
        );
    }
    // The run changes (a sample gone): its rows are replaced, and a push without samples says
    // that the samples of the old content went with them.
    let checkpoint = dir.join("checkpoints/a.jsonl");
    let text = read(&checkpoint);
    let kept: Vec<&str> = text.lines().collect();
    std::fs::write(&checkpoint, kept[..kept.len() - 1].join("\n") + "\n").unwrap();
    for db in &dbs {
        let plain = db.run(&["store", "push", path]);
        let said = stdout(&plain);
        assert_eq!(plain.status.code(), Some(0), "{}", both(&plain));
        assert!(said.contains("replaced (its content changed)"), "{said}");
        assert!(
            said.contains("its 60 stored sample rows were of the old content and are removed"),
            "{said}"
        );
        assert!(said.contains("push with --samples"), "{said}");
        assert_eq!(rows(db, "samples"), 0, "{db:?}");
        let again = db.run(&["store", "push", "--samples", path]);
        assert!(
            stdout(&again).contains("samples stored"),
            "{}",
            both(&again)
        );
        assert_eq!(rows(db, "samples"), 2 * 6 * 5 - 1, "{db:?}");
    }
}

#[test]
fn store_export_never_writes_over_the_database() {
    let env = finished_run();
    let folder = env.path().join("db");
    let file = folder.join("gpassk.db");
    let db = TestDb::sqlite(&file);
    assert_eq!(push(&db, &[&env.run_dir()]).status.code(), Some(0));
    let before = std::fs::read(&file).unwrap();
    let link = env.path().join("link.db");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let hard = env.path().join("hard.db");
    std::fs::hard_link(&file, &hard).unwrap();
    let dotted = folder.join("../db/./gpassk.db");
    let journal = folder.join("gpassk.db-journal");
    for target in [
        &file,
        &link,
        &hard,
        &dotted,
        &journal,
        &PathBuf::from("gpassk.db"),
    ] {
        let out = db
            .command(&["store", "export", "runs", "-o", target.to_str().unwrap()])
            .current_dir(&folder)
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{target:?}: {}", both(&out));
        assert!(err.contains("is the database"), "{target:?}: {err}");
    }
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "the database is untouched"
    );
    assert!(!journal.exists());
    let csv = env.path().join("runs.csv");
    let out = db.run(&["store", "export", "runs", "-o", csv.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert!(read(&csv).starts_with("run_id,"));
}

/// The advisory lock key of a push of `run_id` (conn.rs: the run id hashed with the schema key).
const SCHEMA_LOCK: i64 = 0x6770_6173_736b;

#[test]
fn a_lock_held_by_another_process_waits_30_s_then_says_locked() {
    let env = finished_run();
    let dir = env.run_dir();
    let run_id = dir.file_name().unwrap().to_str().unwrap().to_string();
    let sqlite = TestDb::sqlite(&env.path().join("locked.db"));
    let pg = TestDb::postgres();
    for db in [&sqlite, &pg] {
        assert_eq!(db.run(&["store", "ls"]).status.code(), Some(0));
    }
    // Another program holds SQLite's write lock; another push holds the run's lock on the server.
    let TestDb::Sqlite(file) = &sqlite else {
        unreachable!()
    };
    let holder = rusqlite::Connection::open(file).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let TestDb::Postgres { name } = &pg else {
        unreachable!()
    };
    let mut server_holder = admin(name);
    server_holder.batch_execute(&format!(
        "SELECT pg_advisory_lock(hashtextextended('{run_id}', {SCHEMA_LOCK}))"
    ));
    let started = Instant::now();
    let spawn = |db: &TestDb, args: &[&str]| {
        db.command(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let path = dir.to_str().unwrap();
    let waiting = [
        spawn(&sqlite, &["store", "ls"]),
        spawn(&sqlite, &["store", "push", path]),
        spawn(&pg, &["store", "push", path]),
    ];
    for child in waiting {
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{}", both(&out));
        assert!(
            err.contains("the database is locked by another process (waited 30 s)"),
            "{err}"
        );
        assert!(!err.contains("not a database gpassk can use"), "{err}");
        assert!(!both(&out).contains(PASSWORD));
    }
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(29), "{waited:?}");
    // One wait of 30 s, not one per statement.
    assert!(waited < Duration::from_secs(59), "{waited:?}");
    drop(holder);
    server_holder.batch_execute("SELECT pg_advisory_unlock_all()");
    for db in [&sqlite, &pg] {
        assert!(stdout(&push(db, &[&dir])).contains(": pushed in "));
    }
}

#[test]
fn the_push_command_after_a_failed_store_names_the_password_variable() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    let store = format!(
        "[store]\nurl = \"postgres://evals@127.0.0.1:{}/evals?sslmode=disable\"\npassword_env = \"{PASSWORD_ENV}\"\n[[models]]\nname = \"a\"\n",
        free_port()
    );
    configure(&env, "n = 2", &store, "");
    let out = env
        .command(&["run", "--quiet"])
        .env("GPASSK_TEST_KEY", KEY)
        .env(PASSWORD_ENV, PASSWORD)
        .output()
        .unwrap();
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    let line = (text.lines())
        .find(|l| l.trim_start().starts_with("gpassk store push "))
        .unwrap_or_else(|| panic!("no push command in {text}"));
    assert!(
        line.ends_with(&format!(" --password-env {PASSWORD_ENV}")),
        "{line}"
    );
    assert!(line.contains("--db 'postgres://evals@127.0.0.1:"), "{line}");
    assert!(!text.contains(PASSWORD));
}
