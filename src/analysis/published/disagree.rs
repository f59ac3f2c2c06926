//! Where the sources disagree: the values given for one benchmark, model and metric, grouped into
//! claims that agree within their rounding (24.0 stands for [23.95, 24.05], 4.55 for
//! [4.545, 4.555]).

use super::{model_key, Published};
use crate::metrics::MetricKind;
use std::collections::HashMap;

/// Values that agree within rounding, and the sources that give them.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim<'a> {
    /// The most precise of them.
    pub value: f64,
    pub decimals: usize,
    pub values: Vec<&'a Published>,
}

impl Claim<'_> {
    /// The files that give this claim (indices into the sources read), in order.
    pub fn files(&self) -> Vec<usize> {
        let mut f: Vec<usize> = self.values.iter().map(|v| v.file).collect();
        f.sort_unstable();
        f.dedup();
        f
    }

    /// The value as written: `31.3`, `4.55`.
    pub fn text(&self) -> String {
        format!("{:.*}", self.decimals, self.value)
    }
}

/// The interval a value written with `decimals` places stands for.
fn bounds(p: &Published) -> (f64, f64) {
    let half = 0.5 * 10f64.powi(-(p.decimals as i32));
    // A hair of slack, so 4.5 and 4.55 touching at 4.55 still agree in floating point.
    (p.value - half - 1e-9, p.value + half + 1e-9)
}

/// The values given for one benchmark, model and metric, grouped into claims: one claim when all
/// agree, else one per group of agreeing values, in the order their first source was given.
pub fn claims<'a>(values: &[&'a Published]) -> Vec<Claim<'a>> {
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.value.total_cmp(&b.value));
    let mut groups: Vec<(f64, f64, Vec<&'a Published>)> = Vec::new();
    for v in sorted {
        let (lo, hi) = bounds(v);
        match groups.last_mut() {
            Some((glo, ghi, members)) if lo <= *ghi && *glo <= hi => {
                (*glo, *ghi) = (glo.max(lo), ghi.min(hi));
                members.push(v);
            }
            _ => groups.push((lo, hi, vec![v])),
        }
    }
    let mut out: Vec<Claim<'a>> = groups
        .into_iter()
        .map(|(_, _, mut members)| {
            members.sort_by_key(|p| p.file);
            let best = *members
                .iter()
                .max_by_key(|p| (p.decimals, std::cmp::Reverse(p.file)))
                .expect("a group has a member");
            Claim {
                value: best.value,
                decimals: best.decimals,
                values: members,
            }
        })
        .collect();
    out.sort_by_key(|c| c.files());
    out
}

/// One benchmark, model and metric on which the sources disagree.
#[derive(Debug, Clone, PartialEq)]
pub struct Disagreement<'a> {
    pub benchmark: &'a str,
    /// As the first source spells it.
    pub model: &'a str,
    pub metric: &'a str,
    /// Two or more.
    pub claims: Vec<Claim<'a>>,
}

/// Every benchmark, model and metric with values that disagree, in the order first given.
pub fn disagreements(values: &[Published]) -> Vec<Disagreement<'_>> {
    let mut index: HashMap<(&str, String, &MetricKind), usize> = HashMap::new();
    let mut groups: Vec<Vec<&Published>> = Vec::new();
    for v in values {
        let key = (v.benchmark.as_str(), model_key(&v.model), &v.metric);
        let i = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[i].push(v);
    }
    groups
        .into_iter()
        .filter_map(|g| {
            let claims = claims(&g);
            (claims.len() > 1).then(|| Disagreement {
                benchmark: &g[0].benchmark,
                model: &g[0].model,
                metric: &g[0].metric_name,
                claims,
            })
        })
        .collect()
}
