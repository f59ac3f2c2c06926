//! Reader of lm-eval (EleutherAI lm-evaluation-harness) `--log_samples` output: the
//! `samples_<task>_<time>.jsonl` files of v0.4.3 and later with their sibling
//! `results_<time>.json`, and the older `<model_args>_<task>.jsonl` (one JSON array) beside
//! `results.json`.
//!
//! lm-eval writes one record per (document, filter), each repeating the document's K generations
//! (`resps[0]`, K = the task's `repeats`) and one per-document value per metric. The samples come
//! from one record per document; a metric is kept as the source's verdict only where it judges
//! one sample (a `take_first` filter: the first repeat). `--field problem_id=…`/`question=…` name
//! fields of `doc`; `--field verdict=<metric>,<filter>` picks the filter whose metric is the
//! verdict (by default the first `take_first` filter).

use super::files::{distinct_files, file_name, files_under, json_text, verdict};
use super::source::{
    At, ImportError, ReadOptions, Reader, Recompute, Role, Sink, SourceSample, SourceSummary,
    Stored,
};
use super::stream::TextLines;
use super::stream::{
    first_line, json_entries, json_lines, lenient_json, peek_top, small_json, Top,
};
use crate::rundir::provenance::SourceSettings;
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// lm-eval (EleutherAI lm-evaluation-harness) `--log_samples` output.
pub static READER: Reader = Reader {
    name: "lm-eval",
    about:
        "lm-evaluation-harness --log_samples: samples_<task>_<time>.jsonl beside its results JSON",
    fields: &["problem_id", "question", "verdict"],
    claims,
    read,
};

/// `samples_<task>_<date_id>.jsonl`; the task may hold `_`, the date id never does.
static SAMPLES: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^samples_(.+)_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+)\.jsonl$")
        .expect("static regex")
});
/// `<anything>_<date_id>.json`: `results_<date_id>.json`, or `<stem>_<date_id>.json` when
/// `--output_path` named a `.json` file.
static DATED_JSON: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(.+)_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+)\.json$").expect("static regex")
});

/// A record's own keys; any other number on a record is a metric.
const RECORD_KEYS: [&str; 11] = [
    "doc_id",
    "doc",
    "target",
    "arguments",
    "resps",
    "filtered_resps",
    "filter",
    "metrics",
    "doc_hash",
    "prompt_hash",
    "target_hash",
];

/// Whether `path` is an lm-eval samples file: `samples_<task>_<time>.jsonl` whose first line is a
/// record, or a `.jsonl` holding one JSON array of records (0.4.0–0.4.2).
fn claims(path: &Path) -> bool {
    let name = file_name(path);
    if SAMPLES.is_match(&name) {
        return first_line(path).is_some_and(|v| is_record(&v));
    }
    name.ends_with(".jsonl")
        && matches!(peek_top(path), Ok(Top::Array))
        && first_entry(path).is_some_and(|v| is_record(&v))
}

fn is_record(v: &Value) -> bool {
    v.get("doc_id").is_some()
        && v.get("resps").is_some_and(Value::is_array)
        && v.get("filtered_resps").is_some()
}

/// Whether a JSON value is an lm-eval results file: `results` and `configs` objects.
fn is_results(v: &Value) -> bool {
    v.get("results").is_some_and(Value::is_object) && v.get("configs").is_some_and(Value::is_object)
}

/// The first entry of a file holding one JSON array, read without the rest.
fn first_entry(path: &Path) -> Option<Value> {
    super::stream::first_entry(path).map(|(_, v)| v)
}

