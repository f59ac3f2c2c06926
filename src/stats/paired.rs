//! Paired tests of B − A over shared problems: the exact sign-flip (permutation) test, which is the
//! exact McNemar test when every value is 0 or 1, and Holm's step-down correction across tests.
//!
//! Under "A and B are the same model", each problem's pair is exchangeable, so the sign of each
//! difference is a fair coin given its size (Fisher 1935; Good 2005, ch. 3). Problems that share
//! a cluster (a dataset group, the two language copies of one question) are flipped together:
//! their summed difference is one unit, which keeps the test exact and makes it about the
//! population of questions rather than about copies of them. The p-value is exact:
//! by enumeration or the binomial tail when that is cheap, otherwise a sequential Monte Carlo
//! p-value with a fixed seed (Besag and Clifford 1991), which keeps the test's level: it never
//! reports a p-value of zero (Phipson and Smyth 2010).

use super::SplitMix64;
use statrs::function::factorial::ln_binomial;

/// Below this many shared problems, no difference is tested or flagged.
pub const MIN_SHARED: usize = 10;
/// Family-wise level of `compare`'s flags.
pub const ALPHA: f64 = 0.05;
/// Sign-flip draws when the differences are too many to enumerate.
pub const DRAWS: usize = 9999;
/// Monte Carlo draws stop once this many are at least as extreme as the data: a large p-value
/// is then known well enough, and the p-value stays valid (Besag and Clifford 1991).
const STOP_HITS: usize = 40;
/// Enumerate all 2^m sign patterns up to this many non-zero differences.
const ENUMERATE_MAX: usize = 14;
/// Seed of the Monte Carlo sign flips ("gpassk" in ASCII, then a version byte).
pub const SEED: u64 = 0x6770_6173_736b_0101;

/// B − A over paired problems with its two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedTest {
    pub a: f64,
    pub b: f64,
    /// Mean of B − A over the pairs.
    pub delta: f64,
    /// Two-sided p-value of "no difference"; `None` below [`MIN_SHARED`] units.
    pub p: Option<f64>,
    pub problems: usize,
    /// Independent units among the problems (clusters count once); `problems` without clusters.
    pub units: usize,
    /// The spread of the mean difference under "no difference": sqrt(Σ D²) / problems, D a
    /// unit's summed difference.
    pub spread: f64,
    /// Every value of both runs is 0 or 1 (a problem moves by the whole scale or not at all).
    pub binary: bool,
}

/// Tests B − A over `(a, b)` pairs of per-problem values; `None` when there is no pair.
pub fn paired_test(pairs: &[(f64, f64)]) -> Option<PairedTest> {
    paired_test_by(pairs, None)
}

/// [`paired_test`] with each pair's cluster (an index; `None`: every pair its own): the signs of
/// a cluster's differences flip together.
pub fn paired_test_by(pairs: &[(f64, f64)], clusters: Option<&[usize]>) -> Option<PairedTest> {
    if pairs.is_empty() {
        return None;
    }
    let len = pairs.len() as f64;
    let a = pairs.iter().map(|p| p.0).sum::<f64>() / len;
    let b = pairs.iter().map(|p| p.1).sum::<f64>() / len;
    let count = clusters.map_or(pairs.len(), |c| {
        c.iter().copied().max().map_or(0, |x| x + 1)
    });
    let mut sums = vec![0.0; count];
    let mut seen = vec![false; count];
    for (i, p) in pairs.iter().enumerate() {
        let g = clusters.map_or(i, |c| c[i]);
        sums[g] += p.1 - p.0;
        seen[g] = true;
    }
    let units = seen.iter().filter(|s| **s).count();
    let diffs: Vec<f64> = sums.into_iter().filter(|d| *d != 0.0).collect();
    let p = (units >= MIN_SHARED).then(|| sign_flip_p(&diffs));
    Some(PairedTest {
        a,
        b,
        // fold from +0.0: an empty f64 sum is -0.0, which would print as "-0.0".
        delta: diffs.iter().fold(0.0, |s, d| s + d) / len,
        p,
        problems: pairs.len(),
        units,
        spread: diffs.iter().map(|d| d * d).sum::<f64>().sqrt() / len,
        binary: pairs
            .iter()
            .all(|&(x, y)| [x, y].iter().all(|v| *v == 0.0 || *v == 1.0)),
    })
}

/// The power at which [`PairedTest::detectable`] states the smallest detectable change.
pub const POWER: f64 = super::power::POWER;

