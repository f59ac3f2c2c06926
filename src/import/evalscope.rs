//! Reader of EvalScope outputs (FORMATS.md §4): `reviews/<model>/<bench>_<subset>.jsonl` (per-sample
//! verdicts) or, where no review exists, `predictions/…`; 1.x rows are one repeat each (`group_id`
//! the problem, `generation_index` the repeat), 0.x rows one problem each with its `choices[]`
//! (with an `index` from 0.11 on; before, as in January 2025's 0.10, a problem is known by its
//! `answer_id` and the rows' order). Each benchmark is a dataset of its own, its subsets subsets.
//! Settings come from `configs/task_config*.yaml`, read by a line reader of the few flat keys
//! needed (this crate has no YAML parser); aggregates from `reports/<model>/<bench>.json`.

use super::files::{file_name, files_under, json_text, verdict};
use super::source::{
    At, ImportError, Reader, Recompute, Role, Sink, SourceSample, SourceSummary, Stored,
};
use super::stream::{first_line as first_row, json_lines, small_json};
use crate::rundir::provenance::SourceSettings;
use crate::util::chat::content_text;
use serde_json::{Map, Value};
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// EvalScope output folders.
pub static READER: Reader = Reader {
    name: "evalscope",
    about: "EvalScope 0.x and 1.x outputs: reviews/<model>/<bench>_<subset>.jsonl (or predictions/) with reports/",
    fields: &[],
    claims,
    read: |paths, _, sink| read(paths, sink),
};

/// Whether EvalScope wrote `path`: a `.jsonl` under `reviews/<model>/` or `predictions/<model>/`
/// (or a flattened copy's `reviews_<model>_….jsonl`) whose first row has EvalScope's fields.
fn claims(path: &Path) -> bool {
    if !file_name(path).ends_with(".jsonl") || !(folder_kind(path).is_some() || flat_name(path)) {
        return false;
    }
    first_row(path).is_some_and(|v| row_kind(&v).is_some())
}

/// A flattened copy of the output folders names its files `reviews_<model>_<bench>_<subset>.jsonl`,
/// `predictions_…`, `reports_<model>_<bench>.json`, `configs_task_config….yaml`.
fn flat_name(path: &Path) -> bool {
    let name = file_name(path);
    name.starts_with("reviews_") || name.starts_with("predictions_")
}

/// Where a file's run keeps its configs and reports: an output folder
/// (`configs/`, `reports/<model>/`), or the folder of a flattened copy.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Root {
    dir: PathBuf,
    flat: bool,
}

impl Root {
    fn report(&self, model: &str, bench: &str) -> PathBuf {
        match self.flat {
            true => self.dir.join(format!("reports_{model}_{bench}.json")),
            false => self
                .dir
                .join("reports")
                .join(model)
                .join(format!("{bench}.json")),
        }
    }

    /// The folder holding the task configs, and how their names start.
    fn configs(&self) -> (PathBuf, &'static str) {
        match self.flat {
            true => (self.dir.clone(), "configs_task_config"),
            false => (self.dir.join("configs"), "task_config"),
        }
    }

    /// The benchmarks `model` has reports of.
    fn reported(&self, model: &str) -> Vec<String> {
        let (dir, prefix) = match self.flat {
            true => (self.dir.clone(), format!("reports_{model}_")),
            false => (self.dir.join("reports").join(model), String::new()),
        };
        (std::fs::read_dir(dir).into_iter().flatten().flatten())
            .filter_map(|e| {
                let name = file_name(&e.path());
                Some(
                    name.strip_prefix(&prefix)?
                        .strip_suffix(".json")?
                        .to_string(),
                )
            })
            .collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Reviews,
    Predictions,
}

fn folder_kind(path: &Path) -> Option<Kind> {
    match path.parent()?.parent()?.file_name()?.to_str()? {
        "reviews" => Some(Kind::Reviews),
        "predictions" => Some(Kind::Predictions),
        _ => None,
    }
}

/// What one row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum RowKind {
    /// 1.x: one repeat, with `sample_score`.
    Review1,
    /// 1.x prediction: one repeat, `model_output`, no verdict.
    Prediction1,
    /// 0.x: one problem with `choices[]` (with `review` in reviews files).
    Choices0,
}

fn row_kind(v: &Value) -> Option<RowKind> {
    if v.get("sample_score").is_some() {
        Some(RowKind::Review1)
    } else if v.get("model_output").is_some() {
        Some(RowKind::Prediction1)
    } else if v.get("choices").is_some_and(Value::is_array) {
        Some(RowKind::Choices0)
    } else {
        None
    }
}

/// One samples file to read.
#[derive(Debug, Clone)]
struct Source {
    root: Option<Root>,
    model: String,
    bench: String,
    subset: String,
    path: PathBuf,
    /// Problem ids are `<subset>/<n>`: the benchmark has several subsets.
    qualify: bool,
}