/// Streams the lm-eval samples files under `paths` (and their results files) into `sink`: one
/// dataset per task, or one for `--task GROUP` with its tasks as subsets.
fn read(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    let mut cache = Results::default();
    let files = discover(paths, &mut cache)?;
    if files.is_empty() {
        return Err(ImportError::Input(format!(
            "lm-eval: no samples file (samples_<task>_<time>.jsonl, or a 0.4.0–0.4.2 <model_args>_<task>.jsonl array beside results.json) in {}",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let group = group_of(&files, opts, &mut cache);
    let mut out = SourceSummary::default();
    let mut layouts = BTreeSet::new();
    let mut verdicts = Vec::new();
    let twice = tasks_read_twice(&files, &mut cache)?;
    for tf in &files {
        let res = match &tf.results {
            Some(p) => Some(cache.get(p)?),
            None => None,
        };
        let info = TaskInfo::new(res, tf);
        let dataset = match &group {
            Some((g, members)) if members.contains(&tf.task) => g.clone(),
            _ => tf.task.clone(),
        };
        if !sink.wants(&tf.path, Some(&info.model), Some(&dataset)) {
            continue;
        }
        let ctx = Ctx {
            dataset,
            qualify: group.as_ref().is_some_and(|(_, m)| m.contains(&tf.task)),
            twice: twice.contains(&(tf.task.clone(), info.model.clone())),
        };
        let mut r = TaskRead::new(sink, tf, info, opts, ctx)?;
        r.read(sink)?;
        r.check_verdict_filter()?;
        layouts.insert(r.layout());
        verdicts.push(r.verdict_sentence());
        r.finish(&mut out);
    }
    out.layout = layouts.into_iter().collect::<Vec<_>>().join("; ");
    out.verdicts = verdicts.join("; ");
    Ok(out)
}

/// What a samples file's samples are, besides its task.
struct Ctx {
    /// The run they go to: the task, or the group `--task` named.
    dataset: String,
    /// Problem ids are `<task>/<doc_id>` (the tasks of a group share a run).
    qualify: bool,
    /// Another samples file holds the same task of the same model (seeds, re-runs): its
    /// aggregates are named after their file.
    twice: bool,
}

/// One samples file to read.
struct TaskFile {
    path: PathBuf,
    task: String,
    /// 0.4.0–0.4.2: one JSON array beside `results.json`.
    old: bool,
    results: Option<PathBuf>,
}

/// Results files, each parsed once.
#[derive(Default)]
struct Results(HashMap<PathBuf, Value>);

impl Results {
    fn get(&mut self, path: &Path) -> Result<&Value, ImportError> {
        if !self.0.contains_key(path) {
            let v = small_json(path)?;
            self.0.insert(path.to_path_buf(), v);
        }
        Ok(&self.0[path])
    }

    /// Whether `path` parses as a results file (unreadable files are not).
    fn is_results(&mut self, path: &Path) -> bool {
        self.get(path).is_ok_and(is_results)
    }
}

/// The samples files under `paths`; a results file given alone stands for its samples files.
fn discover(paths: &[PathBuf], cache: &mut Results) -> Result<Vec<TaskFile>, ImportError> {
    let found = files_under(paths, |p| {
        let n = file_name(p);
        n.ends_with(".jsonl") || n.ends_with(".json")
    })?;
    let mut samples = Vec::new();
    for f in found {
        let name = file_name(&f);
        if name.ends_with(".jsonl") {
            samples.push(f);
        } else if let Some(c) = DATED_JSON.captures(&name).filter(|_| cache.is_results(&f)) {
            let time = c[2].to_string();
            samples.extend(siblings(&f, |n| {
                SAMPLES.captures(n).is_some_and(|s| s[2] == time)
            }));
        } else if name == "results.json" {
            samples.extend(siblings(&f, |n| n.ends_with(".jsonl")));
        }
    }
    samples.sort();
    let mut out = Vec::new();
    for path in distinct_files(samples) {
        let name = file_name(&path);
        if let Some(c) = SAMPLES.captures(&name) {
            let (task, time) = (c[1].to_string(), c[2].to_string());
            let results = results_beside(&path, &task, &time, cache);
            out.push(TaskFile {
                task,
                old: false,
                results,
                path,
            });
        } else if peek_top(&path)? == Top::Array
            && first_entry(&path).is_some_and(|v| is_record(&v))
        {
            out.push(old_task_file(path, cache)?);
        }
    }
    Ok(out)
}

/// The results file of a samples file, found by content: a JSON beside it with `results` and
/// `configs`, named `<anything>_<the samples' time>.json` (lm-eval names it `results_<time>`,
/// or `<stem>_<time>` when `--output_path` names a `.json` file), else the only one there whose
/// `configs` hold the task.
fn results_beside(path: &Path, task: &str, time: &str, cache: &mut Results) -> Option<PathBuf> {
    let dated = siblings(path, |n| {
        DATED_JSON.captures(n).is_some_and(|c| &c[2] == time)
    });
    if let Some(r) = dated.into_iter().find(|r| cache.is_results(r)) {
        return Some(r);
    }
    let holding: Vec<PathBuf> = siblings(path, |n| n.ends_with(".json"))
        .into_iter()
        .filter(|r| {
            cache
                .get(r)
                .is_ok_and(|v| is_results(v) && v["configs"].get(task).is_some())
        })
        .collect();
    match holding.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// Files beside `path` whose names `wanted` accepts, in name order.
fn siblings(path: &Path, wanted: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let Ok(dir) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = dir
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && wanted(&file_name(p)))
        .collect();
    out.sort();
    out
}

/// An 0.4.0–0.4.2 array: its task is the longest task of the results file beside it that ends
/// its name (`<model_args>_<task>.jsonl`; both may hold `_`).
fn old_task_file(path: PathBuf, cache: &mut Results) -> Result<TaskFile, ImportError> {
    let name = file_name(&path);
    let mut candidates = vec![path.with_file_name("results.json")];
    candidates.extend(siblings(&path, |n| {
        n.ends_with(".json") && n != "results.json"
    }));
    for results in candidates.into_iter().filter(|c| c.is_file()) {
        let Ok(res) = cache.get(&results) else {
            continue;
        };
        let task = res["results"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .filter(|t| name.ends_with(&format!("_{t}.jsonl")))
            .max_by_key(|t| t.len());
        if let Some(task) = task {
            return Ok(TaskFile {
                task: task.clone(),
                old: true,
                results: Some(results),
                path,
            });
        }
    }
    Err(ImportError::Input(format!(
        "{}: an lm-eval 0.4.0–0.4.2 samples array needs the results.json of its run beside it (it names the task and the filters)",
        path.display()
    )))
}

/// `--task GROUP`, when it names a group of `group_subtasks` rather than a task: the group and
/// its tasks that have samples files (they become one run, the tasks its subsets).
fn group_of(
    files: &[TaskFile],
    opts: &ReadOptions,
    cache: &mut Results,
) -> Option<(String, BTreeSet<String>)> {
    let t = opts.task.as_ref()?;
    if files.iter().any(|f| f.task == *t) {
        return None;
    }
    let members = group_members(files, cache, t);
    (!members.is_empty()).then(|| (t.clone(), members))
}

/// The tasks with samples files under `group` in any results file's `group_subtasks`.
fn group_members(files: &[TaskFile], cache: &mut Results, group: &str) -> BTreeSet<String> {
    let have: BTreeSet<&str> = files.iter().map(|f| f.task.as_str()).collect();
    let results: BTreeSet<&PathBuf> = files.iter().filter_map(|f| f.results.as_ref()).collect();
    let mut out = BTreeSet::new();
    for r in results {
        let Ok(res) = cache.get(r) else { continue };
        let mut todo = vec![group.to_string()];
        let mut visited = HashSet::new();
        while let Some(g) = todo.pop() {
            if !visited.insert(g.clone()) {
                continue;
            }
            if have.contains(g.as_str()) {
                out.insert(g.clone());
            }
            for sub in res["group_subtasks"][&g].as_array().into_iter().flatten() {
                todo.extend(sub.as_str().map(String::from));
            }
        }
    }
    out
}

/// The (task, model) pairs more than one samples file holds.
fn tasks_read_twice(
    files: &[TaskFile],
    cache: &mut Results,
) -> Result<HashSet<(String, String)>, ImportError> {
    let mut seen: HashMap<(String, String), u32> = HashMap::new();
    for tf in files {
        let res = match &tf.results {
            Some(p) => Some(cache.get(p)?),
            None => None,
        };
        *seen
            .entry((tf.task.clone(), model_name(res, tf)))
            .or_default() += 1;
    }
    Ok(seen
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(k, _)| k)
        .collect())
}

/// How a filter's output relates to the K repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `take_first` without a vote: the first repeat's answer; its metric judges sample 0.
    First,
    /// `majority_vote`: the most common answer, no one sample's.
    Vote,
    /// No `take_first`: every repeat's answer, and a metric per document over them.
    Every,
    /// Not described by a results file.
    Unknown,
}

impl Kind {
    fn of(functions: &Value) -> Kind {
        let Some(list) = functions.as_array() else {
            return Kind::Unknown;
        };
        let has = |name: &str| list.iter().any(|f| f["function"] == name);
        if has("majority_vote") {
            Kind::Vote
        } else if has("take_first") {
            Kind::First
        } else {
            Kind::Every
        }
    }

    fn words(self) -> &'static str {
        match self {
            Kind::First => "takes the first repeat's answer",
            Kind::Vote => "is a majority vote over the repeats",
            Kind::Every => "keeps every repeat's answer, with one metric value per document (a mean over the repeats: how many, not which)",
            Kind::Unknown => "is not described by a results file",
        }
    }
}

struct Filter {
    name: String,
    kind: Kind,
    metrics: Vec<String>,
}

/// What a task's results file says about it.
struct TaskInfo {
    model: String,
    /// None without a results file (then the first record's request gives what it can).
    settings: Option<SourceSettings>,
    filters: Vec<Filter>,
    /// The `"<metric>,<filter>"` values of `results[task]`, in order.
    stored: Vec<(String, String, Value)>,
    /// Metrics whose aggregation is not the mean over documents.
    not_mean: HashMap<String, String>,
}

impl TaskInfo {
    fn new(res: Option<&Value>, tf: &TaskFile) -> TaskInfo {
        let r = res.unwrap_or(&Value::Null);
        let cfg = &r["configs"][&tf.task];
        let mut filters: Vec<Filter> = cfg["filter_list"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| {
                Some(Filter {
                    name: f["name"].as_str()?.to_string(),
                    kind: Kind::of(&f["filter"]),
                    metrics: Vec::new(),
                })
            })
            .collect();
        let mut stored = Vec::new();
        for (key, v) in r["results"][&tf.task].as_object().into_iter().flatten() {
            let Some((metric, filter)) = key.split_once(',') else {
                continue;
            };
            if metric.ends_with("_stderr") {
                continue;
            }
            let i = filter_index(&mut filters, filter);
            filters[i].metrics.push(metric.to_string());
            stored.push((metric.to_string(), filter.to_string(), v.clone()));
        }
        let not_mean = cfg["metric_list"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let agg = m.get("aggregation").and_then(json_text)?;
                if agg == "mean" {
                    return None;
                }
                Some((m["metric"].as_str()?.to_string(), agg))
            })
            .collect();
        TaskInfo {
            model: model_name(res, tf),
            settings: res.map(|r| settings_of(r, &tf.task)),
            filters,
            stored,
            not_mean,
        }
    }
}

/// The position of `name` among `filters`, added when new (lm-eval's default filter `none` is
/// `take_first`).
fn filter_index(filters: &mut Vec<Filter>, name: &str) -> usize {
    if let Some(i) = filters.iter().position(|f| f.name == name) {
        return i;
    }
    filters.push(Filter {
        name: name.to_string(),
        kind: if name == "none" {
            Kind::First
        } else {
            Kind::Unknown
        },
        metrics: Vec::new(),
    });
    filters.len() - 1
}

/// The model as the results file names it: `model_name`, else the model in `config.model_args`
/// (lm-eval's own order of keys), else the model folder lm-eval wrote into.
fn model_name(res: Option<&Value>, tf: &TaskFile) -> String {
    let r = res.unwrap_or(&Value::Null);
    let nonempty = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(String::from);
    nonempty(&r["model_name"])
        .or_else(|| model_from_args(&r["config"]["model_args"]))
        .or_else(|| {
            let folder = tf.path.parent().and_then(Path::file_name);
            (!tf.old)
                .then(|| folder.map(|f| f.to_string_lossy().into_owned()))
                .flatten()
        })
        .or_else(|| nonempty(&r["config"]["model"]))
        .unwrap_or_else(|| "lm-eval".into())
}

fn model_from_args(args: &Value) -> Option<String> {
    const KEYS: [&str; 6] = ["peft", "delta", "pretrained", "model", "path", "engine"];
    let map: Map<String, Value> = match args {
        Value::Object(m) => m.clone(),
        Value::String(s) => s
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), Value::String(v.trim().to_string())))
            .collect(),
        _ => return None,
    };
    KEYS.iter()
        .find_map(|k| map.get(*k).and_then(json_text).filter(|s| !s.is_empty()))
}

