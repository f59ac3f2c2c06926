//! `gpassk plan`'s arithmetic: from one run's per-problem counts, how much a metric's paired
//! difference varies at another number of samples per problem, and how many problems a change
//! of a given size needs to be flagged with a given power ([`super::power`], the formula
//! `compare` states its detectable change with).
//!
//! What one run tells, and how it is used:
//! - The within-problem variance at n′ samples, E_F[Var(g_{n′}(c) | p)] = E_F[E g_{n′}(c)²] − E_F[θ(p)²],
//!   is estimated without bias from the counts when n′ ≤ n and 2k ≤ n: the count among n′ of a
//!   problem's n samples is hypergeometric given its c, and E θ² is the disjoint-pairs estimate
//!   of [`super::within`]. Otherwise no unbiased estimate exists.
//! - Everything else — n′ beyond the run's n, and what a change does — comes from a model of the
//!   problems' solve rates: each problem's posterior under a Beta prior fitted to the run by the
//!   method of moments (empirical Bayes), pooled on a grid.
//! - A change of D in a metric is modelled as every problem's solve rate moving by the same
//!   amount, chosen so the metric moves by D: the differences then vary by the two runs'
//!   within-problem variances plus the spread of the change across problems.

use super::binomial_pmf;
use super::power::{problems_needed, Design, Tails};
use super::simulated::{Simulator, Streams, REPLICATES};
use super::within::{Kernel, WithinTable};
use statrs::function::beta::beta_reg;
use statrs::function::factorial::ln_binomial;
use std::cell::OnceCell;

/// Grid points of the solve-rate model.
const GRID: usize = 400;

/// A problem's counts: usable samples and correct ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub n: u64,
    pub c: u64,
}

/// The solve rates of a run's problems, as one run can tell them.
#[derive(Debug, Clone)]
pub struct Population {
    counts: Vec<Counts>,
    /// Grid cell midpoints and the pooled posterior's mass in each.
    grid: Vec<f64>,
    mass: Vec<f64>,
}

impl Population {
    /// From the run's problems (those with no usable sample are left out); None without one.
    pub fn fit(counts: &[Counts]) -> Option<Population> {
        let counts: Vec<Counts> = counts.iter().copied().filter(|x| x.n > 0).collect();
        if counts.is_empty() {
            return None;
        }
        let (a, b) = beta_moments(&counts);
        let grid: Vec<f64> = (0..GRID).map(|j| (j as f64 + 0.5) / GRID as f64).collect();
        let mut mass = vec![0.0; GRID];
        let mut distinct: Vec<(Counts, usize)> = Vec::new();
        for x in &counts {
            match distinct.iter_mut().find(|d| d.0 == *x) {
                Some(d) => d.1 += 1,
                None => distinct.push((*x, 1)),
            }
        }
        for (x, times) in distinct {
            let (pa, pb) = (a + x.c as f64, b + (x.n - x.c) as f64);
            let mut below = 0.0;
            for (j, m) in mass.iter_mut().enumerate() {
                let edge = (j + 1) as f64 / GRID as f64;
                let upto = if j + 1 == GRID {
                    1.0
                } else {
                    beta_reg(pa, pb, edge)
                };
                *m += times as f64 * (upto - below).max(0.0);
                below = upto;
            }
        }
        let total: f64 = mass.iter().sum();
        mass.iter_mut().for_each(|m| *m /= total);
        Some(Population { counts, grid, mass })
    }

    /// Problems the run scored.
    pub fn problems(&self) -> usize {
        self.counts.len()
    }

    /// The model's mean of the metric: E_F θ(p).
    pub fn mean(&self, kernel: &Kernel) -> f64 {
        self.expect(|p| theta(kernel, p))
    }

    fn expect(&self, f: impl Fn(f64) -> f64) -> f64 {
        self.grid
            .iter()
            .zip(&self.mass)
            .map(|(&p, &w)| w * f(p))
            .sum()
    }

    /// E_F[Var(g_{n′}(c) | p)]: exact and unbiased from the counts where it can be (n′ ≤ n and
    /// 2k ≤ n for every problem), else from the model. The flag says which.
    pub fn within(&self, kernel: &Kernel, n_new: u64) -> (f64, bool) {
        let values = g_values(kernel, n_new);
        let least = self.counts.iter().map(|x| x.n).min().unwrap_or(0);
        if n_new <= least && 2 * kernel.k <= least {
            if let Some(v) = self.within_exact(kernel, n_new, &values) {
                return (v, true);
            }
        }
        (self.expect(|p| within_at(kernel, &values, p)), false)
    }

