//! What can go wrong when calling a model, classified so callers can act on it.

use std::fmt;
use std::time::Duration;

/// A failed model call. Each variant is a kind of failure a caller can act on (wait and retry,
/// fix the key, shorten the prompt); the provider's own words are kept in `message`.
///
/// The retry loop of every client retries [`is_retryable`](ModelError::is_retryable) errors
/// before giving up; what reaches the caller has already been retried.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// The provider limits requests or tokens per minute and this call passed the limit.
    #[error("{provider} rate-limited the call{}: {message}", wait_note(*retry_after))]
    RateLimited {
        /// The provider (`openai`, `anthropic`, ...).
        provider: String,
        /// How long the provider asked to wait (`retry-after-ms` or `retry-after`), if it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The account has no credit or hit a spend limit; waiting does not help.
    #[error("{provider} refused the call because the account's quota or spend limit is used up: {message}")]
    QuotaExhausted {
        /// The provider.
        provider: String,
        /// The provider's message.
        message: String,
    },
    /// The provider is over capacity (Anthropic's 529, a 503 that says so).
    #[error("{provider} is overloaded{}: {message}", wait_note(*retry_after))]
    Overloaded {
        /// The provider.
        provider: String,
        /// How long the provider asked to wait, if it said.
        retry_after: Option<Duration>,
        /// The provider's message.
        message: String,
    },
    /// The call took longer than the client's timeout (or the server said it timed out).
    #[error("the call to {provider} timed out: {message}")]
    Timeout {
        /// The provider.
        provider: String,
        /// What timed out.
        message: String,
    },
    /// The prompt (with the reply's room) is longer than the model's context window.
    #[error(
        "the prompt does not fit {provider}'s context window: {message}; trim the history or pick a model with a longer context"
    )]
    ContextLength {
        /// The provider.
        provider: String,
        /// The provider's message.
        message: String,
    },
    /// The key is missing, wrong or not allowed to use this model.
    #[error("{provider} rejected the credentials (HTTP {status}): {message}; check the API key")]
    Auth {
        /// The provider.
        provider: String,
        /// 401 or 403.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request itself (a 4xx other than the above).
    #[error("{provider} rejected the request (HTTP {status}): {message}")]
    BadRequest {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (a 5xx other than overload).
    #[error("{provider} failed with HTTP {status}: {message}")]
    Server {
        /// The provider.
        provider: String,
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The connection failed or the reply could not be read.
    #[error("could not reach {provider}: {message}")]
    Connect {
        /// The provider.
        provider: String,
        /// What failed.
        message: String,
    },
    /// A streamed reply broke off or carried an error. `after_content` says whether some of the
    /// reply had already been delivered (then the call is not sent again: it would bill twice
    /// and show the reader the same text twice).
    #[error("the reply stream from {provider} broke{}: {message}", if *after_content { " after part of the reply had arrived" } else { "" })]
    Stream {
        /// The provider.
        provider: String,
        /// Whether part of the reply had been delivered.
        after_content: bool,
        /// What went wrong.
        message: String,
    },
    /// The reply arrived but is not what was asked for: a response whose shape is not the
    /// provider's, or structured output that does not parse into the requested type.
    #[error("the model's reply is not usable: {reason} (reply: {})", excerpt(raw))]
    InvalidOutput {
        /// The reply as received (the text, or the response body).
        raw: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The run's budget is spent (see [`Budget`](super::Budget)).
    #[error("{0}")]
    BudgetExceeded(BudgetLimit),
    /// The run's deadline passes before the call (or its next retry) could finish.
    #[error("the run's deadline leaves no time for the call to {provider}{}", last.as_ref().map(|e| format!(" (last attempt: {e})")).unwrap_or_default())]
    DeadlineExceeded {
        /// The provider.
        provider: String,
        /// The error of the last attempt, if one was made.
        last: Option<Box<ModelError>>,
    },
    /// The client is not configured to make the call (no API key, an unknown provider).
    #[error("the model client is not configured: {0}")]
    Config(String),
}

impl ModelError {
    /// The kind of failure as a short, stable word (`rate_limited`, `timeout`, `server`, ...):
    /// what a span's `error.type` and a metric's label carry.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate_limited",
            Self::QuotaExhausted { .. } => "quota_exhausted",
            Self::Overloaded { .. } => "overloaded",
            Self::Timeout { .. } => "timeout",
            Self::ContextLength { .. } => "context_length",
            Self::Auth { .. } => "auth",
            Self::BadRequest { .. } => "bad_request",
            Self::Server { .. } => "server",
            Self::Connect { .. } => "connect",
            Self::Stream { .. } => "stream",
            Self::InvalidOutput { .. } => "invalid_output",
            Self::BudgetExceeded(_) => "budget_exceeded",
            Self::DeadlineExceeded { .. } => "deadline_exceeded",
            Self::Config(_) => "config",
        }
    }

    /// Whether the same request may succeed if sent again after a wait: rate limits, overload,
    /// timeouts, 5xx, a connection that failed, and a stream that broke before any of the
    /// reply arrived.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::RateLimited { .. }
            | Self::Overloaded { .. }
            | Self::Timeout { .. }
            | Self::Server { .. }
            | Self::Connect { .. } => true,
            Self::Stream { after_content, .. } => !after_content,
            _ => false,
        }
    }

    /// The wait the provider asked for, if it asked.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::RateLimited { retry_after, .. } | Self::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A limit of a [`Budget`](super::Budget) that a run passed.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum BudgetLimit {
    /// Tokens (input and output) spent against the limit.
    Tokens {
        /// Spent so far, including the call that passed the limit.
        spent: u64,
        /// The limit.
        limit: u64,
    },
    /// Cost spent against the limit, in the currency of the configured prices.
    Cost {
        /// Spent so far.
        spent: f64,
        /// The limit.
        limit: f64,
    },
    /// Model calls made against the limit.
    Calls {
        /// Calls made, including the one refused.
        spent: u64,
        /// The limit.
        limit: u64,
    },
}

impl fmt::Display for BudgetLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Tokens { spent, limit } => write!(f, "the run spent {spent} tokens, over its budget of {limit}"),
            Self::Cost { spent, limit } => write!(f, "the run spent {spent:.6}, over its cost budget of {limit:.6}"),
            Self::Calls { spent, limit } => {
                write!(f, "the run would make model call {spent}, over its budget of {limit} calls")
            }
        }?;
        f.write_str("; raise the limit with `RunConfig::budget`")
    }
}

fn wait_note(retry_after: Option<Duration>) -> String {
    retry_after.map(|d| format!(" (asked to wait {d:?})")).unwrap_or_default()
}

/// The start of a long reply, enough to recognise it in an error message.
fn excerpt(raw: &str) -> String {
    const MAX: usize = 200;
    if raw.len() <= MAX {
        return format!("{raw:?}");
    }
    let mut end = MAX;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{:?}… ({} bytes)", &raw[..end], raw.len())
}
