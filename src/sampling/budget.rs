//! Budgets (`max_cost`): each model's ledger, the judge's and the verifier's, and the run's,
//! opened from the most the checkpoints, judge verdicts and verifier scores can have cost, so a
//! request that could pass a limit is never sent, across resumes too.

use crate::config::{ModelSettings, RunSettings};
use crate::cost::{Budget, Ledger, Money, Price};
use crate::plan::Prepared;
use crate::rundir::record::{read_lines, RecordHead, UnitOutcome};
use crate::rundir::RunDir;
use crate::util::id_index;
use anyhow::Result;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Every payer's `Budget` in a run directory (the sampled models, the judge, the verifier), each
/// ledger starting from the most its files can have cost; the one place a budget is opened, for
/// live sampling, searches, Batch API or batch-file exports, judging and verifying alike.
#[derive(Clone, Default)]
pub struct BudgetBook {
    budgets: HashMap<String, Budget>,
    judge: Option<Budget>,
    verifier: Option<Budget>,
}

/// A payer before its ledgers are opened: its price, the key of its own `max_cost`, what its
/// files can have cost.
struct Payer<'a> {
    price: &'a Price,
    key: &'static str,
    spent: Money,
}

impl Payer<'_> {
    fn budget(&self, run: &Option<Arc<Ledger>>) -> Budget {
        let own = (self.price.budget())
            .map(|l| (self.key.to_string(), Arc::new(Ledger::new(l, self.spent))));
        Budget::new(self.price.clone(), own, run.clone())
    }
}

impl BudgetBook {
    /// The budgets of `settings`' payers (all of them: the run's ledger counts every one).
    pub fn open(
        settings: &RunSettings,
        prepared: &[Prepared],
        run_dir: &RunDir,
    ) -> Result<BudgetBook> {
        let index = id_index(prepared.iter(), |p| p.id.as_str());
        let run_limit = settings.evaluation.max_cost;
        let capped = |p: &Price| p.budget().is_some() || run_limit.is_some();
        // Each priced model's checkpoint is read once: its spending counts on both ledgers.
        let mut models = Vec::new();
        for m in &settings.models {
            let Some(price) = m.pricing.as_ref().filter(|p| capped(p)) else {
                continue;
            };
            let path = run_dir.checkpoint(&m.name);
            // A search's line sums its policy and reward calls: each token at the dearer price.
            let reward = m.search.as_ref().and_then(|s| s.reward_price.as_ref());
            let line_price = reward.map_or_else(|| price.clone(), |r| price.dearer(r));
            let spent = spent_at_most(m, &line_price, &path, (prepared, &index))?;
            let key = "max_cost";
            models.push((m, Payer { price, key, spent }));
        }
        let files = |file: &dyn Fn(&str) -> PathBuf| -> Vec<PathBuf> {
            settings.models.iter().map(|m| file(&m.name)).collect()
        };
        let judge = settings.judged().and_then(|j| j.pricing.as_ref());
        let judge = match judge.filter(|p| capped(p)) {
            Some(price) => Some(Payer {
                price,
                key: "judge.pricing.max_cost",
                spent: calls_at_most(&files(&|m| run_dir.grades(m)), price)?,
            }),
            None => None,
        };
        let verifier = settings.verifier.as_ref().and_then(|v| v.pricing.as_ref());
        let verifier = match verifier.filter(|p| capped(p)) {
            Some(price) => Some(Payer {
                price,
                key: "verifier.pricing.max_cost",
                spent: calls_at_most(&files(&|m| run_dir.verifier_scores(m)), price)?,
            }),
            None => None,
        };
        // Config validation guarantees a price for every model when the run has a budget; an
        // unpriced judge or verifier is refused at start unless `allow_unpriced` says otherwise.
        let run = run_limit.map(|limit| {
            let payers = models.iter().map(|m| &m.1).chain(&judge).chain(&verifier);
            let total = payers.fold(Money::from_integer(0), |t, p| t + p.spent);
            let limit = Money::from_integer(u128::from(limit) * 1_000_000);
            Arc::new(Ledger::new(limit, total))
        });
        let budgets = (models.iter())
            .map(|(m, payer)| (m.name.clone(), payer.budget(&run)))
            .collect();
        Ok(BudgetBook {
            budgets,
            judge: judge.map(|p| p.budget(&run)),
            verifier: verifier.map(|p| p.budget(&run)),
        })
    }