    fn within_exact(&self, kernel: &Kernel, n_new: u64, values: &[f64]) -> Option<f64> {
        let mut tables: Vec<(u64, WithinTable, Vec<f64>)> = Vec::new();
        let mut total = 0.0;
        for x in &self.counts {
            if !tables.iter().any(|t| t.0 == x.n) {
                let table = WithinTable::new(x.n, std::slice::from_ref(kernel))?;
                tables.push((x.n, table, g_values(kernel, x.n)));
            }
            let (_, table, own) = tables.iter().find(|t| t.0 == x.n)?;
            // E[g_{n′}²] from the count among n′ of the n samples (hypergeometric given c), minus
            // the unbiased θ² of this problem: g_n(c)² − ŵ(c).
            let square: f64 = (0..=n_new)
                .map(|j| hypergeometric(x.n, x.c, n_new, j) * values[j as usize].powi(2))
                .sum();
            let theta2 = own[x.c as usize].powi(2) - table.rows[x.c as usize][0];
            total += square - theta2;
        }
        Some((total / self.counts.len() as f64).max(0.0))
    }

    /// The per-problem variance of B − A at `n_new` samples when the metric moves by `change`
    /// (negative: a drop), every problem's solve rate moving by one amount; None when the metric
    /// cannot move that far.
    pub fn difference(&self, kernel: &Kernel, n_new: u64, change: f64) -> Option<Difference> {
        let base = self.mean(kernel);
        let target = base + change;
        if !(0.0..=1.0).contains(&target) {
            return None;
        }
        let moved = |shift: f64| self.expect(|p| theta(kernel, (p + shift).clamp(0.0, 1.0)));
        // θ never decreases in p: a drop can reach θ(0), a rise θ(1).
        let (mut lo, mut hi) = if change < 0.0 {
            (-1.0, 0.0)
        } else {
            (0.0, 1.0)
        };
        let reach = moved(if change < 0.0 { lo } else { hi });
        if (change < 0.0 && reach > target) || (change > 0.0 && reach < target) {
            return None;
        }
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if moved(mid) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let shift = 0.5 * (lo + hi);
        let values = g_values(kernel, n_new);
        let (within_a, exact) = self.within(kernel, n_new);
        let within_b = self.expect(|p| within_at(kernel, &values, (p + shift).clamp(0.0, 1.0)));
        let gap = |p: f64| theta(kernel, (p + shift).clamp(0.0, 1.0)) - theta(kernel, p);
        let mean_gap = self.expect(gap);
        let spread = (self.expect(|p| gap(p).powi(2)) - mean_gap * mean_gap).max(0.0);
        Some(Difference {
            variance: within_a + within_b + spread,
            null_variance: 2.0 * within_a,
            shift,
            exact,
            tails: self.tails(&values, shift, change.signum()),
        })
    }

    /// The third and fourth raw moments of B − A (times `sign`) over the model: A's value at p
    /// and B's at p + shift, independent given p; the chance that B − A is not zero, and with
    /// 0/1 values the chance that a non-zero one goes `sign`'s way.
    fn tails(&self, values: &[f64], shift: f64, sign: f64) -> Tails {
        let classes = value_classes(values);
        let binary = (values.iter()).all(|&g| g.abs() < 1e-12 || (g - 1.0).abs() < 1e-12);
        let (mut third, mut fourth, mut still, mut up) = (0.0, 0.0, 0.0, 0.0);
        for (&p, &w) in self.grid.iter().zip(&self.mass) {
            let a = raw_moments(values, p);
            let b = raw_moments(values, (p + shift).clamp(0.0, 1.0));
            // E[(B − A)^r] = Σ_i C(r, i)·E[B^i]·E[(−A)^(r−i)], C(r, i) from `row`.
            let at = |r: usize, row: [f64; 5]| -> f64 {
                (0..=r)
                    .map(|i| {
                        let neg = if (r - i) % 2 == 1 { -1.0 } else { 1.0 };
                        row[i] * b[i] * neg * a[r - i]
                    })
                    .sum()
            };
            third += w * at(3, [1.0, 3.0, 3.0, 1.0, 0.0]);
            fourth += w * at(4, [1.0, 4.0, 6.0, 4.0, 1.0]);
            let pa = class_mass(values, &classes, p);
            let pb = class_mass(values, &classes, (p + shift).clamp(0.0, 1.0));
            still += w * pa.iter().zip(&pb).map(|(x, y)| x * y).sum::<f64>();
            if binary && pa.len() == 2 {
                // Classes 0 and 1 are the values 0 and 1: B − A = +1 is B at 1, A at 0.
                up += w * if sign > 0.0 {
                    pb[1] * pa[0]
                } else {
                    pb[0] * pa[1]
                };
            }
        }
        let moving = (1.0 - still).clamp(0.0, 1.0);
        Tails {
            third: sign * third,
            fourth,
            moving,
            toward: (binary && moving > 0.0).then(|| (up / moving).clamp(0.0, 1.0)),
        }
    }
}

