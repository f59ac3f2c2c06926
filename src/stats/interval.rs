//! Confidence intervals for the mean of per-problem values in [0, 1], over problems (or over the
//! clusters problems share), as tight as the data allow.
//!
//! The rule ([`problem_interval`], chosen by simulation: `docs/intervals.md`):
//! 1. The variance of one problem's value, V, is estimated from the spread of the values (over
//!    clusters when problems share one) and never below the mean of the problems' exact unbiased
//!    within-problem variances ([`super::within`]): between-problem variance cannot be negative.
//! 2. Relative to a coin flip with the same mean, the values carry ρ = V / (μ(1 − μ)) ≤ 1 of its
//!    variance, so m problems are worth m/ρ coin flips (the effective size of Korn and Graubard
//!    1998, without their cap at m). ρ is itself estimated: its jackknife variance gives
//!    Satterthwaite degrees of freedom ν, and the effective size shrinks by (z / t_ν)².
//!    Values that are all 0 or 1 have ρ fixed by their mean, and keep the full size.
//! 3. The bounds are the mid-p binomial bounds (Lancaster 1961) for that many flips with the
//!    observed mean, which keep the skew of a proportion near 0 or 1.
//! 4. When fewer than two problems' worth of the mean lies on its short side (m·min(μ, 1 − μ) < 2,
//!    all-0 and all-1 included) or fewer than three clusters were scored, the spread says nothing
//!    reliable, and the bounds are Clopper–Pearson's on the sum ([`mean_interval`]): valid for any
//!    values in [0, 1], because such a value's variance is at most μ(1 − μ) (Bhatia and Davis
//!    2000). Those bounds never meet.
//!
//! Nothing here is random: the same values always give the same bounds.

use statrs::distribution::{ContinuousCDF, Normal, StudentsT};
use statrs::function::beta::{beta_reg, inv_beta_reg};

/// Below this many problems' worth of the mean on its short side, bounds fall back to
/// Clopper–Pearson's.
pub const SHORT_SIDE: f64 = 2.0;

/// What an interval over problems rests on.
#[derive(Debug, Clone, Copy)]
pub struct Over<'a> {
    /// One value per scored problem, each in [0, 1].
    pub values: &'a [f64],
    /// Each problem's unbiased within-problem variance estimate; None unless every problem has one.
    pub within: Option<&'a [f64]>,
    /// Each problem's cluster, as an index (problems of one cluster are one unit); None: every
    /// problem is its own.
    pub clusters: Option<&'a [usize]>,
    /// Samples the values rest on: no interval claims more information than this many flips.
    pub draws: f64,
}

/// The 95% (or `level`) interval of the mean of `over.values`; None without a value.
pub fn problem_interval(over: &Over, level: f64) -> Option<(f64, f64)> {
    let m = over.values.len();
    if m == 0 || over.values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let units = Units::of(over);
    let mean = units.total / m as f64;
    let (lo, hi) = match units.effective(over, mean, level) {
        Some(size) => mid_p(mean * size, size, level),
        None => {
            let n = units.kish(m);
            mean_interval(mean * n, n, level)?
        }
    };
    Some((lo.min(mean).max(0.0), hi.max(mean).min(1.0)))
}

/// Cluster totals: per unit the sum of its values, its problem count and its within sum.
struct Units {
    sums: Vec<f64>,
    sizes: Vec<f64>,
    within: Vec<f64>,
    total: f64,
}

/// Running sums over units, for the variance and its leave-one-unit-out versions.
#[derive(Clone, Copy)]
struct Moments {
    /// Σ T², Σ T·s, Σ s² over units (T a unit's sum, s its size); Σ T, Σ s; Σ within.
    tt: f64,
    ts: f64,
    ss: f64,
    t: f64,
    s: f64,
    w: f64,
    units: f64,
}

impl Moments {
    fn without(self, t: f64, s: f64, w: f64) -> Moments {
        Moments {
            tt: self.tt - t * t,
            ts: self.ts - t * s,
            ss: self.ss - s * s,
            t: self.t - t,
            s: self.s - s,
            w: self.w - w,
            units: self.units - 1.0,
        }
    }

