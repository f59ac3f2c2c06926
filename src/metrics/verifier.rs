//! Verifier metrics of one problem from its stored samples: best-of-N (`bon@N`), score-weighted
//! majority vote (`wmaj@N`) and majority vote (`maj@N`), each the expectation over a uniformly
//! random N-subset of the problem's n samples.
//!
//! Definitions (exact; the tests check them against enumeration of every subset):
//! - `bon@N`: the subset's highest verifier score wins; when several samples of the subset share
//!   that score, the winner is one of them drawn uniformly, so the subset scores the fraction of
//!   them that is correct. Closed form over the distinct score levels v (g_v samples at v, c_v of
//!   them correct, L_v below v): Σ_v (c_v/g_v)·(C(L_v+g_v, N) − C(L_v, N)) / C(n, N).
//! - `maj@N` and `wmaj@N`: samples vote for their answer class (samples without an extracted
//!   answer do not vote), with weight 1 (`maj`) or their verifier score (`wmaj`, summed exactly as
//!   the rationals the `f64` scores are). The classes of the subset with the largest total win;
//!   the subset scores the fraction of winning classes that are correct, and 0 when no sample of
//!   it voted — the rule of maj@n (`stats::Vote`). A class is correct when more than half of its
//!   members among *all* n samples are (decided once per problem, so `maj@n` is `maj@N` at N = n).
//!   Enumerated exactly while C(n, N) ≤ [`VoteBudget::exact_subsets`]; beyond, a fixed-seed Monte
//!   Carlo mean over [`VoteBudget::draws`] random subsets with its standard error.

use super::binomial;
use crate::util::SplitMix64;
use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::Zero;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ops::AddAssign;

/// How a solution's step scores become its one score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// The weakest step (Math-Shepherd's choice).
    Min,
    Mean,
    /// The final step's score.
    Last,
    Product,
}

impl Aggregation {
    pub const ALL: [(&'static str, Aggregation); 4] = [
        ("min", Aggregation::Min),
        ("mean", Aggregation::Mean),
        ("last", Aggregation::Last),
        ("product", Aggregation::Product),
    ];

    pub fn name(self) -> &'static str {
        Aggregation::ALL
            .iter()
            .find(|(_, a)| *a == self)
            .map_or("min", |(n, _)| n)
    }

    /// The aggregation a name in [`Aggregation::ALL`] stands for.
    pub fn parse(name: &str) -> Option<Aggregation> {
        Aggregation::ALL
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, a)| *a)
    }

    /// A solution's one score from its step scores; None without steps.
    pub fn of(self, scores: &[f64]) -> Option<f64> {
        let last = *scores.last()?;
        Some(match self {
            Aggregation::Min => scores.iter().copied().fold(f64::INFINITY, f64::min),
            Aggregation::Mean => scores.iter().sum::<f64>() / scores.len() as f64,
            Aggregation::Last => last,
            Aggregation::Product => scores.iter().product(),
        })
    }
}

/// One stored sample as the verifier metrics see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub correct: bool,
    /// The answer's majority-vote class (a hash of its canonical key); None: no answer, no vote.
    pub class: Option<u64>,
    /// The verifier's (aggregated) score; finite, and not negative where it weighs a vote.
    pub score: f64,
}

/// Errors from samples the verifier metrics cannot score.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifierError {
    #[error("N must be at least 1")]
    ZeroSize,
    #[error("sample {index} has a verifier score that is not a finite number")]
    NotFinite { index: usize },
    #[error("sample {index} has a negative verifier score, which cannot weigh a vote")]
    Negative { index: usize },
    #[error(
        "n = {n} is above {}, the largest n the verifier metrics compute",
        super::MAX_N
    )]
    TooMany { n: usize },
}

/// A per-problem vote metric: exact, or a seeded Monte Carlo mean of sampled subsets.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimate {
    Exact(BigRational),
    /// `mean` is the exact mean of the `draws` sampled subsets' values.
    Sampled {
        mean: BigRational,
        std_error: f64,
        draws: u64,
    },
}

impl Estimate {
    pub fn value(&self) -> &BigRational {
        match self {
            Estimate::Exact(v) | Estimate::Sampled { mean: v, .. } => v,
        }
    }