/// Each c's class of equal values (g never decreases in c, so equal values are adjacent).
fn value_classes(values: &[f64]) -> Vec<usize> {
    let mut class = 0;
    (0..values.len())
        .map(|c| {
            if c > 0 && values[c] - values[c - 1] > 1e-12 {
                class += 1;
            }
            class
        })
        .collect()
}

/// The chance of each class of values (see [`value_classes`]) with solve rate p.
fn class_mass(values: &[f64], classes: &[usize], p: f64) -> Vec<f64> {
    let n = values.len() as u64 - 1;
    let mut out = vec![0.0; classes.last().map_or(0, |c| c + 1)];
    for (c, &class) in classes.iter().enumerate() {
        out[class] += binomial_pmf(n, c as u64, p);
    }
    out
}

/// E[g^i] for i = 0..=4, g the metric's value from Binomial(n, p) correct, `values` the g table.
fn raw_moments(values: &[f64], p: f64) -> [f64; 5] {
    let n = values.len() as u64 - 1;
    let mut out = [0.0; 5];
    for (c, &g) in values.iter().enumerate() {
        let w = binomial_pmf(n, c as u64, p);
        if w == 0.0 {
            continue;
        }
        let mut power = w;
        for slot in out.iter_mut() {
            *slot += power;
            power *= g;
        }
    }
    out
}

/// What a change does to one problem's difference B − A.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// Per-problem variance of B − A under the change.
    pub variance: f64,
    /// Per-problem variance of B − A with no change (two runs of one model).
    pub null_variance: f64,
    /// The move in every problem's solve rate that makes the change.
    pub shift: f64,
    /// Whether run A's within-problem variance was estimated exactly (else by the model).
    pub exact: bool,
    /// The difference's third and fourth moments under the model, signed so the change is up.
    pub tails: Tails,
}

/// A design that detects a change, and its power.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Needed {
    pub samples: u64,
    pub problems: u64,
    pub power: f64,
    /// The share of problems whose value the change moves at all, in the direction that decides
    /// (the test sees only those: few of them make a plan rest on the model's tail).
    pub moving: f64,
    /// Whether the metric's values at `samples` are 0 or 1 only (the test is then McNemar's).
    pub binary: bool,
    /// The share of problems that carry the change: μ₂²/μ₄ of the differences (K/m when K of
    /// m move by one amount; far below [`Needed::moving`] when most move a little and a few a
    /// lot).
    pub carrying: f64,
    /// Whether `power` (and the problems) come from simulating compare's test under the model
    /// ([`Difference::simulated`]), else from the normal approximation of [`super::power`].
    pub simulated: bool,
}

/// Below this many problems expected to carry the change, with fractional values, a design's
/// power is compare's test simulated under the model: T/S is then bounded (by √K) and skewed
/// (the differences mostly share one sign), and its normal approximation understated the test
/// (92–100% reached where 80–86% was stated, docs/intervals.md).
pub const FEW_MOVING: f64 = 50.0;
/// Designs above this many problems are never simulated (the cost grows with them; so many
/// problems carry a change only when the normal approximation holds).
pub const MOST_SIMULATED: f64 = 5000.0;

impl Difference {
    /// The share of problems that carry a change of `change` (its size): μ₂²/μ₄ of the
    /// differences, at most the share that moves.
    pub fn carrying(&self, change: f64) -> f64 {
        let mu2 = self.variance + change * change;
        match self.tails.fourth > 0.0 {
            true => (mu2 * mu2 / self.tails.fourth).clamp(0.0, self.tails.moving),
            false => self.tails.moving,
        }
    }