impl PairedTest {
    /// The fewest problems that must move, all the same way, for the test at level `alpha` to
    /// flag a difference: the sign-flip p-value of m differences is at least 2·2⁻ᵐ.
    pub fn fewest_moving(alpha: f64) -> usize {
        super::power::least_units(alpha) as usize
    }

    /// The smallest |B − A| that the test at level `alpha` flags with probability [`POWER`] on
    /// problems like these ([`super::power::Design`], the formula `gpassk plan` uses): the
    /// observed differences taken as the spread under no change. For 0/1 values never below what
    /// any test of this many units can flag; finer values can move by less than the whole
    /// scale, so they have no such floor, and with nothing moved no estimate. `None` too when
    /// the difference is not tested.
    pub fn detectable(&self, alpha: f64) -> Option<f64> {
        self.p?;
        let design = self.design();
        match self.binary {
            true => Some(design.detectable(alpha, POWER)),
            false if self.spread > 0.0 => Some(design.change(alpha, POWER)),
            false => None,
        }
    }

    /// The comparison as a design for [`super::power`]: its problems, units and the variance of
    /// one problem's difference (Σ D² / m).
    pub fn design(&self) -> super::power::Design {
        let m = self.problems as f64;
        super::power::Design {
            problems: m,
            units: self.units as f64,
            variance: self.spread * self.spread * m,
            tails: None,
        }
    }
}

/// Two-sided p-value of the sign-flip test on the non-zero differences.
pub fn sign_flip_p(diffs: &[f64]) -> f64 {
    if diffs.is_empty() {
        return 1.0;
    }
    if diffs.iter().all(|d| d.abs() == 1.0) {
        let up = diffs.iter().filter(|d| **d > 0.0).count() as u64;
        return mcnemar_p(up, diffs.len() as u64 - up);
    }
    let sizes: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    let observed = diffs.iter().sum::<f64>().abs();
    // Sums of the same signs may differ in the last bits: count near-ties as at least as extreme.
    let bar = observed - 1e-9 * sizes.iter().sum::<f64>();
    let signed = |bits: &mut dyn FnMut() -> u64| {
        let mut total = 0.0;
        let mut word = 0u64;
        for (i, s) in sizes.iter().enumerate() {
            if i % 64 == 0 {
                word = bits();
            }
            total += if word >> (i % 64) & 1 == 1 { *s } else { -*s };
        }
        total.abs()
    };
    if sizes.len() <= ENUMERATE_MAX {
        let patterns = 1u64 << sizes.len();
        let hits = (0..patterns)
            .filter(|&mask| signed(&mut || mask) >= bar)
            .count();
        return hits as f64 / patterns as f64;
    }
    // Besag–Clifford sequential sampling: stop after STOP_HITS draws at least as extreme.
    let mut rng = SplitMix64::new(SEED);
    let mut hits = 0;
    for draw in 1..=DRAWS {
        hits += (signed(&mut || rng.next_u64()) >= bar) as usize;
        if hits == STOP_HITS {
            return hits as f64 / draw as f64;
        }
    }
    (1 + hits) as f64 / (1 + DRAWS) as f64
}

/// Differences enumerated exactly by [`flags`]' shortcut (the largest ones); the rest summed as
/// one normal term.
const SHORTCUT_EXACT: usize = 8;
/// [`flags`] answers from its shortcut when that p-value is beyond α by this factor either way,
/// else from [`sign_flip_p`] itself.
const SHORTCUT_MARGIN: f64 = 1.5;
/// Below this level the shortcut decides alone (see [`flags`]).
const SHORTCUT_ALONE: f64 = 0.01;

