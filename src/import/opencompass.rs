//! Reader of OpenCompass outputs: `predictions/<model>/<dataset>.json` (or its split files
//! `_0.json, _1.json…`) with the per-sample verdicts of `results/<model>/<dataset>.json`'s
//! `details`, in both repeated-sampling layouts (FORMATS.md §2).
//!
//! Item order encodes (problem, replica), and nothing in the predictions names the problem:
//! - n replicas (dataset `n`, 2025 on): the dataset is concatenated n times, item j is problem
//!   j mod N, replica j div N;
//! - `replication_idx` (LiveMathBench 2024-12): each problem's copies are adjacent.
//!
//! The number of problems N is taken, first that applies: from the results `details` (one entry
//! per problem, with its n verdicts); else from the predictions themselves, as the shortest
//! period of their (`origin_prompt`, `gold`) sequence that divides the item count (replicas), or
//! the common length of runs of equal items (adjacent copies); else every item is a problem.
//! Every item is then checked against its problem's first copy and differences are counted.

use super::files::{file_name, files_under, json_text, verdict};
use super::metric::PaperMetric;
use super::source::{
    At, ImportError, Reader, Recompute, Role, Sink, SourceSample, SourceSummary, Stored,
};
use super::stream::{json_entries, json_object_streaming};
use crate::rundir::provenance::SourceSettings;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::Read;
use std::path::{Path, PathBuf};

/// OpenCompass work folders.
pub static READER: Reader = Reader {
    name: "opencompass",
    about: "OpenCompass work folders: predictions/<model>/<dataset>.json (or _0, _1… splits) with results/",
    fields: &[],
    claims,
    read: |paths, _, sink| read(paths, sink),
};

/// Whether OpenCompass wrote `path`: a `.json` under `predictions/<model>/` whose first entry is
/// item "0" with a `prediction`, or under `results/<model>/` with G-Pass or `details` keys.
fn claims(path: &Path) -> bool {
    if !file_name(path).ends_with(".json") {
        return false;
    }
    match folder_kind(path) {
        Some(Kind::Predictions) => {
            matches!(super::stream::first_entry(path), Some((k, v)) if k == "0" && v.get("prediction").is_some())
        }
        Some(Kind::Results) => head_has(path, &["\"details\"", "G-Pass@", "runs average)\""]),
        None => false,
    }
}

/// Whether the first 64 KiB of `path` contain any of `needles`.
fn head_has(path: &Path, needles: &[&str]) -> bool {
    let Ok(f) = crate::util::open_regular(path) else {
        return false;
    };
    let mut buf = Vec::new();
    if f.take(1 << 16).read_to_end(&mut buf).is_err() {
        return false;
    }
    let text = String::from_utf8_lossy(&buf);
    text.trim_start().starts_with('{') && needles.iter().any(|n| text.contains(n))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Predictions,
    Results,
}

/// `predictions` or `results`, from the folder above the model folder.
fn folder_kind(path: &Path) -> Option<Kind> {
    let top = path.parent()?.parent()?.file_name()?.to_str()?;
    match top {
        "predictions" => Some(Kind::Predictions),
        "results" => Some(Kind::Results),
        _ => None,
    }
}

/// One (model, dataset) of a work folder: its prediction files in order, and its results file.
#[derive(Debug, Clone)]
struct Dataset {
    model: String,
    abbr: String,
    predictions: Vec<PathBuf>,
    results: Option<PathBuf>,
}

