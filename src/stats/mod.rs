//! Statistics over problems: per-problem metric values, majority voting, each problem's exact
//! within-problem variance ([`within`]), confidence intervals ([`interval`]), paired tests
//! ([`paired`]), their power and the smallest change they detect ([`power`]), and the
//! simulation that checks all of them ([`coverage`]).
//!
//! Intervals treat *problems* (never samples) as the units, or the clusters problems share
//! ([`cluster_key`]): a metric's interval is computed from the problems that metric scores (a
//! problem with n < k does not enter pass@k, one without a greedy answer does not enter greedy
//! accuracy). They involve no randomness, so the same run always gives the same bytes. Point
//! estimates stay exact; floating point starts at the spread and the bounds.

pub mod coverage;
pub mod interval;
pub mod paired;
pub mod planning;
pub mod power;
pub mod simulated;
pub mod within;

pub use interval::{mean_interval, problem_interval};
pub use paired::{holm, paired_test, PairedTest};

use crate::metrics::{
    to_f64, Aggregate, MetricIdentity, MetricKind, MetricTable, MetricsError, ProblemCounts, Tau,
};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::Zero;
use std::collections::{BTreeMap, HashMap};

/// How every interval is computed, as metrics.json and the human reports name it.
pub const INTERVAL_METHOD: &str = "mid-p binomial on the effective number of problems (variance over problems, floored by the exact within-problem variance; clustered by group); Clopper-Pearson on the sum when under 2 problems lie on the short side";
/// Confidence level of every interval.
pub const LEVEL: f64 = 0.95;

pub use crate::util::SplitMix64;

/// The majority vote of one problem's samples, by equivalence class of the extracted answers.
///
/// Samples without an extracted answer do not vote. A class counts as correct when more than half
/// of its members were graded correct. When several classes tie for the most votes, the problem
/// scores the fraction of tied classes that are correct (the expected accuracy of a fair tie-break),
/// so the value never depends on the order samples were stored in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Vote {
    /// Samples with an extracted answer.
    pub voters: u32,
    /// Classes tied for the most votes.
    pub winners: u32,
    /// Of those, the classes that are correct.
    pub winners_correct: u32,
}

impl Vote {
    /// Tallies classes given as (members, members graded correct).
    pub fn from_classes(classes: &[(u32, u32)]) -> Vote {
        let top = classes.iter().map(|c| c.0).max().unwrap_or(0);
        if top == 0 {
            return Vote::default();
        }
        let winners: Vec<&(u32, u32)> = classes.iter().filter(|c| c.0 == top).collect();
        Vote {
            voters: classes.iter().map(|c| c.0).sum(),
            winners: winners.len() as u32,
            winners_correct: winners.iter().filter(|c| 2 * c.1 > c.0).count() as u32,
        }
    }

    /// The problem's exact majority-vote score: 0 when nothing was answered.
    pub fn value(&self) -> BigRational {
        if self.winners == 0 {
            return BigRational::zero();
        }
        BigRational::new(
            BigInt::from(self.winners_correct),
            BigInt::from(self.winners),
        )
    }
}

/// Every reported metric of every problem, exact; `None` where a problem is not scored.
#[derive(Debug, Clone, PartialEq)]
pub struct ProblemValues {
    /// Column order: greedy, then per k pass@k, G-Pass@k per τ, mG-Pass@k; then maj@n.
    pub metrics: Vec<MetricKind>,
    /// One row per problem (in the problems' order), one entry per metric.
    pub rows: Vec<Vec<Option<BigRational>>>,
    /// Per metric, the Monte Carlo standard error of each problem's value where it was estimated
    /// from sampled subsets (None where exact); None for a metric exact on every problem.
    pub std_errors: Vec<Option<Vec<Option<f64>>>>,
}

impl ProblemValues {
    /// The column of one metric.
    pub fn column(&self, metric: &MetricKind) -> Option<usize> {
        self.metrics.iter().position(|m| m == metric)
    }

    /// The rows as floating point, for resampling.
    pub fn to_f64(&self) -> Vec<Vec<Option<f64>>> {
        self.rows
            .iter()
            .map(|r| r.iter().map(|v| v.as_ref().map(to_f64)).collect())
            .collect()
    }
}

