//! The plan of a run: config + dataset → the problems, rendered prompts and prompt hash, and the
//! manifest fields that record them; also whether an existing run may be resumed under this plan.

use crate::config::raw::field_map;
use crate::config::{self, RunSettings};
use crate::dataset::shard::Shard;
use crate::dataset::{self, FieldMap};
use crate::error::BadInput;
use crate::prompt;
use crate::rundir::difference::{Difference, ModelSetting};
use crate::rundir::manifest::{git_commit, DatasetInfo, Manifest, ModelManifest};
use crate::util::{closest, hex, id_index, short};
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::Arc;

/// Everything resolved before any request is sent.
pub struct Plan {
    pub settings: RunSettings,
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
        id_index(self.prepared.iter(), |p| p.id.as_str())
    }
}

/// Loads a config, keeps only `models` (all enabled ones when empty), and builds the plan.
pub fn load(
    config_path: &Path,
    models: &[String],
    limit: Option<usize>,
    shard: Option<Shard>,
) -> Result<Plan> {
    let settings = config::load(config_path)?;
    build(only_models(settings, models, config_path)?, limit, shard)
}

/// One plan per task of a config + settings.json pair (with `--set` overrides), and the notes
/// to print once.
pub fn load_tasks(
    sources: &config::Sources,
    models: &[String],
    limit: Option<usize>,
    shard: Option<Shard>,
) -> Result<(Vec<Plan>, Vec<String>)> {
    let loaded = config::load_sources(sources)?;
    let mut plans = Vec::with_capacity(loaded.tasks.len());
    for settings in loaded.tasks {
        let settings = only_models(settings, models, &sources.config)?;
        plans.push(build(settings, limit, shard)?);
    }
    Ok((plans, loaded.notes))
}

fn only_models(
    mut settings: RunSettings,
    models: &[String],
    config_path: &Path,
) -> Result<RunSettings> {
    if !models.is_empty() {
        let known: Vec<&str> = settings.models.iter().map(|m| m.name.as_str()).collect();
        for want in models {
            if !known.contains(&want.as_str()) {
                let hint = closest(want, known.iter().copied())
                    .map(|s| format!("; did you mean {s}?"))
                    .unwrap_or_default();
                return Err(BadInput(format!(
                    "--models: no enabled model named {want:?} in {} (enabled: {}){hint}",
                    config_path.display(),
                    known.join(", ")
                ))
                .into());
            }
        }
        settings.models.retain(|m| models.contains(&m.name));
    }
    Ok(settings)
}