    /// The Monte Carlo standard error; 0 for an exact value.
    pub fn std_error(&self) -> f64 {
        match self {
            Estimate::Exact(_) => 0.0,
            Estimate::Sampled { std_error, .. } => *std_error,
        }
    }

    pub fn is_exact(&self) -> bool {
        matches!(self, Estimate::Exact(_))
    }
}

/// When the vote metrics enumerate and how they sample beyond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VoteBudget {
    /// Enumerate every subset while C(n, N) is at most this.
    pub exact_subsets: u64,
    /// Random subsets drawn otherwise.
    pub draws: u64,
    /// Seed of the draws; mixed with N and the problem's samples, so problems draw independent
    /// streams and the same problem always draws the same one.
    pub seed: u64,
}

/// Enumeration costs about as much as 5 draws per subset, and 4,096 draws put the standard error
/// of one problem's value below 0.008 (0.0004 for a mean over 500 problems).
pub const DEFAULT_BUDGET: VoteBudget = VoteBudget {
    exact_subsets: 20_000,
    draws: 4_096,
    seed: 0x6770_6173_736b_5052, // "gpasskPR"
};

impl Default for VoteBudget {
    fn default() -> VoteBudget {
        DEFAULT_BUDGET
    }
}

fn check(samples: &[Sample], size: u64, weights: bool) -> Result<(), VerifierError> {
    if size == 0 {
        return Err(VerifierError::ZeroSize);
    }
    if samples.len() as u64 > super::MAX_N {
        return Err(VerifierError::TooMany { n: samples.len() });
    }
    for (index, s) in samples.iter().enumerate() {
        if !s.score.is_finite() {
            return Err(VerifierError::NotFinite { index });
        }
        if weights && s.score < 0.0 {
            return Err(VerifierError::Negative { index });
        }
    }
    Ok(())
}

/// `bon@N` of one problem, exact; None when N exceeds the problem's own n.
pub fn best_of_n(samples: &[Sample], size: u64) -> Result<Option<BigRational>, VerifierError> {
    check(samples, size, false)?;
    let n = samples.len() as u64;
    if size > n {
        return Ok(None);
    }
    let mut order: Vec<&Sample> = samples.iter().collect();
    // −0.0 and 0.0 are one level: partial_cmp calls them equal, and the scores are finite.
    order.sort_by(|a, b| a.score.partial_cmp(&b.score).expect("finite scores"));
    let mut total = BigRational::zero();
    let mut below = 0u64;
    for level in order.chunk_by(|a, b| a.score == b.score) {
        let g = level.len() as u64;
        let c = level.iter().filter(|s| s.correct).count() as u64;
        if c > 0 {
            // Subsets whose maximum is this level: any N from here down, less those without it.
            let top = binomial(below + g, size) - binomial(below, size);
            total += BigRational::new(BigInt::from(top * c), BigInt::from(g));
        }
        below += g;
    }
    Ok(Some(
        total / BigRational::from_integer(binomial(n, size).into()),
    ))
}

/// `maj@N` of one problem (the scores are ignored); None when N exceeds the problem's n.
pub fn majority_at(
    samples: &[Sample],
    size: u64,
    budget: &VoteBudget,
) -> Result<Option<Estimate>, VerifierError> {
    check(samples, size, false)?;
    let ones = vec![1u32; samples.len()];
    Ok(Ballots::new(samples).estimate((&ones, samples), size, budget))
}

/// `wmaj@N` of one problem; None when N exceeds the problem's n.
pub fn weighted_majority_at(
    samples: &[Sample],
    size: u64,
    budget: &VoteBudget,
) -> Result<Option<Estimate>, VerifierError> {
    check(samples, size, true)?;
    let ballots = Ballots::new(samples);
    Ok(match exact_weights(samples, size) {
        Weights::Small(w) => ballots.estimate((&w, samples), size, budget),
        Weights::Big(w) => ballots.estimate((&w, samples), size, budget),
    })
}

/// The scores as integers over one power of two, so sums and ties are exact.
enum Weights {
    Small(Vec<u128>),
    Big(Vec<BigUint>),
}

