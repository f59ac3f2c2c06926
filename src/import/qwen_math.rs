//! Reader of Qwen2.5-Math evaluation outputs (`evaluation/math_eval.py --save_outputs`): one line
//! per problem with `idx`, `question`, `gt` and K-long lists `code` (the generations), `pred` (the
//! extracted answers) and `score` (Qwen's per-sample verdicts). The files record no model and no
//! settings: temperature and seed come from the file name only, and the sibling
//! `…_metrics.json` `acc` is recomputed from the scores.

use super::files::{distinct_files, file_name, files_under, json_text, verdict};
use super::source::{
    At, ImportError, Note, ReadOptions, Reader, Recompute, Role, Sink, SourceSample, SourceSummary,
    Stored,
};
use super::stream::{first_line, json_lines, small_json};
use crate::rundir::provenance::SourceSettings;
use regex::Regex;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

/// `<split>_<prompt_type>_<num_test_sample>_seed<seed>_t<temperature>_s<start>_e<end>.jsonl`.
static NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<split>[^_]+)_(?P<prompt>.+)_(?P<num>-?\d+)_seed(?P<seed>\d+)_t(?P<t>\d+(?:\.\d+)?)_s(?P<start>-?\d+)_e(?P<end>-?\d+)\.jsonl$",
    )
    .expect("static regex")
});

/// What a Qwen output file's name says.
#[derive(Debug, Clone)]
struct Named {
    split: String,
    prompt: String,
    num: String,
    seed: u64,
    temperature: f64,
    /// The setting without seed and shard: files that differ only there are one evaluation.
    setting: String,
}

fn named(path: &Path) -> Option<Named> {
    let name = file_name(path);
    let c = NAME.captures(&name)?;
    let (split, prompt, num) = (&c["split"], &c["prompt"], &c["num"]);
    Some(Named {
        split: split.into(),
        prompt: prompt.into(),
        num: num.into(),
        seed: c["seed"].parse().ok()?,
        temperature: c["t"].parse().ok()?,
        setting: format!("{split}_{prompt}_{num}_t{}", &c["t"]),
    })
}

/// Qwen2.5-Math `math_eval.py --save_outputs` files.
pub static READER: Reader = Reader {
    name: "qwen-math",
    about: "Qwen2.5-Math evaluation outputs: <split>_<prompt>_<n>_seed<s>_t<T>_s<a>_e<b>.jsonl (idx, code, pred, score)",
    fields: &[],
    claims,
    read,
};

/// Whether `path` is a Qwen2.5-Math output: a `.jsonl` whose first line has `idx`, a list `code`
/// and a list `pred` or `score` of the same length.
fn claims(path: &Path) -> bool {
    let name = file_name(path);
    if !name.ends_with(".jsonl") {
        return false;
    }
    first_line(path).is_some_and(|v| {
        let len = |k: &str| v.get(k).and_then(Value::as_array).map(Vec::len);
        v.get("idx").is_some()
            && len("code").is_some()
            && (len("pred") == len("code") || len("score") == len("code"))
    })
}

/// Streams the Qwen output files under `paths` into `sink`, each data set its own.
fn read(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    let mut found = distinct_files(files_under(paths, |p| named(p).is_some() || claims(p))?);
    // A metrics file named on the command line is read beside its outputs, not as one.
    found.retain(|p| file_name(p).ends_with(".jsonl"));
    let (files, mut notes) = choose(found, opts)?;
    let mut reader = Outputs::default();
    for f in &files {
        if sink.wants(&f.path, Some(&f.model), f.task.as_deref()) {
            reader.file(sink, f)?;
        }
    }
    notes.append(&mut reader.notes);
    let all_named = files.iter().all(|f| f.named.is_some());
    let scored = reader.scored_lines > 0;
    Ok(SourceSummary {
        layout: if all_named {
            "Qwen2.5-Math outputs (<split>_<prompt>_<n>_seed<s>_t<T>_s<a>_e<b>.jsonl)".into()
        } else {
            "Qwen2.5-Math-style lines (idx, gt, code, pred, score)".into()
        },
        models: settings(&files),
        aggregates: reader.aggregates,
        verdicts: if scored {
            "`score[i]` of each line: Qwen's math_equal of `pred[i]` against `gt`, one per sample"
                .into()
        } else {
            "none: the lines have no `score` lists".into()
        },
        ks: Vec::new(),
        notes,
    })
}