/// Streams the files under `paths` into `sink`, each benchmark a dataset of its own.
fn read(paths: &[PathBuf], sink: &mut dyn Sink) -> Result<SourceSummary, ImportError> {
    let mut summary = SourceSummary::default();
    let (sources, mut configs) = sources(paths, Configs::default(), &mut summary)?;
    if sources.is_empty() {
        return Err(ImportError::Input(format!(
            "no EvalScope reviews/<model>/<bench>_<subset>.jsonl or predictions/… files under {}",
            (paths.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut tally = Tally::default();
    let mut kinds = BTreeSet::new();
    let mut read = Vec::new();
    for s in &sources {
        if !sink.wants(&s.path, Some(&s.model), Some(&s.bench)) {
            continue;
        }
        let settings = configs.for_model(s.root.as_ref(), &s.model, sink)?;
        let repeats = (settings.as_ref())
            .and_then(|c| c.top.get("repeats"))
            .and_then(Value::as_u64);
        let before = tally.unindexed;
        kinds.insert(read_file(s, repeats, sink, &mut tally)?);
        let v010 = tally.unindexed > before;
        (summary.models)
            .entry(s.model.clone())
            .or_insert_with(|| settings.map(|c| c.settings(v010)).unwrap_or_default());
        read.push(s.clone());
    }
    for (bench, n) in &tally.duplicates {
        summary.note(bench, format!(
            "{n} rows repeat a problem or index already read (EvalScope appends on re-runs); the first of each was kept"
        ));
    }
    reports(&read, &tally, sink, &mut summary)?;
    summary.layout = kinds
        .iter()
        .map(|k| layout(*k))
        .collect::<Vec<_>>()
        .join("; ");
    summary.verdicts = verdicts(&kinds);
    let known = |s: &SourceSettings| *s != SourceSettings::default();
    if !summary.models.values().any(known) {
        summary.note_all(
            "no configs/task_config*.yaml beside the files: generation settings are unknown",
        );
    }
    Ok(summary)
}

fn layout(k: RowKind) -> &'static str {
    match k {
        RowKind::Review1 => "EvalScope 1.x reviews: one row per repeat",
        RowKind::Prediction1 => "EvalScope 1.x predictions: one row per repeat",
        RowKind::Choices0 => "EvalScope 0.x: one row per problem with choices[]",
    }
}

fn verdicts(kinds: &BTreeSet<RowKind>) -> String {
    let mut out = Vec::new();
    if kinds.contains(&RowKind::Review1) {
        out.push("per sample: reviews `sample_score.score.value[main_score_name]`");
    }
    if kinds.contains(&RowKind::Choices0) {
        out.push("per sample: `choices[i].review.result` (none in 0.x predictions files)");
    }
    if kinds.contains(&RowKind::Prediction1) {
        out.push("none for predictions files without reviews");
    }
    out.join("; ")
}

/// A samples file's root, model and name without `.jsonl`.
type StemKey = (Option<Root>, String, String);

/// The files to read: per (model, bench, subset) the reviews file, else the predictions file.
fn sources(
    paths: &[PathBuf],
    mut configs: Configs,
    summary: &mut SourceSummary,
) -> Result<(Vec<Source>, Configs), ImportError> {
    let files = files_under(paths, |p| {
        file_name(p).ends_with(".jsonl") && (folder_kind(p).is_some() || flat_name(p))
    })?;
    // Per (root, model, stem): the file read, and the predictions files its reviews file holds.
    let mut by_key: BTreeMap<StemKey, (Kind, PathBuf, Vec<PathBuf>)> = BTreeMap::new();
    for f in files {
        let (kind, root, model, stem) = match folder_kind(&f) {
            Some(kind) => (
                kind,
                (f.parent().and_then(Path::parent).and_then(Path::parent)).map(|d| Root {
                    dir: d.to_path_buf(),
                    flat: false,
                }),
                f.parent().map(file_name).unwrap_or_default(),
                file_name(&f).trim_end_matches(".jsonl").to_string(),
            ),
            None => loose_file(&f),
        };
        match by_key.entry((root, model, stem)) {
            Entry::Vacant(v) => {
                v.insert((kind, f, Vec::new()));
            }
            Entry::Occupied(mut e) => {
                let (held, path, left) = e.get_mut();
                match (*held, kind) {
                    (Kind::Reviews, Kind::Predictions) => left.push(f),
                    (Kind::Predictions, Kind::Reviews) => left.push(std::mem::replace(path, f)),
                    _ => *path = f,
                }
                if kind == Kind::Reviews {
                    *held = kind;
                }
            }
        }
    }
    let mut out = Vec::new();
    for ((root, model, stem), (_, path, left)) in by_key {
        let known = configs.benches(root.as_ref(), &model);
        let row_subset = first_row(&path).and_then(|r| r["subset_name"].as_str().map(String::from));
        let (bench, subset) = split_stem(&stem, &known, row_subset.as_deref());
        for p in left {
            summary.note(
                &bench,
                format!(
                    "{}: left out, its reviews file holds the same samples with verdicts",
                    p.display()
                ),
            );
        }
        out.push(Source {
            root,
            model,
            bench,
            subset,
            path,
            qualify: false,
        });
    }
    let mut subsets: HashMap<(String, String), BTreeSet<String>> = HashMap::new();
    for s in &out {
        let key = (s.model.clone(), s.bench.clone());
        subsets.entry(key).or_default().insert(s.subset.clone());
    }
    for s in &mut out {
        s.qualify = subsets[&(s.model.clone(), s.bench.clone())].len() > 1;
    }
    Ok((out, configs))
}

/// A file named on its own outside `reviews/<model>/`: what its first row says (the model its
/// rows name, predictions or reviews); a `reviews_<model>_` or `predictions_<model>_` prefix
/// (how a flattened copy of the folders is often named) is taken off the name.
fn loose_file(f: &Path) -> (Kind, Option<Root>, String, String) {
    let row = first_row(f);
    let kind = match row.as_ref().and_then(row_kind) {
        Some(RowKind::Prediction1) => Kind::Predictions,
        Some(RowKind::Choices0)
            if row
                .as_ref()
                .is_none_or(|r| r.pointer("/choices/0/review").is_none()) =>
        {
            Kind::Predictions
        }
        _ => Kind::Reviews,
    };
    let named = row.as_ref().and_then(|r| {
        let assistant = r
            .get("messages")?
            .as_array()?
            .iter()
            .rev()
            .find_map(|m| m.get("model"));
        let spec = r.pointer("/model_spec/model_id");
        (r.get("model").or(assistant).or(spec))?
            .as_str()
            .map(str::to_string)
    });
    let model = named.unwrap_or_else(|| f.parent().map(file_name).unwrap_or_default());
    let mut stem = file_name(f).trim_end_matches(".jsonl").to_string();
    for prefix in ["reviews_", "predictions_"] {
        if let Some(rest) = stem
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix(&format!("{model}_")))
        {
            stem = rest.to_string();
        }
    }
    let root = (f.parent()).map(|d| Root {
        dir: d.to_path_buf(),
        flat: true,
    });
    (kind, root, model, stem)
}

/// `gsm8k_main` → (`gsm8k`, `main`): the subset the rows name (0.x `subset_name`), else the
/// longest known benchmark name followed by `_`, a known benchmark whole (`default`), else a
/// cut at the last `_` (benchmark names hold `_` more often than subset names do).
fn split_stem(stem: &str, known: &BTreeSet<String>, row_subset: Option<&str>) -> (String, String) {
    if let Some(sub) = row_subset {
        if let Some(b) = stem.strip_suffix(sub).and_then(|b| b.strip_suffix('_')) {
            return (b.to_string(), sub.to_string());
        }
        return (stem.to_string(), sub.to_string());
    }
    let found = known
        .iter()
        .filter(|b| {
            stem.len() > b.len() + 1
                && stem.starts_with(b.as_str())
                && stem.as_bytes()[b.len()] == b'_'
        })
        .max_by_key(|b| b.len());
    if let Some(b) = found {
        return (b.clone(), stem[b.len() + 1..].to_string());
    }
    if known.contains(stem) {
        return (stem.to_string(), "default".to_string());
    }
    match stem.rsplit_once('_') {
        Some((b, s)) if !b.is_empty() && !s.is_empty() => (b.to_string(), s.to_string()),
        _ => (stem.to_string(), "default".to_string()),
    }
}

/// (model, bench, subset).
type FileKey = (String, String, String);

/// What the rows gave per (model, bench, subset): the sum and count of each score key (the mean
/// over rows is what EvalScope reports), and the samples per problem.
#[derive(Debug, Default)]
struct Tally {
    sums: BTreeMap<FileKey, BTreeMap<String, (f64, u64)>>,
    rows: BTreeMap<FileKey, u64>,
    /// Per benchmark: rows of a problem and index already read.
    duplicates: BTreeMap<String, u64>,
    /// Rows without `index` (EvalScope before 0.11).
    unindexed: u64,
}

impl Tally {
    fn add(&mut self, s: &Source, key: &str, value: f64) {
        let e = self
            .sums
            .entry((s.model.clone(), s.bench.clone(), s.subset.clone()))
            .or_default()
            .entry(key.to_string())
            .or_insert((0.0, 0));
        e.0 += value;
        e.1 += 1;
    }
}

/// How a row is known again: its `index`, or (0.x rows before 0.11, which have none) its
/// `answer_id` or its `raw_input`, numbered in the order first read.
struct Identity {
    seen: HashSet<u64>,
    numbered: HashMap<String, u64>,
}

impl Identity {
    /// The row's problem number (index-less rows) or index, and whether it is new.
    fn of(&mut self, v: &Value) -> Option<(u64, bool)> {
        if let Some(i) = v.get("index").and_then(Value::as_u64) {
            return Some((i, self.seen.insert(i)));
        }
        let key = match (
            v.get("answer_id").and_then(Value::as_str),
            v.get("raw_input"),
        ) {
            (Some(id), _) => id.to_string(),
            (None, Some(raw)) if v.get("choices").is_some() => raw.to_string(),
            _ => return None,
        };
        let next = self.numbered.len() as u64;
        let n = *self.numbered.entry(key).or_insert(next);
        Some((n, self.seen.insert(n)))
    }
}

fn read_file(
    s: &Source,
    repeats: Option<u64>,
    sink: &mut dyn Sink,
    tally: &mut Tally,
) -> Result<RowKind, ImportError> {
    let file = sink.open(&s.path, Role::Samples)?;
    let kind = first_row(&s.path)
        .as_ref()
        .and_then(row_kind)
        .unwrap_or(RowKind::Review1);
    if kind == RowKind::Prediction1 && repeats.is_none() {
        return Err(ImportError::Input(format!(
            "{}: a 1.x predictions row's problem is index // repeats, and no configs/task_config*.yaml beside it gives `repeats`",
            s.path.display()
        )));
    }
    let mut ids = Identity {
        seen: HashSet::new(),
        numbered: HashMap::new(),
    };
    let mut rows = 0u64;
    json_lines(sink, file, |sink, line, v| {
        tally.unindexed += v.get("index").is_none() as u64;
        let Some((index, new)) = ids.of(&v) else {
            let why = "no integer `index` (nor the `answer_id` or `raw_input` of a 0.x row)";
            return sink.bad(file, At::Line(line), why.into());
        };
        if !new {
            *tally.duplicates.entry(s.bench.clone()).or_default() += 1;
            return Ok(());
        }
        rows += 1;
        let place = Place { s, file, line };
        let outcome = match kind {
            RowKind::Review1 => review1(&place, index, repeats, &v, sink, tally),
            RowKind::Prediction1 => prediction1(&place, index, repeats.unwrap_or(1), &v, sink),
            RowKind::Choices0 => choices0(&place, index, &v, sink, tally),
        };
        match outcome {
            Ok(()) => Ok(()),
            Err(Row::Bad(m)) => sink.bad(file, At::Line(line), m),
            Err(Row::Sink(e)) => Err(e),
        }
    })?;
    *tally
        .rows
        .entry((s.model.clone(), s.bench.clone(), s.subset.clone()))
        .or_default() += rows;
    Ok(kind)
}

/// Where a row is, for the samples it becomes.
struct Place<'a> {
    s: &'a Source,
    file: usize,
    line: u64,
}

impl Place<'_> {
    fn sample(&self, problem: u64) -> SourceSample {
        let s = self.s;
        SourceSample {
            model: s.model.clone(),
            dataset: s.bench.clone(),
            problem_id: match s.qualify {
                true => format!("{}/{problem}", s.subset),
                false => problem.to_string(),
            },
            subset: s.qualify.then(|| s.subset.clone()),
            file: self.file,
            at: At::Line(self.line),
            ..SourceSample::default()
        }
    }
}

/// Why a row gave no sample: malformed (for [`Sink::bad`]) or the sink's own error.
enum Row {
    Bad(String),
    Sink(ImportError),
}

impl From<ImportError> for Row {
    fn from(e: ImportError) -> Row {
        Row::Sink(e)
    }
}

/// The text of a message's `content`.
fn content(m: &Value) -> Option<String> {
    content_text(m.get("content")?)
}

/// The last message of `role` in a row's `messages`.
fn last_message(v: &Value, role: &str) -> Option<String> {
    v.get("messages")?
        .as_array()?
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some(role))
        .and_then(content)
}