/// P(c correct of n | solve rate p), exact at p = 0 and 1: the one binomial weight the planner,
/// its simulation and the coverage check share.
pub(crate) fn binomial_pmf(n: u64, c: u64, p: f64) -> f64 {
    if p <= 0.0 {
        return (c == 0) as u8 as f64;
    }
    if p >= 1.0 {
        return (c == n) as u8 as f64;
    }
    let ln = statrs::function::factorial::ln_binomial(n, c);
    (ln + c as f64 * p.ln() + (n - c) as f64 * (1.0 - p).ln()).exp()
}

/// The metric columns for a run's k and τ lists.
pub fn metric_list(ks: &[u64], taus: &[Tau]) -> Vec<MetricKind> {
    let mut metrics = vec![MetricKind::Greedy];
    for &k in ks {
        metrics.push(MetricKind::PassAtK { k });
        for t in taus {
            metrics.push(MetricKind::GPassAtK { k, tau: t.clone() });
        }
        metrics.push(MetricKind::MGPassAtK { k });
    }
    metrics.push(MetricKind::Majority);
    metrics
}

/// Computes every metric of every problem; `votes` aligns with `problems`.
pub fn problem_values(
    problems: &[ProblemCounts],
    votes: &[Vote],
    ks: &[u64],
    taus: &[Tau],
) -> Result<ProblemValues, MetricsError> {
    let metrics = metric_list(ks, taus);
    let mut tables: HashMap<(u64, u64), MetricTable> = HashMap::new();
    let mut rows = Vec::with_capacity(problems.len());
    let one = || BigRational::from_integer(BigInt::from(1));
    for (i, p) in problems.iter().enumerate() {
        let mut row = Vec::with_capacity(metrics.len());
        row.push(
            p.greedy
                .map(|ok| if ok { one() } else { BigRational::zero() }),
        );
        for &k in ks {
            if p.n < k || k == 0 {
                row.extend(std::iter::repeat_n(None, taus.len() + 2));
                continue;
            }
            let table = match tables.entry((p.n, k)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(MetricTable::new(p.n, k, taus)?)
                }
            };
            let v = table.per_problem(p.c)?;
            row.push(Some(v.pass_at_k));
            row.extend(v.g_pass_at_k.into_iter().map(Some));
            row.push(Some(v.mg_pass_at_k));
        }
        let vote = votes.get(i).copied().unwrap_or_default();
        row.push((p.n > 0).then(|| vote.value()));
        rows.push(row);
    }
    let std_errors = vec![None; metrics.len()];
    Ok(ProblemValues {
        metrics,
        rows,
        std_errors,
    })
}

/// One metric over one group of problems, with its interval.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub metric: MetricKind,
    /// None for the whole dataset.
    pub subset: Option<String>,
    /// The exact mean over scored problems; None when none was scored.
    pub exact: Option<BigRational>,
    pub value: Option<f64>,
    /// The 95% interval ([`problem_interval`]), widened by at most rounding error to contain
    /// `value`.
    pub ci: Option<(f64, f64)>,
    /// Problems that entered the mean.
    pub problems: usize,
    /// The independent units among them: clusters of problems that share a group
    /// ([`cluster_key`]) count once; equal to `problems` when none do.
    pub units: usize,
    /// Problems of the group left out (n < k, no greedy answer, no usable sample).
    pub excluded: usize,
    /// Problems scored with fewer samples than the run's n.
    pub short: usize,
    /// Usable units over planned units for the group: greedy answers for greedy accuracy, samples
    /// (capped at the run's n per problem) for every other metric.
    pub coverage: f64,
    /// The Monte Carlo standard error of `value`, when some problem's value was estimated from
    /// sampled subsets (the verifier's vote metrics past their exact budget): √(Σ se²) / problems.
    pub mc_std_error: Option<f64>,
}

