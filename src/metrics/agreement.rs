//! How a verifier's step scores agree with Math-Shepherd step labels: accuracy at a threshold and
//! the area under the ROC curve, exact, against the hard estimate (HE: any rollout reached the
//! gold answer) and the soft one (SE: the fraction that did).
//!
//! A step is predicted good when its score is at least [`THRESHOLD`]. Against HE this is plain
//! accuracy and the AUC by rank (Mann–Whitney): the chance that a good step outscores a bad one,
//! ties counting one half. Against SE each step is good with weight SE and bad with weight 1 − SE:
//! accuracy is the expected fraction of steps predicted right, and the AUC weighs each pair of
//! distinct steps (i, j) by SE_i·(1 − SE_j). Both equal the hard forms when every SE is 0 or 1.

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{One, Zero};

/// Scores at or above this predict a good step.
pub const THRESHOLD: f64 = 0.5;

/// One labelled step: the verifier's score and the step's rollouts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelledStep {
    /// Finite (the caller drops unreadable scores).
    pub score: f64,
    /// Rollouts from the step's prefix that reached the gold answer.
    pub correct: u32,
    /// Rollouts from the prefix, at least 1.
    pub rollouts: u32,
}

/// Accuracy at [`THRESHOLD`] and the AUC against one kind of label.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    pub accuracy: BigRational,
    /// None when every step has the same label (no good–bad pair to rank).
    pub auc: Option<BigRational>,
}

/// Agreement against both estimates, over `steps` labelled steps.
#[derive(Debug, Clone, PartialEq)]
pub struct StepAgreement {
    pub steps: u64,
    /// Against HE.
    pub hard: Agreement,
    /// Against SE.
    pub soft: Agreement,
}

/// The agreement of `steps` (those with no rollouts are left out); None without any.
pub fn step_agreement(steps: &[LabelledStep]) -> Option<StepAgreement> {
    let steps: Vec<&LabelledStep> = steps
        .iter()
        .filter(|s| s.rollouts > 0 && s.score.is_finite())
        .collect();
    if steps.is_empty() {
        return None;
    }
    let one = BigRational::one();
    let hard: Vec<(f64, BigRational)> = steps
        .iter()
        .map(|s| {
            let good = if s.correct > 0 {
                one.clone()
            } else {
                BigRational::zero()
            };
            (s.score, good)
        })
        .collect();
    let soft: Vec<(f64, BigRational)> = steps
        .iter()
        .map(|s| {
            let se = BigRational::new(BigInt::from(s.correct.min(s.rollouts)), s.rollouts.into());
            (s.score, se)
        })
        .collect();
    Some(StepAgreement {
        steps: steps.len() as u64,
        hard: agreement(hard),
        soft: agreement(soft),
    })
}

