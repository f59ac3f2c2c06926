//! Reader of generic JSON Lines sample logs: one sample per line, or one problem per line with
//! parallel lists (responses, and optionally verdicts and extracted answers), under a field
//! mapping (`--field problem_id=… --field response=…`) whose defaults are gpassk's own names.

use super::files::{distinct_files, file_name, files_under, json_text, verdict};
use super::source::{
    At, ImportError, ReadOptions, Reader, Role, Sink, SourceSample, SourceSummary,
};
use super::stream::{first_line, json_lines};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Any JSON Lines sample log.
pub static READER: Reader = Reader {
    name: "jsonl",
    about: "any JSON Lines file: a sample per line, or a problem per line with a list (--field names the fields)",
    fields: &KEYS,
    claims,
    read,
};

/// The mapping keys, as `--field` takes them.
const KEYS: [&str; 10] = [
    "problem_id",
    "response",
    "gold",
    "question",
    "model",
    "verdict",
    "extracted",
    "repeat",
    "subset",
    "dataset",
];

/// The mapping keys and the field each reads by default. `response` is special: by default a
/// string `response` is one sample and a list `responses` is one problem's samples.
const DEFAULTS: [(&str, &str); 10] = [
    ("problem_id", "problem_id"),
    ("response", "response"),
    ("gold", "gold"),
    ("question", "question"),
    ("model", "model"),
    ("verdict", "correct"),
    ("extracted", "extracted"),
    ("repeat", "sample_index"),
    ("subset", "subset"),
    ("dataset", "dataset"),
];

/// The list field read when `response` is not mapped and a line has no string `response`.
const DEFAULT_LIST: &str = "responses";

/// Whether `path` looks like a generic sample log: a `.jsonl` whose first line has
/// `problem_id` and a string `response` or a list `responses`.
fn claims(path: &Path) -> bool {
    if !file_name(path).ends_with(".jsonl") {
        return false;
    }
    first_line(path).is_some_and(|v| {
        v.get("problem_id")
            .is_some_and(|p| p.is_string() || p.is_number())
            && (v.get("response").is_some_and(Value::is_string)
                || v.get(DEFAULT_LIST).is_some_and(Value::is_array))
    })
}

/// Streams the `.jsonl` files under `paths` into `sink`.
fn read(
    paths: &[PathBuf],
    opts: &ReadOptions,
    sink: &mut dyn Sink,
) -> Result<SourceSummary, ImportError> {
    let fields = Fields::new(opts)?;
    let files = distinct_files(files_under(paths, |p| file_name(p).ends_with(".jsonl"))?);
    if files.is_empty() {
        return Err(ImportError::Input(format!(
            "jsonl: no .jsonl file in {}",
            paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut reader = Lines {
        fields: &fields,
        opts,
        tally: Tally::default(),
    };
    for path in &files {
        let file = sink.open(path, Role::Samples)?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "model".into());
        json_lines(sink, file, |sink, line, v| {
            let ctx = Place {
                file,
                line,
                stem: &stem,
            };
            reader.line(sink, &ctx, &v)
        })?;
    }
    Ok(reader.tally.summary(&fields))
}

/// Which field holds what, after `--field` mappings.
struct Fields {
    names: BTreeMap<&'static str, String>,
    /// Whether `response` was mapped (then its value decides the line's shape by its type).
    response_mapped: bool,
}

impl Fields {
    fn new(opts: &ReadOptions) -> Result<Fields, ImportError> {
        let names = DEFAULTS
            .iter()
            .map(|(k, d)| {
                (
                    *k,
                    opts.fields
                        .get(*k)
                        .cloned()
                        .unwrap_or_else(|| d.to_string()),
                )
            })
            .collect();
        Ok(Fields {
            names,
            response_mapped: opts.fields.contains_key("response"),
        })
    }

    /// The field name of `key` (every key has one: the defaults cover them all).
    fn name(&self, key: &str) -> &str {
        self.names.get(key).map_or("", String::as_str)
    }

    /// The line's value of `key`'s field (null counts as absent).
    fn get<'v>(&self, v: &'v Value, key: &str) -> Option<&'v Value> {
        lookup(v, self.name(key))
    }
}

/// A field by name, or by a dotted path into nested objects and lists (`doc.id`, `choices.0`)
/// when no field has the whole name.
fn lookup<'v>(v: &'v Value, name: &str) -> Option<&'v Value> {
    if let Some(x) = v.get(name) {
        return (!x.is_null()).then_some(x);
    }
    if !name.contains('.') {
        return None;
    }
    let mut cur = v;
    for part in name.split('.') {
        cur = match cur {
            Value::Object(m) => m.get(part)?,
            Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    (!cur.is_null()).then_some(cur)
}

/// Where a line is, and the file's stem (the model's name when nothing else names it).
struct Place<'a> {
    file: usize,
    line: u64,
    stem: &'a str,
}

