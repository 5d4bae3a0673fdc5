//! Tokens spent, what they cost, and how much a run may spend.

use serde::{Deserialize, Serialize};
use std::ops::{Add, AddAssign};

/// Tokens one call (or a whole run) used, and their cost when prices are configured.
///
/// ```
/// use graphwright::model::{Price, Usage};
///
/// let call = Usage::tokens(1_000, 200).with_cached(400);
/// let priced = call.priced(&Price { input: 2.0, cached_input: 0.5, output: 8.0 });
/// // 600 fresh input tokens at 2.0, 400 cached at 0.5, 200 output at 8.0, per million.
/// assert!((priced.cost - 0.0030).abs() < 1e-12);
/// let run = priced + priced;
/// assert_eq!(run.total_tokens(), 2_400);
/// assert_eq!(run.calls, 2);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, cached ones included.
    pub input_tokens: u64,
    /// Reply tokens.
    pub output_tokens: u64,
    /// Prompt tokens the provider served from its cache (a part of `input_tokens`).
    pub cached_tokens: u64,
    /// The cost of the tokens at the configured [`Price`]; 0 when no price is set.
    pub cost: f64,
    /// How many model calls this covers.
    pub calls: u64,
}

impl Usage {
    /// One call's usage.
    #[must_use]
    pub fn tokens(input_tokens: u64, output_tokens: u64) -> Self {
        Self { input_tokens, output_tokens, cached_tokens: 0, cost: 0.0, calls: 1 }
    }

    /// The same usage with `cached` of its input tokens served from the provider's cache.
    #[must_use]
    pub fn with_cached(mut self, cached: u64) -> Self {
        self.cached_tokens = cached.min(self.input_tokens);
        self
    }

    /// Input and output tokens together.
    #[must_use]
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The same usage with its cost at `price`.
    #[must_use]
    pub fn priced(mut self, price: &Price) -> Self {
        let fresh = self.input_tokens.saturating_sub(self.cached_tokens);
        #[allow(clippy::cast_precision_loss)] // token counts stay far below 2^52
        let cost = (fresh as f64 * price.input
            + self.cached_tokens as f64 * price.cached_input
            + self.output_tokens as f64 * price.output)
            / 1_000_000.0;
        self.cost = cost;
        self
    }
}

impl Add for Usage {
    type Output = Usage;

    fn add(mut self, rhs: Usage) -> Usage {
        self += rhs;
        self
    }
}

impl AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.cached_tokens += rhs.cached_tokens;
        self.cost += rhs.cost;
        self.calls += rhs.calls;
    }
}

/// What a model's tokens cost, per million tokens, in a currency of your choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Per million prompt tokens not served from the cache.
    pub input: f64,
    /// Per million prompt tokens served from the provider's cache.
    pub cached_input: f64,
    /// Per million reply tokens.
    pub output: f64,
}

/// How much one run may spend on model calls ([`RunConfig::budget`](crate::RunConfig::budget)).
///
/// Each limit left `None` is not checked. A call that starts when a limit is already reached,
/// or whose reply takes the run past one, fails its step with
/// [`GraphError::BudgetExceeded`](crate::GraphError::BudgetExceeded); the reply of a call that
/// passed the limit is not used.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Budget {
    /// Input and output tokens over the run.
    pub max_tokens: Option<u64>,
    /// Cost over the run, at the clients' configured [`Price`]s.
    pub max_cost: Option<f64>,
    /// Model calls over the run (retries of one call count once).
    pub max_calls: Option<u64>,
}

impl Budget {
    /// A budget of `max_tokens` tokens.
    #[must_use]
    pub fn tokens(max_tokens: u64) -> Self {
        Self { max_tokens: Some(max_tokens), ..Self::default() }
    }

    /// A budget of `max_cost`, in the currency of the configured prices.
    #[must_use]
    pub fn cost(max_cost: f64) -> Self {
        Self { max_cost: Some(max_cost), ..Self::default() }
    }

    /// A budget of `max_calls` model calls.
    #[must_use]
    pub fn calls(max_calls: u64) -> Self {
        Self { max_calls: Some(max_calls), ..Self::default() }
    }

    /// The first limit `spent` has passed (strictly over), if any.
    pub(crate) fn passed(&self, spent: &Usage) -> Option<super::BudgetLimit> {
        self.first(spent, |spent, limit| spent > limit, spent.calls)
    }

    /// The first limit `spent` has already reached, so that no further call may start (the
    /// refused call is counted in what a calls limit reports).
    pub(crate) fn reached(&self, spent: &Usage) -> Option<super::BudgetLimit> {
        self.first(spent, |spent, limit| spent >= limit, spent.calls + 1)
    }

    /// The first limit over which `spent` is, by `over`; `calls` is what a calls limit reports.
    fn first(&self, spent: &Usage, over: fn(f64, f64) -> bool, calls: u64) -> Option<super::BudgetLimit> {
        use super::BudgetLimit;
        #[allow(clippy::cast_precision_loss)] // token and call counts stay far below 2^52
        let count = |n: u64| n as f64;
        if let Some(limit) = self.max_tokens
            && over(count(spent.total_tokens()), count(limit))
        {
            return Some(BudgetLimit::Tokens { spent: spent.total_tokens(), limit });
        }
        if let Some(limit) = self.max_cost
            && over(spent.cost, limit)
        {
            return Some(BudgetLimit::Cost { spent: spent.cost, limit });
        }
        match self.max_calls {
            Some(limit) if over(count(spent.calls), count(limit)) => Some(BudgetLimit::Calls { spent: calls, limit }),
            _ => None,
        }
    }
}
