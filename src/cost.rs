//! Money: model prices (config or the shipped price file), the cost of recorded token usage and
//! worst-case estimates. Amounts are exact rationals inside; f64 only at the report boundary.

use crate::client::Usage;
use num_rational::Ratio;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// An amount in pico-units (10⁻¹² of the currency): a price in micro-units per million tokens
/// times a token count is exact; a choice's share of a request's usage makes it a fraction.
pub type Money = Ratio<u128>;

/// The shipped price file, looked up by model id when a config gives no price.
const SHIPPED: &str = include_str!("../configs/prices.toml");

/// The largest price accepted, per million tokens.
const MAX_PRICE: f64 = 1e6;

/// Price keys as written in `[pricing]`, `[models.pricing]` or the price file (per million tokens).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PriceFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub currency: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<f64>,
    /// The model's budget in `currency`: no request is sent that could take it past this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
}

/// A resolved price: micro-units of `currency` per million tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    pub currency: String,
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    pub reasoning: u64,
    /// Where it came from: `config`, or `prices.toml (as of …)`.
    pub source: String,
    /// The budget (`max_cost`) in micro-units of `currency`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<u64>,
}

impl PriceFields {
    /// These fields, each one missing taken from `base`.
    pub fn over(&self, base: &PriceFields) -> PriceFields {
        PriceFields {
            currency: self.currency.clone().or_else(|| base.currency.clone()),
            input: self.input.or(base.input),
            cached_input: self.cached_input.or(base.cached_input),
            output: self.output.or(base.output),
            reasoning: self.reasoning.or(base.reasoning),
            max_cost: self.max_cost.or(base.max_cost),
        }
    }

    /// The price these fields give: None when they name no price at all; an error (key, message)
    /// when one is invalid or `input`/`output` is missing.
    pub fn resolve(&self, source: &str) -> Result<Option<Price>, (&'static str, String)> {
        let prices = [self.input, self.cached_input, self.output, self.reasoning];
        if prices.iter().all(Option::is_none) {
            return Ok(None);
        }
        let need = |key: &'static str, v: Option<f64>| -> Result<u64, (&'static str, String)> {
            let v = v.ok_or((key, "is needed once any price is given".to_string()))?;
            micro(v).map_err(|m| (key, m))
        };
        let input = need("input", self.input)?;
        let output = need("output", self.output)?;
        let cached_input = need("cached_input", self.cached_input.or(self.input))?;
        let reasoning = need("reasoning", self.reasoning.or(self.output))?;
        let currency = self.currency.clone().unwrap_or_else(|| "USD".into());
        if currency.is_empty()
            || currency.len() > 8
            || !currency.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err((
                "currency",
                format!(
                    "{currency:?} is not a currency code (1-8 letters or digits, e.g. \"USD\")"
                ),
            ));
        }
        Ok(Some(Price {
            currency,
            input,
            cached_input,
            output,
            reasoning,
            source: source.to_string(),
            max_cost: self.budget()?,
        }))
    }
}

impl PriceFields {
    /// `max_cost` as micro-units: at most 6 decimals, 0 to a billion.
    pub fn budget(&self) -> Result<Option<u64>, (&'static str, String)> {
        let Some(v) = self.max_cost else {
            return Ok(None);
        };
        if !v.is_finite() || !(0.0..=1e9).contains(&v) {
            return Err(("max_cost", format!("{v} is not an amount (0 to 1e9)")));
        }
        micro(v.min(MAX_PRICE))
            .map(|_| ())
            .map_err(|m| ("max_cost", m))?;
        Ok(Some((v * 1e6).round() as u64))
    }
}