/// What the reader counted, for the summary.
#[derive(Default)]
struct Tally {
    single: u64,
    lists: u64,
    samples: u64,
    verdicts: u64,
    models: BTreeSet<String>,
}

impl Tally {
    fn summary(self, fields: &Fields) -> SourceSummary {
        let layout = match (self.single > 0, self.lists > 0) {
            (true, false) => "generic JSONL, one sample per line",
            (false, true) => "generic JSONL, one problem per line (parallel lists)",
            _ => "generic JSONL, samples per line and problems per line",
        };
        let field = fields.name("verdict");
        let verdicts = if self.verdicts == 0 {
            format!("none: no line has a `{field}` field (name the verdict field with --field verdict=NAME)")
        } else {
            format!(
                "the `{field}` field of each sample ({} of {} samples have one)",
                self.verdicts, self.samples
            )
        };
        SourceSummary {
            layout: layout.into(),
            models: self
                .models
                .into_iter()
                .map(|m| (m, Default::default()))
                .collect(),
            aggregates: Vec::new(),
            verdicts,
            ks: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// What one line holds, before it becomes samples.
struct Parsed {
    problem_id: String,
    model: String,
    dataset: String,
    question: Option<String>,
    gold: Option<String>,
    subset: Option<String>,
}

/// Reads lines into samples, counting what it saw.
struct Lines<'a> {
    fields: &'a Fields,
    opts: &'a ReadOptions,
    tally: Tally,
}

impl Lines<'_> {
    fn line(&mut self, sink: &mut dyn Sink, ctx: &Place, v: &Value) -> Result<(), ImportError> {
        let (fields, opts) = (self.fields, self.opts);
        let at = At::Line(ctx.line);
        if !v.is_object() {
            return sink.bad(ctx.file, at, "not a JSON object".into());
        }
        let pid_field = fields.name("problem_id");
        let problem_id = match fields.get(v, "problem_id") {
            Some(p @ (Value::String(_) | Value::Number(_))) => json_text(p).unwrap_or_default(),
            Some(_) => {
                let m = format!("field `{pid_field}` is not a string or number");
                return sink.bad(ctx.file, at, m);
            }
            None => {
                let m = format!("no `{pid_field}` field (name the problem id field with --field problem_id=NAME)");
                return sink.bad(ctx.file, at, m);
            }
        };
        let model = match fields.get(v, "model").and_then(json_text) {
            Some(m) => m,
            None => opts.model.clone().unwrap_or_else(|| ctx.stem.to_string()),
        };
        let text = |key: &str| fields.get(v, key).and_then(json_text);
        let parsed = Parsed {
            problem_id,
            model,
            dataset: text("dataset").unwrap_or_default(),
            question: text("question"),
            gold: text("gold"),
            subset: text("subset"),
        };
        match response_field(fields, v) {
            Some((Value::String(r), _)) => self.one_sample(sink, ctx, v, parsed, r.clone()),
            Some((Value::Array(list), name)) => self.problem_line(sink, ctx, v, parsed, list, name),
            Some((_, name)) => {
                let m = format!(
                    "field `{name}` is not a string (one sample) or a list (one problem's samples)"
                );
                sink.bad(ctx.file, at, m)
            }
            None => {
                let m = if fields.response_mapped {
                    format!("no `{}` field", fields.name("response"))
                } else {
                    format!("no `response` (one sample) or `{DEFAULT_LIST}` (a list) field (name it with --field response=NAME)")
                };
                sink.bad(ctx.file, at, m)
            }
        }
    }

    fn one_sample(
        &mut self,
        sink: &mut dyn Sink,
        ctx: &Place,
        v: &Value,
        p: Parsed,
        response: String,
    ) -> Result<(), ImportError> {
        let fields = self.fields;
        let at = At::Line(ctx.line);
        let verdict = match fields.get(v, "verdict").map(verdict) {
            None => None,
            Some(Ok(b)) => b,
            Some(Err(why)) => {
                let m = format!("field `{}`: {why}", fields.name("verdict"));
                return sink.bad(ctx.file, at, m);
            }
        };
        let repeat = match fields.get(v, "repeat") {
            None => None,
            Some(x) => match x.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) => Some(n),
                None => {
                    let m = format!(
                        "field `{}` is not a sample number: {x}",
                        fields.name("repeat")
                    );
                    return sink.bad(ctx.file, at, m);
                }
            },
        };
        self.tally.single += 1;
        self.tally.samples += 1;
        self.tally.verdicts += verdict.is_some() as u64;
        self.tally.models.insert(p.model.clone());
        sink.sample(SourceSample {
            model: p.model,
            dataset: p.dataset,
            problem_id: p.problem_id,
            question: p.question,
            gold: p.gold,
            subset: p.subset,
            repeat,
            response: Some(response),
            extracted: fields.get(v, "extracted").and_then(json_text),
            verdict,
            file: ctx.file,
            at,
            ..SourceSample::default()
        })
    }

    /// One problem's samples from parallel lists; a verdict or extracted list of another length is a
    /// malformed line.
    fn problem_line(
        &mut self,
        sink: &mut dyn Sink,
        ctx: &Place,
        v: &Value,
        p: Parsed,
        responses: &[Value],
        response_name: &str,
    ) -> Result<(), ImportError> {
        let fields = self.fields;
        let at = At::Line(ctx.line);
        let mut texts = Vec::with_capacity(responses.len());
        for (i, r) in responses.iter().enumerate() {
            match r.as_str() {
                Some(s) => texts.push(s.to_string()),
                None => {
                    let m = format!("`{response_name}[{i}]` is not a string");
                    return sink.bad(ctx.file, at, m);
                }
            }
        }
        let verdicts = match parallel(fields, v, "verdict", texts.len(), response_name, verdict) {
            Ok(list) => list,
            Err(m) => return sink.bad(ctx.file, at, m),
        };
        let extracted = match parallel(fields, v, "extracted", texts.len(), response_name, |x| {
            Ok(json_text(x))
        }) {
            Ok(list) => list,
            Err(m) => return sink.bad(ctx.file, at, m),
        };
        self.tally.lists += 1;
        self.tally.models.insert(p.model.clone());
        for (i, response) in texts.into_iter().enumerate() {
            let verdict = verdicts.as_ref().and_then(|l| l.get(i).copied().flatten());
            self.tally.samples += 1;
            self.tally.verdicts += verdict.is_some() as u64;
            sink.sample(SourceSample {
                model: p.model.clone(),
                dataset: p.dataset.clone(),
                problem_id: p.problem_id.clone(),
                question: p.question.clone(),
                gold: p.gold.clone(),
                subset: p.subset.clone(),
                repeat: u32::try_from(i).ok(),
                response: Some(response),
                extracted: extracted.as_ref().and_then(|l| l.get(i).cloned().flatten()),
                verdict,
                file: ctx.file,
                at: at.clone(),
                ..SourceSample::default()
            })?;
        }
        Ok(())
    }
}

