//! `gpassk run`: resolve the config, dataset and run directory, sample, then grade and report.

use crate::checkpoint::checkpoint_path;
use crate::cli::{BadInput, EXIT_INTERRUPTED};
use crate::client::ApiKey;
use crate::config::{self, FewShot, Settings};
use crate::dataset::{self, FieldMap};
use crate::grade::judge::{GraderMode, JudgeVerdicts};
use crate::grade::GradeConfig;
use crate::manifest::{git_commit, now_rfc3339, DatasetInfo, Manifest};
use crate::prompt;
use crate::report::{self, Format};
use crate::runner::{self, load_done, missing_work, DoneSet, ModelEnd, Prepared, SamplingJob};
use crate::score::{judge_model, score_model, RunResults, ScoreInputs};
use crate::shard::Shard;
use anyhow::{Context, Result};
use clap::Args;
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The run configuration.
    #[arg(long, default_value = "configs/config.toml")]
    pub config: PathBuf,
    /// Continue a run: its directory, or `latest` for the newest under output_dir.
    #[arg(long)]
    pub resume: Option<String>,
    /// Resume even when sampling parameters, prompts or the dataset changed.
    #[arg(long)]
    pub force: bool,
    /// Print the plan (units, requests, tokens) and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only the first N problems (overrides `limit` in the config).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only these models (comma-separated names from the config).
    #[arg(long, value_delimiter = ',')]
    pub models: Vec<String>,
    /// Only the problems whose id hashes to shard I of N (0 ≤ I < N); join shards with `gpassk merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// No progress output.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds between progress lines when stderr is not a terminal.
    #[arg(long, default_value_t = 5.0, hide = true)]
    pub progress_interval: f64,
}

/// Everything resolved before any request is sent.
pub struct Plan {
    pub settings: Settings,
    pub dataset: dataset::Dataset,
    pub prepared: Arc<Vec<Prepared>>,
    /// The problems under evaluation (the dataset's own list is moved here).
    pub problems: Vec<dataset::Problem>,
    pub template: String,
    pub prompt_hash: String,
    pub few_shot_examples: usize,
    pub limit: Option<usize>,
    pub shard: Option<Shard>,
}

impl Plan {
    /// Problem id → position, for reading checkpoints.
    pub fn id_index(&self) -> HashMap<&str, usize> {
        self.prepared
            .iter()
            .enumerate()
            .map(|(i, p)| (p.id.as_str(), i))
            .collect()
    }
}

/// Loads the config and dataset and renders every prompt; `args` supplies --config, --limit, --models.
pub fn plan(args: &RunArgs) -> Result<Plan> {
    let mut settings = config::load(&args.config)?;
    if !args.models.is_empty() {
        let known: Vec<String> = settings.models.iter().map(|m| m.name.clone()).collect();
        for want in &args.models {
            if !known.contains(want) {
                let hint = config::closest_name(want, &known)
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                return Err(BadInput(format!(
                    "--models: no enabled model named {want:?} in {} (enabled: {}){hint}",
                    args.config.display(),
                    known.join(", ")
                ))
                .into());
            }
        }
        settings.models.retain(|m| args.models.contains(&m.name));
    }
    build_plan(settings, args.limit, args.shard)
}

