//! G-Pass@k_τ, pass@k and mG-Pass@k as exact rationals: equal to a brute-force count of k-subsets
//! on small n, monotone in c and in τ, between their bounds.

use gpassk::metrics::{
    binomial, g_pass_at_k, g_pass_at_k_threshold, mg_pass_at_k, mg_thresholds, pass_at_k,
    problem_metrics, MetricTable, Tau,
};
use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};
use proptest::prelude::*;

fn q(num: u64, den: u64) -> BigRational {
    BigRational::new(BigInt::from(num), BigInt::from(den))
}

/// (n, c, k) with 1 ≤ k ≤ n ≤ `max_n` and c ≤ n.
fn nck(max_n: u64) -> impl Strategy<Value = (u64, u64, u64)> {
    (1..=max_n).prop_flat_map(|n| (Just(n), 0..=n, 1..=n))
}

/// τ = num/den in [0, 1] with a small denominator (the values users type: 0.25, 2/3, 1).
fn tau() -> impl Strategy<Value = Tau> {
    (1u64..=12)
        .prop_flat_map(|den| (0..=den, Just(den)))
        .prop_map(|(num, den)| Tau::from_fraction(num, den).unwrap())
}

/// Of the C(n, k) ways to draw k of n samples (the first c correct), those with ≥ m correct.
fn brute_force(n: u64, c: u64, k: u64, m: u64) -> BigRational {
    let correct_mask = (1u32 << c) - 1;
    let (mut hits, mut all) = (0u64, 0u64);
    for subset in 0u32..(1 << n) {
        if u64::from(subset.count_ones()) == k {
            all += 1;
            hits += u64::from(u64::from((subset & correct_mask).count_ones()) >= m);
        }
    }
    q(hits, all)
}

fn config() -> ProptestConfig {
    ProptestConfig::with_cases(200)
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn exact_values_equal_a_brute_force_count((n, c, k) in nck(10)) {
        for m in 1..=k {
            prop_assert_eq!(g_pass_at_k_threshold(n, c, k, m).unwrap(), brute_force(n, c, k, m));
        }
        prop_assert_eq!(pass_at_k(n, c, k).unwrap(), brute_force(n, c, k, 1));
        // mG-Pass@k = (2/k)·Σ G-Pass@k over m = ⌈k/2⌉+1 … k.
        let sum = mg_thresholds(k)
            .map(|m| brute_force(n, c, k, m))
            .fold(BigRational::zero(), |a, b| a + b);
        prop_assert_eq!(mg_pass_at_k(n, c, k).unwrap(), sum * q(2, k));
    }

    #[test]
    fn g_pass_is_monotone_in_c_and_in_tau((n, c, k) in nck(60), t1 in tau(), t2 in tau()) {
        let (lo, hi) = if t1.to_f64() <= t2.to_f64() { (t1, t2) } else { (t2, t1) };
        // More correct samples never lower it; a stricter τ never raises it.
        if c < n {
            for t in [&lo, &hi] {
                prop_assert!(g_pass_at_k(n, c, k, t).unwrap() <= g_pass_at_k(n, c + 1, k, t).unwrap());
            }
        }
        prop_assert!(g_pass_at_k(n, c, k, &lo).unwrap() >= g_pass_at_k(n, c, k, &hi).unwrap());
    }

    #[test]
    fn g_pass_lies_between_its_bounds((n, c, k) in nck(60), t in tau()) {
        let g = g_pass_at_k(n, c, k, &t).unwrap();
        let m = t.threshold(k);
        // At least all-k-correct (τ = 1), at most pass@k (one correct suffices).
        let all_correct = BigRational::new(
            BigInt::from(binomial(c, k)),
            BigInt::from(binomial(n, k)),
        );
        prop_assert!(all_correct <= g && g <= pass_at_k(n, c, k).unwrap());
        // 0 exactly when fewer than m are correct; 1 exactly when every draw of k holds m.
        prop_assert_eq!(g.is_zero(), m > c);
        prop_assert_eq!(g.is_one(), n - c <= k - m);
        let mg = mg_pass_at_k(n, c, k).unwrap();
        prop_assert!(mg >= BigRational::zero() && mg <= BigRational::one());
    }

    #[test]
    fn pass_at_k_is_g_pass_with_threshold_one(
        (n, c, k) in nck(200), den in 1u64..=400, pick in any::<u64>()
    ) {
        // Any τ with ⌈τk⌉ ≤ 1 (τ = 0 included) asks for one correct sample of k.
        let t = Tau::from_fraction(pick % (den / k + 1), den).unwrap();
        prop_assert_eq!(t.threshold(k), 1);
        prop_assert_eq!(g_pass_at_k(n, c, k, &t).unwrap(), pass_at_k(n, c, k).unwrap());
        let zero = Tau::from_fraction(0, 1).unwrap();
        prop_assert_eq!(g_pass_at_k(n, c, k, &zero).unwrap(), pass_at_k(n, c, k).unwrap());
    }

    #[test]
    fn the_cached_table_equals_direct_computation((n, c, k) in nck(300), t in tau()) {
        let taus = [t, Tau::from_fraction(1, 1).unwrap()];
        let table = MetricTable::new(n, k, &taus).unwrap();
        prop_assert_eq!(table.per_problem(c).unwrap(), problem_metrics(n, c, k, &taus).unwrap());
    }

    #[test]
    fn tau_text_and_fraction_agree(num in 0u64..=1000, den in 1u64..=1000) {
        prop_assume!(num <= den);
        let parsed: Tau = format!("{num}/{den}").parse().unwrap();
        prop_assert_eq!(&parsed, &Tau::from_fraction(num, den).unwrap());
        // The threshold is ⌈τ·k⌉ (at least 1) for every k.
        for k in [1u64, 2, 3, 7, 16, 100] {
            let want = (num * k).div_ceil(den).max(1);
            prop_assert_eq!(parsed.threshold(k), want);
        }
    }
}
