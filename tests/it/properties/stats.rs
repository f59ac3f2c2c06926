//! Intervals and paired tests: an interval contains its point, is never a point, is nested in its
//! level; p-values are probabilities and Holm's adjustment only raises them.

use gpassk::stats::interval::{problem_interval, Over};
use gpassk::stats::{holm, mean_interval, paired_test};
use proptest::prelude::*;

/// (sum, count): `count` problems whose values in [0, 1] sum to `sum` (0/1 sums and fractional).
fn scored() -> impl Strategy<Value = (f64, usize)> {
    (1usize..=5000).prop_flat_map(|m| {
        let whole = (0..=m).prop_map(|s| s as f64);
        let frac = (0.0..=1.0f64).prop_map(move |x| x * m as f64);
        (prop_oneof![whole, frac], Just(m))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn an_interval_contains_its_point_and_is_never_a_point(
        (sum, m) in scored(), level in 0.5..0.999f64
    ) {
        let (lo, hi) = mean_interval(sum, m as f64, level).unwrap();
        let mean = sum / m as f64;
        prop_assert!((0.0..=1.0).contains(&lo) && (0.0..=1.0).contains(&hi), "[{lo}, {hi}]");
        prop_assert!(lo <= mean && mean <= hi, "{mean} outside [{lo}, {hi}]");
        prop_assert!(hi > lo, "a point at {sum}/{m}");
    }

    #[test]
    fn intervals_are_nested_in_level((sum, m) in scored(), a in 0.5..0.999f64, b in 0.5..0.999f64) {
        let (narrow, wide) = if a <= b { (a, b) } else { (b, a) };
        let (lo1, hi1) = mean_interval(sum, m as f64, narrow).unwrap();
        let (lo2, hi2) = mean_interval(sum, m as f64, wide).unwrap();
        prop_assert!(lo2 <= lo1 && hi1 <= hi2, "{narrow}: [{lo1}, {hi1}] vs {wide}: [{lo2}, {hi2}]");
    }

    #[test]
    fn more_successes_never_move_an_interval_down((sum, m) in scored(), step in 0.0..=1.0f64) {
        let more = (sum + step).min(m as f64);
        let (lo1, hi1) = mean_interval(sum, m as f64, 0.95).unwrap();
        let (lo2, hi2) = mean_interval(more, m as f64, 0.95).unwrap();
        prop_assert!(lo1 <= lo2 + 1e-12 && hi1 <= hi2 + 1e-12);
    }

    /// The interval over problems (within-problem variance, clusters): contains the mean, never a
    /// point, nested in level, whatever the values, their variances and clusters.
    #[test]
    fn problem_intervals_contain_the_mean_and_are_nested(
        rows in prop::collection::vec((0u32..=16, 0usize..4), 1..60),
        a in 0.5..0.999f64, b in 0.5..0.999f64, clustered in any::<bool>(),
    ) {
        let n = 16.0;
        let values: Vec<f64> = rows.iter().map(|(c, _)| f64::from(*c) / n).collect();
        let within: Vec<f64> = values.iter().map(|p| p * (1.0 - p) / (n - 1.0)).collect();
        let clusters: Vec<usize> = rows.iter().map(|(_, g)| *g).collect();
        let over = Over {
            values: &values,
            within: Some(&within),
            clusters: clustered.then_some(&clusters[..]),
            draws: n * values.len() as f64,
        };
        let (narrow, wide) = if a <= b { (a, b) } else { (b, a) };
        let (lo1, hi1) = problem_interval(&over, narrow).unwrap();
        let (lo2, hi2) = problem_interval(&over, wide).unwrap();
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        prop_assert!((0.0..=1.0).contains(&lo2) && (0.0..=1.0).contains(&hi2), "[{lo2}, {hi2}]");
        prop_assert!(lo1 <= mean + 1e-12 && mean <= hi1 + 1e-12, "{mean} outside [{lo1}, {hi1}]");
        prop_assert!(hi1 > lo1, "a point at {mean}");
        prop_assert!(lo2 <= lo1 + 1e-12 && hi1 <= hi2 + 1e-12, "[{lo1}, {hi1}] not in [{lo2}, {hi2}]");
    }

    #[test]
    fn p_values_are_probabilities_and_holm_only_raises_them(
        pairs in prop::collection::vec((0.0..=1.0f64, 0.0..=1.0f64), 1..40),
        ps in prop::collection::vec(0.0..=1.0f64, 0..12),
    ) {
        let t = paired_test(&pairs).unwrap();
        if let Some(p) = t.p {
            prop_assert!(p > 0.0 && p <= 1.0, "p = {p}");
        }
        prop_assert_eq!(t.p.is_some(), pairs.len() >= gpassk::stats::paired::MIN_SHARED);
        let adjusted = holm(&ps);
        prop_assert_eq!(adjusted.len(), ps.len());
        for (raw, adj) in ps.iter().zip(&adjusted) {
            prop_assert!(raw <= adj && *adj <= 1.0);
        }
        // The order of the p-values is kept.
        for i in 0..ps.len() {
            for j in 0..ps.len() {
                if ps[i] < ps[j] {
                    prop_assert!(adjusted[i] <= adjusted[j]);
                }
            }
        }
    }
}