/// The settings a results file recorded for `task`: `configs[task].generation_kwargs` merged
/// with the run's `config.gen_kwargs`, `repeats`, and the rest verbatim.
fn settings_of(r: &Value, task: &str) -> SourceSettings {
    let cfg = &r["configs"][task];
    let mut gk = cfg["generation_kwargs"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    gk.extend(cli_kwargs(&r["config"]["gen_kwargs"]));
    let mut s = from_kwargs(&gk);
    s.nominal_n = cfg["repeats"].as_u64().and_then(|n| u32::try_from(n).ok());
    let mut rec = Map::new();
    let mut put = |k: &str, v: &Value| {
        if !v.is_null() {
            rec.insert(k.to_string(), v.clone());
        }
    };
    put("model", &r["config"]["model"]);
    put("model_args", &r["config"]["model_args"]);
    if !gk.is_empty() {
        put("generation_kwargs", &Value::Object(gk));
    }
    put("gen_kwargs", &r["config"]["gen_kwargs"]);
    put("repeats", &cfg["repeats"]);
    put("num_fewshot", &cfg["num_fewshot"]);
    for k in ["random_seed", "numpy_seed", "torch_seed", "fewshot_seed"] {
        put(k, &r["config"][k]);
    }
    for k in [
        "lm_eval_version",
        "git_hash",
        "date",
        "system_instruction",
        "chat_template_sha",
        "fewshot_as_multiturn",
    ] {
        put(k, &r[k]);
    }
    put("task_version", &r["versions"][task]);
    put("n-samples", &r["n-samples"][task]);
    s.recorded = Value::Object(rec);
    s
}

/// `--gen_kwargs` as the results file keeps it: an object, JSON text, or `k=v,k=v`.
fn cli_kwargs(v: &Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m.clone(),
        Value::String(s) => match serde_json::from_str(s) {
            Ok(Value::Object(m)) => m,
            _ => s
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), scalar(v.trim())))
                .collect(),
        },
        _ => Map::new(),
    }
}

/// A `k=v` value as lm-eval's argument parser reads it: a number, a boolean, else text.
fn scalar(s: &str) -> Value {
    if let Ok(i) = s.parse::<i64>() {
        return i.into();
    }
    if let Some(f) = s.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
        return Value::Number(f);
    }
    match s.to_ascii_lowercase().as_str() {
        "true" => true.into(),
        "false" => false.into(),
        _ => s.into(),
    }
}

/// What generation kwargs say; `do_sample: false` is greedy decoding, whatever temperature
/// they name, and is recorded as temperature 0.
fn from_kwargs(gk: &Map<String, Value>) -> SourceSettings {
    let num = |k: &str| gk.get(k).and_then(Value::as_f64);
    let greedy = gk.get("do_sample").and_then(Value::as_bool) == Some(false);
    SourceSettings {
        temperature: if greedy {
            Some(0.0)
        } else {
            num("temperature")
        },
        top_p: num("top_p"),
        max_tokens: ["max_gen_toks", "max_tokens", "max_new_tokens"]
            .iter()
            .find_map(|k| gk.get(*k)?.as_u64())
            .and_then(|n| u32::try_from(n).ok()),
        seed: gk.get("seed").and_then(Value::as_u64),
        ..SourceSettings::default()
    }
}

/// Which filter's records give the samples, and whose metric is the verdict (the filter's first
/// when `--field verdict` names none).
struct Choice {
    emit: usize,
    verdict: Option<(usize, Option<String>)>,
}

/// One samples file being read.
struct TaskRead<'a> {
    tf: &'a TaskFile,
    info: TaskInfo,
    opts: &'a ReadOptions,
    file: usize,
    ctx: Ctx,
    /// Records per filter when filters are told apart by position (then the document count).
    block: Option<u64>,
    records: u64,
    choice: Option<Choice>,
    seen: HashSet<(String, usize)>,
    docs: HashSet<String>,
    emitted: u64,
    duplicates: u64,
    /// Per (filter, metric position): the sum and count of per-document values.
    sums: HashMap<(usize, usize), (f64, u64)>,
    most_repeats: usize,
    not_verdicts: u64,
}