/// Loads the dataset and renders the prompts for resolved settings; `limit` overrides the config's.
/// `gpassk score` rebuilds a finished run's plan through this from its manifest.
pub fn build_plan(settings: Settings, limit: Option<usize>, shard: Option<Shard>) -> Result<Plan> {
    let ev = &settings.evaluation;
    let fields = ev.fields.as_ref().map(|f| FieldMap {
        id: f.id.clone(),
        question: f.question.clone().unwrap_or_else(|| "question".into()),
        answer: f.answer.clone().unwrap_or_else(|| "answer".into()),
        subset: f.subset.clone(),
    });
    let mut ds = dataset::load(&ev.dataset, fields.as_ref())
        .with_context(|| format!("dataset of {}", settings.config_path.display()))?;
    let limit = limit.or(ev.limit);
    if limit == Some(0) {
        return Err(BadInput("--limit must be at least 1".into()).into());
    }
    if let Some(l) = limit {
        ds.problems.truncate(l);
    }
    // Few-shot examples never include a problem under evaluation.
    let evaluated: BTreeSet<String> = ds.problems.iter().map(|p| p.id.clone()).collect();
    let few = match &ev.few_shot {
        FewShot::None => dataset::FewShot::None,
        FewShot::Inline(pairs) => dataset::FewShot::Inline(pairs.clone()),
        FewShot::FromDataset { count, dataset } => dataset::FewShot::FromDataset {
            source: dataset.clone(),
            fields: None,
            count: *count,
        },
    };
    let examples = few.examples(&ds.name, &evaluated)?;
    let template = ev
        .prompt_template
        .clone()
        .unwrap_or_else(|| ds.default_template.clone());
    // Sharding comes after the few-shot choice so every shard renders the same prompts.
    let mut problems = std::mem::take(&mut ds.problems);
    if let Some(s) = shard {
        problems.retain(|p| s.contains(&p.id));
    }
    let mut prepared = Vec::with_capacity(problems.len());
    for p in &problems {
        let messages = prompt::messages(&template, p, &examples)
            .with_context(|| format!("prompt for problem {} of {}", p.id, ds.name))?;
        prepared.push(Prepared::new(p.id.clone(), messages));
    }
    let mut h = Sha256::new();
    h.update(template.as_bytes());
    for (q, a) in &examples {
        h.update([0]);
        h.update(q.as_bytes());
        h.update([0]);
        h.update(a.as_bytes());
    }
    let prompt_hash = config::hex(&h.finalize()[..8]);
    Ok(Plan {
        settings,
        dataset: ds,
        prepared: Arc::new(prepared),
        problems,
        template,
        prompt_hash,
        few_shot_examples: examples.len(),
        limit,
        shard,
    })
}

