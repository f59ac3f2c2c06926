//! `gpassk plan`: from a scored run, the problems and samples per problem the next runs need for
//! `compare` to flag a change of D points with a given power (Holm over the tested family
//! included), what they cost at the run's recorded prices, and what the current size detects.
//! The arithmetic is `stats::planning`'s, through the power formula `compare` states its
//! detectable change with (`stats::power`).

use crate::error::BadInput;
use crate::metrics::{MetricIdentity, MetricKind};
use crate::report::{metric_label, TableFormat};
use crate::scoring::{ModelScore, RunResults};
use crate::stats::paired::ALPHA;
use crate::stats::planning::{
    detectable, needed, standard_error, Counts, Needed, Planner, Population,
};
use crate::stats::within::Kernel;
use crate::stats::{cluster_indices, cluster_key};
use crate::util::{par_map_from, printable, shorten_names, wrap, SHORT_NAME};
use serde::Serialize;

/// What to plan for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The change to detect, as a fraction of the scale (D points / 100).
    pub change: f64,
    pub power: f64,
    /// The problems a design may use: the dataset's.
    pub available: usize,
    /// Only this model, when given.
    pub model: Option<String>,
}

/// A metric the plan covers, with its kernel.
struct Planned {
    metric: MetricKind,
    kernel: Kernel,
}

/// One design: samples per problem, the problems it needs, its power and cost.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Design {
    pub samples: u64,
    pub problems: u64,
    /// The lowest power among the planned metrics at this design.
    pub power: f64,
    /// Samples drawn in all (greedy answers included).
    pub units: u64,
    /// At the run's price per sample; None when the model was not priced.
    pub cost: Option<f64>,
    /// Whether the dataset has this many problems.
    pub fits: bool,
}

/// Per metric: what the run detects now and what the recommended design needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricPlan {
    pub metric: String,
    pub value: f64,
    /// The change (a fraction) the run's own size detects with the requested power.
    pub detectable_now: f64,
    /// Problems this metric alone needs at `samples` per problem: the recommended design's, or
    /// the largest considered when none is recommended.
    pub problems: u64,
    pub samples: u64,
    pub power: f64,
    /// Whether the within-problem variance was estimated exactly from the counts.
    pub exact: bool,
    /// The share of problems whose value a change of D moves at all (the test sees only those).
    pub moving: f64,
    /// Whether the power is compare's test simulated under the model, where the normal
    /// approximation is off ([`crate::stats::planning::Needed::simulated`]).
    pub simulated: bool,
}

/// A model's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPlan {
    pub model: String,
    pub problems_now: usize,
    pub samples_now: u64,
    pub greedy: bool,
    /// Problems per independent unit (2 for LiveMathBench's language copies).
    pub cluster_size: f64,
    /// Holm's strictest level: 5% over the tested family's size.
    pub alpha: f64,
    pub family: usize,
    pub metrics: Vec<MetricPlan>,
    /// Every design considered, fewest samples per problem first.
    pub designs: Vec<Design>,
    /// The cheapest design that fits the dataset; None when none reaches the power.
    pub recommended: Option<Design>,
    pub currency: Option<String>,
    pub per_sample: Option<f64>,
    pub notes: Vec<String>,
}

