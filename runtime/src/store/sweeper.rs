//! When a write should also sweep expired items.

use super::options::StoreOptions;
use super::time::{millis, ttl_millis};
use std::sync::Mutex;
/// Decides when a write should also sweep: at most once per interval of the store's clock.
#[derive(Debug)]
pub(crate) struct Sweeper {
    interval_ms: Option<u64>,
    last_ms: Mutex<u64>,
}

impl Sweeper {
    pub(crate) fn new(options: &StoreOptions) -> Self {
        Self { interval_ms: options.sweep_interval.map(ttl_millis), last_ms: Mutex::new(millis(options.clock.now())) }
    }

    /// Whether a sweep is due at `now_ms`; if so, counts it as done.
    pub(crate) fn due(&self, now_ms: u64) -> bool {
        let Some(interval) = self.interval_ms else { return false };
        let Ok(mut last) = self.last_ms.lock() else { return false };
        if now_ms.saturating_sub(*last) >= interval {
            *last = now_ms;
            true
        } else {
            false
        }
    }

    /// Notes a sweep made at `now_ms`.
    pub(crate) fn swept(&self, now_ms: u64) {
        if let Ok(mut last) = self.last_ms.lock() {
            *last = now_ms;
        }
    }
}