fn exact_weights(samples: &[Sample], size: u64) -> Weights {
    // Every finite f64 is mantissa·2^exponent; shift all onto the smallest exponent present.
    let parts: Vec<(u64, i16)> = samples
        .iter()
        .map(|s| {
            let (m, e, _) = num_traits::float::FloatCore::integer_decode(s.score);
            (m, e)
        })
        .collect();
    let low = parts
        .iter()
        .filter(|p| p.0 != 0)
        .map(|p| p.1)
        .min()
        .unwrap_or(0);
    let bits = |p: &(u64, i16)| (64 - p.0.leading_zeros()) as i64 + (p.1 - low) as i64;
    let widest = parts.iter().map(bits).max().unwrap_or(0);
    // The sum of N weights needs log2(N) more bits than the widest.
    let room = 64 - size.leading_zeros() as i64;
    if widest + room < 127 {
        Weights::Small(
            parts
                .iter()
                .map(|&(m, e)| {
                    if m == 0 {
                        0
                    } else {
                        (m as u128) << (e - low) as u32
                    }
                })
                .collect(),
        )
    } else {
        Weights::Big(
            parts
                .iter()
                .map(|&(m, e)| {
                    if m == 0 {
                        BigUint::zero()
                    } else {
                        BigUint::from(m) << (e - low) as usize
                    }
                })
                .collect(),
        )
    }
}

/// One problem's samples as votes: dense class ids and which classes are correct.
struct Ballots {
    class: Vec<Option<usize>>,
    class_correct: Vec<bool>,
}

impl Ballots {
    fn new(samples: &[Sample]) -> Ballots {
        let mut ids: HashMap<u64, usize> = HashMap::new();
        let mut members: Vec<(u32, u32)> = Vec::new();
        let class = samples
            .iter()
            .map(|s| {
                let key = s.class?;
                let next = ids.len();
                let id = *ids.entry(key).or_insert(next);
                if id == members.len() {
                    members.push((0, 0));
                }
                members[id].0 += 1;
                members[id].1 += s.correct as u32;
                Some(id)
            })
            .collect();
        Ballots {
            class,
            class_correct: members.iter().map(|&(m, c)| 2 * c > m).collect(),
        }
    }

    fn estimate<W: Weight>(
        &self,
        (w, samples): (&[W], &[Sample]),
        size: u64,
        budget: &VoteBudget,
    ) -> Option<Estimate> {
        let n = self.class.len() as u64;
        if size > n {
            return None;
        }
        let subsets = binomial(n, size);
        let mut tally = Tally::new(self.class_correct.len());
        if subsets <= BigUint::from(budget.exact_subsets) {
            let mut outcomes = Outcomes::default();
            let mut pick: Vec<usize> = (0..size as usize).collect();
            loop {
                outcomes.add(tally.vote(self, w, &pick));
                if !next_combination(&mut pick, n as usize) {
                    break;
                }
            }
            return Some(Estimate::Exact(outcomes.mean()));
        }
        let mut rng = SplitMix64::new(stream_seed(budget.seed, size, samples));
        let mut perm: Vec<usize> = (0..n as usize).collect();
        let mut outcomes = Outcomes::default();
        for _ in 0..budget.draws {
            // A partial Fisher–Yates shuffle: the first N places are a uniform N-subset.
            for i in 0..size as usize {
                let j = i + rng.below(n as usize - i);
                perm.swap(i, j);
            }
            outcomes.add(tally.vote(self, w, &perm[..size as usize]));
        }
        Some(Estimate::Sampled {
            mean: outcomes.mean(),
            std_error: outcomes.std_error(),
            draws: budget.draws,
        })
    }
}

/// The seed of one problem's draws at N: the budget's seed, N and every sample's correctness,
/// class and score bits, folded through SplitMix64.
fn stream_seed(seed: u64, size: u64, samples: &[Sample]) -> u64 {
    let mut acc = SplitMix64::new(seed ^ size).next_u64();
    for s in samples {
        let class = s.class.map_or(u64::MAX, |c| c.rotate_left(1));
        let mixed = acc ^ s.score.to_bits() ^ class ^ s.correct as u64;
        acc = SplitMix64::new(mixed).next_u64();
    }
    acc
}

