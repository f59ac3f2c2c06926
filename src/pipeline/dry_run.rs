//! The `--dry-run` text of a run: per model the units, requests, tokens and cost it would send,
//! the judge and verifier calls after it, where the configuration came from, and the total. Built
//! as a value; the command prints it.

use crate::config::{self, GraderMode};
use crate::cost::Money;
use crate::plan::Plan;
use crate::report;
use crate::rundir::RunDir;
use crate::sampling::{load_done, missing_work, DoneSet};
use crate::scoring::judge_pending_count;
use crate::util::short;
use anyhow::Result;

/// `println!` into the text being built (writing to a String cannot fail).
macro_rules! outln {
    ($out:expr, $($arg:tt)*) => {{
        $out.push_str(&format!($($arg)*));
        $out.push('\n');
    }};
}

/// What the dry run adds up over the models: its closing total.
struct PlanTotal {
    units: u64,
    requests: u64,
    /// Calls of the search models (min, max).
    search_calls: (u64, u64),
    prompt: u64,
    /// None once a model has no `max_tokens`: nothing bounds the completions.
    completion: Option<u64>,
    /// Per currency, the (min, max) cost of the priced sampling models; max None when unbounded.
    cost: std::collections::BTreeMap<String, (Money, Option<Money>)>,
    /// Sampling models with a price, of all sampling models.
    priced: (usize, usize),
}

impl PlanTotal {
    fn new() -> PlanTotal {
        PlanTotal {
            units: 0,
            requests: 0,
            search_calls: (0, 0),
            prompt: 0,
            completion: Some(0),
            cost: Default::default(),
            priced: (0, 0),
        }
    }
}

/// The dry run's text: one block per model (its name on a line of its own, so long names never push the
/// figures past 80 columns), where the config came from, and the total.
pub fn plan_text(plan: &Plan, resume: Option<&RunDir>) -> Result<String> {
    let mut out = String::new();
    let index = plan.id_index();
    let pass: u64 = plan.prepared.iter().map(|p| p.prompt_tokens_estimate).sum();
    outln!(out, "plan (dry run, nothing is sent)");
    outln!(
        out,
        "dataset {} — {} problems, {} few-shot examples",
        plan.dataset.name,
        plan.prepared.len(),
        plan.few_shot_examples
    );
    outln!(out, "  prompts: ~{pass} tokens a pass over the problems");
    let mut total = PlanTotal::new();
    let mut to_sample = Vec::new();
    for m in &plan.settings.models {
        let done = match resume {
            Some(dir) => load_done(&dir.checkpoint(&m.name), &index)?,
            None => DoneSet::new(),
        };
        outln!(out, "  {}", m.name);
        let mut work = Work::default();
        for w in missing_work(plan.prepared.len(), &m.sampling, &done) {
            work.units += w.slots.len() as u64;
            work.requests += 1;
            work.prompt += plan.prepared[w.problem].prompt_tokens_estimate;
        }
        total.units += work.units;
        to_sample.push(work.units);
        match &m.search {
            Some(search) => search_plan(&mut out, plan, m, search, work.units, &mut total),
            None => sampling_plan(&mut out, plan, m, &work, &mut total),
        }
    }
    if let Some(v) = &plan.settings.verifier {
        let per = match v.reward_mode {
            config::RewardMode::Pooling => "one /pooling call a sample",
            _ => "one chat call a step",
        };
        let line = format!(
            "  verifier {}: scores every sample not yet scored after sampling ({per}; {})",
            v.reward_model_id,
            price_text(v.pricing.as_ref())
        );
        outln!(out, "{}", report::wrap(&line, 80, "    "));
    }
    judge_plan(&mut out, plan, resume, &to_sample)?;
    sources(&mut out, plan, resume);
    total_lines(&mut out, &total);
    Ok(out)
}

/// The dry run's judge lines: which samples its grader sends it, and per model how many it would
/// be asked about now (the run's stored samples not judged yet) and how many units are still to
/// sample (`to_sample`, in the models' order).
fn judge_plan(
    out: &mut String,
    plan: &Plan,
    resume: Option<&RunDir>,
    to_sample: &[u64],
) -> Result<()> {
    let Some(j) = plan.settings.judged() else {
        return Ok(());
    };
    let whole = j.input == config::JudgeInput::Response;
    let which = match plan.settings.evaluation.grader {
        GraderMode::Judge => "every sample",
        GraderMode::RuleThenJudge => "the samples the rules did not accept",
        GraderMode::RuleThenJudgeUncertain if whole => {
            "only the samples whose answer the rules guessed (the last math span or number) or \
             did not find"
        }
        GraderMode::RuleThenJudgeUncertain => {
            "only the samples whose answer the rules guessed (the last math span or number)"
        }
        GraderMode::Rule => return Ok(()),
    };
    let line = format!(
        "  judge {}: asked about {which}, at most {} tokens a reply ({})",
        j.model_id,
        j.max_tokens,
        price_text(j.pricing.as_ref())
    );
    outln!(out, "{}", report::wrap(&line, 80, "    "));
    for (m, &left) in plan.settings.models.iter().zip(to_sample) {
        let now = match resume {
            Some(dir) => judge_pending_count(plan, dir, m)?,
            None => 0,
        };
        let later = match left {
            0 => String::new(),
            u => format!("; of the {u} units still to sample, those its grader sends it"),
        };
        let line = format!("    {}: {now} samples would be sent now{later}", m.name);
        outln!(out, "{}", report::wrap(&line, 80, "      "));
    }
    Ok(())
}

/// Where a judge's or verifier's price comes from, for the dry run.
fn price_text(p: Option<&crate::cost::Price>) -> String {
    p.map_or_else(|| "not priced".into(), |p| format!("price: {}", p.source))
}

