//! Reader of lighteval details (FORMATS.md §3): `details/<model>/<time>/details_<task>_<time>.parquet`,
//! both the v0.11+ `doc`/`model_response`/`metric` columns and the older
//! `predictions`/`gold`/`metrics` ones, with `results/<model>/results_<time>.json` beside them.
//!
//! lighteval keeps one metric value per document, never per sample: the samples carry no source
//! verdict. A metric that is the mean over a document's K samples (`pass@k:k=1&n=K`,
//! `math_pass@1:K_samples`) gives its correct count c, from which the stored aggregates are
//! recomputed exactly; others are checked as the mean of their per-document values.

use super::files::{file_name, files_under, json_text};
use super::metric::{mean_over_problems, PaperMetric};
use super::source::{
    At, ImportError, Reader, Recompute, Role, Sink, SourceSample, SourceSummary, Stored,
};
use super::stream::small_json;
use crate::rundir::provenance::SourceSettings;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use parquet::schema::types::{Type, TypePtr};
use regex::Regex;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock};

/// `details_<task>_<date id>.parquet`; the task holds `|`, `:` and `_`, the date id does not.
static DETAILS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^details_(.+)_(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d+)\.parquet$")
        .expect("the details file name pattern is valid")
});

/// lighteval details.
pub static READER: Reader = Reader {
    name: "lighteval",
    about: "lighteval --save-details: details/<model>/<time>/details_<task>_<time>.parquet with results/",
    fields: &[],
    claims,
    read: |paths, _, sink| read(paths, sink),
};

