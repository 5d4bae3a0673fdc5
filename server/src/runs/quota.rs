//! The per-user cap on runs in flight (`Server::max_runs_per_user`).

use crate::error::ApiError;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How many runs each user has in flight in this process: accepted and not yet ended.
#[derive(Default)]
pub(crate) struct InFlight {
    by_user: Mutex<HashMap<String, usize>>,
}

/// A run's place in its user's count, given back when the run ends (when this is dropped).
pub(crate) struct Slot {
    counts: Arc<InFlight>,
    identity: String,
}

impl InFlight {
    /// Takes a place for a run of `identity`, unless the user already has `cap` runs in flight.
    pub(crate) fn take(self: &Arc<Self>, identity: &str, cap: usize) -> Result<Slot, ApiError> {
        let mut by_user = self.by_user.lock().unwrap_or_else(PoisonError::into_inner);
        let count = by_user.entry(identity.to_owned()).or_default();
        if *count >= cap {
            return Err(ApiError::TooMany {
                reason: format!(
                    "user {identity:?} already has {count} runs in flight, the most this server accepts per user: \
                     wait for one to end, then try again"
                ),
                retry_after_secs: 1,
            });
        }
        *count += 1;
        Ok(Slot { counts: Arc::clone(self), identity: identity.to_owned() })
    }

    /// How many runs `identity` has in flight.
    #[cfg(test)]
    fn count(&self, identity: &str) -> usize {
        self.by_user.lock().unwrap_or_else(PoisonError::into_inner).get(identity).copied().unwrap_or(0)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut by_user = self.counts.by_user.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = by_user.get_mut(&self.identity) {
            *count = count.saturating_sub(1);
            // Users with nothing in flight are forgotten, so the map stays as small as the set
            // of users with runs.
            if *count == 0 {
                by_user.remove(&self.identity);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::InFlight;
    use crate::error::ApiError;
    use std::sync::Arc;

    #[test]
    fn a_user_at_the_cap_is_refused_until_a_run_ends_and_others_are_not() {
        let counts = Arc::new(InFlight::default());
        let first = counts.take("ada", 2).unwrap();
        let _second = counts.take("ada", 2).unwrap();
        let refused = counts.take("ada", 2).err().unwrap();
        assert!(matches!(refused, ApiError::TooMany { retry_after_secs: 1, .. }), "{refused:?}");
        assert!(refused.to_string().contains("\"ada\" already has 2 runs"), "{refused}");
        let _other = counts.take("grace", 2).unwrap();
        drop(first);
        assert_eq!(counts.count("ada"), 1);
        let _third = counts.take("ada", 2).unwrap();
    }
}
