//! `gpassk import FORMAT PATH… --out RUN_DIR`: another harness's sample logs as a gpassk run,
//! scored at once, with the source's verdicts and aggregates checked beside gpassk's.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::import::{detect::detect, import, Format, ImportError, ImportOptions, ReadOptions};
use crate::report;
use crate::scoring::load_run;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    Auto,
    LmEval,
    Opencompass,
    Lighteval,
    Evalscope,
    QwenMath,
    Jsonl,
}

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  gpassk import lm-eval out/my-model/ --out results/lm-eval-import
  gpassk import opencompass outputs/default/20250101_120000 --out results/oc --dataset math500
  gpassk import auto reviews/ --out results/es --disagreements disagree.jsonl
  gpassk import jsonl samples.jsonl --out results/mine --field problem_id=qid --field response=text")]
pub struct ImportArgs {
    /// The harness that wrote the files, or `auto` to tell from their names and fields.
    #[arg(value_enum)]
    pub format: FormatArg,
    /// The files, or the folders the harness wrote (searched recursively).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// The run directory to create (it must not exist).
    #[arg(long)]
    pub out: PathBuf,
    /// Gold answers and questions from a shipped dataset (or a JSONL file) by problem id; the
    /// files' own gold answers are checked against it.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Which source field holds what, e.g. `--field problem_id=qid` (jsonl: problem_id,
    /// response, gold, question, model, verdict, extracted, repeat, subset; lm-eval: problem_id
    /// and question name fields of `doc`, `verdict=METRIC,FILTER` picks the first-repeat
    /// verdict).
    #[arg(long = "field", value_name = "KEY=FIELD")]
    pub fields: Vec<String>,
    /// The task, dataset or benchmark to take when the files hold several.
    #[arg(long)]
    pub task: Option<String>,
    /// The model to take when the files hold several (jsonl: the model's name).
    #[arg(long)]
    pub model: Option<String>,
    /// The name the imported model gets in the run (models are matched by name when runs are
    /// compared): give a native run's model name here.
    #[arg(long)]
    pub name: Option<String>,
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
    let format = match args.format {
        FormatArg::Auto => {
            let f = detect(&args.paths).map_err(to_anyhow)?;
            notes.note(&format!("--format auto: these are {f} files"));
            f
        }
        other => format_of(other),
    };
    let opts = ImportOptions {
        format,
        paths: args.paths.clone(),
        out: args.out.clone(),
        read: ReadOptions {
            task: args.task.clone(),
            model: args.model.clone(),
            fields: parse_fields(&args.fields)?,
        },
        dataset: args.dataset.clone(),
        skip_bad: args.skip_bad,
        rename: args.name.clone(),
        disagreements: args.disagreements.clone(),
    };
    let imported = import(&opts, &notes).map_err(to_anyhow)?;
    let results = load_run(&imported.dir, &notes).map_err(bad_input)?;
    let written = report::write_all(&imported.dir, &results)?;
    if !args.quiet {
        print!(
            "{}",
            report::import_summary(&imported.info, imported.problems)
        );
        print!(
            "{}",
            super::stdout_paint().marks(&report::terminal_table(&results, false))
        );
        print!("{}", report::source_agreement(&results));
        if let (Some(n), Some(path)) = (imported.disagreements, &args.disagreements) {
            println!("wrote {n} disagreeing samples to {}", path.display());
        }
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(ExitStatus::Success)
}

fn format_of(f: FormatArg) -> Format {
    match f {
        FormatArg::LmEval => Format::LmEval,
        FormatArg::Opencompass => Format::Opencompass,
        FormatArg::Lighteval => Format::Lighteval,
        FormatArg::Evalscope => Format::Evalscope,
        FormatArg::QwenMath => Format::QwenMath,
        FormatArg::Jsonl | FormatArg::Auto => Format::Jsonl,
    }
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
