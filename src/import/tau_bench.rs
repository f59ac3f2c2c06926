//! Reader of τ-bench and τ²-bench trial trajectories: τ-bench's results file (one JSON array of
//! `{task_id, reward, info, traj, trial}`) and τ²-bench's `Results` (`info`, `tasks`,
//! `simulations[]` of `{task_id, trial, reward_info.reward, termination_reason, …}`, in one file
//! or as `results.json` beside a `simulations/` folder).
//!
//! An agent's trajectory has no answer to grade: the reward is the verdict. A trial succeeds when
//! its reward is 1 (within 1e-6, both harnesses' test); gpassk keeps it as the answer `1` (else
//! `0`) graded against the gold `1`, so gpassk's verdict and the source's are the same, and
//! G-Pass@k_1.0 is the harnesses' pass^k.

use super::files::{file_name, files_under, json_text};
use super::source::{At, ImportError, Reader, Role, Sink, SourceSample, SourceSummary};
use super::stream::{first_entry, json_entries, json_object_streaming, peek_top, small_json, Top};
use crate::rundir::provenance::SourceSettings;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

/// τ-bench and τ²-bench results files.
pub static READER: Reader = Reader {
    name: "tau-bench",
    about: "τ-bench / τ²-bench trial trajectories ({task_id, trial, reward}): the reward is the verdict, pass^k = G-Pass@k_1.0",
    fields: &[],
    claims,
    read: |paths, _, sink| read(paths, sink),
};

/// Both harnesses' success test.
fn succeeded(reward: f64) -> bool {
    (1.0 - 1e-6..=1.0 + 1e-6).contains(&reward)
}

/// Whether `path` is a τ-bench results array (its first entry a trial) or a τ²-bench `Results`
/// (its head names the run's `info`).
fn claims(path: &Path) -> bool {
    if !file_name(path).ends_with(".json") {
        return false;
    }
    match peek_top(path) {
        Ok(Top::Array) => first_entry(path).is_some_and(|(_, v)| is_trial(&v)),
        Ok(Top::Object) => head(path).is_some_and(|h| is_tau2(&h)),
        _ => false,
    }
}

fn is_trial(v: &Value) -> bool {
    ["task_id", "reward", "trial"]
        .iter()
        .all(|k| v.get(k).is_some())
        && (v.get("traj").is_some() || v.get("info").is_some())
}

/// The first 64 KiB of a file, as text.
fn head(path: &Path) -> Option<String> {
    let mut buf = Vec::new();
    let f = crate::util::open_regular(path).ok()?;
    f.take(1 << 16).read_to_end(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf).into_owned())
}

fn is_tau2(head: &str) -> bool {
    ["\"environment_info\"", "\"agent_info\"", "\"num_trials\""]
        .iter()
        .all(|k| head.contains(k))
}

