//! Per-tool policies: timeout, retry, result check, redaction.

use super::output::ToolOutput;
use crate::policy::RetryPolicy;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// A redaction hook: takes a text, returns it with secrets masked.
pub type Redactor = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A result check: `Err(reason)` rejects the result, and the model is told the reason.
type ResultCheck = Arc<dyn Fn(&ToolOutput) -> Result<(), String> + Send + Sync>;

/// How a [`ToolNode`](super::ToolNode) runs one tool. Set it per tool with
/// [`ToolNode::policy`](super::ToolNode::policy), or for every tool with
/// [`ToolNode::default_policy`](super::ToolNode::default_policy); a per-tool policy falls back
/// to the default for whatever it leaves unset.
///
/// ```
/// use graphwright::tool::ToolPolicy;
/// use graphwright::RetryPolicy;
/// use std::time::Duration;
///
/// let policy = ToolPolicy::new()
///     .timeout(Duration::from_secs(10))
///     .retry(RetryPolicy::new(3).initial_backoff(Duration::from_millis(200)))
///     .redact(|text| text.replace("sk-live-123", "[redacted]"))
///     .check_result(|out| if out.clone().into_content().is_empty() { Err("empty".into()) } else { Ok(()) });
/// # let _ = policy;
/// ```
#[derive(Clone, Default)]
pub struct ToolPolicy {
    pub(crate) timeout: Option<Duration>,
    pub(crate) retry: Option<RetryPolicy>,
    pub(crate) redact: Option<Redactor>,
    pub(crate) check: Option<ResultCheck>,
}

impl ToolPolicy {
    /// No timeout, no retry, no check, no redaction.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops an attempt that runs longer than `limit`; the model gets a timeout message.
    /// Only `.await` points can be interrupted: a sync tool that blocks is not stopped. Needs a
    /// tokio runtime with its timer enabled.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Runs the tool again when it fails or times out, under `policy`'s attempts and backoff.
    /// Calls rejected before running (bad arguments, unknown tool) and panics are never
    /// retried. The policy's `retry_on` predicate sees the [`ToolError`](super::ToolError)
    /// inside a `NodeError`; get it back with [`ToolError::of`](super::ToolError::of).
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// Masks secrets: every text of the call (arguments in events, progress, the result or
    /// error) goes through `redact` before it reaches the event sink or the returned message,
    /// so it reaches neither the stream nor the state.
    #[must_use]
    pub fn redact(mut self, redact: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.redact = Some(Arc::new(redact));
        self
    }

    /// Checks each successful result; a rejected result becomes an error message to the model.
    #[must_use]
    pub fn check_result(mut self, check: impl Fn(&ToolOutput) -> Result<(), String> + Send + Sync + 'static) -> Self {
        self.check = Some(Arc::new(check));
        self
    }

    /// This policy, with `fallback`'s settings wherever this one has none.
    pub(crate) fn or(&self, fallback: &ToolPolicy) -> ToolPolicy {
        ToolPolicy {
            timeout: self.timeout.or(fallback.timeout),
            retry: self.retry.clone().or_else(|| fallback.retry.clone()),
            redact: self.redact.clone().or_else(|| fallback.redact.clone()),
            check: self.check.clone().or_else(|| fallback.check.clone()),
        }
    }
}

impl fmt::Debug for ToolPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolPolicy")
            .field("timeout", &self.timeout)
            .field("retry", &self.retry)
            .field("redact", &self.redact.is_some())
            .field("check", &self.check.is_some())
            .finish()
    }
}

/// The policies of a set of tools: a default, and each tool's own over it.
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolPolicies {
    pub(crate) default: ToolPolicy,
    pub(crate) by_tool: HashMap<String, ToolPolicy>,
}

impl ToolPolicies {
    /// The effective policy of the tool `name`.
    pub(crate) fn of(&self, name: &str) -> ToolPolicy {
        match self.by_tool.get(name) {
            Some(policy) => policy.or(&self.default),
            None => self.default.clone(),
        }
    }
}
