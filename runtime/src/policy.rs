//! Per-node policies: retry, timeout, deferral and caching.

use crate::error::NodeError;
use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Retries a failing node with exponential backoff.
///
/// ```
/// use graphwright::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = RetryPolicy::new(3).initial_backoff(Duration::from_millis(10)).factor(2.0);
/// assert_eq!(policy.backoff(1), Duration::from_millis(10));
/// assert_eq!(policy.backoff(2), Duration::from_millis(20));
/// ```
#[derive(Clone)]
pub struct RetryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) initial_backoff: Duration,
    pub(crate) factor: f64,
    pub(crate) max_backoff: Duration,
    pub(crate) retry_on: fn(&NodeError) -> bool,
}

impl RetryPolicy {
    /// Up to `max_attempts` attempts in all (at least 1), starting 100 ms apart and doubling up
    /// to 30 s, retrying every error.
    #[must_use]
    pub fn new(max_attempts: u32) -> Self {
        Self {
            max_attempts: max_attempts.max(1),
            initial_backoff: Duration::from_millis(100),
            factor: 2.0,
            max_backoff: Duration::from_secs(30),
            retry_on: |_| true,
        }
    }

    /// The wait before the second attempt.
    #[must_use]
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// How much each wait grows over the one before.
    #[must_use]
    pub fn factor(mut self, factor: f64) -> Self {
        self.factor = factor.max(1.0);
        self
    }

    /// The longest wait.
    #[must_use]
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// Which errors are worth another attempt; the others fail the node at once.
    #[must_use]
    pub fn retry_on(mut self, predicate: fn(&NodeError) -> bool) -> Self {
        self.retry_on = predicate;
        self
    }

    /// The wait after failed attempt `attempt` (1-based).
    #[must_use]
    pub fn backoff(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let wait = self.initial_backoff.as_secs_f64() * self.factor.powi(exponent);
        Duration::from_secs_f64(wait.min(self.max_backoff.as_secs_f64()))
    }
}

impl fmt::Debug for RetryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("initial_backoff", &self.initial_backoff)
            .field("factor", &self.factor)
            .field("max_backoff", &self.max_backoff)
            .finish_non_exhaustive()
    }
}

/// Policies of one node.
#[derive(Clone, Debug, Default)]
pub struct NodePolicy {
    /// Tried in order: the first whose `retry_on` accepts an error decides whether (and after
    /// how long) the node is tried again. Attempts are counted across all of them.
    pub(crate) retry: Vec<RetryPolicy>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) defer: bool,
    pub(crate) cache: Option<CachePolicy>,
}

impl NodePolicy {
    /// No retry, no timeout, not deferred.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Retry failures under `policy`. Several policies may be given, one call each: for each
    /// failure the first whose [`RetryPolicy::retry_on`] accepts the error applies (its attempt
    /// limit and backoff), as LangGraph's list of retry policies; attempts are counted across
    /// all of them. An error no policy accepts fails the node at once.
    ///
    /// ```
    /// use graphwright::{NodeError, NodePolicy, RetryPolicy};
    ///
    /// let policy = NodePolicy::new()
    ///     .retry(RetryPolicy::new(5).retry_on(|e| e.to_string().contains("rate limit")))
    ///     .retry(RetryPolicy::new(2));
    /// # let _ = policy;
    /// ```
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry.push(policy);
        self
    }

    /// The retry policy that applies to `error` after `attempt` failed attempts, if the node is
    /// to be tried again.
    pub(crate) fn retry_after(&self, error: &NodeError, attempt: u32) -> Option<&RetryPolicy> {
        retry_after(&self.retry, error, attempt)
    }

    /// Fail an attempt that runs longer than `limit`. Only async nodes can be stopped mid-way,
    /// so the builder rejects a timeout on a sync node.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Run the node only when no other task is pending (a join for branches of unequal length).
    #[must_use]
    pub fn defer(mut self) -> Self {
        self.defer = true;
        self
    }

    /// Cache the node's outputs under `policy`, in the cache the graph is given on its builder
    /// (`.cache(..)`): a task whose input has an entry returns the stored output without
    /// running the node.
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }
}

