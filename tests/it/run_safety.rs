//! Run directories that cannot be corrupted: the run lock, duplicate units, `--resume latest` of
//! this config only, resume identity, stop signals and their grace, `report --out` and `merge`.

use crate::common::{both, gpassk, read, run as gpassk_run, run_dirs, Fixture};
use crate::run_fake::{configure, run, smart_reply, sums, usable_units, KEY, ONE_MODEL};
use fake_openai::{ChoiceReply, FakeServer, Fault, Recorded, Reply};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A server answering correctly after `delay` per request.
fn slow_server(delay: Duration) -> fake_openai::FakeServerBuilder {
    FakeServer::builder().responder(move |r: &Recorded| {
        std::thread::sleep(delay);
        smart_reply(r)
    })
}

/// `gpassk run ARGS` for the fixture's config, in the background with piped output.
fn spawn_run(env: &Fixture, args: &[&str]) -> Child {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    env.command(&all)
        .env("GPASSK_TEST_KEY", KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits (up to a minute) until `ready` holds.
fn wait_for(mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

fn manifest(run_dir: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&run_dir.join("manifest.json"))).unwrap()
}

/// Appends `text` to the fixture's config.toml.
fn append_config(env: &Fixture, text: &str) {
    let path = env.file("config.toml");
    let mut config = read(&path);
    config.push_str(text);
    std::fs::write(path, config).unwrap();
}

#[test]
fn a_second_process_on_one_run_directory_exits_2_naming_the_holder() {
    let env = Fixture::new(&sums(6)).with_server(slow_server(Duration::from_millis(150)));
    let server = env.server();
    configure(&env, "n = 4", ONE_MODEL, "concurrency = 1");
    let mut first = spawn_run(&env, &["--quiet"]);
    wait_for(|| server.request_count() >= 2);
    let run_dir = env.run_dir();
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains(&format!("pid {} started", first.id())),
        "{text}"
    );
    assert!(text.contains("in use"), "{text}");
    // A killed holder leaves no stale lock: the OS drops it with the process.
    first.kill().unwrap();
    first.wait().unwrap();
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let units = usable_units(&run_dir, "m1");
    assert_eq!(units.len(), 6 * 5);
    assert!(units.values().all(|&c| c == 1), "no unit recorded twice");
}