/// One output file to read, with what its path says.
struct QwenFile {
    path: PathBuf,
    named: Option<Named>,
    /// The data folder (`<output_dir>/<data_name>/…`), for a file named as Qwen names them.
    task: Option<String>,
    model: String,
}

/// The model a path names: Qwen's scripts write to `<model path>/math_eval/<data_name>/`.
fn path_model(path: &Path) -> Option<String> {
    let abs = std::path::absolute(path).ok()?;
    let parts: Vec<String> = abs
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let at = parts.iter().rposition(|p| p == "math_eval")?;
    (at >= 1 && at + 2 < parts.len()).then(|| parts[at - 1].clone())
}

fn folder_name(p: Option<&Path>) -> Option<String> {
    p.and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
}

/// The output files, each with its model's name (from its path, else `--model`, else its
/// folder).
fn choose(
    found: Vec<PathBuf>,
    opts: &ReadOptions,
) -> Result<(Vec<QwenFile>, Vec<Note>), ImportError> {
    let mut notes = Vec::new();
    let mut files = Vec::new();
    let mut guessed = BTreeSet::new();
    for path in found {
        let named = named(&path);
        let parent = path.parent();
        let task = named.as_ref().and_then(|_| folder_name(parent));
        let model = match (path_model(&path), &opts.model) {
            (Some(m), _) => m,
            (None, Some(want)) => want.clone(),
            (None, None) => {
                // No model in the files: name it after the output folder (or the file).
                let name = match &named {
                    Some(_) => folder_name(parent.and_then(Path::parent)),
                    None => None,
                };
                let name = name.unwrap_or_else(|| {
                    path.file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_else(|| "qwen-math".into())
                });
                guessed.insert(name.clone());
                name
            }
        };
        files.push(QwenFile {
            path,
            named,
            task,
            model,
        });
    }
    for g in &guessed {
        // A name of the import's choosing, for every dataset of that model.
        notes.push(Note::all(format!(
            "Qwen's outputs do not name the model: named {g} after its folder or file (--model names it)"
        )));
    }
    if files.is_empty() {
        return Err(ImportError::Input(
            "qwen-math: no Qwen2.5-Math output file (lines with idx, code, pred, score) found"
                .into(),
        ));
    }
    one_setting(&files)?;
    Ok((files, notes))
}

/// Files of one model and data set may differ in seed and shard only: several temperatures or
/// prompt types are several evaluations, imported one at a time.
fn one_setting(files: &[QwenFile]) -> Result<(), ImportError> {
    let mut by_model: BTreeMap<(&str, &str), BTreeSet<&str>> = BTreeMap::new();
    for f in files {
        let setting = f
            .named
            .as_ref()
            .map_or("(unnamed file)", |n| n.setting.as_str());
        let key = (f.model.as_str(), f.task.as_deref().unwrap_or_default());
        by_model.entry(key).or_default().insert(setting);
    }
    match by_model.iter().find(|(_, s)| s.len() > 1) {
        Some(((model, _), s)) => Err(ImportError::Input(format!(
            "qwen-math: the files of model {model} hold {} settings ({}); give the files of one",
            s.len(),
            s.iter().copied().collect::<Vec<_>>().join(", ")
        ))),
        None => Ok(()),
    }
}