/// Whether lighteval wrote `path`: a details file name and Parquet's magic bytes.
fn claims(path: &Path) -> bool {
    if !DETAILS.is_match(&file_name(path)) {
        return false;
    }
    let mut magic = [0u8; 4];
    crate::util::open_regular(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok_and(|()| &magic == b"PAR1")
}

/// One details file and what its path says.
#[derive(Debug, Clone)]
struct Details {
    path: PathBuf,
    /// `gpk_arith|0`, `custom|gpk_arith|0`.
    task: String,
    date: String,
    /// The model as its folders spell it (`org/model` is two folders).
    folder_model: Option<String>,
    /// `<output_dir>/results/<model>/results_<date>.json`, when it exists.
    results: Option<PathBuf>,
}

fn details(path: PathBuf) -> Option<Details> {
    let name = file_name(&path);
    let caps = DETAILS.captures(&name)?;
    let (task, date) = (caps[1].to_string(), caps[2].to_string());
    // The folders between `details/` and the `<date>/` folder name the model.
    let comps: Vec<String> = path
        .parent()?
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let at = comps.iter().rposition(|c| c == "details");
    let (folder_model, results) = match at {
        Some(i) if comps.len() > i + 2 => {
            let model_parts = &comps[i + 1..comps.len() - 1];
            let mut output = path.parent()?.to_path_buf();
            for _ in i..comps.len() {
                output.pop();
            }
            let mut r = output.join("results");
            model_parts.iter().for_each(|p| r.push(p));
            let r = r.join(format!("results_{date}.json"));
            (Some(model_parts.join("/")), r.is_file().then_some(r))
        }
        _ => (None, None),
    };
    Some(Details {
        path,
        task,
        date,
        folder_model,
        results,
    })
}

/// The task's bare name: `gpk_arith` for `custom|gpk_arith|0` or `gpk_arith|0`.
fn bare_task(task: &str) -> &str {
    let parts: Vec<&str> = task.split('|').collect();
    match parts.len() {
        3 => parts[1],
        2 => parts[0],
        _ => task,
    }
}

/// Streams the files under `paths` into `sink`, each task a dataset of its own.
fn read(paths: &[PathBuf], sink: &mut dyn Sink) -> Result<SourceSummary, ImportError> {
    let mut summary = SourceSummary::default();
    let found: Vec<Details> = files_under(paths, |p| DETAILS.is_match(&file_name(p)))?
        .into_iter()
        .filter_map(details)
        .collect();
    if found.is_empty() {
        return Err(ImportError::Input(format!(
            "no lighteval details_<task>_<time>.parquet under {}",
            (paths.iter().map(|p| p.display().to_string()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut layouts = BTreeSet::new();
    for d in &found {
        let results = d.results.as_deref().map(small_json).transpose()?;
        let model = model_name(d, results.as_ref());
        if !sink.wants(&d.path, Some(&model), Some(bare_task(&d.task))) {
            continue;
        }
        let file = sink.open(&d.path, Role::Samples)?;
        if let Some(r) = &d.results {
            let results = sink.open(r, Role::Side)?;
            sink.belongs(results, bare_task(&d.task));
        }
        let mut read = Read1 {
            d,
            model: &model,
            file,
            docs: Vec::new(),
            num_samples: BTreeSet::new(),
            layout: None,
        };
        // The Parquet record reader panics on some malformed files instead of failing: that is
        // still a bad input file, not a crash.
        let rows = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read.rows(sink)));
        rows.map_err(|_| ImportError::Bad {
            path: d.path.clone(),
            at: At::File,
            message: "the Parquet reader failed on it (a malformed file)".into(),
        })??;
        layouts.extend(read.layout);
        let task = bare_task(&d.task);
        let settings = settings(results.as_ref(), &read.num_samples, (task, &mut summary));
        summary.models.entry(model.clone()).or_insert(settings);
        match &results {
            Some(r) => aggregates(d, &model, r, &read.docs, &mut summary),
            None => summary.note(
                task,
                format!(
                    "{}: no results_{}.json beside it: no stored aggregate to check",
                    d.path.display(),
                    d.date
                ),
            ),
        }
    }
    summary.layout = layouts.into_iter().collect::<Vec<_>>().join("; ");
    summary.verdicts = "none per sample: lighteval keeps one metric value per document; a mean over the K samples (pass@k:k=1&n=K, math_pass@1:K_samples) gives each document's correct count c, used only to recompute the stored aggregates".into();
    Ok(summary)
}

/// `config_general.model_name` of the results, else the details folders.
fn model_name(d: &Details, results: Option<&Value>) -> String {
    results
        .and_then(|r| r.pointer("/config_general/model_name"))
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| d.folder_model.clone())
        .unwrap_or_else(|| "lighteval-model".into())
}

/// One document's metric values and sample count, for the aggregates.
#[derive(Debug)]
struct Doc {
    n: u64,
    metrics: Map<String, Value>,
}

/// Reading one details file.
struct Read1<'a> {
    d: &'a Details,
    model: &'a str,
    file: usize,
    docs: Vec<Doc>,
    num_samples: BTreeSet<u64>,
    layout: Option<&'static str>,
}

impl Read1<'_> {
    fn rows(&mut self, sink: &mut dyn Sink) -> Result<(), ImportError> {
        let path = self.d.path.clone();
        let bad = |message: String| ImportError::Bad {
            path: path.clone(),
            at: At::File,
            message,
        };
        let f = crate::util::open_regular(&path).map_err(ImportError::io("read", &path))?;
        let reader =
            SerializedFileReader::new(f).map_err(|e| bad(format!("not a Parquet file: {e}")))?;
        let root = reader.metadata().file_metadata().schema().clone();
        let names: BTreeSet<&str> = root.get_fields().iter().map(|f| f.name()).collect();
        let (layout, keep): (_, Columns) = if names.contains("model_response") {
            (
                "lighteval ≥ 0.11: doc / model_response / metric",
                NEW_COLUMNS,
            )
        } else if names.contains("predictions") {
            (
                "lighteval ≤ 0.10: predictions / gold / metrics",
                OLD_COLUMNS,
            )
        } else {
            return Err(bad(format!("not a lighteval details file: no model_response nor predictions column among {names:?}")));
        };
        self.layout = Some(layout);
        let projection =
            project(&root, keep).map_err(|e| bad(format!("cannot select its columns: {e}")))?;
        let mut row_at = 0u64;
        for g in 0..reader.num_row_groups() {
            let group = reader
                .get_row_group(g)
                .map_err(|e| bad(format!("row group {g}: {e}")))?;
            let rows = group
                .get_row_iter(Some(projection.clone()))
                .map_err(|e| bad(format!("row group {g}: {e}")))?;
            for row in rows {
                let at = row_at;
                row_at += 1;
                match row {
                    Ok(r) => self.row(sink, at, row_json(&r))?,
                    Err(e) => sink.bad(self.file, At::Row(at), format!("unreadable row: {e}"))?,
                }
            }
        }
        Ok(())
    }

    fn row(&mut self, sink: &mut dyn Sink, at: u64, v: Value) -> Result<(), ImportError> {
        let parsed = if v.get("model_response").is_some() {
            new_row(&v)
        } else {
            old_row(&v, at)
        };
        let r = match parsed {
            Ok(r) => r,
            Err(m) => return sink.bad(self.file, At::Row(at), m),
        };
        self.num_samples.extend(r.num_samples);
        let problem_id = r.id;
        self.docs.push(Doc {
            n: r.texts.len() as u64,
            metrics: r.metrics,
        });
        for (i, text) in r.texts.into_iter().enumerate() {
            sink.sample(SourceSample {
                model: self.model.to_string(),
                dataset: bare_task(&self.d.task).to_string(),
                problem_id: problem_id.clone(),
                question: r.question.clone(),
                gold: r.gold.clone(),
                repeat: u32::try_from(i).ok(),
                response: Some(text),
                file: self.file,
                at: At::Row(at),
                ..SourceSample::default()
            })?;
        }
        Ok(())
    }
}

/// Top-level columns read, each whole (None) or only some of its struct fields.
type Columns = &'static [(&'static str, Option<&'static [&'static str]>)];

