//! `gpassk store push|ls|export`: scored runs into the results database, what it holds, and its
//! tables as CSV for notebooks ([`crate::store`] owns the schema and the writing).

use crate::error::ExitStatus;
use crate::rundir::RunDir;
use crate::store::rows::Value;
use crate::store::{Pushed, Store, StoreUrl};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk store push results/* --db sqlite:results/gpassk.db\n  gpassk store ls --db sqlite:results/gpassk.db\n  gpassk store export metric_values --db sqlite:results/gpassk.db > values.csv"
)]
pub struct StoreArgs {
    #[command(subcommand)]
    pub action: StoreAction,
}

#[derive(Debug, Subcommand)]
pub enum StoreAction {
    /// Score runs offline and write them to the database (a run already there is replaced in
    /// one transaction when its content changed, left alone when not).
    Push {
        /// Run directories.
        #[arg(required = true)]
        runs: Vec<PathBuf>,
        #[command(flatten)]
        db: DbArg,
    },
    /// List the runs the database holds, oldest first.
    Ls {
        #[command(flatten)]
        db: DbArg,
    },
    /// Write one table as CSV to stdout (runs, run_models, metric_values, problem_counts).
    Export {
        table: String,
        #[command(flatten)]
        db: DbArg,
    },
}

#[derive(Debug, Args)]
pub struct DbArg {
    /// The database: sqlite:PATH.
    #[arg(long, env = "GPASSK_DB")]
    pub db: String,
}

impl DbArg {
    fn open(&self) -> Result<Store> {
        Store::open(&StoreUrl::parse(&self.db, "--db")?)
    }
}

pub fn run(args: StoreArgs) -> Result<ExitStatus> {
    match args.action {
        StoreAction::Push { runs, db } => push(&runs, &db),
        StoreAction::Ls { db } => ls(&db),
        StoreAction::Export { table, db } => export(&table, &db),
    }
}

fn push(runs: &[PathBuf], db: &DbArg) -> Result<ExitStatus> {
    let mut store = db.open()?;
    let notes = super::stderr_notes();
    for path in runs {
        let dir = RunDir::at(path);
        let results = crate::scoring::load_run(&dir, &notes)
            .with_context(|| format!("scoring {} to push it", dir.display()))?;
        let what = match store.push(&dir, &results)? {
            Pushed::New => "pushed",
            Pushed::Replaced => "replaced (its content changed)",
            Pushed::Unchanged => "unchanged (already in the store)",
        };
        println!("{}: {what} in {}", dir.display(), store.url());
    }
    Ok(ExitStatus::Success)
}

fn ls(db: &DbArg) -> Result<ExitStatus> {
    let store = db.open()?;
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

fn export(table: &str, db: &DbArg) -> Result<ExitStatus> {
    let store = db.open()?;
    let (names, rows) = store.dump(table)?;
    let mut w = csv::Writer::from_writer(std::io::stdout().lock());
    w.write_record(&names)?;
    for row in rows {
        w.write_record(row.iter().map(|v| match v {
            Value::Null => String::new(),
            Value::Int(n) => n.to_string(),
            Value::Real(x) => x.to_string(),
            // Names and messages come from servers and configs: never a spreadsheet formula.
            Value::Text(s) => crate::report::csv_cell(s).into_owned(),
        }))?;
    }
    match w.flush() {
        // A reader that stopped early (`| head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitStatus::Success),
        r => r.map(|()| ExitStatus::Success).map_err(Into::into),
    }
}