/// Per model, what the file names say (and nothing else: Qwen's outputs record no settings).
fn settings(files: &[QwenFile]) -> BTreeMap<String, SourceSettings> {
    let mut out: BTreeMap<String, SourceSettings> = BTreeMap::new();
    let mut seeds: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for f in files {
        let s = out.entry(f.model.clone()).or_default();
        let Some(n) = &f.named else { continue };
        seeds.entry(&f.model).or_default().insert(n.seed);
        s.temperature = Some(n.temperature);
        s.recorded = serde_json::json!({
            "split": n.split,
            "prompt_type": n.prompt,
            "num_test_sample": n.num,
        });
    }
    for (model, seeds) in seeds {
        let Some(s) = out.get_mut(model) else {
            continue;
        };
        match seeds.iter().collect::<Vec<_>>().as_slice() {
            [one] => s.seed = Some(**one),
            many => {
                if let Some(m) = s.recorded.as_object_mut() {
                    m.insert("seeds".into(), serde_json::json!(many));
                }
            }
        }
    }
    out
}

/// What one file's lines give toward its metrics file.
#[derive(Default)]
struct FileTally {
    /// Problems with a score list: those whose first (last) sample scores true, and all.
    first: (u64, u64),
    last_by_type: BTreeMap<String, (u64, u64)>,
    unscored: u64,
}

/// Reads files into samples, keeping what the summary needs.
#[derive(Default)]
struct Outputs {
    /// (model and setting with seed, idx) already read: merged shards repeat earlier problems.
    seen: HashSet<(String, String)>,
    duplicates: u64,
    scored_lines: u64,
    aggregates: Vec<Stored>,
    notes: Vec<Note>,
    files_read: usize,
}

impl Outputs {
    fn file(&mut self, sink: &mut dyn Sink, f: &QwenFile) -> Result<(), ImportError> {
        let file = sink.open(&f.path, Role::Samples)?;
        // Shards of one seed repeat problems; another data set's files never do.
        let task = f.task.as_deref().unwrap_or_default();
        let key = match &f.named {
            Some(n) => format!("{}\0{task}\0{}\0{}", f.model, n.setting, n.seed),
            None => format!("{}\0{}", f.model, f.path.display()),
        };
        let mut tally = FileTally::default();
        let before = self.duplicates;
        json_lines(sink, file, |sink, line, v| {
            self.line(sink, f, file, (&key, line), &v, &mut tally)
        })?;
        if self.duplicates > before {
            let text = format!(
                "{}: {} problems read again (merged shards) were skipped, the first kept",
                f.path.display(),
                self.duplicates - before
            );
            self.notes.push(Note::of(task, text));
        }
        self.files_read += 1;
        self.check_metrics(sink, f, &tally)
    }

    fn line(
        &mut self,
        sink: &mut dyn Sink,
        f: &QwenFile,
        file: usize,
        (key, line): (&str, u64),
        v: &Value,
        tally: &mut FileTally,
    ) -> Result<(), ImportError> {
        let at = At::Line(line);
        let idx = match v.get("idx") {
            Some(i @ (Value::Number(_) | Value::String(_))) => json_text(i).unwrap_or_default(),
            _ => return sink.bad(file, at, "no `idx` (the problem's number)".into()),
        };
        let lists = match Lists::of(v) {
            Ok(l) => l,
            Err(m) => return sink.bad(file, at, m),
        };
        if !self.seen.insert((key.to_string(), idx.clone())) {
            self.duplicates += 1;
            return Ok(());
        }
        tally.add(v, &lists.score);
        self.scored_lines += lists.score.is_some() as u64;
        let question = v.get("question").and_then(json_text);
        let gold = v.get("gt").and_then(json_text);
        // Another seed's file gives the same problems again: the sink numbers its samples on.
        for (i, response) in lists.code.into_iter().enumerate() {
            let repeat = u32::try_from(i).unwrap_or(u32::MAX);
            sink.sample(SourceSample {
                model: f.model.clone(),
                dataset: f.task.clone().unwrap_or_default(),
                problem_id: idx.clone(),
                question: question.clone(),
                gold: gold.clone(),
                repeat: Some(repeat),
                response: Some(response),
                extracted: lists
                    .pred
                    .as_ref()
                    .and_then(|p| p.get(i).cloned().flatten()),
                verdict: lists
                    .score
                    .as_ref()
                    .and_then(|s| s.get(i).copied().flatten()),
                file,
                at: at.clone(),
                ..SourceSample::default()
            })?;
        }
        Ok(())
    }

