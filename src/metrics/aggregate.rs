//! Exact means of per-problem metrics over all problems and per subset, with coverage accounting.

use super::problem::{MetricTable, Num};
use super::{ratio, Aggregation, MetricsError, Tau};
use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::Zero;
use std::collections::{BTreeMap, HashMap};

/// What one problem contributes: its usable sample count n, correct count c and greedy verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProblemCounts {
    pub id: String,
    pub subset: Option<String>,
    /// The dataset's `group` of the problem: problems of one group are one unit for intervals
    /// and paired tests (`stats::cluster_key`).
    pub group: Option<String>,
    pub n: u64,
    pub c: u64,
    pub greedy: Option<bool>,
}

/// A metric the harness reports. `Majority` is maj@n, majority-vote accuracy over a problem's
/// samples; `stats` computes it, `aggregate` does not. The verifier metrics (`BestOfN`,
/// `WeightedMajority`, `MajorityAt`) are expectations over N-subsets of a problem's samples
/// (see `metrics::verifier`); scoring computes them where a run has verifier scores.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MetricKind {
    Greedy,
    PassAtK {
        k: u64,
    },
    GPassAtK {
        k: u64,
        tau: Tau,
    },
    MGPassAtK {
        k: u64,
    },
    Majority,
    /// bon@N: the verifier's highest-scored of N samples.
    BestOfN {
        size: u64,
        aggregation: Aggregation,
    },
    /// wmaj@N: N samples vote, weighed by their verifier scores.
    WeightedMajority {
        size: u64,
        aggregation: Aggregation,
    },
    /// maj@N for N below n: N samples vote (at N = n this is maj@n).
    MajorityAt {
        size: u64,
    },
}

impl MetricKind {
    /// The metric family as written in tidy outputs.
    pub fn family(&self) -> &'static str {
        match self {
            MetricKind::Greedy => "greedy_acc",
            MetricKind::PassAtK { .. } => "pass@k",
            MetricKind::GPassAtK { .. } => "g_pass@k",
            MetricKind::MGPassAtK { .. } => "mg_pass@k",
            MetricKind::Majority => "maj@n",
            MetricKind::BestOfN { .. } => "bon@k",
            MetricKind::WeightedMajority { .. } => "wmaj@k",
            MetricKind::MajorityAt { .. } => "maj@k",
        }
    }

    /// k, or N for the verifier metrics (N samples drawn of n).
    pub fn k(&self) -> Option<u64> {
        match self {
            MetricKind::Greedy | MetricKind::Majority => None,
            MetricKind::PassAtK { k }
            | MetricKind::GPassAtK { k, .. }
            | MetricKind::MGPassAtK { k } => Some(*k),
            MetricKind::BestOfN { size, .. }
            | MetricKind::WeightedMajority { size, .. }
            | MetricKind::MajorityAt { size } => Some(*size),
        }
    }

    /// How step scores became a solution's score, for the metrics that use the verifier's.
    pub fn aggregation(&self) -> Option<Aggregation> {
        match self {
            MetricKind::BestOfN { aggregation, .. }
            | MetricKind::WeightedMajority { aggregation, .. } => Some(*aggregation),
            _ => None,
        }
    }

    /// Whether the metric is one of the verifier's (computed from stored verifier scores).
    pub fn is_verifier(&self) -> bool {
        matches!(
            self,
            MetricKind::BestOfN { .. }
                | MetricKind::WeightedMajority { .. }
                | MetricKind::MajorityAt { .. }
        )
    }

    pub fn tau(&self) -> Option<&Tau> {
        match self {
            MetricKind::GPassAtK { tau, .. } => Some(tau),
            _ => None,
        }
    }

    /// The headline metrics when a config names none: greedy, then Pass@k, G-Pass@k_τ for every
    /// τ and mG-Pass@k at the largest k, then maj@n.
    pub fn default_headline(ks: &[u64], taus: &[Tau]) -> Vec<MetricKind> {
        let mut all = vec![MetricKind::Greedy];
        if let Some(&k) = ks.iter().max() {
            all.push(MetricKind::PassAtK { k });
            for t in taus {
                all.push(MetricKind::GPassAtK { k, tau: t.clone() });
            }
            all.push(MetricKind::MGPassAtK { k });
        }
        all.push(MetricKind::Majority);
        all
    }

    /// What the metric is by definition, so that two names of one quantity compare equal:
    /// G-Pass@k_τ depends on τ only through m = max(⌈τk⌉, 1), and m = 1 is Pass@k.
    pub fn identity(&self) -> MetricIdentity {
        match self {
            MetricKind::Greedy => MetricIdentity::Greedy,
            MetricKind::PassAtK { k } => MetricIdentity::AtLeast { k: *k, m: 1 },
            MetricKind::GPassAtK { k, tau } => MetricIdentity::AtLeast {
                k: *k,
                m: tau.threshold(*k),
            },
            MetricKind::MGPassAtK { k } => MetricIdentity::Mean { k: *k },
            MetricKind::Majority => MetricIdentity::Majority,
            MetricKind::BestOfN { size, aggregation } => MetricIdentity::BestOfN {
                size: *size,
                aggregation: *aggregation,
            },
            MetricKind::WeightedMajority { size, aggregation } => {
                MetricIdentity::WeightedMajority {
                    size: *size,
                    aggregation: *aggregation,
                }
            }
            MetricKind::MajorityAt { size } => MetricIdentity::MajorityAt { size: *size },
        }
    }
}