/// The unit a problem belongs to for intervals and paired tests: its dataset `group` when it
/// has one; else, for LiveMathBench ids as OpenCompass writes them (`<split>_<en|cn|zh>_<index>`,
/// or `<split>_<lang>/<index>`), the question, so that its English and Chinese copies are one
/// unit; else the problem itself. A problem alone in its unit is the same as no clustering.
pub fn cluster_key(id: &str, group: Option<&str>) -> String {
    if let Some(g) = group {
        return format!("group:{g}");
    }
    let cut = id.rfind(['_', '/']);
    if let Some(i) = cut {
        let (head, index) = (&id[..i], &id[i + 1..]);
        let lang = head.rsplit_once('_');
        if let Some((split, "en" | "cn" | "zh")) = lang {
            if !split.is_empty() && !index.is_empty() && index.bytes().all(|b| b.is_ascii_digit()) {
                return format!("question:{split}:{index}");
            }
        }
    }
    format!("problem:{id}")
}

/// Each problem's cluster as an index (first appearance first), and the number of clusters.
pub fn cluster_indices<'a>(keys: impl Iterator<Item = &'a str>) -> (Vec<usize>, usize) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let out: Vec<usize> = keys
        .map(|k| {
            let next = seen.len();
            *seen.entry(k).or_insert(next)
        })
        .collect();
    (out, seen.len())
}

/// Per (n, metric), each c's unbiased within-problem variance estimate (None: not estimable).
#[derive(Default)]
struct WithinCache(HashMap<(u64, MetricIdentity), Option<Vec<f64>>>);

impl WithinCache {
    fn get(&mut self, n: u64, c: u64, metric: &MetricKind) -> Option<f64> {
        let (k, kernel) = match metric.identity() {
            MetricIdentity::AtLeast { k, m } => (k, within::Kernel::at_least(k, m)),
            MetricIdentity::Mean { k } => (k, within::Kernel::mean_g(k)),
            _ => return None,
        };
        if k == 0 || n < k {
            return None;
        }
        let table = self.0.entry((n, metric.identity())).or_insert_with(|| {
            within::WithinTable::new(n, std::slice::from_ref(&kernel))
                .map(|t| t.rows.into_iter().map(|r| r[0]).collect())
        });
        table.as_ref()?.get(c as usize).copied()
    }
}

/// Point estimates and intervals of every metric, overall first, then subsets in name order.
///
/// Exact values of the pass/G-Pass/mG-Pass/greedy metrics come from `aggregate`; maj@n is averaged
/// here from the per-problem values.
pub fn estimates(
    problems: &[ProblemCounts],
    values: &ProblemValues,
    aggregate: &Aggregate,
    run_n: u64,
) -> Vec<Estimate> {
    let mut groups: Vec<(Option<String>, Vec<usize>)> = vec![(None, (0..problems.len()).collect())];
    let mut subsets: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in problems.iter().enumerate() {
        if let Some(s) = &p.subset {
            subsets.entry(s).or_default().push(i);
        }
    }
    groups.extend(subsets.into_iter().map(|(s, v)| (Some(s.to_string()), v)));
    let keys: Vec<String> = (problems.iter())
        .map(|p| cluster_key(&p.id, p.group.as_deref()))
        .collect();
    let mut within = WithinCache::default();
    let mut out = Vec::new();
    for (subset, members) in groups {
        let planned = run_n.max(1) as f64 * members.len().max(1) as f64;
        let sample_coverage = members
            .iter()
            .map(|&i| problems[i].n.min(run_n) as f64)
            .sum::<f64>()
            / planned;
        let greedy_coverage = members
            .iter()
            .filter(|&&i| problems[i].greedy.is_some())
            .count() as f64
            / members.len().max(1) as f64;
        let short = members.iter().filter(|&&i| problems[i].n < run_n).count();
        for (col, metric) in values.metrics.iter().enumerate() {
            let group = Group {
                problems,
                values,
                keys: &keys,
                col,
                members: &members,
            };
            let mut e = group.estimate(
                metric,
                aggregate.get(metric, subset.as_deref()),
                &mut within,
            );
            e.subset = subset.clone();
            e.excluded = members.len() - e.problems;
            e.short = short;
            e.coverage = if *metric == MetricKind::Greedy {
                greedy_coverage
            } else {
                sample_coverage
            };
            out.push(e);
        }
    }
    out
}

/// One metric column over the members of one group of problems.
struct Group<'a> {
    problems: &'a [ProblemCounts],
    values: &'a ProblemValues,
    keys: &'a [String],
    col: usize,
    members: &'a [usize],
}