/// A price per million tokens as micro-units: at most 6 decimals, 0 to a million.
fn micro(v: f64) -> Result<u64, String> {
    if !v.is_finite() || !(0.0..=MAX_PRICE).contains(&v) {
        return Err(format!(
            "{v} is not a price per million tokens (0 to {MAX_PRICE})"
        ));
    }
    let m = (v * 1e6).round();
    if (m / 1e6 - v).abs() > 1e-9 {
        return Err(format!("{v} has more than 6 decimals"));
    }
    Ok(m as u64)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PriceFile {
    as_of: String,
    models: BTreeMap<String, PriceFields>,
}

impl PriceFields {
    /// The price of `model_id`: these fields when they name one, else the shipped price file's
    /// (with these fields' `max_cost`); a budget with no price at all is an error.
    pub fn price_of(&self, model_id: &str) -> Result<Option<Price>, (&'static str, String)> {
        if let Some(p) = self.resolve("config")? {
            return Ok(Some(p));
        }
        let budget = self.budget()?;
        match shipped(model_id) {
            Some(p) => Ok(Some(Price {
                max_cost: budget,
                ..p
            })),
            None if budget.is_some() => Err((
                "max_cost",
                format!("needs a price: no input/output given and {model_id:?} is not in configs/prices.toml"),
            )),
            None => Ok(None),
        }
    }
}

/// The shipped price of `model_id`, if the price file lists it.
pub fn shipped(model_id: &str) -> Option<Price> {
    // The file is part of the build; a test checks that it parses.
    let file: PriceFile = toml::from_str(SHIPPED).ok()?;
    let fields = file.models.get(model_id)?;
    let source = format!("prices.toml (as of {})", file.as_of);
    fields.resolve(&source).ok().flatten()
}

impl Price {
    /// The budget as money, if any.
    pub fn budget(&self) -> Option<Money> {
        self.max_cost
            .map(|m| Money::from_integer(u128::from(m) * 1_000_000))
    }

    /// Each token kind at the higher of the two prices (for usage that sums calls to both).
    pub fn dearer(&self, other: &Price) -> Price {
        Price {
            input: self.input.max(other.input),
            cached_input: self.cached_input.max(other.cached_input),
            output: self.output.max(other.output),
            reasoning: self.reasoning.max(other.reasoning),
            ..self.clone()
        }
    }

    /// What one reply's usage cost (all its choices).
    pub fn cost_of(&self, usage: &Usage) -> Money {
        let mut t = Tally::default();
        t.add(Some(usage), 1);
        t.cost(self)
    }

    /// What `prompt` input tokens and `completion` output tokens cost (no cache, no reasoning split).
    pub fn estimate(&self, prompt: u64, completion: u64) -> Money {
        Money::from_integer(
            u128::from(prompt) * u128::from(self.input)
                + u128::from(completion) * u128::from(self.output),
        )
    }

    /// The most a prompt token can cost: input or cached input, whichever is higher.
    fn worst_input(&self) -> u64 {
        self.input.max(self.cached_input)
    }

    /// The most a completion token can cost: output or reasoning, whichever is higher.
    fn worst_output(&self) -> u64 {
        self.output.max(self.reasoning)
    }

    /// The most `prompt` prompt tokens and `completion` completion tokens can cost: each at the
    /// highest price that can apply to it.
    pub fn worst(&self, prompt: u64, completion: u64) -> Money {
        Money::from_integer(
            u128::from(prompt) * u128::from(self.worst_input())
                + u128::from(completion) * u128::from(self.worst_output()),
        )
    }

    /// What one reply cost when its usage may be missing or unreadable: a count the server did not
    /// give is its bound (`prompt`, `completion` tokens) and a split it did not give (cached,
    /// reasoning) is priced at the higher price, so the result is never below what was billed.
    pub fn cost_at_most(&self, usage: Option<&Usage>, (prompt, completion): (u64, u64)) -> Money {
        let Some(u) = usage else {
            return self.worst(prompt, completion);
        };
        let part = |count: Option<u64>, bound: u64, split: Option<u64>, low: u64, high: u64| {
            let Some(n) = count else {
                return u128::from(bound) * u128::from(low.max(high));
            };
            match split {
                Some(s) => {
                    let s = s.min(n);
                    u128::from(n - s) * u128::from(low) + u128::from(s) * u128::from(high)
                }
                None => u128::from(n) * u128::from(low.max(high)),
            }
        };
        let input = part(
            u.prompt_tokens,
            prompt,
            u.cached_tokens(),
            self.input,
            self.cached_input,
        );
        let output = part(
            u.completion_tokens,
            completion,
            u.reasoning_tokens(),
            self.output,
            self.reasoning,
        );
        Money::from_integer(input + output)
    }
}

/// A budget shared by concurrent requesters: spent plus reserved never passes the limit, and
/// once one reservation is refused every later one is too (no model sends after the cap is hit).
#[derive(Debug)]
pub struct Ledger {
    limit: Money,
    used: std::sync::Mutex<Money>,
    closed: std::sync::atomic::AtomicBool,
}

impl Ledger {
    /// A ledger with `spent` already counted (what the checkpoints cost, on resume).
    pub fn new(limit: Money, spent: Money) -> Self {
        Ledger {
            limit,
            used: std::sync::Mutex::new(spent),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn used_guard(&self) -> std::sync::MutexGuard<'_, Money> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves `worst`; false (nothing reserved, the ledger closed) when it could pass the limit.
    pub fn reserve(&self, worst: Money) -> bool {
        use std::sync::atomic::Ordering;
        let mut used = self.used_guard();
        if self.closed.load(Ordering::SeqCst) || *used + worst > self.limit {
            self.closed.store(true, Ordering::SeqCst);
            return false;
        }
        *used += worst;
        true
    }

    /// Returns a reservation that was not used.
    pub fn release(&self, worst: Money) {
        self.settle(worst, Money::from_integer(0));
    }

    /// Replaces a reservation with what the request actually cost.
    pub fn settle(&self, worst: Money, actual: Money) {
        let mut used = self.used_guard();
        *used = *used - worst + actual;
    }

    pub fn limit(&self) -> Money {
        self.limit
    }

    /// Spent plus reserved.
    pub fn used(&self) -> Money {
        *self.used_guard()
    }
}

/// What one payer's requests draw on: its price, its own `max_cost` ledger (named by the key
/// that sets it) and the run's `[evaluation] max_cost` ledger, shared with every other payer.
/// Each request reserves its worst case on both before it is sent and settles with what it
/// cost: the one mechanism sampling, searches, the judge and the verifier share.
#[derive(Debug, Clone)]
pub struct Budget {
    pub price: Price,
    own: Option<(String, Arc<Ledger>)>,
    run: Option<Arc<Ledger>>,
}

/// The key that names `[evaluation] max_cost` in stop messages.
pub const RUN_BUDGET_KEY: &str = "[evaluation] max_cost";

impl Budget {
    /// `own` is the payer's ledger with the key that sets its limit (`max_cost`,
    /// `judge.pricing.max_cost`); `run` the run's.
    pub fn new(price: Price, own: Option<(String, Arc<Ledger>)>, run: Option<Arc<Ledger>>) -> Self {
        Budget { price, own, run }
    }

    /// Whether any limit applies.
    pub fn capped(&self) -> bool {
        self.own.is_some() || self.run.is_some()
    }

    /// Reserves `worst` on both ledgers; on refusal, the key of the limit hit and its ledger.
    pub fn reserve(&self, worst: Money) -> Result<(), (&str, &Ledger)> {
        if let Some((key, m)) = &self.own {
            if !m.reserve(worst) {
                return Err((key.as_str(), m));
            }
        }
        if let Some(r) = &self.run {
            if !r.reserve(worst) {
                if let Some((_, m)) = &self.own {
                    m.release(worst);
                }
                return Err((RUN_BUDGET_KEY, r));
            }
        }
        Ok(())
    }

    /// Replaces a reservation with what the request actually cost.
    pub fn settle(&self, worst: Money, actual: Money) {
        let own = self.own.as_ref().map(|(_, l)| &**l);
        for l in own.into_iter().chain(self.run.as_deref()) {
            l.settle(worst, actual);
        }
    }

    /// The message a refused reservation stops with: the limit, what is spent, and what the
    /// `left` `what` (units, samples) still to do could cost at `per_unit` each.
    pub fn stop_message(
        &self,
        (key, l): (&str, &Ledger),
        (left, what): (u64, &str),
        per_unit: Money,
    ) -> String {
        let cur = &self.price.currency;
        let more = per_unit * Money::from_integer(u128::from(left));
        format!(
            "budget reached: {key} {} (spent {}); the {left} {what} left could cost up to {} more; raise {key} and resume",
            show(to_f64(&l.limit()), cur),
            show(to_f64(&l.used()), cur),
            show(to_f64(&more), cur)
        )
    }
}

/// What the requests behind one stored judge verdict or verifier score used, so a resumed run's
/// ledger and the reports price them again: the replies' usage summed, the most tokens they could
/// hold, and the attempts that failed after the server may have billed them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Spend {
    /// Replies received.
    pub calls: u32,
    /// Their usage summed; a count (or split) some reply did not give is absent, so it is priced
    /// at its bound (or the higher price), never below what was billed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The replies' prompt and completion token bounds, summed.
    pub bound: [u64; 2],
    /// Attempts that failed after the server may have billed them (a timeout, a cut stream).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub billable_failures: u32,
    /// Their prompt and completion token bounds, summed: each is priced at its worst case.
    #[serde(default, skip_serializing_if = "is_zeros")]
    pub failed_bound: [u64; 2],
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn is_zeros(b: &[u64; 2]) -> bool {
    *b == [0, 0]
}

impl Spend {
    /// Adds a reply with its `usage` (None: the server gave none) and token bounds.
    pub fn add_reply(&mut self, usage: Option<&Usage>, (prompt, completion): (u64, u64)) {
        let u = usage.cloned().unwrap_or_default();
        self.usage = Some(match &self.usage {
            Some(sum) if self.calls > 0 => add_usage(sum, &u),
            _ => u,
        });
        self.calls += 1;
        self.bound[0] += prompt;
        self.bound[1] += completion;
    }

    /// Adds an attempt that failed after the server may have billed it.
    pub fn add_failure(&mut self, (prompt, completion): (u64, u64)) {
        self.billable_failures += 1;
        self.failed_bound[0] += prompt;
        self.failed_bound[1] += completion;
    }

    /// The most these requests can have cost at `price`.
    pub fn at_most(&self, price: &Price) -> Money {
        let replies = match self.calls {
            0 => Money::from_integer(0),
            _ => price.cost_at_most(self.usage.as_ref(), (self.bound[0], self.bound[1])),
        };
        replies + price.worst(self.failed_bound[0], self.failed_bound[1])
    }
}

/// Two replies' usage summed: a count or split is kept only when both gave it.
fn add_usage(a: &Usage, b: &Usage) -> Usage {
    use crate::client::TokenDetails;
    let sum = |x: Option<u64>, y: Option<u64>| x?.checked_add(y?);
    let details = |cached: Option<u64>, reasoning: Option<u64>| {
        (cached.is_some() || reasoning.is_some()).then_some(TokenDetails {
            cached_tokens: cached,
            reasoning_tokens: reasoning,
        })
    };
    Usage {
        prompt_tokens: sum(a.prompt_tokens, b.prompt_tokens),
        completion_tokens: sum(a.completion_tokens, b.completion_tokens),
        prompt_tokens_details: details(sum(a.cached_tokens(), b.cached_tokens()), None),
        completion_tokens_details: details(None, sum(a.reasoning_tokens(), b.reasoning_tokens())),
    }
}

/// Token counts summed over samples, each sample holding its share of its request's usage.
#[derive(Debug, Clone, PartialEq)]
pub struct Tally {
    pub input: Ratio<u128>,
    pub cached_input: Ratio<u128>,
    pub output: Ratio<u128>,
    pub reasoning: Ratio<u128>,
    /// Samples whose request reported both prompt and completion tokens.
    pub with_usage: u64,
    /// Samples with no usage or only part of it: their cost is missing or too low.
    pub without_usage: u64,
    /// Failed attempts the server may have billed (each record its share of its request's):
    /// no usage came back for them, so their cost is not in the total.
    pub billable_failures: Ratio<u128>,
}

impl Default for Tally {
    fn default() -> Self {
        let zero = Ratio::from_integer(0);
        Tally {
            input: zero,
            cached_input: zero,
            output: zero,
            reasoning: zero,
            with_usage: 0,
            without_usage: 0,
            billable_failures: zero,
        }
    }
}

impl Tally {
    /// Adds one record's share of the failed attempts its request made that may have been billed.
    pub fn add_billable_failures(&mut self, failures: u32, choices_in_request: u32) {
        let share = u128::from(choices_in_request.max(1));
        self.billable_failures += Ratio::new(u128::from(failures), share);
    }

    /// Adds one sample: `1/choices_in_request` of its request's usage (usage covers every choice).
    pub fn add(&mut self, usage: Option<&Usage>, choices_in_request: u32) {
        let Some(u) = usage else {
            self.without_usage += 1;
            return;
        };
        if u.prompt_tokens.is_some() && u.completion_tokens.is_some() {
            self.with_usage += 1;
        } else {
            self.without_usage += 1;
        }
        let prompt = u.prompt_tokens.unwrap_or(0);
        let cached = u.cached_tokens().unwrap_or(0).min(prompt);
        let completion = u.completion_tokens.unwrap_or(0);
        let reasoning = u.reasoning_tokens().unwrap_or(0).min(completion);
        let share = |n: u64| Ratio::new(u128::from(n), u128::from(choices_in_request.max(1)));
        self.input += share(prompt - cached);
        self.cached_input += share(cached);
        self.output += share(completion - reasoning);
        self.reasoning += share(reasoning);
    }

    /// Adds one judged or verified sample's requests (failed ones that kept a line too).
    pub fn add_spend(&mut self, s: &Spend) {
        if s.calls > 0 {
            self.add(s.usage.as_ref(), 1);
        }
        self.add_billable_failures(s.billable_failures, 1);
    }

    pub fn cost(&self, p: &Price) -> Money {
        let at = |n: &Ratio<u128>, price: u64| n * Ratio::from_integer(u128::from(price));
        at(&self.input, p.input)
            + at(&self.cached_input, p.cached_input)
            + at(&self.output, p.output)
            + at(&self.reasoning, p.reasoning)
    }
}

/// An amount in currency units, for reports and machine formats.
pub fn to_f64(m: &Money) -> f64 {
    (*m.numer() as f64 / *m.denom() as f64) / 1e12
}

/// An amount for people: 6 decimals and the currency.
pub fn show(amount: f64, currency: &str) -> String {
    format!("{amount:.6} {currency}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::TokenDetails;

    fn price(input: f64, cached: Option<f64>, output: f64, reasoning: Option<f64>) -> Price {
        PriceFields {
            currency: None,
            input: Some(input),
            cached_input: cached,
            output: Some(output),
            reasoning,
            max_cost: None,
        }
        .resolve("config")
        .unwrap()
        .unwrap()
    }

    #[test]
    fn shares_and_details_are_priced_exactly() {
        let p = price(2.5, Some(1.25), 10.0, Some(20.0));
        let u = Usage {
            prompt_tokens: Some(1000),
            completion_tokens: Some(300),
            prompt_tokens_details: Some(TokenDetails {
                cached_tokens: Some(400),
                reasoning_tokens: None,
            }),
            completion_tokens_details: Some(TokenDetails {
                cached_tokens: None,
                reasoning_tokens: Some(100),
            }),
        };
        let mut t = Tally::default();
        // Three choices of one request: together they cost the request once.
        for _ in 0..3 {
            t.add(Some(&u), 3);
        }
        // 600×2.5 + 400×1.25 + 200×10 + 100×20 per million = 0.006 USD.
        assert_eq!(t.cost(&p), Money::from_integer(6_000_000_000));
        assert_eq!(to_f64(&t.cost(&p)), 0.006);
        let mut one = Tally::default();
        one.add(Some(&u), 3);
        assert_eq!(one.cost(&p), Money::new(6_000_000_000, 3));
        one.add(None, 1);
        assert_eq!((one.with_usage, one.without_usage), (1, 1));
    }

    #[test]
    fn prices_validate_and_default() {
        let p = price(0.15, None, 0.6, None);
        assert_eq!(
            (p.cached_input, p.reasoning, p.currency.as_str()),
            (150_000, 600_000, "USD")
        );
        let only_input = PriceFields {
            input: Some(1.0),
            ..PriceFields::default()
        };
        assert_eq!(only_input.resolve("c").unwrap_err().0, "output");
        let neg = PriceFields {
            input: Some(-1.0),
            output: Some(1.0),
            ..PriceFields::default()
        };
        assert_eq!(neg.resolve("c").unwrap_err().0, "input");
        let fine = PriceFields {
            input: Some(0.0000001),
            output: Some(1.0),
            ..PriceFields::default()
        };
        assert!(fine.resolve("c").unwrap_err().1.contains("6 decimals"));
        assert_eq!(PriceFields::default().resolve("c"), Ok(None));
        let budget = |v: f64| {
            PriceFields {
                max_cost: Some(v),
                ..PriceFields::default()
            }
            .budget()
        };
        assert_eq!(budget(2.5), Ok(Some(2_500_000)));
        assert_eq!(budget(-1.0).unwrap_err().0, "max_cost");
        let over = PriceFields {
            output: Some(3.0),
            ..PriceFields::default()
        }
        .over(&PriceFields {
            input: Some(1.0),
            output: Some(2.0),
            ..PriceFields::default()
        });
        assert_eq!((over.input, over.output), (Some(1.0), Some(3.0)));
    }

    #[test]
    fn a_ledger_never_passes_its_limit_and_stays_closed() {
        let l = Ledger::new(Money::from_integer(10), Money::from_integer(3));
        assert!(l.reserve(Money::from_integer(5)));
        assert!(!l.reserve(Money::from_integer(3)));
        l.settle(Money::from_integer(5), Money::from_integer(1));
        assert_eq!(l.used(), Money::from_integer(4));
        // Closed: even a reservation that would now fit is refused.
        assert!(!l.reserve(Money::from_integer(1)));
    }

    #[test]
    fn what_cannot_be_read_is_priced_at_its_worst_case() {
        // Reasoning dearer than output, cached input dearer than input: the bound takes the higher.
        let p = price(1.0, Some(3.0), 2.0, Some(64.0));
        let bound = (100, 1000);
        let worst = Money::from_integer((100 * 3 + 1000 * 64) * 1_000_000);
        assert_eq!(p.worst(100, 1000), worst);
        assert_eq!(p.cost_at_most(None, bound), worst);
        for odd in [
            r#"{}"#,
            r#"{"prompt_tokens":null,"completion_tokens":null}"#,
            r#"{"prompt_tokens":"n/a","completion_tokens":"n/a"}"#,
            r#"{"prompt_tokens":-5,"completion_tokens":-1}"#,
        ] {
            let u: Usage = serde_json::from_str(odd).unwrap();
            assert_eq!(p.cost_at_most(Some(&u), bound), worst, "{odd}");
        }
        // Counts given, splits not: every token at the higher of its two prices.
        let u: Usage =
            serde_json::from_str(r#"{"prompt_tokens":10,"completion_tokens":20}"#).unwrap();
        assert_eq!(
            p.cost_at_most(Some(&u), bound),
            Money::from_integer((10 * 3 + 20 * 64) * 1_000_000)
        );
        // Splits given: each part at its own price.
        let u: Usage = serde_json::from_str(
            r#"{"prompt_tokens":10,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":5}}"#,
        )
        .unwrap();
        assert_eq!(
            p.cost_at_most(Some(&u), bound),
            Money::from_integer((6 + 4 * 3 + 15 * 2 + 5 * 64) * 1_000_000)
        );
    }

    #[test]
    fn a_spend_sums_its_replies_and_prices_what_it_cannot_read_at_its_bound() {
        let p = price(1.0, None, 2.0, None);
        let u = |t: &str| serde_json::from_str::<Usage>(t).unwrap();
        let mut s = Spend::default();
        s.add_reply(
            Some(&u(r#"{"prompt_tokens":10,"completion_tokens":2}"#)),
            (100, 16),
        );
        s.add_reply(
            Some(&u(r#"{"prompt_tokens":20,"completion_tokens":3}"#)),
            (200, 16),
        );
        assert_eq!(s.at_most(&p), Money::from_integer((30 + 5 * 2) * 1_000_000));
        // One reply without a completion count: the pass's completions at their bound.
        s.add_reply(Some(&u(r#"{"prompt_tokens":5}"#)), (50, 16));
        assert_eq!(
            s.at_most(&p),
            Money::from_integer((35 + 48 * 2) * 1_000_000)
        );
        // One without usage at all: every count at its bound.
        s.add_reply(None, (10, 16));
        assert_eq!(s.at_most(&p), p.worst(360, 64));
        // A failure the server may have billed: its worst case on top.
        s.add_failure((40, 16));
        assert_eq!(s.at_most(&p), p.worst(360, 64) + p.worst(40, 16));
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Spend>(&text).unwrap(), s, "{text}");
        // Nothing received: only the failures count.
        let mut failed = Spend::default();
        failed.add_failure((40, 16));
        assert_eq!(failed.at_most(&p), p.worst(40, 16));
    }

    #[test]
    fn the_shipped_file_parses_and_is_dated() {
        let file: PriceFile = toml::from_str(SHIPPED).unwrap();
        assert!(file.models.len() >= 5);
        for (id, f) in &file.models {
            assert!(f.resolve("x").unwrap().is_some(), "{id}");
        }
        let p = shipped("gpt-4o-mini").unwrap();
        assert_eq!((p.input, p.output), (150_000, 600_000));
        assert!(p.source.contains(&file.as_of));
        assert!(shipped("no-such-model").is_none());
    }
}
