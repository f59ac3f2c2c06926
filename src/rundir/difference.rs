//! What differs between two runs' manifests, decided in one place: [`Manifest::differences`].
//! Its callers decide what a difference means to them: resume refuses some, `compare` notes
//! them, `merge` refuses, `history` marks them as changes.

use super::manifest::Manifest;
use crate::config::raw::{field_map, is_default, RawFields};
use crate::config::{SamplingSettings, TaskFile};
use crate::dataset::shard::Shard;
use crate::dataset::FieldMap;
use serde_json::Value;
use std::collections::BTreeSet;

/// The config key that may differ between the shards of one evaluation (each writes where it
/// runs): a [`Difference::Config`] with this key changes nothing that is measured.
pub const OUTPUT_DIR_KEY: &str = "evaluation.output_dir";

/// A value in the first manifest (`before`) and in the other (`after`).
#[derive(Debug, Clone, PartialEq)]
pub struct Change<T> {
    pub before: T,
    pub after: T,
}

/// One thing that differs from a manifest to another, in the order [`Manifest::differences`]
/// lists them.
#[derive(Debug, Clone, PartialEq)]
pub enum Difference {
    /// A config key (dotted, `[i]` for an array item; empty for the whole config) whose value
    /// differs, with the value in each (`None`: unset). Keys are listed leaf by leaf, in key order.
    Config {
        key: String,
        change: Change<Option<Value>>,
    },
    /// The config file's hash (its bytes: comments and formatting included).
    ConfigHash(Change<String>),
    /// The settings.json task the run came from, by the file's content and the task's position.
    Task(Change<Option<TaskFile>>),
    /// The dataset's content (sha256).
    Dataset(Change<String>),
    /// `--limit`.
    DatasetLimit(Change<Option<usize>>),
    /// `--shard I/N`.
    Shard(Change<Option<Shard>>),
    PromptTemplate(Change<String>),
    /// The template and the few-shot turns.
    PromptHash(Change<String>),
    /// `[evaluation.fields]`, defaults filled in (`None`: read as without the table); only
    /// between manifests that both record their config.
    Fields(Change<Option<FieldMap>>),
    /// The grader mode and the judge's model id.
    Grader(Change<(String, Option<String>)>),
    /// The models the runs hold, by name (each list in name order).
    Models(Change<Vec<String>>),
    /// A model of the first run that the other run's config does not name, enabled or not (a
    /// config's `--models` narrows what runs, not what it names).
    NotInConfig {
        model: String,
    },
    /// A setting of a model both runs hold.
    Model {
        model: String,
        setting: ModelSetting,
    },
}

/// A model setting that differs, with its value in each run.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelSetting {
    ModelId(Change<String>),
    N(Change<u32>),
    Temperature(Change<f64>),
    TopP(Change<f64>),
    TopK(Change<Option<u32>>),
    Seed(Change<u64>),
    MaxTokens(Change<Option<u32>>),
    Stop(Change<Vec<String>>),
}

/// `Some(Change)` when the two values differ.
fn change<T: PartialEq + Clone>(before: &T, after: &T) -> Option<Change<T>> {
    (before != after).then(|| Change {
        before: before.clone(),
        after: after.clone(),
    })
}

/// Floats differ when their bits do (what their printed forms tell apart, `-0` from `0`).
fn float_change(before: f64, after: f64) -> Option<Change<f64>> {
    (before.to_bits() != after.to_bits()).then_some(Change { before, after })
}

