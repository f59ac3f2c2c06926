//! The CSV reader: `source,benchmark,model,metric,value` with values in percent (the shape of the
//! shipped `datasets/published/*.csv`).

use super::{
    canonical_benchmark, metric_spelling, parse_metric, percent, Published, PublishedError,
};
use std::path::Path;

const COLUMNS: [&str; 5] = ["source", "benchmark", "model", "metric", "value"];

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<Published>, PublishedError> {
    let bad = |line: usize, msg: String| PublishedError::bad(path, line, msg);
    let mut r = ::csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(text.as_bytes());
    let headers = r
        .headers()
        .map_err(|e| bad(1, format!("cannot read the header: {e}")))?
        .clone();
    let cols: Vec<usize> = COLUMNS
        .iter()
        .map(|w| {
            headers.iter().position(|h| h.trim() == *w).ok_or_else(|| {
                let want = COLUMNS.join(",");
                bad(
                    1,
                    format!("missing column `{w}` (the header must have {want})"),
                )
            })
        })
        .collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            bad(line, format!("malformed CSV: {e}"))
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let get = |i: usize| rec.get(cols[i]).unwrap_or("").trim().to_string();
        let name = get(3);
        let metric = parse_metric(&name).ok_or_else(|| {
            let msg = "is not Greedy, Pass@K, G-Pass@K_TAU or mG-Pass@K";
            bad(line, format!("field `metric`: {name:?} {msg}"))
        })?;
        let (value, decimals) = percent(&get(4), "value").map_err(|m| bad(line, m))?;
        out.push(Published {
            source: get(0),
            file: 0,
            benchmark: canonical_benchmark(&get(1)),
            model: get(2),
            metric_name: metric_spelling(&name),
            metric,
            value,
            decimals,
            line,
        });
    }
    Ok(out)
}
