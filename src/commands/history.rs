//! `gpassk history <results dir>`: the arguments and the printing of
//! [`crate::analysis::history`]: every run of each dataset in date order, per model and headline
//! metric with intervals, the difference from the run before with `compare`'s paired test, and
//! markers where the served model, fingerprint, settings or coverage changed.

use crate::analysis::history::{
    datasets, discover, history, whole_runs, History, RunEntry, LEGEND,
};
use crate::error::{BadInput, ExitStatus};
use crate::report::{wrap, TableFormat};
use crate::util::printable;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;

/// `--format` of `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HistoryFormat {
    Table,
    Md,
    Html,
    Csv,
    Json,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk history results\n  gpassk history results --model gpt-4o --format html > history.html\n  gpassk history results --dataset aime24 --format csv"
)]
pub struct HistoryArgs {
    /// The results folder whose run directories are listed (or use --db).
    #[arg(required_unless_present = "db")]
    pub dir: Option<PathBuf>,
    /// Read the runs from this results database (sqlite:PATH or postgres://USER@HOST/DB)
    /// instead of a folder.
    #[arg(long, conflicts_with = "dir")]
    pub db: Option<String>,
    #[command(flatten)]
    pub password: super::PasswordEnv,
    /// Only this model (by the name in the config).
    #[arg(long)]
    pub model: Option<String>,
    /// Only runs of this dataset (its name as the manifest records it, or the file name).
    #[arg(long)]
    pub dataset: Option<String>,
    /// table (fits the terminal), md, html (trend plots), csv (a row per run and model, the
    /// headline metrics as columns) or json (a row per run, model and metric); raw fractions.
    #[arg(long, value_enum, default_value = "table")]
    pub format: HistoryFormat,
}

/// Why no row is shown: every run was skipped, or none has the `--model` asked for.
fn nothing_shown(args: &HistoryArgs) -> BadInput {
    match &args.model {
        None => BadInput(format!(
            "{}: no run could be read (the warnings above say why)",
            source(args)
        )),
        Some(model) => BadInput(format!(
            "--model {model}: no run in {} has this model",
            source(args)
        )),
    }
}

/// Where the runs come from, for messages.
fn source(args: &HistoryArgs) -> String {
    match (&args.db, &args.dir) {
        (Some(db), _) => db.clone(),
        (None, Some(dir)) => dir.display().to_string(),
        (None, None) => String::new(),
    }
}

/// The runs of the results database or folder, and the folders skipped (with why).
fn load_entries(args: &HistoryArgs) -> Result<(Vec<RunEntry>, Vec<String>)> {
    Ok(match (&args.db, &args.dir) {
        (Some(db), _) => {
            let mut store = super::open_store(db, &args.password)?;
            (
                crate::analysis::history::stored_entries(&mut store)?,
                Vec::new(),
            )
        }
        (None, Some(dir)) => {
            let (entries, skipped) = discover(dir)?;
            let (entries, shards) = whole_runs(entries, dir);
            if let Some(note) = shards {
                eprintln!("note: {}", printable(&note));
            }
            (entries, skipped)
        }
        (None, None) => return Err(BadInput::new("give a results folder or --db").into()),
    })
}

pub fn run(args: HistoryArgs) -> Result<ExitStatus> {
    let (entries, skipped) = load_entries(&args)?;
    for s in &skipped {
        eprintln!("warning: skipped: {}", printable(s));
    }
    let datasets = datasets(&entries, args.dataset.as_deref());
    if datasets.is_empty() {
        let what = args
            .dataset
            .as_deref()
            .map_or_else(String::new, |d| format!(" of dataset {d}"));
        return Err(BadInput(format!(
            "{}: no run{what} found (run directories hold a manifest.json)",
            source(&args)
        ))
        .into());
    }
    let history = history(&entries, &datasets, args.model.as_deref());
    for w in &history.warnings {
        eprintln!("{w}");
    }
    if history.table.rows.is_empty() {
        return Err(nothing_shown(&args).into());
    }
    print_history(&history, args.format)?;
    Ok(ExitStatus::Success)
}

/// The history in the format asked for, on stdout.
fn print_history(history: &History, format: HistoryFormat) -> Result<()> {
    let format = match format {
        HistoryFormat::Html => {
            print!("{}", history.html());
            return Ok(());
        }
        HistoryFormat::Table => TableFormat::Table,
        HistoryFormat::Md => TableFormat::Md,
        HistoryFormat::Csv => TableFormat::Csv,
        HistoryFormat::Json => TableFormat::Json,
    };
    if format == TableFormat::Csv {
        print!("{}", history.csv()?);
        return Ok(());
    }
    if !format.is_human() {
        print!("{}", history.table.render(format)?);
        return Ok(());
    }
    let width = crate::util::terminal_width();
    if format == TableFormat::Md {
        // A paragraph of its own: a line right beside a table would join it.
        println!("{}\n", crate::report::md_text(LEGEND));
        print!("{}", history.markdown());
        return Ok(());
    }
    println!("{}", wrap(LEGEND, width, ""));
    print!("{}", history.terminal(width, super::stdout_paint()));
    Ok(())
}