/// The columns read (others, such as logits and tokens, are never decoded).
const NEW_COLUMNS: Columns = &[
    (
        "doc",
        Some(&[
            "query",
            "choices",
            "gold_index",
            "id",
            "num_samples",
            "generation_size",
        ]),
    ),
    ("metric", None),
    ("model_response", Some(&["text"])),
];
const OLD_COLUMNS: Columns = &[
    ("example", None),
    ("gold", None),
    ("metrics", None),
    ("predictions", None),
];

/// The file schema cut to `keep`: top-level columns by name, a struct column to some of its
/// fields (`None`: whole). Columns a file lacks are left out.
fn project(root: &Type, keep: Columns) -> parquet::errors::Result<Type> {
    let mut fields: Vec<TypePtr> = Vec::new();
    for f in root.get_fields() {
        let Some((_, sub)) = keep.iter().find(|(n, _)| *n == f.name()) else {
            continue;
        };
        match sub {
            Some(sub) if f.is_group() => {
                let children: Vec<TypePtr> = f
                    .get_fields()
                    .iter()
                    .filter(|c| sub.contains(&c.name()))
                    .cloned()
                    .collect();
                let info = f.get_basic_info();
                let mut b = Type::group_type_builder(f.name())
                    .with_fields(children)
                    .with_logical_type(info.logical_type_ref().cloned())
                    .with_converted_type(info.converted_type());
                if info.has_repetition() {
                    b = b.with_repetition(info.repetition());
                }
                fields.push(Arc::new(b.build()?));
            }
            _ => fields.push(f.clone()),
        }
    }
    Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()
}

/// A Parquet row as JSON (nested structs as objects, lists as arrays).
fn row_json(row: &parquet::record::Row) -> Value {
    Value::Object(
        row.get_column_iter()
            .map(|(k, f)| (k.clone(), field_json(f)))
            .collect(),
    )
}

fn field_json(f: &Field) -> Value {
    let float = |x: f64| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number);
    match f {
        Field::Null => Value::Null,
        Field::Bool(b) => Value::Bool(*b),
        Field::Byte(n) => Value::from(*n),
        Field::Short(n) => Value::from(*n),
        Field::Int(n) => Value::from(*n),
        Field::Long(n) => Value::from(*n),
        Field::UByte(n) => Value::from(*n),
        Field::UShort(n) => Value::from(*n),
        Field::UInt(n) => Value::from(*n),
        Field::ULong(n) => Value::from(*n),
        Field::Float16(x) => float(f64::from(*x)),
        Field::Float(x) => float(f64::from(*x)),
        Field::Double(x) => float(*x),
        Field::Str(s) => Value::String(s.clone()),
        Field::Bytes(b) => Value::String(String::from_utf8_lossy(b.data()).into_owned()),
        Field::Group(r) => row_json(r),
        Field::ListInternal(l) => Value::Array(l.elements().iter().map(field_json).collect()),
        Field::MapInternal(m) => Value::Object(
            m.entries()
                .iter()
                .map(|(k, v)| (json_text(&field_json(k)).unwrap_or_default(), field_json(v)))
                .collect(),
        ),
        other => Value::String(other.to_string()),
    }
}

/// What one document row gives.
struct RowData {
    id: String,
    question: Option<String>,
    gold: Option<String>,
    texts: Vec<String>,
    metrics: Map<String, Value>,
    num_samples: Option<u64>,
}