    /// The sibling metrics file's `acc` (first sample only) and `type_acc` (last sample),
    /// recomputed from the scores as Qwen's `evaluate()` computes them.
    fn check_metrics(
        &mut self,
        sink: &mut dyn Sink,
        f: &QwenFile,
        tally: &FileTally,
    ) -> Result<(), ImportError> {
        let Some(path) = metrics_file(&f.path, f.named.as_ref()) else {
            return Ok(());
        };
        let file = sink.open(&path, Role::Side)?;
        sink.belongs(file, f.task.as_deref().unwrap_or_default());
        let metrics = small_json(&path)?;
        let prefix = if self.files_read > 1 || self.aggregates.iter().any(|a| a.name == "acc") {
            format!("{}: ", file_name(&f.path))
        } else {
            String::new()
        };
        if let Some(acc) = metrics.get("acc").and_then(Value::as_f64) {
            let (c, n) = tally.first;
            self.aggregates.push(Stored {
                model: f.model.clone(),
                dataset: f.task.clone().unwrap_or_default(),
                name: format!("{prefix}acc"),
                value: acc,
                recompute: Recompute::Done {
                    value: percent(c, n, tally.unscored),
                    basis: format!(
                        "100 × the share of the {n} problems whose first sample scores true (Qwen's acc reads score[0] only), rounded to 1 decimal as its evaluate() does"
                    ),
                },
            });
        }
        let types = metrics.get("type_acc").and_then(Value::as_object);
        for (t, v) in types.into_iter().flatten() {
            let Some(source) = v.as_f64() else { continue };
            let (c, n) = tally.last_by_type.get(t).copied().unwrap_or((0, 0));
            self.aggregates.push(Stored {
                model: f.model.clone(),
                dataset: f.task.clone().unwrap_or_default(),
                name: format!("{prefix}type_acc.{t}"),
                value: source,
                recompute: Recompute::Done {
                    value: percent(c, n, tally.unscored),
                    basis: format!(
                        "100 × the share of the {n} problems of type {t} whose last sample scores true (Qwen's type_acc reads score[-1]), rounded to 1 decimal"
                    ),
                },
            });
        }
        Ok(())
    }
}

/// `100 c / n` rounded to one decimal, half to even as numpy rounds; None when some problems had
/// no scores (the file then does not hold what the metric was computed from) or there are none.
fn percent(c: u64, n: u64, unscored: u64) -> Option<f64> {
    (n > 0 && unscored == 0).then(|| (1000.0 * c as f64 / n as f64).round_ties_even() / 10.0)
}

impl FileTally {
    fn add(&mut self, v: &Value, score: &Option<Vec<Option<bool>>>) {
        let Some(s) = score.as_ref().filter(|s| !s.is_empty()) else {
            self.unscored += 1;
            return;
        };
        let first = s.first().copied().flatten() == Some(true);
        self.first.0 += first as u64;
        self.first.1 += 1;
        if let Some(t) = v.get("type").and_then(json_text) {
            let last = s.last().copied().flatten() == Some(true);
            let e = self.last_by_type.entry(t).or_default();
            e.0 += last as u64;
            e.1 += 1;
        }
    }
}

/// A line's parallel lists: generations, extracted answers (`""` = none found), verdicts.
struct Lists {
    code: Vec<String>,
    pred: Option<Vec<Option<String>>>,
    score: Option<Vec<Option<bool>>>,
}

impl Lists {
    fn of(v: &Value) -> Result<Lists, String> {
        let Some(code) = v.get("code").and_then(Value::as_array) else {
            return Err("no `code` list (the generations)".into());
        };
        let mut texts = Vec::with_capacity(code.len());
        for (i, c) in code.iter().enumerate() {
            match c.as_str() {
                Some(s) => texts.push(s.to_string()),
                None => return Err(format!("`code[{i}]` is not a string")),
            }
        }
        let n = texts.len();
        let pred = match v.get("pred") {
            None | Some(Value::Null) => None,
            Some(p) => Some(parallel(p, "pred", n, |x| {
                Ok(json_text(x).filter(|s| !s.is_empty()))
            })?),
        };
        let score = match v.get("score") {
            None | Some(Value::Null) => None,
            Some(s) => Some(parallel(s, "score", n, verdict)?),
        };
        Ok(Lists {
            code: texts,
            pred,
            score,
        })
    }
}