    /// (mean, ρ): the per-problem variance (cluster-robust, floored by the within mean) over
    /// the coin flip's; None when the mean is 0 or 1 or fewer than two units remain.
    fn ratio(&self, floor: bool) -> Option<(f64, f64)> {
        if self.units < 2.0 || self.s <= 0.0 {
            return None;
        }
        let mean = self.t / self.s;
        let bern = mean * (1.0 - mean);
        if bern <= 0.0 {
            return None;
        }
        let squares = (self.tt - 2.0 * mean * self.ts + mean * mean * self.ss).max(0.0);
        let mut v = self.units / (self.units - 1.0) * squares / self.s;
        if floor {
            v = v.max(self.w / self.s);
        }
        Some((mean, v / bern))
    }
}

impl Units {
    fn of(over: &Over) -> Units {
        let count = over.clusters.map_or(over.values.len(), |c| {
            c.iter().copied().max().map_or(0, |x| x + 1)
        });
        let mut u = Units {
            sums: vec![0.0; count],
            sizes: vec![0.0; count],
            within: vec![0.0; count],
            total: 0.0,
        };
        for (i, &v) in over.values.iter().enumerate() {
            let g = over.clusters.map_or(i, |c| c[i]);
            u.sums[g] += v;
            u.sizes[g] += 1.0;
            u.within[g] += over.within.map_or(0.0, |w| w[i]);
            u.total += v;
        }
        let keep: Vec<usize> = (0..count).filter(|&g| u.sizes[g] > 0.0).collect();
        u.sums = keep.iter().map(|&g| u.sums[g]).collect();
        u.sizes = keep.iter().map(|&g| u.sizes[g]).collect();
        u.within = keep.iter().map(|&g| u.within[g]).collect();
        u
    }

    fn moments(&self) -> Moments {
        let mut m = Moments {
            tt: 0.0,
            ts: 0.0,
            ss: 0.0,
            t: 0.0,
            s: 0.0,
            w: 0.0,
            units: self.sums.len() as f64,
        };
        for ((&t, &s), &w) in self.sums.iter().zip(&self.sizes).zip(&self.within) {
            m.tt += t * t;
            m.ts += t * s;
            m.ss += s * s;
            m.t += t;
            m.s += s;
            m.w += w;
        }
        m
    }

    /// Kish's effective number of units for the Clopper–Pearson fallback: m²/Σ sizes².
    fn kish(&self, m: usize) -> f64 {
        let ss: f64 = self.sizes.iter().map(|s| s * s).sum();
        (m as f64 * m as f64 / ss).min(m as f64)
    }

    /// The effective number of coin flips, or None where the Clopper–Pearson fallback applies.
    fn effective(&self, over: &Over, mean: f64, level: f64) -> Option<f64> {
        let m = over.values.len() as f64;
        let short = self.kish(over.values.len()) * mean.min(1.0 - mean);
        if self.sums.len() < 3 || short < SHORT_SIDE {
            return None;
        }
        let floor = over.within.is_some();
        let all = self.moments();
        let (_, rho) = all.ratio(floor)?;
        let rho = rho.max(1e-300);
        // Jackknife over units: how much ρ moves when one unit is left out.
        let leave: Vec<f64> = (0..self.sums.len())
            .map(|g| {
                let rest = all.without(self.sums[g], self.sizes[g], self.within[g]);
                rest.ratio(floor).map_or(1.0, |(_, r)| r)
            })
            .collect();
        let g = leave.len() as f64;
        let centre = leave.iter().sum::<f64>() / g;
        let spread = (g - 1.0) / g * leave.iter().map(|r| (r - centre).powi(2)).sum::<f64>();
        let alpha = 1.0 - level;
        let shrink = if spread <= 1e-12 * rho * rho {
            1.0
        } else {
            let df = (2.0 * rho * rho / spread).clamp(1.0, 1e7);
            (quantile_z(alpha) / quantile_t(alpha, df)).powi(2)
        };
        Some((m / rho * shrink).min(over.draws.max(m)).max(1.0))
    }
}

fn quantile_z(alpha: f64) -> f64 {
    Normal::new(0.0, 1.0).map_or(1.959_963_984_540_054, |n| n.inverse_cdf(1.0 - alpha / 2.0))
}

fn quantile_t(alpha: f64, df: f64) -> f64 {
    StudentsT::new(0.0, 1.0, df).map_or(f64::INFINITY, |t| t.inverse_cdf(1.0 - alpha / 2.0))
}