fn texts(v: Option<&Value>, what: &str) -> Result<Vec<String>, String> {
    v.and_then(Value::as_array)
        .ok_or_else(|| format!("no `{what}` list"))?
        .iter()
        .map(|t| {
            t.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("`{what}` holds a non-text entry"))
        })
        .collect()
}

/// v0.11+: `doc.id`, `doc.choices[doc.gold_index]`, `model_response.text`, `metric`.
fn new_row(v: &Value) -> Result<RowData, String> {
    let doc = v
        .get("doc")
        .filter(|d| d.is_object())
        .ok_or("no `doc` struct")?;
    let id = doc.get("id").and_then(json_text).ok_or("no `doc.id`")?;
    let gold_index = match doc.get("gold_index") {
        Some(Value::Array(a)) => a.first().and_then(Value::as_u64),
        Some(x) => x.as_u64(),
        None => None,
    };
    let gold = gold_index
        .and_then(|i| doc.get("choices")?.get(i as usize))
        .and_then(json_text);
    Ok(RowData {
        id,
        question: doc.get("query").and_then(json_text),
        gold,
        texts: texts(v.pointer("/model_response/text"), "model_response.text")?,
        metrics: v
            .get("metric")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        num_samples: doc.get("num_samples").and_then(Value::as_u64),
    })
}

/// ≤ 0.10: no id (the row position is the document), `gold[0]`, `predictions`, `metrics`.
fn old_row(v: &Value, at: u64) -> Result<RowData, String> {
    Ok(RowData {
        id: at.to_string(),
        question: v.get("example").and_then(json_text),
        gold: v
            .get("gold")
            .and_then(|g| g.get(0).or(Some(g)))
            .and_then(json_text),
        texts: texts(v.get("predictions"), "predictions")?,
        metrics: v
            .get("metrics")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        num_samples: None,
    })
}

/// The model's settings as the results file recorded them (0.11+: the model config's
/// `generation_parameters`, whose defaults are written too).
fn settings(
    results: Option<&Value>,
    num_samples: &BTreeSet<u64>,
    (task, summary): (&str, &mut SourceSummary),
) -> SourceSettings {
    let params =
        results.and_then(|r| r.pointer("/config_general/model_config/generation_parameters"));
    let get = |k: &str| params.and_then(|p| p.get(k)).filter(|v| !v.is_null());
    let mut recorded = Map::new();
    if let Some(p) = params.and_then(Value::as_object) {
        let set: Map<String, Value> = p
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        recorded.insert("generation_parameters".into(), Value::Object(set));
        summary.note(task,
            "lighteval records the model config's generation_parameters, defaults included: a temperature of 0 there may not be what produced several different samples",
        );
    }
    if num_samples.len() > 1 {
        summary.note(
            task,
            format!("documents ask for different numbers of samples: {num_samples:?}"),
        );
    }
    SourceSettings {
        temperature: get("temperature").and_then(Value::as_f64),
        top_p: get("top_p").and_then(Value::as_f64),
        max_tokens: get("max_new_tokens")
            .and_then(Value::as_u64)
            .and_then(|m| u32::try_from(m).ok()),
        seed: get("seed").and_then(Value::as_u64),
        nominal_n: (num_samples.len() == 1)
            .then(|| num_samples.first().copied())
            .flatten()
            .and_then(|n| u32::try_from(n).ok()),
        recorded: if recorded.is_empty() {
            Value::Null
        } else {
            Value::Object(recorded)
        },
    }
}

/// Each document's c, when one metric is a mean over exactly its K samples for every document.
fn correct_counts(docs: &[Doc]) -> Option<(String, Vec<(u64, u64)>)> {
    let names: BTreeSet<&String> = docs.iter().flat_map(|d| d.metrics.keys()).collect();
    names.into_iter().find_map(|name| {
        let k = PaperMetric::samples_in_mean(name)?;
        let counts: Option<Vec<(u64, u64)>> = docs
            .iter()
            .map(|d| {
                let v = d.metrics.get(name)?.as_f64()?;
                let c = (v * k as f64).round();
                let exact = (v * k as f64 - c).abs() < 1e-6 && d.n == k && c >= 0.0;
                exact.then_some((d.n, c as u64))
            })
            .collect();
        Some((name.clone(), counts?))
    })
}

