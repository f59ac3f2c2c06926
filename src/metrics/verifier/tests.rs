//! The verifier metrics against the definitions, by enumerating every subset independently.

use super::*;
use crate::stats::Vote;
use num_traits::One;

fn lcg(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// Few distinct scores and classes, so ties in scores, in score sums and in votes are common.
fn random_problem(state: &mut u64, n: usize) -> Vec<Sample> {
    const SCORES: [f64; 7] = [0.0, 0.25, 0.5, 0.75, 1.0, 0.1, 0.3];
    (0..n)
        .map(|_| Sample {
            correct: lcg(state).is_multiple_of(2),
            class: match lcg(state) % 5 {
                0 => None,
                c => Some(c % 4),
            },
            score: SCORES[(lcg(state) % SCORES.len() as u64) as usize],
        })
        .collect()
}

fn subsets(n: usize, size: usize) -> impl Iterator<Item = Vec<usize>> {
    (0u32..1 << n)
        .filter(move |m| m.count_ones() as usize == size)
        .map(move |m| (0..n).filter(|i| m >> i & 1 == 1).collect())
}

fn frac(num: usize, den: usize) -> BigRational {
    BigRational::new(BigInt::from(num), BigInt::from(den))
}

fn brute_best(samples: &[Sample], size: usize) -> BigRational {
    let mut sum = BigRational::zero();
    let mut count = 0;
    for pick in subsets(samples.len(), size) {
        let top = pick
            .iter()
            .map(|&i| samples[i].score)
            .fold(f64::NEG_INFINITY, f64::max);
        let tied: Vec<usize> = pick
            .into_iter()
            .filter(|&i| samples[i].score == top)
            .collect();
        let ok = tied.iter().filter(|&&i| samples[i].correct).count();
        sum += frac(ok, tied.len());
        count += 1;
    }
    sum / BigRational::from_integer(count.into())
}

/// Votes weighed by the scores as exact rationals (or by 1), class truth over all samples.
fn brute_vote(samples: &[Sample], size: usize, weighted: bool) -> BigRational {
    let truth = |class: u64| {
        let members: Vec<&Sample> = samples.iter().filter(|s| s.class == Some(class)).collect();
        2 * members.iter().filter(|s| s.correct).count() > members.len()
    };
    let mut sum = BigRational::zero();
    let mut count = 0;
    for pick in subsets(samples.len(), size) {
        count += 1;
        let mut totals: BTreeMap<u64, BigRational> = BTreeMap::new();
        for &i in &pick {
            if let Some(c) = samples[i].class {
                let w = if weighted {
                    BigRational::from_float(samples[i].score).unwrap()
                } else {
                    BigRational::one()
                };
                *totals.entry(c).or_insert_with(BigRational::zero) += w;
            }
        }
        let Some(best) = totals.values().max().cloned() else {
            continue; // nothing voted: the subset scores 0
        };
        let winners: Vec<u64> = totals
            .iter()
            .filter(|(_, t)| **t == best)
            .map(|(c, _)| *c)
            .collect();
        let ok = winners.iter().filter(|&&c| truth(c)).count();
        sum += frac(ok, winners.len());
    }
    sum / BigRational::from_integer(count.into())
}

const ALL_EXACT: VoteBudget = VoteBudget {
    exact_subsets: u64::MAX,
    draws: 0,
    seed: 0,
};

#[test]
fn closed_forms_equal_enumeration_of_every_subset() {
    let mut state = 42;
    for case in 0..300 {
        let n = 1 + case % 10;
        let samples = random_problem(&mut state, n);
        for size in 1..=n {
            let at = size as u64;
            let bon = best_of_n(&samples, at).unwrap().unwrap();
            assert_eq!(
                bon,
                brute_best(&samples, size),
                "bon case {case} n={n} N={size}"
            );
            let wmaj = weighted_majority_at(&samples, at, &ALL_EXACT)
                .unwrap()
                .unwrap();
            assert!(wmaj.is_exact());
            let want = brute_vote(&samples, size, true);
            assert_eq!(wmaj.value(), &want, "wmaj case {case} n={n} N={size}");
            let maj = majority_at(&samples, at, &ALL_EXACT).unwrap().unwrap();
            let want = brute_vote(&samples, size, false);
            assert_eq!(maj.value(), &want, "maj case {case} n={n} N={size}");
        }
        // The default budget enumerates every case this small, so it agrees exactly too.
        let maj = majority_at(&samples, n as u64, &DEFAULT_BUDGET)
            .unwrap()
            .unwrap();
        assert_eq!(maj.value(), &brute_vote(&samples, n, false));
    }
}

#[test]
fn ties_split_evenly_by_hand() {
    let s = |correct, class, score| Sample {
        correct,
        class: Some(class),
        score,
    };
    // Scores 0.9 (right), 0.9 (wrong), 0.1 (right). N=1: 2/3. N=2: a subset holding a 0.9
    // wins with it; {0.9 right, 0.9 wrong} splits: (1 + 1/2 + 0)/3 = 1/2. N=3: 1/2.
    let p = [s(true, 1, 0.9), s(false, 2, 0.9), s(true, 1, 0.1)];
    assert_eq!(best_of_n(&p, 1).unwrap(), Some(frac(2, 3)));
    assert_eq!(best_of_n(&p, 2).unwrap(), Some(frac(1, 2)));
    assert_eq!(best_of_n(&p, 3).unwrap(), Some(frac(1, 2)));
    // wmaj@3: class 1 weighs 1.0 against class 2's 0.9. maj@2: {1,2} and {2,1'} tie 1:1.
    let wmaj = weighted_majority_at(&p, 3, &DEFAULT_BUDGET)
        .unwrap()
        .unwrap();
    assert_eq!(wmaj, Estimate::Exact(frac(1, 1)));
    let maj = majority_at(&p, 2, &DEFAULT_BUDGET).unwrap().unwrap();
    assert_eq!(maj.value(), &frac(2, 3));
}

#[test]
fn majority_at_n_is_the_runs_maj_at_n() {
    let mut state = 7;
    for case in 0..200 {
        let samples = random_problem(&mut state, 1 + case % 12);
        let mut classes: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
        for s in &samples {
            if let Some(c) = s.class {
                let e = classes.entry(c).or_default();
                e.0 += 1;
                e.1 += s.correct as u32;
            }
        }
        let tally: Vec<(u32, u32)> = classes.into_values().collect();
        let n = samples.len() as u64;
        let maj = majority_at(&samples, n, &DEFAULT_BUDGET).unwrap().unwrap();
        assert_eq!(maj, Estimate::Exact(Vote::from_classes(&tally).value()));
    }
}

#[test]
fn sampled_estimates_are_seeded_and_near_the_exact_value() {
    let mut state = 3;
    let samples = random_problem(&mut state, 20);
    let sampled = VoteBudget {
        exact_subsets: 0,
        draws: 4_096,
        seed: 9,
    };
    for size in [3u64, 7, 12] {
        let exact = weighted_majority_at(&samples, size, &ALL_EXACT)
            .unwrap()
            .unwrap();
        let a = weighted_majority_at(&samples, size, &sampled)
            .unwrap()
            .unwrap();
        let b = weighted_majority_at(&samples, size, &sampled)
            .unwrap()
            .unwrap();
        assert_eq!(a, b, "the same seed gives the same estimate");
        let other = VoteBudget {
            seed: 10,
            ..sampled
        };
        let c = weighted_majority_at(&samples, size, &other)
            .unwrap()
            .unwrap();
        assert_ne!(a, c, "another seed draws other subsets");
        let Estimate::Sampled {
            std_error, draws, ..
        } = &a
        else {
            panic!("a budget of 0 subsets samples")
        };
        assert_eq!(*draws, 4_096);
        assert!(*std_error > 0.0 && *std_error < 0.02, "se {std_error}");
        let gap = (super::super::to_f64(a.value()) - super::super::to_f64(exact.value())).abs();
        assert!(
            gap < 5.0 * std_error,
            "N={size}: off by {gap}, se {std_error}"
        );
    }
    // N = n has one subset, which a budget of 0 subsets samples: every draw is the whole set.
    let all = majority_at(&samples, 20, &sampled).unwrap().unwrap();
    assert_eq!(all.value(), &brute_vote(&samples, 20, false));
    assert_eq!(all.std_error(), 0.0);
}

#[test]
fn scores_far_apart_take_the_wide_path_and_stay_exact() {
    let s = |correct, class, score| Sample {
        correct,
        class: Some(class),
        score,
    };
    // 1e-300 against 1.0 needs ~1000 bits over one power of two; three tiny votes never beat one.
    let p = [
        s(true, 1, 1e-300),
        s(true, 1, 1e-300),
        s(true, 1, 2e-300),
        s(false, 2, 1.0),
        s(false, 2, f64::MIN_POSITIVE),
        s(true, 3, 1.0),
    ];
    assert!(matches!(exact_weights(&p, 6), Weights::Big(_)));
    for size in 1..=6 {
        let got = weighted_majority_at(&p, size as u64, &ALL_EXACT)
            .unwrap()
            .unwrap();
        assert_eq!(got.value(), &brute_vote(&p, size, true), "N={size}");
    }
    assert!(matches!(exact_weights(&p[..3], 3), Weights::Small(_)));
}

#[test]
fn bad_input_and_sizes_beyond_n() {
    let ok = Sample {
        correct: true,
        class: None,
        score: 0.5,
    };
    let nan = Sample {
        score: f64::NAN,
        ..ok
    };
    let neg = Sample { score: -1.0, ..ok };
    assert_eq!(
        best_of_n(&[ok, nan], 1),
        Err(VerifierError::NotFinite { index: 1 })
    );
    assert_eq!(best_of_n(&[ok], 0), Err(VerifierError::ZeroSize));
    // A negative score ranks, but cannot weigh a vote.
    assert_eq!(best_of_n(&[neg, ok], 1).unwrap(), Some(BigRational::one()));
    assert_eq!(
        weighted_majority_at(&[ok, neg], 1, &DEFAULT_BUDGET),
        Err(VerifierError::Negative { index: 1 })
    );
    assert_eq!(best_of_n(&[ok], 2).unwrap(), None);
    assert_eq!(majority_at(&[ok], 2, &DEFAULT_BUDGET).unwrap(), None);
    // Nothing voted: 0, as maj@n scores an unanswered problem.
    let maj = majority_at(&[ok, ok], 1, &DEFAULT_BUDGET).unwrap().unwrap();
    assert_eq!(maj, Estimate::Exact(BigRational::zero()));
}

#[test]
fn a_problem_with_fewer_samples_keeps_its_own_n() {
    let mut state = 11;
    let short = random_problem(&mut state, 5);
    let rows = verifier_values(&short, &[1, 4, 8, 5], &DEFAULT_BUDGET).unwrap();
    let sizes: Vec<u64> = rows.iter().map(|r| r.size).collect();
    assert_eq!(sizes, [1, 4, 5], "N = 8 > n = 5 is skipped");
    assert_eq!(rows[1].best_of_n, brute_best(&short, 4));
    assert_eq!(rows[2].majority.value(), &brute_vote(&short, 5, false));
}

#[test]
fn aggregations_of_step_scores() {
    let s = [0.9, 0.5, 0.8];
    assert_eq!(Aggregation::Min.of(&s), Some(0.5));
    assert_eq!(Aggregation::Last.of(&s), Some(0.8));
    assert_eq!(Aggregation::Product.of(&s), Some(0.9 * 0.5 * 0.8));
    let mean = Aggregation::Mean.of(&s).unwrap();
    assert!((mean - 2.2 / 3.0).abs() < 1e-12);
    assert_eq!(Aggregation::Min.of(&[]), None);
    for (name, a) in Aggregation::ALL {
        assert_eq!((a.name(), Aggregation::parse(name)), (name, Some(a)));
    }
    assert_eq!(Aggregation::parse("max"), None);
}