/// Mid-p binomial bounds for `x` successes in `n` trials, both real (0 < x < n): the p where
/// ½[P(X ≥ x) + P(X ≥ x + 1)] is α/2 (lower) and 1 − α/2 (upper), with the tails as
/// regularized incomplete beta functions.
pub fn mid_p(x: f64, n: f64, level: f64) -> (f64, f64) {
    let tail = (1.0 - level) / 2.0;
    let f = |p: f64| 0.5 * (beta_reg(x, n - x + 1.0, p) + beta_reg(x + 1.0, n - x, p));
    let solve = |target: f64| {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..64 {
            let mid = 0.5 * (lo + hi);
            if f(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    };
    (solve(tail), solve(1.0 - tail))
}

/// Clopper–Pearson bounds on a mean of `count` values in [0, 1] summing to `sum` (both may be
/// fractional), at confidence `level`; `None` when nothing was scored.
///
/// The α/2 quantile of Beta(s, m − s + 1) and the 1 − α/2 quantile of Beta(s + 1, m − s)
/// (Clopper and Pearson 1934), with s real: exact for 0/1 values, conservative for fractional
/// ones, and never of zero width.
pub fn mean_interval(sum: f64, count: f64, level: f64) -> Option<(f64, f64)> {
    if count <= 0.0 || !sum.is_finite() || !count.is_finite() {
        return None;
    }
    let m = count;
    // Exact sums reach f64 with rounding error: keep them inside [0, m].
    let s = sum.clamp(0.0, m);
    let tail = (1.0 - level) / 2.0;
    let lo = if s <= 0.0 {
        0.0
    } else {
        beta_quantile(s, m - s + 1.0, tail, 0.0)
    };
    let hi = if s >= m {
        1.0
    } else {
        beta_quantile(s + 1.0, m - s, 1.0 - tail, 1.0)
    };
    Some((lo.min(s / m), hi.max(s / m)))
}

/// A Beta quantile, or `fallback` if the numerical inversion fails.
fn beta_quantile(a: f64, b: f64, q: f64, fallback: f64) -> f64 {
    let x = inv_beta_reg(a, b, q);
    if x.is_finite() {
        x.clamp(0.0, 1.0)
    } else {
        fallback
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f64, f64), b: (f64, f64)) -> bool {
        (a.0 - b.0).abs() < 5e-5 && (a.1 - b.1).abs() < 5e-5
    }

    /// Values of problems scored from 16 samples each, none of them clustered.
    fn over(values: &[f64]) -> Over<'_> {
        Over {
            values,
            within: None,
            clusters: None,
            draws: 16.0 * values.len() as f64,
        }
    }

    #[test]
    fn matches_published_clopper_pearson_bounds() {
        // Exact binomial bounds as tabulated by R's binom.test.
        let cases = [
            ((12.0, 12.0), (0.735_36, 1.0)),
            ((0.0, 10.0), (0.0, 0.308_50)),
            ((5.0, 10.0), (0.187_09, 0.812_91)),
            ((1.0, 1.0), (0.025, 1.0)),
            ((3.0, 20.0), (0.032_07, 0.378_94)),
        ];
        for ((s, m), want) in cases {
            let got = mean_interval(s, m, 0.95).unwrap();
            assert!(close(got, want), "{s}/{m}: {got:?} vs {want:?}");
        }
    }

    /// Mid-p bounds solved from the binomial sums themselves, P(X > x) + ½P(X = x) = 2.5% and
    /// P(X < x) + ½P(X = x) = 2.5% (computed independently with SciPy's binomial distribution).
    #[test]
    fn mid_p_matches_the_binomial_sums() {
        let cases = [
            ((3.0, 10.0), (0.082_60, 0.619_92)),
            ((15.0, 30.0), (0.325_31, 0.674_69)),
            ((1.0, 20.0), (0.002_50, 0.222_81)),
        ];
        for ((x, n), want) in cases {
            let got = mid_p(x, n, 0.95);
            assert!(close(got, want), "{x}/{n}: {got:?} vs {want:?}");
        }
        // Between integer counts the bounds move monotonically.
        let (a, b, c) = (
            mid_p(4.0, 10.0, 0.95),
            mid_p(4.5, 10.0, 0.95),
            mid_p(5.0, 10.0, 0.95),
        );
        assert!(a.0 < b.0 && b.0 < c.0 && a.1 < b.1 && b.1 < c.1);
    }

    #[test]
    fn never_collapses_and_contains_the_mean() {
        for m in [1usize, 2, 3, 5, 12, 300] {
            for pattern in [0.0, 1.0, 0.5, 0.25] {
                let values: Vec<f64> = (0..m)
                    .map(|i| {
                        if pattern == 0.25 {
                            (i % 4 == 0) as u8 as f64
                        } else {
                            pattern
                        }
                    })
                    .collect();
                let mean = values.iter().sum::<f64>() / m as f64;
                let (lo, hi) = problem_interval(&over(&values), 0.95).unwrap();
                assert!(hi - lo > 0.001, "{m} × {pattern}: [{lo}, {hi}]");
                assert!((0.0..=mean).contains(&lo) && (mean..=1.0).contains(&hi));
            }
        }
        assert_eq!(problem_interval(&over(&[]), 0.95), None);
        assert_eq!(mean_interval(0.0, 0.0, 0.95), None);
    }

    /// Twelve problems of 12 correct is no certainty: all-1 falls back to Clopper–Pearson.
    #[test]
    fn all_one_and_all_zero_keep_the_exact_binomial_width() {
        let ones = vec![1.0; 12];
        let (lo, hi) = problem_interval(&over(&ones), 0.95).unwrap();
        assert!((lo - 0.7354).abs() < 1e-3 && hi == 1.0, "{lo}");
        let zeros = vec![0.0; 30];
        let (lo, hi) = problem_interval(&over(&zeros), 0.95).unwrap();
        assert!(lo == 0.0 && (hi - 0.1157).abs() < 1e-3, "{hi}");
    }

    /// Values that vary little around their mean count as more than one flip each (up to the
    /// samples behind them); values that are all 0 or 1 count as one each (the mid-p interval
    /// of m − 1 flips).
    #[test]
    fn fractional_values_narrow_the_interval_and_binary_ones_do_not() {
        let smooth: Vec<f64> = (0..30).map(|i| 0.4 + 0.2 * (i % 3) as f64 / 2.0).collect();
        let binary: Vec<f64> = (0..30).map(|i| (i % 2) as f64).collect();
        let (a, b) = problem_interval(&over(&smooth), 0.95).unwrap();
        let (c, d) = problem_interval(&over(&binary), 0.95).unwrap();
        assert!(b - a < 0.3 * (d - c), "{a} {b} vs {c} {d}");
        // Worth over a thousand flips by their spread, capped at the 480 samples drawn.
        assert!(close((a, b), mid_p(240.0, 480.0, 0.95)), "{a} {b}");
        let want = mid_p(14.5, 29.0, 0.95);
        assert!(close((c, d), want), "{c} {d} vs {want:?}");
    }

    /// Two identical copies of every problem (EN and ZH of one question) are one unit each:
    /// clustering them gives the interval of the questions alone, not a narrower one.
    #[test]
    fn clusters_of_copies_count_once() {
        let questions: Vec<f64> = (0..20).map(|i| [0.1, 0.9, 0.5, 0.7][i % 4]).collect();
        let copies: Vec<f64> = questions.iter().flat_map(|&v| [v, v]).collect();
        let clusters: Vec<usize> = (0..40).map(|i| i / 2).collect();
        let alone = problem_interval(&over(&questions), 0.95).unwrap();
        let naive = problem_interval(&over(&copies), 0.95).unwrap();
        let clustered = problem_interval(
            &Over {
                clusters: Some(&clusters),
                ..over(&copies)
            },
            0.95,
        )
        .unwrap();
        assert!(naive.1 - naive.0 < 0.8 * (alone.1 - alone.0));
        assert!(((clustered.1 - clustered.0) / (alone.1 - alone.0) - 1.0).abs() < 0.03);
    }

    /// Values that barely vary are floored by the samples behind them: the within-problem
    /// variance, and never more than one flip per sample.
    #[test]
    fn the_within_floor_and_the_draw_cap_hold() {
        let values = vec![0.5; 40];
        let within = vec![0.25 / 15.0; 40];
        let floored = problem_interval(
            &Over {
                within: Some(&within),
                draws: 640.0,
                ..over(&values)
            },
            0.95,
        )
        .unwrap();
        // 40 problems × 16 samples of a fair coin: about ±3.9 points.
        assert!((floored.1 - 0.5 - 0.0387).abs() < 0.003, "{floored:?}");
        let capped = problem_interval(
            &Over {
                draws: 640.0,
                ..over(&values)
            },
            0.95,
        )
        .unwrap();
        assert!(capped.1 - capped.0 > 0.07, "{capped:?}");
    }
}
