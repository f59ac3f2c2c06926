//! `gpassk import FORMAT PATH… --out DIR`: another harness's sample logs as gpassk runs (one per
//! dataset), scored at once, with the source's verdicts and aggregates checked beside gpassk's.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::import::{
    detect, stage, write_disagreements, Errored, Format, ImportError, ImportOptions, ReadOptions,
    READERS,
};
use crate::report;
use crate::scoring::load_run;
use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What a sample the harness marked as errored counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ErroredArg {
    /// A wrong sample (τ-bench's pass^k).
    Fail,
    /// Left out: its problem keeps its other samples (τ²-bench's pass^k).
    Drop,
}

/// `auto` and every format gpassk reads, with what each is.
fn formats() -> PossibleValuesParser {
    let auto =
        PossibleValue::new("auto").help("tell the format from the files' names and first records");
    let each = READERS
        .iter()
        .map(|r| PossibleValue::new(r.name).help(r.about));
    PossibleValuesParser::new(std::iter::once(auto).chain(each))
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  gpassk import lm-eval out/my-model/ --out results/lm-eval-import
  gpassk import opencompass outputs/default/20250101_120000 --out results/oc --task math
  gpassk import auto reviews/ --out results/es --disagreements disagree.jsonl
  gpassk import inspect logs/2026-01-01T00-00-00_gsm8k_abc.eval --out results/inspect
  gpassk import tau-bench historical_trajectories/gpt-4o-airline.json --out results/tau
  gpassk import jsonl samples.jsonl --out results/mine --field problem_id=qid --field response=text

A folder holding several datasets (tasks, benchmarks) gives one run per dataset: --out is then a
folder with one run directory each, named after it. See docs/import.md.")]
pub struct ImportArgs {
    /// The harness that wrote the files, or `auto` to tell from their names and fields.
    #[arg(value_parser = formats(), hide_possible_values = false)]
    pub format: String,
    /// The files, or the folders the harness wrote (searched recursively).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The run directory to create (it must not exist); with several datasets, the folder of
    /// their runs.
    #[arg(long)]
    pub out: PathBuf,
    /// Gold answers and questions from a shipped dataset (or a JSONL file) by problem id; the
    /// files' own gold answers are checked against it.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Which source field holds what, e.g. `--field problem_id=qid` (jsonl: problem_id,
    /// response, gold, question, model, verdict, extracted, repeat, subset, dataset; lm-eval:
    /// problem_id and question name fields of `doc`, `verdict=METRIC,FILTER` picks the filter;
    /// inspect: `verdict=SCORER`; nemo-skills: `verdict=FIELD`).
    #[arg(long = "field", value_name = "KEY=FIELD")]
    pub fields: Vec<String>,
    /// Import only this dataset (task, benchmark), or this subset of one.
    #[arg(long)]
    pub task: Option<String>,
    /// Import only this model (jsonl: names the model when the lines name none).
    #[arg(long)]
    pub model: Option<String>,
    /// The name the imported model gets in the run (models are matched by name when runs are
    /// compared): give a native run's model name here.
    #[arg(long)]
    pub name: Option<String>,
    /// Samples the harness marked as errored (Inspect `error`, τ-bench `info.error`, τ²-bench
    /// infrastructure errors): counted as wrong, or left out.
    #[arg(long, value_enum, default_value = "fail")]
    pub errored: ErroredArg,
    /// Count and name malformed records instead of stopping at the first.
    #[arg(long)]
    pub skip_bad: bool,
    /// Write the samples where the source's verdict and gpassk's differ (JSON lines).
    #[arg(long, value_name = "FILE")]
    pub disagreements: Option<PathBuf>,
    /// Do not print the summary.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: ImportArgs) -> Result<ExitStatus> {
    let notes = super::stderr_notes();
    let opts = options(&args, &notes)?;
    let staged = stage(&opts, &notes).map_err(to_anyhow)?;
    // Scored and reported before they are moved into place: nothing half-done reaches --out.
    let mut scored = Vec::new();
    for r in &staged.runs {
        let results = load_run(&r.dir, &notes).map_err(bad_input)?;
        let written = report::write_all(&r.dir, &results)?;
        let names: Vec<PathBuf> = (written.iter())
            .filter_map(|p| p.strip_prefix(r.dir.path()).ok().map(PathBuf::from))
            .collect();
        scored.push((results, names));
    }
    let runs = staged.commit().map_err(to_anyhow)?;
    let disagreements = match &args.disagreements {
        None => None,
        // The runs are in place by now: a failure here must not undo them.
        Some(path) => match write_disagreements(path, &runs) {
            Ok(n) => Some((n, path)),
            Err(e) => {
                let said = format!(
                    "--disagreements {}: {e:#}; the runs are written",
                    path.display()
                );
                notes.warn(&said);
                None
            }
        },
    };
    if !args.quiet {
        for (r, (results, names)) in runs.iter().zip(&scored) {
            if runs.len() > 1 {
                let d = crate::util::printable(&r.dataset);
                println!("\n== dataset {d} ({})", r.dir.display());
            }
            print!("{}", report::import_summary(&r.info, r.problems.len()));
            print!(
                "{}",
                super::stdout_paint().marks(&report::terminal_table(results, false))
            );
            print!("{}", report::source_agreement(results));
            for name in names {
                println!("wrote {}", r.dir.path().join(name).display());
            }
        }
        if let Some((n, path)) = disagreements {
            println!("wrote {n} disagreeing samples to {}", path.display());
        }
    }
    Ok(ExitStatus::Success)
}

/// What the arguments ask for, the format told from the files under `auto`.
fn options(args: &ImportArgs, notes: &crate::util::Notes) -> Result<ImportOptions> {
    let format = match args.format.as_str() {
        "auto" => {
            let f = detect(&args.paths).map_err(to_anyhow)?;
            notes.note(&format!("--format auto: these are {f} files"));
            f
        }
        name => Format::named(name).map_err(to_anyhow)?,
    };
    Ok(ImportOptions {
        format,
        paths: args.paths.clone(),
        out: args.out.clone(),
        read: ReadOptions {
            task: args.task.clone(),
            model: args.model.clone(),
            fields: parse_fields(&args.fields)?,
            dataset_gold: args.dataset.is_some(),
        },
        dataset: args.dataset.clone(),
        skip_bad: args.skip_bad,
        rename: args.name.clone(),
        errored: match args.errored {
            ErroredArg::Fail => Errored::Fail,
            ErroredArg::Drop => Errored::Drop,
        },
        disagreements: args.disagreements.clone(),
    })
}

fn to_anyhow(e: ImportError) -> anyhow::Error {
    if e.is_bad_input() {
        BadInput::new(e.to_string()).into()
    } else {
        anyhow::Error::new(e)
    }
}

/// `--field KEY=FIELD` pairs; a key given twice or a pair without `=` is refused.
fn parse_fields(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for pair in pairs {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(BadInput::new(format!("--field {pair}: expected KEY=FIELD")).into());
        };
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || v.is_empty() {
            return Err(BadInput::new(format!("--field {pair}: expected KEY=FIELD")).into());
        }
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(BadInput::new(format!("--field {k}: given twice")).into());
        }
    }
    Ok(out)
}