/// Of `policies` (a node's, or a task's), the one that applies to `error` after `attempt`
/// failed attempts, if another attempt is due: the first whose `retry_on` accepts the error.
pub(crate) fn retry_after<'p>(policies: &'p [RetryPolicy], error: &NodeError, attempt: u32) -> Option<&'p RetryPolicy> {
    policies.iter().find(|p| (p.retry_on)(error)).filter(|p| attempt < p.max_attempts)
}

/// How a node's outputs are cached: for how long, and under which key.
///
/// A task of a cached node looks its input up in the graph's [`Cache`](crate::Cache) before it
/// runs. On a hit the stored output (its update, routes and Sends) is used as if the node had
/// returned it, without running the node: nothing the node would have done on the way (store
/// writes, custom stream values, interrupts) happens again, and the `updates` stream marks the
/// task's update as cached. On a miss the node runs, and an output it returns is stored;
/// failures and interrupts are not.
///
/// The key is drawn from the task's input (the state, or the payload a `Send` gave it): by
/// default a SHA-256 digest of its stored form, so equal inputs share an entry. Give a key
/// function when only part of the input decides the output, or when the input holds values
/// whose stored form is not stable (a `HashMap` serializes its entries in any order).
///
/// ```
/// use graphwright::CachePolicy;
/// use std::time::Duration;
///
/// #[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
/// struct Query {
///     text: String,
///     attempts: u32,
/// }
///
/// // Entries live an hour, keyed by the query's text alone.
/// let policy = CachePolicy::new().ttl(Duration::from_secs(3600)).key(|q: &Query| q.text.to_lowercase());
/// # let _ = policy;
/// ```
#[derive(Clone, Default)]
pub struct CachePolicy {
    pub(crate) ttl: Option<Duration>,
    pub(crate) key: Option<CacheKey>,
    /// Entries are shared by runs of different users (see [`CachePolicy::across_users`]).
    pub(crate) across_users: bool,
}

/// A key function of a [`CachePolicy`], with the input type it reads.
#[derive(Clone)]
pub(crate) struct CacheKey {
    pub(crate) input: TypeId,
    pub(crate) input_name: &'static str,
    pub(crate) key: Arc<KeyFn>,
}

/// A key function over a type-erased input: `None` when the input is not of its type.
pub(crate) type KeyFn = dyn Fn(&dyn Any) -> Option<String> + Send + Sync;

impl CachePolicy {
    /// Entries that never expire, keyed by the whole input.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Share entries between the runs of different users. By default a run started for a user
    /// ([`RunConfig::user`](crate::RunConfig::user): every run the server starts for an
    /// authenticated caller) is served only entries stored by runs of the same user, since a
    /// node's output may depend on who asked (its store, its context, [`Runtime::user`](crate::Runtime::user)).
    /// Call this for a node whose output depends on its input alone, so that every user's run
    /// profits from one entry.
    #[must_use]
    pub fn across_users(mut self) -> Self {
        self.across_users = true;
        self
    }

    /// Serve an entry for `ttl` after it was stored, never later.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Key entries by `key` of the task's input: `I` is the node's input type (the graph's
    /// state, or the payload type of a node started by `Send`). A key of another type than the
    /// node's input is refused when the graph is built.
    #[must_use]
    pub fn key<I: Any>(mut self, key: impl Fn(&I) -> String + Send + Sync + 'static) -> Self {
        self.key = Some(CacheKey {
            input: TypeId::of::<I>(),
            input_name: std::any::type_name::<I>(),
            key: Arc::new(move |input| input.downcast_ref::<I>().map(&key)),
        });
        self
    }
}

impl fmt::Debug for CachePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CachePolicy")
            .field("ttl", &self.ttl)
            .field("key", &self.key.as_ref().map(|k| k.input_name))
            .field("across_users", &self.across_users)
            .finish()
    }
}
