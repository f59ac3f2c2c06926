//! The power of `compare`'s paired test and the change it detects: one formula, used both for
//! the "detectable" change `compare` prints for the runs it has and by `gpassk plan` for the runs
//! a weekly job should make.
//!
//! The sign-flip test rejects when |T| > z·S, T = Σ D_g and S² = Σ D_g² over the units g (problems,
//! or clusters of problems) with D_g a unit's summed B − A. With m problems in units of s, a true
//! change δ per problem and a per-problem variance v of the differences, T ≈ N(mδ, m·v) and
//! S² ≈ m(v + s·δ²), so (normal approximation, the far tail ignored)
//! power(δ) = Φ((√m·δ − z₁₋α/₂·√(v + s·δ²)) / √v).
//! Solving power(δ) = 1 − β for δ gives the detectable change, for m the problems needed.
//!
//! That formula holds S at its mean. When the differences' shape under the change is known
//! ([`Tails`], as `plan`'s model knows it), the ratio R = T/S is treated by the delta method
//! instead: √m·δ/√μ₂ − z over R's own spread, with μ₂ = v + δ² and R's variance from the
//! differences' third and fourth moments. Differences that mostly share one sign (a change moving
//! most problems the same way) make S move with T, and the test stronger than the first formula
//! says: the simulation's G-Pass@8_0.5 plans reached 96% where it promised 81%.
//!
//! The test only sees the problems whose difference is not zero, and with K of them its p-value
//! is at least 2·2⁻ᴷ: no K below [`least_units`] is ever flagged, however large T/S. When a
//! change lands on few problems (pass@16 on an easy population drops only where a solve rate
//! falls near zero) K is small and random, and the normal approximation, which flags 4 problems
//! all moving one way, promised 80% where the test reached 50–55%. With [`Tails`] the power is
//! therefore summed over K ~ Binomial(m, q), q the chance that a problem moves: given K, the
//! moving problems' differences have the moments above over q, and the test flags by the delta
//! method, or exactly when the values are 0/1 (the test is then McNemar's: a binomial tail).

use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::beta::beta_reg;

/// The power at which `compare` states the smallest detectable change, and `plan`'s default.
pub const POWER: f64 = 0.8;

/// A paired comparison: how many problems, in how many independent units, and how much one
/// problem's difference varies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Design {
    pub problems: f64,
    /// Independent units (clusters); equal to `problems` when no problems share one.
    pub units: f64,
    /// The variance of one problem's difference B − A, per problem: Σ D_g² / m for observed
    /// differences (the test's own spread), or a prediction.
    pub variance: f64,
    /// The difference's shape under the change, when predicted (problems alone, not clusters).
    pub tails: Option<Tails>,
}

/// The third and fourth raw moments of one problem's difference under the change, signed so
/// that the change is positive, and how many problems move at all.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tails {
    pub third: f64,
    pub fourth: f64,
    /// The chance that a problem's difference is not zero: the test sees only those.
    pub moving: f64,
    /// When every difference is −1, 0 or 1 (0/1 values): the chance that a non-zero one goes
    /// the change's way.
    pub toward: Option<f64>,
}

impl Tails {
    /// The variance of R = T/S per problem (delta method) for a mean change `d` > 0 and
    /// variance `v`; None when the moments do not make a positive one.
    fn ratio_variance(&self, d: f64, v: f64) -> Option<f64> {
        let mu2 = v + d * d;
        let var = (v - d / mu2 * (self.third - d * mu2)
            + d * d / (4.0 * mu2 * mu2) * (self.fourth - mu2 * mu2))
            / mu2;
        (var.is_finite() && var > 0.0).then_some(var)
    }

    /// The test's power over `problems` problems against a mean change `d` > 0 with variance
    /// `v` per problem: summed over the number K of problems that move (see the module's note).
    fn power(&self, problems: f64, d: f64, v: f64, alpha: f64) -> f64 {
        let q = self.moving.clamp(0.0, 1.0);
        let m = problems.round().max(0.0) as u64;
        if q <= 0.0 || m == 0 {
            return 0.0;
        }
        // Given K moving problems, their differences' raw moments are the unconditional ones / q.
        let (m1, m2) = (d / q, (v + d * d) / q);
        let moving = Tails {
            third: self.third / q,
            fourth: self.fourth / q,
            ..*self
        };
        let least = least_units(alpha) as u64;
        let za = z(1.0 - alpha / 2.0);
        let given = |k: u64| -> f64 {
            if k < least {
                return 0.0;
            }
            if let Some(toward) = self.toward {
                return sign_test_power(k, toward, alpha);
            }
            let spread = (moving.ratio_variance(m1, (m2 - m1 * m1).max(0.0)))
                .map_or(((m2 - m1 * m1).max(0.0) / m2).sqrt(), f64::sqrt);
            let x = (k as f64 * m1 * m1 / m2).sqrt() - za;
            if spread > 1e-12 {
                normal().cdf(x / spread)
            } else {
                (x > 0.0) as u8 as f64
            }
        };
        if q >= 1.0 - 1e-12 {
            return given(m);
        }
        let (mean, sd) = (m as f64 * q, (m as f64 * q * (1.0 - q)).sqrt());
        let lo = (mean - 9.0 * sd - 1.0).floor().max(0.0) as u64;
        let hi = ((mean + 9.0 * sd + 1.0).ceil() as u64).min(m);
        (lo.max(least)..=hi)
            .map(|k| super::binomial_pmf(m, k, q) * given(k))
            .sum::<f64>()
            .min(1.0)
    }
}