fn review1(
    p: &Place,
    index: u64,
    repeats: Option<u64>,
    v: &Value,
    sink: &mut dyn Sink,
    tally: &mut Tally,
) -> Result<(), Row> {
    let ss = v
        .get("sample_score")
        .filter(|x| x.is_object())
        .ok_or(Row::Bad("`sample_score` is not an object".into()))?;
    let score = ss
        .get("score")
        .ok_or(Row::Bad("no `sample_score.score`".into()))?;
    let values = score
        .get("value")
        .and_then(Value::as_object)
        .ok_or(Row::Bad("no `score.value` object".into()))?;
    // The older 1.x build leaves main_score_name null: its one key is the score.
    let main = match score.get("main_score_name").and_then(Value::as_str) {
        Some(m) => Some(m.to_string()),
        None if values.len() == 1 => values.keys().next().cloned(),
        None => None,
    };
    for (k, x) in values {
        if let Some(x) = x.as_f64() {
            tally.add(p.s, k, x);
        }
    }
    let group = match ss.get("group_id").and_then(Value::as_u64) {
        Some(g) => g,
        None => index / repeats.unwrap_or(1).max(1),
    };
    let response = score
        .get("prediction")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| last_message(v, "assistant"))
        .ok_or(Row::Bad(
            "no `score.prediction` nor assistant message".into(),
        ))?;
    let mut s = p.sample(group);
    s.question = last_message(v, "user");
    s.gold = v.get("target").and_then(json_text);
    s.repeat = ss
        .get("generation_index")
        .and_then(Value::as_u64)
        .and_then(|r| u32::try_from(r).ok());
    s.response = Some(response);
    s.extracted = score.get("extracted_prediction").and_then(json_text);
    s.verdict = match main.as_ref().and_then(|m| values.get(m).map(|x| (m, x))) {
        Some((m, x)) => verdict(x).map_err(|why| Row::Bad(format!("`score.value.{m}`: {why}")))?,
        None => None,
    };
    sink.sample(s)?;
    Ok(())
}