/// The stored `results[<task>]` values, each recomputed from the per-document metrics.
fn aggregates(
    d: &Details,
    model: &str,
    results: &Value,
    docs: &[Doc],
    summary: &mut SourceSummary,
) {
    let Some(stored) = results
        .get("results")
        .and_then(|r| r.get(&d.task))
        .and_then(Value::as_object)
    else {
        let text = format!("results_{}.json holds no results for {}", d.date, d.task);
        summary.note(bare_task(&d.task), text);
        return;
    };
    let counts = correct_counts(docs);
    for (name, value) in stored {
        let Some(value) = value.as_f64().filter(|_| !name.ends_with("_stderr")) else {
            continue;
        };
        let (recomputed, basis) = recompute(name, docs, counts.as_ref());
        summary.aggregates.push(Stored {
            model: model.to_string(),
            dataset: bare_task(&d.task).to_string(),
            name: format!("{}: {name}", d.task),
            value,
            recompute: Recompute::Done {
                value: recomputed,
                basis,
            },
        });
    }
}

fn recompute(
    name: &str,
    docs: &[Doc],
    counts: Option<&(String, Vec<(u64, u64)>)>,
) -> (Option<f64>, String) {
    if let (Some(metric), Some((from, c))) = (PaperMetric::parse(name), counts) {
        // A document's c of n, as verdicts (their order does not matter to these metrics).
        let docs: Vec<Vec<bool>> = (c.iter())
            .map(|&(n, c)| (0..n).map(|i| i < c).collect())
            .collect();
        return match mean_over_problems(&docs, &metric) {
            Ok(v) => (
                Some(v),
                format!(
                    "mean of exact {} over {} documents, c of each from `{from}` × n",
                    metric.label(),
                    c.len()
                ),
            ),
            Err(e) => (None, e),
        };
    }
    let values: Vec<f64> = docs
        .iter()
        .filter_map(|d| d.metrics.get(name)?.as_f64())
        .collect();
    if values.is_empty() {
        return (None, format!("no document of the details carries `{name}`"));
    }
    let mean = values.iter().sum::<f64>() / values.len() as f64;
    (
        Some(mean),
        format!(
            "mean of the per-document `{name}` over {} of {} documents",
            values.len(),
            docs.len()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::super::source::ReadOptions;
    use super::super::testing::{self, checks, fixture, read_into, Collect};
    use super::*;
    use std::collections::BTreeMap;

    fn expected(v: &str) -> Value {
        testing::expected(&format!("lighteval/{v}"))
    }

    fn run(paths: &[PathBuf], skip_bad: bool) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("lighteval", paths, &ReadOptions::default(), skip_bad)
    }

    /// Per problem: (samples, None): lighteval has no per-sample verdict.
    fn expected_counts(
        e: &Value,
        model: &str,
        id: impl Fn(&Value) -> String,
    ) -> BTreeMap<(String, String), (u32, Option<u32>)> {
        e["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    (model.to_string(), id(p)),
                    (p["samples"].as_u64().unwrap() as u32, None),
                )
            })
            .collect()
    }

    fn check_aggregates(
        sink: &Collect,
        summary: &SourceSummary,
        stored: &Map<String, Value>,
        task: &str,
    ) {
        let want: Vec<&String> = stored.keys().filter(|k| !k.ends_with("_stderr")).collect();
        let done = checks(sink, summary);
        assert_eq!(done.len(), want.len());
        for a in &done {
            let name = a.0.strip_prefix(&format!("{task}: ")).unwrap();
            assert_eq!(a.1, stored[name].as_f64().unwrap());
            assert!(a.3, "{a:?}");
        }
    }

    #[test]
    fn v0_13_details_are_read_out_of_order_with_settings_and_aggregates() {
        let e = expected("v0.13.0");
        let (sink, out) = run(&[fixture("lighteval/v0.13.0")], false);
        let summary = out.unwrap();
        assert_eq!(
            sink.counts(),
            expected_counts(&e, "stub-math", |p| p["doc_id"]
                .as_str()
                .unwrap()
                .to_string())
        );
        assert!(sink.samples.iter().all(|s| s.verdict.is_none()));
        // Rows are not in document order: the first row is document 3.
        assert_eq!(
            (sink.samples[0].problem_id.as_str(), &sink.samples[0].at),
            ("3", &At::Row(0))
        );
        assert_eq!(sink.samples[0].gold.as_deref(), Some("7"));
        let stored = e["aggregates"]["gpk_arith|0"].as_object().unwrap();
        check_aggregates(&sink, &summary, stored, "gpk_arith|0");
        // G-Pass@4_0.5 from expected.json's c per document, by the definition.
        let tau = "0.5".parse().unwrap();
        let mut sum = 0.0;
        for p in e["problems"].as_array().unwrap() {
            let c = p["correct"].as_u64().unwrap();
            sum += crate::metrics::to_f64(&crate::metrics::g_pass_at_k(6, c, 4, &tau).unwrap());
        }
        let a = summary
            .aggregates
            .iter()
            .find(|a| a.name.ends_with("math_g-pass@4_0.5"))
            .unwrap();
        let Recompute::Done { value, basis } = &a.recompute else {
            panic!("{a:?}")
        };
        assert!((value.unwrap() - sum / 8.0).abs() < 1e-12);
        assert!(basis.contains("pass@k:k=1&n=6"), "{basis}");
        let s = &summary.models["stub-math"];
        assert_eq!(
            (s.temperature, s.nominal_n, s.max_tokens),
            (Some(0.0), Some(6), None)
        );
        assert_eq!(sink.datasets(), ["gpk_arith"]);
        assert!(summary.verdicts.starts_with("none per sample"));
    }

    #[test]
    fn v0_10_predictions_key_documents_by_row_and_name_the_model_from_results() {
        let e = expected("v0.10-predictions");
        let (sink, out) = run(&[fixture("lighteval/v0.10-predictions")], false);
        let summary = out.unwrap();
        assert_eq!(
            sink.counts(),
            expected_counts(&e, "stub-org/stub-math", |p| p["row"]
                .as_u64()
                .unwrap()
                .to_string())
        );
        let stored = e["aggregates"]["custom|gpk_arith|0"].as_object().unwrap();
        check_aggregates(&sink, &summary, stored, "custom|gpk_arith|0");
        assert!(summary.layout.contains("0.10"));
        assert_eq!(
            summary.models["stub-org/stub-math"],
            SourceSettings::default()
        );
    }

    /// A details file with `predictions` as plain text (not a list), written with parquet's own writer.
    fn write_flat(path: &Path) {
        use parquet::data_type::{ByteArray, ByteArrayType};
        use parquet::file::properties::WriterProperties;
        use parquet::file::writer::SerializedFileWriter;
        let schema = parquet::schema::parser::parse_message_type(
            "message schema { REQUIRED BYTE_ARRAY example (UTF8); REQUIRED BYTE_ARRAY predictions (UTF8); }",
        )
        .unwrap();
        let f = std::fs::File::create(path).unwrap();
        let mut w = SerializedFileWriter::new(
            f,
            Arc::new(schema),
            Arc::new(WriterProperties::builder().build()),
        )
        .unwrap();
        let mut rg = w.next_row_group().unwrap();
        while let Some(mut col) = rg.next_column().unwrap() {
            let vals = [ByteArray::from("a"), ByteArray::from("b")];
            col.typed::<ByteArrayType>()
                .write_batch(&vals, None, None)
                .unwrap();
            col.close().unwrap();
        }
        rg.close().unwrap();
        w.close().unwrap();
    }

    #[test]
    fn malformed_rows_and_files_are_named() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("details/m/2026-01-01T00-00-00.000001");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("details_t|0_2026-01-01T00-00-00.000001.parquet");
        write_flat(&path);
        let (_, out) = run(&[tmp.path().to_path_buf()], false);
        let e = out.unwrap_err().to_string();
        assert!(
            e.contains(
                "details_t|0_2026-01-01T00-00-00.000001.parquet: row 0: no `predictions` list"
            ),
            "{e}"
        );
        let (sink, out) = run(&[tmp.path().to_path_buf()], true);
        out.unwrap();
        assert_eq!((sink.samples.len(), sink.bad.len()), (0, 2));
        std::fs::write(&path, b"PAR1 not really").unwrap();
        let (_, out) = run(&[tmp.path().to_path_buf()], true);
        assert!(out.unwrap_err().to_string().contains("not a Parquet file"));
    }

    #[test]
    fn names_and_metrics_parse() {
        let f = fixture("lighteval/v0.13.0/details/stub-math/2026-12-01T16-39-42.312246/details_gpk_arith|0_2026-12-01T16-39-42.312246.parquet");
        assert!(claims(&f));
        assert!(!claims(&fixture("lighteval/v0.13.0/expected.json")));
        let d = details(f).unwrap();
        assert_eq!(
            (d.task.as_str(), d.folder_model.as_deref()),
            ("gpk_arith|0", Some("stub-math"))
        );
        assert!(d.results.is_some());
        assert_eq!(bare_task("custom|gpk_arith|0"), "gpk_arith");
    }
}