pub fn run(args: RunArgs) -> Result<u8> {
    let plan = plan(&args)?;
    let output_dir = plan.settings.evaluation.output_dir.clone();
    let resume_dir = match &args.resume {
        None => None,
        Some(r) => Some(resolve_resume(r, &output_dir)?),
    };
    if args.dry_run {
        print_plan(&plan, resume_dir.as_deref())?;
        return Ok(0);
    }
    let keys = runner::read_keys(&plan.settings)?;
    let judge_key = match (&plan.settings.judge, plan.settings.evaluation.grader) {
        (Some(j), mode) if mode != GraderMode::Rule => {
            Some(runner::read_key(j.api.api_key_env.as_deref(), "the judge")?)
        }
        _ => None,
    };
    for m in &plan.settings.models {
        if 2 * plan
            .settings
            .evaluation
            .ks
            .iter()
            .max()
            .copied()
            .unwrap_or(1)
            > m.sampling.n as u64
            && !args.quiet
        {
            eprintln!(
                "note: model {}: k > n/2 makes G-Pass@k coarse; the paper uses n = 48 for k = 16 (n ≥ 3k)",
                m.name
            );
        }
    }
    let (run_dir, mut manifest) = match resume_dir {
        Some(dir) => {
            let old = Manifest::read(&dir)?;
            check_resume(&old, &plan, args.force)?;
            let m = update_manifest(old, &plan);
            (dir, m)
        }
        None => {
            let run_id = runner::new_run_id(&plan.settings.config_hash);
            let mut dir = output_dir.join(&run_id);
            let mut i = 1;
            while dir.exists() {
                dir = output_dir.join(format!("{run_id}-{i}"));
                i += 1;
            }
            let run_id = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or(&run_id)
                .to_string();
            std::fs::create_dir_all(dir.join("checkpoints"))
                .with_context(|| format!("cannot create run directory {}", dir.display()))?;
            (dir, new_manifest(&run_id, &plan))
        }
    };
    manifest.status = "running".into();
    manifest.updated_at = now_rfc3339();
    manifest
        .write(&run_dir)
        .with_context(|| format!("cannot write manifest in {}", run_dir.display()))?;
    if !args.quiet {
        eprintln!("run directory: {}", run_dir.display());
    }

    let job = SamplingJob {
        settings: plan.settings.clone(),
        run_dir: run_dir.clone(),
        run_id: manifest.run_id.clone(),
        prepared: plan.prepared.clone(),
        keys,
        quiet: args.quiet,
        progress_interval: Duration::from_secs_f64(args.progress_interval.max(0.05)),
    };
    let ends = runner::sample_all(&job)?;

    let index = plan.id_index();
    for m in &plan.settings.models {
        let path = checkpoint_path(&run_dir, &m.name);
        let counts = runner::count_checkpoint(&path, &index, m.sampling.n, m.sampling.greedy)?;
        let end = ends.iter().find(|(n, _)| n == &m.name).map(|(_, e)| e);
        manifest.models.insert(
            m.name.clone(),
            runner::model_manifest(m, end, &counts, plan.prepared.len()),
        );
    }
    let interrupted = ends.iter().any(|(_, e)| *e == ModelEnd::Interrupted);
    manifest.status = if interrupted {
        "interrupted".into()
    } else if manifest.models.values().all(|m| m.status == "complete") {
        "complete".into()
    } else {
        "incomplete".into()
    };
    manifest.updated_at = now_rfc3339();
    if !interrupted {
        manifest.finished_at = Some(manifest.updated_at.clone());
    }
    manifest.write(&run_dir)?;
    let resume_cmd = format!(
        "gpassk run --config {} --resume {}",
        args.config.display(),
        run_dir.display()
    );
    if interrupted {
        eprintln!("interrupted: checkpoints saved; continue with:\n  {resume_cmd}");
        return Ok(EXIT_INTERRUPTED);
    }

    let results = score_run(&plan, &run_dir, Some(manifest.clone()), judge_key.as_ref())?;
    report::write_all(&run_dir, &results)?;
    let table = Format::Table.exporter().export(&results)?;
    print!("{}", String::from_utf8_lossy(&table));
    println!("results: {}", run_dir.display());
    let code = runner::exit_code_for(&ends, &manifest);
    if code != 0 {
        for (name, m) in &manifest.models {
            if let Some(e) = &m.error {
                eprintln!("error: {e}");
            } else if m.status != "complete" {
                eprintln!(
                    "error: model {name}: {} units still failed after retries",
                    m.api_error
                );
            }
        }
        eprintln!("some units failed; request them again with:\n  {resume_cmd}");
    }
    Ok(code)
}

/// Grades and aggregates every model; `judge_key` is Some when the judge may be called (a run), None
/// when only stored verdicts are used.
pub fn score_run(
    plan: &Plan,
    run_dir: &Path,
    manifest: Option<Manifest>,
    judge_key: Option<&Option<ApiKey>>,
) -> Result<RunResults> {
    let ev = &plan.settings.evaluation;
    let grade = GradeConfig {
        extract_regex: ev.answer_extract_regex.clone(),
        policy: ev.grading,
    };
    let problems = &plan.problems;
    let inputs = ScoreInputs {
        problems,
        ks: &ev.ks,
        taus: &ev.taus,
        grade: &grade,
        judge: None,
    };
    let mut models = Vec::new();
    for m in &plan.settings.models {
        let grades_path = run_dir.join("grades").join(format!("{}.jsonl", m.name));
        let verdicts = match (&plan.settings.judge, ev.grader) {
            (Some(judge), mode) if mode != GraderMode::Rule => {
                if let Some(key) = judge_key {
                    let stats = judge_model(
                        &checkpoint_path(run_dir, &m.name),
                        &grades_path,
                        problems,
                        m.sampling.n,
                        m.sampling.greedy,
                        &grade,
                        judge,
                        mode,
                        key.clone(),
                    )
                    .with_context(|| format!("judging the samples of model {}", m.name))?;
                    if stats.judged + stats.unparsed + stats.failed > 0 {
                        eprintln!(
                            "judge {}: {} verdicts for {}, {} unreadable replies, {} failed (the rule verdict stands for those)",
                            judge.model_id, stats.judged, m.name, stats.unparsed, stats.failed
                        );
                    }
                }
                Some(JudgeVerdicts::load(&grades_path, mode)?)
            }
            _ => None,
        };
        let inputs = ScoreInputs {
            judge: verdicts.as_ref(),
            ..inputs
        };
        models.push(score_model(
            &checkpoint_path(run_dir, &m.name),
            &m.name,
            &m.model_id,
            m.sampling.n,
            m.sampling.greedy,
            &inputs,
        )?);
    }
    let run_id = manifest.as_ref().map_or_else(
        || {
            run_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        },
        |m| m.run_id.clone(),
    );
    Ok(RunResults {
        run_id,
        dataset: plan.dataset.name.clone(),
        dataset_sha256: plan.dataset.sha256.clone(),
        shown: ev.metrics.clone(),
        ks: ev.ks.clone(),
        taus: ev.taus.clone(),
        manifest,
        models,
    })
}