#[test]
fn score_warns_loudly_about_units_recorded_twice() {
    let env = Fixture::new(&sums(3)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 4", ONE_MODEL, "");
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    let run_dir = env.run_dir();
    let before = read(&run_dir.join("metrics.csv"));
    let checkpoint = run_dir.join("checkpoints/m1.jsonl");
    let text = read(&checkpoint);
    let copies: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    std::fs::write(&checkpoint, text + &copies).unwrap();
    let out = gpassk_run(&["score", "--quiet", run_dir.to_str().unwrap()]);
    let stderr = both(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning:"), "{stderr}");
    assert!(stderr.contains("3 duplicate records"), "{stderr}");
    assert!(stderr.contains("m1.jsonl"), "{stderr}");
    assert_eq!(read(&run_dir.join("metrics.csv")), before);
}

#[test]
fn resume_latest_takes_this_configs_run_and_never_another_configs() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    let a = configure(&env, "n = 2", ONE_MODEL, "");
    let b = env.file("b.toml");
    std::fs::write(&b, read(&a).replace("name = \"m1\"", "name = \"m2\"")).unwrap();
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    let ran_b = gpassk()
        .args(["run", "--quiet", "--config", b.to_str().unwrap()])
        .env("GPASSK_TEST_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(ran_b.status.code(), Some(0), "{}", both(&ran_b));
    let dirs = run_dirs(&env.results());
    let dir_of = |model: &str| -> PathBuf {
        dirs.iter()
            .find(|d| manifest(d)["models"].get(model).is_some())
            .unwrap()
            .clone()
    };
    let (dir_a, dir_b) = (dir_of("m1"), dir_of("m2"));
    let b_manifest = read(&dir_b.join("manifest.json"));

    let out = run(&env, &["--resume", "latest"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains(&format!("run directory: {}", dir_a.display())),
        "{text}"
    );
    assert_eq!(read(&dir_b.join("manifest.json")), b_manifest);

    // Naming the other config's run explicitly is refused: its model would vanish.
    let out = run(&env, &["--resume", dir_b.to_str().unwrap()]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("model m2 of the run is not in this config"),
        "{text}"
    );
    assert_eq!(read(&dir_b.join("manifest.json")), b_manifest);
}

#[test]
fn restating_default_fields_keeps_ids_and_resume_requests_nothing() {
    let env = Fixture::new(&sums(3)).with_server(FakeServer::builder().responder(smart_reply));
    let server = env.server();
    configure(&env, "n = 2", ONE_MODEL, "");
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    let sent = server.request_count();
    append_config(&env, "[evaluation.fields]\nquestion = \"question\"\n");
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(server.request_count(), sent, "nothing is requested again");
    let ids: Vec<String> = usable_units(&env.run_dir(), "m1")
        .into_keys()
        .map(|(id, _)| id)
        .collect();
    assert!(ids.iter().all(|id| id.starts_with('p')), "{ids:?}");

    // Fields that do change the ids are an identity change: refused without --force.
    append_config(&env, "id = \"question\"\n");
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("[evaluation.fields]"), "{text}");
}

/// A config whose output_dir holds a shell substitution, so the printed resume command must be
/// quoted to be pasted safely.
fn hostile_output_dir(env: &Fixture) -> PathBuf {
    let config = env.file("config.toml");
    let out = env.path().join("out $(touch pwned)");
    let text = read(&config).replace(
        &format!("output_dir = \"{}/results\"", env.path().display()),
        &format!("output_dir = \"{}\"", out.display()),
    );
    std::fs::write(&config, text).unwrap();
    out
}

#[test]
fn sigterm_and_sighup_save_mark_interrupted_and_print_a_quoted_resume_command() {
    for name in ["TERM", "HUP"] {
        let env = Fixture::new(&sums(10)).with_server(slow_server(Duration::from_millis(40)));
        let server = env.server();
        configure(&env, "n = 8", ONE_MODEL, "concurrency = 2");
        let out_dir = hostile_output_dir(&env);
        let child = spawn_run(&env, &["--quiet"]);
        wait_for(|| server.request_count() >= 4);
        signal(&child, name);
        let out = child.wait_with_output().unwrap();
        let text = both(&out);
        assert_eq!(out.status.code(), Some(130), "SIG{name}: {text}");
        let run_dir = run_dirs(&out_dir).pop().unwrap();
        assert_eq!(manifest(&run_dir)["status"], "interrupted", "SIG{name}");
        // The printed command, pasted into a shell, passes the path verbatim and runs nothing.
        let resume = text
            .lines()
            .find(|l| l.trim_start().starts_with("gpassk run --config"))
            .unwrap_or_else(|| panic!("SIG{name}: no resume command in {text}"));
        let echo = resume.replacen("gpassk run", "printf '%s\\n'", 1);
        let printed = Command::new("sh")
            .args(["-c", &echo])
            .current_dir(env.path())
            .output()
            .unwrap();
        let words = String::from_utf8_lossy(&printed.stdout).into_owned();
        assert!(
            words.lines().any(|w| w == run_dir.to_str().unwrap()),
            "{words}"
        );
        assert!(!env.path().join("pwned").exists(), "the $(…) ran");
    }
}

#[test]
fn ctrl_c_abandons_a_hung_request_after_the_grace_not_the_timeout() {
    let hang = FakeServer::builder()
        .responder(smart_reply)
        .faults(|_: &Recorded| Some(Fault::Hang(Duration::from_secs(50))));
    let env = Fixture::new(&sums(2)).with_server(hang);
    let server = env.server();
    configure(
        &env,
        "n = 2",
        ONE_MODEL,
        "timeout = 60\nshutdown_grace = 0.5",
    );
    let child = spawn_run(&env, &["--quiet"]);
    wait_for(|| server.request_count() >= 1);
    let stopped = Instant::now();
    signal(&child, "INT");
    let out = child.wait_with_output().unwrap();
    let waited = stopped.elapsed();
    assert_eq!(out.status.code(), Some(130), "{}", both(&out));
    // Far below the 50 s the request would hang and the 60 s timeout.
    assert!(waited < Duration::from_secs(25), "waited {waited:?}");
    assert_eq!(manifest(&env.run_dir())["status"], "interrupted");
}

#[test]
fn shutdown_grace_outside_its_range_is_named() {
    let env = Fixture::new(&sums(1));
    configure(&env, "n = 2", ONE_MODEL, "shutdown_grace = -1");
    let out = run(&env, &["--dry-run"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("shutdown_grace"), "{text}");
}

#[test]
fn report_out_refuses_the_runs_own_files() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 2", ONE_MODEL, "");
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    let run_dir = env.run_dir();
    let checkpoint = run_dir.join("checkpoints/m1.jsonl");
    let before = read(&checkpoint);
    for target in [
        checkpoint.clone(),
        run_dir.join("manifest.json"),
        run_dir.join("checkpoints/../checkpoints/m1.jsonl"),
    ] {
        let out = gpassk_run(&[
            "report",
            run_dir.to_str().unwrap(),
            "--format",
            "csv",
            "--out",
            target.to_str().unwrap(),
        ]);
        let text = both(&out);
        assert_eq!(out.status.code(), Some(2), "{text}");
        assert!(text.contains("run's own data"), "{text}");
    }
    assert_eq!(read(&checkpoint), before);
    // Its own report files may be rewritten.
    let out = gpassk_run(&[
        "report",
        run_dir.to_str().unwrap(),
        "--format",
        "csv",
        "--out",
        run_dir.join("metrics.csv").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let leftovers: Vec<_> = std::fs::read_dir(&run_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_torn_last_checkpoint_line_is_dropped_with_a_note() {
    let env = Fixture::new(&sums(2)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 2", ONE_MODEL, "");
    assert_eq!(run(&env, &["--quiet"]).status.code(), Some(0));
    let run_dir = env.run_dir();
    let checkpoint = run_dir.join("checkpoints/m1.jsonl");
    let text = read(&checkpoint);
    std::fs::write(&checkpoint, format!("{text}{{\"problem_id\":\"p0\",\"samp")).unwrap();
    let out = run(&env, &["--quiet", "--resume", run_dir.to_str().unwrap()]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("torn last line"), "{text}");
    assert!(text.contains("m1.jsonl"), "{text}");
}

/// Points the fixture's config at another output directory; returns it.
fn set_output_dir(env: &Fixture, name: &str) -> PathBuf {
    let config = env.file("config.toml");
    let text = read(&config);
    let start = text.find("output_dir = ").unwrap();
    let end = start + text[start..].find('\n').unwrap();
    let dir = env.path().join(name);
    let line = format!("output_dir = \"{}\"", dir.display());
    std::fs::write(&config, format!("{}{line}{}", &text[..start], &text[end..])).unwrap();
    dir
}

/// Runs one shard into `out_dir` and returns its run directory.
fn shard_run(env: &Fixture, out_dir: &str, args: &[&str]) -> PathBuf {
    let dir = set_output_dir(env, out_dir);
    let mut all = vec!["--quiet"];
    all.extend_from_slice(args);
    let out = run(env, &all);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    run_dirs(&dir).pop().unwrap()
}

fn merge(runs: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge".to_string()];
    args.extend(runs.iter().map(|r| r.display().to_string()));
    args.extend(["--out".to_string(), out.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    gpassk_run(&args)
}

#[test]
fn merge_joins_shards_from_different_output_dirs_and_names_what_differs() {
    let env = Fixture::new(&sums(6)).with_server(FakeServer::builder().responder(smart_reply));
    let two = "[[models]]\nname = \"m1\"\nmodel_id = \"fake-1\"\n[[models]]\nname = \"m2\"\nmodel_id = \"fake-2\"\n";
    configure(&env, "n = 2", two, "");
    let s0 = shard_run(&env, "out-a", &["--shard", "0/2"]);
    let s1 = shard_run(&env, "out-b", &["--shard", "1/2"]);
    let out = merge(&[&s0, &s1], &env.file("merged"));
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));

    // Only one model in one shard: a partial model set is refused, naming both sets.
    let partial = shard_run(&env, "out-c", &["--shard", "1/2", "--models", "m1"]);
    let out = merge(&[&s0, &partial], &env.file("merged-2"));
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("models m1, m2 but"), "{text}");

    // Another shard count.
    let third = shard_run(&env, "out-d", &["--shard", "1/3"]);
    let out = merge(&[&s0, &third], &env.file("merged-3"));
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("shard count 2 but"), "{text}");

    // A config that differs in a real key: that key is named, with plain values.
    configure(&env, "n = 3", two, "");
    let other = shard_run(&env, "out-e", &["--shard", "1/2"]);
    let out = merge(&[&s0, &other], &env.file("merged-4"));
    let text = both(&out);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("config key `sampling.n` = 2 but"), "{text}");
    assert!(!text.contains("Some(") && !text.contains("None"), "{text}");
}

#[test]
fn ctrl_c_while_judging_waits_only_the_grace() {
    let hang = Arc::new(AtomicBool::new(true));
    let hanging = hang.clone();
    let server = FakeServer::builder()
        .responder(|r: &Recorded| match r.model() {
            Some("judge-1") => Reply::with_choices(vec![ChoiceReply::stop("No.")]),
            _ => smart_reply(r),
        })
        .faults(move |r: &Recorded| {
            (r.model() == Some("judge-1") && hanging.load(Ordering::SeqCst))
                .then_some(Fault::Hang(Duration::from_secs(50)))
        });
    let env = Fixture::new(&sums(3)).with_server(server);
    let server = env.server();
    configure(
        &env,
        "n = 4",
        ONE_MODEL,
        "timeout = 60\nshutdown_grace = 0.5",
    );
    let config = env.file("config.toml");
    let text = read(&config).replace(
        "[evaluation]\n",
        "[evaluation]\ngrader = \"rule_then_judge\"\n",
    );
    std::fs::write(&config, text + "[judge]\nmodel_id = \"judge-1\"\n").unwrap();
    let child = spawn_run(&env, &["--quiet"]);
    wait_for(|| {
        server
            .requests()
            .iter()
            .any(|r| r.model() == Some("judge-1"))
    });
    let stopped = Instant::now();
    signal(&child, "INT");
    let out = child.wait_with_output().unwrap();
    let waited = stopped.elapsed();
    assert!(
        waited < Duration::from_secs(25),
        "waited {waited:?}: {}",
        both(&out)
    );
    let text = both(&out);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(text.contains("--resume"), "{text}");
    assert_eq!(manifest(&env.run_dir())["status"], "interrupted");
    // Resuming judges the rest and finishes.
    hang.store(false, Ordering::SeqCst);
    let out = run(&env, &["--quiet", "--resume", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    assert_eq!(manifest(&env.run_dir())["status"], "complete");
}

#[test]
fn a_manifest_that_cannot_be_written_leaves_no_run_directory() {
    let env = Fixture::new(&sums(1)).with_server(FakeServer::builder().responder(smart_reply));
    configure(&env, "n = 2", ONE_MODEL, "");
    // An output_dir so deep that the run directory, its lock and checkpoints/ fit in PATH_MAX
    // (4095 bytes) but the manifest's temporary file does not.
    let run_id_len = "20261201T031201Z-0123abcd".len();
    let want = 4080 - 1 - run_id_len;
    let mut deep = env.path().to_path_buf();
    while want - deep.as_os_str().len() > 250 {
        deep.push("d".repeat(200));
    }
    deep.push("d".repeat(want - deep.as_os_str().len() - 1));
    assert_eq!(deep.as_os_str().len(), want);
    let config = env.file("config.toml");
    let text = read(&config).replace(
        &format!("output_dir = \"{}/results\"", env.path().display()),
        &format!("output_dir = \"{}\"", deep.display()),
    );
    std::fs::write(&config, text).unwrap();
    let out = run(&env, &["--quiet"]);
    let text = both(&out);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("cannot write manifest"), "{text}");
    let left: Vec<_> = std::fs::read_dir(&deep).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}