/// The exact sign (McNemar) test's power on `k` differences of ±1, each in the change's
/// direction with chance `toward`: it flags when the rarer sign has at most c of them, c the
/// largest count whose two-sided binomial p-value is below `alpha`.
fn sign_test_power(k: u64, toward: f64, alpha: f64) -> f64 {
    // P(Binomial(k, ½) ≤ c), doubled: the test's p-value with c of the rarer sign.
    let p_value = |c: u64| 2.0 * beta_reg((k - c) as f64, (c + 1) as f64, 0.5);
    let mut c = ((k as f64 - z(1.0 - alpha / 2.0) * (k as f64).sqrt()) / 2.0).floor();
    c = c.clamp(0.0, (k as f64 / 2.0).floor());
    let mut c = c as u64;
    while c > 0 && p_value(c) >= alpha {
        c -= 1;
    }
    if p_value(c) >= alpha {
        return 0.0;
    }
    while 2 * (c + 1) < k && p_value(c + 1) < alpha {
        c += 1;
    }
    // P(U ≤ c) for U ~ Binomial(k, π) is I_{1−π}(k − c, c + 1).
    let at_most = |c: u64, pi: f64| {
        if pi <= 0.0 {
            1.0
        } else if pi >= 1.0 {
            0.0
        } else {
            beta_reg((k - c) as f64, (c + 1) as f64, 1.0 - pi)
        }
    };
    // Flagged: the change's side has at least k − c, or at most c (the far tail).
    (1.0 - at_most(k - c - 1, toward) + at_most(c, toward)).clamp(0.0, 1.0)
}

fn normal() -> Normal {
    Normal::new(0.0, 1.0).expect("the standard normal")
}

fn z(p: f64) -> f64 {
    normal().inverse_cdf(p)
}

impl Design {
    /// Problems per unit.
    fn size(&self) -> f64 {
        (self.problems / self.units.max(1.0)).max(1.0)
    }

    /// The probability that the two-sided test at `alpha` flags a true change of `delta` (a
    /// fraction of the scale, either sign).
    pub fn power(&self, delta: f64, alpha: f64) -> f64 {
        let d = delta.abs();
        if d == 0.0 {
            return alpha;
        }
        if self.variance <= 0.0 {
            return if self.units >= least_units(alpha) {
                1.0
            } else {
                0.0
            };
        }
        if let Some(tails) = self.tails.filter(|_| self.size() <= 1.0) {
            return tails.power(self.problems, d, self.variance, alpha);
        }
        let za = z(1.0 - alpha / 2.0);
        let mu2 = self.variance + self.size() * d * d;
        let spread = self.ratio_spread(d);
        let x = ((self.problems * d * d / mu2).sqrt() - za) / spread;
        normal().cdf(x)
    }

    /// The spread of R = T/S per problem: √(v/μ₂), or the delta method's with [`Tails`].
    fn ratio_spread(&self, d: f64) -> f64 {
        let v = self.variance;
        let tails = self.tails.filter(|_| self.size() <= 1.0);
        match tails.and_then(|t| t.ratio_variance(d, v)) {
            Some(var) => var.sqrt(),
            None => (v / (v + self.size() * d * d)).sqrt(),
        }
    }

    /// The smallest |B − A| flagged with probability `power` at level `alpha`, never below what
    /// any test of this many units can flag ([`least_change`]) and at most the whole scale.
    pub fn detectable(&self, alpha: f64, power: f64) -> f64 {
        let floor = least_change(self.units, alpha);
        self.change(alpha, power).max(floor).min(1.0)
    }