impl<'a> TaskRead<'a> {
    fn new(
        sink: &mut dyn Sink,
        tf: &'a TaskFile,
        info: TaskInfo,
        opts: &'a ReadOptions,
        ctx: Ctx,
    ) -> Result<TaskRead<'a>, ImportError> {
        let file = sink.open(&tf.path, Role::Samples)?;
        if let Some(r) = &tf.results {
            let results = sink.open(r, Role::Side)?;
            sink.belongs(results, &ctx.dataset);
        }
        let mut r = TaskRead {
            tf,
            info,
            opts,
            file,
            ctx,
            block: None,
            records: 0,
            choice: None,
            seen: HashSet::new(),
            docs: HashSet::new(),
            emitted: 0,
            duplicates: 0,
            sums: HashMap::new(),
            most_repeats: 0,
            not_verdicts: 0,
        };
        let positional = tf.old
            || first_line(&tf.path).is_some_and(|v| v.is_object() && v.get("filter").is_none());
        if positional {
            r.block = Some(r.documents_per_filter()?);
        }
        Ok(r)
    }

    /// Records without `filter` come filter by filter, every document in each: record i belongs
    /// to filter (i div documents) mod filters (the mod reads an appended copy alike).
    fn documents_per_filter(&mut self) -> Result<u64, ImportError> {
        let (records, docs) = count_documents(self.tf)?;
        let path = self.tf.path.display();
        if docs == 0 {
            return Ok(1);
        }
        if self.info.filters.is_empty() && records % docs == 0 {
            for i in 0..records / docs {
                filter_index(&mut self.info.filters, &format!("filter {}", i + 1));
            }
        }
        let f = self.info.filters.len() as u64;
        if f == 0 || records % docs != 0 || (records / docs) % f != 0 {
            return Err(ImportError::Input(format!(
                "{path}: {records} records are not {docs} documents × {f} filters; records without a `filter` field are told apart only by position"
            )));
        }
        Ok(docs)
    }

    fn read(&mut self, sink: &mut dyn Sink) -> Result<(), ImportError> {
        if self.tf.old {
            let path = self.tf.path.clone();
            json_entries(&path, |key, v| self.record(sink, At::Item(key), v))
        } else {
            json_lines(sink, self.file, |sink, line, v| {
                self.record(sink, At::Line(line), v)
            })
        }
    }

    fn record(&mut self, sink: &mut dyn Sink, at: At, v: Value) -> Result<(), ImportError> {
        let index = self.records;
        self.records += 1;
        let Some(obj) = v.as_object() else {
            return sink.bad(self.file, at, "not a JSON object".into());
        };
        let doc = match obj.get("doc_id") {
            Some(d @ (Value::Number(_) | Value::String(_))) => json_text(d).unwrap_or_default(),
            _ => return sink.bad(self.file, at, "no `doc_id`".into()),
        };
        let filter = match self.block {
            Some(b) => ((index / b) % self.info.filters.len().max(1) as u64) as usize,
            None => match obj.get("filter").and_then(Value::as_str) {
                Some(name) => filter_index(&mut self.info.filters, name),
                None => {
                    return sink.bad(
                        self.file,
                        at,
                        "no `filter`, though the file's first record has one".into(),
                    )
                }
            },
        };
        // An append re-save repeats records: the first of each (document, filter) counts.
        if !self.seen.insert((doc.clone(), filter)) {
            self.duplicates += 1;
            return Ok(());
        }
        self.docs.insert(doc.clone());
        self.tally(obj, filter);
        let emit = self.choose()?;
        if filter == emit {
            self.emit(sink, at, obj, &doc, filter)?;
        }
        Ok(())
    }

    /// Adds the record's per-document metric values to the sums the aggregates are checked with.
    fn tally(&mut self, obj: &Map<String, Value>, filter: usize) {
        let f = &mut self.info.filters[filter];
        if f.metrics.is_empty() {
            f.metrics = line_metrics(obj);
        }
        for (i, m) in f.metrics.iter().enumerate() {
            if let Some(x) = obj.get(m).and_then(Value::as_f64) {
                let e = self.sums.entry((filter, i)).or_default();
                e.0 += x;
                e.1 += 1;
            }
        }
    }

    /// The filter whose records give the samples (chosen once): the verdict's filter, which is
    /// `--field verdict` (a filter the samples file alone names is taken too: its records may
    /// come later) or the first `take_first` filter, else the first filter.
    fn choose(&mut self) -> Result<usize, ImportError> {
        if let Some(c) = &self.choice {
            return Ok(c.emit);
        }
        let verdict = match self.opts.fields.get("verdict") {
            Some(spec) => {
                let (metric, name) = spec
                    .split_once(',')
                    .map_or((None, spec.as_str()), |(m, f)| (Some(m), f));
                let known = self.info.filters.iter().position(|f| f.name == name);
                let i = match (known, self.block) {
                    (Some(i), _) => i,
                    (None, None) => filter_index(&mut self.info.filters, name),
                    (None, Some(_)) => return Err(self.no_filter(spec, name)),
                };
                Some((i, metric.map(String::from)))
            }
            None => {
                let filters = &self.info.filters;
                (filters.iter().position(|f| f.kind == Kind::First))
                    .or((!filters.is_empty()).then_some(0))
                    .filter(|&i| !filters[i].metrics.is_empty())
                    .map(|i| (i, None))
            }
        };
        let emit = verdict.as_ref().map_or(0, |v| v.0);
        self.choice = Some(Choice { emit, verdict });
        Ok(emit)
    }

    fn no_filter(&self, spec: &str, name: &str) -> ImportError {
        let names: Vec<&str> = (self.info.filters.iter())
            .map(|f| f.name.as_str())
            .filter(|n| *n != name)
            .collect();
        ImportError::Input(format!(
            "lm-eval: --field verdict={spec}: task {} has no filter {name} ({} holds: {})",
            self.tf.task,
            self.tf.path.display(),
            names.join(", ")
        ))
    }

    /// After the read: the filter `--field verdict` named had records.
    fn check_verdict_filter(&self) -> Result<(), ImportError> {
        let spec = self.opts.fields.get("verdict");
        let Some((spec, c)) = spec.zip(self.choice.as_ref()) else {
            return Ok(());
        };
        let name = spec.split_once(',').map_or(spec.as_str(), |x| x.1);
        let seen = self.seen.iter().any(|(_, f)| *f == c.emit);
        match seen || self.records == 0 {
            true => Ok(()),
            false => Err(self.no_filter(spec, name)),
        }
    }

    /// The document's K samples, from this one record.
    fn emit(
        &mut self,
        sink: &mut dyn Sink,
        at: At,
        obj: &Map<String, Value>,
        doc: &str,
        filter: usize,
    ) -> Result<(), ImportError> {
        let Some(resps) = obj
            .get("resps")
            .and_then(|r| r.get(0))
            .and_then(Value::as_array)
        else {
            return sink.bad(
                self.file,
                at,
                "no `resps[0]` (the document's generations)".into(),
            );
        };
        if let Some(i) = resps.iter().position(|r| !r.is_string()) {
            return sink.bad(self.file, at, format!("`resps[0][{i}]` is not a string"));
        }
        let problem_id = match self.problem_id(obj, doc) {
            Ok(p) => p,
            Err(m) => return sink.bad(self.file, at, m),
        };
        if self.info.settings.is_none() {
            self.info.settings = Some(settings_of_request(obj));
        }
        let k = resps.len();
        let (verdict, first_answer) = self.verdict(obj, filter, k);
        let every = obj
            .get("filtered_resps")
            .and_then(|f| f.get(0))
            .and_then(Value::as_array)
            .filter(|l| l.len() == k);
        let question = question(obj, self.opts);
        let gold = obj.get("target").and_then(json_text);
        for (i, r) in resps.iter().enumerate() {
            let extracted = match every {
                Some(list) => list.get(i).and_then(json_text),
                None => first_answer.clone().filter(|_| i == 0),
            };
            sink.sample(SourceSample {
                model: self.info.model.clone(),
                dataset: self.ctx.dataset.clone(),
                problem_id: problem_id.clone(),
                question: question.clone(),
                gold: gold.clone(),
                subset: self.ctx.qualify.then(|| self.tf.task.clone()),
                repeat: u32::try_from(i).ok(),
                response: Some(r.as_str().unwrap_or_default().to_string()),
                extracted,
                verdict: verdict.filter(|_| i == 0),
                file: self.file,
                at: at.clone(),
                ..SourceSample::default()
            })?;
        }
        self.emitted += 1;
        self.most_repeats = self.most_repeats.max(k);
        Ok(())
    }

    /// Sample 0's verdict and extracted answer, where this record's metric judges one sample:
    /// the verdict filter's, with one answer from `take_first` (or one repeat only).
    fn verdict(
        &mut self,
        obj: &Map<String, Value>,
        filter: usize,
        k: usize,
    ) -> (Option<bool>, Option<String>) {
        let one = match obj.get("filtered_resps") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) if a.len() == 1 && !a[0].is_array() => json_text(&a[0]),
            _ => None,
        };
        let kind = self.info.filters[filter].kind;
        let judges_one = k == 1 || (kind == Kind::First && one.is_some());
        if !judges_one {
            return (None, None);
        }
        let Some(Choice {
            verdict: Some((vf, metric)),
            ..
        }) = &self.choice
        else {
            return (None, one);
        };
        if *vf != filter {
            return (None, one);
        }
        let f = &self.info.filters[filter];
        let Some(metric) = metric.as_ref().or(f.metrics.first()) else {
            return (None, one);
        };
        // A per-document metric need not be a yes-or-no verdict (bleu, a mean): those give none.
        let value = obj.get(metric).filter(|v| !v.is_null());
        let verdict = value.and_then(|v| verdict(v).ok().flatten());
        if value.is_some() && verdict.is_none() {
            self.not_verdicts += 1;
        }
        (verdict, one)
    }

    fn problem_id(&self, obj: &Map<String, Value>, doc: &str) -> Result<String, String> {
        let id = match self.opts.fields.get("problem_id") {
            Some(f) => match obj.get("doc").and_then(|d| d.get(f)).and_then(json_text) {
                Some(id) => id,
                None => return Err(format!("`doc` has no field `{f}` (--field problem_id)")),
            },
            None => doc.to_string(),
        };
        Ok(if self.ctx.qualify {
            format!("{}/{id}", self.tf.task)
        } else {
            id
        })
    }
}

