//! The leaderboard reader: GPassK's `docs/results.json`, an object of models, each holding metric
//! objects of benchmark → percent (`null` where the model was not run) beside text fields (`link`,
//! `opensourced`, …) that are not scores.

use super::{
    canonical_benchmark, metric_spelling, parse_metric, percent, Published, PublishedError,
};
use serde::Deserialize;
use serde_json::{Number, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A field of a model: a metric's scores per benchmark, or anything else (not a score).
#[derive(Deserialize)]
#[serde(untagged)]
enum Field {
    Scores(BTreeMap<String, Value>),
    Other(serde::de::IgnoredAny),
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<Published>, PublishedError> {
    let board: BTreeMap<String, BTreeMap<String, Field>> =
        serde_json::from_str(text).map_err(|e| {
            let msg =
                format!("not a leaderboard (an object of models, each of metric objects): {e}");
            PublishedError::bad(path, e.line(), msg)
        })?;
    let source = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut out = Vec::new();
    for (model, fields) in &board {
        for (name, field) in fields {
            let Field::Scores(scores) = field else {
                continue;
            };
            let at = |msg: String| PublishedError::file(path, format!("model {model:?}: {msg}"));
            let metric = parse_metric(name).ok_or_else(|| {
                at(format!(
                    "{name:?} is not Greedy, Pass@K, G-Pass@K_TAU or mG-Pass@K"
                ))
            })?;
            for (benchmark, value) in scores {
                let number = match value {
                    Value::Null => continue,
                    Value::Number(n) => n,
                    other => {
                        return Err(at(format!("{name}.{benchmark}: {other} is not a number")))
                    }
                };
                let (value, decimals) =
                    written(number, &format!("{name}.{benchmark}")).map_err(at)?;
                out.push(Published {
                    source: source.clone(),
                    file: 0,
                    benchmark: canonical_benchmark(benchmark),
                    model: model.clone(),
                    metric_name: metric_spelling(name),
                    metric: metric.clone(),
                    value,
                    decimals,
                    line: 0,
                });
            }
        }
    }
    Ok(out)
}

/// A number and its decimal places as written (`24.0` has one, `4.55` two).
fn written(n: &Number, field: &str) -> Result<(f64, usize), String> {
    percent(&n.to_string(), field)
}
