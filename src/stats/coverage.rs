//! The coverage simulation: synthetic benchmarks whose true metric values are known, scored with the
//! library's own per-problem values, intervals and paired test, to measure how often an interval
//! misses the truth and how often `compare` flags two runs of the same model.
//!
//! A benchmark draws problems from a population of [`LEVELS`] solve rates (quantiles of a Beta
//! difficulty profile). Each problem gets n samples, correct with its solve rate; a wrong sample
//! gives a popular wrong answer or a unique one with equal odds, so maj@n has ties and close votes;
//! the greedy answer is correct with the solve rate. The truth of a metric is the population mean
//! of its per-problem expectation, computed exactly from the binomial (or trinomial) distribution.

use super::interval::mean_interval;
use super::paired::{holm, paired_test, ALPHA};
use super::{metric_list, problem_values, SplitMix64, Vote, LEVEL};
use crate::metrics::{to_f64, MetricKind, ProblemCounts, Tau};
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
}

/// What one metric did over the repetitions of a setup.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricOutcome {
    pub metric: MetricKind,
    pub truth: f64,
    /// Intervals that contained the truth.
    pub covered: usize,
    /// Sum of interval widths (for the mean width).
    pub width: f64,
    /// Repetitions where the paired test flagged B − A at [`ALPHA`] before correction.
    pub flagged: usize,
    /// Repetitions where `compare` would flag B − A: Holm-adjusted p below [`ALPHA`].
    pub flagged_adjusted: usize,
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

/// Per-problem values by outcome, and the population truths, for one setup.
struct Model {
    rates: Vec<f64>,
    metrics: Vec<MetricKind>,
    /// `table[col][c]`: the value of column `col` with c correct of n (greedy and maj@n unused).
    table: Vec<Vec<f64>>,
    /// `votes[c * (n + 1) + w]`: maj@n with c correct and w popular wrong answers.
    votes: Vec<f64>,
    truth: Vec<f64>,
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
                n,
                c,
                greedy: Some(true),
            })
            .collect();
        let values = problem_values(&counts, &[], &setup.ks, &setup.taus)
            .expect("simulated k ≤ n and τ in [0, 1]");
        let metrics = metric_list(&setup.ks, &setup.taus);
        let table: Vec<Vec<f64>> = (0..metrics.len())
            .map(|col| {
                values
                    .rows
                    .iter()
                    .map(|r| r[col].as_ref().map_or(0.0, to_f64))
                    .collect()
            })
            .collect();
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
            metrics,
            table,
            votes,
            truth: Vec::new(),
        };
        model.truth = model.truths(n);
        model
    }

    /// Population means of every column's per-problem expectation.
    fn truths(&self, n: u64) -> Vec<f64> {
        let mut truth = vec![0.0; self.metrics.len()];
        let w = n as usize + 1;
        for &p in &self.rates {
            let ln = |x: f64, k: u64| if k == 0 { 0.0 } else { k as f64 * x.ln() };
            let binom = |c: u64| (ln_binomial(n, c) + ln(p, c) + ln(1.0 - p, n - c)).exp();
            for (col, metric) in self.metrics.iter().enumerate() {
                truth[col] += match metric {
                    MetricKind::Greedy => p,
                    MetricKind::Majority => {
                        let q = (1.0 - p) / 2.0;
                        let mut e = 0.0;
                        for c in 0..=n {
                            for v in 0..=(n - c) {
                                let lp = ln_binomial(n, c) + ln_binomial(n - c, v);
                                let lp = lp + ln(p, c) + ln(q, v) + ln(q, n - c - v);
                                e += lp.exp() * self.votes[c as usize * w + v as usize];
                            }
                        }
                        e
                    }
                    _ => (0..=n)
                        .map(|c| binom(c) * self.table[col][c as usize])
                        .sum(),
                };
            }
        }
        truth.iter().map(|t| t / LEVELS as f64).collect()
    }

    /// One run over the given problems (solve-rate levels): per problem, every column's value.
    fn run(&self, levels: &[usize], n: u64, drop: f64, rng: &mut SplitMix64) -> Vec<Vec<f64>> {
        let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        levels
            .iter()
            .map(|&j| {
                let p = (self.rates[j] - drop).max(0.0);
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
                self.metrics
                    .iter()
                    .enumerate()
                    .map(|(col, m)| match m {
                        MetricKind::Greedy => greedy,
                        MetricKind::Majority => self.votes[c * (n as usize + 1) + popular],
                        _ => self.table[col][c],
                    })
                    .collect()
            })
            .collect()
    }
}

