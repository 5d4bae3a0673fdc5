//! How a failed model call is tried again: which failures, how often, how long to wait.

use super::ModelError;
use std::time::Duration;

/// The retry policy of model calls, by default that of the providers' official SDKs: up to
/// 3 attempts; waits of 0.5 s, 1 s, 2 s ... up to 8 s, each shortened by up to a quarter at
/// random so that many clients do not retry in step; a wait the provider asks for
/// (`retry-after-ms`, `retry-after`) is used instead when it is at most a minute.
///
/// Only [retryable](ModelError::is_retryable) errors are retried, never a stream that already
/// delivered part of the reply, and never past the run's deadline.
///
/// ```
/// use graphwright::model::ModelRetry;
/// use std::time::Duration;
///
/// let retry = ModelRetry::default().max_attempts(5);
/// assert!(retry.wait(1, None) <= Duration::from_millis(500));
/// assert!(retry.wait(1, None) >= Duration::from_millis(375));
/// assert!(retry.wait(9, None) <= Duration::from_secs(8));
/// assert_eq!(retry.wait(1, Some(Duration::from_secs(3))), Duration::from_secs(3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelRetry {
    pub(crate) max_attempts: u32,
    pub(crate) initial: Duration,
    pub(crate) max: Duration,
    pub(crate) max_asked: Duration,
}

impl Default for ModelRetry {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial: Duration::from_millis(500),
            max: Duration::from_secs(8),
            max_asked: Duration::from_mins(1),
        }
    }
}

impl ModelRetry {
    /// No retries: one attempt.
    #[must_use]
    pub fn none() -> Self {
        Self::default().max_attempts(1)
    }

    /// At most `attempts` attempts in all (at least 1).
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The first wait (doubled after each further failure).
    #[must_use]
    pub fn initial_wait(mut self, wait: Duration) -> Self {
        self.initial = wait;
        self
    }

    /// The longest computed wait.
    #[must_use]
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max = wait;
        self
    }

    /// The longest wait a provider may ask for; a longer `retry-after` is not honoured and the
    /// computed wait is used instead.
    #[must_use]
    pub fn max_asked_wait(mut self, wait: Duration) -> Self {
        self.max_asked = wait;
        self
    }

    /// The wait before attempt `failed + 1`, given what the provider asked for.
    #[must_use]
    pub fn wait(&self, failed: u32, asked: Option<Duration>) -> Duration {
        if let Some(asked) = asked.filter(|a| *a <= self.max_asked) {
            return asked;
        }
        let exponent = i32::try_from(failed.saturating_sub(1)).unwrap_or(i32::MAX).min(30);
        let full = (self.initial.as_secs_f64() * 2f64.powi(exponent)).min(self.max.as_secs_f64());
        Duration::from_secs_f64(full * (1.0 - 0.25 * fastrand::f64()))
    }

    pub(crate) fn retries(&self, error: &ModelError, attempt: u32) -> bool {
        attempt < self.max_attempts && error.is_retryable()
    }
}
