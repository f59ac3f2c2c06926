//! `gpassk verify RUN_DIR`: a process reward model scores the stored samples of a run (see
//! [`crate::scoring::verifier_calls`]), under the run's budgets; resumable, and what is stored is never
//! asked again. The reports are written again when it ends, bon@N and wmaj@N in them.

use crate::config::{PaidCalls, VerifierSettings};
use crate::error::{bad_input, BadInput, ExitStatus};
use crate::plan::{self, Plan};
use crate::report;
use crate::rundir::RunDir;
use crate::sampling::{read_key, BudgetBook};
use crate::scoring::verifier_calls::{self, Verifier};
use anyhow::Result;
use clap::Args;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk verify results/<run>\n  gpassk verify results/<run> --config configs/prm.toml\n\nThe PRM is the run's own [verifier] (its latest verification pass's, else its config's);\n--config names another config's. Its key comes from the environment variable\nreward_api_key_env (else [api] api_key_env) names. Scores go to <run>/verifier/<model>.jsonl,\nand the reports are written again with bon@N, wmaj@N and maj@N."
)]
pub struct VerifyArgs {
    /// The run directory whose stored samples are scored.
    pub run_dir: PathBuf,
    /// A config whose `[verifier]` table names the PRM, instead of the run's own.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Override one config key, e.g. --set verifier.reward_mode=pooling (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// No notes, progress lines or per-model summaries on stderr.
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: VerifyArgs) -> Result<ExitStatus> {
    let dir = RunDir::existing(&args.run_dir, "run directory")?;
    let manifest = dir.read_manifest()?;
    let (mut plan, settings) = verifier_plan(&args, &dir)?;
    plan.settings.verifier = Some(settings.clone());
    let paid = plan.settings.check_paid_calls_of(PaidCalls::Verifier);
    let paid = paid.map_err(BadInput)?;
    let api = plan.settings.models[0].api.clone();
    let key = read_key(
        settings.key_env(&api),
        &format!("verifier {}", settings.reward_model_id),
    )?;
    if !args.quiet {
        paid.iter().for_each(|n| eprintln!("note: {n}"));
    }
    // The ledgers start from what the run's files can have cost: sampling, judge, verifier.
    let book = BudgetBook::open(&plan.settings, &plan.prepared, &dir)?;
    let questions: HashMap<&str, &str> = plan
        .problems
        .iter()
        .map(|p| (p.id.as_str(), p.question.as_str()))
        .collect();
    let (shutdown, _signals) = super::shutdown_on_signals(args.quiet)?;
    let notes = super::stderr_notes();
    let models: Vec<&str> = manifest.models.keys().map(String::as_str).collect();
    let verifier = Verifier {
        settings: &settings,
        api: &api,
        key,
        budget: book.verifier(),
    };
    let mut failed = false;
    let ctl = (&shutdown, &notes);
    verifier_calls::verify_run(&dir, &models, &questions, &verifier, ctl, |model, stats| {
        failed |= stats.failed > 0;
        if !args.quiet {
            eprintln!("{model}: {}", stats.summary());
        }
    })?;
    if shutdown.is_triggered() {
        eprintln!(
            "interrupted: scores saved in {}; rerun to continue",
            dir.verifier_settings()
                .parent()
                .unwrap_or(dir.path())
                .display()
        );
        return Ok(ExitStatus::Interrupted);
    }
    write_reports(&dir, args.quiet)?;
    Ok(if failed {
        eprintln!("some requests failed after retries; rerun the same command to ask again");
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// The plan whose questions the PRM sees and whose budgets it draws on, and the verifier: with
/// `--config`, that config's; else the run's own config (as its manifest records it, `--set`
/// applied) and verifier (its latest pass's `verifier/settings.json`, else its config's; a
/// `--set verifier.*` takes the config's, overridden).
fn verifier_plan(args: &VerifyArgs, dir: &RunDir) -> Result<(Plan, VerifierSettings)> {
    if let Some(config) = &args.config {
        let sources = crate::config::Sources {
            config: config.clone(),
            settings: None,
            overrides: args.set.clone(),
        };
        let (mut plans, _notes) = plan::load_tasks(&sources, &[], None, None).map_err(bad_input)?;
        let plan = plans.remove(0);
        let Some(settings) = plan.settings.verifier.clone() else {
            return Err(BadInput(format!(
                "{}: no [verifier] table: name the process reward model (reward_model_id) there",
                config.display()
            ))
            .into());
        };
        return Ok((plan, settings));
    }
    let (plan, _) = crate::scoring::load_plan(dir, &args.set).map_err(bad_input)?;
    let own = plan.settings.verifier.as_ref();
    let settings = match args.set.iter().any(|o| o.starts_with("verifier.")) {
        true => own.cloned(),
        false => verifier_calls::run_settings(dir, own)?,
    };
    let Some(settings) = settings else {
        return Err(BadInput(format!(
            "{}: the run's config has no [verifier] table and no verification pass stored one: \
             name the process reward model with --config FILE (a config with [verifier]) or \
             --set verifier.reward_model_id=NAME",
            dir.manifest_path().display()
        ))
        .into());
    };
    Ok((plan, settings))
}

/// The run's reports graded again with the scores stored, as `gpassk score` writes them.
fn write_reports(dir: &RunDir, quiet: bool) -> Result<()> {
    let results = crate::scoring::load_run(dir, &super::stderr_notes()).map_err(bad_input)?;
    let written = report::write_all(dir, &results)?;
    if !quiet {
        print!("{}", report::terminal_table(&results, false));
        for path in written {
            println!("wrote {}", path.display());
        }
    }
    Ok(())
}
