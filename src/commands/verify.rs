//! `gpassk verify RUN_DIR`: a process reward model scores the stored samples of a run (see
//! [`crate::scoring::verify`]); resumable, and what is stored is never asked again.

use crate::error::{bad_input, BadInput, ExitStatus};
use crate::plan;
use crate::rundir::RunDir;
use crate::sampling::read_key;
use crate::scoring::verify::{self, Verifier};
use anyhow::Result;
use clap::Args;
use std::collections::HashMap;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  gpassk verify results/<run> --config configs/prm.toml\n\nThe config's [verifier] table names the PRM; its key comes from the environment variable\nreward_api_key_env (else [api] api_key_env) names. Scores go to <run>/verifier/<model>.jsonl;\n`gpassk score` then adds bon@N, wmaj@N and maj@N to the reports."
)]
pub struct VerifyArgs {
    /// The run directory whose stored samples are scored.
    pub run_dir: PathBuf,
    /// A config with a `[verifier]` table (and the run's dataset, for the questions).
    #[arg(long, default_value = "configs/config.toml")]
    pub config: PathBuf,
    /// Override one config key, e.g. --set verifier.reward_mode=pooling (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    #[arg(long)]
    pub quiet: bool,
}

pub fn run(args: VerifyArgs) -> Result<ExitStatus> {
    let dir = RunDir::existing(&args.run_dir, "run directory")?;
    let manifest = dir.read_manifest()?;
    let sources = crate::config::Sources {
        config: args.config.clone(),
        settings: None,
        overrides: args.set.clone(),
    };
    let (mut plans, _notes) = plan::load_tasks(&sources, &[], None, None).map_err(bad_input)?;
    let plan = plans.remove(0);
    let Some(settings) = plan.settings.verifier.clone() else {
        return Err(BadInput(format!(
            "{}: no [verifier] table: name the process reward model (reward_model_id) there",
            args.config.display()
        ))
        .into());
    };
    let api = plan.settings.models[0].api.clone();
    let key = read_key(
        settings.key_env(&api),
        &format!("verifier {}", settings.reward_model_id),
    )?;
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
    };
    let mut failed = false;
    let ctl = (&shutdown, &notes);
    verify::verify_run(&dir, &models, &questions, &verifier, ctl, |model, stats| {
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
    Ok(if failed {
        eprintln!("some requests failed after retries; rerun the same command to ask again");
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
