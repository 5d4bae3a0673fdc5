//! Times as the stores keep them: milliseconds since the epoch, clamped to what every backend
//! can hold.

use std::time::Duration;
use std::time::SystemTime;
use std::time::UNIX_EPOCH;
/// The latest time the stores keep, 9999-12-31T23:59:59.999Z: a longer time to live means
/// "never" in practice, and every backend can hold it.
pub(crate) const MAX_TIME_MS: u64 = 253_402_300_799_999;

/// Milliseconds since the Unix epoch, clamped to `0..=MAX_TIME_MS`.
pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).min(MAX_TIME_MS)
}

/// The time `ms` milliseconds after the epoch (`ms` at most `MAX_TIME_MS`).
pub(crate) fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.min(MAX_TIME_MS))
}

/// The milliseconds of a time to live, clamped to `MAX_TIME_MS`.
pub(crate) fn ttl_millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).min(MAX_TIME_MS)
}

/// When an item with `ttl_ms` expires, counted from `now_ms`.
pub(crate) fn expiry(now_ms: u64, ttl_ms: u64) -> u64 {
    now_ms.saturating_add(ttl_ms).min(MAX_TIME_MS)
}

/// Whether an item expiring at `expires_ms` is still live at `now_ms`.
pub(crate) fn live(expires_ms: Option<u64>, now_ms: u64) -> bool {
    expires_ms.is_none_or(|at| at > now_ms)
}

/// A time in milliseconds as the databases hold it (a signed 64-bit integer).
#[cfg(any(feature = "sqlite", feature = "postgres"))]
pub(crate) fn ms_param(ms: u64) -> i64 {
    i64::try_from(ms.min(MAX_TIME_MS)).unwrap_or(i64::MAX)
}