/// A record's metrics when no results file names them: its `metrics` list (0.4.7+), else every
/// number that is not one of a record's own keys.
fn line_metrics(obj: &Map<String, Value>) -> Vec<String> {
    if let Some(list) = obj.get("metrics").and_then(Value::as_array) {
        return list
            .iter()
            .filter_map(|m| m.as_str().map(String::from))
            .collect();
    }
    obj.iter()
        .filter(|(k, v)| v.is_number() && !RECORD_KEYS.contains(&k.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// What a record's request says about generation (`arguments`' generation kwargs), when there is
/// no results file.
fn settings_of_request(obj: &Map<String, Value>) -> SourceSettings {
    let args = obj.get("arguments");
    let kwargs = args
        .and_then(|a| a.get("gen_args_0"))
        .and_then(|g| g.get("arg_1"))
        .or_else(|| args.and_then(|a| a.get(0)).and_then(|a| a.get(1)));
    let Some(gk) = kwargs.and_then(Value::as_object) else {
        return SourceSettings::default();
    };
    let mut s = from_kwargs(gk);
    s.recorded = serde_json::json!({ "request_kwargs": gk });
    s
}

/// The question: `--field question` of `doc`, else its `problem`, `question` or `query`, else
/// the prompt (a chat prompt's last user message).
fn question(obj: &Map<String, Value>, opts: &ReadOptions) -> Option<String> {
    let doc = obj.get("doc");
    let field = opts.fields.get("question").map(String::as_str);
    let keys = field.into_iter().chain(["problem", "question", "query"]);
    for k in keys {
        if let Some(q) = doc.and_then(|d| d.get(k)).and_then(json_text) {
            return Some(q);
        }
    }
    let args = obj.get("arguments")?;
    let prompt = args
        .get("gen_args_0")
        .and_then(|g| g.get("arg_0"))
        .or_else(|| args.get(0).and_then(|a| a.get(0)))?;
    let text = json_text(prompt)?;
    Some(chat_user_text(&text).unwrap_or(text))
}

/// The last user message of a chat prompt that lm-eval kept as JSON text.
fn chat_user_text(text: &str) -> Option<String> {
    if !text.trim_start().starts_with('[') {
        return None;
    }
    let messages: Vec<Value> = serde_json::from_str(text).ok()?;
    (messages.iter().rev())
        .find(|m| m["role"] == "user")
        .and_then(|m| crate::util::chat::content_text(&m["content"]))
}

/// Records and distinct documents of a samples file, read once before a positional read.
fn count_documents(tf: &TaskFile) -> Result<(u64, u64), ImportError> {
    let mut records = 0u64;
    let mut docs = HashSet::new();
    let mut add = |v: Option<Value>| {
        records += 1;
        if let Some(d) = v.as_ref().and_then(json_text) {
            docs.insert(d);
        }
    };
    if tf.old {
        json_entries(&tf.path, |_, v| {
            add(v.get("doc_id").cloned());
            Ok(())
        })?;
        return Ok((records, docs.len() as u64));
    }
    #[derive(serde::Deserialize)]
    struct DocOnly {
        doc_id: Option<Value>,
    }
    let mut lines = TextLines::open(&tf.path)?;
    let mut buf = Vec::new();
    while lines.next_into(&mut buf)?.is_some() {
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Only the id is kept: the rest of each record is skipped, not built.
        match serde_json::from_slice::<DocOnly>(&buf) {
            Ok(d) => add(d.doc_id),
            Err(_) => {
                if let Ok(v) = lenient_json(&buf) {
                    add(v.get("doc_id").cloned());
                }
            }
        }
    }
    Ok((records, docs.len() as u64))
}

impl TaskRead<'_> {
    fn layout(&self) -> String {
        if self.tf.old {
            "lm-eval 0.4.0–0.4.2 (<model_args>_<task>.jsonl, one JSON array, + results.json)".into()
        } else if self.block.is_some() {
            "lm-eval 0.4.3–0.4.6 (samples_<task>_<time>.jsonl without `filter`: filters told apart by position)".into()
        } else {
            "lm-eval ≥ 0.4.3 (samples_<task>_<time>.jsonl + its results JSON)".into()
        }
    }

    /// Which of the task's marks became per-sample verdicts, or why none did.
    fn verdict_sentence(&self) -> String {
        let task = &self.tf.task;
        let k = self.most_repeats;
        let Some(Choice {
            verdict: Some((vf, metric)),
            ..
        }) = &self.choice
        else {
            return format!("{task}: none (the records hold no per-document metric)");
        };
        let f = &self.info.filters[*vf];
        let Some(metric) = metric.as_ref().or(f.metrics.first()) else {
            return format!(
                "{task}: none (filter `{}` has no per-document metric)",
                f.name
            );
        };
        let others: String = self
            .info
            .filters
            .iter()
            .filter(|o| o.name != f.name && k > 1)
            .map(|o| format!("; filter `{}` {}", o.name, o.kind.words()))
            .collect();
        let binary = if self.not_verdicts > 0 {
            format!(
                " ({} documents' values are not 0 or 1 and give none)",
                self.not_verdicts
            )
        } else {
            String::new()
        };
        if k <= 1 {
            format!(
                "{task}: each document's one sample: `{metric}` of filter `{}`{binary}",
                f.name
            )
        } else if f.kind == Kind::First {
            format!(
                "{task}: sample 0 of each document (the first of its {k} repeats): `{metric}` of filter `{}` (take_first){binary}; the other repeats have no source verdict{others}",
                f.name
            )
        } else {
            format!(
                "{task}: none: no filter judges one sample of the {k} repeats (filter `{}` {}){others}",
                f.name,
                f.kind.words()
            )
        }
    }

    /// The task's aggregates, settings and notes, into the summary.
    fn finish(self, out: &mut SourceSummary) {
        let name = file_name(&self.tf.path);
        let dataset = self.ctx.dataset.as_str();
        if self.duplicates > 0 {
            out.note(dataset, format!(
                "{name}: {} repeated (document, filter) records skipped (an append re-save; the first kept)",
                self.duplicates
            ));
        }
        let missing = self.docs.len() as u64 - self.emitted.min(self.docs.len() as u64);
        let emitting = self
            .choice
            .as_ref()
            .and_then(|c| self.info.filters.get(c.emit));
        if let (true, Some(f)) = (missing > 0, emitting) {
            out.note(dataset, format!(
                "{name}: {missing} of {} documents have no readable record of filter `{}`: their samples are not imported",
                self.docs.len(),
                f.name
            ));
        }
        if self.tf.results.is_none() {
            out.note(dataset, format!(
                "{name}: no results file beside it (a JSON with `results` and `configs`): the model is named after its folder, settings come from the first record's request, and there are no aggregates to check"
            ));
        }
        self.aggregates(out);
        let settings = self.info.settings.unwrap_or_default();
        out.models
            .entry(self.info.model.clone())
            .or_insert(settings);
    }

    fn aggregates(&self, out: &mut SourceSummary) {
        let name = file_name(&self.tf.path);
        let dataset = self.ctx.dataset.as_str();
        for (metric, filter, stored) in &self.info.stored {
            let mut label = format!("{metric},{filter}");
            if self.ctx.qualify {
                label = format!("{}: {label}", self.tf.task);
            }
            if self.ctx.twice {
                label = format!("{name}: {label}");
            }
            let Some(source) = stored.as_f64() else {
                out.note(
                    dataset,
                    format!("{label} is stored as {stored} (no number): not checked"),
                );
                continue;
            };
            let f = self.info.filters.iter().position(|x| x.name == *filter);
            let m = f.and_then(|f| {
                self.info.filters[f]
                    .metrics
                    .iter()
                    .position(|x| x == metric)
            });
            let sums = f.zip(m).and_then(|k| self.sums.get(&k)).filter(|s| s.1 > 0);
            let (recomputed, basis) = match (self.info.not_mean.get(metric), sums) {
                (Some(agg), _) => (None, format!("`{metric}` is aggregated by {agg}, not as a mean of per-document values")),
                (None, Some((sum, n))) => (
                    Some(sum / *n as f64),
                    format!("mean over the {n} documents of the per-document `{metric}` on the `{filter}` records of {name}"),
                ),
                (None, None) => (None, format!("{name} has no `{metric}` values on `{filter}` records")),
            };
            out.aggregates.push(Stored {
                model: self.info.model.clone(),
                dataset: self.ctx.dataset.clone(),
                name: label,
                value: source,
                recompute: Recompute::Done {
                    value: recomputed,
                    basis,
                },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, checks, fixture, read_into, Collect};
    use super::*;

    const NEW: &str = "lm-eval/v0.4.13/stub-math";
    const SAMPLES_NEW: &str = "samples_gpk_arith_2026-12-01T16-18-04.660489.jsonl";
    const RESULTS_NEW: &str = "results_2026-12-01T16-18-04.660489.json";

    fn run(
        paths: &[PathBuf],
        opts: &ReadOptions,
        skip_bad: bool,
    ) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("lm-eval", paths, opts, skip_bad)
    }

    fn task(t: &str) -> ReadOptions {
        ReadOptions {
            task: Some(t.into()),
            ..ReadOptions::default()
        }
    }

    fn expected(dir: &str) -> Value {
        testing::expected(dir)
    }

    /// Checks a task's import against expected.json (written from the raw records): each
    /// document once with its K samples; sample 0 carries the `strict-first` exact_match, the
    /// other repeats none; every stored `"<metric>,<filter>"` is recomputed and matches.
    fn check_task(sink: &Collect, summary: &SourceSummary, e: &Value, first_filter: &str) {
        let problems = e["problems"].as_array().unwrap();
        let counts = sink.counts();
        assert_eq!(counts.len(), problems.len());
        for p in problems {
            let id = p["doc_id"].to_string();
            let n = p["samples"].as_u64().unwrap() as u32;
            let (got_n, got_c) = counts[&("stub-math".to_string(), id.clone())];
            assert_eq!(got_n, n, "doc {id}");
            let samples: Vec<&SourceSample> =
                sink.samples.iter().filter(|s| s.problem_id == id).collect();
            let first = p["per_filter_metric"][first_filter].as_f64().unwrap() == 1.0;
            assert_eq!(samples[0].verdict, Some(first), "doc {id}");
            assert_eq!(samples[0].gold.as_deref(), p["target"].as_str());
            if n > 1 {
                assert_eq!(got_c, None);
                assert!(samples[1..].iter().all(|s| s.verdict.is_none()));
            } else {
                assert_eq!(got_c, Some(first as u32));
            }
        }
        let stored: Vec<(&String, f64)> = e["aggregates"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, _)| !k.contains("_stderr"))
            .map(|(k, v)| (k, v.as_f64().unwrap()))
            .collect();
        let done = checks(sink, summary);
        assert_eq!(done.len(), stored.len(), "{done:?}");
        for (k, v) in stored {
            let a = done.iter().find(|a| a.0 == *k).unwrap();
            assert_eq!(a.1, v);
            assert!(a.3, "{a:?}");
        }
    }

    #[test]
    fn v0_4_13_reads_one_record_per_document_and_sample_0_keeps_the_take_first_verdict() {
        let e = expected("lm-eval/v0.4.13");
        // Two tasks: each its own dataset (a run each), never one mixed run.
        let (sink, out) = run(
            &[fixture("lm-eval/v0.4.13")],
            &ReadOptions::default(),
            false,
        );
        out.unwrap();
        assert_eq!(sink.datasets(), ["gpk_arith", "gpk_arith_greedy"]);
        assert_eq!(sink.samples.len(), 48 + 8);
        // The one results file holds both tasks' aggregates: each run lists it.
        let results = (sink.files.iter())
            .position(|f| f.ends_with(RESULTS_NEW))
            .unwrap();
        assert_eq!(sink.belongs[&results], ["gpk_arith", "gpk_arith_greedy"]);
        let (sink, out) = run(&[fixture("lm-eval/v0.4.13")], &task("gpk_arith"), false);
        let summary = out.unwrap();
        // 8 documents × 6 repeats, not × 3 filters.
        assert_eq!(sink.samples.len(), 48);
        check_task(&sink, &summary, &e["tasks"]["gpk_arith"], "strict-first");
        let s = &summary.models["stub-math"];
        assert_eq!(
            (s.temperature, s.max_tokens, s.nominal_n),
            (Some(0.8), Some(64), Some(6))
        );
        assert!(
            summary.verdicts.contains("sample 0") && summary.verdicts.contains("`strict-first`")
        );
        assert!(
            summary.verdicts.contains("`maj@6` is a majority vote"),
            "{}",
            summary.verdicts
        );
        // Sample 0's extracted answer is the take_first answer; the others have none.
        let text = std::fs::read_to_string(fixture(&format!("{NEW}/{SAMPLES_NEW}"))).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(
            sink.samples[0].extracted.as_deref(),
            first["filtered_resps"][0].as_str()
        );
        assert_eq!(
            sink.samples[0].response.as_deref(),
            first["resps"][0][0].as_str()
        );
        assert_eq!(sink.samples[1].extracted, None);

        let (sink, out) = run(
            &[fixture("lm-eval/v0.4.13")],
            &task("gpk_arith_greedy"),
            false,
        );
        let summary = out.unwrap();
        check_task(
            &sink,
            &summary,
            &e["tasks"]["gpk_arith_greedy"],
            "get-answer",
        );
        assert!(
            summary.verdicts.contains("one sample"),
            "{}",
            summary.verdicts
        );
    }

    #[test]
    fn v0_4_13_chat_questions_come_from_the_doc_or_the_last_user_message() {
        let e = expected("lm-eval/v0.4.13-chat");
        let (sink, out) = run(
            &[fixture("lm-eval/v0.4.13-chat")],
            &ReadOptions::default(),
            false,
        );
        let summary = out.unwrap();
        check_task(
            &sink,
            &summary,
            &e["tasks"]["gpk_arith_chat"],
            "strict-first",
        );
        let data =
            std::fs::read_to_string(fixture("lm-eval/v0.4.13-chat/task/data.jsonl")).unwrap();
        let row: Value = serde_json::from_str(data.lines().next().unwrap()).unwrap();
        assert_eq!(
            sink.samples[0].question.as_deref(),
            row["question"].as_str()
        );
        let mut q = ReadOptions::default();
        q.fields.insert("question".into(), "nowhere".into());
        let r = &serde_json::json!({"arguments": {"gen_args_0": {"arg_0": [
            "[{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": \"Q?\"}]"
        ]}}});
        assert_eq!(question(r.as_object().unwrap(), &q).as_deref(), Some("Q?"));
        q.fields.insert("problem_id".into(), "pid".into());
        let (sink, out) = run(&[fixture("lm-eval/v0.4.13-chat")], &q, false);
        out.unwrap();
        assert_eq!(sink.samples[0].problem_id, row["pid"].as_str().unwrap());
    }

    #[test]
    fn v0_4_2_arrays_tell_filters_apart_by_position() {
        let e = expected("lm-eval/v0.4.2");
        let (sink, out) = run(&[fixture("lm-eval/v0.4.2")], &ReadOptions::default(), false);
        let summary = out.unwrap();
        // 16 records = 8 documents × 2 filters; 6 samples per document.
        assert_eq!(sink.samples.len(), 48);
        check_task(&sink, &summary, &e["tasks"]["gpk_arith"], "strict-first");
        assert!(summary.layout.contains("0.4.0–0.4.2"), "{}", summary.layout);
        assert_eq!(sink.samples[0].at, At::Item("0".into()));
        let s = &summary.models["stub-math"];
        assert_eq!((s.temperature, s.nominal_n), (Some(0.8), Some(6)));
        assert!(claims(&fixture(
            "lm-eval/v0.4.2/model__stub-math,base_url__http:____127.0.0.1:18767__v1_gpk_arith.jsonl"
        )));
    }

    /// A copy of the v0.4.13 run folder, its gpk_arith samples lines passed through `edit`.
    fn copy_new(edit: impl FnOnce(Vec<String>) -> Vec<String>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("stub-math");
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(
            fixture(&format!("{NEW}/{RESULTS_NEW}")),
            to.join(RESULTS_NEW),
        )
        .unwrap();
        let text = std::fs::read_to_string(fixture(&format!("{NEW}/{SAMPLES_NEW}"))).unwrap();
        let lines = edit(text.lines().map(String::from).collect());
        std::fs::write(to.join(SAMPLES_NEW), lines.join("\n") + "\n").unwrap();
        dir
    }

    #[test]
    fn appended_duplicates_and_records_without_filter_read_as_the_original() {
        let e = expected("lm-eval/v0.4.13");
        let twice = |l: Vec<String>| [l.clone(), l].concat();
        let dir = copy_new(twice);
        let (sink, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), false);
        let summary = out.unwrap();
        check_task(&sink, &summary, &e["tasks"]["gpk_arith"], "strict-first");
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.text.contains("24 repeated (document, filter) records")),
            "{:?}",
            summary.notes
        );
        // 0.4.3–0.4.6 records have no `filter`: position tells, in an appended copy too.
        let strip = |l: Vec<String>| {
            let l: Vec<String> = l
                .into_iter()
                .map(|s| {
                    let mut v: Value = serde_json::from_str(&s).unwrap();
                    v.as_object_mut().unwrap().remove("filter");
                    v.as_object_mut().unwrap().remove("metrics");
                    v.to_string()
                })
                .collect();
            [l.clone(), l].concat()
        };
        let dir = copy_new(strip);
        let (sink, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), false);
        let summary = out.unwrap();
        check_task(&sink, &summary, &e["tasks"]["gpk_arith"], "strict-first");
        assert!(summary.layout.contains("by position"), "{}", summary.layout);
        let dir = copy_new(|mut l| {
            l.pop();
            l.into_iter()
                .map(|s| s.replace("\"filter\": \"", "\"was\": \""))
                .collect()
        });
        let (_, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), false);
        assert!(
            matches!(out, Err(ImportError::Input(m)) if m.contains("23 records are not 8 documents × 3 filters"))
        );
    }

    #[test]
    fn a_malformed_record_names_file_and_line_or_is_counted() {
        let dir = copy_new(|mut l| {
            l[2] = "{\"doc_id\": 2, \"doc\": ".into();
            l[4] = l[4].replace("\"doc_id\": 4, ", "");
            l
        });
        let (_, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), false);
        let m = out.unwrap_err().to_string();
        assert!(
            m.contains(&format!("{SAMPLES_NEW}:3")) && m.contains("not JSON"),
            "{m}"
        );
        let (sink, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), true);
        let summary = out.unwrap();
        assert_eq!(sink.bad.len(), 2, "{:?}", sink.bad);
        assert!(sink.bad[1].contains(":5: no `doc_id`"), "{:?}", sink.bad);
        // Documents 2 and 4 lost their strict-first record, so their samples.
        assert_eq!(sink.counts().len(), 6);
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.text.contains("2 of 8 documents")),
            "{:?}",
            summary.notes
        );
    }

    #[test]
    fn python_nan_and_na_in_results_and_a_group_of_tasks() {
        let dir = tempfile::tempdir().unwrap();
        for f in [
            SAMPLES_NEW,
            "samples_gpk_arith_greedy_2026-12-01T16-18-04.660489.jsonl",
        ] {
            std::fs::copy(fixture(&format!("{NEW}/{f}")), dir.path().join(f)).unwrap();
        }
        let text = std::fs::read_to_string(fixture(&format!("{NEW}/{RESULTS_NEW}"))).unwrap();
        let mut res: Value = serde_json::from_str(&text).unwrap();
        res["group_subtasks"] = serde_json::json!({"gpk_all": ["gpk_arith", "gpk_arith_greedy"]});
        res["results"]["gpk_arith"]["exact_match,maj@6"] = "N/A".into();
        let text = res.to_string().replace(
            "\"exact_match_stderr,strict-first\":0.16366341767699427",
            "\"exact_match_stderr,strict-first\":NaN",
        );
        assert!(text.contains("NaN"));
        std::fs::write(dir.path().join(RESULTS_NEW), text).unwrap();
        let (sink, out) = run(&[dir.path().join(RESULTS_NEW)], &task("gpk_all"), false);
        let summary = out.unwrap();
        assert_eq!(sink.samples.len(), 8 * 6 + 8);
        assert!(sink
            .samples
            .iter()
            .any(|s| s.problem_id == "gpk_arith_greedy/3"));
        assert_eq!(sink.samples[0].subset.as_deref(), Some("gpk_arith"));
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.text.contains("maj@6 is stored as \"N/A\"")),
            "{:?}",
            summary.notes
        );
        assert!(sink.samples.iter().all(|s| s.dataset == "gpk_all"));
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 3, "{done:?}");
        assert!(done.iter().all(|a| a.3 && a.0.contains(": ")), "{done:?}");
    }

    #[test]
    fn a_results_file_named_after_output_path_is_found_by_content_and_do_sample_false_is_greedy() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("gsm8k");
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(
            fixture(&format!("{NEW}/{SAMPLES_NEW}")),
            to.join(SAMPLES_NEW),
        )
        .unwrap();
        let text = std::fs::read_to_string(fixture(&format!("{NEW}/{RESULTS_NEW}"))).unwrap();
        let mut res: Value = serde_json::from_str(&text).unwrap();
        res["configs"]["gpk_arith"]["generation_kwargs"]["do_sample"] = false.into();
        res["configs"]["gpk_arith"]["generation_kwargs"]["temperature"] = 0.into();
        let renamed = to.join("gsm8k_2026-12-01T16-18-04.660489.json");
        std::fs::write(&renamed, res.to_string()).unwrap();
        let (sink, out) = run(std::slice::from_ref(&to), &ReadOptions::default(), false);
        let summary = out.unwrap();
        assert!(sink.samples.iter().all(|s| s.model == "stub-math"));
        assert_eq!(summary.models["stub-math"].temperature, Some(0.0));
        assert_eq!(summary.models["stub-math"].nominal_n, Some(6));
        let e = expected("lm-eval/v0.4.13");
        check_task(&sink, &summary, &e["tasks"]["gpk_arith"], "strict-first");
        // Given alone, the results file stands for its samples.
        let (sink, out) = run(&[renamed], &ReadOptions::default(), false);
        out.unwrap();
        assert_eq!(sink.samples.len(), 48);
    }

    #[test]
    fn every_filter_is_selectable_from_the_samples_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(
            fixture(&format!("{NEW}/{SAMPLES_NEW}")),
            dir.path().join(SAMPLES_NEW),
        )
        .unwrap();
        let mut opts = ReadOptions::default();
        opts.fields
            .insert("verdict".into(), "exact_match,all-repeats".into());
        let (sink, out) = run(&[dir.path().to_path_buf()], &opts, false);
        let summary = out.unwrap();
        // The all-repeats filter's records: every repeat's answer is kept, 8 × 6 samples.
        assert_eq!(sink.samples.len(), 48);
        assert!(
            sink.samples.iter().all(|s| s.extracted.is_some()),
            "{:?}",
            sink.samples[1]
        );
        assert!(
            summary.verdicts.contains("all-repeats"),
            "{}",
            summary.verdicts
        );
        opts.fields
            .insert("verdict".into(), "exact_match,nope".into());
        let (_, out) = run(&[dir.path().to_path_buf()], &opts, false);
        let m = out.unwrap_err().to_string();
        assert!(
            m.contains("no filter nope") && m.contains("strict-first"),
            "{m}"
        );
    }

    #[test]
    fn samples_without_results_and_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("my-model");
        std::fs::create_dir_all(&to).unwrap();
        std::fs::copy(
            fixture(&format!("{NEW}/{SAMPLES_NEW}")),
            to.join(SAMPLES_NEW),
        )
        .unwrap();
        let (sink, out) = run(&[to.join(SAMPLES_NEW)], &ReadOptions::default(), false);
        let summary = out.unwrap();
        assert!(sink.samples.iter().all(|s| s.model == "my-model"));
        assert_eq!(summary.models["my-model"].temperature, Some(0.8));
        assert_eq!(summary.models["my-model"].nominal_n, None);
        assert!(summary.aggregates.is_empty());
        let mut opts = ReadOptions::default();
        opts.fields.insert("response".into(), "x".into());
        let (_, out) = run(&[to], &opts, false);
        assert!(matches!(out, Err(ImportError::Input(m)) if m.contains("--field response")));
    }

    #[test]
    fn claims_samples_files_only() {
        assert!(claims(&fixture(&format!("{NEW}/{SAMPLES_NEW}"))));
        assert!(!claims(&fixture(&format!("{NEW}/{RESULTS_NEW}"))));
        assert!(!claims(&fixture("lm-eval/v0.4.13/task/data.jsonl")));
        assert!(!claims(&fixture("jsonl/one-sample-per-line.jsonl")));
        assert!(!claims(&fixture(
            "qwen-math/gpk_arith/test_cot_-1_seed0_t0.7_s0_e-1.jsonl"
        )));
    }
}
