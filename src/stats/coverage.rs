//! The coverage simulation: synthetic benchmarks whose true metric values are known, scored with
//! the library's own per-problem values, intervals, paired test and planner, to measure how often
//! an interval misses the truth, how wide it is against an oracle that knows the truth's spread,
//! how often `compare` flags two runs of the same model, and whether `plan`'s designs reach the
//! power they state.
//!
//! A benchmark draws problems from a population of [`LEVELS`] solve rates (quantiles of a Beta
//! difficulty profile). Each problem gets n samples, correct with its solve rate; a wrong sample
//! gives a popular wrong answer or a unique one with equal odds, so maj@n has ties and close votes;
//! the greedy answer is correct with the solve rate. The truth of a metric is the population mean
//! of its per-problem expectation, computed exactly from the binomial (or trinomial) distribution,
//! and so is the true standard deviation of one problem's value.

use super::interval::{mean_interval, problem_interval, Over};
use super::paired::{holm, paired_test, ALPHA};
use super::planning::{needed, power_toward, theta, Counts, Population};
use super::within::{Kernel, WithinTable};
use super::{binomial_pmf, metric_list, problem_values, SplitMix64, Vote, LEVEL};
use crate::metrics::{to_f64, MetricIdentity, MetricKind, ProblemCounts, Tau};
use statrs::function::beta::inv_beta_reg;
use statrs::function::factorial::ln_binomial;

/// Solve-rate levels of the problem population.
pub const LEVELS: usize = 200;

/// A difficulty profile: the problem population's solve rates follow Beta(a, b).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difficulty {
    pub name: &'static str,
    pub a: f64,
    pub b: f64,
}

/// Easy (mean solve rate 0.8), mixed (U-shaped, as real benchmarks are) and hard (mean 0.12,
/// where G-Pass@16 at τ = 1 is a rare event).
pub const DIFFICULTIES: [Difficulty; 3] = [
    Difficulty {
        name: "easy",
        a: 4.0,
        b: 1.0,
    },
    Difficulty {
        name: "mixed",
        a: 0.5,
        b: 0.5,
    },
    Difficulty {
        name: "hard",
        a: 0.4,
        b: 3.0,
    },
];

/// One simulated configuration.
#[derive(Debug, Clone)]
pub struct Setup {
    pub problems: usize,
    pub difficulty: Difficulty,
    pub n: u64,
    pub ks: Vec<u64>,
    pub taus: Vec<Tau>,
    /// Also score a second, independent run and test B − A.
    pub paired: bool,
    /// How much lower the second run's solve rate is on every problem (0: the same model, so
    /// every flag is a false positive; above 0: flags measure power).
    pub drop: f64,
    /// Every question appears twice (as LiveMathBench's English and Chinese copies do), with
    /// the same solve rate and its own samples; intervals cluster the copies.
    pub copies: bool,
}

impl Setup {
    /// The bench's grid: pass@1, and pass@k, G-Pass@k at τ = 0.5 and 1, mG-Pass@k for k = 4, 8,
    /// 16 (with greedy accuracy and maj@n).
    pub fn grid(problems: usize, difficulty: Difficulty, n: u64) -> Setup {
        Setup {
            problems,
            difficulty,
            n,
            ks: vec![1, 4, 8, 16],
            taus: vec![
                Tau::from_fraction(1, 2).expect("1/2"),
                Tau::from_fraction(1, 1).expect("1"),
            ],
            paired: false,
            drop: 0.0,
            copies: false,
        }
    }
}

/// What one metric did over the repetitions of a setup.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricOutcome {
    pub metric: MetricKind,
    pub truth: f64,
    /// The true standard deviation of one problem's value (over problems and samples).
    pub sd: f64,
    /// Intervals that contained the truth.
    pub covered: usize,
    /// With copies: intervals that contained it when the copies were taken as independent.
    pub covered_unclustered: usize,
    /// Sum of interval widths (for the mean width).
    pub width: f64,
    /// Intervals of zero width.
    pub points: usize,
    /// The previous method (Clopper–Pearson on the sum over problems): coverage and width sum.
    pub covered_before: usize,
    pub width_before: f64,
    /// Repetitions where the paired test flagged B − A at [`ALPHA`] before correction.
    pub flagged: usize,
    /// Repetitions where `compare` would flag B − A: Holm-adjusted p below [`ALPHA`].
    pub flagged_adjusted: usize,
}