/// A list as long as `code`, each element read by `each` (an error refuses it).
fn parallel<T>(
    v: &Value,
    name: &str,
    n: usize,
    each: impl Fn(&Value) -> Result<Option<T>, String>,
) -> Result<Vec<Option<T>>, String> {
    let Some(list) = v.as_array() else {
        return Err(format!("`{name}` is not a list"));
    };
    if list.len() != n {
        return Err(format!("`{name}` has {} entries, `code` {n}", list.len()));
    }
    list.iter()
        .enumerate()
        .map(|(i, x)| each(x).map_err(|why| format!("`{name}[{i}]`: {why}")))
        .collect()
}

/// `<stem>_<prompt_type>_metrics.json` beside an output file (any `<stem>_…_metrics.json` when
/// the name does not say the prompt type).
fn metrics_file(path: &Path, named: Option<&Named>) -> Option<PathBuf> {
    let stem = path.file_stem()?.to_string_lossy().into_owned();
    let dir = path.parent()?;
    if let Some(n) = named {
        let p = dir.join(format!("{stem}_{}_metrics.json", n.prompt));
        if p.is_file() {
            return Some(p);
        }
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = file_name(p);
            name.starts_with(&format!("{stem}_")) && name.ends_with("_metrics.json")
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

#[cfg(test)]
mod tests {
    use super::super::testing::{self, checks, fixture, read_into, Collect};
    use super::*;

    const FILE: &str = "qwen-math/gpk_arith/test_cot_-1_seed0_t0.7_s0_e-1.jsonl";

    fn run(
        paths: &[PathBuf],
        opts: &ReadOptions,
        skip_bad: bool,
    ) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("qwen-math", paths, opts, skip_bad)
    }

    fn expected() -> Value {
        testing::expected("qwen-math")
    }

    #[test]
    fn the_fixture_gives_each_problem_its_samples_verdicts_and_the_acc_check() {
        let (sink, out) = run(&[fixture("qwen-math")], &ReadOptions::default(), false);
        let summary = out.unwrap();
        let e = expected();
        let want: BTreeMap<String, (u32, Option<u32>)> = e["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let n = p["samples"].as_u64().unwrap() as u32;
                (
                    p["idx"].to_string(),
                    (n, Some(p["correct"].as_u64().unwrap() as u32)),
                )
            })
            .collect();
        let got: BTreeMap<String, (u32, Option<u32>)> = sink
            .counts()
            .into_iter()
            .map(|((_, p), c)| (p, c))
            .collect();
        assert_eq!(got, want);
        assert_eq!(sink.datasets(), ["gpk_arith"]);
        let acc = &checks(&sink, &summary)[0];
        assert_eq!(acc.0, "acc");
        assert_eq!(acc.1, e["aggregates"]["acc"].as_f64().unwrap());
        assert!(acc.3, "{acc:?}");
        // Settings from the name only; nothing else invented.
        let s = &summary.models[&sink.samples[0].model];
        assert_eq!(
            (s.temperature, s.seed, s.nominal_n, s.top_p),
            (Some(0.7), Some(0), None, None)
        );
        // Extracted answers are pred[i]; an empty pred is no answer.
        let p2: Vec<_> = sink
            .samples
            .iter()
            .filter(|s| s.problem_id == "2")
            .collect();
        assert_eq!(p2[1].extracted.as_deref(), Some("381"));
        assert_eq!(p2[5].extracted, None);
        assert_eq!(p2[5].repeat, Some(5));
    }

    /// A copy of the fixture file with `edit` applied to its lines, in a Qwen-shaped folder.
    fn edited(edit: impl FnOnce(&mut Vec<String>)) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("my-model/math_eval/gpk_arith");
        std::fs::create_dir_all(&sub).unwrap();
        let text = std::fs::read_to_string(fixture(FILE)).unwrap();
        let mut lines: Vec<String> = text.lines().map(String::from).collect();
        edit(&mut lines);
        let path = sub.join("test_cot_-1_seed0_t0.7_s0_e-1.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        (dir, path)
    }

    #[test]
    fn a_malformed_line_names_file_and_line_or_is_counted() {
        let (_dir, path) = edited(|l| {
            l[2] = "{\"idx\": 2, \"code\": [".into();
            l[4] = l[4].replacen("\"score\": [", "\"score\": [true, ", 1);
        });
        let (_, out) = run(std::slice::from_ref(&path), &ReadOptions::default(), false);
        let e = out.unwrap_err().to_string();
        assert!(e.contains("test_cot_-1_seed0_t0.7_s0_e-1.jsonl:3"), "{e}");
        let (sink, out) = run(&[path], &ReadOptions::default(), true);
        let summary = out.unwrap();
        assert_eq!(sink.bad.len(), 2, "{:?}", sink.bad);
        assert!(sink.bad[1].contains(":5") && sink.bad[1].contains("`score` has 7 entries"));
        assert_eq!(sink.counts().len(), 6);
        // The model is the folder above math_eval, as Qwen's scripts lay it out.
        assert!(summary.models.contains_key("my-model"));
        assert!(sink.samples.iter().all(|s| s.model == "my-model"));
    }

    #[test]
    fn merged_shards_are_read_once_and_acc_uses_the_first_sample() {
        let (dir, path) = edited(|l| {
            let again = l[0].clone();
            l.push(again);
        });
        let (sink, out) = run(&[path], &ReadOptions::default(), false);
        let summary = out.unwrap();
        assert_eq!(
            sink.counts()[&("my-model".to_string(), "0".to_string())],
            (6, Some(6))
        );
        assert!(summary
            .notes
            .iter()
            .any(|n| n.text.contains("1 problems read again")));
        // No metrics file beside the copy: nothing to check.
        assert!(summary.aggregates.is_empty());
        drop(dir);
        assert_eq!(percent(3, 8, 0), Some(37.5));
        assert_eq!(percent(1, 8, 0), Some(12.5));
        assert_eq!(percent(1, 3, 0), Some(33.3));
        assert_eq!(percent(1, 3, 1), None);
    }

    #[test]
    fn several_data_sets_are_several_datasets_and_settings_must_agree() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(fixture(FILE)).unwrap();
        for (data, name) in [
            ("a", "test_cot_-1_seed0_t0.7_s0_e-1.jsonl"),
            ("b", "test_cot_-1_seed0_t0.7_s0_e-1.jsonl"),
        ] {
            std::fs::create_dir_all(dir.path().join(data)).unwrap();
            std::fs::write(dir.path().join(data).join(name), &text).unwrap();
        }
        let (sink, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default(), false);
        out.unwrap();
        assert_eq!(sink.datasets(), ["a", "b"]);
        let opts = ReadOptions {
            task: Some("b".into()),
            ..ReadOptions::default()
        };
        let (sink, out) = run(&[dir.path().to_path_buf()], &opts, false);
        out.unwrap();
        assert_eq!(sink.samples.len(), 48);
        std::fs::write(
            dir.path().join("b/test_cot_-1_seed0_t0.0_s0_e-1.jsonl"),
            &text,
        )
        .unwrap();
        let (_, out) = run(&[dir.path().to_path_buf()], &opts, false);
        assert!(matches!(out, Err(ImportError::Input(m)) if m.contains("2 settings")));
    }

    #[test]
    fn claims_qwen_outputs_only() {
        assert!(claims(&fixture(FILE)));
        assert!(!claims(&fixture("jsonl/list-per-problem.jsonl")));
        assert!(!claims(&fixture(
            "lm-eval/v0.4.13/stub-math/samples_gpk_arith_2026-12-01T16-18-04.660489.jsonl"
        )));
        assert!(!claims(&fixture(
            "qwen-math/gpk_arith/test_cot_-1_seed0_t0.7_s0_e-1_cot_metrics.json"
        )));
    }
}