fn resolve_resume(r: &str, output_dir: &Path) -> Result<PathBuf> {
    if r != "latest" {
        let p = PathBuf::from(r);
        if !p.join("manifest.json").is_file() {
            return Err(BadInput(format!(
                "--resume {r}: no manifest.json there; is it a gpassk run directory?"
            ))
            .into());
        }
        return Ok(p);
    }
    let mut runs: Vec<PathBuf> = std::fs::read_dir(output_dir)
        .map(|it| {
            it.filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.join("manifest.json").is_file())
                .collect()
        })
        .unwrap_or_default();
    runs.sort();
    runs.pop().ok_or_else(|| {
        BadInput(format!(
            "--resume latest: no runs under {}",
            output_dir.display()
        ))
        .into()
    })
}

fn new_manifest(run_id: &str, plan: &Plan) -> Manifest {
    let now = now_rfc3339();
    let mut m = Manifest {
        harness: format!("gpassk {}", env!("CARGO_PKG_VERSION")),
        git_commit: git_commit(),
        run_id: run_id.to_string(),
        created_at: now.clone(),
        updated_at: now,
        finished_at: None,
        status: "running".into(),
        config_path: String::new(),
        config: serde_json::Value::Null,
        config_hash: String::new(),
        dataset: DatasetInfo {
            name: String::new(),
            files: vec![],
            sha256: String::new(),
            problems: 0,
            limit: None,
        },
        prompt_template: String::new(),
        prompt_hash: String::new(),
        few_shot_examples: 0,
        models: Default::default(),
        shard: None,
        merged_from: Vec::new(),
    };
    fill_manifest(&mut m, plan);
    m
}

fn update_manifest(mut m: Manifest, plan: &Plan) -> Manifest {
    m.finished_at = None;
    m.git_commit = git_commit().or(m.git_commit);
    fill_manifest(&mut m, plan);
    m
}

fn fill_manifest(m: &mut Manifest, plan: &Plan) {
    let s = &plan.settings;
    m.config_path = s.config_path.display().to_string();
    m.config = s.config_json.clone();
    m.config_hash = s.config_hash.clone();
    m.dataset = DatasetInfo {
        name: plan.dataset.name.clone(),
        files: plan
            .dataset
            .files
            .iter()
            .map(|f| f.display().to_string())
            .collect(),
        sha256: plan.dataset.sha256.clone(),
        problems: plan.prepared.len(),
        limit: plan.limit,
    };
    m.prompt_template = plan.template.clone();
    m.prompt_hash = plan.prompt_hash.clone();
    m.few_shot_examples = plan.few_shot_examples;
    m.shard = plan.shard;
    for model in &s.models {
        let entry = runner::model_manifest(model, None, &Default::default(), plan.prepared.len());
        let e = m.models.entry(model.name.clone()).or_insert(entry.clone());
        e.sampling = entry.sampling;
        e.model_id = entry.model_id;
        e.base_url = entry.base_url;
        e.units_planned = entry.units_planned;
    }
}