/// Whether the test at level `alpha` flags these non-zero differences: `sign_flip_p(diffs) <
/// alpha`, the same decision, without drawing its Monte Carlo p-value when the answer is clear.
/// `gpassk plan` runs the test thousands of times on simulated runs; [`sign_flip_p`] costs up to
/// [`DRAWS`] sign patterns a call. The shortcut's p-value enumerates the signs of the
/// `SHORTCUT_EXACT` largest differences and treats the others' signed sum as normal (exact
/// when a few differences carry the sum, normal when many small ones do); only when it lands
/// within a factor `SHORTCUT_MARGIN` of `alpha`, at levels of at least `SHORTCUT_ALONE`,
/// does the test's own p-value decide (at Holm's levels it would draw all its patterns).
pub fn flags(diffs: &[f64], alpha: f64) -> bool {
    let k = diffs.len();
    // The smallest p-values: 2·2⁻ᵏ enumerated, 1/(1 + DRAWS) drawn.
    if k == 0 || 2f64.powi(1 - k.min(1000) as i32) >= alpha {
        return false;
    }
    if k > ENUMERATE_MAX && alpha * (1 + DRAWS) as f64 <= 1.0 {
        return false;
    }
    if k <= SHORTCUT_EXACT || diffs.iter().all(|d| d.abs() == 1.0) {
        return sign_flip_p(diffs) < alpha;
    }
    // Hoeffding: P(|Σ ±|d|| ≥ t) ≤ 2·exp(−t²/(2·Σ d²)), so far enough out the p-value is
    // below α/2 for certain (the drawn one too: it is at most 1/(1 + DRAWS) < α here).
    let (sum, squares) = diffs.iter().fold((0.0, 0.0), |a, d| (a.0 + d, a.1 + d * d));
    if 2.0 * (-sum * sum / (2.0 * squares)).exp() < alpha / SHORTCUT_MARGIN {
        return true;
    }
    let p = shortcut_p(diffs);
    // Below 1% the drawn p-value near α costs all its DRAWS: the shortcut decides alone there.
    if p < alpha / SHORTCUT_MARGIN || alpha < SHORTCUT_ALONE {
        p < alpha
    } else if p > alpha * SHORTCUT_MARGIN {
        false
    } else {
        sign_flip_p(diffs) < alpha
    }
}

/// The sign-flip p-value with the [`SHORTCUT_EXACT`] largest differences' signs enumerated and
/// the rest's signed sum taken as normal, N(0, Σ rest²).
fn shortcut_p(diffs: &[f64]) -> f64 {
    let mut sizes: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    sizes.sort_unstable_by(|a, b| b.total_cmp(a));
    let (big, rest) = sizes.split_at(SHORTCUT_EXACT.min(sizes.len()));
    let sd = rest.iter().map(|x| x * x).sum::<f64>().sqrt();
    let observed = diffs.iter().sum::<f64>().abs();
    let bar = observed - 1e-9 * sizes.iter().sum::<f64>();
    let normal = statrs::distribution::Normal::new(0.0, 1.0).expect("the standard normal");
    let beyond = |s: f64| -> f64 {
        use statrs::distribution::ContinuousCDF;
        if sd == 0.0 {
            return (s.abs() >= bar) as u8 as f64;
        }
        // Beyond 9 standard deviations a tail is below 1e-18: not worth its erf.
        let tail = |z: f64| match z {
            z if z > 9.0 => 0.0,
            z if z < -9.0 => 1.0,
            z => normal.sf(z),
        };
        tail((bar - s) / sd) + tail((bar + s) / sd)
    };
    // A pattern and its mirror image are equally extreme: fix the largest one's sign.
    let patterns = 1u64 << (big.len() - 1);
    let total: f64 = (0..patterns)
        .map(|mask| {
            let s = big[0]
                + (big[1..].iter().enumerate())
                    .map(|(i, b)| if mask >> i & 1 == 1 { *b } else { -*b })
                    .sum::<f64>();
            beyond(s)
        })
        .sum();
    total / patterns as f64
}

/// Exact two-sided McNemar p-value from the discordant pairs (`up` B-only, `down` A-only).
pub fn mcnemar_p(up: u64, down: u64) -> f64 {
    let n = up + down;
    if n == 0 {
        return 1.0;
    }
    let ln_half = n as f64 * std::f64::consts::LN_2;
    let tail: f64 = (0..=up.min(down))
        .map(|i| (ln_binomial(n, i) - ln_half).exp())
        .sum();
    (2.0 * tail).min(1.0)
}

