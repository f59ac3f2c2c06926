//! Reader of Inspect AI logs: `.eval` files (zip archives: `header.json` with the eval's spec,
//! plan and results, and one `samples/<id>_epoch_<n>.json` per sample and epoch, each entry
//! compressed with zstd in recent Inspect, deflate before) and `.json` logs (one object whose
//! `samples` list is read element by element). A task run with `epochs` gives each sample as
//! many samples; the score the log keeps for each is the source's verdict beside gpassk's
//! re-grade, and the results' `accuracy` of each epochs reducer (`mean`, `pass_at_k`, `max`) is
//! recomputed from those verdicts.

use super::files::{file_name, files_under, json_text, verdict};
use super::metric::PaperMetric;
use super::source::{
    At, ImportError, ReadOptions, Reader, Recompute, Role, Sink, SourceSample, SourceSummary,
    Stored,
};
use super::stream::{json_object_streaming, lenient_json, MAX_ENTRY};
use crate::rundir::provenance::SourceSettings;
use crate::util::chat::content_text;
use serde_json::{Map, Value};
use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Inspect AI logs.
pub static READER: Reader = Reader {
    name: "inspect",
    about:
        "Inspect AI logs: .eval archives and .json logs, a sample per epoch, the log's score kept",
    fields: &["verdict"],
    claims,
    read,
};

/// A `.eval` zip archive, or a `.json` log whose head names an eval (its `eval` spec: keys in
/// any order, as a log re-written with sorted keys has them).
fn claims(path: &Path) -> bool {
    let name = file_name(path);
    let mut head = Vec::new();
    let read = crate::util::open_regular(path).and_then(|f| f.take(1 << 14).read_to_end(&mut head));
    if read.is_err() {
        return false;
    }
    if name.ends_with(".eval") {
        return head.starts_with(b"PK\x03\x04");
    }
    let text = String::from_utf8_lossy(&head);
    // Logs before `eval_id` (2024) name the eval by its `run_id` and `task_id`.
    name.ends_with(".json")
        && text.trim_start().starts_with('{')
        && text.contains("\"task_id\"")
        && (text.contains("\"eval_id\"") || text.contains("\"run_id\""))
}