    pub(super) fn budget(&self, model: &str) -> Option<Budget> {
        self.budgets.get(model).cloned()
    }

    /// The judge's budget, when it is priced and some `max_cost` applies to it.
    pub fn judge(&self) -> Option<Budget> {
        self.judge.clone()
    }

    /// The verifier's budget, when it is priced and some `max_cost` applies to it.
    pub fn verifier(&self) -> Option<Budget> {
        self.verifier.clone()
    }

    /// Reserves the worst case of a request for `slots` of `prep`, for good (a batch line: what it
    /// cost is only known once its output is recorded); the stop message when it does not fit.
    pub fn reserve_request(
        &self,
        m: &ModelSettings,
        prep: &Prepared,
        slots: usize,
        left: u64,
    ) -> Result<(), String> {
        let Some(b) = self.budgets.get(&m.name) else {
            return Ok(());
        };
        let worst = worst_case(b, m, prep, slots);
        let per_unit = worst_case(b, m, prep, 1);
        b.reserve(worst)
            .map_err(|hit| b.stop_message(hit, (left, "units"), per_unit))
    }
}

/// The worst case of a request for `slots` samples of `prep`: its prompt bound plus max_tokens
/// per sample, each at the highest price that can apply.
pub(super) fn worst_case(b: &Budget, m: &ModelSettings, prep: &Prepared, slots: usize) -> Money {
    let completion = u64::from(m.sampling.max_tokens.unwrap_or(0)) * slots as u64;
    b.price.worst(prep.prompt_tokens_bound, completion)
}

/// The most the judge's or the verifier's calls recorded in `paths` can have cost at `price`.
/// Lines written before calls were priced carry no `spend` and count nothing.
fn calls_at_most(paths: &[PathBuf], price: &Price) -> Result<Money> {
    let mut spent = Money::from_integer(0);
    crate::rundir::record::read_spends(paths, |s| spent += s.at_most(price))?;
    Ok(spent)
}

/// The most a model's checkpoint can have cost, so a resumed run's budget starts there: every
/// line is a paid request's share, a count the server did not give priced at its bound, and each
/// failed attempt the server may have billed at its worst case (as the live ledger counted it).
fn spent_at_most(
    m: &ModelSettings,
    price: &crate::cost::Price,
    path: &Path,
    (prepared, index): (&[Prepared], &HashMap<&str, usize>),
) -> Result<Money> {
    let widest = prepared.iter().map(|p| p.prompt_tokens_bound).max();
    let mut spent = Money::from_integer(0);
    read_lines(path, |r: RecordHead| {
        let prompt = index
            .get(r.problem_id.as_str())
            .map(|&p| prepared[p].prompt_tokens_bound)
            .or(widest)
            .unwrap_or(0);
        let share = u128::from(r.choices_in_request.max(1));
        let max_tokens = u64::from(r.max_tokens.or(m.sampling.max_tokens).unwrap_or(0));
        let bound = (prompt, max_tokens * share as u64);
        let failed =
            price.worst(bound.0, bound.1) * Money::from_integer(u128::from(r.billable_failures));
        let reply = match r.outcome {
            UnitOutcome::ApiError => Money::from_integer(0),
            _ => price.cost_at_most(r.usage.as_ref(), bound),
        };
        spent += (failed + reply) / Money::from_integer(share);
        Ok(())
    })?;
    Ok(spent)
}