impl MetricOutcome {
    /// The oracle's width for `units` independent units: 2 × 1.96 × SD / √units.
    pub fn oracle(&self, units: usize) -> f64 {
        2.0 * 1.959_963_984_540_054 * self.sd / (units as f64).sqrt()
    }

    /// Few problems carry the value: m·min(μ, 1 − μ) < 5.
    pub fn sparse(&self, units: usize) -> bool {
        units as f64 * self.truth.min(1.0 - self.truth) < 5.0
    }
}

/// The result of one setup (truths and coverage are those of the first run).
#[derive(Debug, Clone, PartialEq)]
pub struct Simulated {
    pub reps: usize,
    pub metrics: Vec<MetricOutcome>,
    /// Repetitions where any metric was flagged after Holm's correction.
    pub familywise: usize,
    /// Repetitions where `compare`'s tested family flagged: the default headline metrics
    /// ([`MetricKind::default_headline`]), each quantity once, Holm over those alone.
    pub headline_flags: usize,
}

impl Simulated {
    /// Mean interval width over the oracle's, for one metric.
    pub fn width_ratio(&self, out: &MetricOutcome, units: usize) -> f64 {
        let oracle = out.oracle(units);
        if oracle > 0.0 {
            out.width / self.reps as f64 / oracle
        } else {
            f64::INFINITY
        }
    }
}

/// One column of the simulated metrics: its values by outcome, within-problem variances and
/// truths.
struct Column {
    metric: MetricKind,
    /// Value with c correct of n (greedy and maj@n unused).
    table: Vec<f64>,
    /// Unbiased within-problem variance with c correct, where one exists.
    within: Option<Vec<f64>>,
    truth: f64,
    sd: f64,
}

/// Per-problem values by outcome, and the population truths, for one setup.
struct Model {
    rates: Vec<f64>,
    columns: Vec<Column>,
    /// `votes[c * (n + 1) + w]`: maj@n with c correct and w popular wrong answers.
    votes: Vec<f64>,
    n: u64,
}

/// The metrics of `ks` and `taus` once per quantity, without mG-Pass@1 (always 0).
fn distinct_metrics(ks: &[u64], taus: &[Tau]) -> Vec<(usize, MetricKind)> {
    let mut seen: Vec<MetricIdentity> = Vec::new();
    (metric_list(ks, taus).into_iter().enumerate())
        .filter(|(_, m)| *m != MetricKind::MGPassAtK { k: 1 })
        .filter(|(_, m)| {
            let id = m.identity();
            !seen.contains(&id) && {
                seen.push(id);
                true
            }
        })
        .collect()
}

fn kernel(metric: &MetricKind) -> Option<Kernel> {
    match metric.identity() {
        MetricIdentity::AtLeast { k, m } => Some(Kernel::at_least(k, m)),
        MetricIdentity::Mean { k } => Some(Kernel::mean_g(k)),
        _ => None,
    }
}

impl Model {
    fn new(setup: &Setup) -> Model {
        let d = setup.difficulty;
        let n = setup.n;
        let rates: Vec<f64> = (0..LEVELS)
            .map(|j| inv_beta_reg(d.a, d.b, (j as f64 + 0.5) / LEVELS as f64))
            .collect();
        let counts: Vec<ProblemCounts> = (0..=n)
            .map(|c| ProblemCounts {
                id: c.to_string(),
                subset: None,
                group: None,
                n,
                c,
                greedy: Some(true),
            })
            .collect();
        let values = problem_values(&counts, &[], &setup.ks, &setup.taus)
            .expect("simulated k ≤ n and τ in [0, 1]");
        let w = n as usize + 1;
        let mut votes = vec![0.0; w * w];
        for c in 0..=n {
            for p in 0..=(n - c) {
                let mut classes = vec![(c as u32, c as u32), (p as u32, 0)];
                classes.extend(std::iter::repeat_n((1, 0), (n - c - p) as usize));
                classes.retain(|k| k.0 > 0);
                votes[c as usize * w + p as usize] = to_f64(&Vote::from_classes(&classes).value());
            }
        }
        let mut model = Model {
            rates,
            columns: Vec::new(),
            votes,
            n,
        };
        for (col, metric) in distinct_metrics(&setup.ks, &setup.taus) {
            let table: Vec<f64> = (values.rows.iter())
                .map(|r| r[col].as_ref().map_or(0.0, to_f64))
                .collect();
            let within = kernel(&metric)
                .and_then(|k| WithinTable::new(n, std::slice::from_ref(&k)))
                .map(|t| t.rows.into_iter().map(|r| r[0]).collect());
            let (truth, square) = model.moments(&metric, &table);
            model.columns.push(Column {
                metric,
                table,
                within,
                truth,
                sd: (square - truth * truth).max(0.0).sqrt(),
            });
        }
        model
    }