    /// A design of `problems` problems in clusters of `size` against this difference, for the
    /// normal approximation's power.
    fn design(&self, problems: f64, size: f64) -> Design {
        Design {
            problems,
            units: problems / size.max(1.0),
            variance: self.variance,
            tails: Some(self.tails),
        }
    }

    /// Whether a design of `problems` problems in units of `size` has its power simulated:
    /// problems alone (not clusters), fractional values, and fewer than [`FEW_MOVING`] of them
    /// expected to carry the change.
    pub fn simulated(&self, change: f64, problems: f64, size: f64) -> bool {
        size <= 1.0
            && self.tails.toward.is_none()
            && problems <= MOST_SIMULATED
            && problems * self.carrying(change) < FEW_MOVING
    }
}

/// One direction of a change and its power at any number of problems: the normal
/// approximation's, or compare's test simulated under the model where that is off.
struct Way<'a> {
    population: &'a Population,
    kernel: &'a Kernel,
    samples: u64,
    /// The change's size (the direction is in `difference`).
    change: f64,
    size: f64,
    difference: Difference,
    /// The design's simulator (built once, for the search and the stated power).
    simulator: OnceCell<Simulator>,
}

impl<'a> Way<'a> {
    fn new(
        population: &'a Population,
        kernel: &'a Kernel,
        samples: u64,
        change: f64,
        size: f64,
    ) -> Option<Way<'a>> {
        Some(Way {
            difference: population.difference(kernel, samples, change)?,
            population,
            kernel,
            samples,
            change: change.abs(),
            size,
            simulator: OnceCell::new(),
        })
    }

    /// The simulator of this way's design (built once).
    fn simulator(&self) -> &Simulator {
        self.simulator.get_or_init(|| {
            let values = g_values(self.kernel, self.samples);
            let (grid, mass) = (&self.population.grid, &self.population.mass);
            Simulator::new(grid, mass, &values, self.difference.shift)
        })
    }

    /// Whether the search's power at `problems` reaches `target` (sooner than computing it).
    fn reaches(&self, problems: f64, alpha: f64, target: f64) -> bool {
        match self.difference.simulated(self.change, problems, self.size) {
            true => (self.simulator()).reaches(problems.round() as u64, alpha, target),
            false => self.power(problems, alpha).0 >= target,
        }
    }

    /// The power at `problems` problems as stated (a simulated one from the stated streams),
    /// and whether it was simulated.
    fn power(&self, problems: f64, alpha: f64) -> (f64, bool) {
        let d = &self.difference;
        if d.simulated(self.change, problems, self.size) {
            let m = problems.round() as u64;
            return (self.simulator().power(Streams::Stated, m, alpha), true);
        }
        (
            d.design(problems, self.size).power(self.change, alpha),
            false,
        )
    }
}

/// One metric's plans at one number of samples per problem, against a change of one size in
/// either direction the metric can move (the harder decides): the search for the fewest
/// problems and the power of any design share its simulators.
pub struct Planner<'a> {
    ways: Vec<Way<'a>>,
    change: f64,
    size: f64,
}