/// Refuses to resume when what was sampled would no longer match what is asked for.
fn check_resume(old: &Manifest, plan: &Plan, force: bool) -> Result<()> {
    let mut changes = Vec::new();
    if old.dataset.sha256 != plan.dataset.sha256 {
        changes.push(format!(
            "dataset sha256 {} → {}",
            short(&old.dataset.sha256),
            short(&plan.dataset.sha256)
        ));
    }
    if old.shard != plan.shard {
        let show = |s: Option<Shard>| s.map_or("none".to_string(), |s| s.to_string());
        changes.push(format!("shard {} → {}", show(old.shard), show(plan.shard)));
    }
    if old.prompt_hash != plan.prompt_hash {
        changes.push("prompt template or few-shot examples".to_string());
    }
    for m in &plan.settings.models {
        let Some(o) = old.models.get(&m.name) else {
            continue;
        };
        let (a, b) = (&o.sampling, &m.sampling);
        let mut diff = |what: &str, x: String, y: String| {
            if x != y {
                changes.push(format!("model {}: {what} {x} → {y}", m.name));
            }
        };
        diff("model_id", o.model_id.clone(), m.model_id.clone());
        diff(
            "temperature",
            a.temperature.to_string(),
            b.temperature.to_string(),
        );
        diff("top_p", a.top_p.to_string(), b.top_p.to_string());
        diff("top_k", format!("{:?}", a.top_k), format!("{:?}", b.top_k));
        diff("seed", a.seed.to_string(), b.seed.to_string());
        diff(
            "max_tokens",
            format!("{:?}", a.max_tokens),
            format!("{:?}", b.max_tokens),
        );
        diff("stop", format!("{:?}", a.stop), format!("{:?}", b.stop));
    }
    if changes.is_empty() || force {
        if !changes.is_empty() {
            eprintln!(
                "warning: resuming with --force despite: {}",
                changes.join("; ")
            );
        }
        return Ok(());
    }
    Err(BadInput(format!(
        "refusing to resume {}: {} changed since it started (pass --force to resume anyway)",
        old.run_id,
        changes.join("; ")
    ))
    .into())
}

/// A hash abbreviated for messages.
pub(crate) fn short(h: &str) -> &str {
    &h[..12.min(h.len())]
}

fn print_plan(plan: &Plan, resume: Option<&Path>) -> Result<()> {
    let index = plan.id_index();
    let prompt_tokens: u64 = plan.prepared.iter().map(|p| p.prompt_tokens_estimate).sum();
    println!(
        "plan (dry run, nothing is sent): dataset {} — {} problems, {} few-shot examples",
        plan.dataset.name,
        plan.prepared.len(),
        plan.few_shot_examples
    );
    let (mut all_units, mut all_requests) = (0u64, 0u64);
    for m in &plan.settings.models {
        let done = match resume {
            Some(dir) => load_done(&checkpoint_path(dir, &m.name), &index)?,
            None => DoneSet::new(),
        };
        let (mut units, mut requests, mut prompt) = (0u64, 0u64, 0u64);
        for w in missing_work(plan.prepared.len(), &m.sampling, &done) {
            units += w.slots.len() as u64;
            requests += 1;
            prompt += plan.prepared[w.problem].prompt_tokens_estimate;
        }
        let completion = match m.sampling.max_tokens {
            Some(t) => format!("≤ {} completion tokens", units * t as u64),
            None => "completion tokens unbounded (no max_tokens)".into(),
        };
        println!(
            "  {}: {} problems × ({} samples{}) → {units} units in {requests} requests; ~{prompt} prompt tokens, {completion}",
            m.name,
            plan.prepared.len(),
            m.sampling.n,
            if m.sampling.greedy { " + greedy" } else { "" },
        );
        all_units += units;
        all_requests += requests;
    }
    println!("  total: {all_units} units, {all_requests} requests (prompt ~{prompt_tokens} tokens per pass over the problems)");
    Ok(())
}
