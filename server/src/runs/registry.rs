//! The runs this process executes, kept apart from how runs are made and started so that the
//! server's shared state and the cluster can hold them without depending on either.

use super::feed::ThreadFeeds;
use super::live::Live;
use super::quota::InFlight;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

/// How many ended runs keep their events for late joiners.
const KEPT_ENDED: usize = 256;

/// The runs this process executes.
#[derive(Default)]
pub(crate) struct Runs {
    live: Mutex<HashMap<String, Arc<Live>>>,
    ended: Mutex<VecDeque<String>>,
    /// One lock per thread: its runs execute one at a time, in order.
    threads: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Each thread's runs in the order they started, for followers of the thread.
    pub(crate) feeds: ThreadFeeds,
    /// Each user's runs in flight, for the per-user cap.
    pub(super) in_flight: Arc<InFlight>,
}

impl Runs {
    /// A run of this process, in progress or recently ended.
    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<Live>> {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).get(run_id).cloned()
    }

    pub(super) fn add(&self, live: &Arc<Live>) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).insert(live.run_id.clone(), Arc::clone(live));
    }

    /// Adds `live` unless the run is already there; the one kept, and whether it is `live`.
    #[cfg(feature = "postgres")]
    pub(crate) fn add_if_absent(&self, live: Arc<Live>) -> (Arc<Live>, bool) {
        let mut all = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(kept) = all.get(&live.run_id) {
            return (Arc::clone(kept), false);
        }
        all.insert(live.run_id.clone(), Arc::clone(&live));
        (live, true)
    }

    /// Forgets a run's events (the run was deleted).
    pub(crate) fn forget(&self, run_id: &str) {
        self.live.lock().unwrap_or_else(PoisonError::into_inner).remove(run_id);
    }

    /// Keeps an ended run's events for a while, forgetting the oldest ended run beyond the limit.
    pub(crate) fn ended(&self, run_id: &str) {
        let mut ended = self.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended.push_back(run_id.to_owned());
        while ended.len() > KEPT_ENDED {
            if let Some(old) = ended.pop_front() {
                self.forget(&old);
            }
        }
    }

    /// How many runs this process executes that have not ended.
    pub(crate) fn in_flight_here(&self) -> usize {
        let live = self.live.lock().unwrap_or_else(PoisonError::into_inner);
        live.values().filter(|run| !run.remote && run.outcome().is_none()).count()
    }

    pub(super) fn lock_for(&self, thread: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut threads = self.threads.lock().unwrap_or_else(PoisonError::into_inner);
        // Locks nobody holds or waits for are dropped, so the map stays as small as the set of
        // busy threads.
        threads.retain(|_, lock| Arc::strong_count(lock) > 1);
        Arc::clone(threads.entry(thread.to_owned()).or_default())
    }
}