/// A metric up to its name ([`MetricKind::identity`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricIdentity {
    Greedy,
    /// At least m of k drawn samples correct.
    AtLeast {
        k: u64,
        m: u64,
    },
    Mean {
        k: u64,
    },
    Majority,
    BestOfN {
        size: u64,
        aggregation: Aggregation,
    },
    WeightedMajority {
        size: u64,
        aggregation: Aggregation,
    },
    MajorityAt {
        size: u64,
    },
}

/// The mean of one metric over one group of problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricValue {
    pub metric: MetricKind,
    /// None for the whole dataset.
    pub subset: Option<String>,
    /// None when no problem in the group could be scored.
    pub value: Option<BigRational>,
    /// Problems that entered the mean.
    pub problems: usize,
    /// Problems left out: n < k, or no greedy answer for greedy accuracy.
    pub excluded: usize,
    /// Problems scored with fewer samples than the run's n.
    pub short: usize,
}

/// Every metric over the whole dataset and each subset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Aggregate {
    pub run_n: u64,
    pub values: Vec<MetricValue>,
}

impl Aggregate {
    pub fn get(&self, metric: &MetricKind, subset: Option<&str>) -> Option<&MetricValue> {
        self.values
            .iter()
            .find(|v| &v.metric == metric && v.subset.as_deref() == subset)
    }
}

/// A numerator sum that stays in u128 until it overflows.
#[derive(Default, Clone)]
struct Sum {
    small: u128,
    big: BigUint,
}

impl Sum {
    fn add(&mut self, x: &Num) {
        match x {
            Num::Small(v) => match self.small.checked_add(*v) {
                Some(s) => self.small = s,
                None => {
                    self.big += self.small;
                    self.small = *v;
                }
            },
            Num::Big(v) => self.big += v,
        }
    }

    fn total(&self) -> BigUint {
        &self.big + self.small
    }
}

#[derive(Default, Clone)]
struct Acc {
    count: u64,
    pass: Sum,
    g: Vec<Sum>,
    mg: Sum,
}

#[derive(Default)]
struct Group {
    problems: usize,
    short: usize,
    greedy_scored: usize,
    greedy_correct: u64,
    /// Per k index, per problem n.
    by_k: Vec<BTreeMap<u64, Acc>>,
    excluded_by_k: Vec<usize>,
}

/// Means of every metric for each k and τ, overall and per subset (overall first, subsets sorted).
///
/// Each problem is scored with its own n; problems with n < k are excluded from that k and counted.
pub fn aggregate(
    problems: &[ProblemCounts],
    run_n: u64,
    ks: &[u64],
    taus: &[Tau],
) -> Result<Aggregate, MetricsError> {
    if ks.contains(&0) {
        return Err(MetricsError::ZeroK);
    }
    let mut tables: HashMap<(u64, u64), MetricTable> = HashMap::new();
    let mut overall = new_group(ks.len());
    let mut subsets: BTreeMap<String, Group> = BTreeMap::new();
    for p in problems {
        if p.c > p.n {
            return Err(MetricsError::CExceedsN { c: p.c, n: p.n });
        }
        let mut targets: Vec<&mut Group> = vec![&mut overall];
        if let Some(s) = &p.subset {
            targets.push(
                subsets
                    .entry(s.clone())
                    .or_insert_with(|| new_group(ks.len())),
            );
        }
        for g in targets.iter_mut() {
            g.problems += 1;
            if p.n < run_n {
                g.short += 1;
            }
            if let Some(ok) = p.greedy {
                g.greedy_scored += 1;
                g.greedy_correct += ok as u64;
            }
        }
        for (ki, &k) in ks.iter().enumerate() {
            if p.n < k {
                for g in targets.iter_mut() {
                    g.excluded_by_k[ki] += 1;
                }
                continue;
            }
            let table = match tables.entry((p.n, k)) {
                std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(MetricTable::new(p.n, k, taus)?)
                }
            };
            let row = table.row(p.c)?;
            for g in targets.iter_mut() {
                let acc = g.by_k[ki].entry(p.n).or_insert_with(|| Acc {
                    g: vec![Sum::default(); taus.len()],
                    ..Acc::default()
                });
                acc.count += 1;
                acc.pass.add(&row.pass);
                for (s, v) in acc.g.iter_mut().zip(&row.g) {
                    s.add(v);
                }
                acc.mg.add(&row.mg);
            }
        }
    }

    let mut values = Vec::new();
    let groups =
        std::iter::once((None, &overall)).chain(subsets.iter().map(|(k, g)| (Some(k.clone()), g)));
    for (subset, g) in groups {
        group_values(&mut values, subset, g, ks, taus, &tables);
    }
    Ok(Aggregate { run_n, values })
}

