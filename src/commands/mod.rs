//! The command layer: one file per subcommand, each holding its clap arguments and a
//! `run(args) -> Result<ExitStatus>`. Only this layer prints final results and picks exit statuses.
#![allow(clippy::print_stdout, clippy::print_stderr)] // the command layer prints

pub mod audit;
pub mod calc;
pub mod compare;
pub mod completions;
pub mod datasets;
pub mod exec;
pub mod grade;
pub mod history;
pub mod import;
pub mod label;
pub mod merge;
pub mod plan;
pub mod report;
pub mod run;
pub mod score;
pub mod store;
pub mod verify;
pub mod view;

use crate::error::ExitStatus;
use crate::report::TableFormat;
use crate::rundir::RunDir;
use crate::util::Shutdown;

/// Notes from library code, one line each on stderr.
pub fn stderr_notes() -> crate::util::Notes {
    let width = stderr_width();
    // Broken at spaces (a long word, an id or a URL, stays whole) on a terminal; a log keeps one
    // line a note.
    crate::util::Notes::to(move |line| eprintln!("{}", crate::util::wrap(line, width, "  ")))
}

/// The width notes and reasons are wrapped to on stderr: the terminal's, or none in a log (one
/// line a reason, for grep).
pub fn stderr_width() -> usize {
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if terminal || std::env::var_os("COLUMNS").is_some() {
        crate::util::terminal_width()
    } else {
        usize::MAX
    }
}

/// `--password-env` of the commands that open a results database.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PasswordEnv {
    /// The environment variable holding the PostgreSQL password (without it: PGPASSWORD when
    /// set). Never the password itself: it would show in `ps` and the shell history.
    #[arg(long, value_name = "VAR")]
    pub password_env: Option<String>,
}

/// Opens the results database `--db` names.
pub fn open_store(db: &str, password: &PasswordEnv) -> anyhow::Result<crate::store::Store> {
    let url = crate::store::StoreUrl::parse(db, "--db")?
        .with_password_env(password.password_env.as_deref(), "--password-env")?;
    crate::store::Store::open(&url)
}

/// Pushes a run that ended (complete, partial or interrupted: the store records which) or was
/// just merged to the `[store]` database, with the results the run scored (a run stopped before
/// scoring, or merged, is scored here; a merged run's plan is read from its manifest). A failed
/// push leaves the run directory as it is, says how to push it again, and makes a successful
/// command exit 1 so a scheduled job notices.
pub fn push_at_end(
    store: &crate::config::store::StoreSettings,
    (plan, dir): (Option<&crate::plan::Plan>, &RunDir),
    status: ExitStatus,
    results: Option<crate::scoring::RunResults>,
) -> ExitStatus {
    let url = &store.url;
    let notes = stderr_notes();
    let pushed = (|| -> anyhow::Result<crate::store::Pushed> {
        let results = match results {
            Some(r) => r,
            None => crate::scoring::load_run(dir, &notes)?,
        };
        let own;
        let plan = match plan {
            Some(p) => p,
            None => {
                own = crate::scoring::load_plan(dir, &[])?.0;
                &own
            }
        };
        let samples = store.samples.then_some((plan, &notes));
        crate::store::Store::open(url)?.push(dir, &results, samples)
    })();
    match pushed {
        Ok(_) => {
            eprintln!("stored in {url}");
            status
        }
        Err(e) => {
            // The variable's name, never the password; the URL and folder as a shell reads them.
            let password = match url {
                crate::store::StoreUrl::Postgres(pg) => pg.password_env.as_deref(),
                crate::store::StoreUrl::Sqlite(_) => None,
            };
            let password = password.map_or_else(String::new, |var| {
                format!(" --password-env {}", crate::util::shell_quote(var))
            });
            eprintln!(
                "warning: not stored in {url}: {}
the run directory is intact; push it with:
  gpassk store push {} --db {}{password}",
                crate::error::render(&e),
                crate::util::shell_quote(&dir.display().to_string()),
                crate::util::shell_quote(&url.to_string()),
            );
            if status == ExitStatus::Success {
                ExitStatus::Failure
            } else {
                status
            }
        }
    }
}

/// `--format` of `compare` and `audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OutFormat {
    Table,
    Md,
    Json,
    Csv,
}

impl From<OutFormat> for TableFormat {
    fn from(f: OutFormat) -> TableFormat {
        match f {
            OutFormat::Table => TableFormat::Table,
            OutFormat::Md => TableFormat::Md,
            OutFormat::Json => TableFormat::Json,
            OutFormat::Csv => TableFormat::Csv,
        }
    }
}

/// `--metric` and `--k` filters shared by `compare` and `audit`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct MetricFilter {
    /// Only these metrics, by report name (`Pass@16`, `G-Pass@16_0.5`, `mG-Pass@16`, `Greedy`,
    /// `maj@n`) or config name (`pass@16`, `g_pass@16_t0.5`); comma-separated, case-insensitive.
    #[arg(long, value_delimiter = ',')]
    pub metric: Vec<String>,
    /// Only metrics of these k (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub k: Vec<u64>,
}

/// Colour for what a command prints on stdout: on a terminal, unless `NO_COLOR`;
/// `CLICOLOR_FORCE` colours a pipe too (see [`crate::util::Paint::for_stream`]).
pub fn stdout_paint() -> crate::util::Paint {
    use std::io::IsTerminal;
    crate::util::Paint::for_stream(std::io::stdout().is_terminal(), |k| std::env::var(k).ok())
}

/// Colour for stderr, decided as for stdout.
pub fn stderr_paint() -> crate::util::Paint {
    use std::io::IsTerminal;
    crate::util::Paint::for_stream(std::io::stderr().is_terminal(), |k| std::env::var(k).ok())
}

impl MetricFilter {
    /// No filter given: every metric passes.
    pub fn is_empty(&self) -> bool {
        self.metric.is_empty() && self.k.is_empty()
    }

    /// Whether a metric passes the filters.
    pub fn keeps(&self, metric: &crate::metrics::MetricKind) -> bool {
        let label = crate::report::metric_label(metric);
        let config = metric.to_string();
        let named = self.metric.is_empty()
            || self
                .metric
                .iter()
                .any(|m| m.eq_ignore_ascii_case(&label) || m.eq_ignore_ascii_case(&config));
        let k = self.k.is_empty() || metric.k().is_some_and(|k| self.k.contains(&k));
        named && k
    }
}

/// A [`Shutdown`] that fires on the first Ctrl-C, SIGTERM or SIGHUP (what cron, systemd and
/// schedulers send); a second signal exits at once with status 130. Keep the returned runtime
/// alive while the work runs: it is the thread that listens.
pub fn shutdown_on_signals(quiet: bool) -> anyhow::Result<(Shutdown, tokio::runtime::Runtime)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("signals")
        .enable_all()
        .build()?;
    let shutdown = Shutdown::new();
    let trigger = shutdown.clone();
    rt.spawn(async move {
        let _ = next_signal().await;
        if !quiet {
            let note =
                "interrupted: finishing requests in flight, then saving (Ctrl-C again to quit now)";
            eprintln!("{}", crate::util::wrap(note, stderr_width(), "  "));
        }
        trigger.trigger();
        if next_signal().await.is_ok() {
            trigger.quit_now();
            std::process::exit(i32::from(crate::error::ExitStatus::Interrupted.code()));
        }
    });
    Ok((shutdown, rt))
}

#[cfg(unix)]
async fn next_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
        _ = hup.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn next_signal() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}
