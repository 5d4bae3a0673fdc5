//! Timestamps as the Agent Server API writes them: RFC 3339, UTC, microseconds.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now.
pub(crate) fn now() -> String {
    humantime::format_rfc3339_micros(SystemTime::now()).to_string()
}

/// A time given in milliseconds since the Unix epoch.
pub(crate) fn from_millis(ms: u64) -> String {
    humantime::format_rfc3339_micros(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}
