//! How graded answers were found (`found_by`), counted per way for a problem and for a model: the
//! share the weak heuristics found (`last_math`, `last_number`) is what the reports show and warn
//! about, and what the `rule_then_judge_uncertain` grader sends to the judge.

use crate::grade::FoundBy;
use serde::{Deserialize, Serialize};

/// The ways an answer can be found ([`FoundBy::ALL`]).
pub const WAYS: usize = FoundBy::ALL.len();

/// Graded answers (samples and greedy answers) counted by how each was found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found<T> {
    /// Per way, in [`FoundBy::ALL`] order.
    pub by: [T; WAYS],
    /// Answers a run kept without its response and without saying how it found them (a run
    /// with `save_raw_responses = false` made by a gpassk before `found_by`): their way is
    /// unknown, so they are left out of the share.
    pub unrecorded: T,
}

/// One problem's counts (a million problems keep their counts in 40 MB).
pub type ProblemFound = Found<u32>;

/// A model's counts.
pub type ModelFound = Found<u64>;

impl<T: Copy + Into<u64>> Found<T> {
    /// Answers found this way.
    pub fn get(&self, way: FoundBy) -> u64 {
        self.by[way as usize].into()
    }

    /// Answers whose way is known.
    pub fn known(&self) -> u64 {
        self.by.iter().map(|&c| c.into()).sum()
    }

    /// Every graded answer, the unrecorded ones too.
    pub fn total(&self) -> u64 {
        self.known() + self.unrecorded.into()
    }

    /// Answers found by a heuristic ([`FoundBy::is_heuristic`]).
    pub fn heuristic(&self) -> u64 {
        (FoundBy::ALL.into_iter())
            .filter(|f| f.is_heuristic())
            .map(|f| self.get(f))
            .sum()
    }

    /// The heuristic answers' share of the answers whose way is known; None without any.
    pub fn share(&self) -> Option<f64> {
        let known = self.known();
        (known > 0).then(|| self.heuristic() as f64 / known as f64)
    }

    /// Whether the heuristic share passes `threshold` (a share in [0, 1]).
    pub fn over(&self, threshold: f64) -> bool {
        self.share().is_some_and(|s| s > threshold)
    }

    /// The ways with at least one answer, in [`FoundBy::ALL`] order, with their counts.
    pub fn nonzero(&self) -> impl Iterator<Item = (FoundBy, u64)> + '_ {
        (FoundBy::ALL.into_iter())
            .map(|f| (f, self.get(f)))
            .filter(|(_, c)| *c > 0)
    }
}

impl ProblemFound {
    /// Counts one graded answer: found this way, or (None) its way not recorded.
    pub fn add(&mut self, way: Option<FoundBy>) {
        match way {
            Some(f) => self.by[f as usize] += 1,
            None => self.unrecorded += 1,
        }
    }
}

impl ModelFound {
    /// Counts `n` answers found this way (None: not recorded).
    pub fn add_n(&mut self, way: Option<FoundBy>, n: u64) {
        match way {
            Some(f) => self.by[f as usize] += n,
            None => self.unrecorded += n,
        }
    }

    /// The sum of problems' counts.
    pub fn sum<'a>(problems: impl IntoIterator<Item = &'a ProblemFound>) -> ModelFound {
        let mut total = ModelFound::default();
        for p in problems {
            for (t, &c) in total.by.iter_mut().zip(&p.by) {
                *t += u64::from(c);
            }
            total.unrecorded += u64::from(p.unrecorded);
        }
        total
    }
}

/// How a graded unit's answer was found: as extraction found it in the response (`raw`); for a
/// run that kept only the answer, as the run recorded it when it found one (None: a gpassk
/// before `found_by` did not record it).
pub fn found_by_of(raw: bool, recorded: Option<FoundBy>, found: FoundBy) -> Option<FoundBy> {
    if raw || found == FoundBy::None {
        Some(found)
    } else {
        recorded
    }
}

/// The text a unit is graded on: its response, or in a run that kept none
/// (`save_raw_responses = false`) the answer extracted at run time, graded as the whole reply.
pub fn graded_on<'a>(response: Option<&'a str>, kept: Option<&'a str>) -> &'a str {
    response.or(kept).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ways_index_in_their_listed_order() {
        for (i, f) in FoundBy::ALL.into_iter().enumerate() {
            assert_eq!(f as usize, i, "{f}");
        }
    }

    #[test]
    fn the_share_is_of_the_known_ways_and_counts_both_heuristics() {
        let mut p = ProblemFound::default();
        for f in [
            FoundBy::Boxed,
            FoundBy::Boxed,
            FoundBy::LastNumber,
            FoundBy::LastMath,
            FoundBy::None,
        ] {
            p.add(Some(f));
        }
        p.add(None);
        let mut q = ProblemFound::default();
        q.add(Some(FoundBy::Marker));
        let m = ModelFound::sum([&p, &q]);
        assert_eq!((m.known(), m.total(), m.heuristic()), (6, 7, 2));
        assert_eq!(m.share(), Some(2.0 / 6.0));
        assert!(m.over(0.2) && !m.over(0.34));
        let ways: Vec<(FoundBy, u64)> = m.nonzero().collect();
        assert_eq!(ways[0], (FoundBy::Boxed, 2));
        assert_eq!(ways.len(), 5);
        assert_eq!(ModelFound::default().share(), None);
        assert!(!ModelFound::default().over(0.0));
    }

    #[test]
    fn a_kept_answer_takes_the_recorded_way() {
        assert_eq!(
            found_by_of(true, None, FoundBy::Boxed),
            Some(FoundBy::Boxed)
        );
        assert_eq!(
            found_by_of(false, Some(FoundBy::LastNumber), FoundBy::Whole),
            Some(FoundBy::LastNumber)
        );
        assert_eq!(found_by_of(false, None, FoundBy::Whole), None);
        assert_eq!(found_by_of(false, None, FoundBy::None), Some(FoundBy::None));
        assert_eq!(graded_on(None, Some("4")), "4");
        assert_eq!(graded_on(Some("r"), Some("4")), "r");
        assert_eq!(graded_on(None, None), "");
    }
}
