//! Budgets (`max_cost`): each model's ledger and the run's, opened from the most the checkpoints
//! can have cost, so a request that could pass a limit is never sent, across resumes too.

use crate::config::{ModelSettings, RunSettings};
use crate::cost::{Ledger, Money};
use crate::plan::Prepared;
use crate::rundir::record::{read_lines, RecordHead, UnitOutcome};
use crate::rundir::RunDir;
use crate::util::id_index;
use anyhow::Result;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A model's `max_cost` and the run's `[evaluation] max_cost`: what the checkpoints and replies
/// cost so far plus the worst case of the requests in flight; a request that could take either
/// past its limit is not sent.
#[derive(Clone)]
pub(super) struct Budget {
    pub(super) price: crate::cost::Price,
    model: Option<Arc<Ledger>>,
    run: Option<Arc<Ledger>>,
}

/// Every model's `Budget` in a run directory, each ledger starting from the most its
/// checkpoint can have cost; the one place a budget is opened, for live sampling, searches and
/// Batch API or batch-file exports alike.
#[derive(Clone, Default)]
pub struct BudgetBook {
    budgets: HashMap<String, Budget>,
}

impl BudgetBook {
    /// The budgets of `settings`' models (all of them: the run's ledger counts every model).
    pub fn open(
        settings: &RunSettings,
        prepared: &[Prepared],
        run_dir: &RunDir,
    ) -> Result<BudgetBook> {
        let index = id_index(prepared.iter(), |p| p.id.as_str());
        let run_limit = settings.evaluation.max_cost;
        // Each priced model's checkpoint is read once: its spending counts on both ledgers.
        let mut spent = Vec::new();
        for m in &settings.models {
            let Some(price) = &m.pricing else { continue };
            if price.budget().is_none() && run_limit.is_none() {
                continue;
            }
            let path = run_dir.checkpoint(&m.name);
            spent.push((
                m,
                price,
                spent_at_most(m, price, &path, (prepared, &index))?,
            ));
        }
        // Config validation guarantees a price for every model when the run has a budget.
        let run = run_limit.map(|limit| {
            let total = spent.iter().fold(Money::from_integer(0), |t, s| t + s.2);
            let limit = Money::from_integer(u128::from(limit) * 1_000_000);
            Arc::new(Ledger::new(limit, total))
        });
        let budgets = spent
            .into_iter()
            .map(|(m, price, spent)| {
                let model = price.budget().map(|l| Arc::new(Ledger::new(l, spent)));
                let budget = Budget {
                    price: price.clone(),
                    model,
                    run: run.clone(),
                };
                (m.name.clone(), budget)
            })
            .collect();
        Ok(BudgetBook { budgets })
    }

    pub(super) fn budget(&self, model: &str) -> Option<Budget> {
        self.budgets.get(model).cloned()
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
        let worst = b.worst_case(m, prep, slots);
        let per_unit = b.worst_case(m, prep, 1);
        b.reserve(worst)
            .map_err(|(key, l)| b.stop_message(key, l, left, per_unit))
    }
}

impl Budget {
    /// The worst case of a request for `slots` samples of `prep`: its prompt bound plus
    /// max_tokens per sample, each at the highest price that can apply.
    pub(super) fn worst_case(&self, m: &ModelSettings, prep: &Prepared, slots: usize) -> Money {
        let completion = u64::from(m.sampling.max_tokens.unwrap_or(0)) * slots as u64;
        self.price.worst(prep.prompt_tokens_bound, completion)
    }

    /// Reserves `worst` on both ledgers; on refusal, the message saying which limit was hit.
    pub(super) fn reserve(&self, worst: Money) -> Result<(), (&'static str, &Ledger)> {
        if let Some(m) = &self.model {
            if !m.reserve(worst) {
                return Err(("max_cost", m));
            }
        }
        if let Some(r) = &self.run {
            if !r.reserve(worst) {
                if let Some(m) = &self.model {
                    m.release(worst);
                }
                return Err(("[evaluation] max_cost", r));
            }
        }
        Ok(())
    }

    /// Replaces a reservation with what the request actually cost.
    pub(super) fn settle(&self, worst: Money, actual: Money) {
        for l in self.model.as_deref().into_iter().chain(self.run.as_deref()) {
            l.settle(worst, actual);
        }
    }

    pub(super) fn stop_message(
        &self,
        key: &str,
        l: &Ledger,
        units_left: u64,
        per_unit: Money,
    ) -> String {
        use crate::cost::{show, to_f64};
        let cur = &self.price.currency;
        format!(
            "budget reached: {key} {} (spent {}); the {units_left} units left could cost up to {} more; raise {key} and resume",
            show(to_f64(&l.limit()), cur),
            show(to_f64(&l.used()), cur),
            show(to_f64(&(per_unit * Money::from_integer(u128::from(units_left)))), cur)
        )
    }
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