impl<'a> Planner<'a> {
    /// Plans at `samples` per problem against a change of `change` (both directions when it
    /// could go either way), problems coming in clusters of `size`.
    pub fn new(
        population: &'a Population,
        kernel: &'a Kernel,
        samples: u64,
        change: f64,
        size: f64,
    ) -> Planner<'a> {
        let ways = [-change.abs(), change.abs()]
            .iter()
            .filter_map(|&d| Way::new(population, kernel, samples, d, size))
            .collect();
        Planner {
            ways,
            change: change.abs(),
            size,
        }
    }

    /// The fewest problems for power `power` at `alpha`; None when the metric cannot move that
    /// far either way. The normal approximation sizes the design; where a direction's power is
    /// simulated there ([`Difference::simulated`]), the fewest problems whose simulated power
    /// reaches `power` plus one Monte Carlo standard error are searched from that size, down
    /// or up, and the power stated is simulated again on other streams (the search stops where
    /// its own noise first crosses the target, which overstates the design there).
    pub fn needed(&self, (alpha, power): (f64, f64)) -> Option<Needed> {
        let (ways, size) = (&self.ways, self.size);
        // The harder direction decides: the one needing more problems (from one unit's design).
        let (need, d) = (ways.iter())
            .map(|w| {
                let unit = w.difference.design(size, size);
                (
                    problems_needed(&unit, self.change, alpha, power),
                    &w.difference,
                )
            })
            .fold(None, |acc: Option<(f64, &Difference)>, x| {
                Some(acc.map_or(x, |a| if x.0 > a.0 { x } else { a }))
            })?;
        let least = super::paired::MIN_SHARED as f64 * size;
        let mut problems = (need.max(least) / size).ceil() * size;
        if (ways.iter()).any(|w| w.difference.simulated(self.change, problems, size)) {
            let aim = (power + standard_error(power)).min(1.0);
            let reaches = |m: u64| ways.iter().all(|w| w.reaches(m as f64, alpha, aim));
            problems = fewest(reaches, problems as u64, least as u64) as f64;
        }
        let (reached, simulated) = self.lowest(problems, alpha);
        Some(Needed {
            samples: ways[0].samples,
            problems: problems as u64,
            power: reached,
            moving: d.tails.moving,
            binary: d.tails.toward.is_some(),
            carrying: d.carrying(self.change),
            simulated,
        })
    }

    /// The power of `problems` problems: the harder direction's; None when the metric cannot
    /// move that far either way.
    pub fn power(&self, problems: f64, alpha: f64) -> Option<f64> {
        (!self.ways.is_empty()).then(|| self.lowest(problems, alpha).0)
    }

    /// The lowest power over the directions at `problems`, and whether any was simulated.
    fn lowest(&self, problems: f64, alpha: f64) -> (f64, bool) {
        (self.ways.iter())
            .map(|w| w.power(problems, alpha))
            .fold((1.0, false), |a, x| (a.0.min(x.0), a.1 || x.1))
    }
}

/// One Monte Carlo standard error of a simulated power near `power`.
pub fn standard_error(power: f64) -> f64 {
    (power * (1.0 - power) / REPLICATES as f64).sqrt()
}

/// The problems needed at `samples` per problem for power `power` against a change of `change`
/// at `alpha`, problems coming in clusters of `size` ([`Planner::needed`]).
pub fn needed(
    population: &Population,
    kernel: &Kernel,
    samples: u64,
    change: f64,
    size: f64,
    target: (f64, f64),
) -> Option<Needed> {
    Planner::new(population, kernel, samples, change, size).needed(target)
}

