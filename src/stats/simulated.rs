//! The power of `compare`'s paired test, simulated: runs of a planned design drawn from a model
//! of the problems (solve rates on a grid with their weights, a metric's value table, the change
//! as one shift of every solve rate), each pair of runs tested as `compare` tests
//! ([`super::paired::flags`]). `gpassk plan` states this power where the normal approximation of
//! the test is known to be off (see `super::planning`).
//!
//! Seeded and deterministic: replicate r draws from its own fixed stream, so a design of m + 1
//! problems shares its first m problems with the design of m (common random numbers), and the
//! power found for a number of problems does not jump with it.

use super::paired::flags;
use super::{binomial_pmf, SplitMix64};

/// Simulated pairs of runs per power: its Monte Carlo error is about ±2 points at 80%.
pub const REPLICATES: usize = 400;
/// Seeds of the replicates' streams ("plan", then a version byte): the search's, and the
/// stated power's.
const SEED: u64 = 0x706c_616e_0000_0001;
const STATED_SEED: u64 = 0x706c_616e_5354_0001;

/// Which replicates a power is drawn from. A search for the fewest problems stops where its own
/// draws first cross the target, so their figure there runs high; the power a plan states is
/// drawn from other streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Streams {
    Search,
    Stated,
}

/// Draws pairs of runs of one design under a model, the second with the change.
#[derive(Debug, Clone)]
pub struct Simulator {
    /// Cumulative weight of the grid's solve rates.
    rates: Vec<f64>,
    /// Per grid point, the cumulative distribution of a problem's correct count among `samples`:
    /// before the change and after it, `samples + 1` entries each.
    before: Vec<f64>,
    after: Vec<f64>,
    /// The metric's value with c correct, c = 0..=samples.
    values: Vec<f64>,
    /// Each replicate's seed: the search's streams, and the stated power's.
    search: Vec<u64>,
    stated: Vec<u64>,
}

impl Simulator {
    /// A model: solve rates `grid` with weights `mass`, the metric's `values` at `samples` per
    /// problem (c = 0..=samples), the change moving every solve rate by `shift` (clamped).
    pub fn new(grid: &[f64], mass: &[f64], values: &[f64], shift: f64) -> Simulator {
        let samples = values.len() as u64 - 1;
        let mut total = 0.0;
        let rates: Vec<f64> = (mass.iter())
            .map(|w| {
                total += w;
                total
            })
            .collect();
        let table = |p: f64| -> Vec<f64> {
            let p = p.clamp(0.0, 1.0);
            let mut below = 0.0;
            (0..=samples)
                .map(|c| {
                    below += binomial_pmf(samples, c, p);
                    below
                })
                .collect()
        };
        let before = grid.iter().flat_map(|&p| table(p)).collect();
        let after = grid.iter().flat_map(|&p| table(p + shift)).collect();
        // Equal values are one value, as compare's exact per-problem values are: a difference
        // between two counts of one value is exactly zero, and the test does not see it.
        let mut values = values.to_vec();
        for c in 1..values.len() {
            if (values[c] - values[c - 1]).abs() < 1e-12 {
                values[c] = values[c - 1];
            }
        }
        for v in values.iter_mut() {
            if v.abs() < 1e-12 || (*v - 1.0).abs() < 1e-12 {
                *v = v.round();
            }
        }
        let seeds = |seed: u64| {
            let mut master = SplitMix64::new(seed);
            (0..REPLICATES).map(|_| master.next_u64()).collect()
        };
        Simulator {
            rates,
            before,
            after,
            values,
            search: seeds(SEED),
            stated: seeds(STATED_SEED),
        }
    }

    fn seeds(&self, streams: Streams) -> &[u64] {
        match streams {
            Streams::Search => &self.search,
            Streams::Stated => &self.stated,
        }
    }

    /// The share of simulated pairs of runs of `problems` problems, drawn from `streams`, that
    /// the test at `alpha` flags.
    pub fn power(&self, streams: Streams, problems: u64, alpha: f64) -> f64 {
        let seeds = self.seeds(streams);
        let mut diffs = Vec::with_capacity(problems as usize);
        let flagged = (seeds.iter())
            .filter(|&&seed| self.flagged(seed, problems, alpha, &mut diffs))
            .count();
        flagged as f64 / seeds.len() as f64
    }

    /// Whether the search's [`Simulator::power`] reaches `target`, stopping once the count of
    /// flagged replicates decides it (the same answer, sooner).
    pub fn reaches(&self, problems: u64, alpha: f64, target: f64) -> bool {
        let seeds = self.seeds(Streams::Search);
        let total = seeds.len();
        let need = (target * total as f64 - 1e-9).ceil().max(0.0) as usize;
        let mut diffs = Vec::with_capacity(problems as usize);
        let mut flagged = 0;
        for (i, &seed) in seeds.iter().enumerate() {
            if flagged >= need {
                return true;
            }
            if flagged + (total - i) < need {
                return false;
            }
            flagged += self.flagged(seed, problems, alpha, &mut diffs) as usize;
        }
        flagged >= need
    }

    /// One replicate: a pair of runs of `problems` drawn from `seed`'s stream, tested.
    fn flagged(&self, seed: u64, problems: u64, alpha: f64, diffs: &mut Vec<f64>) -> bool {
        let width = self.values.len();
        let mut rng = SplitMix64::new(seed);
        diffs.clear();
        for _ in 0..problems {
            let j = pick(&self.rates, &mut rng);
            let cells = j * width..(j + 1) * width;
            let a = pick(&self.before[cells.clone()], &mut rng);
            let b = pick(&self.after[cells], &mut rng);
            let d = self.values[b] - self.values[a];
            if d != 0.0 {
                diffs.push(d);
            }
        }
        flags(diffs, alpha)
    }
}

/// An index drawn from a cumulative distribution (its last entry the total).
fn pick(cumulative: &[f64], rng: &mut SplitMix64) -> usize {
    let total = cumulative.last().copied().unwrap_or(0.0);
    let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
    cumulative
        .partition_point(|&x| x <= u)
        .min(cumulative.len() - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every problem at solve rate ½, pass@1 from one sample (values 0 and 1), no change: the
    /// test is McNemar's at 5%, and flags about 5% of pairs or fewer (it is exact, so at most
    /// α up to the simulation's noise); a shift to solve rate 1 flags every pair of 30 problems.
    #[test]
    fn no_change_flags_at_most_alpha_and_a_sure_change_always() {
        let (grid, mass) = (vec![0.5], vec![1.0]);
        let values = [0.0, 1.0];
        let same = Simulator::new(&grid, &mass, &values, 0.0);
        assert!(
            same.power(Streams::Search, 60, 0.05) <= 0.07,
            "{}",
            same.power(Streams::Search, 60, 0.05)
        );
        let sure = Simulator::new(&grid, &mass, &values, 0.5);
        assert_eq!(sure.power(Streams::Search, 30, 0.05), 1.0);
        // Five problems can never be flagged at 5%.
        assert_eq!(sure.power(Streams::Search, 5, 0.05), 0.0);
        // Seeded: the same design gives the same power; `reaches` answers as `power` does.
        assert_eq!(
            same.power(Streams::Search, 60, 0.05),
            same.power(Streams::Search, 60, 0.05)
        );
        let part = Simulator::new(&[0.5], &[1.0], &values, 0.3);
        let at = part.power(Streams::Search, 40, 0.05);
        assert!(at > 0.2 && at < 0.95, "{at}");
        assert!(part.reaches(40, 0.05, at) && !part.reaches(40, 0.05, at + 0.001));
    }
}