fn prediction1(
    p: &Place,
    index: u64,
    repeats: u64,
    v: &Value,
    sink: &mut dyn Sink,
) -> Result<(), Row> {
    let choice = v
        .pointer("/model_output/choices/0")
        .ok_or(Row::Bad("no `model_output.choices[0]`".into()))?;
    let response = choice.get("message").and_then(content).ok_or(Row::Bad(
        "no `model_output.choices[0].message.content`".into(),
    ))?;
    let mut s = p.sample(index / repeats.max(1));
    s.question = last_message(v, "user");
    s.response = Some(response);
    s.finish_reason = choice
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(str::to_string);
    sink.sample(s)?;
    Ok(())
}

/// The question and gold of a 0.x row: `raw_input`'s, the gold of a GSM8K-style worked answer
/// `… #### 7/8` its last part (0.x's parsed `review.gold` keeps only the last number of it).
fn question_and_gold(v: &Value, choices: &[Value]) -> (Option<String>, Option<String>) {
    let raw = v.get("raw_input");
    let question = (raw.and_then(|r| r.get("question").or(r.get("problem"))))
        .and_then(Value::as_str)
        .map(str::to_string);
    let gold = raw
        .and_then(|r| r.get("answer"))
        .and_then(Value::as_str)
        .and_then(|a| a.rsplit_once("####"))
        .map(|(_, g)| g.trim().to_string())
        .or_else(|| {
            choices
                .first()
                .and_then(|c| c.pointer("/review/gold"))
                .and_then(json_text)
        });
    (question, gold)
}

fn choices0(
    p: &Place,
    index: u64,
    v: &Value,
    sink: &mut dyn Sink,
    tally: &mut Tally,
) -> Result<(), Row> {
    let choices = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or(Row::Bad("`choices` is not a list".into()))?;
    let (question, gold) = question_and_gold(v, choices);
    let reviewed = v.get("reviewed").and_then(Value::as_bool).unwrap_or(true);
    for (i, c) in choices.iter().enumerate() {
        let response = c
            .get("message")
            .and_then(content)
            .ok_or_else(|| Row::Bad(format!("choices[{i}] has no message.content")))?;
        let review = c.get("review").filter(|_| reviewed);
        let result = review.and_then(|r| r.get("result"));
        let verdict = match result {
            Some(x) => verdict(x)
                .map_err(|why| Row::Bad(format!("`choices[{i}].review.result`: {why}")))?,
            None => None,
        };
        if let Some(x) = result.and_then(|x| x.as_f64().or(x.as_bool().map(f64::from))) {
            tally.add(p.s, "review.result", x);
        }
        let mut s = p.sample(index);
        s.question = question.clone();
        s.gold = gold.clone();
        s.repeat = u32::try_from(c.get("index").and_then(Value::as_u64).unwrap_or(i as u64)).ok();
        s.response = Some(response);
        s.extracted = review.and_then(|r| r.get("pred")).and_then(json_text);
        s.verdict = verdict;
        s.finish_reason = c
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string);
        sink.sample(s)?;
    }
    Ok(())
}