/// Loads the dataset and renders the prompts for resolved settings; `limit` overrides the config's.
/// `gpassk score` rebuilds a finished run's plan through this from its manifest.
pub fn build(settings: RunSettings, limit: Option<usize>, shard: Option<Shard>) -> Result<Plan> {
    let ev = &settings.evaluation;
    let fields = field_map(ev.fields.as_ref());
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
    let examples = ev.few_shot.examples(&ds.name, &evaluated)?;
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
    let prompt_hash = hex(&h.finalize()[..8]);
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

impl Plan {
    /// A new run's manifest.
    pub fn new_manifest(&self, run_id: &str) -> Manifest {
        let mut m = Manifest::new(run_id);
        m.git_commit = git_commit();
        self.fill_manifest(&mut m);
        m
    }

    /// A resumed run's manifest, brought up to this plan.
    pub fn update_manifest(&self, mut m: Manifest) -> Manifest {
        m.finished_at = None;
        m.git_commit = git_commit().or(m.git_commit);
        self.fill_manifest(&mut m);
        m
    }

    fn fill_manifest(&self, m: &mut Manifest) {
        let s = &self.settings;
        m.config_path = s.config_path.display().to_string();
        m.config = s.config_json.clone();
        m.config_hash = s.config_hash.clone();
        m.settings = s.task_file.clone();
        m.overrides = s.overrides.clone();
        m.task_name = s.evaluation.task_name.clone();
        m.dataset = DatasetInfo {
            name: self.dataset.name.clone(),
            files: self
                .dataset
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            sha256: self.dataset.sha256.clone(),
            problems: self.prepared.len(),
            limit: self.limit,
        };
        m.prompt_template = self.template.clone();
        m.prompt_hash = self.prompt_hash.clone();
        m.few_shot_examples = self.few_shot_examples;
        m.shard = self.shard;
        for model in &s.models {
            let entry = ModelManifest::planned(model, self.prepared.len());
            let e = m.models.entry(model.name.clone()).or_insert(entry.clone());
            e.sampling = entry.sampling;
            e.model_id = entry.model_id;
            e.base_url = entry.base_url;
            e.units_planned = entry.units_planned;
        }
    }

    /// What makes resuming `old` under this plan a different evaluation, one text per
    /// [`Difference`] that matters: the dataset, shard, prompts or fields (the problems, their
    /// ids or prompts), a model of the run that this config no longer names, or a model's
    /// sampling settings (`n` aside: more samples extend a run). Models in config order.
    pub fn resume_changes(&self, old: &Manifest) -> Vec<String> {
        let planned = self.new_manifest(&old.run_id);
        let position = |model: &str| self.settings.models.iter().position(|m| m.name == model);
        let mut changes: Vec<(Option<usize>, String)> = old
            .differences(&planned)
            .iter()
            .filter_map(|d| {
                let model = match d {
                    Difference::Model { model, .. } => position(model),
                    _ => None,
                };
                Some((model, resume_change(d)?))
            })
            .collect();
        changes.sort_by_key(|(model, _)| *model);
        changes.into_iter().map(|(_, text)| text).collect()
    }
}

/// How resume names a difference it refuses; `None` for one it accepts.
fn resume_change(d: &Difference) -> Option<String> {
    let none = |v: Option<u32>| v.map_or("none".to_string(), |v| v.to_string());
    Some(match d {
        Difference::Dataset(c) => {
            format!("dataset sha256 {} → {}", short(&c.before), short(&c.after))
        }
        Difference::Shard(c) => {
            let show = |s: Option<Shard>| s.map_or("none".to_string(), |s| s.to_string());
            format!("shard {} → {}", show(c.before), show(c.after))
        }
        Difference::PromptHash(_) => "prompt template or few-shot examples".to_string(),
        Difference::Fields(c) => {
            let show = |f: &Option<FieldMap>| match f {
                None => "defaults".to_string(),
                Some(f) => format!(
                    "id {}, question {}, answer {}, subset {}",
                    f.id.as_deref().unwrap_or("(auto)"),
                    f.question,
                    f.answer,
                    f.subset.as_deref().unwrap_or("none")
                ),
            };
            format!(
                "[evaluation.fields] {} → {}",
                show(&c.before),
                show(&c.after)
            )
        }
        Difference::NotInConfig { model } => {
            format!("model {model} of the run is not in this config")
        }
        Difference::Model { model, setting } => {
            let (what, x, y) = match setting {
                ModelSetting::ModelId(c) => ("model_id", c.before.clone(), c.after.clone()),
                ModelSetting::N(_) => return None,
                ModelSetting::Temperature(c) => {
                    ("temperature", c.before.to_string(), c.after.to_string())
                }
                ModelSetting::TopP(c) => ("top_p", c.before.to_string(), c.after.to_string()),
                ModelSetting::TopK(c) => ("top_k", none(c.before), none(c.after)),
                ModelSetting::Seed(c) => ("seed", c.before.to_string(), c.after.to_string()),
                ModelSetting::MaxTokens(c) => ("max_tokens", none(c.before), none(c.after)),
                ModelSetting::Stop(c) => {
                    ("stop", format!("{:?}", c.before), format!("{:?}", c.after))
                }
            };
            format!("model {model}: {what} {x} → {y}")
        }
        _ => return None,
    })
}

/// A problem ready to send: its id, chat messages and their hash.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub id: String,
    pub prompt_hash: String,
    /// The messages as JSON, serialized once and spliced into every request body.
    pub messages_json: String,
    /// Rough prompt size for tpm pacing and dry-run estimates (4 characters per token).
    pub prompt_tokens_estimate: u64,
    /// The most tokens the prompt can be, for budgets: its UTF-8 bytes as sent plus a chat
    /// template's markers. No tokenizer in use (byte-level BPE, SentencePiece with byte fallback)
    /// makes more tokens than bytes, whatever the script.
    pub prompt_tokens_bound: u64,
}

/// Tokens a chat template may add around the messages (role markers, BOS, generation prompt);
/// the JSON of each message is longer than its template markers, so this is for the whole prompt.
pub const TEMPLATE_TOKENS: u64 = 32;

/// The most tokens a request body's prompt can be: [`Prepared::prompt_tokens_bound`] for bytes.
pub fn prompt_bound(bytes: usize) -> u64 {
    bytes as u64 + TEMPLATE_TOKENS
}

impl Prepared {
    pub fn new(id: String, messages: Vec<prompt::ChatMessage>) -> Prepared {
        let json = serde_json::to_string(&messages).unwrap_or_else(|_| "[]".into());
        let hash = Sha256::digest(json.as_bytes());
        let prompt_hash = crate::util::hex(&hash[..8]);
        let chars: usize = messages.iter().map(|m| m.content.chars().count()).sum();
        Prepared {
            id,
            prompt_hash,
            prompt_tokens_bound: prompt_bound(json.len()),
            messages_json: json,
            prompt_tokens_estimate: (chars as u64).div_ceil(4) + 8,
        }
    }
}
