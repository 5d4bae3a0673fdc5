//! A run in progress as its followers see it: the events so far (kept, so that a client who
//! joins late or reconnects replays them), then its outcome.

pub(crate) use super::frame::Frame;

use super::replay::Replay;
use crate::served::{Outcome, WireEvent};
use futures::stream::{self, BoxStream, StreamExt};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// How a cancelled run is to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cancel {
    /// Stop; completed steps stay in the thread (run status `interrupted`).
    Interrupt,
    /// Stop, delete the checkpoints the run wrote and the run itself: the thread is as it was
    /// before the run.
    Rollback,
}

#[derive(Default)]
struct Log {
    frames: Vec<Arc<Frame>>,
    outcome: Option<Outcome>,
    /// What of a run taken over is held back as sent before.
    replay: Replay,
}

/// A run's shared progress.
pub(crate) struct Live {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    /// Whether a client may reconnect and replay (`stream_resumable`): its events carry ids.
    pub(crate) resumable: bool,
    /// Whether another server process executes the run, and this is a copy of its events
    /// (asking it to stop asks that process).
    pub(crate) remote: bool,
    /// The metadata of a run's thread as the policy set it, for the runs whose thread is in no
    /// record (a stateless run a client is attached to): who may cancel it by id.
    thread_metadata: std::sync::OnceLock<serde_json::Value>,
    log: Mutex<Log>,
    /// Bumped on every change of the log, to wake followers.
    tick: watch::Sender<usize>,
    cancel: watch::Sender<Option<Cancel>>,
}

impl Live {
    pub(crate) fn new(run_id: String, thread_id: String, resumable: bool) -> Arc<Self> {
        Self::with(run_id, thread_id, resumable, false)
    }

    /// A copy of the progress of a run another server process executes.
    #[cfg(feature = "postgres")]
    pub(crate) fn remote(run_id: String, thread_id: String, resumable: bool) -> Arc<Self> {
        Self::with(run_id, thread_id, resumable, true)
    }

    fn with(run_id: String, thread_id: String, resumable: bool, remote: bool) -> Arc<Self> {
        Arc::new(Self {
            run_id,
            thread_id,
            resumable,
            remote,
            thread_metadata: std::sync::OnceLock::new(),
            log: Mutex::default(),
            tick: watch::Sender::new(0),
            cancel: watch::Sender::new(None),
        })
    }

    /// Keeps the metadata of the run's thread, for a run whose thread is in no record.
    pub(crate) fn keep_thread_metadata(&self, metadata: serde_json::Value) {
        self.thread_metadata.get_or_init(|| metadata);
    }

    /// The metadata kept by [`keep_thread_metadata`](Self::keep_thread_metadata) (`null` if none).
    pub(crate) fn thread_metadata(&self) -> &serde_json::Value {
        self.thread_metadata.get().unwrap_or(&serde_json::Value::Null)
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds an event of the run's execution (unless it is one its followers saw before the run
    /// was taken over, sent again: see [`replaying`](Self::replaying)).
    pub(crate) fn push(&self, event: &WireEvent) {
        let data = event.data.to_string();
        let mut log = self.log();
        let Log { frames, replay, .. } = &mut *log;
        if !replay.admits(frames, &event.name, &data) {
            return;
        }
        Self::add(log, event.name.clone(), data);
        self.tick.send_modify(|n| *n += 1);
    }

    /// Adds an event whose data is already JSON text, as it is (a copy of what another process
    /// sent, or what followers saw before the run was taken over).
    pub(crate) fn push_encoded(&self, name: String, data: String) {
        Self::add(self.log(), name, data);
        self.tick.send_modify(|n| *n += 1);
    }

    /// From now on, the events [`push`](Self::push) is given that repeat what followers saw so
    /// far are held back, until one is new: the run was taken over, and its new attempt goes
    /// on from its last checkpoint.
    pub(crate) fn replaying(&self) {
        let mut log = self.log();
        log.replay = Replay::Waiting { seen: log.frames.len() };
    }

    fn add(mut log: MutexGuard<'_, Log>, name: String, data: String) {
        let id = log.frames.len();
        log.frames.push(Arc::new(Frame { id, name, data }));
    }

    /// Ends the run: no event follows.
    pub(crate) fn finish(&self, outcome: Outcome) {
        self.log().outcome = Some(outcome);
        self.tick.send_modify(|n| *n += 1);
    }

    /// The outcome, once the run has ended.
    pub(crate) fn outcome(&self) -> Option<Outcome> {
        self.log().outcome.clone()
    }

    /// Asks the run to stop.
    pub(crate) fn cancel(&self, how: Cancel) {
        self.cancel.send_if_modified(|slot| {
            let first = slot.is_none();
            if first {
                *slot = Some(how);
            }
            first
        });
    }

    /// Whether the run was asked to stop, and how.
    pub(crate) fn cancel_requested(&self) -> Option<Cancel> {
        *self.cancel.borrow()
    }

    /// Resolves once the run is asked to stop.
    pub(crate) async fn cancelled(&self) -> Cancel {
        let mut rx = self.cancel.subscribe();
        loop {
            if let Some(how) = *rx.borrow_and_update() {
                return how;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// Waits for the outcome.
    pub(crate) async fn done(&self) -> Outcome {
        let mut rx = self.tick.subscribe();
        loop {
            rx.borrow_and_update();
            if let Some(outcome) = self.outcome() {
                return outcome;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }

    /// The events from position `from` on, live until the run ends.
    pub(crate) fn follow(self: Arc<Self>, from: usize) -> BoxStream<'static, Arc<Frame>> {
        let rx = self.tick.subscribe();
        stream::unfold((self, from, rx), |(live, next, mut rx)| async move {
            loop {
                rx.borrow_and_update();
                {
                    let log = live.log();
                    if let Some(frame) = log.frames.get(next) {
                        let frame = Arc::clone(frame);
                        drop(log);
                        return Some((frame, (live, next + 1, rx)));
                    }
                    if log.outcome.is_some() {
                        return None;
                    }
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        })
        .boxed()
    }

    /// How many events there are so far.
    pub(crate) fn len(&self) -> usize {
        self.log().frames.len()
    }
}