/// Holm's step-down adjusted p-values (Holm 1979), in the input order.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]).then(i.cmp(&j)));
    let mut adjusted = vec![0.0; p.len()];
    let mut running = 0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((p.len() - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcnemar_matches_the_binomial_tail() {
        // 0 of 6 discordant pairs going up: 2 · (1/2)^6.
        assert!((mcnemar_p(0, 6) - 2.0 / 64.0).abs() < 1e-12);
        assert!((mcnemar_p(1, 9) - 2.0 * 11.0 / 1024.0).abs() < 1e-12);
        assert_eq!(mcnemar_p(3, 3), 1.0);
        assert_eq!(mcnemar_p(0, 0), 1.0);
        // The sign-flip test on ±1 differences is the same test.
        let d = [-1.0; 6];
        assert_eq!(sign_flip_p(&d), mcnemar_p(0, 6));
    }

    #[test]
    fn enumeration_counts_every_sign_pattern() {
        // The four patterns give |sums| 0.75, 0.25, 0.25, 0.75: two reach the observed 0.75.
        assert_eq!(sign_flip_p(&[0.5, 0.25]), 0.5);
        assert_eq!(sign_flip_p(&[]), 1.0);
        let d: Vec<f64> = (0..8).map(|i| -0.1 - i as f64 / 100.0).collect();
        assert_eq!(sign_flip_p(&d), 2.0 / 256.0);
    }

    #[test]
    fn monte_carlo_is_reproducible_and_valid() {
        let d: Vec<f64> = (0..40)
            .map(|i| if i % 5 == 0 { 0.4 } else { -0.3 })
            .collect();
        let p = sign_flip_p(&d);
        assert_eq!(p, sign_flip_p(&d));
        assert!(p > 1.0 / (1 + DRAWS) as f64 && p < 0.05, "{p}");
        let balanced: Vec<f64> = (0..40)
            .map(|i| if i % 2 == 0 { 0.3 } else { -0.3 })
            .collect();
        assert!(sign_flip_p(&balanced) > 0.9);
    }

    #[test]
    fn too_few_problems_are_never_tested() {
        let one = paired_test(&[(1.0, 0.0)]).unwrap();
        assert_eq!((one.p, one.delta, one.problems), (None, -1.0, 1));
        let nine: Vec<(f64, f64)> = vec![(1.0, 0.0); MIN_SHARED - 1];
        assert_eq!(paired_test(&nine).unwrap().p, None);
        let ten: Vec<(f64, f64)> = vec![(1.0, 0.0); MIN_SHARED];
        assert!(paired_test(&ten).unwrap().p.unwrap() < 0.01);
        let same = paired_test(&[(0.5, 0.5); 12]).unwrap();
        assert_eq!(
            (same.p, format!("{:+.1}", same.delta)),
            (Some(1.0), "+0.0".into())
        );
    }

    /// 30 problems, 10 of them moving by one: the detectable change is the power module's for a
    /// per-problem variance of 10/30 (≈ 32.6 points); with nothing moving, the floor of 6 units
    /// (2·2⁻⁶ < 5%).
    #[test]
    fn the_detectable_change_follows_the_spread_and_has_a_floor() {
        let mut pairs = vec![(0.0, 0.0); 20];
        pairs.extend(vec![(1.0, 0.0); 5]);
        pairs.extend(vec![(0.0, 1.0); 5]);
        let t = paired_test(&pairs).unwrap();
        let d = t.detectable(ALPHA).unwrap();
        assert!((d - 0.3260).abs() < 1e-3, "{d}");
        // A stricter level (Holm's first step over 6 tests) needs a larger change.
        assert!(t.detectable(ALPHA / 6.0).unwrap() > d);
        let same = paired_test(&[(1.0, 1.0); 30]).unwrap();
        assert!((same.detectable(ALPHA).unwrap() - 6.0 / 30.0).abs() < 1e-12);
        assert_eq!(PairedTest::fewest_moving(ALPHA), 6);
        // Values between 0 and 1 can move by less than the whole scale: no floor, and with
        // nothing moved no estimate.
        assert_eq!(
            paired_test(&[(0.5, 0.5); 30]).unwrap().detectable(ALPHA),
            None
        );
        // Issue 40: mG-Pass falling by about 0.12 on every one of 30 problems is flagged even at
        // Holm's first step over 30 tests, and its detectable change is below the fall, where the
        // 0/1 floor (11 of 30 problems, 36.7 points) made the row read as a contradiction.
        let fall: Vec<(f64, f64)> = (0..30)
            .map(|i| (0.6, 0.45 + 0.01 * f64::from(i % 6)))
            .collect();
        let t = paired_test(&fall).unwrap();
        let strictest = ALPHA / 30.0;
        assert!(t.p.unwrap() < strictest && t.delta < -0.1, "{t:?}");
        assert!(t.detectable(strictest).unwrap() < -t.delta, "{t:?}");
        assert_eq!(
            paired_test(&[(1.0, 0.0); 9]).unwrap().detectable(ALPHA),
            None
        );
    }

    /// Clustered pairs flip together: 12 questions in two copies, one copy of each moving up by
    /// one. The test counts 12 units (each up by one), not 24, and its spread is that of the
    /// clusters' sums; 18 problems in 9 clusters are not tested.
    #[test]
    fn clusters_flip_together_and_count_as_units() {
        let pairs: Vec<(f64, f64)> = (0..24)
            .map(|i| if i % 2 == 0 { (0.0, 1.0) } else { (0.0, 0.0) })
            .collect();
        let clusters: Vec<usize> = (0..24).map(|i| i / 2).collect();
        let plain = paired_test(&pairs).unwrap();
        let by = paired_test_by(&pairs, Some(&clusters)).unwrap();
        assert_eq!((plain.units, by.units), (24, 12));
        assert!(plain.p.unwrap() < 0.001);
        // Every cluster moved by +1: 12 of 12 units up.
        assert!((by.p.unwrap() - mcnemar_p(12, 0)).abs() < 1e-12);
        assert_eq!(by.delta, plain.delta);
        // One copy of each moved: a cluster's sum is that one difference, the spread unchanged.
        assert_eq!(by.spread, plain.spread);
        // Both copies moving together: a unit's sum is 2, and the spread doubles over √2.
        let both = vec![(0.0, 1.0); 24];
        let (a, b) = (
            paired_test(&both).unwrap(),
            paired_test_by(&both, Some(&clusters)).unwrap(),
        );
        assert!((b.spread / a.spread - 2f64.sqrt()).abs() < 1e-12);
        let few = paired_test_by(&pairs[..18], Some(&clusters[..18])).unwrap();
        assert_eq!((few.units, few.p), (9, None));
    }

    /// The shortcut decides as the test's own p-value does, on differences of every shape the
    /// planner simulates (a few large ones among many tiny ones, all alike, mixed signs; at 5%
    /// and at a Holm level), but for a few cases whose drawn p-value is itself within its noise
    /// of α. Its p-value is within a factor 1.6 of the drawn one.
    #[test]
    fn flags_decides_as_the_p_value_does() {
        let mut rng = SplitMix64::new(0xF1A6);
        let unit = |rng: &mut SplitMix64| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let (mut cases, mut alone, mut differ) = (0, 0, 0);
        for round in 0..240 {
            let k = 9 + round % 60;
            let up = 0.5 + 0.45 * unit(&mut rng);
            let diffs: Vec<f64> = (0..k)
                .map(|i| {
                    let size = match round % 3 {
                        0 if i % 7 == 0 => 0.3 + 0.7 * unit(&mut rng),
                        0 => 1e-3 * unit(&mut rng) + 1e-6,
                        1 => 0.2 + 0.1 * unit(&mut rng),
                        _ => unit(&mut rng).powi(3) + 1e-6,
                    };
                    if unit(&mut rng) < up {
                        size
                    } else {
                        -size
                    }
                })
                .collect();
            let p = sign_flip_p(&diffs);
            for alpha in [ALPHA, ALPHA / 12.0] {
                cases += 1;
                if flags(&diffs, alpha) != (p < alpha) {
                    // Only where the drawn p-value itself is near α (it is ±10–20% there).
                    let near = p / alpha;
                    assert!(near > 1.0 / 1.6 && near < 1.6, "{diffs:?} at {alpha}: {p}");
                    differ += 1;
                }
                let short = shortcut_p(&diffs);
                if short < alpha / SHORTCUT_MARGIN || short > alpha * SHORTCUT_MARGIN {
                    alone += 1;
                }
            }
            // Near α, within the margin (the Monte Carlo p-value itself is ±10–20% there).
            if p > 0.005 && p < 0.3 && k > 20 {
                let ratio = shortcut_p(&diffs) / p;
                assert!(ratio < 1.6 && ratio > 1.0 / 1.6, "{diffs:?}: {ratio}");
            }
        }
        // The shortcut answers most cases alone (else it saves nothing), and nearly always as
        // the drawn p-value does.
        assert!(alone * 10 >= cases * 7, "{alone} of {cases}");
        assert!(differ * 50 <= cases, "{differ} of {cases}");
    }

    #[test]
    fn holm_steps_down_and_stays_monotone() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.5]);
        let want = [0.04, 0.09, 0.09, 0.5];
        assert!(
            adj.iter().zip(want).all(|(a, w)| (a - w).abs() < 1e-12),
            "{adj:?}"
        );
        assert_eq!(holm(&[]), Vec::<f64>::new());
    }
}