/// Streams the files under `paths` into `sink`, each dataset (abbreviation) its own.
fn read(paths: &[PathBuf], sink: &mut dyn Sink) -> Result<SourceSummary, ImportError> {
    let mut summary = SourceSummary::default();
    let found = datasets(paths)?;
    if found.is_empty() {
        return Err(ImportError::Input(format!(
            "no OpenCompass predictions/<model>/<dataset>.json or results/<model>/<dataset>.json under {}",
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    let mut layouts = Vec::new();
    let mut verdicts = Vec::new();
    for d in &found {
        let first = d
            .predictions
            .first()
            .or(d.results.as_ref())
            .cloned()
            .unwrap_or_default();
        if !sink.wants(&first, Some(&d.model), Some(&d.abbr)) {
            continue;
        }
        let done = read_dataset(d, sink, &mut summary)?;
        layouts.push(done.layout);
        verdicts.push(done.verdicts);
        (summary.models)
            .entry(d.model.clone())
            .or_insert_with(SourceSettings::default);
    }
    layouts.sort();
    layouts.dedup();
    verdicts.sort();
    verdicts.dedup();
    summary.layout = layouts.join("; ");
    summary.verdicts = verdicts.join("; ");
    summary.note_all(
        "OpenCompass keeps the generation settings (temperature, top_p, max_out_len, seed, n, k) in the config .py under <work_dir>/configs/, not in these files: they are left unknown",
    );
    Ok(summary)
}

/// The (model, dataset) pairs named by `paths`, each with its sibling files found.
fn datasets(paths: &[PathBuf]) -> Result<Vec<Dataset>, ImportError> {
    // Inside folders only the harness's own files count; a file named on its own is taken as a
    // predictions file wherever it is.
    let files = files_under(paths, |p| {
        file_name(p).ends_with(".json") && folder_kind(p).is_some()
    })?;
    let mut out: Vec<Dataset> = Vec::new();
    for f in files {
        let Some((root, model, abbr, kind)) = locate(&f) else {
            continue;
        };
        if out.iter().any(|d| d.model == model && d.abbr == abbr) {
            continue;
        }
        let (predictions, results) = match (&root, kind) {
            (Some(root), _) => (
                prediction_files(&root.join("predictions").join(&model), &abbr),
                Some(
                    root.join("results")
                        .join(&model)
                        .join(format!("{abbr}.json")),
                )
                .filter(|p| p.is_file()),
            ),
            (None, Kind::Predictions) => (vec![f.clone()], None),
            (None, Kind::Results) => (Vec::new(), Some(f.clone())),
        };
        out.push(Dataset {
            model,
            abbr,
            predictions,
            results,
        });
    }
    Ok(out)
}

/// A file's work folder (when it sits in `<root>/{predictions,results}/<model>/`), model,
/// dataset abbreviation and kind. A file elsewhere is taken as a predictions file of the model
/// its folder names.
fn locate(f: &Path) -> Option<(Option<PathBuf>, String, String, Kind)> {
    let name = file_name(f);
    let stem = name.strip_suffix(".json")?;
    if stem.starts_with("tmp_") {
        return None;
    }
    let model_dir = f.parent()?;
    let model = file_name(model_dir);
    let Some(kind) = folder_kind(f) else {
        return Some((None, model, stem.to_string(), Kind::Predictions));
    };
    let root = model_dir.parent()?.parent().map(Path::to_path_buf);
    let abbr = match kind {
        Kind::Results => stem.to_string(),
        Kind::Predictions => split_abbr(model_dir, stem).unwrap_or_else(|| stem.to_string()),
    };
    Some((root, model, abbr, kind))
}

/// `gsm8k` for `gsm8k_3.json` when the folder holds the split set (`gsm8k_0.json` and no
/// `gsm8k.json`), as OpenCompass's own loader decides.
fn split_abbr(dir: &Path, stem: &str) -> Option<String> {
    let (abbr, part) = stem.rsplit_once('_')?;
    if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let split =
        dir.join(format!("{abbr}_0.json")).is_file() && !dir.join(format!("{abbr}.json")).is_file();
    split.then(|| abbr.to_string())
}

/// `<abbr>.json` when it exists, else `<abbr>_0.json, _1.json, …` up to the first missing one.
fn prediction_files(dir: &Path, abbr: &str) -> Vec<PathBuf> {
    let whole = dir.join(format!("{abbr}.json"));
    if whole.is_file() {
        return vec![whole];
    }
    (0..)
        .map(|i| dir.join(format!("{abbr}_{i}.json")))
        .take_while(|p| p.is_file())
        .collect()
}

/// What the results `details` say per problem.
#[derive(Debug, Default)]
struct Problem {
    /// The OpenCompass key: `example_abbr` (n replicas) or `<subdivision>_<idx>`.
    key: String,
    /// The group its `<group>/G-Pass@…` keys average over.
    group: String,
    question: Option<String>,
    answer: Option<String>,
    /// One per replica, in replica order.
    verdicts: Vec<Option<bool>>,
    /// `pred[r]` (n replicas): the source's parsed answer.
    extracted: Vec<Option<String>>,
    /// Hashes of the replica texts (`replication_idx` details keep them) to check the predictions.
    texts: Vec<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DetailsShape {
    Replicas,
    Replication,
}

/// A results file: its top-level numbers and, when it kept them, the per-problem details.
#[derive(Debug, Default)]
struct Results {
    numbers: Vec<(String, f64)>,
    shape: Option<DetailsShape>,
    problems: Vec<Problem>,
    /// Details entries that carried no per-sample verdict.
    unverdicted: u64,
}

fn read_results(path: &Path, dataset: &str, sink: &mut dyn Sink) -> Result<Results, ImportError> {
    let file = sink.open(path, Role::Side)?;
    sink.belongs(file, dataset);
    let mut r = Results::default();
    let mut bad = Vec::new();
    let numbers = &mut r.numbers;
    let (problems, shape, unverdicted) = (&mut r.problems, &mut r.shape, &mut r.unverdicted);
    json_object_streaming(
        path,
        "details",
        |k, v| {
            if let Some(x) = v.as_f64() {
                numbers.push((k, x));
            }
            Ok(())
        },
        |i, v| {
            match detail(&v) {
                Ok(Some((s, p))) => {
                    *shape = shape.or(Some(s));
                    problems.push(p);
                }
                Ok(None) => *unverdicted += 1,
                Err(m) => bad.push((i, m)),
            }
            Ok(())
        },
    )?;
    for (i, m) in bad {
        sink.bad(file, At::Item(format!("details[{i}]")), m)?;
    }
    Ok(r)
}

/// One `details` entry: Ok(None) when it has no per-sample verdicts.
fn detail(v: &Value) -> Result<Option<(DetailsShape, Problem)>, String> {
    let o = v.as_object().ok_or("a details entry is not an object")?;
    if let Some(preds) = o.get("predictions").and_then(Value::as_array) {
        let sub = o.get("subdivision").and_then(json_text).unwrap_or_default();
        let idx = o
            .get("idx")
            .and_then(json_text)
            .ok_or("a details entry has predictions but no idx")?;
        let mut p = Problem {
            key: if sub.is_empty() {
                idx.clone()
            } else {
                format!("{sub}_{idx}")
            },
            group: sub,
            question: o.get("question").and_then(json_text),
            answer: o.get("answer").and_then(json_text),
            ..Problem::default()
        };
        for e in preds {
            p.verdicts.push(label(e.get("label"))?);
            let text = e
                .get("prediction")
                .and_then(Value::as_str)
                .unwrap_or_default();
            p.texts.push(hash_of(&text));
            p.extracted.push(None);
        }
        return Ok(Some((DetailsShape::Replication, p)));
    }
    let Some(abbr) = o.get("example_abbr").and_then(Value::as_str) else {
        return Ok(None);
    };
    let Some(correct) = ["correct", "is_correct", "cascade_correct"]
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_array))
    else {
        return Ok(None);
    };
    let preds = o.get("pred").and_then(Value::as_array);
    Ok(Some((
        DetailsShape::Replicas,
        Problem {
            key: abbr.to_string(),
            // OpenCompass names the group by the abbreviation up to its first `_`.
            group: abbr.split('_').next().unwrap_or(abbr).to_string(),
            verdicts: correct
                .iter()
                .map(|v| label(Some(v)))
                .collect::<Result<_, _>>()?,
            extracted: (0..correct.len())
                .map(|r| {
                    preds
                        .and_then(|p| p.get(r))
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect(),
            ..Problem::default()
        },
    )))
}

/// A details verdict: absent is none; one that is not a verdict makes the entry malformed.
fn label(v: Option<&Value>) -> Result<Option<bool>, String> {
    v.map_or(Ok(None), |v| {
        verdict(v).map_err(|why| format!("a verdict in the details: {why}"))
    })
}

fn hash_of(v: &impl Hash) -> u64 {
    let mut h = DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

/// How item positions map to (problem, replica).
#[derive(Debug, Clone)]
enum Order {
    /// Item j is problem j mod N, replica j div N.
    Replicas { problems: u64 },
    /// Problem p holds items offsets[p] .. offsets[p + 1].
    Adjacent { offsets: Vec<u64> },
}

impl Order {
    fn place(&self, j: u64) -> Option<(u64, u64)> {
        match self {
            Order::Replicas { problems } => Some((j % problems, j / problems)),
            Order::Adjacent { offsets } => {
                let p = offsets.partition_point(|&o| o <= j).checked_sub(1)?;
                (p + 1 < offsets.len()).then(|| (p as u64, j - offsets[p]))
            }
        }
    }
}

struct Done {
    layout: String,
    verdicts: String,
}

fn read_dataset(
    d: &Dataset,
    sink: &mut dyn Sink,
    summary: &mut SourceSummary,
) -> Result<Done, ImportError> {
    let results = match &d.results {
        Some(p) => read_results(p, &d.abbr, sink)?,
        None => Results::default(),
    };
    if d.predictions.is_empty() {
        // Its dataset may get no run (then a note of the import as a whole): named in the text.
        summary.note(
            &d.abbr,
            format!(
                "dataset {} of model {}: no predictions file beside {}; nothing imported from it",
                d.abbr,
                d.model,
                d.results
                    .as_deref()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default()
            ),
        );
        aggregates(d, &results, summary);
        return Ok(Done {
            layout: "OpenCompass results only".into(),
            verdicts: "none imported (no predictions)".into(),
        });
    }
    let mut files = Vec::new();
    for p in &d.predictions {
        files.push(sink.open(p, Role::Samples)?);
    }
    let (order, how) = order(&files, &results, sink)?;
    let mut emit = Emit {
        d,
        results: &results,
        order: &order,
        first_copy: HashMap::new(),
        differing: 0,
        text_mismatch: 0,
        listed: false,
        beyond: 0,
    };
    let items = each_item(&files, sink, |sink, file, key, j, v| {
        emit.item(sink, file, key, j, v)
    })?;
    emit.notes(items, &how, summary);
    aggregates(d, &results, summary);
    let layout = match (&order, results.shape) {
        (Order::Adjacent { .. }, Some(DetailsShape::Replication)) => {
            "OpenCompass replication_idx (LiveMathBench 2024-12): each problem's copies adjacent"
        }
        (Order::Adjacent { .. }, _) => "OpenCompass predictions, each problem's copies adjacent",
        (Order::Replicas { .. }, _) => {
            "OpenCompass n replicas: item j = problem j mod N, replica j div N"
        }
    };
    let verdicts = match results.shape {
        _ if emit.listed => "none per sample: `prediction` is a list (num_return_sequences) and the details judge the item".into(),
        Some(DetailsShape::Replicas) => "per sample: results details `correct[r]` of each problem".into(),
        Some(DetailsShape::Replication) => {
            "per sample: results details `predictions[i].label` of each problem".into()
        }
        None => "none: no results file with per-problem details beside the predictions".into(),
    };
    Ok(Done {
        layout: layout.into(),
        verdicts,
    })
}

/// Calls `each(sink, file, key, global position, item)` for every item of the prediction files
/// in order; returns the item count. Each split file numbers its keys from "0", and OpenCompass
/// reads items by key: the position is the key plus the items of the files before.
fn each_item(
    files: &[usize],
    sink: &mut dyn Sink,
    mut each: impl FnMut(&mut dyn Sink, usize, String, u64, Value) -> Result<(), ImportError>,
) -> Result<u64, ImportError> {
    let mut offset = 0u64;
    for &file in files {
        let path = sink.path(file).to_path_buf();
        let mut count = 0u64;
        json_entries(&path, |key, v| {
            count += 1;
            match key.parse::<u64>() {
                Ok(i) => each(sink, file, key, offset + i, v),
                Err(_) => sink.bad(
                    file,
                    At::Item(key),
                    "an item key that is not a number".into(),
                ),
            }
        })?;
        offset += count;
    }
    Ok(offset)
}

/// Decides the item order (and so N), saying how.
fn order(
    files: &[usize],
    results: &Results,
    sink: &mut dyn Sink,
) -> Result<(Order, String), ImportError> {
    match results.shape {
        Some(DetailsShape::Replication) => {
            let mut offsets = vec![0u64];
            for p in &results.problems {
                offsets.push(offsets[offsets.len() - 1] + p.verdicts.len() as u64);
            }
            let how = format!(
                "{} problems and their copies from the results details ({} entries)",
                results.problems.len(),
                results.problems.len()
            );
            return Ok((Order::Adjacent { offsets }, how));
        }
        Some(DetailsShape::Replicas) if !results.problems.is_empty() => {
            let n = results.problems.len() as u64;
            let how = format!("N = {n} problems from the results details ({n} entries)");
            return Ok((Order::Replicas { problems: n }, how));
        }
        _ => {}
    }
    // No details: the sequence of (prompt, gold) shows the structure.
    let mut placed: Vec<(u64, Option<u64>)> = Vec::new();
    each_item(files, &mut Quiet(sink), |_, _, _, j, v| {
        placed.push((j, v.is_object().then(|| item_hash(&v))));
        Ok(())
    })?;
    placed.sort_by_key(|p| p.0);
    let hashes: Vec<Option<u64>> = placed.into_iter().map(|p| p.1).collect();
    let t = hashes.len();
    let p = period(&hashes);
    if p < t {
        let how = format!(
            "N = {p} problems: the shortest period of the items' (origin_prompt, gold) that divides their count {t}"
        );
        return Ok((Order::Replicas { problems: p as u64 }, how));
    }
    if let Some(r) = run_length(&hashes) {
        let offsets = (0..=t / r).map(|i| (i * r) as u64).collect();
        let how = format!(
            "{} problems of {r} adjacent equal items ((origin_prompt, gold) repeated)",
            t / r
        );
        return Ok((Order::Adjacent { offsets }, how));
    }
    Ok((
        Order::Replicas {
            problems: t.max(1) as u64,
        },
        format!("{t} items, no repetition of (origin_prompt, gold): one problem each"),
    ))
}

/// A sink that reports nothing: the first pass over the predictions only measures them (the
/// second pass names the bad items).
struct Quiet<'a>(&'a mut dyn Sink);

impl Sink for Quiet<'_> {
    fn open(&mut self, path: &Path, role: Role) -> Result<usize, ImportError> {
        self.0.open(path, role)
    }
    fn wants(&mut self, _: &Path, _: Option<&str>, _: Option<&str>) -> bool {
        true
    }
    fn belongs(&mut self, file: usize, dataset: &str) {
        self.0.belongs(file, dataset)
    }
    fn sample(&mut self, _: SourceSample) -> Result<(), ImportError> {
        Ok(())
    }
    fn bad(&mut self, _: usize, _: At, _: String) -> Result<(), ImportError> {
        Ok(())
    }
    fn path(&self, file: usize) -> &Path {
        self.0.path(file)
    }
}

fn item_hash(v: &Value) -> u64 {
    let prompt = v
        .get("origin_prompt")
        .map(Value::to_string)
        .unwrap_or_default();
    let gold = v.get("gold").map(Value::to_string).unwrap_or_default();
    hash_of(&(prompt, gold))
}

/// The shortest p < len dividing len with h[j] = h[j mod p] for all j (an unreadable item, None,
/// matches anything), else len.
fn period(h: &[Option<u64>]) -> usize {
    let t = h.len();
    let same = |a: Option<u64>, b: Option<u64>| a.is_none() || b.is_none() || a == b;
    (1..t)
        .filter(|&p| t.is_multiple_of(p))
        .find(|&p| (p..t).all(|j| same(h[j], h[j % p])))
        .unwrap_or(t)
}

/// The common length r > 1 of runs of equal items, when the items are such runs (blocks of r
/// equal items, neighbouring blocks different).
fn run_length(h: &[Option<u64>]) -> Option<usize> {
    let t = h.len();
    let first = h.first().copied().flatten()?;
    let r = h
        .iter()
        .take_while(|x| x.is_none_or(|x| x == first))
        .count();
    if r < 2 || !t.is_multiple_of(r) {
        return None;
    }
    let blocks: Vec<Option<u64>> = h
        .chunks(r)
        .map(|b| {
            let v = b.iter().flatten().next().copied();
            b.iter()
                .all(|x| x.is_none() || *x == v)
                .then_some(v)
                .flatten()
        })
        .collect();
    let ok = blocks.iter().all(Option::is_some) && blocks.windows(2).all(|w| w[0] != w[1]);
    ok.then_some(r)
}

/// What one prediction item holds.
struct Item {
    prompt: Option<String>,
    gold: Option<String>,
    texts: Vec<String>,
    listed: bool,
}

fn parse_item(v: &Value) -> Result<Item, String> {
    let o = v.as_object().ok_or("an item is not an object")?;
    let (texts, listed) = match o.get("prediction") {
        Some(Value::String(s)) => (vec![s.clone()], false),
        Some(Value::Array(a)) => (
            a.iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or("`prediction` is a list with a non-text entry")?,
            true,
        ),
        Some(_) => return Err("`prediction` is neither text nor a list of texts".into()),
        None => return Err("no `prediction`".into()),
    };
    Ok(Item {
        prompt: o.get("origin_prompt").and_then(prompt_text),
        gold: o.get("gold").and_then(json_text),
        texts,
        listed,
    })
}

/// The question as the model saw it: the prompt string, or the last HUMAN turn of a chat prompt.
fn prompt_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(turns) => turns
            .iter()
            .rev()
            .find(|t| t.get("role").and_then(Value::as_str) == Some("HUMAN"))
            .and_then(|t| t.get("prompt"))
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

/// The second pass: items become samples.
struct Emit<'a> {
    d: &'a Dataset,
    results: &'a Results,
    order: &'a Order,
    /// Per problem: the (prompt, gold) hash of its first item.
    first_copy: HashMap<u64, u64>,
    /// Items whose prompt or gold differ from their problem's first item.
    differing: u64,
    /// `replication_idx` items whose text is not the details' text at the same place.
    text_mismatch: u64,
    listed: bool,
    /// Items placed beyond the details' problems or replicas.
    beyond: u64,
}

impl Emit<'_> {
    fn item(
        &mut self,
        sink: &mut dyn Sink,
        file: usize,
        key: String,
        j: u64,
        v: Value,
    ) -> Result<(), ImportError> {
        let item = match parse_item(&v) {
            Ok(i) => i,
            Err(m) => return sink.bad(file, At::Item(key), m),
        };
        let Some((p, r)) = self.order.place(j) else {
            self.beyond += 1;
            return Ok(());
        };
        let h = item_hash(&v);
        if *self.first_copy.entry(p).or_insert(h) != h {
            self.differing += 1;
        }
        let detail = self.results.problems.get(p as usize);
        if self.results.shape.is_some() && detail.is_none_or(|d| r as usize >= d.verdicts.len()) {
            self.beyond += 1;
        }
        if let Some(d) = detail.filter(|d| !d.texts.is_empty()) {
            let same = item.texts.len() == 1
                && d.texts.get(r as usize) == Some(&hash_of(&item.texts[0].as_str()));
            self.text_mismatch += (!same) as u64;
        }
        self.listed |= item.listed;
        let problem_id = match (self.results.shape, detail) {
            (Some(DetailsShape::Replication), Some(d)) => d.key.clone(),
            _ => p.to_string(),
        };
        let subset = match detail {
            Some(d)
                if self.results.shape == Some(DetailsShape::Replication) && !d.group.is_empty() =>
            {
                Some(d.group.clone())
            }
            _ => None,
        };
        let width = item.texts.len() as u64;
        for (i, text) in item.texts.into_iter().enumerate() {
            let verdict = (!item.listed)
                .then(|| detail.and_then(|d| d.verdicts.get(r as usize).copied().flatten()))
                .flatten();
            let extracted = (!item.listed)
                .then(|| detail.and_then(|d| d.extracted.get(r as usize).cloned().flatten()))
                .flatten();
            sink.sample(SourceSample {
                model: self.d.model.clone(),
                dataset: self.d.abbr.clone(),
                problem_id: problem_id.clone(),
                question: detail
                    .and_then(|d| d.question.clone())
                    .or_else(|| item.prompt.clone()),
                gold: item
                    .gold
                    .clone()
                    .or_else(|| detail.and_then(|d| d.answer.clone())),
                subset: subset.clone(),
                repeat: u32::try_from(r * width + i as u64).ok(),
                response: Some(text),
                extracted,
                verdict,
                file,
                at: At::Item(key.clone()),
                ..SourceSample::default()
            })?;
        }
        Ok(())
    }

    /// What the dataset's items were, into its run's notes.
    fn notes(&self, items: u64, how: &str, summary: &mut SourceSummary) {
        let d = self.d;
        summary.note(&d.abbr, format!("model {}: {items} items; {how}", d.model));
        if self.differing > 0 {
            summary.note(&d.abbr, format!(
                "model {}: {} items differ in origin_prompt or gold from their problem's first item: the item order may not be the one assumed",
                d.model, self.differing
            ));
        }
        if self.text_mismatch > 0 {
            summary.note(&d.abbr, format!(
                "model {}: {} predictions differ from the results details' text at the same place: their labels may belong to other samples",
                d.model, self.text_mismatch
            ));
        }
        if self.beyond > 0 {
            summary.note(&d.abbr, format!(
                "model {}: {} items lie beyond the problems or replicas of the results details (imported without a source verdict, or left out)",
                d.model, self.beyond
            ));
        }
    }
}

/// The results file's top-level numbers, each to be recomputed from the samples' verdicts (the
/// details' `correct[r]` or `label`), on OpenCompass's 0–100 scale.
fn aggregates(d: &Dataset, results: &Results, summary: &mut SourceSummary) {
    for (name, value) in &results.numbers {
        let (group, metric_name) = match name.split_once('/') {
            Some((g, m)) => (Some(g), m),
            None => (None, name.as_str()),
        };
        let recompute = match (PaperMetric::parse(metric_name), results.shape) {
            (None, _) => Recompute::Done {
                value: None,
                basis: format!("{metric_name}: not a metric gpassk recomputes"),
            },
            (Some(_), None) => Recompute::Done {
                value: None,
                basis: "the results file keeps no per-sample verdicts (no details)".into(),
            },
            (Some(metric), Some(shape)) => Recompute::Verdicts {
                metric,
                scale: 100.0,
                // `<group>/…` of adjacent copies is a subdivision; of n replicas the dataset.
                subset: group
                    .filter(|_| shape == DetailsShape::Replication)
                    .map(String::from),
                files: Vec::new(),
            },
        };
        summary.aggregates.push(Stored {
            model: d.model.clone(),
            dataset: d.abbr.clone(),
            name: name.clone(),
            value: *value,
            recompute,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::super::source::ReadOptions;
    use super::super::testing::{self, checks, fixture, read_into, Collect};
    use super::*;
    use std::collections::BTreeMap;

    fn expected(dir: &str) -> Value {
        testing::expected(&format!("opencompass/{dir}"))
    }

    fn run(paths: &[PathBuf], skip_bad: bool) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("opencompass", paths, &ReadOptions::default(), skip_bad)
    }

    /// Per problem id: (samples, source-correct) as expected.json states them.
    fn expected_counts(
        e: &Value,
        id: impl Fn(&Value) -> String,
    ) -> BTreeMap<(String, String), (u32, Option<u32>)> {
        e["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let n = p["samples"].as_u64().unwrap() as u32;
                let c = p["correct"].as_u64().map(|c| c as u32);
                (("stub-math".to_string(), id(p)), (n, c))
            })
            .collect()
    }

    fn check_aggregates(sink: &Collect, summary: &SourceSummary, e: &Value) {
        let stored = e["aggregates"].as_object().unwrap();
        let done = checks(sink, summary);
        assert_eq!(done.len(), stored.len());
        for (name, source, recomputed, ok) in &done {
            assert_eq!(*source, stored[name].as_f64().unwrap(), "{name}");
            assert!(ok, "{name} {recomputed:?} vs {source}");
        }
    }

    #[test]
    fn n_replicas_take_the_details_verdicts_and_recompute_g_pass() {
        for dir in ["n-replicas", "n-replicas-split"] {
            let e = expected(dir);
            let (sink, out) = run(&[fixture(&format!("opencompass/{dir}"))], false);
            let summary = out.unwrap();
            // example_abbr `gpk_arith_3` is problem 3.
            let want = expected_counts(&e, |p| {
                p["example_abbr"]
                    .as_str()
                    .unwrap()
                    .rsplit('_')
                    .next()
                    .unwrap()
                    .to_string()
            });
            assert_eq!(sink.counts(), want, "{dir}");
            assert_eq!(sink.samples.len() as u64, e["items"].as_u64().unwrap());
            check_aggregates(&sink, &summary, &e);
            assert!(summary.layout.contains("n replicas"), "{}", summary.layout);
            assert!(summary.verdicts.contains("correct[r]"));
            // Item j is problem j mod N, replica j div N (one file: j is the key).
            let n = e["problems_N"].as_u64().unwrap();
            assert_eq!(n, want.len() as u64);
            for s in sink.samples.iter().filter(|_| dir == "n-replicas") {
                let At::Item(k) = &s.at else { panic!() };
                let j: u64 = k.parse().unwrap();
                assert_eq!(
                    (s.problem_id.clone(), s.repeat),
                    ((j % n).to_string(), Some((j / n) as u32))
                );
            }
        }
    }

    #[test]
    fn split_files_count_positions_across_files() {
        let (sink, _) = run(&[fixture("opencompass/n-replicas-split")], false);
        // Item "3" of the second file (12 items before it) is global 15: problem 7, replica 1.
        let s = sink
            .samples
            .iter()
            .find(|s| s.file == 2 && s.at == At::Item("3".into()))
            .unwrap();
        assert_eq!((s.problem_id.as_str(), s.repeat), ("7", Some(1)));
        assert_eq!(s.gold.as_deref(), Some("1024"));
    }

    #[test]
    fn replication_idx_qualifies_ids_by_subdivision() {
        let e = expected("replication-idx-2024-12");
        let (sink, out) = run(&[fixture("opencompass/replication-idx-2024-12")], false);
        let summary = out.unwrap();
        let want = expected_counts(&e, |p| {
            format!(
                "{}_{}",
                p["subdivision"].as_str().unwrap(),
                p["idx"].as_str().unwrap()
            )
        });
        assert_eq!(sink.counts(), want);
        check_aggregates(&sink, &summary, &e);
        assert!(summary.layout.contains("replication_idx"));
        assert!(
            summary.notes.iter().all(|n| !n.text.contains("differ")),
            "{:?}",
            summary.notes
        );
        let s = &sink.samples[9];
        assert_eq!(
            (s.problem_id.as_str(), s.repeat, s.subset.as_deref()),
            ("Arith_en_1", Some(1), Some("Arith_en"))
        );
    }

    #[test]
    fn a_list_prediction_is_several_samples_without_verdicts() {
        let e = expected("num-return-sequences");
        let (sink, out) = run(&[fixture("opencompass/num-return-sequences")], false);
        let summary = out.unwrap();
        let want = expected_counts(&e, |p| p["item"].as_u64().unwrap().to_string());
        assert_eq!(sink.counts(), want);
        assert!(summary.aggregates.is_empty());
        assert!(summary.verdicts.starts_with("none"));
        assert_eq!(summary.models["stub-math"], SourceSettings::default());
    }

    /// A copy of a fixture's predictions folder alone (no results) in a temp work folder.
    fn predictions_only(dir: &str) -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let to = tmp.path().join("predictions/stub-math");
        std::fs::create_dir_all(&to).unwrap();
        let from = fixture(&format!("opencompass/{dir}/predictions/stub-math"));
        for f in std::fs::read_dir(from).unwrap() {
            let f = f.unwrap().path();
            std::fs::copy(&f, to.join(f.file_name().unwrap())).unwrap();
        }
        tmp
    }

    #[test]
    fn without_details_the_order_comes_from_repeating_prompts() {
        for (dir, id_of) in [
            ("n-replicas", "example_abbr"),
            ("replication-idx-2024-12", "position"),
        ] {
            let e = expected(dir);
            let tmp = predictions_only(dir);
            let (sink, out) = run(&[tmp.path().to_path_buf()], false);
            out.unwrap();
            let mut want = BTreeMap::new();
            for (i, p) in e["problems"].as_array().unwrap().iter().enumerate() {
                let id = match id_of {
                    "example_abbr" => p["example_abbr"]
                        .as_str()
                        .unwrap()
                        .rsplit('_')
                        .next()
                        .unwrap()
                        .to_string(),
                    _ => i.to_string(),
                };
                want.insert(
                    ("stub-math".to_string(), id),
                    (p["samples"].as_u64().unwrap() as u32, None),
                );
            }
            assert_eq!(sink.counts(), want, "{dir}");
        }
    }

    #[test]
    fn a_malformed_item_names_its_file_and_key_or_is_counted() {
        let tmp = predictions_only("n-replicas");
        let path = tmp.path().join("predictions/stub-math/gpk_arith.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["17"]["prediction"] = Value::from(5);
        std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        let (_, out) = run(&[tmp.path().to_path_buf()], false);
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("gpk_arith.json: item 17:") && e.contains("prediction"),
            "{e}"
        );
        let (sink, out) = run(&[tmp.path().to_path_buf()], true);
        out.unwrap();
        assert_eq!((sink.samples.len(), sink.bad.len()), (127, 1));
        // The bad item still holds its place: the order is unchanged.
        assert!(sink.counts().values().all(|&(n, _)| n >= 15));
    }

    /// One work folder, two datasets of split predictions (`a_0..2.json`, `b_0..2.json`), each
    /// with its results: two datasets, each with its own problems and aggregates, never one.
    #[test]
    fn two_datasets_of_split_files_stay_two() {
        let tmp = tempfile::tempdir().unwrap();
        let from = fixture("opencompass/n-replicas-split");
        for abbr in ["gsm8k", "math"] {
            for kind in ["predictions", "results"] {
                let to = tmp.path().join(kind).join("stub-math");
                std::fs::create_dir_all(&to).unwrap();
                for f in std::fs::read_dir(from.join(kind).join("stub-math")).unwrap() {
                    let f = f.unwrap().path();
                    let name = file_name(&f).replace("gpk_arith", abbr);
                    std::fs::copy(&f, to.join(name)).unwrap();
                }
            }
        }
        let (sink, out) = run(&[tmp.path().to_path_buf()], false);
        let summary = out.unwrap();
        assert_eq!(sink.datasets(), ["gsm8k", "math"]);
        let e = expected("n-replicas-split");
        let per = |d: &str| sink.samples.iter().filter(|s| s.dataset == d).count() as u64;
        assert_eq!(
            (per("gsm8k"), per("math")),
            (e["items"].as_u64().unwrap(), e["items"].as_u64().unwrap())
        );
        let done = checks(&sink, &summary);
        assert_eq!(done.len(), 2 * e["aggregates"].as_object().unwrap().len());
        assert!(done.iter().all(|a| a.3), "{done:?}");
    }

    #[test]
    fn claims_predictions_and_results_only() {
        assert!(claims(&fixture(
            "opencompass/n-replicas/predictions/stub-math/gpk_arith.json"
        )));
        assert!(claims(&fixture(
            "opencompass/replication-idx-2024-12/results/stub-math/gpk-arith-v1.json"
        )));
        assert!(claims(&fixture(
            "opencompass/n-replicas-split/predictions/stub-math/gpk_arith_1.json"
        )));
        assert!(!claims(&fixture("opencompass/n-replicas/expected.json")));
        assert!(!claims(&fixture(
            "evalscope/v1.14.1/predictions/stub-math/gsm8k_main.jsonl"
        )));
    }
}