/// Appends one group's (overall or a subset's) means: greedy, then per k pass@k, G-Pass@k_τ, mG.
fn group_values(
    values: &mut Vec<MetricValue>,
    subset: Option<String>,
    g: &Group,
    ks: &[u64],
    taus: &[Tau],
    tables: &HashMap<(u64, u64), MetricTable>,
) {
    values.push(MetricValue {
        metric: MetricKind::Greedy,
        subset: subset.clone(),
        value: (g.greedy_scored > 0).then(|| {
            ratio(
                BigInt::from(g.greedy_correct),
                BigInt::from(g.greedy_scored),
            )
        }),
        problems: g.greedy_scored,
        excluded: g.problems - g.greedy_scored,
        short: g.short,
    });
    for (ki, &k) in ks.iter().enumerate() {
        let by_n = &g.by_k[ki];
        let scored: u64 = by_n.values().map(|a| a.count).sum();
        let mean = |pick: &dyn Fn(&Acc) -> BigUint, mg: bool| -> Option<BigRational> {
            if scored == 0 {
                return None;
            }
            let mut total = BigRational::zero();
            for (&n, acc) in by_n {
                let table = &tables[&(n, k)];
                let mut den = table.denominator().clone();
                if mg {
                    den *= k;
                }
                total += ratio(BigInt::from(pick(acc)), BigInt::from(den));
            }
            Some(total / BigRational::from_integer(BigInt::from(scored)))
        };
        let excluded = g.excluded_by_k[ki];
        let mk = |metric: MetricKind, value: Option<BigRational>| MetricValue {
            metric,
            subset: subset.clone(),
            value,
            problems: scored as usize,
            excluded,
            short: g.short,
        };
        values.push(mk(
            MetricKind::PassAtK { k },
            mean(&|a| a.pass.total(), false),
        ));
        for (ti, tau) in taus.iter().enumerate() {
            values.push(mk(
                MetricKind::GPassAtK {
                    k,
                    tau: tau.clone(),
                },
                mean(&|a| a.g[ti].total(), false),
            ));
        }
        values.push(mk(
            MetricKind::MGPassAtK { k },
            mean(&|a| a.mg.total(), true),
        ));
    }
}