    /// [`Design::detectable`] without the floor of whole-scale moves: for values between 0 and 1,
    /// which can move by less than the whole scale (issue 40: a floor there reads as a
    /// contradiction beside a smaller flagged change).
    pub fn change(&self, alpha: f64, power: f64) -> f64 {
        let (za, zb) = (z(1.0 - alpha / 2.0), z(power));
        let (a2, s, v) = (self.problems, self.size(), self.variance.max(0.0));
        // (√m·δ − zβ·√v)² = zα²·(v + s·δ²), the root above zβ·√v/√m.
        let quad = a2 - za * za * s;
        if quad <= 0.0 {
            return 1.0;
        }
        let b = zb * v.sqrt();
        let root = (a2 * b * b - quad * (b * b - za * za * v)).max(0.0).sqrt();
        ((a2.sqrt() * b + root) / quad).min(1.0)
    }
}

/// The fewest units whose all moving one way can be flagged at all: 2·2⁻ᵘ < α.
pub fn least_units(alpha: f64) -> f64 {
    (2.0 / alpha).log2().floor() + 1.0
}

/// The smallest change any test of `units` units flags at `alpha`: [`least_units`] of them moving
/// the whole scale, the rest not at all.
pub fn least_change(units: f64, alpha: f64) -> f64 {
    (least_units(alpha) / units.max(1.0)).min(1.0)
}