impl Group<'_> {
    /// The estimate (subset, exclusions, shortness and coverage are left for the caller).
    fn estimate(
        &self,
        metric: &MetricKind,
        aggregated: Option<&crate::metrics::MetricValue>,
        within: &mut WithinCache,
    ) -> Estimate {
        let scored: Vec<usize> = (self.members.iter().copied())
            .filter(|&i| self.values.rows[i][self.col].is_some())
            .collect();
        let exact = match aggregated {
            Some(v) => v.value.clone(),
            None if scored.is_empty() => None,
            None => {
                let sum = (scored.iter())
                    .filter_map(|&i| self.values.rows[i][self.col].as_ref())
                    .fold(BigRational::zero(), |acc, v| acc + v);
                Some(sum / BigRational::from_integer(BigInt::from(scored.len())))
            }
        };
        let value = exact.as_ref().map(to_f64);
        let mc_std_error = self.values.std_errors[self.col].as_ref().and_then(|se| {
            let sampled: Vec<f64> = self.members.iter().filter_map(|&i| se[i]).collect();
            let sum: f64 = sampled.iter().map(|s| s * s).sum();
            (!sampled.is_empty()).then(|| sum.sqrt() / scored.len().max(1) as f64)
        });
        let xs: Vec<f64> = (scored.iter())
            .filter_map(|&i| self.values.rows[i][self.col].as_ref().map(to_f64))
            .collect();
        let (clusters, units) = cluster_indices(scored.iter().map(|&i| self.keys[i].as_str()));
        let ws: Option<Vec<f64>> = (scored.iter())
            .map(|&i| within.get(self.problems[i].n, self.problems[i].c, metric))
            .collect();
        let draws: f64 = match metric {
            MetricKind::Greedy => xs.len() as f64,
            _ => scored.iter().map(|&i| self.problems[i].n as f64).sum(),
        };
        let over = interval::Over {
            values: &xs,
            within: ws.as_deref(),
            clusters: (units < xs.len()).then_some(clusters.as_slice()),
            draws,
        };
        let ci = value
            .and_then(|v| Some((v, problem_interval(&over, LEVEL)?)))
            .map(|(v, (lo, hi))| (lo.min(v), hi.max(v)));
        Estimate {
            metric: metric.clone(),
            subset: None,
            exact,
            value,
            ci,
            problems: scored.len(),
            units,
            excluded: 0,
            short: 0,
            coverage: 0.0,
            mc_std_error,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::aggregate;

    fn counts(cs: &[(u64, u64, Option<bool>)]) -> Vec<ProblemCounts> {
        cs.iter()
            .enumerate()
            .map(|(i, &(n, c, g))| ProblemCounts {
                id: format!("p{i}"),
                subset: Some(if i % 2 == 0 { "even" } else { "odd" }.into()),
                group: None,
                n,
                c,
                greedy: g,
            })
            .collect()
    }

    /// A dataset group wins; LiveMathBench's language copies (OpenCompass's `<split>_<lang>_<i>`)
    /// share their question; anything else is its own unit.
    #[test]
    fn cluster_keys() {
        assert_eq!(cluster_key("AMC_en_3", None), cluster_key("AMC_cn_3", None));
        assert_eq!(
            cluster_key("CNMO_zh/7", None),
            cluster_key("CNMO_en_7", None)
        );
        assert_ne!(cluster_key("AMC_en_3", None), cluster_key("AMC_en_4", None));
        assert_ne!(
            cluster_key("AMC_en_3", None),
            cluster_key("CCEE_en_3", None)
        );
        assert_eq!(
            cluster_key("AMC_en_3", Some("q1")),
            cluster_key("x", Some("q1"))
        );
        for alone in [
            "AMC/3",
            "en_3",
            "AMC_fr_3",
            "AMC_en_x",
            "test/algebra/1.json",
            "_en_1",
        ] {
            assert_eq!(
                cluster_key(alone, None),
                format!("problem:{alone}"),
                "{alone}"
            );
        }
        // A group value never meets a problem id.
        assert_ne!(cluster_key("p", Some("p")), cluster_key("p", None));
        let keys = ["a", "b", "a", "c", "b"];
        assert_eq!(cluster_indices(keys.into_iter()), (vec![0, 1, 0, 2, 1], 3));
    }

    #[test]
    fn splitmix_is_fixed() {
        // First outputs of SplitMix64 seeded with 0 (reference implementation by S. Vigna).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        let mut r = SplitMix64::new(7);
        assert!((0..1000).all(|_| r.below(3) < 3));
    }

    #[test]
    fn votes_by_class_with_fair_ties() {
        assert_eq!(Vote::from_classes(&[]).value(), BigRational::zero());
        let v = Vote::from_classes(&[(3, 3), (2, 0)]);
        assert_eq!((v.voters, v.winners, v.winners_correct), (5, 1, 1));
        let tie = Vote::from_classes(&[(2, 2), (2, 0), (1, 0)]);
        assert_eq!(tie.value(), BigRational::new(1.into(), 2.into()));
        assert_eq!(Vote::from_classes(&[(4, 0)]).value(), BigRational::zero());
    }

    #[test]
    fn intervals_are_reproducible_and_contain_the_estimate() {
        let taus = Tau::default_grid();
        let probs = counts(&[
            (8, 8, Some(true)),
            (8, 3, Some(false)),
            (8, 0, Some(false)),
            (8, 5, Some(true)),
            (6, 2, None),
            (8, 7, Some(true)),
            (8, 1, Some(false)),
        ]);
        let votes = vec![Vote::from_classes(&[(5, 5)]); probs.len()];
        let agg = aggregate(&probs, 8, &[1, 4], &taus).unwrap();
        let values = problem_values(&probs, &votes, &[1, 4], &taus).unwrap();
        let first = estimates(&probs, &values, &agg, 8);
        let second = estimates(&probs, &values, &agg, 8);
        assert_eq!(first, second);
        assert_eq!(first.len(), 3 * values.metrics.len());
        for e in &first {
            let (v, (lo, hi)) = (e.value.unwrap(), e.ci.unwrap());
            assert!(lo <= v && v <= hi, "{e:?}");
            assert!((0.0..=1.0).contains(&lo) && hi <= 1.0, "{e:?}");
        }
        let greedy = &first[0];
        assert_eq!((greedy.problems, greedy.excluded), (6, 1));
        assert!(greedy.ci.unwrap().1 - greedy.ci.unwrap().0 > 0.2);
        let pass1 = first
            .iter()
            .find(|e| e.metric == MetricKind::PassAtK { k: 1 } && e.subset.is_none())
            .unwrap();
        assert_eq!(
            pass1.exact,
            agg.get(&MetricKind::PassAtK { k: 1 }, None).unwrap().value
        );
        assert!((pass1.coverage - 54.0 / 56.0).abs() < 1e-12);
    }

    #[test]
    fn twelve_of_twelve_is_not_reported_as_certain() {
        let taus = Tau::default_grid();
        let probs = counts(&[(4, 4, Some(true)); 12]);
        let votes = vec![Vote::from_classes(&[(4, 4)]); probs.len()];
        let agg = aggregate(&probs, 4, &[4], &taus).unwrap();
        let values = problem_values(&probs, &votes, &[4], &taus).unwrap();
        for e in estimates(&probs, &values, &agg, 4) {
            let (lo, hi) = e.ci.unwrap();
            assert_eq!((e.value, hi), (Some(1.0), 1.0), "{e:?}");
            // The exact binomial bound of 12 of 12 is 73.5%; of 6 of 6 (a subset) 54.1%.
            let want = if e.subset.is_none() { 0.7354 } else { 0.5407 };
            assert!((lo - want).abs() < 1e-3, "{e:?}");
        }
        let one = counts(&[(4, 2, Some(true))]);
        let agg = aggregate(&one, 4, &[4], &taus).unwrap();
        let values = problem_values(&one, &votes[..1], &[4], &taus).unwrap();
        for e in estimates(&one, &values, &agg, 4) {
            let (lo, hi) = e.ci.unwrap();
            assert!(
                hi - lo > 0.9,
                "one problem gives almost no information: {e:?}"
            );
        }
    }
}