/// `reports/<model>/<bench>.json` beside the files: each stored score recomputed from the rows.
fn reports(
    sources: &[Source],
    tally: &Tally,
    sink: &mut dyn Sink,
    summary: &mut SourceSummary,
) -> Result<(), ImportError> {
    let mut done = BTreeSet::new();
    for s in sources {
        let Some(root) = &s.root else { continue };
        let path = root.report(&s.model, &s.bench);
        if !path.is_file() || !done.insert(path.clone()) {
            continue;
        }
        let file = sink.open(&path, Role::Side)?;
        sink.belongs(file, &s.bench);
        let report = small_json(&path)?;
        let subsets: Vec<&str> = sources
            .iter()
            .filter(|x| x.model == s.model && x.bench == s.bench)
            .map(|x| x.subset.as_str())
            .collect();
        report_checks(&report, s, &subsets, tally, summary);
    }
    Ok(())
}

fn report_checks(
    report: &Value,
    s: &Source,
    subsets: &[&str],
    tally: &Tally,
    summary: &mut SourceSummary,
) {
    let metrics = report
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut check = |name: String, stored: f64, key: Option<&str>, only: Option<&str>| {
        let (recomputed, basis) =
            recompute(tally, s, key, only.map_or(subsets.to_vec(), |o| vec![o]));
        summary.aggregates.push(Stored {
            model: s.model.clone(),
            dataset: s.bench.clone(),
            name,
            value: stored,
            recompute: Recompute::Done {
                value: recomputed,
                basis,
            },
        });
    };
    for (i, m) in metrics.iter().enumerate() {
        let name = m
            .pointer("/identity/name")
            .or_else(|| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("score");
        let aggregation = m.pointer("/identity/aggregation").and_then(Value::as_str);
        let key = score_key(name, aggregation);
        if let Some(x) = m.get("score").and_then(Value::as_f64) {
            check(format!("{}: {name}", s.bench), x, key.as_deref(), None);
        }
        if i == 0 {
            if let Some(x) = report.get("score").and_then(Value::as_f64) {
                check(format!("{}: score", s.bench), x, key.as_deref(), None);
            }
        }
        if subsets.len() < 2 {
            continue;
        }
        for sub in m
            .get("categories")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|c| {
                c.get("subsets")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
        {
            let (Some(sn), Some(x)) = (
                sub.get("name").and_then(Value::as_str),
                sub.get("score").and_then(Value::as_f64),
            ) else {
                continue;
            };
            check(
                format!("{}/{sn}: {name}", s.bench),
                x,
                key.as_deref(),
                Some(sn),
            );
        }
    }
}

/// The row score key a report metric is the mean of: `accuracy` (1.14, aggregation `mean`),
/// `mean_acc` → `acc` (earlier 1.x), `AverageAccuracy` → every choice's `review.result` (0.x).
fn score_key(name: &str, aggregation: Option<&str>) -> Option<String> {
    match aggregation {
        Some("mean") => Some(name.to_string()),
        Some(_) => None,
        None if name == "AverageAccuracy" => Some("review.result".into()),
        None => name.strip_prefix("mean_").map(str::to_string),
    }
}

/// The mean over rows of `key` in `subsets`, rounded to 4 decimals as EvalScope's report rounds.
fn recompute(
    tally: &Tally,
    s: &Source,
    key: Option<&str>,
    subsets: Vec<&str>,
) -> (Option<f64>, String) {
    let Some(key) = key else {
        return (
            None,
            "an aggregation other than the mean over rows: not recomputed".into(),
        );
    };
    let (mut sum, mut count) = (0.0, 0u64);
    for sub in &subsets {
        let k = (s.model.clone(), s.bench.clone(), sub.to_string());
        if let Some((x, n)) = tally.sums.get(&k).and_then(|m| m.get(key)) {
            sum += x;
            count += n;
        }
    }
    if count == 0 {
        return (None, format!("no row of the files read carries `{key}`"));
    }
    let mean = sum / count as f64;
    let basis = format!(
        "mean of `{key}` over the {count} rows read ({sum} / {count} = {mean}), rounded to 4 decimals as EvalScope's report does"
    );
    (Some((mean * 1e4).round() / 1e4), basis)
}

/// The task configs of each output folder, read once.
#[derive(Debug, Default)]
struct Configs {
    read: BTreeMap<Root, Vec<(PathBuf, Yaml)>>,
}

impl Configs {
    fn load(&mut self, root: &Root) -> &Vec<(PathBuf, Yaml)> {
        self.read.entry(root.clone()).or_insert_with(|| {
            let (dir, prefix) = root.configs();
            let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    let n = file_name(p);
                    n.starts_with(prefix) && (n.ends_with(".yaml") || n.ends_with(".yml"))
                })
                .collect();
            found.sort();
            found
                .into_iter()
                .filter_map(|p| Some((p.clone(), read_yaml(&p).ok()?)))
                .collect()
        })
    }

    /// The benchmark names a folder's configs and reports list (to split `<bench>_<subset>`).
    fn benches(&mut self, root: Option<&Root>, model: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        if let Some(root) = root {
            out.extend(
                self.load(root)
                    .iter()
                    .flat_map(|(_, y)| y.datasets.iter().cloned()),
            );
            out.extend(root.reported(model));
        }
        out
    }

    /// The config of `model` (by `model` or `model_id`; the only one when one), registered.
    fn for_model(
        &mut self,
        root: Option<&Root>,
        model: &str,
        sink: &mut dyn Sink,
    ) -> Result<Option<Yaml>, ImportError> {
        let Some(root) = root else { return Ok(None) };
        let all = self.load(root);
        let named = |y: &Yaml| {
            ["model", "model_id"]
                .iter()
                .any(|k| y.top.get(*k).and_then(Value::as_str) == Some(model))
        };
        let found = all
            .iter()
            .rev()
            .find(|(_, y)| named(y))
            .or(if all.len() == 1 { all.first() } else { None });
        let Some((path, yaml)) = found.cloned() else {
            return Ok(None);
        };
        sink.open(&path, Role::Side)?;
        Ok(Some(yaml))
    }
}

