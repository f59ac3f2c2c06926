//! Helpers shared by every integration test: the `gpassk` command, output text, run directories
//! and the one "dataset + config + fake server" fixture.

pub(crate) mod db;
pub(crate) mod weekly;

use fake_openai::{BlockingFakeServer, FakeServer, FakeServerBuilder};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The files every scored run directory holds.
pub(crate) const RUN_FILES: [&str; 6] = [
    "metrics.csv",
    "per_problem.csv",
    "metrics.json",
    "report.md",
    "report.html",
    "summary.txt",
];

/// Where nothing listens: runs against it fail fast, dry runs never call it.
pub(crate) const NO_SERVER: &str = "http://127.0.0.1:9";

/// The repository root (the tests' working directory).
pub(crate) fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The `gpassk` binary, run from the repository root with no stdin and no datasets override.
pub(crate) fn gpassk() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_gpassk"));
    command
        .current_dir(repo())
        .env_remove("GPASSK_DATASETS_DIR")
        .stdin(Stdio::null());
    command
}

/// Runs `gpassk ARGS` to completion.
pub(crate) fn run(args: &[&str]) -> Output {
    gpassk().args(args).output().expect("run gpassk")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Stdout then stderr, for assertions on everything a user saw.
pub(crate) fn both(o: &Output) -> String {
    stdout(o) + &stderr(o)
}

/// Asserts exit code 0 (showing both streams otherwise) and returns stdout.
pub(crate) fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "{}", both(o));
    stdout(o)
}

/// A file's text; a missing file fails the test naming it.
pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Copies the folder `from` into `to` (files and folders; symlinks are not followed).
pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let kind = e.file_type().unwrap();
        if kind.is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if kind.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The run directories under `results`, sorted (their names start with a UTC timestamp).
pub(crate) fn run_dirs(results: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(results)
        .unwrap_or_else(|e| panic!("{}: {e}", results.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Sections spliced into a fixture's config.toml as TOML text; dataset and output directory are
/// filled in by [`Fixture::config`].
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Toml<'a> {
    /// `base_url`; `None` means the fixture's own server (or [`NO_SERVER`]).
    pub base_url: Option<&'a str>,
    /// Lines of `[api]` after `base_url`.
    pub api: &'a str,
    /// Lines of `[sampling]`.
    pub sampling: &'a str,
    /// `[[models]]` tables.
    pub models: &'a str,
    /// Lines of `[evaluation]` after `dataset` and `output_dir`.
    pub evaluation: &'a str,
}

/// A temporary directory with a dataset (`data.jsonl`), a config (`config.toml`) whose output
/// directory is `results/`, and optionally a fake OpenAI server the config points at.
pub(crate) struct Fixture {
    // Field order matters: the server stops before the directory goes.
    server: Option<BlockingFakeServer>,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// A fixture whose `data.jsonl` holds `dataset` (JSONL text), with no server.
    pub(crate) fn new(dataset: &str) -> Fixture {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("data.jsonl"), dataset).expect("write data.jsonl");
        Fixture { server: None, dir }
    }

    /// Starts `server` on its own runtime; it lives as long as the fixture.
    pub(crate) fn with_server(mut self, server: FakeServerBuilder) -> Fixture {
        self.server = Some(FakeServer::start_blocking(server));
        self
    }

    /// The fixture's fake server; panics when it has none (test setup error).
    pub(crate) fn server(&self) -> &FakeServer {
        self.server.as_deref().expect("fixture has no fake server")
    }

    /// Stops the fixture's server, e.g. to show a command works offline.
    pub(crate) fn stop_server(&mut self) {
        self.server = None;
    }

    /// The server's base URL, or [`NO_SERVER`].
    pub(crate) fn base_url(&self) -> String {
        self.server
            .as_ref()
            .map_or_else(|| NO_SERVER.to_string(), |s| s.base_url())
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the fixture.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Writes `text` to `name` inside the fixture and returns its path.
    pub(crate) fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.file(name);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        p
    }

    /// (Re)writes config.toml from `toml`, pointing at the fixture's server, dataset and results.
    pub(crate) fn config(&self, toml: Toml) -> PathBuf {
        let d = self.path().display();
        let text = format!(
            "[api]\nbase_url = \"{}\"\n{}\n[sampling]\n{}\n{}\n[evaluation]\ndataset = \"{d}/data.jsonl\"\noutput_dir = \"{d}/results\"\n{}\n",
            toml.base_url.map_or_else(|| self.base_url(), str::to_string),
            toml.api,
            toml.sampling,
            toml.models,
            toml.evaluation
        );
        self.write("config.toml", &text)
    }

    /// `gpassk SUBCOMMAND --config <config.toml> REST…`, not yet run.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let (sub, rest) = args.split_first().expect("a subcommand");
        let mut command = gpassk();
        command
            .arg(sub)
            .arg("--config")
            .arg(self.file("config.toml"))
            .args(rest);
        command
    }

    /// The output directory of the fixture's runs.
    pub(crate) fn results(&self) -> PathBuf {
        self.file("results")
    }

    /// The only run directory under `results/`.
    pub(crate) fn run_dir(&self) -> PathBuf {
        let mut dirs = run_dirs(&self.results());
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        dirs.pop().expect("one run directory")
    }
}

/// Two scorings of a run hold the same figures: each model's counts (how its answers were found
/// too), per-problem counts, votes,
/// per-problem values (with their Monte Carlo errors) and estimates, exactly.
pub(crate) fn assert_same_scores(a: &gpassk::scoring::RunResults, b: &gpassk::scoring::RunResults) {
    assert_eq!(a.models.len(), b.models.len());
    for (x, y) in a.models.iter().zip(&b.models) {
        let counts = |m: &gpassk::scoring::ModelScore| {
            (
                m.name.clone(),
                m.n,
                m.correct,
                m.wrong,
                m.no_answer,
                m.truncated,
                m.missing,
            )
        };
        assert_eq!(counts(x), counts(y));
        assert_eq!(x.served_models, y.served_models, "{}", x.name);
        assert_eq!(x.found_by, y.found_by, "{}: how answers were found", x.name);
        assert_eq!(x.problems, y.problems, "{}", x.name);
        assert_eq!(x.votes, y.votes, "{}", x.name);
        assert_eq!(x.values.metrics, y.values.metrics, "{}", x.name);
        for (col, metric) in x.values.metrics.iter().enumerate() {
            let column = |m: &gpassk::scoring::ModelScore| -> Vec<_> {
                m.values.rows.iter().map(|r| r[col].clone()).collect()
            };
            assert_eq!(column(x), column(y), "{} {metric}", x.name);
            let (ex, ey) = (&x.values.std_errors[col], &y.values.std_errors[col]);
            assert_eq!(ex, ey, "{} {metric}: Monte Carlo errors", x.name);
        }
        assert_eq!(x.estimates, y.estimates, "{}", x.name);
    }
}