    /// The population mean of a column's value and of its square.
    fn moments(&self, metric: &MetricKind, table: &[f64]) -> (f64, f64) {
        let n = self.n;
        let w = n as usize + 1;
        let (mut mean, mut square) = (0.0, 0.0);
        for &p in &self.rates {
            let binom = |c: u64| binomial_pmf(n, c, p);
            match metric {
                MetricKind::Greedy => {
                    mean += p;
                    square += p;
                }
                MetricKind::Majority => {
                    let q = (1.0 - p) / 2.0;
                    let ln = |x: f64, k: u64| if k == 0 { 0.0 } else { k as f64 * x.ln() };
                    for c in 0..=n {
                        for v in 0..=(n - c) {
                            let lp = ln_binomial(n, c) + ln_binomial(n - c, v);
                            let lp = (lp + ln(p, c) + ln(q, v) + ln(q, n - c - v)).exp();
                            let x = self.votes[c as usize * w + v as usize];
                            mean += lp * x;
                            square += lp * x * x;
                        }
                    }
                }
                _ => {
                    for c in 0..=n {
                        let x = table[c as usize];
                        mean += binom(c) * x;
                        square += binom(c) * x * x;
                    }
                }
            }
        }
        (mean / LEVELS as f64, square / LEVELS as f64)
    }

    /// One run over the given problems (solve-rate levels): per problem its correct count and
    /// every column's value.
    fn run(&self, levels: &[usize], drop: f64, rng: &mut SplitMix64) -> (Vec<u64>, Vec<Vec<f64>>) {
        let n = self.n;
        let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let mut counts = Vec::with_capacity(levels.len());
        let rows = levels
            .iter()
            .map(|&j| {
                let p = (self.rates[j] - drop).clamp(0.0, 1.0);
                let (mut c, mut popular) = (0usize, 0usize);
                for _ in 0..n {
                    let u = unit(rng);
                    if u < p {
                        c += 1;
                    } else if u < p + (1.0 - p) / 2.0 {
                        popular += 1;
                    }
                }
                let greedy = (unit(rng) < p) as u8 as f64;
                counts.push(c as u64);
                (self.columns.iter())
                    .map(|col| match col.metric {
                        MetricKind::Greedy => greedy,
                        MetricKind::Majority => self.votes[c * (n as usize + 1) + popular],
                        _ => col.table[c],
                    })
                    .collect()
            })
            .collect();
        (counts, rows)
    }
}

