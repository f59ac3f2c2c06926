//! `gpassk store push|ls|export`: scored runs into the results database (SQLite or PostgreSQL),
//! what it holds, and its tables as CSV or Parquet for notebooks ([`crate::store`] owns the
//! schema and the writing).

use super::{open_store, PasswordEnv};
use crate::error::{BadInput, ExitStatus};
use crate::rundir::RunDir;
use crate::store::export::{export as write_table, Format};
use crate::store::Pushed;
use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk store push results/* --db sqlite:results/gpassk.db\n  PGPASSWORD=… gpassk store push results/* --samples --db postgres://evals@db.lan/evals\n  gpassk store ls --db sqlite:results/gpassk.db\n  gpassk store export metric_values --db sqlite:results/gpassk.db > values.csv\n  gpassk store export samples -o samples.parquet --db sqlite:results/gpassk.db"
)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub action: StoreAction,
}

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Score runs offline and write them to the database (a run already there is replaced in
    /// one transaction when its content changed, left alone when not; another run with the same
    /// id is refused).
    Push {
        /// Run directories.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        /// Also write a row per graded sample (model, problem, sample, extracted answer,
        /// verdict, response sha256). Without it, sample rows stored before are kept while the
        /// run is unchanged.
        #[arg(long)]
        samples: bool,
        #[command(flatten)]
        db: DbArg,
    },
    /// List the runs the database holds, oldest first.
    Ls {
        #[command(flatten)]
        db: DbArg,
    },
    /// Write one table (runs, run_models, metric_values, problem_counts, fingerprint_counts,
    /// samples) as CSV or Parquet.
    Export {
        /// The table to write.
        table: String,
        /// csv, or parquet (typed columns); by default parquet when --output ends in .parquet.
        #[arg(long, value_enum)]
        format: Option<ExportFormat>,
        /// Write this file (atomically) instead of stdout.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
}

/// `--format` of `store export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Parquet,
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The database: sqlite:PATH, or postgres://USER@HOST/DB (HOST:PORT for another port; a
    /// Unix socket: postgres://USER@/DB?host=/socket/dir).
    #[arg(long, env = "GPASSK_DB")]
    pub db: String,
    #[command(flatten)]
    pub password: PasswordEnv,
}

pub fn run(args: StoreArgs) -> Result<ExitStatus> {
    match args.action {
        StoreAction::Push { runs, samples, db } => push(&runs, samples, &db),
        StoreAction::Ls { db } => ls(&db),
        StoreAction::Export {
            table,
            format,
            output,
            db,
        } => export(&table, format, output, &db),
    }
}

fn push(runs: &[PathBuf], samples: bool, db: &DbArg) -> Result<ExitStatus> {
    let mut store = open_store(&db.db, &db.password)?;
    let notes = super::stderr_notes();
    for path in runs {
        let dir = RunDir::at(path);
        let (plan, manifest) = crate::scoring::load_plan(&dir, &[])
            .with_context(|| format!("scoring {} to push it", dir.display()))?;
        let results = crate::scoring::score_run(&plan, &dir, Some(manifest), None, &notes)
            .with_context(|| format!("scoring {} to push it", dir.display()))?;
        let with = samples.then_some((&plan, &notes));
        let what = match store.push(&dir, &results, with)? {
            Pushed::New => "pushed".to_string(),
            Pushed::Replaced { samples_removed: 0 } => "replaced (its content changed)".into(),
            Pushed::Replaced { samples_removed } => format!(
                "replaced (its content changed); its {samples_removed} stored sample rows were of \
                 the old content and are removed: push with --samples to store the new ones"
            ),
            Pushed::Unchanged => "unchanged (already in the store)".into(),
            Pushed::SamplesStored => "samples stored (the rest unchanged)".into(),
        };
        println!("{}: {what} in {}", dir.display(), store.url());
    }
    Ok(ExitStatus::Success)
}

fn ls(db: &DbArg) -> Result<ExitStatus> {
    let mut store = open_store(&db.db, &db.password)?;
    for r in store.list()? {
        println!(
            "{}  {}  {}  {} models  {}",
            r.created_at,
            crate::util::printable(&r.run_id),
            r.status,
            r.models,
            crate::util::printable(&r.dataset)
        );
    }
    Ok(ExitStatus::Success)
}

fn export(
    table: &str,
    format: Option<ExportFormat>,
    output: Option<PathBuf>,
    db: &DbArg,
) -> Result<ExitStatus> {
    let parquet_file = output
        .as_ref()
        .is_some_and(|o| o.extension().is_some_and(|e| e == "parquet"));
    let format = match format {
        Some(ExportFormat::Parquet) => Format::Parquet,
        Some(ExportFormat::Csv) => Format::Csv,
        None if parquet_file => Format::Parquet,
        None => Format::Csv,
    };
    if format == Format::Parquet
        && output.is_none()
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        return Err(BadInput::new(
            "--format parquet: binary output to a terminal; give --output FILE.parquet or redirect",
        )
        .into());
    }
    if let Some(path) = &output {
        let url = crate::store::StoreUrl::parse(&db.db, "--db")?;
        if crate::store::is_database_file(&url, path) {
            return Err(BadInput(format!(
                "--output {}: that is the database {url} itself (or its journal); write the \
                 table to another file",
                path.display()
            ))
            .into());
        }
    }
    let mut store = open_store(&db.db, &db.password)?;
    match output {
        Some(path) => {
            let rows = crate::util::write_atomic_with(&path, |f| {
                write_table(&mut store, table, format, f)
            })
            .with_context(|| format!("writing {}", path.display()))?;
            eprintln!("{rows} rows of {table} in {}", path.display());
        }
        None => match write_table(&mut store, table, format, std::io::stdout()) {
            // A reader that stopped early (`| head`) is not an error.
            Err(e) if broken_pipe(&e) => {}
            r => {
                r?;
            }
        },
    }
    Ok(ExitStatus::Success)
}

fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<csv::Error>().is_some_and(|e| {
                matches!(e.kind(), csv::ErrorKind::Io(io) if io.kind() == std::io::ErrorKind::BrokenPipe)
            })
    })
}
