//! The paid calls beyond sampling (the LLM judge, the verifier's PRM, a search's reward model)
//! under a budget: each priced in the budget's currency, or refused before anything is sent
//! unless its table says `allow_unpriced = true`.

use super::{JudgeSettings, RunSettings};
use crate::config::GraderMode;
use crate::cost::Price;

/// A caller beyond the sampled models: what to call it, its price, whether it may run unpriced,
/// and where a price is given.
struct Caller<'a> {
    who: String,
    price: Option<&'a Price>,
    allow_unpriced: bool,
    /// The table its price goes in, and the one `allow_unpriced` goes in.
    tables: (&'a str, &'a str),
    allow_key: &'a str,
    /// The currency its calls must be counted in, when a budget shares a ledger with it.
    currency: Option<&'a str>,
}

/// Which callers a command checks: `run` calls them all, `verify` only the verifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PaidCalls {
    All,
    Verifier,
}

impl RunSettings {
    /// The judge when the grader asks it (a `[judge]` table under `grader = "rule"` is never
    /// called).
    pub fn judged(&self) -> Option<&JudgeSettings> {
        self.judge
            .as_ref()
            .filter(|_| self.evaluation.grader != GraderMode::Rule)
    }

    /// Whether any `max_cost` applies: the run's or a sampled model's.
    pub fn budgeted(&self) -> bool {
        self.evaluation.max_cost.is_some()
            || (self.models.iter())
                .any(|m| m.pricing.as_ref().is_some_and(|p| p.budget().is_some()))
    }

    /// Checks the judge's, the verifier's and the reward models' prices against the budgets:
    /// an unpriced one under a budget without `allow_unpriced`, or one priced in another currency
    /// than the ledger it shares, is the error (one line naming the table). Otherwise, the notes
    /// a run prints at start: which calls no budget counts (allowed unpriced) or caps (priced,
    /// but no `max_cost` of its own or of the run).
    pub fn check_paid_calls(&self) -> Result<Vec<String>, String> {
        self.check_paid_calls_of(PaidCalls::All)
    }

    /// [`RunSettings::check_paid_calls`] of the callers a command calls.
    pub fn check_paid_calls_of(&self, which: PaidCalls) -> Result<Vec<String>, String> {
        if !self.budgeted() {
            return Ok(Vec::new());
        }
        let mut notes = Vec::new();
        let callers = self.callers().into_iter();
        for c in callers.filter(|c| which == PaidCalls::All || c.tables.1 == "verifier") {
            let Some(price) = c.price else {
                if !c.allow_unpriced {
                    return Err(format!(
                        "{} has no price and this run has a budget (max_cost): give \
                         [{}] input and output (per million tokens), or set {} = true in \
                         [{}] to run it with its calls not counted",
                        c.who, c.tables.0, c.allow_key, c.tables.1
                    ));
                }
                notes.push(format!(
                    "{}'s calls are not priced ({} = true): max_cost does not count or stop them",
                    c.who, c.allow_key
                ));
                continue;
            };
            if let Some(cur) = c.currency.filter(|cur| *cur != price.currency) {
                return Err(format!(
                    "{} is priced in {} but its calls count under a budget in {cur}: give \
                     [{}] in {cur}",
                    c.who, price.currency, c.tables.0
                ));
            }
            if c.currency.is_none() && price.budget().is_none() {
                notes.push(format!(
                    "{}'s calls are priced but no max_cost caps them: set max_cost in [{}] \
                     or [evaluation]",
                    c.who, c.tables.0
                ));
            }
        }
        Ok(notes)
    }

    /// The judge (when asked), the verifier and every search's reward model.
    fn callers(&self) -> Vec<Caller<'_>> {
        let run_currency = self.evaluation.max_cost.and_then(|_| {
            let priced = self.models.iter().find_map(|m| m.pricing.as_ref());
            priced.map(|p| p.currency.as_str())
        });
        let mut out = Vec::new();
        if let Some(j) = self.judged() {
            out.push(Caller {
                who: format!("the judge {}", j.model_id),
                price: j.pricing.as_ref(),
                allow_unpriced: j.allow_unpriced,
                tables: ("judge.pricing", "judge"),
                allow_key: "allow_unpriced",
                currency: run_currency,
            });
        }
        if let Some(v) = &self.verifier {
            out.push(Caller {
                who: format!("the verifier {}", v.reward_model_id),
                price: v.pricing.as_ref(),
                allow_unpriced: v.allow_unpriced,
                tables: ("verifier.pricing", "verifier"),
                allow_key: "allow_unpriced",
                currency: run_currency,
            });
        }
        for m in &self.models {
            let (Some(s), Some(policy)) = (&m.search, &m.pricing) else {
                continue;
            };
            let Some(id) = s.reward_model_id.as_deref() else {
                continue;
            };
            // Reward calls count under the model's ledger (and the run's), in its currency.
            let capped = policy.budget().is_some() || self.evaluation.max_cost.is_some();
            if !capped {
                continue;
            }
            out.push(Caller {
                who: format!("the reward model {id} of model {}", m.name),
                price: s.reward_price.as_ref(),
                allow_unpriced: s.reward_allow_unpriced,
                tables: ("search.reward_pricing", "search"),
                allow_key: "reward_allow_unpriced",
                currency: Some(policy.currency.as_str()),
            });
        }
        out
    }
}