/// The problems needed for power `power` against a change `delta` at `alpha` with `shape`'s
/// variance, units and tails (its `problems` ignored): m = ((zα + zβ·σ_R)·√μ₂ / δ)², σ_R the
/// spread of T/S per problem (√(v/μ₂) without tails, which is ((zα·√(v + s·δ²) + zβ·√v) / δ)²),
/// at least [`least_units`] units. With tails, the fewest whole problems at which
/// [`Design::power`] (summed over the problems that move) reaches `power`, searched from there.
pub fn problems_needed(shape: &Design, delta: f64, alpha: f64, power: f64) -> f64 {
    let d = delta.abs().max(f64::MIN_POSITIVE);
    let (za, zb) = (z(1.0 - alpha / 2.0), z(power));
    let design = Design {
        variance: shape.variance.max(0.0),
        ..*shape
    };
    let mu2 = design.variance + design.size() * d * d;
    let m = ((za + zb * design.ratio_spread(d)) * mu2.sqrt() / d).powi(2);
    let floor = least_units(alpha) * design.size();
    let m = m.max(floor);
    if design.tails.is_none() || design.size() > 1.0 {
        return m;
    }
    let reaches = |m: f64| {
        let at = Design {
            problems: m,
            units: m,
            ..design
        };
        at.power(d, alpha) >= power
    };
    // The power grows with the problems (up to the sign test's small steps): double, then halve.
    let mut hi = m.ceil();
    while !reaches(hi) {
        if hi > 1e9 {
            return hi;
        }
        hi *= 2.0;
    }
    let mut lo = floor.ceil() - 1.0;
    while hi - lo > 1.0 {
        let mid = ((lo + hi) / 2.0).floor();
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::function::factorial::ln_binomial;

    fn design(problems: f64, variance: f64) -> Design {
        Design {
            problems,
            units: problems,
            variance,
            tails: None,
        }
    }

    /// The detectable change is where the power formula reaches the target, and the problems
    /// needed for a change are where the detectable change meets it: one formula both ways.
    #[test]
    fn detectable_power_and_problems_needed_agree() {
        for (m, v) in [(30.0, 0.3), (100.0, 0.02), (500.0, 0.004), (40.0, 0.5)] {
            let d = design(m, v);
            let delta = d.detectable(0.05, 0.8);
            if delta > least_change(m, 0.05) && delta < 1.0 {
                assert!((d.power(delta, 0.05) - 0.8).abs() < 1e-9, "{m} {v}");
                let need = problems_needed(&d, delta, 0.05, 0.8);
                assert!((need - m).abs() < 1e-6 * m, "{m} {v}: {need}");
            }
        }
    }

    /// 30 problems, 10 of them moving by one: v = 10/30. The change caught 80% of the time at
    /// 5% solves √30·δ − 1.96·√(v + δ²) = 0.8416·√v: δ ≈ 0.326 (the normal approximation that
    /// ignores the change's own spread says (1.96 + 0.84)·√(v/30) ≈ 0.295).
    #[test]
    fn the_detectable_change_counts_its_own_spread() {
        let d = design(30.0, 10.0 / 30.0);
        let delta = d.detectable(0.05, 0.8);
        assert!((delta - 0.3260).abs() < 1e-3, "{delta}");
        assert!(d.detectable(0.05 / 6.0, 0.8) > delta);
        // Nothing varies: the floor of 6 units (2·2⁻⁶ < 5%).
        assert!((design(30.0, 0.0).detectable(0.05, 0.8) - 6.0 / 30.0).abs() < 1e-12);
        // Clusters of two: the same problems detect less, and at least 6 clusters must move.
        let pairs = Design {
            units: 15.0,
            ..design(30.0, 0.0)
        };
        assert!((pairs.detectable(0.05, 0.8) - 6.0 / 15.0).abs() < 1e-12);
    }

    #[test]
    fn power_grows_with_the_change_and_the_problems() {
        let d = design(100.0, 0.05);
        assert!(d.power(0.01, 0.05) < d.power(0.05, 0.05));
        assert!(d.power(0.05, 0.05) < design(400.0, 0.05).power(0.05, 0.05));
        assert_eq!(d.power(0.0, 0.05), 0.05);
        assert!(problems_needed(&d, 0.05, 0.05, 0.9) > problems_needed(&d, 0.05, 0.05, 0.8));
        assert_eq!(problems_needed(&design(1.0, 0.0), 0.5, 0.05, 0.8), 6.0);
    }

    /// The sign test's power is the binomial tail of the counts its exact p-value flags
    /// (`paired::mcnemar_p`), summed by brute force here.
    #[test]
    fn sign_test_power_is_mcnemars() {
        use crate::stats::paired::mcnemar_p;
        for k in [1u64, 5, 6, 7, 12, 25, 60] {
            for toward in [0.5, 0.7, 0.95, 1.0] {
                let brute: f64 = (0..=k)
                    .filter(|&u| mcnemar_p(u, k - u) < 0.05)
                    .map(|u| {
                        let ln = |x: f64, e: u64| if e == 0 { 0.0 } else { e as f64 * x.ln() };
                        (ln_binomial(k, u) + ln(toward, u) + ln(1.0 - toward, k - u)).exp()
                    })
                    .sum();
                let got = sign_test_power(k, toward, 0.05);
                assert!((got - brute).abs() < 1e-9, "{k} {toward}: {got} vs {brute}");
            }
        }
        // Five problems all moving one way are never flagged at 5% (p = 1/16), six are.
        assert_eq!(sign_test_power(5, 1.0, 0.05), 0.0);
        assert!((sign_test_power(6, 1.0, 0.05) - 1.0).abs() < 1e-12);
    }

    /// A change that moves few problems, each by the whole scale (pass@16 on an easy
    /// population): the test flags when at least 6 move, so the power is P(Binomial(m, q) ≥ 6),
    /// not the normal approximation's, which flags 4.
    #[test]
    fn few_moving_problems_need_six() {
        let q = 0.05;
        let tails = Tails {
            third: q,
            fourth: q,
            moving: q,
            toward: Some(1.0),
        };
        let d = Design {
            problems: 110.0,
            units: 110.0,
            variance: q - q * q,
            tails: Some(tails),
        };
        let at_least_6: f64 = (6..=110u64)
            .map(|k| {
                (ln_binomial(110, k) + k as f64 * q.ln() + (110 - k) as f64 * (1.0 - q).ln()).exp()
            })
            .sum();
        assert!((d.power(q, 0.05) - at_least_6).abs() < 1e-9);
        assert!(at_least_6 < 0.7, "{at_least_6}");
        // The delta method over all 110 problems (the plan's power before) promised about 79%.
        let spread = tails.ratio_variance(q, q - q * q).unwrap().sqrt();
        let before = normal().cdf(((110.0 * q * q / q).sqrt() - z(0.975)) / spread);
        assert!(before > 0.75, "{before}");
        // The problems needed for 80% are where that sum reaches it.
        let need = problems_needed(&d, q, 0.05, 0.8);
        let at = |m: f64| {
            Design {
                problems: m,
                units: m,
                ..d
            }
            .power(q, 0.05)
        };
        assert!(at(need) >= 0.8 && at(need - 1.0) < 0.8, "{need}");
    }

    /// Every problem moving (fractional differences): the sum over the moving problems is the
    /// delta method at m, as before.
    #[test]
    fn all_moving_is_the_delta_method() {
        let (d, v) = (0.05, 0.02);
        let tails = Tails {
            third: 0.001,
            fourth: 0.002,
            moving: 1.0,
            toward: None,
        };
        let with = Design {
            problems: 200.0,
            units: 200.0,
            variance: v,
            tails: Some(tails),
        };
        let var = tails.ratio_variance(d, v).unwrap();
        let x = ((200.0 * d * d / (v + d * d)).sqrt() - z(0.975)) / var.sqrt();
        assert!((with.power(d, 0.05) - normal().cdf(x)).abs() < 1e-12);
    }
}