impl Manifest {
    /// Everything that differs from this run to `other`, each once, in this order: config keys,
    /// config hash, task, dataset, limit, shard, prompt template, prompt hash, fields, grader,
    /// models held, models `other`'s config does not name, then each shared model's settings
    /// (models in name order). Identical manifests have none.
    pub fn differences(&self, other: &Manifest) -> Vec<Difference> {
        let mut out: Vec<Difference> = config_differences(&self.config, &other.config, "")
            .into_iter()
            .map(|key| Difference::Config {
                change: Change {
                    before: config_at(&self.config, &key).cloned(),
                    after: config_at(&other.config, &key).cloned(),
                },
                key,
            })
            .collect();
        out.extend(change(&self.config_hash, &other.config_hash).map(Difference::ConfigHash));
        if task_key(self.settings.as_ref()) != task_key(other.settings.as_ref()) {
            out.push(Difference::Task(Change {
                before: self.settings.clone(),
                after: other.settings.clone(),
            }));
        }
        let (a, b) = (&self.dataset, &other.dataset);
        let (x, y) = (self.dataset_identity(), other.dataset_identity());
        out.extend(change(&x, &y).map(|c| {
            Difference::Dataset(Change {
                before: c.before.to_string(),
                after: c.after.to_string(),
            })
        }));
        out.extend(change(&a.limit, &b.limit).map(Difference::DatasetLimit));
        out.extend(change(&self.shard, &other.shard).map(Difference::Shard));
        out.extend(
            change(&self.prompt_template, &other.prompt_template).map(Difference::PromptTemplate),
        );
        out.extend(change(&self.prompt_hash, &other.prompt_hash).map(Difference::PromptHash));
        if !self.config.is_null() && !other.config.is_null() {
            let fields = |m: &Manifest| recorded_fields(&m.config).filter(|f| !is_default(f));
            out.extend(change(&fields(self), &fields(other)).map(Difference::Fields));
        }
        out.extend(change(&self.grading(), &other.grading()).map(Difference::Grader));
        let names = |m: &Manifest| m.models.keys().cloned().collect::<Vec<_>>();
        out.extend(change(&names(self), &names(other)).map(Difference::Models));
        if !other.config.is_null() {
            let named = config_model_names(&other.config);
            out.extend(
                self.models
                    .keys()
                    .filter(|m| !named.contains(m.as_str()))
                    .map(|m| Difference::NotInConfig { model: m.clone() }),
            );
        }
        for (name, a) in &self.models {
            let Some(b) = other.models.get(name) else {
                continue;
            };
            let ids = change(&a.model_id, &b.model_id).map(ModelSetting::ModelId);
            out.extend(
                ids.into_iter()
                    .chain(sampling_differences(&a.sampling, &b.sampling))
                    .map(|setting| Difference::Model {
                        model: name.clone(),
                        setting,
                    }),
            );
        }
        out
    }

    /// Whether this run was started from the same config file, settings file and task: the
    /// identity `resume_from_checkpoint` resumes by.
    pub fn same_task(&self, config_hash: &str, task: Option<&TaskFile>) -> bool {
        self.config_hash == config_hash && task_key(self.settings.as_ref()) == task_key(task)
    }
}

/// A task's identity: the settings file's content and the task's position in it.
fn task_key(t: Option<&TaskFile>) -> Option<(&str, Option<usize>)> {
    t.map(|t| (t.sha256.as_str(), t.index))
}

fn sampling_differences(a: &SamplingSettings, b: &SamplingSettings) -> Vec<ModelSetting> {
    use ModelSetting as S;
    [
        change(&a.n, &b.n).map(S::N),
        float_change(a.temperature, b.temperature).map(S::Temperature),
        float_change(a.top_p, b.top_p).map(S::TopP),
        change(&a.top_k, &b.top_k).map(S::TopK),
        change(&a.seed, &b.seed).map(S::Seed),
        change(&a.max_tokens, &b.max_tokens).map(S::MaxTokens),
        change(&a.stop, &b.stop).map(S::Stop),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The `[evaluation.fields]` recorded in a manifest's config.
fn recorded_fields(config: &Value) -> Option<FieldMap> {
    let raw = config.pointer("/evaluation/fields")?;
    field_map(
        serde_json::from_value::<RawFields>(raw.clone())
            .ok()
            .as_ref(),
    )
}

/// Every model a config names, enabled or not.
fn config_model_names(config: &Value) -> BTreeSet<&str> {
    config
        .get("models")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("name")?.as_str())
        .collect()
}

/// Every key (dotted path under `at`) whose value differs, depth first in key order: a key one
/// side lacks, an array whose length differs, or a differing leaf.
fn config_differences(a: &Value, b: &Value, at: &str) -> Vec<String> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter()
                .flat_map(|k| match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => config_differences(u, v, &join(k)),
                    _ => vec![join(k)],
                })
                .collect()
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .flat_map(|(i, (u, v))| config_differences(u, v, &format!("{at}[{i}]")))
            .collect(),
        _ if a != b => vec![at.to_string()],
        _ => Vec::new(),
    }
}

