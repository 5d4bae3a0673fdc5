//! What wakes this process's cron scheduler, held by the server's shared state: apart from the
//! crons' operations, which need that state.

use std::sync::Arc;
use tokio::sync::Notify;

/// Wakes this process's scheduler when crons change.
#[derive(Clone, Default)]
pub(crate) struct Alarm(Arc<Notify>);

impl Alarm {
    /// Wakes the scheduler now, or as soon as it next waits.
    pub(crate) fn ring(&self) {
        self.0.notify_one();
    }

    pub(super) async fn rung(&self) {
        self.0.notified().await;
    }
}