/// Runs `reps` synthetic benchmarks of one setup with a fixed seed.
pub fn simulate(setup: &Setup, reps: usize, seed: u64) -> Simulated {
    let model = Model::new(setup);
    let mut rng = SplitMix64::new(seed);
    let mut metrics: Vec<MetricOutcome> = (model.columns.iter())
        .map(|c| MetricOutcome {
            metric: c.metric.clone(),
            truth: c.truth,
            sd: c.sd,
            covered: 0,
            covered_unclustered: 0,
            width: 0.0,
            points: 0,
            covered_before: 0,
            width_before: 0.0,
            flagged: 0,
            flagged_adjusted: 0,
        })
        .collect();
    let mut familywise = 0;
    let mut headline_flags = 0;
    let family = family_columns(&model, setup);
    let copies = if setup.copies { 2 } else { 1 };
    let clusters: Vec<usize> = (0..setup.problems * copies).map(|i| i / copies).collect();
    for _ in 0..reps {
        let questions: Vec<usize> = (0..setup.problems).map(|_| rng.below(LEVELS)).collect();
        let levels: Vec<usize> = (questions.iter())
            .flat_map(|&q| std::iter::repeat_n(q, copies))
            .collect();
        let (counts, a) = model.run(&levels, 0.0, &mut rng);
        for (col, out) in metrics.iter_mut().enumerate() {
            let column = &model.columns[col];
            let xs: Vec<f64> = a.iter().map(|r| r[col]).collect();
            let ws: Option<Vec<f64>> =
                (column.within.as_ref()).map(|w| counts.iter().map(|&c| w[c as usize]).collect());
            let draws = match column.metric {
                MetricKind::Greedy => xs.len() as f64,
                _ => (xs.len() as u64 * model.n) as f64,
            };
            let over = Over {
                values: &xs,
                within: ws.as_deref(),
                clusters: setup.copies.then_some(clusters.as_slice()),
                draws,
            };
            let (lo, hi) = problem_interval(&over, LEVEL).expect("problems ≥ 1");
            out.covered += (lo <= out.truth && out.truth <= hi) as usize;
            out.width += hi - lo;
            out.points += (hi <= lo) as usize;
            let sum: f64 = xs.iter().sum();
            let (lo, hi) = mean_interval(sum, xs.len() as f64, LEVEL).expect("problems ≥ 1");
            out.covered_before += (lo <= out.truth && out.truth <= hi) as usize;
            out.width_before += hi - lo;
            if setup.copies {
                let naive = Over {
                    clusters: None,
                    ..over
                };
                let (lo, hi) = problem_interval(&naive, LEVEL).expect("problems ≥ 1");
                out.covered_unclustered += (lo <= out.truth && out.truth <= hi) as usize;
            }
        }
        if !setup.paired {
            continue;
        }
        let (_, b) = model.run(&levels, setup.drop, &mut rng);
        let p: Vec<f64> = (0..metrics.len())
            .map(|col| {
                let pairs: Vec<(f64, f64)> =
                    a.iter().zip(&b).map(|(x, y)| (x[col], y[col])).collect();
                paired_test(&pairs).and_then(|t| t.p).unwrap_or(1.0)
            })
            .collect();
        let adjusted = holm(&p);
        for ((out, &p), &q) in metrics.iter_mut().zip(&p).zip(&adjusted) {
            out.flagged += (p < ALPHA) as usize;
            out.flagged_adjusted += (q < ALPHA) as usize;
        }
        familywise += adjusted.iter().any(|&q| q < ALPHA) as usize;
        let tested: Vec<f64> = family.iter().map(|&c| p[c]).collect();
        headline_flags += holm(&tested).iter().any(|&q| q < ALPHA) as usize;
    }
    Simulated {
        reps,
        metrics,
        familywise,
        headline_flags,
    }
}

/// The columns of `compare`'s family: one per quantity of the default headline metrics.
fn family_columns(model: &Model, setup: &Setup) -> Vec<usize> {
    let headline = MetricKind::default_headline(&setup.ks, &setup.taus);
    (0..model.columns.len())
        .filter(|&c| {
            let id = model.columns[c].metric.identity();
            headline.iter().any(|h| h.identity() == id)
        })
        .collect()
}

/// One check of `plan`: runs of a model are planned from a first run of `from` problems at
/// `setup.n` samples, to detect a change of `change` in `metric` at `alpha`; each plan's design
/// is then run in [`PAIRS`] pairs on fresh problems, the second run of a pair with every solve
/// rate moved so the metric's true value moves by `change`, and tested as `compare` tests. A
/// first run from which the planner refuses the change (its model of the problems cannot move
/// the metric that far) plans nothing: it is counted, not run.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanCheck {
    /// Plans made and run (the first runs the planner did not refuse).
    pub reps: usize,
    /// First runs from which the planner refused the change.
    pub refused: usize,
    /// Mean of the plans' power in the simulated direction (their stated power, the harder
    /// direction's, is at most this).
    pub promised: f64,
    /// Share of the planned comparisons the test flagged ([`PAIRS`] per plan).
    pub achieved: f64,
    /// Median recommended problems.
    pub problems: u64,
    /// Whether the plan's within-problem variance was exact (else modelled), in the first plan.
    pub exact: bool,
    /// Plans whose stated power was simulated (compare's test under the planner's model).
    pub simulated: usize,
}