/// The few keys of an EvalScope `task_config.yaml` that say how samples were drawn: top-level
/// scalars, the scalars directly under `generation_config`, and the `datasets` list.
#[derive(Debug, Clone, Default)]
struct Yaml {
    top: BTreeMap<String, Value>,
    generation: BTreeMap<String, Value>,
    datasets: Vec<String>,
}

impl Yaml {
    /// The settings; `v010`: the rows are EvalScope 0.10's or older, whose service adapter sent
    /// temperature 0 unless `do_sample` was true.
    fn settings(&self, v010: bool) -> SourceSettings {
        let g = &self.generation;
        let num = |k: &str| g.get(k).and_then(Value::as_f64);
        let int = |k: &str| g.get(k).and_then(Value::as_u64);
        let repeats = self.top.get("repeats").and_then(Value::as_u64);
        // 0.x names the samples per problem `num_return_sequences` (or `n`).
        let per_call = int("n").or(int("num_return_sequences"));
        let nominal = match (repeats, per_call) {
            (Some(r), n) => Some(r * n.unwrap_or(1)),
            (None, n) => n,
        };
        let mut recorded = Map::new();
        recorded.insert(
            "generation_config".into(),
            Value::Object(g.clone().into_iter().collect()),
        );
        for k in [
            "repeats",
            "seed",
            "model",
            "model_id",
            "eval_type",
            "api_url",
            "evalscope_version",
            "limit",
        ] {
            if let Some(v) = self.top.get(k) {
                recorded.insert(k.into(), v.clone());
            }
        }
        let service = self.top.get("eval_type").and_then(Value::as_str) == Some("service");
        let greedy = match g.get("do_sample").and_then(Value::as_bool) {
            Some(sample) => !sample,
            None => v010 && service,
        };
        SourceSettings {
            temperature: if greedy {
                Some(0.0)
            } else {
                num("temperature")
            },
            top_p: num("top_p"),
            max_tokens: int("max_tokens")
                .or(int("max_new_tokens"))
                .and_then(|m| u32::try_from(m).ok()),
            // The top-level `seed` seeds EvalScope's own sampling of the dataset, not the model.
            seed: int("seed"),
            nominal_n: nominal.and_then(|n| u32::try_from(n).ok()),
            recorded: Value::Object(recorded),
        }
    }
}

/// Reads the flat keys of a YAML file as PyYAML's `dump` writes them (block style, two-space
/// indent); anything nested deeper, multi-line or in flow style is skipped, never guessed.
fn read_yaml(path: &Path) -> Result<Yaml, ImportError> {
    let text = crate::util::read_bounded_string(path, crate::util::MAX_TEXT_FILE)
        .map_err(ImportError::io("read", path))?;
    let mut y = Yaml::default();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(item) = line.strip_prefix("- ") {
            if section == "datasets" {
                if let Some(Value::String(s)) = scalar(item) {
                    y.datasets.push(s);
                }
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ") {
            if section == "generation_config" && !rest.starts_with(' ') {
                if let Some((k, Some(v))) = key_value(rest) {
                    y.generation.insert(k, v);
                }
            }
            continue;
        }
        if let Some((k, v)) = key_value(line) {
            section = k.clone();
            if let Some(v) = v {
                y.top.insert(k, v);
            }
        }
    }
    Ok(y)
}

/// `key: value` → (key, the value when it is a one-line scalar).
fn key_value(line: &str) -> Option<(String, Option<Value>)> {
    let (k, rest) = line.split_once(':')?;
    let plain_key = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !plain_key || !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let v = rest.trim();
    Some((k.to_string(), if v.is_empty() { None } else { scalar(v) }))
}