fn read(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    let logs = files_under(paths, |p| {
        let n = file_name(p);
        (n.ends_with(".eval") || n.ends_with(".json")) && claims(p)
    })?;
    if logs.is_empty() {
        return Err(ImportError::Input(format!(
            "inspect: no .eval archive nor .json log under {}",
            (paths.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut summary = SourceSummary::default();
    let mut layouts = Vec::new();
    let mut scorers = Vec::new();
    let mut seen = Seen::new();
    for path in &logs {
        let done = match file_name(path).ends_with(".eval") {
            true => read_eval(path, opts, sink, &mut seen)?,
            false => read_json(path, opts, sink, &mut seen)?,
        };
        let Some(log) = done else { continue };
        layouts.push(log.layout);
        scorers.push(format!("`{}`", log.scorer));
        log.finish(path, &mut summary);
    }
    layouts.sort();
    layouts.dedup();
    scorers.dedup();
    summary.layout = layouts.join("; ");
    summary.verdicts = format!(
        "per sample and epoch: the log's score of scorer {} (C or 1 correct, I, N or 0 wrong; partial credit gives none)",
        scorers.join(", ")
    );
    Ok(summary)
}

/// What a log says besides its samples.
#[derive(Default)]
struct Log {
    layout: &'static str,
    eval: Value,
    plan: Value,
    results: Value,
    status: String,
    /// The scorer whose score is the verdict, and the key within a score holding several.
    scorer: String,
    key: Option<String>,
    samples: u64,
    partial: u64,
    targets: u64,
    /// Samples with no target or scored by a model grader: nothing to re-grade.
    untargeted: u64,
    /// The log's index in the sink, once a sample was read: its aggregates are recomputed
    /// from its own samples, whatever other logs of the task add.
    file: Option<usize>,
}

/// The evals read so far, by their id, and the log that held each.
type Seen = HashMap<String, PathBuf>;

impl Log {
    /// Registers the log's file with the sink, once its eval is known: the same eval in a second
    /// log (an `.eval` and its `.json` conversion, a copy re-written) is refused, naming both, as
    /// its samples would count twice; other logs of the task add their samples.
    fn open(
        &mut self,
        path: &Path,
        sink: &mut dyn Sink,
        seen: &mut Seen,
    ) -> Result<usize, ImportError> {
        let id = |k: &str| self.eval[k].as_str().unwrap_or_default().to_string();
        let eval = match id("eval_id") {
            e if !e.is_empty() => format!("eval_id {e}"),
            _ => format!("run_id {}, task_id {}", id("run_id"), id("task_id")),
        };
        let key = format!("{eval}, created {}", id("created"));
        if let Some(first) = seen.get(&key) {
            return Err(ImportError::Input(format!(
                "{} and {} hold the same Inspect eval ({eval}): its samples would count twice; give one of them",
                first.display(),
                path.display()
            )));
        }
        seen.insert(key, path.to_path_buf());
        let file = sink.open(path, Role::Samples)?;
        // Its task's, even with no sample kept (its stored scores are that task's).
        sink.belongs(file, &self.dataset());
        self.file = Some(file);
        Ok(file)
    }

    fn model(&self) -> String {
        self.eval["model"]
            .as_str()
            .unwrap_or("inspect-model")
            .to_string()
    }

    fn dataset(&self) -> String {
        self.eval["task"]
            .as_str()
            .unwrap_or("inspect-task")
            .to_string()
    }

    /// The scorer whose score is the verdict: `--field verdict=SCORER[.KEY]`, else the results'
    /// headline, else the first scorer the eval names.
    fn choose_scorer(&mut self, opts: &ReadOptions) {
        if let Some(spec) = opts.fields.get("verdict") {
            let (s, k) = spec
                .split_once('.')
                .map_or((spec.as_str(), None), |(s, k)| (s, Some(k)));
            self.scorer = s.to_string();
            self.key = k.map(String::from);
            return;
        }
        let headline = self
            .results
            .pointer("/headline/scorer")
            .and_then(Value::as_str);
        let first = (self.results.pointer("/scores/0/name"))
            .or(self.eval.pointer("/scorers/0/name"))
            .and_then(Value::as_str);
        self.scorer = headline.or(first).unwrap_or_default().to_string();
    }

    /// The generation settings of the plan and the model, and the epochs asked for.
    fn settings(&self) -> SourceSettings {
        let mut config =
            (self.eval["model_generate_config"].as_object().cloned()).unwrap_or_default();
        config.extend(self.plan["config"].as_object().cloned().unwrap_or_default());
        let num = |k: &str| config.get(k).and_then(Value::as_f64);
        SourceSettings {
            temperature: num("temperature"),
            top_p: num("top_p"),
            max_tokens: (config.get("max_tokens").and_then(Value::as_u64))
                .and_then(|t| u32::try_from(t).ok()),
            seed: config.get("seed").and_then(Value::as_u64),
            nominal_n: (self.eval.pointer("/config/epochs").and_then(Value::as_u64))
                .and_then(|e| u32::try_from(e).ok()),
            recorded: serde_json::json!({
                "generate_config": config,
                "epochs": self.eval.pointer("/config/epochs"),
                "epochs_reducer": self.eval.pointer("/config/epochs_reducer"),
                "inspect_ai": self.eval.pointer("/packages/inspect_ai"),
                "task_version": self.eval["task_version"],
            }),
        }
    }

    /// The log's settings, notes and stored aggregates, into the summary.
    fn finish(self, path: &Path, summary: &mut SourceSummary) {
        let (model, dataset) = (self.model(), self.dataset());
        if self.status != "success" {
            summary.note(
                &dataset,
                format!(
                    "{}: the log's status is {} (the run did not finish): {} samples read",
                    path.display(),
                    crate::util::printable(&self.status),
                    self.samples
                ),
            );
        }
        if self.partial > 0 {
            summary.note(
                &dataset,
                format!(
                    "{}: {} samples scored with partial credit carry no source verdict",
                    path.display(),
                    self.partial
                ),
            );
        }
        if self.targets > 0 {
            summary.note(
                &dataset,
                format!(
                    "{}: {} samples list several targets: the first is the gold answer",
                    path.display(),
                    self.targets
                ),
            );
        }
        if self.untargeted > 0 {
            summary.note(
                &dataset,
                format!(
                "{}: {} samples have no target or a model grader's score: the log's score is their verdict (kept as the answer 1 or 0 against the gold 1, as for agent trajectories; their text is not kept)",
                path.display(),
                self.untargeted
            ));
        }
        summary
            .models
            .entry(model.clone())
            .or_insert_with(|| self.settings());
        for score in self.results["scores"].as_array().into_iter().flatten() {
            if score["name"].as_str() != Some(self.scorer.as_str()) || self.key.is_some() {
                continue;
            }
            let reducer = score["reducer"].as_str().unwrap_or("mean");
            let Some(value) = score
                .pointer("/metrics/accuracy/value")
                .and_then(Value::as_f64)
            else {
                continue;
            };
            summary.aggregates.push(Stored {
                model: model.clone(),
                dataset: dataset.clone(),
                name: format!("{}/{reducer}: accuracy", self.scorer),
                value,
                recompute: reduced(reducer, self.file),
            });
        }
    }
}

/// How an epochs reducer's `accuracy` is recomputed from the per-epoch verdicts.
fn reduced(reducer: &str, file: Option<usize>) -> Recompute {
    let name = match reducer {
        "mean" => "accuracy".to_string(),
        // The best epoch of each sample, however many it kept.
        "max" => "pass@n".to_string(),
        r => r
            .strip_prefix("pass_at_")
            .map(|k| format!("pass@{k}"))
            .unwrap_or_default(),
    };
    match PaperMetric::parse(&name) {
        Some(metric) => Recompute::Verdicts {
            metric,
            scale: 1.0,
            subset: None,
            files: file.into_iter().collect(),
        },
        None => Recompute::Done {
            value: None,
            basis: format!("the {reducer} reducer: not recomputed"),
        },
    }
}

/// Inspect's reading of a score value as a verdict: `C` correct; `I` and `N` (no answer) wrong;
/// `P` and numbers between 0 and 1 partial credit (none); otherwise as every reader reads one.
fn score_verdict(v: &Value) -> Result<Option<bool>, String> {
    match v.as_str() {
        Some("C") => Ok(Some(true)),
        Some("I") | Some("N") => Ok(Some(false)),
        Some("P") => Ok(None),
        _ => verdict(v),
    }
}

impl Log {
    /// One sample of the log (one epoch of one dataset sample).
    fn sample(&mut self, v: &Value) -> Result<SourceSample, String> {
        let o = v.as_object().ok_or("a sample is not a JSON object")?;
        let id = o
            .get("id")
            .and_then(json_text)
            .ok_or("a sample without `id`")?;
        let epoch = o.get("epoch").and_then(Value::as_u64).unwrap_or(1);
        let score = o.get("scores").and_then(|sc| sc.get(&self.scorer));
        let mut value = score.and_then(|sc| sc.get("value"));
        if let (Some(k), Some(Value::Object(m))) = (&self.key, value) {
            value = m.get(k);
        }
        if let Some(Value::Object(m)) = value {
            let keys: Vec<&str> = m.keys().map(String::as_str).collect();
            return Err(format!(
                "score `{}` holds several values ({}): name one with --field verdict={}.KEY",
                self.scorer,
                keys.join(", "),
                self.scorer
            ));
        }
        let verdict = match value {
            Some(x) => score_verdict(x).map_err(|why| format!("score `{}`: {why}", self.scorer))?,
            None => None,
        };
        self.partial += (value.is_some_and(|x| !x.is_null()) && verdict.is_none()) as u64;
        self.samples += 1;
        let errored = o.get("error").filter(|e| !e.is_null()).map(|e| {
            let message = e
                .get("message")
                .and_then(json_text)
                .unwrap_or_else(|| e.to_string());
            message.lines().next().unwrap_or_default().to_string()
        });
        let mut sample = SourceSample {
            model: self.model(),
            dataset: self.dataset(),
            problem_id: id,
            repeat: u32::try_from(epoch.saturating_sub(1)).ok(),
            question: input_text(o.get("input")),
            gold: self.gold(o.get("target")),
            response: response(o),
            extracted: score.and_then(|sc| sc.get("answer")).and_then(json_text),
            verdict,
            finish_reason: finish_reason(o),
            errored,
            ..SourceSample::default()
        };
        // No target (an open-ended task, a check run in a sandbox) or a model grader's (the
        // target is a rubric, not an answer): nothing gpassk's grader can re-grade, so the
        // log's verdict is graded, as a τ-bench reward is.
        let no_target = sample.gold.as_deref().is_none_or(|g| g.trim().is_empty());
        if no_target || self.scorer.starts_with("model_graded") {
            self.untargeted += 1;
            sample.gold = Some("1".into());
            sample.response = None;
            sample.answer = verdict.map(|v| if v { "1" } else { "0" }.into());
        }
        Ok(sample)
    }

    /// The target, or the first of several.
    fn gold(&mut self, target: Option<&Value>) -> Option<String> {
        match target? {
            Value::Array(list) => {
                self.targets += (list.len() > 1) as u64;
                list.first().and_then(json_text)
            }
            other => json_text(other),
        }
    }
}

/// The sample's input: a string, or its last user message.
fn input_text(input: Option<&Value>) -> Option<String> {
    match input? {
        Value::String(s) => Some(s.clone()),
        Value::Array(messages) => (messages.iter().rev())
            .find(|m| m["role"] == "user")
            .and_then(|m| content_text(&m["content"])),
        _ => None,
    }
}

/// The model's answer: `output.completion`, else the last assistant message.
fn response(o: &Map<String, Value>) -> Option<String> {
    let completion = o
        .get("output")
        .and_then(|out| out.get("completion"))
        .and_then(Value::as_str);
    let last = || {
        (o.get("messages")?.as_array()?.iter().rev())
            .find(|m| m["role"] == "assistant")
            .and_then(|m| content_text(&m["content"]))
    };
    completion
        .filter(|c| !c.is_empty())
        .map(String::from)
        .or_else(last)
        .or(completion.map(String::from))
}

/// `length` when the model stopped at its token limit.
fn finish_reason(o: &Map<String, Value>) -> Option<String> {
    let reason = o
        .get("output")?
        .pointer("/choices/0/stop_reason")?
        .as_str()?;
    Some(match reason {
        "max_tokens" | "model_length" => "length".into(),
        other => other.to_string(),
    })
}

/// A `.json` log: its header entries, then its samples one at a time.
fn read_json(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn Sink,
    seen: &mut Seen,
) -> Result<Option<Log>, ImportError> {
    let log = RefCell::new(Log {
        layout: "Inspect AI .json log",
        ..Log::default()
    });
    let mut file = None;
    let wanted = RefCell::new(None::<bool>);
    json_object_streaming(
        path,
        "samples",
        |k, v| {
            let mut l = log.borrow_mut();
            match k.as_str() {
                "eval" => l.eval = v,
                "plan" => l.plan = v,
                "results" => l.results = v,
                "status" => l.status = v.as_str().unwrap_or_default().to_string(),
                _ => {}
            }
            Ok(())
        },
        |i, v| {
            let mut l = log.borrow_mut();
            let want = *wanted.borrow_mut().get_or_insert_with(|| {
                l.choose_scorer(opts);
                sink.wants(path, Some(&l.model()), Some(&l.dataset()))
            });
            if !want {
                return Ok(());
            }
            let f = match file {
                Some(f) => f,
                None => *file.insert(l.open(path, sink, seen)?),
            };
            let at = At::Item(format!("samples[{i}]"));
            match l.sample(&v) {
                Ok(mut s) => {
                    s.file = f;
                    s.at = at;
                    sink.sample(s)
                }
                Err(m) => sink.bad(f, at, m),
            }
        },
    )?;
    let read = wanted.into_inner() == Some(true);
    Ok(read.then(|| log.into_inner()))
}

/// A `.eval` archive: `header.json` (or, for a log still being written, `_journal/start.json`),
/// then every `samples/*.json` entry in name order.
fn read_eval(
    path: &Path,
    opts: &ReadOptions,
    sink: &mut dyn Sink,
    seen: &mut Seen,
) -> Result<Option<Log>, ImportError> {
    let f = crate::util::open_regular(path).map_err(ImportError::io("read", path))?;
    let bad = |m: String| ImportError::bad(path, At::File, m);
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(f))
        .map_err(|e| bad(format!("not a zip archive (an Inspect .eval log): {e}")))?;
    let mut log = Log {
        layout: "Inspect AI .eval archive (zip: header.json + samples/<id>_epoch_<n>.json)",
        ..Log::default()
    };
    let header = ["header.json", "_journal/start.json"]
        .into_iter()
        .find(|n| zip.index_for_name(n).is_some());
    let Some(header) = header else {
        return Err(bad(
            "no header.json nor _journal/start.json: not an Inspect .eval log".into(),
        ));
    };
    let head =
        entry(&mut zip, header).map_err(|m| ImportError::bad(path, At::Item(header.into()), m))?;
    log.eval = head["eval"].clone();
    log.plan = head["plan"].clone();
    log.results = head["results"].clone();
    log.status = head["status"].as_str().unwrap_or("started").to_string();
    log.choose_scorer(opts);
    if !sink.wants(path, Some(&log.model()), Some(&log.dataset())) {
        return Ok(None);
    }
    let file = log.open(path, sink, seen)?;
    let mut names: Vec<String> = (zip.file_names())
        .filter_map(|n| n.ok().map(|n| n.into_owned()))
        .filter(|n| n.starts_with("samples/") && n.ends_with(".json"))
        .collect();
    names.sort();
    for name in names {
        let at = At::Item(name.clone());
        let parsed = entry(&mut zip, &name).and_then(|v| log.sample(&v));
        match parsed {
            Ok(mut s) => {
                s.file = file;
                s.at = at;
                sink.sample(s)?;
            }
            Err(m) => sink.bad(file, at, m)?,
        }
    }
    Ok(Some(log))
}

/// The JSON of one archive entry, decompressed (stored, deflate, or zstd in one frame or
/// several) under the entry bound.
fn entry<R: Read + std::io::Seek>(
    zip: &mut zip::ZipArchive<R>,
    name: &str,
) -> Result<Value, String> {
    let i = zip.index_for_name(name).ok_or("no such entry")?;
    let method = zip
        .by_index_raw(i)
        .map_err(|e| e.to_string())?
        .compression();
    let mut bytes = Vec::new();
    if method == zip::CompressionMethod::ZSTD {
        let raw = zip.by_index_raw(i).map_err(|e| e.to_string())?;
        let mut compressed = Vec::new();
        raw.take(MAX_ENTRY + 1)
            .read_to_end(&mut compressed)
            .map_err(|e| e.to_string())?;
        bytes = zstd_frames(&compressed)?;
    } else {
        let f = zip
            .by_index(i)
            .map_err(|e| format!("cannot read it: {e}"))?;
        f.take(MAX_ENTRY + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read it: {e}"))?;
    }
    if bytes.len() as u64 > MAX_ENTRY {
        return Err(format!("longer than {} MiB", MAX_ENTRY >> 20));
    }
    lenient_json(&bytes).map_err(|e| format!("not JSON: {e}"))
}

/// Every zstd frame of `raw`, decoded one after another (Inspect caps a frame's input and writes
/// large entries as several); skippable frames are skipped.
fn zstd_frames(mut raw: &[u8]) -> Result<Vec<u8>, String> {
    use ruzstd::decoding::errors::{FrameDecoderError, ReadFrameHeaderError};
    let mut out = Vec::new();
    while !raw.is_empty() {
        match ruzstd::decoding::StreamingDecoder::new(&mut raw) {
            Ok(dec) => {
                let room = MAX_ENTRY + 1 - (out.len() as u64).min(MAX_ENTRY);
                dec.take(room)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("not zstd data: {e}"))?;
                if out.len() as u64 > MAX_ENTRY {
                    return Err(format!("longer than {} MiB", MAX_ENTRY >> 20));
                }
            }
            Err(FrameDecoderError::ReadFrameHeaderError(ReadFrameHeaderError::SkipFrame {
                length,
                ..
            })) => {
                raw = raw
                    .get(length as usize..)
                    .ok_or("a skippable zstd frame past the end")?;
            }
            Err(e) => return Err(format!("not zstd data: {e}")),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{checks, fixture, read_into, Collect};
    use super::*;
    use std::collections::BTreeMap;

    fn run(paths: &[PathBuf], opts: &ReadOptions) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("inspect", paths, opts, false)
    }

    fn log(dir: &str, ext: &str) -> PathBuf {
        let dir = fixture(dir);
        let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| file_name(p).ends_with(ext))
            .collect();
        found.sort();
        found.remove(0)
    }

    /// Per problem (samples, correct), and the problems' correct counts the stub model gave
    /// (6, 0, 3, 5, 1, 4, 2, 6 of 6).
    fn counts(sink: &Collect) -> BTreeMap<String, (u32, Option<u32>)> {
        sink.counts()
            .into_iter()
            .map(|((_, p), c)| (p, c))
            .collect()
    }

    #[test]
    fn an_eval_archive_gives_every_epoch_and_its_score_zstd_or_deflate() {
        for dir in ["inspect/v0.3.285", "inspect/v0.3.100"] {
            let path = log(dir, ".eval");
            assert!(claims(&path), "{dir}");
            let (sink, out) = run(&[path], &ReadOptions::default());
            let summary = out.unwrap();
            let got: Vec<(u32, Option<u32>)> = counts(&sink).into_values().collect();
            let want = [6, 0, 3, 5, 1, 4, 2, 6].map(|c| (6, Some(c)));
            assert_eq!(got, want, "{dir}");
            assert_eq!(sink.datasets(), ["gpk_arith"]);
            assert!(sink.samples.iter().all(|s| s.model == "mockllm/model"));
            let s = sink
                .samples
                .iter()
                .find(|s| s.problem_id == "arith-01")
                .unwrap();
            assert_eq!(s.gold.as_deref(), Some("7/8"));
            assert!(s.question.as_deref().unwrap().starts_with("What is 3/4"));
            assert!(s.response.as_deref().unwrap().contains("\\boxed{"));
            // Both reducers' accuracy recomputed from the per-epoch verdicts.
            let done = checks(&sink, &summary);
            assert_eq!(done.len(), 2, "{done:?}");
            assert!(done.iter().all(|a| a.3), "{done:?}");
            let m = &summary.models["mockllm/model"];
            assert_eq!(
                (m.temperature, m.seed, m.nominal_n),
                (Some(0.7), Some(42), Some(6))
            );
        }
    }

    /// Logs written before `eval_id` (2024; inspect_ai's own tests/log/test_eval_log/
    /// log_formats.json at 499e6152 names its eval by `run_id` and `task_id` only) are found in
    /// a folder, not skipped; the same eval again in a re-written copy is refused, naming both.
    #[test]
    fn a_log_from_before_eval_id_is_found_in_a_folder_and_read_once() {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(log("inspect/v0.3.285", ".json")).unwrap();
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["eval"].as_object_mut().unwrap().remove("eval_id");
        let old = dir.path().join("old.json");
        std::fs::write(&old, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        assert!(claims(&old));
        let (sink, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default());
        out.unwrap();
        assert_eq!(sink.samples.len(), 12);
        let again = serde_json::to_string(&v).unwrap();
        std::fs::write(dir.path().join("again.json"), again).unwrap();
        let (_, out) = run(&[dir.path().to_path_buf()], &ReadOptions::default());
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("old.json hold the same Inspect eval (run_id"),
            "{e}"
        );
    }

    #[test]
    fn a_json_log_keeps_an_errored_sample_marked_and_the_scorer_can_be_named() {
        let path = log("inspect/v0.3.285", ".json");
        assert!(claims(&path));
        let (sink, out) = run(std::slice::from_ref(&path), &ReadOptions::default());
        let summary = out.unwrap();
        assert_eq!(sink.samples.len(), 12);
        let errored: Vec<&SourceSample> = sink
            .samples
            .iter()
            .filter(|s| s.errored.is_some())
            .collect();
        assert_eq!(errored.len(), 1);
        assert_eq!(
            (errored[0].problem_id.as_str(), errored[0].repeat),
            ("arith-02", Some(1))
        );
        assert_eq!(errored[0].verdict, None);
        assert!(errored[0]
            .errored
            .as_deref()
            .unwrap()
            .contains("connection reset"));
        assert!(
            summary.verdicts.contains("`includes`"),
            "{}",
            summary.verdicts
        );
        let mut opts = ReadOptions::default();
        opts.fields.insert("verdict".into(), "nope".into());
        let (sink, out) = run(&[path], &opts);
        out.unwrap();
        assert!(sink.samples.iter().all(|s| s.verdict.is_none()));
    }

    #[test]
    fn score_values_read_as_inspect_reads_them() {
        let v = |x: Value| score_verdict(&x);
        assert_eq!(v("C".into()), Ok(Some(true)));
        assert_eq!(v("I".into()), Ok(Some(false)));
        assert_eq!(v("N".into()), Ok(Some(false)));
        assert_eq!(v("P".into()), Ok(None));
        assert_eq!(v(1.into()), Ok(Some(true)));
        assert_eq!(v(0.5.into()), Ok(None));
        assert!(v(7.5.into()).is_err());
        assert!(v("NaN".into()).is_err());
        let mut l = Log {
            scorer: "s".into(),
            ..Log::default()
        };
        let sample = serde_json::json!({"id": 1, "epoch": 2, "input": "q", "target": ["a", "b"],
            "scores": {"s": {"value": {"x": "C", "y": "I"}}}});
        assert!(l
            .sample(&sample)
            .unwrap_err()
            .contains("--field verdict=s.KEY"));
        l.key = Some("y".into());
        let s = l.sample(&sample).unwrap();
        assert_eq!(
            (s.verdict, s.repeat, s.gold.as_deref()),
            (Some(false), Some(1), Some("a"))
        );
        assert_eq!(l.targets, 1);
    }

    #[test]
    fn a_sample_without_a_target_is_graded_by_its_score() {
        let mut l = Log {
            scorer: "model_graded_fact".into(),
            ..Log::default()
        };
        for (target, value, answer) in [
            (Value::String(String::new()), "C", Some("1")),
            (Value::Null, "I", Some("0")),
            (Value::String(" ".into()), "P", None),
        ] {
            let sample = serde_json::json!({"id": "a", "epoch": 1, "input": "q", "target": target,
                "output": {"choices": [{"message": {"role": "assistant", "content": "yo"}}]},
                "scores": {"model_graded_fact": {"value": value}}});
            let s = l.sample(&sample).unwrap();
            assert_eq!(
                (
                    s.gold.as_deref(),
                    s.answer.as_deref(),
                    s.response.as_deref()
                ),
                (Some("1"), answer, None),
                "{value}"
            );
        }
        assert_eq!(l.untargeted, 3);
        // A target graded by a model is a rubric: the score is the verdict too.
        let with = serde_json::json!({"id": "b", "input": "q", "target": "4",
            "scores": {"model_graded_fact": {"value": "C"}, "match": {"value": "I"}}});
        assert_eq!(l.sample(&with).unwrap().gold.as_deref(), Some("1"));
        l.scorer = "match".into();
        let s = l.sample(&with).unwrap();
        assert_eq!((s.gold.as_deref(), s.answer), (Some("4"), None));
        assert_eq!(l.untargeted, 4);
    }

    #[test]
    fn a_broken_archive_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.eval");
        std::fs::write(&path, b"PK\x03\x04 not really a zip").unwrap();
        let (_, out) = run(&[path], &ReadOptions::default());
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains("x.eval") && e.contains("not a zip archive"),
            "{e}"
        );
        assert!(zstd_frames(b"not zstd").is_err());
    }
}