/// Accuracy and AUC of scores against labels given as the weight of "good" in [0, 1].
fn agreement(mut steps: Vec<(f64, BigRational)>) -> Agreement {
    let one = BigRational::one();
    let m = BigRational::from_integer(BigInt::from(steps.len()));
    let right = steps
        .iter()
        .fold(BigRational::zero(), |acc, (score, good)| {
            if *score >= THRESHOLD {
                acc + good
            } else {
                acc + (&one - good)
            }
        });
    steps.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Over the groups of equal scores, lowest first: good weight above bad weight below, and half
    // of the pairs within a group, a step never paired with itself.
    let (mut bad_below, mut above, mut tied) = (
        BigRational::zero(),
        BigRational::zero(),
        BigRational::zero(),
    );
    let (mut all_good, mut all_bad, mut own) = (
        BigRational::zero(),
        BigRational::zero(),
        BigRational::zero(),
    );
    for group in steps.chunk_by(|a, b| a.0 == b.0) {
        let (mut good, mut bad, mut self_pairs) = (
            BigRational::zero(),
            BigRational::zero(),
            BigRational::zero(),
        );
        for (_, g) in group {
            let b = &one - g;
            self_pairs += g * &b;
            good += g;
            bad += b;
        }
        above += &good * &bad_below;
        tied += &good * &bad - &self_pairs;
        bad_below += &bad;
        all_good += good;
        all_bad += bad;
        own += self_pairs;
    }
    let pairs = all_good * all_bad - own;
    let half = BigRational::new(1.into(), 2.into());
    Agreement {
        accuracy: right / m,
        auc: (!pairs.is_zero()).then(|| (above + tied * half) / pairs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(n: i64, d: i64) -> BigRational {
        BigRational::new(n.into(), d.into())
    }

    fn step(score: f64, correct: u32, rollouts: u32) -> LabelledStep {
        LabelledStep {
            score,
            correct,
            rollouts,
        }
    }

    /// Five steps worked by hand. HE: good = {a, b, d}, bad = {c, e}.
    /// Scores a 0.9, b 0.4, c 0.4, d 0.6, e 0.2; predicted good: a, d.
    /// Hard accuracy: a ✓, b ✗ (good, 0.4), c ✓, d ✓, e ✓ → 4/5.
    /// Hard AUC: good×bad pairs (a,c) 1, (a,e) 1, (b,c) ½ (tie), (b,e) 1, (d,c) 1, (d,e) 1 → 5.5/6.
    /// SE: a 1, b 1/4, c 0, d 3/4, e 0 (rollouts 4).
    /// Soft accuracy: a 1 + b 3/4 + c 1 + d 3/4 + e 1 = 4.5 → 9/10.
    /// Soft AUC: weights w(i,j) = SE_i·(1 − SE_j) over i ≠ j; denominator ΣSE·Σ(1 − SE) − Σ SE(1 − SE)
    /// = 2·3 − (3/16 + 3/16) = 45/8. Numerator: pairs with i above j, plus half the ties (b,c):
    /// a over b, c, d, e: 1·(3/4 + 1 + 1/4 + 1) = 3; d over b, c, e: 3/4·(3/4 + 1 + 1) = 33/16;
    /// b over e: 1/4·1 = 1/4; ties b–c: ½·(1/4·1 + 0·3/4) = 1/8. Total 3 + 33/16 + 1/4 + 1/8 = 87/16.
    /// AUC = (87/16)/(45/8) = 87/90 = 29/30.
    #[test]
    fn a_hand_worked_case() {
        let steps = [
            step(0.9, 4, 4),
            step(0.4, 1, 4),
            step(0.4, 0, 4),
            step(0.6, 3, 4),
            step(0.2, 0, 4),
        ];
        let a = step_agreement(&steps).unwrap();
        assert_eq!(a.steps, 5);
        assert_eq!(a.hard.accuracy, r(4, 5));
        assert_eq!(a.hard.auc, Some(r(11, 12)));
        assert_eq!(a.soft.accuracy, r(9, 10));
        assert_eq!(a.soft.auc, Some(r(29, 30)));
    }

    #[test]
    fn soft_equals_hard_for_zero_one_labels_and_one_class_has_no_auc() {
        let steps = [
            step(0.7, 2, 2),
            step(0.5, 0, 2),
            step(0.5, 2, 2),
            step(0.1, 0, 2),
        ];
        let a = step_agreement(&steps).unwrap();
        assert_eq!(a.hard, a.soft);
        // Pairs (good, bad): (0.7, 0.5) 1, (0.7, 0.1) 1, (0.5, 0.5) ½, (0.5, 0.1) 1 → 3.5/4.
        assert_eq!(a.hard.auc, Some(r(7, 8)));
        // 0.5 is at the threshold: predicted good, wrong for the bad one.
        assert_eq!(a.hard.accuracy, r(3, 4));
        let same = step_agreement(&[step(0.2, 1, 1), step(0.9, 3, 3)]).unwrap();
        assert_eq!(same.hard.auc, None);
        assert_eq!(same.hard.accuracy, r(1, 2));
        // Steps without rollouts say nothing.
        assert_eq!(step_agreement(&[step(0.5, 0, 0)]), None);
    }
}
