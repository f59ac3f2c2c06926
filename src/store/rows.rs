//! A scored run as the store's rows: one builder per table from the run's manifest and results,
//! and a digest of them all, so pushing the same content twice writes nothing.

use crate::metrics::MetricKind;
use crate::report::metric_label;
use crate::rundir::manifest::Manifest;
use crate::rundir::RunDir;
use crate::scoring::{GradedSample, ModelScore, RunResults};
use sha2::{Digest, Sha256};

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    fn text(s: impl Into<String>) -> Value {
        Value::Text(s.into())
    }

    pub(super) fn opt_text(s: Option<impl Into<String>>) -> Value {
        s.map_or(Value::Null, |s| Value::Text(s.into()))
    }

    fn int(n: impl TryInto<i64>) -> Value {
        n.try_into().map_or(Value::Null, Value::Int)
    }

    fn real(v: Option<f64>) -> Value {
        v.filter(|v| v.is_finite()).map_or(Value::Null, Value::Real)
    }
}

/// A row: its columns by name, in the table's order.
pub type Row = Vec<(&'static str, Value)>;

/// Every row of one run, by table (the samples aside: they are streamed).
pub struct RunRows {
    /// The run's row, without its `content_sha256` (known once every row is).
    pub runs: Vec<Row>,
    pub run_models: Vec<Row>,
    pub metric_values: Vec<Row>,
    pub problem_counts: Vec<Row>,
    pub fingerprint_counts: Vec<Row>,
    pub problem_values: Vec<Row>,
    pub found_by_counts: Vec<Row>,
    /// Over these rows; the sample rows, when pushed, are added to it.
    pub digest: RowDigest,
}

/// A digest over rows: equal for equal content, whatever the database.
#[derive(Clone, Default)]
pub struct RowDigest(Sha256);

impl RowDigest {
    pub fn add(&mut self, row: &Row) {
        for (column, value) in row {
            self.0.update(column.as_bytes());
            let cell = match value {
                Value::Null => "\u{0}null".to_string(),
                Value::Int(v) => format!("i{v}"),
                Value::Real(v) => format!("r{}", v.to_bits()),
                Value::Text(s) => format!("t{}:{s}", s.len()),
            };
            self.0.update(cell.as_bytes());
        }
        self.0.update(b"\n");
    }

    /// The digest as hex (`runs.content_sha256`).
    pub fn finish(self) -> String {
        format!("{:x}", self.0.finalize())
    }
}

impl RunRows {
    /// The tables in the order they are written (parents first).
    pub fn tables(&self) -> [(&'static str, &[Row]); 7] {
        [
            ("runs", &self.runs),
            ("run_models", &self.run_models),
            ("metric_values", &self.metric_values),
            ("problem_counts", &self.problem_counts),
            ("fingerprint_counts", &self.fingerprint_counts),
            ("problem_values", &self.problem_values),
            ("found_by_counts", &self.found_by_counts),
        ]
    }
}

/// The rows of a scored run of `dir`; its manifest must be loaded with it (as `load_run` does).
pub fn of_run(dir: &RunDir, results: &RunResults) -> anyhow::Result<RunRows> {
    let manifest = results
        .manifest
        .as_ref()
        .ok_or_else(|| anyhow::anyhow!("run {}: no manifest loaded", results.run_id))?;
    let mut rows = RunRows {
        runs: Vec::new(),
        run_models: Vec::new(),
        metric_values: Vec::new(),
        problem_counts: Vec::new(),
        fingerprint_counts: Vec::new(),
        problem_values: Vec::new(),
        found_by_counts: Vec::new(),
        digest: RowDigest::default(),
    };
    let counted = crate::stats::metric_list(&results.ks, &results.taus);
    for (i, m) in results.models.iter().enumerate() {
        rows.run_models.push(model_row(manifest, m, i));
        rows.metric_values.extend(metric_rows(&results.run_id, m));
        rows.problem_counts.extend(problem_rows(&results.run_id, m));
        rows.problem_values
            .extend(value_rows(&results.run_id, m, &counted));
        rows.found_by_counts
            .extend(found_by_rows(&results.run_id, m));
        for (fingerprint, samples) in dir.fingerprint_counts(&m.name).unwrap_or_default() {
            rows.fingerprint_counts.push(vec![
                ("run_id", Value::text(&results.run_id)),
                ("model", Value::text(&m.name)),
                ("system_fingerprint", Value::text(fingerprint)),
                ("samples", Value::int(samples)),
            ]);
        }
    }
    let run = run_row(manifest)?;
    // The order the first schema's digests were taken in (problem values, when a run has any,
    // then the found_by counts, after them): a run pushed then, which has none, is unchanged
    // now; a run pushed before the counts were kept is replaced by its next push, gaining them.
    let mut digest = RowDigest::default();
    for (_, table) in rows.tables() {
        for row in table {
            digest.add(row);
        }
    }
    digest.add(&run);
    rows.digest = digest;
    rows.runs.push(run);
    Ok(rows)
}

/// The longest extracted answer a sample row keeps (a model can box a whole essay).
const MAX_EXTRACTED_BYTES: usize = 4096;

/// A graded sample's row (`store push --samples`).
pub fn sample_row(run_id: &str, model: &str, s: &GradedSample) -> Row {
    let extracted = s.extracted.as_deref().map(|a| {
        if a.len() <= MAX_EXTRACTED_BYTES {
            return a.to_string();
        }
        let mut end = MAX_EXTRACTED_BYTES;
        while !a.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &a[..end])
    });
    vec![
        ("run_id", Value::text(run_id)),
        ("model", Value::text(model)),
        ("problem_id", Value::text(s.problem_id)),
        ("sample", Value::Int(s.sample_index.key())),
        ("extracted", Value::opt_text(extracted)),
        ("verdict", Value::text(s.outcome.as_str())),
        (
            "response_sha256",
            Value::opt_text(s.response_sha256.clone()),
        ),
        ("found_by", Value::opt_text(s.found_by.map(|f| f.as_str()))),
    ]
}

/// A model's answers counted by how they were found (`found_by_counts`): a row per way that
/// found any, and `''` for those whose way was not recorded; none when the score does not say.
fn found_by_rows(run_id: &str, m: &ModelScore) -> Vec<Row> {
    let Some(found) = &m.found_by else {
        return Vec::new();
    };
    let ways = found.nonzero().map(|(f, n)| (f.as_str(), n));
    let unrecorded = Some(("", found.unrecorded)).filter(|(_, n)| *n > 0);
    (ways.chain(unrecorded))
        .map(|(way, answers)| {
            vec![
                ("run_id", Value::text(run_id)),
                ("model", Value::text(&m.name)),
                ("found_by", Value::text(way)),
                ("answers", Value::int(answers)),
            ]
        })
        .collect()
}

fn run_row(m: &Manifest) -> anyhow::Result<Row> {
    let (mode, judge) = m.grading();
    let grader = judge.map_or(mode.clone(), |j| format!("{mode} ({j})"));
    let imported = m.imported.as_ref().map(serde_json::to_string).transpose()?;
    Ok(vec![
        ("run_id", Value::text(&m.run_id)),
        ("created_at", Value::text(&m.created_at)),
        ("finished_at", Value::opt_text(m.finished_at.clone())),
        ("status", Value::text(m.status.as_str())),
        ("dataset_name", Value::text(&m.dataset.name)),
        ("dataset_sha256", Value::text(&m.dataset.sha256)),
        ("config_hash", Value::text(&m.config_hash)),
        ("prompt_hash", Value::text(&m.prompt_hash)),
        ("grader", Value::text(grader)),
        ("harness_version", Value::text(&m.harness)),
        ("harness_commit", Value::opt_text(m.git_commit.clone())),
        ("task", Value::opt_text(m.task_name.clone())),
        ("imported", Value::opt_text(imported)),
        ("manifest", Value::text(serde_json::to_string(m)?)),
    ])
}

fn model_row(manifest: &Manifest, m: &ModelScore, position: usize) -> Row {
    let mm = manifest.models.get(&m.name);
    let json = |v: serde_json::Value| Value::text(v.to_string());
    let cost = mm.and_then(|mm| mm.cost.as_ref());
    vec![
        ("run_id", Value::text(&manifest.run_id)),
        ("model", Value::text(&m.name)),
        ("position", Value::int(position)),
        ("model_id", Value::text(&m.model_id)),
        (
            "status",
            Value::text(mm.map_or("pending", |mm| mm.status.as_str())),
        ),
        ("error", Value::opt_text(mm.and_then(|mm| mm.error.clone()))),
        ("n", Value::int(m.n)),
        (
            "units_planned",
            Value::int(mm.map_or(0, |mm| mm.units_planned)),
        ),
        ("ok", Value::int(mm.map_or(0, |mm| mm.ok))),
        ("truncated", Value::int(mm.map_or(0, |mm| mm.truncated))),
        ("api_error", Value::int(mm.map_or(0, |mm| mm.api_error))),
        ("correct", Value::int(m.correct)),
        ("wrong", Value::int(m.wrong)),
        ("no_answer", Value::int(m.no_answer)),
        ("missing", Value::int(m.missing)),
        ("served_models", json(serde_json::json!(m.served_models))),
        (
            "system_fingerprints",
            json(serde_json::json!(mm.map(|mm| &mm.system_fingerprints))),
        ),
        ("cost_total", Value::real(cost.map(|c| c.total))),
        (
            "cost_currency",
            Value::opt_text(cost.map(|c| c.currency.clone())),
        ),
    ]
}

fn metric_rows(run_id: &str, m: &ModelScore) -> Vec<Row> {
    m.estimates
        .iter()
        .map(|e| {
            let exact = e.exact.as_ref();
            vec![
                ("run_id", Value::text(run_id)),
                ("model", Value::text(&m.name)),
                ("metric", Value::text(metric_label(&e.metric))),
                ("family", Value::text(e.metric.family())),
                ("k", Value::opt_int(e.metric.k())),
                ("tau", Value::opt_text(e.metric.tau().map(|t| t.text()))),
                // '' for the whole dataset: a key column cannot be NULL in both databases.
                ("subset", Value::text(e.subset.clone().unwrap_or_default())),
                ("value", Value::real(e.value)),
                ("ci_low", Value::real(e.ci.map(|c| c.0))),
                ("ci_high", Value::real(e.ci.map(|c| c.1))),
                ("problems", Value::int(e.problems)),
                (
                    "exact_numerator",
                    Value::opt_text(exact.map(|x| x.numer().to_string())),
                ),
                (
                    "exact_denominator",
                    Value::opt_text(exact.map(|x| x.denom().to_string())),
                ),
            ]
        })
        .collect()
}

fn problem_rows(run_id: &str, m: &ModelScore) -> Vec<Row> {
    m.problems
        .iter()
        .zip(&m.votes)
        .enumerate()
        .map(|(i, (p, v))| {
            vec![
                ("run_id", Value::text(run_id)),
                ("model", Value::text(&m.name)),
                ("problem_id", Value::text(&p.id)),
                ("position", Value::int(i)),
                ("subset", Value::opt_text(p.subset.clone())),
                ("problem_group", Value::opt_text(p.group.clone())),
                ("n", Value::int(p.n)),
                ("c", Value::int(p.c)),
                ("greedy", Value::opt_int(p.greedy.map(u8::from))),
                ("voters", Value::int(v.voters)),
                ("winners", Value::int(v.winners)),
                ("winners_correct", Value::int(v.winners_correct)),
            ]
        })
        .collect()
}

/// The per-problem values of the metrics `counted` (the columns per-problem counts and votes give)
/// leaves out: every problem of each such column, its value or NULL, and its Monte Carlo error.
fn value_rows(run_id: &str, m: &ModelScore, counted: &[MetricKind]) -> Vec<Row> {
    let values = &m.values;
    let mut out = Vec::new();
    for (col, metric) in values.metrics.iter().enumerate() {
        if counted.contains(metric) {
            continue;
        }
        let errors = values.std_errors.get(col).and_then(Option::as_ref);
        for (i, (p, row)) in m.problems.iter().zip(&values.rows).enumerate() {
            let value = row.get(col).and_then(Option::as_ref);
            let error = errors.and_then(|e| e.get(i).copied().flatten());
            out.push(vec![
                ("run_id", Value::text(run_id)),
                ("model", Value::text(&m.name)),
                ("metric", Value::text(metric.to_string())),
                ("position", Value::int(col)),
                ("problem_id", Value::text(&p.id)),
                ("problem_position", Value::int(i)),
                (
                    "value_numerator",
                    Value::opt_text(value.map(|v| v.numer().to_string())),
                ),
                (
                    "value_denominator",
                    Value::opt_text(value.map(|v| v.denom().to_string())),
                ),
                ("std_error", Value::real(error)),
            ]);
        }
    }
    out
}

impl Value {
    fn opt_int(n: Option<impl TryInto<i64>>) -> Value {
        n.map_or(Value::Null, Value::int)
    }
}

/// A cell read back as a Rust value; None when it is of another kind (or out of range).
pub trait FromValue: Sized {
    fn from_value(v: &Value) -> Option<Self>;
}

impl FromValue for i64 {
    fn from_value(v: &Value) -> Option<i64> {
        match v {
            Value::Int(n) => Some(*n),
            _ => None,
        }
    }
}

impl FromValue for u64 {
    fn from_value(v: &Value) -> Option<u64> {
        i64::from_value(v).and_then(|n| n.try_into().ok())
    }
}

impl FromValue for u32 {
    fn from_value(v: &Value) -> Option<u32> {
        i64::from_value(v).and_then(|n| n.try_into().ok())
    }
}

impl FromValue for f64 {
    fn from_value(v: &Value) -> Option<f64> {
        match v {
            Value::Real(x) => Some(*x),
            _ => None,
        }
    }
}

impl FromValue for String {
    fn from_value(v: &Value) -> Option<String> {
        match v {
            Value::Text(s) => Some(s.clone()),
            _ => None,
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value) -> Option<Option<T>> {
        match v {
            Value::Null => Some(None),
            v => T::from_value(v).map(Some),
        }
    }
}

/// Cell `i` of a row read back, naming the column when it holds something else.
pub fn cell<T: FromValue>(row: &[Value], i: usize, column: &str) -> anyhow::Result<T> {
    row.get(i).and_then(T::from_value).ok_or_else(|| {
        let held = match row.get(i) {
            None => "nothing",
            Some(Value::Null) => "NULL",
            Some(Value::Int(_)) => "an integer",
            Some(Value::Real(_)) => "a real number",
            Some(Value::Text(_)) => "text",
        };
        anyhow::anyhow!("column `{column}` holds {held}, not what gpassk wrote there")
    })
}