/// Streams every results file under `paths` into `sink`.
fn read(paths: &[PathBuf], sink: &mut dyn Sink) -> Result<SourceSummary, ImportError> {
    let files = files_under(paths, |p| file_name(p).ends_with(".json") && claims(p))?;
    if files.is_empty() {
        return Err(ImportError::Input(format!(
            "tau-bench: no τ-bench results array nor τ²-bench results JSON under {}",
            (paths.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut summary = SourceSummary {
        verdicts: "the reward of each trial: a reward of 1 (within 1e-6) is a success, as τ-bench and τ²-bench test it; gpassk grades the same answer (1 or 0), so both verdicts agree and G-Pass@k_1.0 is pass^k".into(),
        ..SourceSummary::default()
    };
    let mut layouts = BTreeSet::new();
    for path in files {
        let read = match peek_top(&path)? {
            Top::Array => tau1(&path, sink)?,
            _ => tau2(&path, sink)?,
        };
        if let Some(read) = read {
            layouts.insert(read.layout);
            read.notes(&path, &mut summary);
            // pass^1 … pass^n, as both harnesses print them.
            let most = read.trials.values().copied().max().unwrap_or(0);
            summary.ks.extend(1..=u64::from(most));
            summary.models.entry(read.model).or_insert(read.settings);
        }
    }
    summary.layout = layouts.into_iter().collect::<Vec<_>>().join("; ");
    summary.ks.sort_unstable();
    summary.ks.dedup();
    Ok(summary)
}

/// What one file gave.
struct FileRead {
    layout: &'static str,
    model: String,
    dataset: String,
    settings: SourceSettings,
    /// Per task: its trials.
    trials: BTreeMap<String, u32>,
}

impl FileRead {
    /// Tasks with fewer trials than the most any task has: gpassk scores each on its own (as
    /// τ²-bench does); τ-bench's own table counts the missing trials as failures.
    fn notes(&self, path: &Path, summary: &mut SourceSummary) {
        let most = self.trials.values().copied().max().unwrap_or(0);
        let short: Vec<String> = (self.trials.iter())
            .filter(|(_, &n)| n < most)
            .map(|(t, n)| format!("task {} ({n})", crate::util::printable(t)))
            .collect();
        if short.is_empty() {
            return;
        }
        summary.note(&self.dataset, format!(
            "{}: {} of {} tasks have fewer than {most} trials ({}{}): each is scored on the trials it has, as τ²-bench does (a task with fewer than k is left out of pass^k); τ-bench's own table counts the missing trials as failures",
            path.display(),
            short.len(),
            self.trials.len(),
            short.iter().take(5).cloned().collect::<Vec<_>>().join(", "),
            if short.len() > 5 { ", …" } else { "" }
        ));
    }
}

/// The environment and model a τ-bench file name says: its checkpoint name
/// `<strategy>-<model>-<temperature>_range_<a>-<b>_user-<user model>-<strategy>_<time>.json`,
/// or a release's `<model>-<env>.json`; the environment otherwise from the policy the agent
/// was given.
fn tau1_names(path: &Path, first: Option<&Value>) -> (String, String, Option<f64>) {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let policy = first
        .and_then(|v| v.pointer("/traj/0/content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_ascii_lowercase();
    let env = ["airline", "retail"]
        .into_iter()
        .find(|e| stem.contains(e) || policy.contains(&format!("# {e}")))
        .unwrap_or("tau-bench")
        .to_string();
    if let Some((head, _)) = stem.split_once("_range_") {
        // `tool-calling-gpt-4o-0.0`: the temperature after the last `-`, the strategy before
        // the model (strategies: tool-calling, act, react, few-shot).
        let (rest, temp) = head.rsplit_once('-').unwrap_or((head, ""));
        let model = ["tool-calling-", "few-shot-", "react-", "act-"]
            .iter()
            .find_map(|s| rest.strip_prefix(s))
            .unwrap_or(rest);
        return (env, model.to_string(), temp.parse().ok());
    }
    let model = (stem.strip_suffix(&format!("-{env}")))
        .or(stem.strip_suffix(&format!("_{env}")))
        .unwrap_or(&stem);
    (env, model.to_string(), None)
}

/// A τ-bench results array.
fn tau1(path: &Path, sink: &mut dyn Sink) -> Result<Option<FileRead>, ImportError> {
    let first = first_entry(path).map(|(_, v)| v);
    let (dataset, model, temperature) = tau1_names(path, first.as_ref());
    if !sink.wants(path, Some(&model), Some(&dataset)) {
        return Ok(None);
    }
    let file = sink.open(path, Role::Samples)?;
    let mut read = FileRead {
        layout: "τ-bench results (a JSON array of {task_id, reward, info, traj, trial})",
        model,
        dataset,
        settings: SourceSettings {
            temperature,
            ..SourceSettings::default()
        },
        trials: BTreeMap::new(),
    };
    let mut trial_ids = BTreeSet::new();
    json_entries(path, |key, v| {
        let at = At::Item(key);
        let Some(obj) = v.as_object() else {
            return sink.bad(file, at, "not a JSON object".into());
        };
        trial_ids.extend(obj.get("trial").and_then(Value::as_u64));
        let question = v.pointer("/info/task/instruction").and_then(json_text);
        let errored = (v.pointer("/info/error").and_then(json_text))
            .map(|e| e.lines().next().unwrap_or_default().to_string());
        trial(
            sink,
            &mut read,
            (file, at),
            obj,
            (question, errored, "reward"),
        )
    })?;
    read.settings.nominal_n = u32::try_from(trial_ids.len()).ok();
    read.settings.recorded =
        serde_json::json!({ "file": file_name(path), "trials": trial_ids.len() });
    Ok(Some(read))
}

/// One trial as a sample: `reward_key` holds its reward (a dotted path).
fn trial(
    sink: &mut dyn Sink,
    read: &mut FileRead,
    (file, at): (usize, At),
    obj: &Map<String, Value>,
    (question, errored, reward_key): (Option<String>, Option<String>, &str),
) -> Result<(), ImportError> {
    let Some(task) = obj.get("task_id").and_then(json_text) else {
        return sink.bad(file, at, "no `task_id`".into());
    };
    let trial = match obj.get("trial") {
        None | Some(Value::Null) => None,
        Some(t) => match t.as_u64().and_then(|t| u32::try_from(t).ok()) {
            Some(t) => Some(t),
            None => return sink.bad(file, at, format!("`trial` is not a trial number: {t}")),
        },
    };
    let mut keys = reward_key.split('.');
    let value = (keys.next().and_then(|k| obj.get(k)))
        .and_then(|v| keys.try_fold(v, |v, k| v.get(k)))
        .filter(|v| !v.is_null());
    let reward = match value.map(|v| (v, v.as_f64())) {
        // τ²-bench keeps no reward of a run that did not finish: no success.
        None => 0.0,
        Some((_, Some(r))) if (0.0..=1.0 + 1e-6).contains(&r) => r,
        Some((v, _)) => {
            let m = format!("`{reward_key}` {v} is not a reward (0 to 1)");
            return sink.bad(file, at, m);
        }
    };
    let success = succeeded(reward);
    *read.trials.entry(task.clone()).or_default() += 1;
    sink.sample(SourceSample {
        model: read.model.clone(),
        dataset: read.dataset.clone(),
        question: question.or_else(|| Some(format!("task {task}"))),
        problem_id: task,
        gold: Some("1".into()),
        repeat: trial,
        answer: Some(if success { "1" } else { "0" }.into()),
        extracted: Some(reward.to_string()),
        verdict: Some(success),
        errored,
        file,
        at,
        ..SourceSample::default()
    })
}

/// A τ²-bench `Results`: one JSON object, its simulations inline or (the "dir" format) one file
/// each in the `simulations/` folder beside it.
fn tau2(path: &Path, sink: &mut dyn Sink) -> Result<Option<FileRead>, ImportError> {
    let meta = Tau2Meta::read(path)?;
    if !sink.wants(path, Some(&meta.read.model), Some(&meta.read.dataset)) {
        return Ok(None);
    }
    let file = sink.open(path, Role::Samples)?;
    let mut read = meta.read;
    let questions = meta.questions;
    let mut each = |sink: &mut dyn Sink, file: usize, at: At, v: Value| {
        let Some(obj) = v.as_object() else {
            return sink.bad(file, at, "a simulation is not a JSON object".into());
        };
        let task = obj.get("task_id").and_then(json_text).unwrap_or_default();
        let errored = (obj.get("termination_reason").and_then(Value::as_str))
            .filter(|r| *r == "infrastructure_error")
            .map(|r| format!("termination_reason {r}"));
        let question = questions.get(&task).cloned();
        trial(
            sink,
            &mut read,
            (file, at),
            obj,
            (question, errored, "reward_info.reward"),
        )
    };
    let mut inline = 0u64;
    json_object_streaming(
        path,
        "simulations",
        |_, _| Ok(()),
        |i, v| {
            inline += 1;
            each(sink, file, At::Item(format!("simulations[{i}]")), v)
        },
    )?;
    let folder = path.with_file_name("simulations");
    if inline == 0 && folder.is_dir() {
        let mut sims: Vec<PathBuf> = files_under(&[folder], |p| file_name(p).ends_with(".json"))?;
        sims.sort();
        for s in sims {
            let f = sink.open(&s, Role::Samples)?;
            let v = small_json(&s)?;
            each(sink, f, At::File, v)?;
        }
    }
    Ok(Some(read))
}

/// A τ²-bench run's `info` and task questions, read before its simulations.
struct Tau2Meta {
    read: FileRead,
    questions: HashMap<String, String>,
}

impl Tau2Meta {
    fn read(path: &Path) -> Result<Tau2Meta, ImportError> {
        let mut info = Value::Null;
        let mut questions = HashMap::new();
        json_object_streaming(
            path,
            "simulations",
            |k, v| {
                match k.as_str() {
                    "info" => info = v,
                    "tasks" => questions.extend(task_questions(&v)),
                    _ => {}
                }
                Ok(())
            },
            |_, _| Ok(()),
        )?;
        let agent = &info["agent_info"];
        let model = (agent["llm"].as_str().or(agent["implementation"].as_str()))
            .unwrap_or("agent")
            .to_string();
        let dataset = (info
            .pointer("/environment_info/domain_name")
            .and_then(Value::as_str))
        .unwrap_or("tau2-bench")
        .to_string();
        let args = &agent["llm_args"];
        let settings = SourceSettings {
            temperature: args["temperature"].as_f64(),
            top_p: args["top_p"].as_f64(),
            max_tokens: (args["max_tokens"].as_u64()).and_then(|t| u32::try_from(t).ok()),
            seed: info["seed"].as_u64(),
            nominal_n: info["num_trials"]
                .as_u64()
                .and_then(|n| u32::try_from(n).ok()),
            recorded: serde_json::json!({
                "agent_info": agent,
                "user_info": info["user_info"],
                "git_commit": info["git_commit"],
                "max_steps": info["max_steps"],
                "max_errors": info["max_errors"],
            }),
        };
        let read = FileRead {
            layout: "τ²-bench Results (info, tasks, simulations[] with reward_info.reward)",
            model,
            dataset,
            settings,
            trials: BTreeMap::new(),
        };
        Ok(Tau2Meta { read, questions })
    }
}

/// Each task's question: what the user calls about (`user_scenario.instructions`), else the
/// task's purpose.
fn task_questions(tasks: &Value) -> Vec<(String, String)> {
    (tasks.as_array().into_iter().flatten())
        .filter_map(|t| {
            let id = t.get("id").and_then(json_text)?;
            let instructions = t.pointer("/user_scenario/instructions");
            let q = (instructions.and_then(|i| i.get("reason_for_call")))
                .or(instructions.filter(|i| i.is_string()))
                .or(t.pointer("/description/purpose"))
                .and_then(json_text)?;
            Some((id, q))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::source::ReadOptions;
    use super::super::testing::{fixture, read_into, Collect};
    use super::*;

    fn run(paths: &[PathBuf]) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("tau-bench", paths, &ReadOptions::default(), false)
    }

    /// Per task: (trials, successes).
    fn by_task(sink: &Collect) -> Vec<(String, u32, u32)> {
        (sink.counts().into_iter())
            .map(|((_, p), (n, c))| (p, n, c.unwrap()))
            .collect()
    }

    #[test]
    fn a_released_tau_bench_file_gives_each_task_its_trials() {
        let (sink, out) = run(&[fixture("tau-bench/v1/gpt-4o-airline.json")]);
        let summary = out.unwrap();
        let tasks = by_task(&sink);
        assert_eq!(tasks.len(), 50);
        assert!(tasks.iter().all(|t| t.1 == 4));
        assert_eq!(tasks.iter().map(|t| t.2).sum::<u32>(), 84);
        assert_eq!(sink.datasets(), ["airline"]);
        assert!(sink
            .samples
            .iter()
            .all(|s| s.model == "gpt-4o" && s.gold.as_deref() == Some("1")));
        assert!(sink.samples.iter().all(|s| s.response.is_none()));
        assert_eq!(summary.ks, [1, 2, 3, 4]);
        assert_eq!(summary.models["gpt-4o"].nominal_n, Some(4));
    }

    #[test]
    fn tau2_results_in_one_file_or_a_folder_give_the_same_trials() {
        let e: Value = serde_json::from_str(
            &std::fs::read_to_string(fixture("tau-bench/tau2/expected.json")).unwrap(),
        )
        .unwrap();
        let mut want = Vec::new();
        for (task, rewards) in e["rewards"].as_object().unwrap() {
            let present: Vec<&Value> = (rewards.as_array().unwrap().iter())
                .filter(|r| *r != "missing")
                .collect();
            let c = present.iter().filter(|r| r.as_f64() == Some(1.0)).count() as u32;
            want.push((task.clone(), present.len() as u32, c));
        }
        for path in [
            "tau-bench/tau2/stub-agent_stub-domain_4trials.json",
            "tau-bench/tau2/dir/results.json",
        ] {
            let (sink, out) = run(&[fixture(path)]);
            let summary = out.unwrap();
            assert_eq!(by_task(&sink), want, "{path}");
            assert_eq!(sink.datasets(), ["stub-domain"]);
            let errored: Vec<&SourceSample> = sink
                .samples
                .iter()
                .filter(|s| s.errored.is_some())
                .collect();
            assert_eq!(errored.len(), 1, "{path}");
            assert_eq!(
                (errored[0].problem_id.as_str(), errored[0].repeat),
                ("t3", Some(1))
            );
            let m = &summary.models["stub-agent"];
            assert_eq!(
                (m.temperature, m.seed, m.nominal_n),
                (Some(0.5), Some(300), Some(4))
            );
            assert!(
                summary.notes.iter().any(|n| n.text.contains("task t4 (3)")),
                "{:?}",
                summary.notes
            );
            assert_eq!(
                sink.samples[0].question.as_deref(),
                Some("You want the stub agent to do task t0.")
            );
        }
        assert!(claims(&fixture("tau-bench/tau2/dir/results.json")));
        assert!(!claims(&fixture(
            "tau-bench/tau2/dir/simulations/t0-0.json"
        )));
    }

    #[test]
    fn file_names_say_the_environment_and_the_model() {
        let n = |name: &str| tau1_names(Path::new(name), None);
        assert_eq!(
            n("gpt-4o-airline.json"),
            ("airline".into(), "gpt-4o".into(), None)
        );
        assert_eq!(
            n("tool-calling-gpt-4o-0.0_range_0-50_user-gpt-4o-llm_1122163325.json"),
            ("tau-bench".into(), "gpt-4o".into(), Some(0.0))
        );
        assert_eq!(n("sonnet-35-new-retail.json").1, "sonnet-35-new");
    }

    #[test]
    fn rewards_out_of_range_are_named_and_a_missing_reward_is_no_success() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m-airline.json");
        let trials = serde_json::json!([
            {"task_id": 0, "reward": 1.0, "info": {}, "traj": [], "trial": 0},
            {"task_id": 0, "reward": 0.0, "info": {"error": "boom\ntrace"}, "traj": [], "trial": 1},
            {"task_id": 1, "reward": 7.5, "info": {}, "traj": [], "trial": 0}
        ]);
        std::fs::write(&path, trials.to_string()).unwrap();
        let (sink, out) = run(std::slice::from_ref(&path));
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("m-airline.json: item 2") && e.contains("7.5"),
            "{e}"
        );
        assert_eq!(sink.samples.len(), 2);
        assert_eq!(sink.samples[1].errored.as_deref(), Some("boom"));
        assert_eq!(sink.samples[0].answer.as_deref(), Some("1"));
        assert!(claims(&path));
        assert!(!claims(&fixture("jsonl/expected.json")));
    }
}