/// A one-line YAML scalar; None for an unclosed quote, a flow collection or anything unclear.
fn scalar(v: &str) -> Option<Value> {
    let v = v.trim();
    if let Some(inner) = v.strip_prefix('\'') {
        let inner = inner.strip_suffix('\'')?;
        return (!inner.replace("''", "").contains('\''))
            .then(|| Value::String(inner.replace("''", "'")));
    }
    if v.starts_with('"') {
        return serde_json::from_str::<String>(v).ok().map(Value::String);
    }
    if v.starts_with(['{', '[', '&', '*', '!', '|', '>']) {
        return None;
    }
    Some(match v {
        "null" | "~" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => match v.parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => match v.parse::<f64>() {
                Ok(f) if f.is_finite() && v.bytes().any(|b| b.is_ascii_digit()) => Value::from(f),
                _ => Value::String(v.to_string()),
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::super::source::ReadOptions;
    use super::super::testing::{self, checks, copy_tree, fixture, read_into, Collect};
    use super::*;

    fn expected(v: &str) -> Value {
        testing::expected(&format!("evalscope/{v}"))
    }

    fn run(paths: &[PathBuf], skip_bad: bool) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("evalscope", paths, &ReadOptions::default(), skip_bad)
    }

    fn expected_counts(e: &Value, id: &str) -> BTreeMap<(String, String), (u32, Option<u32>)> {
        e["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let key = ("stub-math".to_string(), p[id].as_u64().unwrap().to_string());
                let c = p["correct"].as_u64().map(|c| c as u32);
                (key, (p["samples"].as_u64().unwrap() as u32, c))
            })
            .collect()
    }

    #[test]
    fn v1_reviews_are_one_row_per_repeat_with_verdicts_and_settings() {
        let e = expected("v1.14.1");
        let (sink, out) = run(&[fixture("evalscope/v1.14.1")], false);
        let summary = out.unwrap();
        assert_eq!(sink.counts(), expected_counts(&e, "group_id"));
        // Reviews were read, predictions left out: no double count.
        assert_eq!(sink.samples.len() as u64, e["rows"].as_u64().unwrap());
        assert!(sink
            .files
            .iter()
            .all(|f| !f.to_string_lossy().contains("predictions")));
        assert!(summary.notes.iter().any(|n| n
            .text
            .contains("predictions/stub-math/gsm8k_main.jsonl: left out")));
        let mut repeats: Vec<u32> = sink
            .samples
            .iter()
            .filter(|s| s.problem_id == "2")
            .map(|s| s.repeat.unwrap())
            .collect();
        repeats.sort();
        assert_eq!(repeats, (0..6).collect::<Vec<_>>());
        let want = e["aggregates"]["report.metrics"][0]["score"]
            .as_f64()
            .unwrap();
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 1, "{done:?}");
        let a = &done[0];
        assert_eq!((a.0.as_str(), a.1), ("gsm8k: accuracy", want));
        assert!(a.3, "{a:?}");
        let s = &summary.models["stub-math"];
        assert_eq!(
            (s.temperature, s.max_tokens, s.nominal_n, s.top_p, s.seed),
            (Some(0.7), Some(256), Some(6), None, None)
        );
        assert_eq!(s.recorded["seed"], 42);
        assert_eq!(sink.datasets(), ["gsm8k"]);
        let first = sink.samples.iter().find(|s| s.problem_id == "1").unwrap();
        assert_eq!(first.gold.as_deref(), Some("7/8"));
        assert!(first.question.as_deref().unwrap().contains("\\boxed{}"));
    }

    #[test]
    fn v0_rows_hold_choices_and_the_raw_gold() {
        let e = expected("v0.17.1");
        let (sink, out) = run(&[fixture("evalscope/v0.17.1")], false);
        let summary = out.unwrap();
        assert_eq!(sink.counts(), expected_counts(&e, "index"));
        // The source's own verdict is kept (it marks 3/8 right for 7/8); the gold is the raw one.
        let p1: Vec<&SourceSample> = sink
            .samples
            .iter()
            .filter(|s| s.problem_id == "1")
            .collect();
        assert!(p1.iter().all(|s| s.gold.as_deref() == Some("7/8")));
        assert_eq!(p1.iter().filter(|s| s.verdict == Some(true)).count(), 1);
        let stored = e["aggregates"]["report.score"].as_f64().unwrap();
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 2);
        for a in &done {
            assert_eq!(a.1, stored);
            assert!(a.3, "{a:?}");
        }
        let s = &summary.models["stub-math"];
        assert_eq!(
            (s.temperature, s.max_tokens, s.nominal_n),
            (Some(0.7), Some(256), Some(6))
        );
    }

    #[test]
    fn v1_predictions_alone_group_by_index_over_repeats() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&fixture("evalscope/v1.14.1"), tmp.path(), "reviews");
        let (sink, out) = run(&[tmp.path().to_path_buf()], false);
        let summary = out.unwrap();
        let counts = sink.counts();
        assert_eq!(counts.len(), 8);
        assert!(counts.values().all(|&c| c == (6, None)), "{counts:?}");
        assert!(summary.verdicts.contains("none"));
        assert!(checks(&sink, &summary).iter().all(|a| a.2.is_none()));
        // Without the config, `repeats` is unknown and the problem of a row cannot be told.
        std::fs::remove_dir_all(tmp.path().join("configs")).unwrap();
        let (_, out) = run(&[tmp.path().to_path_buf()], false);
        assert!(out.unwrap_err().to_string().contains("repeats"));
    }

    #[test]
    fn a_malformed_row_names_its_file_and_line_or_is_counted() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&fixture("evalscope/v1.14.1"), tmp.path(), "predictions");
        let path = tmp.path().join("reviews/stub-math/gsm8k_main.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines[4] = "{\"index\": 99, \"sample_score\": 3}".into();
        lines[6] = "{not json".into();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        let (_, out) = run(&[tmp.path().to_path_buf()], false);
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("gsm8k_main.jsonl:5: `sample_score` is not an object"),
            "{e}"
        );
        let (sink, out) = run(&[tmp.path().to_path_buf()], true);
        out.unwrap();
        assert_eq!(
            (sink.samples.len(), sink.bad.len()),
            (46, 2),
            "{:?}",
            sink.bad
        );
        assert!(
            sink.bad[1].contains("gsm8k_main.jsonl:7: not JSON"),
            "{:?}",
            sink.bad
        );
    }

    #[test]
    fn a_file_outside_the_folders_takes_its_model_from_its_rows() {
        let tmp = tempfile::tempdir().unwrap();
        let from = fixture("evalscope/v1.14.1/reviews/stub-math/gsm8k_main.jsonl");
        let to = tmp.path().join("reviews_stub-math_gsm8k_main.jsonl");
        std::fs::copy(from, &to).unwrap();
        let (sink, out) = run(&[to], false);
        out.unwrap();
        assert_eq!(
            sink.counts(),
            expected_counts(&expected("v1.14.1"), "group_id")
        );
        assert_eq!(sink.datasets(), ["gsm8k"]);
    }

    /// A flattened copy of the folders (`reviews_<model>_<file>`, `reports_<model>_<bench>.json`,
    /// `configs_task_config.yaml` side by side) reads like the folders.
    #[test]
    fn a_flattened_copy_of_the_folders_reads_like_them() {
        let tmp = tempfile::tempdir().unwrap();
        let from = fixture("evalscope/v1.14.1");
        for (rel, flat) in [
            (
                "reviews/stub-math/gsm8k_main.jsonl",
                "reviews_stub-math_gsm8k_main.jsonl",
            ),
            (
                "predictions/stub-math/gsm8k_main.jsonl",
                "predictions_stub-math_gsm8k_main.jsonl",
            ),
            (
                "reports/stub-math/gsm8k.json",
                "reports_stub-math_gsm8k.json",
            ),
            ("configs/task_config.yaml", "configs_task_config.yaml"),
        ] {
            std::fs::copy(from.join(rel), tmp.path().join(flat)).unwrap();
        }
        assert!(claims(
            &tmp.path().join("reviews_stub-math_gsm8k_main.jsonl")
        ));
        let (sink, out) = run(&[tmp.path().to_path_buf()], false);
        let summary = out.unwrap();
        assert_eq!(
            sink.counts(),
            expected_counts(&expected("v1.14.1"), "group_id")
        );
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 1, "{done:?}");
        assert!(done[0].3, "{done:?}");
        assert_eq!(summary.models["stub-math"].temperature, Some(0.7));
    }

    #[test]
    fn claims_rows_of_evalscope_only() {
        assert!(claims(&fixture(
            "evalscope/v1.14.1/reviews/stub-math/gsm8k_main.jsonl"
        )));
        assert!(claims(&fixture(
            "evalscope/v1.14.1/predictions/stub-math/gsm8k_main.jsonl"
        )));
        assert!(claims(&fixture(
            "evalscope/v0.17.1/reviews/stub-math/gsm8k_main.jsonl"
        )));
        assert!(!claims(&fixture(
            "evalscope/v1.14.1/dataset/main/test.jsonl"
        )));
        assert!(!claims(&fixture(
            "opencompass/n-replicas/predictions/stub-math/gpk_arith.json"
        )));
    }

    /// Per problem (choices, `review.result` true) from a 0.x reviews file, in row order.
    fn rows_of(path: &str) -> Vec<(u32, u32)> {
        let text = std::fs::read_to_string(fixture(path)).unwrap();
        (text.lines())
            .map(|l| {
                let v: Value = serde_json::from_str(l).unwrap();
                let choices = v["choices"].as_array().unwrap();
                let right = choices
                    .iter()
                    .filter(|c| c["review"]["result"] == true)
                    .count();
                (choices.len() as u32, right as u32)
            })
            .collect()
    }

    #[test]
    fn v0_10_rows_without_index_are_problems_in_row_order_and_greedy_is_said() {
        let rows = rows_of("evalscope/v0.10.1/reviews/stub-math/gsm8k_main.jsonl");
        let (sink, out) = run(&[fixture("evalscope/v0.10.1")], false);
        let summary = out.unwrap();
        let got: Vec<(u32, u32)> = (0..rows.len())
            .map(|p| sink.counts()[&("stub-math".to_string(), p.to_string())])
            .map(|(n, c)| (n, c.unwrap()))
            .collect();
        assert_eq!(got, rows);
        assert_eq!(sink.datasets(), ["gsm8k"]);
        let s = &summary.models["stub-math"];
        assert_eq!((s.temperature, s.nominal_n), (Some(0.7), Some(6)));
        // No report: 0.10.1 fails writing one when a problem has several samples.
        assert!(summary.aggregates.is_empty());
        let (sink, out) = run(&[fixture("evalscope/v0.10.1-greedy")], false);
        let summary = out.unwrap();
        assert_eq!(summary.models["stub-math"].temperature, Some(0.0));
        assert!(checks(&sink, &summary).iter().all(|a| a.3));
        assert_eq!(checks(&sink, &summary).len(), 2);
    }

    #[test]
    fn a_re_run_appended_to_a_v0_10_file_is_read_once_and_out_of_range_verdicts_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        copy_tree(&fixture("evalscope/v0.10.1"), tmp.path(), "predictions");
        let path = tmp.path().join("reviews/stub-math/gsm8k_main.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("{text}{text}")).unwrap();
        let (sink, out) = run(&[tmp.path().to_path_buf()], false);
        let summary = out.unwrap();
        assert_eq!(sink.samples.len(), 48);
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.text.contains("8 rows repeat") && n.dataset.as_deref() == Some("gsm8k")),
            "{:?}",
            summary.notes
        );
        for (bad, said) in [("7.5", "7.5 is not a verdict"), ("NaN", "NaN")] {
            let edited = text.replacen("\"result\": true", &format!("\"result\": {bad}"), 1);
            std::fs::write(&path, edited).unwrap();
            let (_, out) = run(&[tmp.path().to_path_buf()], false);
            let e = out.unwrap_err().to_string();
            assert!(e.contains("gsm8k_main.jsonl:1") && e.contains(said), "{e}");
        }
    }

    #[test]
    fn stems_split_on_known_benchmarks_and_yaml_scalars_parse() {
        let known: BTreeSet<String> = ["gpqa_diamond".to_string(), "gsm8k".to_string()].into();
        assert_eq!(
            split_stem("gpqa_diamond_default", &known, None),
            ("gpqa_diamond".into(), "default".into())
        );
        assert_eq!(
            split_stem("competition_math_Level 1", &BTreeSet::new(), None),
            ("competition_math".into(), "Level 1".into())
        );
        assert_eq!(
            split_stem("gpqa_diamond", &known, None),
            ("gpqa_diamond".into(), "default".into())
        );
        assert_eq!(
            split_stem(
                "competition_math_Level 1",
                &BTreeSet::new(),
                Some("Level 1")
            ),
            ("competition_math".into(), "Level 1".into())
        );
        assert_eq!(scalar("0.7"), Some(Value::from(0.7)));
        assert_eq!(scalar("256"), Some(Value::from(256)));
        assert_eq!(scalar("'it''s'"), Some(Value::from("it's")));
        assert_eq!(scalar("'open"), None);
        assert_eq!(scalar("{}"), None);
        assert_eq!(scalar("null"), Some(Value::Null));
        assert_eq!(scalar("\"a\\nb\""), Some(Value::from("a\nb")));
        assert_eq!(key_value("  x: 1"), None);
        assert_eq!(
            key_value("api_url: http://h:1/v1"),
            Some(("api_url".into(), Some(Value::from("http://h:1/v1"))))
        );
    }
}