/// What one model still has to send.
#[derive(Default)]
struct Work {
    units: u64,
    requests: u64,
    prompt: u64,
}

/// The dry run's lines for a sampling model: units, requests, tokens and cost, added to the total.
fn sampling_plan(
    out: &mut String,
    plan: &Plan,
    m: &config::ModelSettings,
    w: &Work,
    total: &mut PlanTotal,
) {
    outln!(
        out,
        "    {} problems × ({} samples{}) → {} units in {} requests",
        plan.prepared.len(),
        m.sampling.n,
        if m.sampling.greedy { " + greedy" } else { "" },
        w.units,
        w.requests
    );
    let completion = m.sampling.max_tokens.map(|t| w.units * u64::from(t));
    outln!(
        out,
        "    ~{} prompt tokens, {}",
        w.prompt,
        completion_text(completion)
    );
    total.requests += w.requests;
    total.prompt += w.prompt;
    total.completion = total.completion.zip(completion).map(|(a, b)| a + b);
    total.priced.1 += 1;
    let Some(p) = &m.pricing else {
        return;
    };
    let (min, max) = cost_bounds(p, w.prompt, completion);
    let range = cost_range(&min, max.as_ref(), &p.currency);
    outln!(out, "    cost estimate: {range}");
    let price = format!("    price: {}", p.source);
    outln!(out, "{}", report::wrap(&price, 80, "      "));
    let zero = || Money::from_integer(0);
    let sum = total
        .cost
        .entry(p.currency.clone())
        .or_insert_with(|| (zero(), Some(zero())));
    sum.0 += min;
    sum.1 = sum.1.take().zip(max).map(|(a, b)| a + b);
    total.priced.0 += 1;
}

/// `≤ N completion tokens`, or why there is no bound.
fn completion_text(completion: Option<u64>) -> String {
    match completion {
        Some(t) => format!("≤ {t} completion tokens"),
        None => "completion tokens unbounded (no max_tokens)".into(),
    }
}

/// The dry run's last lines: units, requests, tokens and the worst-case cost over every model.
fn total_lines(out: &mut String, t: &PlanTotal) {
    let searched = if t.search_calls.1 > 0 {
        format!(" + {}–{} search calls", t.search_calls.0, t.search_calls.1)
    } else {
        String::new()
    };
    // A search's prompts grow with its tree: the plan cannot count them.
    let theirs = if searched.is_empty() {
        ""
    } else {
        " + the searches'"
    };
    outln!(
        out,
        "total: {} units in {} requests{searched}",
        t.units,
        t.requests
    );
    outln!(
        out,
        "  ~{} prompt tokens{theirs}, {}",
        t.prompt,
        completion_text(t.completion)
    );
    if t.cost.is_empty() {
        return;
    }
    let costs: Vec<String> = t
        .cost
        .iter()
        .map(|(currency, (min, max))| cost_range(min, max.as_ref(), currency))
        .collect();
    let mut line = format!("  cost {}", costs.join("; "));
    if t.priced.0 < t.priced.1 {
        line.push_str(&format!(", {} of {} models priced", t.priced.0, t.priced.1));
    }
    outln!(out, "{}", report::wrap(&line, 80, "    "));
    outln!(
        out,
        "  (min: the prompts alone; max, the worst case: every sample uses max_tokens)"
    );
}

/// The dry run's lines for an mcts model: searches, the call budget (min–max) and the completion
/// tokens it bounds, added to the total.
fn search_plan(
    out: &mut String,
    plan: &Plan,
    m: &config::ModelSettings,
    s: &config::SearchSettings,
    searches: u64,
    total: &mut PlanTotal,
) {
    let (lo, hi) = s.call_budget();
    let (lo, hi) = (searches * lo, searches * hi);
    let completion = searches * s.completion_budget();
    outln!(out,
        "    {} problems × {} searches → {searches} searches\n    {lo}–{hi} calls (policy + reward), ≤ {completion} completion tokens",
        plan.prepared.len(),
        m.sampling.n,
    );
    if m.pricing.is_some() {
        let note = "    cost: set by the trees (prompts grow with depth); max_cost, when set, is held call by call";
        outln!(out, "{}", report::wrap(note, 80, "      "));
    }
    total.search_calls = (total.search_calls.0 + lo, total.search_calls.1 + hi);
    total.completion = total.completion.map(|t| t + completion);
}

/// The dry run's cost bounds: min = the prompts alone, max = prompts plus max_tokens per sample
/// (None without max_tokens).
fn cost_bounds(
    p: &crate::cost::Price,
    prompt: u64,
    completion: Option<u64>,
) -> (Money, Option<Money>) {
    (
        p.estimate(prompt, 0),
        completion.map(|c| p.estimate(prompt, c)),
    )
}

/// `MIN – MAX` in a currency; MAX is `unbounded (no max_tokens)` when there is none.
fn cost_range(min: &Money, max: Option<&Money>, currency: &str) -> String {
    use crate::cost::{show, to_f64};
    let max = max.map_or_else(
        || "unbounded (no max_tokens)".into(),
        |m| show(to_f64(m), currency),
    );
    format!("{} – {max}", show(to_f64(min), currency))
}

/// The dry run's account of where the configuration came from.
fn sources(out: &mut String, plan: &Plan, resume: Option<&RunDir>) {
    let s = &plan.settings;
    if let Some(t) = &s.task_file {
        let name = s.evaluation.task_name.as_deref().unwrap_or("(unnamed)");
        outln!(
            out,
            "  task {name} from {} (sha256 {})",
            t.path,
            short(&t.sha256)
        );
    }
    for o in &s.overrides {
        outln!(out, "  override: --set {o}");
    }
    if let Some(dir) = resume {
        outln!(out, "  resumes: {}", dir.display());
    }
}