/// The fewest problems, at least `least`, that `reaches`, searched from `start`: down by
/// bisection when it reaches there, else doubling up first (the simulated power grows with the
/// problems up to its noise; common random numbers keep that noise from jumping).
fn fewest(reaches: impl Fn(u64) -> bool, start: u64, least: u64) -> u64 {
    let (mut lo, mut hi) = (least.saturating_sub(1), start.max(least));
    if !reaches(hi) {
        loop {
            lo = hi;
            hi *= 2;
            if hi as f64 > 4.0 * MOST_SIMULATED || reaches(hi) {
                break;
            }
        }
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// The power of a design of `problems` at `samples` per problem against `change`: the harder of
/// the directions the metric can move ([`Planner::power`]).
pub fn power_at(
    population: &Population,
    kernel: &Kernel,
    (problems, samples): (f64, u64),
    change: f64,
    size: f64,
    alpha: f64,
) -> Option<f64> {
    Planner::new(population, kernel, samples, change, size).power(problems, alpha)
}

/// [`power_at`] in one direction: against a change of `change` with its sign (negative: a
/// drop); None when the metric cannot move that far that way.
pub fn power_toward(
    population: &Population,
    kernel: &Kernel,
    (problems, samples): (f64, u64),
    change: f64,
    size: f64,
    alpha: f64,
) -> Option<f64> {
    let way = Way::new(population, kernel, samples, change, size)?;
    Some(way.power(problems, alpha).0)
}

/// The smallest change (a fraction) flagged with probability `power` by a design of `problems`
/// at `samples` per problem, by the normal approximation of [`super::power`] (the formula
/// `compare` states its detectable change with); 1.0 when no change the metric can make is.
pub fn detectable(
    population: &Population,
    kernel: &Kernel,
    (problems, samples): (f64, u64),
    size: f64,
    (alpha, power): (f64, f64),
) -> f64 {
    // The normal approximation's power (as compare states its detectable change), never the
    // simulation: this is what the run's own size detects, said as compare says it.
    let reaches = |d: f64| {
        [-d, d]
            .iter()
            .filter_map(|&c| {
                let d = population.difference(kernel, samples, c)?;
                Some(d.design(problems, size).power(c.abs(), alpha))
            })
            .fold(None, |acc: Option<f64>, p| {
                Some(acc.map_or(p, |a| a.min(p)))
            })
            .is_some_and(|p| p >= power)
    };
    if !reaches(1.0) && !reaches(0.5) {
        return 1.0;
    }
    let (mut lo, mut hi) = (0.0, if reaches(0.5) { 0.5 } else { 1.0 });
    for _ in 0..24 {
        let mid = 0.5 * (lo + hi);
        if reaches(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

/// Beta(a, b) by the method of moments on the solve rates (c/n, and c(c−1)/(n(n−1)) for the
/// second moment, both unbiased); a weak prior when the rates do not vary beyond binomial noise.
fn beta_moments(counts: &[Counts]) -> (f64, f64) {
    let mean = counts.iter().map(|x| x.c as f64 / x.n as f64).sum::<f64>() / counts.len() as f64;
    let pairs: Vec<f64> = (counts.iter())
        .filter(|x| x.n >= 2)
        .map(|x| (x.c * x.c.saturating_sub(1)) as f64 / (x.n * (x.n - 1)) as f64)
        .collect();
    let mean = mean.clamp(1e-3, 1.0 - 1e-3);
    let second = if pairs.is_empty() {
        mean
    } else {
        pairs.iter().sum::<f64>() / pairs.len() as f64
    };
    let var = second - mean * mean;
    let strength = if var > 1e-9 {
        ((mean - second) / var).clamp(0.05, 1e4)
    } else {
        1e4
    };
    (mean * strength, (1.0 - mean) * strength)
}

/// θ(p) = E h(Binomial(k, p)).
pub(super) fn theta(kernel: &Kernel, p: f64) -> f64 {
    let k = kernel.k;
    (0..=k)
        .filter(|&a| kernel.num[a as usize] != 0)
        .map(|a| binomial_pmf(k, a, p) * kernel.num[a as usize] as f64 / kernel.den as f64)
        .sum()
}

/// g_n(c) for c = 0..=n: the metric's value with c correct of n.
fn g_values(kernel: &Kernel, n: u64) -> Vec<f64> {
    let k = kernel.k;
    (0..=n)
        .map(|c| {
            let lo = k.saturating_sub(n - c);
            (lo..=c.min(k))
                .filter(|&a| kernel.num[a as usize] != 0)
                .map(|a| hypergeometric(n, c, k, a) * kernel.num[a as usize] as f64)
                .sum::<f64>()
                / kernel.den as f64
        })
        .collect()
}

/// Var(g_n(c) | p), `values` the g_n table.
fn within_at(kernel: &Kernel, values: &[f64], p: f64) -> f64 {
    let n = values.len() as u64 - 1;
    let square: f64 = (0..=n)
        .map(|c| binomial_pmf(n, c, p) * values[c as usize].powi(2))
        .sum();
    (square - theta(kernel, p).powi(2)).max(0.0)
}

/// P(j correct among `draw` of `n` samples drawn without replacement, c of them correct).
fn hypergeometric(n: u64, c: u64, draw: u64, j: u64) -> f64 {
    if j > c || j > draw || draw - j > n - c {
        return 0.0;
    }
    (ln_binomial(c, j) + ln_binomial(n - c, draw - j) - ln_binomial(n, draw)).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(n: u64, cs: &[u64]) -> Vec<Counts> {
        cs.iter().map(|&c| Counts { n, c }).collect()
    }

    /// At the run's own n, the exact within-problem variance is the mean of the problems'
    /// unbiased estimates, and the model agrees with it closely on a smooth population.
    #[test]
    fn exact_within_matches_the_per_problem_estimates() {
        let cs: Vec<u64> = (0..60).map(|i| (i * 7 % 17) as u64).collect();
        let pop = Population::fit(&counts(16, &cs)).unwrap();
        let kernel = Kernel::at_least(4, 2);
        let (exact, is_exact) = pop.within(&kernel, 16);
        assert!(is_exact);
        let table = WithinTable::new(16, std::slice::from_ref(&kernel)).unwrap();
        let mean = cs.iter().map(|&c| table.rows[c as usize][0]).sum::<f64>() / cs.len() as f64;
        assert!((exact - mean).abs() < 1e-12, "{exact} vs {mean}");
        // Beyond the run's n the model answers, and more samples mean less variance.
        let (more, is_exact) = pop.within(&kernel, 48);
        assert!(!is_exact && more < exact);
    }

    /// pass@1: the variance within a problem is p(1 − p)/n, so at n′ it is the n-sample one
    /// times n/n′; the exact path gives E[p(1 − p)]/n′ without bias.
    #[test]
    fn pass_at_1_within_scales_with_one_over_n() {
        let cs: Vec<u64> = (0..200).map(|i| (i * 13 % 49) as u64).collect();
        let pop = Population::fit(&counts(48, &cs)).unwrap();
        let kernel = Kernel::at_least(1, 1);
        let (at48, _) = pop.within(&kernel, 48);
        let (at12, exact) = pop.within(&kernel, 12);
        assert!(exact);
        assert!((at12 / at48 - 4.0).abs() < 1e-9, "{}", at12 / at48);
    }

    /// A change the metric can make is found in both directions; one it cannot is refused.
    #[test]
    fn changes_within_the_scale_only() {
        let pop = Population::fit(&counts(16, &[2, 3, 1, 4, 0, 2, 5, 1])).unwrap();
        let kernel = Kernel::at_least(1, 1);
        let mean = pop.mean(&kernel);
        assert!(mean > 0.1 && mean < 0.2, "{mean}");
        let drop = pop.difference(&kernel, 16, -0.05).unwrap();
        assert!(drop.shift < 0.0 && drop.variance > 0.0);
        assert!(pop.difference(&kernel, 16, -0.5).is_none());
        assert!(pop.difference(&kernel, 16, 0.5).is_some());
        let need = needed(&pop, &kernel, 16, 0.05, 1.0, (0.05, 0.8)).unwrap();
        // Simulated here: the power stated is a fresh draw, within its noise of the target.
        let low = 0.8 - 2.0 * standard_error(0.8);
        assert!(need.power >= low && need.problems >= 10, "{need:?}");
        let d = detectable(&pop, &kernel, (need.problems as f64, 16), 1.0, (0.05, 0.8));
        assert!(d <= 0.05 + 1e-3, "{d}");
    }

    /// Where the power is simulated, the search stops at the fewest problems whose power on
    /// its own streams reaches the target plus one Monte Carlo standard error, and the power
    /// stated there is drawn on other streams: not the figure whose noise stopped the search.
    #[test]
    fn simulated_plans_aim_above_the_target_and_state_fresh_draws() {
        // pass@16 from 48 samples on a mostly easy run: fractional values, few problems carry
        // a 5-point drop.
        let cs: Vec<u64> = (0..30)
            .map(|i| [48, 47, 48, 45, 40, 48, 30, 12, 48, 46][i % 10])
            .collect();
        let pop = Population::fit(&counts(48, &cs)).unwrap();
        let kernel = Kernel::at_least(16, 1);
        let planner = Planner::new(&pop, &kernel, 48, 0.05, 1.0);
        let need = planner.needed((0.05, 0.8)).unwrap();
        assert!(need.simulated, "{need:?}");
        let (m, aim) = (
            need.problems,
            0.8 + (0.8f64 * 0.2 / REPLICATES as f64).sqrt(),
        );
        let simulated: Vec<&Way> = (planner.ways.iter())
            .filter(|w| w.difference.simulated(0.05, m as f64, 1.0))
            .collect();
        assert!(!simulated.is_empty());
        let search = |w: &Way, m: u64| w.simulator().power(Streams::Search, m, 0.05);
        assert!(simulated.iter().all(|w| search(w, m) >= aim));
        assert!(simulated.iter().any(|w| search(w, m - 1) < aim));
        let stated = (planner.ways.iter()).map(|w| w.power(m as f64, 0.05).0);
        assert_eq!(need.power, stated.fold(1.0, f64::min));
        // The stated streams are others: their power at m is not the search's figure.
        let w = simulated[0];
        let stated = w.simulator().power(Streams::Stated, m, 0.05);
        assert_ne!(stated, search(w, m), "at {m}");
    }
}