/// Runs `reps` synthetic benchmarks of one setup with a fixed seed.
pub fn simulate(setup: &Setup, reps: usize, seed: u64) -> Simulated {
    let model = Model::new(setup);
    let mut rng = SplitMix64::new(seed);
    let mut metrics: Vec<MetricOutcome> = model
        .metrics
        .iter()
        .zip(&model.truth)
        .map(|(m, &truth)| MetricOutcome {
            metric: m.clone(),
            truth,
            covered: 0,
            width: 0.0,
            flagged: 0,
            flagged_adjusted: 0,
        })
        .collect();
    let mut familywise = 0;
    let mut headline_flags = 0;
    let family = family_columns(&model.metrics, setup);
    for _ in 0..reps {
        let levels: Vec<usize> = (0..setup.problems).map(|_| rng.below(LEVELS)).collect();
        let a = model.run(&levels, setup.n, 0.0, &mut rng);
        for (col, out) in metrics.iter_mut().enumerate() {
            let sum: f64 = a.iter().map(|r| r[col]).sum();
            let (lo, hi) = mean_interval(sum, a.len(), LEVEL).expect("problems ≥ 1");
            out.covered += (lo <= out.truth && out.truth <= hi) as usize;
            out.width += hi - lo;
        }
        if !setup.paired {
            continue;
        }
        let b = model.run(&levels, setup.n, setup.drop, &mut rng);
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
fn family_columns(metrics: &[MetricKind], setup: &Setup) -> Vec<usize> {
    let headline = MetricKind::default_headline(&setup.ks, &setup.taus);
    let mut seen = Vec::new();
    (0..metrics.len())
        .filter(|&c| {
            let id = metrics[c].identity();
            let wanted = headline.iter().any(|h| h.identity() == id);
            wanted && !seen.contains(&id) && {
                seen.push(id);
                true
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(problems: usize, difficulty: Difficulty, n: u64, paired: bool) -> Setup {
        Setup {
            problems,
            difficulty,
            n,
            ks: vec![1, 4, 16],
            taus: vec![
                Tau::from_fraction(1, 2).unwrap(),
                Tau::from_fraction(1, 1).unwrap(),
            ],
            paired,
            drop: 0.0,
        }
    }

    /// The other side of the level: a 15-point drop on 30 mixed problems is flagged on pass@1.
    #[test]
    fn compare_flags_a_real_drop() {
        const REPS: usize = 100;
        let s = Setup {
            drop: 0.15,
            ..setup(30, DIFFICULTIES[1], 16, true)
        };
        let out = simulate(&s, REPS, 0xD0);
        let pass1 = &out.metrics[1];
        assert_eq!(pass1.metric, MetricKind::PassAtK { k: 1 });
        assert!(pass1.flagged_adjusted >= 80, "{pass1:?}");
        assert!(out.familywise >= pass1.flagged_adjusted);
    }

    #[test]
    fn truths_match_closed_forms() {
        let model = Model::new(&setup(10, DIFFICULTIES[1], 16, false));
        let mean_p: f64 = model.rates.iter().sum::<f64>() / LEVELS as f64;
        let pass4: f64 = model
            .rates
            .iter()
            .map(|p| 1.0 - (1.0 - p).powi(4))
            .sum::<f64>()
            / LEVELS as f64;
        let all16: f64 = model.rates.iter().map(|p| p.powi(16)).sum::<f64>() / LEVELS as f64;
        let col = |m: MetricKind| model.metrics.iter().position(|x| *x == m).unwrap();
        let tau1 = Tau::from_fraction(1, 1).unwrap();
        assert!((model.truth[col(MetricKind::Greedy)] - mean_p).abs() < 1e-12);
        assert!((model.truth[col(MetricKind::PassAtK { k: 1 })] - mean_p).abs() < 1e-9);
        assert!((model.truth[col(MetricKind::PassAtK { k: 4 })] - pass4).abs() < 1e-9);
        let g = model.truth[col(MetricKind::GPassAtK { k: 16, tau: tau1 })];
        assert!((g - all16).abs() < 1e-9, "{g} vs {all16}");
        let maj = model.truth[col(MetricKind::Majority)];
        assert!(maj > mean_p - 0.2 && maj < 1.0, "{maj}");
    }

    /// The bars of issue 12 on a small fixed-seed grid (the bench runs the full one), pooled over
    /// the three difficulties so that Monte Carlo noise (about ±0.6 points) stays inside the
    /// margins: coverage ≥ 90% at 5 problems and ≥ 93% from 10 up for every metric; compare's
    /// flags (Holm-corrected) on two runs of one model in at most 6% of comparisons, and the
    /// uncorrected test at most 6% over all metrics (7.5% for any one: its noise is ±0.6 points).
    #[test]
    fn intervals_cover_and_compare_keeps_its_level() {
        const REPS: usize = 400;
        for problems in [5, 10, 30] {
            let outs: Vec<Simulated> = DIFFICULTIES
                .iter()
                .enumerate()
                .map(|(i, d)| {
                    let s = setup(problems, *d, 16, problems >= 10);
                    simulate(&s, REPS, 0x5eed ^ (problems * 10 + i) as u64)
                })
                .collect();
            let runs = (REPS * outs.len()) as f64;
            let bar = if problems >= 10 { 0.93 } else { 0.90 };
            let mut all_flags = 0;
            for col in 0..outs[0].metrics.len() {
                let covered: usize = outs.iter().map(|o| o.metrics[col].covered).sum();
                let flagged: usize = outs.iter().map(|o| o.metrics[col].flagged).sum();
                all_flags += flagged;
                let metric = &outs[0].metrics[col].metric;
                let cover = covered as f64 / runs;
                assert!(
                    cover >= bar,
                    "{problems} problems, {metric}: coverage {cover}"
                );
                let fpr = flagged as f64 / runs;
                assert!(
                    fpr <= 0.075,
                    "{problems} problems, {metric}: false positives {fpr}"
                );
            }
            let fpr = all_flags as f64 / (runs * outs[0].metrics.len() as f64);
            assert!(fpr <= 0.06, "{problems} problems: false positives {fpr}");
            let familywise = outs.iter().map(|o| o.familywise).sum::<usize>() as f64 / runs;
            assert!(
                familywise <= 0.06,
                "{problems} problems: family-wise {familywise}"
            );
            // compare's family (the headline metrics): same-model flags under 5%, with the
            // same ±0.6-point Monte Carlo margin.
            let headline = outs.iter().map(|o| o.headline_flags).sum::<usize>() as f64 / runs;
            assert!(
                headline <= 0.056,
                "{problems} problems: headline family {headline}"
            );
        }
    }
}