/// The response value and its field's name: the mapped field, or by default a string
/// `response` else a list `responses`.
fn response_field<'v, 'f>(fields: &'f Fields, v: &'v Value) -> Option<(&'v Value, &'f str)> {
    let name = fields.name("response");
    if fields.response_mapped {
        return lookup(v, name).map(|r| (r, name));
    }
    match lookup(v, name) {
        Some(r @ Value::String(_)) => Some((r, name)),
        _ => lookup(v, DEFAULT_LIST)
            .map(|r| (r, DEFAULT_LIST))
            .or_else(|| lookup(v, name).map(|r| (r, name))),
    }
}

/// The list field `key` read element by element with `each` (null elements give None; an element
/// `each` refuses, a non-list or a list of another length than `n` is an error message).
fn parallel<T>(
    fields: &Fields,
    v: &Value,
    key: &str,
    n: usize,
    response_name: &str,
    each: impl Fn(&Value) -> Result<Option<T>, String>,
) -> Result<Option<Vec<Option<T>>>, String> {
    let name = fields.name(key);
    let Some(x) = fields.get(v, key) else {
        return Ok(None);
    };
    let Some(list) = x.as_array() else {
        return Err(format!(
            "field `{name}` is not a list (the line's `{response_name}` is)"
        ));
    };
    if list.len() != n {
        return Err(format!(
            "field `{name}` has {} entries, `{response_name}` {n}",
            list.len()
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (i, e) in list.iter().enumerate() {
        match each(e) {
            Ok(t) => out.push(t),
            Err(why) => return Err(format!("`{name}[{i}]`: {why}")),
        }
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{fixture, read_into, Collect};
    use super::*;

    /// Per problem (samples, correct) from expected.json, computed there from the raw fields.
    fn expected(file: &str) -> BTreeMap<String, (u32, u32)> {
        let text = std::fs::read_to_string(fixture("jsonl/expected.json")).unwrap();
        let e: Value = serde_json::from_str(&text).unwrap();
        e["files"][file]["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let id = p["problem_id"].as_str().unwrap().to_string();
                let n = p["samples"].as_u64().unwrap() as u32;
                (id, (n, p["correct"].as_u64().unwrap() as u32))
            })
            .collect()
    }

    fn run(
        paths: &[PathBuf],
        opts: &ReadOptions,
        skip_bad: bool,
    ) -> (Collect, Result<SourceSummary, ImportError>) {
        read_into("jsonl", paths, opts, skip_bad)
    }

    fn by_problem(sink: &Collect) -> BTreeMap<String, (u32, u32)> {
        sink.counts()
            .into_iter()
            .map(|((_, p), (n, c))| (p, (n, c.unwrap())))
            .collect()
    }

    #[test]
    fn both_fixtures_give_each_problem_its_samples_and_source_verdicts() {
        for file in ["one-sample-per-line.jsonl", "list-per-problem.jsonl"] {
            let (sink, out) = run(
                &[fixture(&format!("jsonl/{file}"))],
                &ReadOptions::default(),
                false,
            );
            let summary = out.unwrap();
            assert_eq!(by_problem(&sink), expected(file), "{file}");
            assert!(sink.samples.iter().all(|s| s.model == "stub-math"));
            assert!(
                summary.verdicts.contains("`correct`"),
                "{}",
                summary.verdicts
            );
            assert!(summary.models.contains_key("stub-math"));
        }
        // arith-04 lost a sample in the one-per-line file, and it keeps its own n.
        assert_eq!(expected("one-sample-per-line.jsonl")["arith-04"].0, 5);
        // A folder and a file in it, spelled another way: the file is read once.
        let both = [fixture("jsonl"), fixture("jsonl/./list-per-problem.jsonl")];
        let (sink, out) = run(&both, &ReadOptions::default(), false);
        out.unwrap();
        assert_eq!(sink.files.len(), 2);
    }

    #[test]
    fn one_per_line_keeps_the_stated_sample_index_and_extracted_answer() {
        let (sink, out) = run(
            &[fixture("jsonl/one-sample-per-line.jsonl")],
            &ReadOptions::default(),
            false,
        );
        out.unwrap();
        let text = std::fs::read_to_string(fixture("jsonl/one-sample-per-line.jsonl")).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        let s = &sink.samples[0];
        assert_eq!(
            s.repeat,
            Some(first["sample_index"].as_u64().unwrap() as u32)
        );
        assert_eq!(s.extracted.as_deref(), first["extracted"].as_str());
        assert_eq!(s.at, At::Line(1));
    }

    #[test]
    fn mapped_fields_and_the_file_stem_as_model() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("my-run.jsonl");
        let lines = [
            r#"{"id": 7, "out": {"texts": ["a", "b"]}, "ok": [1, 0], "ans": "a"}"#,
            r#"{"id": 8, "out": {"texts": ["c"]}, "ok": [null], "ans": "d"}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let mut opts = ReadOptions::default();
        for (k, v) in [
            ("problem_id", "id"),
            ("response", "out.texts"),
            ("verdict", "ok"),
            ("gold", "ans"),
        ] {
            opts.fields.insert(k.into(), v.into());
        }
        let (sink, out) = run(std::slice::from_ref(&path), &opts, false);
        out.unwrap();
        let c = sink.counts();
        assert_eq!(c[&("my-run".to_string(), "7".to_string())], (2, Some(1)));
        assert_eq!(c[&("my-run".to_string(), "8".to_string())], (1, None));
        assert_eq!(sink.samples[0].gold.as_deref(), Some("a"));
        opts.model = Some("named".into());
        let (sink, out) = run(&[path], &opts, false);
        out.unwrap();
        assert!(sink.samples.iter().all(|s| s.model == "named"));
    }

    #[test]
    fn a_missing_mandatory_field_names_file_line_and_field_or_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let lines = [
            r#"{"problem_id": "p1", "response": "x", "correct": true}"#,
            r#"{"response": "y", "correct": false}"#,
            r#"{"problem_id": "p2", "correct": false}"#,
            "{not json",
            r#"{"problem_id": "p3", "responses": ["a", "b"], "correct": [true]}"#,
            r#"{"problem_id": "p4", "response": "z", "correct": "maybe"}"#,
            r#"{"problem_id": "p5", "response": "w"}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let (_, out) = run(std::slice::from_ref(&path), &ReadOptions::default(), false);
        let e = out.unwrap_err().to_string();
        assert!(e.contains("s.jsonl:2") && e.contains("`problem_id`"), "{e}");
        let (sink, out) = run(&[path], &ReadOptions::default(), true);
        out.unwrap();
        assert_eq!(sink.bad.len(), 5, "{:?}", sink.bad);
        assert!(
            sink.bad[1].contains(":3") && sink.bad[1].contains("`response`"),
            "{:?}",
            sink.bad
        );
        assert!(
            sink.bad[3].contains(":5") && sink.bad[3].contains("1 entries"),
            "{:?}",
            sink.bad
        );
        let ids: Vec<&str> = sink.samples.iter().map(|s| s.problem_id.as_str()).collect();
        assert_eq!(ids, ["p1", "p5"]);
    }

    #[test]
    fn unknown_field_keys_are_refused_and_a_dataset_field_names_the_run() {
        let mut opts = ReadOptions::default();
        opts.fields.insert("answer".into(), "x".into());
        let (_, out) = run(&[fixture("jsonl/list-per-problem.jsonl")], &opts, false);
        assert!(
            matches!(&out, Err(ImportError::Input(m)) if m.contains("--field answer") && m.contains("problem_id")),
            "{:?}",
            out.err()
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.jsonl");
        let lines = [
            r#"{"problem_id": 1, "response": "a", "gold": "a", "dataset": "gsm8k"}"#,
            r#"{"problem_id": 1, "response": "b", "gold": "b", "dataset": "math"}"#,
        ];
        std::fs::write(&path, lines.join("\n")).unwrap();
        let (sink, out) = run(&[path], &ReadOptions::default(), false);
        out.unwrap();
        assert_eq!(sink.datasets(), ["gsm8k", "math"]);
    }

    #[test]
    fn out_of_range_and_nan_verdicts_name_file_and_line_and_partial_credit_is_no_verdict() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.jsonl");
        for (bad, why) in [("7.5", "7.5 is not a verdict"), ("NaN", "NaN")] {
            let lines = [
                r#"{"problem_id": "p", "response": "x", "correct": 0.5}"#.to_string(),
                format!(r#"{{"problem_id": "p", "response": "y", "correct": {bad}}}"#),
            ];
            std::fs::write(&path, lines.join("\n")).unwrap();
            let (sink, out) = run(std::slice::from_ref(&path), &ReadOptions::default(), false);
            let e = out.unwrap_err().to_string();
            assert!(e.contains("v.jsonl:2") && e.contains(why), "{e}");
            assert_eq!(sink.samples[0].verdict, None);
        }
    }

    #[test]
    fn claims_generic_lines_only() {
        assert!(claims(&fixture("jsonl/one-sample-per-line.jsonl")));
        assert!(claims(&fixture("jsonl/list-per-problem.jsonl")));
        assert!(!claims(&fixture(
            "qwen-math/gpk_arith/test_cot_-1_seed0_t0.7_s0_e-1.jsonl"
        )));
        assert!(!claims(&fixture(
            "lm-eval/v0.4.13/stub-math/samples_gpk_arith_2026-12-01T16-18-04.660489.jsonl"
        )));
        assert!(!claims(&fixture("jsonl/expected.json")));
    }
}