/// Plans for every model of `results` (or the one `request.model` names), the metrics of the
/// tested family that `keep` keeps.
pub fn plan(
    results: &RunResults,
    request: &Request,
    keep: &dyn Fn(&MetricKind) -> bool,
) -> Result<Vec<ModelPlan>, BadInput> {
    let family = distinct(results.tested_family());
    let planned: Vec<Planned> = (family.iter())
        .filter(|m| keep(m))
        .filter_map(|m| {
            let kernel = match m.identity() {
                MetricIdentity::AtLeast { k, m: t } => Kernel::at_least(k, t),
                MetricIdentity::Mean { k } => Kernel::mean_g(k),
                _ => return None,
            };
            Some(Planned {
                metric: m.clone(),
                kernel,
            })
        })
        .collect();
    if planned.is_empty() {
        return Err(BadInput(format!(
            "no metric to plan: the tested family is {} (--metric/--k keep none of its pass@k, \
             G-Pass@k or mG-Pass@k; greedy accuracy and maj@n cannot be planned from one run)",
            family
                .iter()
                .map(metric_label)
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let models: Vec<&ModelScore> = (results.models.iter())
        .filter(|m| request.model.as_ref().is_none_or(|x| *x == m.name))
        .filter(|m| !m.problems.is_empty())
        .collect();
    if models.is_empty() {
        let names: Vec<&str> = results.models.iter().map(|m| m.name.as_str()).collect();
        return Err(BadInput(match &request.model {
            Some(x) => format!(
                "--model {}: not a scored model of the run (it has {})",
                printable(x),
                names.join(", ")
            ),
            None => "the run has no scored problem to plan from".into(),
        }));
    }
    // compare tests every model's family rows together: Holm's first step is α over them all.
    let tests = family.len() * results.models.len().max(1);
    let alpha = ALPHA / tests as f64;
    Ok(models
        .iter()
        .map(|m| plan_model(results, m, &planned, request, (alpha, tests), &family))
        .collect())
}

/// The family's metrics once per quantity.
fn distinct(metrics: Vec<MetricKind>) -> Vec<MetricKind> {
    let mut seen = Vec::new();
    metrics
        .into_iter()
        .filter(|m| {
            let id = m.identity();
            !seen.contains(&id) && {
                seen.push(id);
                true
            }
        })
        .collect()
}

fn plan_model(
    results: &RunResults,
    model: &ModelScore,
    planned: &[Planned],
    request: &Request,
    (alpha, tests): (f64, usize),
    family: &[MetricKind],
) -> ModelPlan {
    let counts: Vec<Counts> = (model.problems.iter())
        .map(|p| Counts { n: p.n, c: p.c })
        .collect();
    let keys: Vec<String> = (model.problems.iter())
        .map(|p| cluster_key(&p.id, p.group.as_deref()))
        .collect();
    let (_, units) = cluster_indices(keys.iter().map(String::as_str));
    let size = model.problems.len() as f64 / units.max(1) as f64;
    let population = Population::fit(&counts);
    let entry = (results.manifest.as_ref()).and_then(|x| x.models.get(&model.name));
    let greedy = entry.is_some_and(|e| e.sampling.greedy);
    let cost = entry.and_then(|e| e.cost.as_ref());
    let per_sample = cost.and_then(|c| c.per_sample);
    let target = (alpha, request.power);
    let now = (model.problems.len() as f64, u64::from(model.n));
    let k_max = planned.iter().map(|p| p.kernel.k).max().unwrap_or(1);
    // Every number of samples is planned on its own (on every core: the simulated plans are
    // most of `gpassk plan`'s time); the recommended one's per-metric plans are kept.
    let grid = sample_grid(k_max, u64::from(model.n));
    let at_samples: Vec<(Option<Design>, Vec<Option<Needed>>)> = match &population {
        Some(pop) => par_map_from(&grid, 1, |&samples| {
            design_at(
                pop,
                planned,
                samples,
                size,
                request,
                target,
                (per_sample, greedy),
            )
        }),
        None => Vec::new(),
    };
    let designs: Vec<Design> = at_samples.iter().filter_map(|a| a.0.clone()).collect();
    let recommended = cheapest(&designs);
    let at = recommended.as_ref().map_or_else(
        || designs.last().map_or(u64::from(model.n), |d| d.samples),
        |d| d.samples,
    );
    let kept = (grid.iter().zip(&at_samples)).find_map(|(&s, a)| (s == at).then_some(&a.1));
    let metrics = (planned.iter().enumerate())
        .filter_map(|(i, p)| {
            let pop = population.as_ref()?;
            let need = match kept {
                Some(needs) => needs[i],
                None => needed(pop, &p.kernel, at, request.change, size, target),
            };
            Some(MetricPlan {
                metric: metric_label(&p.metric),
                value: pop.mean(&p.kernel),
                detectable_now: detectable(pop, &p.kernel, now, size, target),
                problems: need.map_or(0, |n| n.problems),
                samples: at,
                power: need.map_or(0.0, |n| n.power),
                exact: pop.within(&p.kernel, at).1,
                moving: need.map_or(0.0, |n| n.moving),
                simulated: need.is_some_and(|n| n.simulated),
            })
        })
        .collect();
    ModelPlan {
        model: model.name.clone(),
        problems_now: model.problems.len(),
        samples_now: u64::from(model.n),
        greedy,
        cluster_size: size,
        alpha,
        family: tests,
        metrics,
        designs,
        recommended,
        currency: cost.map(|c| c.currency.clone()),
        per_sample,
        notes: notes(family, planned, population.is_some(), request)
            .into_iter()
            .chain(cost.filter(|c| c.samples_without_usage > 0).map(|c| {
                format!(
                    "{} samples of the run came back without usage: the price per sample leaves \
                     them out, so the costs above are lower bounds",
                    c.samples_without_usage
                )
            }))
            .collect(),
    }
}

/// Samples per problem to consider: the run's n and multiples of the largest k.
fn sample_grid(k_max: u64, run_n: u64) -> Vec<u64> {
    let mut grid: Vec<u64> = [2u64, 3, 4, 6, 8, 12, 16]
        .iter()
        .map(|f| k_max * f / 2)
        .chain([run_n])
        .filter(|&n| n >= k_max && n <= crate::metrics::MAX_N)
        .collect();
    grid.sort_unstable();
    grid.dedup();
    grid
}

/// The design at `samples` per problem: the problems the hardest metric needs, and the power of
/// every metric there (the lowest reported); and each metric's own plan at `samples`.
fn design_at(
    pop: &Population,
    planned: &[Planned],
    samples: u64,
    size: f64,
    request: &Request,
    (alpha, power): (f64, f64),
    (per_sample, greedy): (Option<f64>, bool),
) -> (Option<Design>, Vec<Option<Needed>>) {
    let planners: Vec<Planner> = (planned.iter())
        .map(|p| Planner::new(pop, &p.kernel, samples, request.change, size))
        .collect();
    let needs: Vec<Option<Needed>> = (planners.iter())
        .map(|p| p.needed((alpha, power)))
        .collect();
    let Some(problems) = needs.iter().flatten().map(|n| n.problems).max() else {
        return (None, needs);
    };
    // A metric that needs exactly these problems has its power there already.
    let power = (planners.iter().zip(&needs))
        .filter_map(|(p, n)| match n {
            Some(n) if n.problems == problems => Some(n.power),
            _ => p.power(problems as f64, alpha),
        })
        .fold(1.0, f64::min);
    let units = problems * (samples + u64::from(greedy));
    let design = Design {
        samples,
        problems,
        power,
        units,
        cost: per_sample.map(|c| c * units as f64),
        fits: problems as usize <= request.available,
    };
    (Some(design), needs)
}

/// The cheapest design that fits (by cost when priced, else by samples drawn).
fn cheapest(designs: &[Design]) -> Option<Design> {
    designs
        .iter()
        .filter(|d| d.fits)
        .min_by(|a, b| {
            let key = |d: &Design| d.cost.unwrap_or(d.units as f64);
            key(a).total_cmp(&key(b)).then(a.samples.cmp(&b.samples))
        })
        .cloned()
}

fn notes(
    family: &[MetricKind],
    planned: &[Planned],
    fitted: bool,
    request: &Request,
) -> Vec<String> {
    let mut out = Vec::new();
    let unplanned: Vec<String> = (family.iter())
        .filter(|m| !planned.iter().any(|p| p.metric.identity() == m.identity()))
        .filter(|m| matches!(m, MetricKind::Greedy | MetricKind::Majority))
        .map(metric_label)
        .collect();
    if !unplanned.is_empty() {
        out.push(format!(
            "{} not planned: one run cannot tell how much they vary between runs (they stay in the \
             family Holm corrects over)",
            unplanned.join(" and ")
        ));
    }
    if !fitted {
        out.push("no problem with a usable sample: nothing to plan from".into());
    }
    out.push(format!(
        "a change is modelled as every problem's solve rate moving by one amount; designs need at \
         most {} problems (the dataset's)",
        request.available
    ));
    out
}

/// The plans as text (table formats) or JSON.
pub fn render(
    plans: &[ModelPlan],
    request: &Request,
    format: TableFormat,
) -> anyhow::Result<String> {
    if !format.is_human() {
        return Ok(serde_json::to_string_pretty(plans)? + "\n");
    }
    let names: Vec<String> = (plans.iter())
        .map(|p| printable(&p.model).into_owned())
        .collect();
    let short = shorten_names(&names, SHORT_NAME);
    let mut out = format!(
        "To detect a change of {:.1} points with {:.0}% power under compare's test:\n",
        100.0 * request.change,
        100.0 * request.power
    );
    for ((p, name), full) in plans.iter().zip(&short).zip(&names) {
        out.push('\n');
        // A shortened name is spelled out once, where its plan starts (as compare does).
        match name == full {
            true => out.push_str(&format!("{name}\n")),
            false => out.push_str(&format!("{name} = {full}\n")),
        }
        out.push_str(&render_model(p, request));
    }
    Ok(out)
}

/// Width of `plan`'s text: an 80-column terminal.
const WIDTH: usize = 80;

/// `text` wrapped to [`WIDTH`] (continuation lines indented by `indent`), and a line break.
fn line(out: &mut String, text: &str, indent: &str) {
    out.push_str(&wrap(text, WIDTH, indent));
    out.push('\n');
}

fn render_model(p: &ModelPlan, request: &Request) -> String {
    let mut out = String::new();
    let clusters = match p.cluster_size > 1.0 {
        true => format!(", in clusters of {:.1}", p.cluster_size),
        false => String::new(),
    };
    line(
        &mut out,
        &format!(
            "  now: {} problems × {} samples{clusters}; tested family: {} tests, Holm's \
             strictest level {:.3}%",
            p.problems_now,
            p.samples_now,
            p.family,
            100.0 * p.alpha
        ),
        "    ",
    );
    let needed = match &p.recommended {
        Some(d) => format!(
            "  needed: {} problems × {} samples{}, power {:.0}%: {} samples{}",
            d.problems,
            d.samples,
            if p.greedy { " (+ greedy)" } else { "" },
            100.0 * d.power,
            d.units,
            cost_text(d.cost, p).map_or(String::new(), |c| format!(", {c}")),
        ),
        None => format!(
            "  needed: no design within the dataset's {} problems reaches {:.0}% power (see \
             the options)",
            request.available,
            100.0 * request.power
        ),
    };
    line(&mut out, &needed, "    ");
    metric_table(&mut out, p);
    out.push_str("  options: samples per problem, problems needed, samples drawn, cost\n");
    for d in &p.designs {
        let cost = cost_text(d.cost, p).map_or(String::new(), |c| format!("  {c}"));
        let over = if d.fits { "" } else { "  too many problems" };
        out.push_str(&format!(
            "    {:>5}  {:>8}  {:>10}{cost}{over}\n",
            d.samples, d.problems, d.units
        ));
    }
    for n in &p.notes {
        line(&mut out, &format!("  note: {n}"), "        ");
    }
    out
}

/// Per metric: its value, the change the run detects now, what it needs at the recommended
/// samples and its power there, and the share of problems a change moves; marks explained once.
fn metric_table(out: &mut String, p: &ModelPlan) {
    out.push_str(&format!(
        "  {:<16} {:>6} {:>7} {:>9} {:>8} {:>7} {:>6}\n",
        "metric", "value", "now ±", "problems", "samples", "power", "moves"
    ));
    for m in &p.metrics {
        let marks = format!(
            "{}{}",
            if m.exact { " " } else { "*" },
            if m.simulated { "~" } else { " " }
        );
        out.push_str(&format!(
            "  {:<16} {:>6.1} {:>7.1} {:>9} {:>8} {:>5.0}%{marks} {:>4.0}%\n",
            m.metric,
            100.0 * m.value,
            100.0 * m.detectable_now,
            m.problems,
            m.samples,
            100.0 * m.power,
            100.0 * m.moving
        ));
    }
    let mut marks: Vec<String> = Vec::new();
    if p.metrics.iter().any(|m| !m.exact) {
        marks.push("* within-problem variance modelled (not estimated from the counts)".into());
    }
    let simulated = p.metrics.iter().filter(|m| m.simulated);
    if let Some(noise) = simulated.map(|m| standard_error(m.power)).reduce(f64::max) {
        marks.push(format!(
            "~ power of compare's test simulated on the model's problems ({} pairs of runs, \
             ±{:.0} points): with fractional values and few problems carrying the change, its \
             normal approximation is off",
            crate::stats::simulated::REPLICATES,
            100.0 * noise
        ));
    }
    if p.metrics.iter().any(|m| m.moving < 0.5 && m.problems > 0) {
        marks.push(format!(
            "moves: share of problems a change moves; the test sees only those and flags \
             none unless at least {} move one way",
            crate::stats::power::least_units(p.alpha)
        ));
    }
    for m in marks {
        line(out, &format!("  {m}"), "    ");
    }
}

/// The cost as "about 1.2 USD"; None when the model was not priced.
fn cost_text(cost: Option<f64>, p: &ModelPlan) -> Option<String> {
    match (cost, &p.currency) {
        (Some(c), Some(cur)) => Some(format!("about {}", crate::cost::show(c, cur))),
        _ => None,
    }
}
