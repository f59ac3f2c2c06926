//! Inputs read within bounds and names kept inside the run directory: devices, FIFOs, folders and
//! huge files as inputs are refused naming them (exit 2); model names and base URLs that would
//! escape or hide a path are refused naming the field.

use crate::common::{both, stderr, Fixture, Toml};
use crate::run_fake::{configure, sums, ONE_MODEL};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs `command` under a 1.5 GiB address-space limit (so reading an input whole fails instead
/// of filling the host) and a 30 s deadline (so a blocking open fails instead of hanging).
fn bounded(command: &mut Command) -> Output {
    let mut limited = Command::new("/usr/bin/prlimit");
    limited
        .arg(format!("--as={}", 3u64 << 29))
        .arg("--")
        .arg(command.get_program())
        .args(command.get_args())
        .current_dir(command.get_current_dir().unwrap_or(Path::new(".")))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in command.get_envs() {
        match v {
            Some(v) => limited.env(k, v),
            None => limited.env_remove(k),
        };
    }
    let mut child = limited.spawn().expect("start gpassk under prlimit");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gpassk still running after 30 s (blocked on its input?)");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// Exit 2 with one error line that names `file` and holds `what`.
fn refused(o: &Output, file: &Path, what: &str) {
    let text = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{}", both(o));
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert!(errors[0].contains(&file.display().to_string()), "{text}");
    assert!(errors[0].contains(what), "{text}");
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success());
}

fn dry_run_of(env: &Fixture, dataset: &Path) -> Output {
    let set = format!("evaluation.dataset={}", dataset.display());
    bounded(&mut env.command(&["run", "--dry-run", "--set", &set]))
}

#[test]
fn a_device_fifo_folder_or_huge_file_as_dataset_is_refused_naming_it() {
    let env = Fixture::new(&sums(2));
    configure(&env, "n = 2", ONE_MODEL, "");
    let zero = PathBuf::from("/dev/zero");
    refused(&dry_run_of(&env, &zero), &zero, "not a regular file");
    let fifo = env.file("fifo.jsonl");
    mkfifo(&fifo);
    refused(
        &dry_run_of(&env, &fifo),
        &fifo,
        "not a regular file (a FIFO)",
    );
    let folder = env.file("folder.jsonl");
    std::fs::create_dir(&folder).unwrap();
    refused(&dry_run_of(&env, &folder), &folder, "a directory");
    let huge = env.file("huge.jsonl");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    refused(&dry_run_of(&env, &huge), &huge, "larger than");
}

#[test]
fn a_fifo_as_config_or_settings_file_is_refused_naming_it() {
    let env = Fixture::new(&sums(2));
    let fifo = env.file("config.toml");
    mkfifo(&fifo);
    refused(
        &bounded(&mut env.command(&["run", "--dry-run"])),
        &fifo,
        "a FIFO",
    );
    std::fs::remove_file(&fifo).unwrap();
    configure(&env, "n = 2", ONE_MODEL, "");
    let settings = env.file("settings.json");
    mkfifo(&settings);
    let o =
        bounded(&mut env.command(&["run", "--dry-run", "--settings", settings.to_str().unwrap()]));
    refused(&o, &settings, "a FIFO");
}

#[test]
fn a_sparse_2_gib_import_batch_file_is_refused_without_reading_it_whole() {
    let env = Fixture::new(&sums(2));
    configure(&env, "n = 2", ONE_MODEL, "");
    let requests = env.file("requests.jsonl");
    let out = env
        .command(&["run", "--export-batch", requests.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", both(&out));
    let dir = env.run_dir();
    let sparse = env.file("output.jsonl");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let import = |file: &Path| {
        bounded(&mut env.command(&[
            "run",
            "--import-batch",
            file.to_str().unwrap(),
            "--resume",
            dir.to_str().unwrap(),
        ]))
    };
    refused(&import(&sparse), &sparse, "longer than");
    let fifo = env.file("output-fifo.jsonl");
    mkfifo(&fifo);
    refused(&import(&fifo), &fifo, "a FIFO");
}

fn dry_run_with_models(models: &str, base_url: Option<&str>) -> Output {
    let env = Fixture::new(&sums(2));
    env.config(Toml {
        base_url,
        models,
        ..Toml::default()
    });
    bounded(&mut env.command(&["run", "--dry-run"]))
}

#[test]
fn model_names_that_are_not_one_plain_path_component_are_refused() {
    for name in ["..", ".", ".hidden"] {
        let o = dry_run_with_models(&format!("[[models]]\nname = \"{name}\"\n"), None);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", both(&o));
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("models[0].name"), "{name}: {err}");
        assert!(err.contains("starts with '.'"), "{name}: {err}");
    }
}

#[test]
fn a_base_url_with_a_query_or_fragment_is_refused_naming_field_and_model() {
    let models = "[[models]]\nname = \"m1\"\n";
    for (url, what) in [
        ("http://127.0.0.1:1/v1?key=x", "a query"),
        ("http://127.0.0.1:1/v1#frag", "a fragment"),
    ] {
        let o = dry_run_with_models(models, Some(url));
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {}", both(&o));
        assert!(err.contains("base_url"), "{err}");
        assert!(err.contains("m1"), "{err}");
        assert!(err.contains(what), "{err}");
    }
    let per_model = "[[models]]\nname = \"m2\"\nbase_url = \"https://h/v1?x=1\"\n";
    let err = stderr(&dry_run_with_models(per_model, None));
    assert!(err.contains("base_url") && err.contains("a query"), "{err}");
}