/// Advances `pick` (strictly increasing indices below n) to the next combination; false at the end.
fn next_combination(pick: &mut [usize], n: usize) -> bool {
    let k = pick.len();
    for i in (0..k).rev() {
        if pick[i] < n - k + i {
            pick[i] += 1;
            for j in i + 1..k {
                pick[j] = pick[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// A vote weight: exact, ordered, summable.
trait Weight: Clone + Ord + Zero + for<'a> AddAssign<&'a Self> {}
impl<T: Clone + Ord + Zero + for<'a> AddAssign<&'a T>> Weight for T {}

/// Per-class totals of one subset, reset between subsets by the classes it touched.
struct Tally<W> {
    total: Vec<Option<W>>,
    touched: Vec<usize>,
}

impl<W: Weight> Tally<W> {
    fn new(classes: usize) -> Tally<W> {
        Tally {
            total: vec![None; classes],
            touched: Vec::new(),
        }
    }

    /// (winning classes, of which correct) for the samples `pick`.
    fn vote(&mut self, b: &Ballots, w: &[W], pick: &[usize]) -> (u32, u32) {
        for &i in pick {
            if let Some(c) = b.class[i] {
                let slot = self.total[c].get_or_insert_with(|| {
                    self.touched.push(c);
                    W::zero()
                });
                *slot += &w[i];
            }
        }
        let mut best: Option<&W> = None;
        for &c in &self.touched {
            let t = self.total[c].as_ref().expect("touched");
            if best.is_none_or(|b| t > b) {
                best = Some(t);
            }
        }
        let mut out = (0, 0);
        if let Some(best) = best.cloned() {
            for &c in &self.touched {
                if self.total[c].as_ref() == Some(&best) {
                    out.0 += 1;
                    out.1 += b.class_correct[c] as u32;
                }
            }
        }
        for c in self.touched.drain(..) {
            self.total[c] = None;
        }
        out
    }
}

/// How often each (winning classes, correct among them) outcome occurred.
#[derive(Default)]
struct Outcomes {
    counts: BTreeMap<(u32, u32), u64>,
}

impl Outcomes {
    fn add(&mut self, outcome: (u32, u32)) {
        *self.counts.entry(outcome).or_insert(0) += 1;
    }

    fn draws(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The exact mean of the values correct/winners (0 where nothing voted).
    fn mean(&self) -> BigRational {
        let mut sum = BigRational::zero();
        for (&(winners, correct), &count) in &self.counts {
            if winners > 0 && correct > 0 {
                sum += BigRational::new(
                    BigInt::from(count) * BigInt::from(correct),
                    BigInt::from(winners),
                );
            }
        }
        sum / BigRational::from_integer(BigInt::from(self.draws()))
    }

    /// The standard error of the mean of the draws.
    fn std_error(&self) -> f64 {
        let d = self.draws() as f64;
        if d < 2.0 {
            return 0.0;
        }
        let value = |&(w, c): &(u32, u32)| if w == 0 { 0.0 } else { c as f64 / w as f64 };
        let mean = self
            .counts
            .iter()
            .map(|(o, &k)| value(o) * k as f64)
            .sum::<f64>()
            / d;
        let ss: f64 = self
            .counts
            .iter()
            .map(|(o, &k)| (value(o) - mean).powi(2) * k as f64)
            .sum();
        (ss / (d - 1.0) / d).sqrt()
    }
}

/// The three metrics of one problem at one N.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifierValues {
    pub size: u64,
    pub best_of_n: BigRational,
    pub weighted_majority: Estimate,
    pub majority: Estimate,
}

/// Every metric of one problem for each N of `sizes`; N above the problem's own n is skipped.
pub fn verifier_values(
    samples: &[Sample],
    sizes: &[u64],
    budget: &VoteBudget,
) -> Result<Vec<VerifierValues>, VerifierError> {
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let (Some(bon), Some(wmaj), Some(maj)) = (
            best_of_n(samples, size)?,
            weighted_majority_at(samples, size, budget)?,
            majority_at(samples, size, budget)?,
        ) else {
            continue;
        };
        out.push(VerifierValues {
            size,
            best_of_n: bon,
            weighted_majority: wmaj,
            majority: maj,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