/// The value at a dotted config key of [`Difference::Config`] (`None` when unset).
fn config_at<'a>(config: &'a Value, key: &str) -> Option<&'a Value> {
    let mut v = Some(config);
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        v = v.and_then(|v| v.get(name));
        if let Some(i) = index {
            v = v.and_then(|v| v.get(i));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::manifest::{DatasetInfo, ModelManifest, Status};
    use serde_json::json;

    fn sampling() -> SamplingSettings {
        SamplingSettings {
            n: 4,
            temperature: 1.0,
            top_p: 0.8,
            top_k: None,
            seed: 42,
            max_tokens: Some(8192),
            greedy: true,
            use_n_param: false,
            n_per_request: 1,
            stop: vec![],
        }
    }

    fn model(id: &str) -> ModelManifest {
        ModelManifest {
            model_id: id.into(),
            base_url: "http://127.0.0.1:1/v1".into(),
            api_key_env: None,
            sampling: sampling(),
            status: Status::Complete,
            error: None,
            units_planned: 10,
            ok: 10,
            truncated: 0,
            api_error: 0,
            served_models: Default::default(),
            system_fingerprints: vec![],
            failure_causes: Default::default(),
            cost: None,
            batch_id: None,
        }
    }

    fn manifest() -> Manifest {
        Manifest {
            harness: "gpassk test".into(),
            git_commit: None,
            run_id: "r1".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            finished_at: None,
            status: Status::Complete,
            config_path: "c.toml".into(),
            config: json!({
                "evaluation": {"grader": "rule", "output_dir": "results"},
                "models": [{"name": "a"}, {"name": "b"}],
            }),
            config_hash: "c0".into(),
            settings: None,
            overrides: vec![],
            task_name: None,
            dataset: DatasetInfo {
                name: "aime24".into(),
                files: vec!["aime24.jsonl".into()],
                sha256: "d0".into(),
                problems: 5,
                limit: None,
            },
            prompt_template: "{question}".into(),
            prompt_hash: "p0".into(),
            few_shot_examples: 0,
            models: [("a".to_string(), model("m-a")), ("b".into(), model("m-b"))].into(),
            shard: None,
            merged_from: vec![],
            imported: None,
            origin: None,
        }
    }

    fn task(sha256: &str, index: Option<usize>) -> TaskFile {
        TaskFile {
            path: "settings.json".into(),
            content: json!({}),
            sha256: sha256.into(),
            index,
            task_name: None,
        }
    }

    /// An edit of a manifest.
    type Edit = fn(&mut Manifest);
    type ModelEdit = fn(&mut ModelManifest);

    /// The differences from [`manifest`] to it edited by `edit`.
    fn after(edit: impl FnOnce(&mut Manifest)) -> Vec<Difference> {
        let mut other = manifest();
        edit(&mut other);
        manifest().differences(&other)
    }

    fn c<T>(before: T, after: T) -> Change<T> {
        Change { before, after }
    }

    #[test]
    fn identical_manifests_differ_in_nothing() {
        assert_eq!(manifest().differences(&manifest()), []);
        // What a run did (its status, counts, times, id) is no difference in what it measured.
        let ran = after(|m| {
            m.run_id = "r2".into();
            m.created_at = "2026-02-01T00:00:00Z".into();
            m.status = Status::Interrupted;
            m.models.get_mut("a").unwrap().ok = 3;
            m.models.get_mut("a").unwrap().system_fingerprints = vec!["fp".into()];
        });
        assert_eq!(ran, []);
    }

    #[test]
    fn each_run_wide_field_makes_its_difference() {
        use Difference as D;
        let s = |x: &str| x.to_string();
        let cases: [(Edit, Difference); 7] = [
            (
                |m| m.config_hash = "c1".into(),
                D::ConfigHash(c(s("c0"), s("c1"))),
            ),
            (
                |m| m.settings = Some(task("t", Some(1))),
                D::Task(c(None, Some(task("t", Some(1))))),
            ),
            (
                |m| m.dataset.sha256 = "d1".into(),
                D::Dataset(c(s("d0"), s("d1"))),
            ),
            (
                |m| m.dataset.limit = Some(3),
                D::DatasetLimit(c(None, Some(3))),
            ),
            (
                |m| m.shard = "1/2".parse().ok(),
                D::Shard(c(None, "1/2".parse().ok())),
            ),
            (
                |m| m.prompt_template = "Q: {question}".into(),
                D::PromptTemplate(c(s("{question}"), s("Q: {question}"))),
            ),
            (
                |m| m.prompt_hash = "p1".into(),
                D::PromptHash(c(s("p0"), s("p1"))),
            ),
        ];
        for (edit, want) in cases {
            assert_eq!(after(edit), [want]);
        }
        // A task file of other content or another task of it; the same task in a renamed file is the same.
        let base = |m: &mut Manifest| m.settings = Some(task("t", Some(0)));
        let mut a = manifest();
        base(&mut a);
        let mut b = a.clone();
        b.settings.as_mut().unwrap().path = "elsewhere.json".into();
        assert_eq!(a.differences(&b), []);
        b.settings.as_mut().unwrap().index = Some(1);
        assert!(matches!(&a.differences(&b)[..], [D::Task(_)]));
    }

    #[test]
    fn config_keys_differ_leaf_by_leaf_and_name_their_values() {
        let d = after(|m| {
            m.config["evaluation"]["output_dir"] = json!("elsewhere");
            m.config["evaluation"]["limit"] = json!(3);
        });
        assert_eq!(
            d,
            [
                Difference::Config {
                    key: "evaluation.limit".into(),
                    change: c(None, Some(json!(3)))
                },
                Difference::Config {
                    key: OUTPUT_DIR_KEY.into(),
                    change: c(Some(json!("results")), Some(json!("elsewhere")))
                },
            ]
        );
        let d = after(|m| m.config["models"][1]["name"] = json!("c"));
        assert!(
            matches!(&d[0], Difference::Config { key, .. } if key == "models[1].name"),
            "{d:?}"
        );
        // `b` is still held, but the other config no longer names it.
        assert!(d.contains(&Difference::NotInConfig { model: "b".into() }));
        // An old manifest without a config differs as a whole, and names no model.
        let d = after(|m| m.config = Value::Null);
        assert_eq!(
            d,
            [Difference::Config {
                key: String::new(),
                change: c(None, None)
            }]
        );
    }

    #[test]
    fn fields_and_grader_are_read_from_the_config() {
        let d = after(|m| m.config["evaluation"]["fields"] = json!({"question": "problem"}));
        let fields = FieldMap {
            id: None,
            question: "problem".into(),
            answer: "answer".into(),
            subset: None,
        };
        assert_eq!(d.last(), Some(&Difference::Fields(c(None, Some(fields)))));
        // Restating the defaults is no difference in fields (the config key still differs).
        let d = after(|m| m.config["evaluation"]["fields"] = json!({"id": "id"}));
        assert!(
            !d.iter().any(|d| matches!(d, Difference::Fields(_))),
            "{d:?}"
        );
        let d = after(|m| {
            m.config["evaluation"]["grader"] = json!("judge");
            m.config["judge"] = json!({"model_id": "qwen"});
        });
        assert_eq!(
            d.last(),
            Some(&Difference::Grader(c(
                ("rule".into(), None),
                ("judge".into(), Some("qwen".into()))
            )))
        );
    }

    #[test]
    fn models_held_and_each_model_setting_differ() {
        let d = after(|m| {
            m.models.remove("b");
        });
        assert_eq!(
            d,
            [Difference::Models(c(
                vec!["a".into(), "b".into()],
                vec!["a".into()]
            ))]
        );
        use ModelSetting as S;
        let cases: [(ModelEdit, ModelSetting); 8] = [
            (
                |m| m.model_id = "m-x".into(),
                S::ModelId(c("m-b".into(), "m-x".into())),
            ),
            (|m| m.sampling.n = 8, S::N(c(4, 8))),
            (
                |m| m.sampling.temperature = 0.7,
                S::Temperature(c(1.0, 0.7)),
            ),
            (|m| m.sampling.top_p = 0.95, S::TopP(c(0.8, 0.95))),
            (|m| m.sampling.top_k = Some(20), S::TopK(c(None, Some(20)))),
            (|m| m.sampling.seed = 7, S::Seed(c(42, 7))),
            (
                |m| m.sampling.max_tokens = None,
                S::MaxTokens(c(Some(8192), None)),
            ),
            (
                |m| m.sampling.stop = vec!["\n\n".into()],
                S::Stop(c(vec![], vec!["\n\n".into()])),
            ),
        ];
        for (edit, setting) in cases {
            let d = after(|m| edit(m.models.get_mut("b").unwrap()));
            let want = Difference::Model {
                model: "b".into(),
                setting,
            };
            assert_eq!(d, [want]);
        }
        // Settings that change no sample's distribution are not compared.
        assert_eq!(
            after(|m| m.models.get_mut("a").unwrap().base_url = "x".into()),
            []
        );
    }
}
