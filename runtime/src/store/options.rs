//! How a store treats time ([`StoreOptions`]), shared by every backend.

use super::clock::{Clock, SystemClock};
use super::index::IndexConfig;
use super::time::millis;
use std::sync::Arc;
use std::time::Duration;
/// How a store treats time: its clock, whether reads refresh a time to live, and how often
/// writes sweep expired items.
#[derive(Clone)]
pub struct StoreOptions {
    pub(super) clock: Arc<dyn Clock>,
    refresh_on_read: bool,
    pub(super) sweep_interval: Option<Duration>,
    index: Option<IndexConfig>,
}

impl Default for StoreOptions {
    /// The system clock, no refresh on read, a sweep at most once a minute.
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            refresh_on_read: false,
            sweep_interval: Some(Duration::from_mins(1)),
            index: None,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("refresh_on_read", &self.refresh_on_read)
            .field("sweep_interval", &self.sweep_interval)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl StoreOptions {
    /// The defaults: the system clock, no refresh on read, a sweep at most once a minute.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the time from `clock` (a [`ManualClock`](super::ManualClock) in tests).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether `get` and `search` restart the time to live of the items they return (as
    /// LangGraph's `refresh_on_read`). Off by default.
    #[must_use]
    pub fn refresh_on_read(mut self, refresh: bool) -> Self {
        self.refresh_on_read = refresh;
        self
    }

    /// How often writes (`put`, `delete`) also delete expired items; `None` leaves that to
    /// [`Store::sweep`](super::Store::sweep). Expired items are never returned either way.
    #[must_use]
    pub fn sweep_interval(mut self, interval: Option<Duration>) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// Embeds what `index` names on every put, so that searches with a
    /// [`query`](super::SearchQuery::query) rank items by meaning. Items put before the index was
    /// given have no vectors until they are put again.
    #[must_use]
    pub fn index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// The index given with [`index`](Self::index), if any.
    #[must_use]
    pub fn index_config(&self) -> Option<&IndexConfig> {
        self.index.as_ref()
    }
}

impl StoreOptions {
    /// The current time in milliseconds, by the store's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        millis(self.clock.now())
    }

    pub(crate) fn refreshes(&self) -> bool {
        self.refresh_on_read
    }
}