fn new_group(nk: usize) -> Group {
    Group {
        by_k: vec![BTreeMap::new(); nk],
        excluded_by_k: vec![0; nk],
        ..Group::default()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{g_pass_at_k, mg_pass_at_k, pass_at_k};
    use super::*;

    /// ⌈0.25·4⌉ = 1: G-Pass@4_0.25 is Pass@4; every G-Pass@1_τ is Pass@1; at k = 2, τ = 0.6 and
    /// 1.0 both need m = 2 (⌈1.2⌉ = 2), while τ = 0.5 needs 1.
    #[test]
    fn names_of_one_quantity_share_an_identity() {
        let t = |s: &str| s.parse::<Tau>().unwrap();
        let g = |k, tau: &str| MetricKind::GPassAtK { k, tau: t(tau) }.identity();
        assert_eq!(g(4, "0.25"), MetricKind::PassAtK { k: 4 }.identity());
        assert_eq!(g(1, "1.0"), MetricKind::PassAtK { k: 1 }.identity());
        assert_ne!(g(16, "0.5"), g(16, "0.75"));
        assert_eq!(g(2, "0.6"), g(2, "1.0"));
        assert_ne!(g(2, "0.5"), g(2, "0.6"));
        assert_ne!(MetricKind::MGPassAtK { k: 4 }.identity(), g(4, "0.75"));
    }

    fn p(id: &str, subset: &str, n: u64, c: u64, greedy: Option<bool>) -> ProblemCounts {
        ProblemCounts {
            id: id.into(),
            subset: Some(subset.into()),
            group: None,
            n,
            c,
            greedy,
        }
    }

    fn r(num: i64, den: i64) -> BigRational {
        BigRational::new(num.into(), den.into())
    }

    #[test]
    fn overall_is_mean_over_problems_not_of_subset_means() {
        // Subset A: one problem all right; subset B: three problems all wrong.
        let probs = vec![
            p("a1", "A", 4, 4, Some(true)),
            p("b1", "B", 4, 0, Some(false)),
            p("b2", "B", 4, 0, Some(false)),
            p("b3", "B", 4, 0, Some(false)),
        ];
        let agg = aggregate(&probs, 4, &[1], &Tau::default_grid()).unwrap();
        let pass1 = MetricKind::PassAtK { k: 1 };
        assert_eq!(agg.get(&pass1, None).unwrap().value, Some(r(1, 4)));
        assert_eq!(agg.get(&pass1, Some("A")).unwrap().value, Some(r(1, 1)));
        assert_eq!(agg.get(&pass1, Some("B")).unwrap().value, Some(r(0, 1)));
        assert_eq!(
            agg.get(&MetricKind::Greedy, None).unwrap().value,
            Some(r(1, 4))
        );
        assert_eq!(agg.get(&pass1, Some("B")).unwrap().problems, 3);
    }

    #[test]
    fn mixed_n_uses_each_problems_own_n_and_counts_coverage() {
        let taus = vec!["0.5".parse::<Tau>().unwrap()];
        let probs = vec![
            p("x", "S", 16, 8, None),
            p("y", "S", 12, 3, Some(true)),
            p("z", "S", 3, 1, Some(false)), // n < k = 4: excluded
        ];
        let agg = aggregate(&probs, 16, &[4], &taus).unwrap();
        let expect_pass = (pass_at_k(16, 8, 4).unwrap() + pass_at_k(12, 3, 4).unwrap()) / r(2, 1);
        let v = agg.get(&MetricKind::PassAtK { k: 4 }, None).unwrap();
        assert_eq!(v.value, Some(expect_pass));
        assert_eq!((v.problems, v.excluded, v.short), (2, 1, 2));
        let expect_g = (g_pass_at_k(16, 8, 4, &taus[0]).unwrap()
            + g_pass_at_k(12, 3, 4, &taus[0]).unwrap())
            / r(2, 1);
        let gk = MetricKind::GPassAtK {
            k: 4,
            tau: taus[0].clone(),
        };
        assert_eq!(agg.get(&gk, None).unwrap().value, Some(expect_g));
        let expect_mg =
            (mg_pass_at_k(16, 8, 4).unwrap() + mg_pass_at_k(12, 3, 4).unwrap()) / r(2, 1);
        assert_eq!(
            agg.get(&MetricKind::MGPassAtK { k: 4 }, None)
                .unwrap()
                .value,
            Some(expect_mg)
        );
        let greedy = agg.get(&MetricKind::Greedy, None).unwrap();
        assert_eq!(
            (greedy.value.clone(), greedy.problems, greedy.excluded),
            (Some(r(1, 2)), 2, 1)
        );
    }

    #[test]
    fn all_excluded_gives_no_value_rather_than_zero() {
        let probs = vec![p("x", "S", 2, 1, None)];
        let agg = aggregate(&probs, 2, &[4], &[]).unwrap();
        let v = agg.get(&MetricKind::PassAtK { k: 4 }, None).unwrap();
        assert_eq!((v.value.clone(), v.problems, v.excluded), (None, 0, 1));
    }

    #[test]
    fn rejects_bad_counts() {
        assert_eq!(
            aggregate(&[p("x", "S", 4, 5, None)], 4, &[1], &[]).unwrap_err(),
            MetricsError::CExceedsN { c: 5, n: 4 }
        );
        assert_eq!(
            aggregate(&[], 4, &[0], &[]).unwrap_err(),
            MetricsError::ZeroK
        );
    }

    #[test]
    fn metric_names_match_config_syntax() {
        let tau: Tau = "0.5".parse().unwrap();
        assert_eq!(
            MetricKind::GPassAtK { k: 16, tau }.to_string(),
            "g_pass@16_t0.5"
        );
        assert_eq!(MetricKind::MGPassAtK { k: 8 }.to_string(), "mg_pass@8");
        assert_eq!(MetricKind::PassAtK { k: 16 }.to_string(), "pass@16");
    }
}
