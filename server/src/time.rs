//! Timestamps as the Agent Server API writes them: RFC 3339, UTC, microseconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}

/// Now, in milliseconds since the Unix epoch (as the records keep times they compare).
pub(crate) fn now_ms() -> i64 {
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    i64::try_from(ms).unwrap_or(i64::MAX)
}

/// A time given in milliseconds since the Unix epoch.
pub(crate) fn from_millis(ms: u64) -> String {
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