/// Pairs of runs of each plan's design: a pair is cheap next to a plan, and several make the
/// achieved power's noise mostly that of the first runs (each plan's own power varies with
/// the run it was planned from), not of one flagged-or-not per plan.
pub const PAIRS: usize = 8;

/// Runs `reps` first runs, their plans and the plans' comparisons (see [`PlanCheck`]);
/// `samples` per problem in the planned runs. None when the metric's true value cannot move by
/// `change`.
pub fn check_plan(
    setup: &Setup,
    metric: &MetricKind,
    (change, samples, alpha): (f64, u64, f64),
    reps: usize,
    seed: u64,
) -> Option<PlanCheck> {
    let model = Model::new(setup);
    let kernel = kernel(metric)?;
    let truth = (model.rates.iter())
        .map(|&p| theta(&kernel, p))
        .sum::<f64>()
        / LEVELS as f64;
    let shift = shift_for(&model.rates, &kernel, truth + change)?;
    let planned = Model::new(&Setup {
        n: samples,
        ..setup.clone()
    });
    let col = planned.columns.iter().position(|c| &c.metric == metric)?;
    let mut rng = SplitMix64::new(seed);
    let (mut promised, mut flagged, mut sizes, mut exact) = (0.0, 0, Vec::new(), None);
    let (mut refused, mut simulated) = (0, 0);
    for _ in 0..reps {
        let levels: Vec<usize> = (0..setup.problems).map(|_| rng.below(LEVELS)).collect();
        let (counts, _) = model.run(&levels, 0.0, &mut rng);
        let counts: Vec<Counts> = counts.iter().map(|&c| Counts { n: setup.n, c }).collect();
        let population = Population::fit(&counts)?;
        // The plan's promise for the direction simulated (its stated power is the harder
        // direction's, at least this); None: the planner refuses it from this run.
        let plan = needed(&population, &kernel, samples, change, 1.0, (alpha, 0.8));
        let Some((plan, power)) = plan.and_then(|plan| {
            let design = (plan.problems as f64, samples);
            let power = power_toward(&population, &kernel, design, change, 1.0, alpha)?;
            Some((plan, power))
        }) else {
            refused += 1;
            continue;
        };
        exact.get_or_insert_with(|| population.within(&kernel, samples).1);
        promised += power;
        simulated += plan.simulated as usize;
        sizes.push(plan.problems);
        for _ in 0..PAIRS {
            let levels: Vec<usize> = (0..plan.problems).map(|_| rng.below(LEVELS)).collect();
            let (_, a) = planned.run(&levels, 0.0, &mut rng);
            let (_, b) = planned.run(&levels, -shift, &mut rng);
            let pairs: Vec<(f64, f64)> = a.iter().zip(&b).map(|(x, y)| (x[col], y[col])).collect();
            flagged += paired_test(&pairs)
                .and_then(|t| t.p)
                .is_some_and(|p| p < alpha) as usize;
        }
    }
    sizes.sort_unstable();
    let made = sizes.len();
    Some(PlanCheck {
        reps: made,
        refused,
        promised: promised / made.max(1) as f64,
        achieved: flagged as f64 / (made * PAIRS).max(1) as f64,
        problems: sizes.get(made / 2).copied().unwrap_or(0),
        exact: exact.unwrap_or(false),
        simulated,
    })
}

/// The move of every solve rate (clamped to [0, 1]) that brings the population mean to `target`.
fn shift_for(rates: &[f64], kernel: &Kernel, target: f64) -> Option<f64> {
    let mean = |s: f64| {
        (rates.iter())
            .map(|&p| theta(kernel, (p + s).clamp(0.0, 1.0)))
            .sum::<f64>()
            / rates.len() as f64
    };
    if !(mean(-1.0)..=mean(1.0)).contains(&target) {
        return None;
    }
    let (mut lo, mut hi) = (-1.0, 1.0);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if mean(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some(0.5 * (lo + hi))
}

#[cfg(test)]
mod tests;
