//! The events of a streamed run that its consumer has not taken yet.
//!
//! The run is polled by its [`RunStream`](super::RunStream) itself, on the consumer's task, so
//! an event is handed over by a push and a pop under an uncontended lock: no channel, no wake
//! of another task, no task switch per event. That is what a token stream pays per token.

use super::Event;
use crate::state::State;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

/// How many step events may wait for the consumer before the run waits for it. Pieces that
/// nodes write (tokens, custom values) are never refused: a node writes them without waiting,
/// and the run makes no progress until the consumer has taken what is queued anyway.
pub(crate) const ROOM: usize = 256;

/// A run's events, in the order they happened.
pub(crate) struct Queue<S: State> {
    events: Mutex<VecDeque<Event<S>>>,
}

impl<S: State> Queue<S> {
    pub(crate) fn new() -> Self {
        Self { events: Mutex::new(VecDeque::new()) }
    }

    fn events(&self) -> MutexGuard<'_, VecDeque<Event<S>>> {
        // A panic while the lock was held left a queue of whole events: keep using it.
        self.events.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn push(&self, event: Event<S>) {
        self.events().push_back(event);
    }

    pub(crate) fn pop(&self) -> Option<Event<S>> {
        self.events().pop_front()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.events().is_empty()
    }

    /// Waits until fewer than [`ROOM`] events wait: a consumer that falls behind holds the run
    /// back instead of letting its events grow without bound.
    pub(crate) fn room(&self) -> Room<'_, S> {
        Room { queue: self }
    }
}

/// The future of [`Queue::room`].
pub(crate) struct Room<'a, S: State> {
    queue: &'a Queue<S>,
}

impl<S: State> Future for Room<'_, S> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.queue.events().len() < ROOM {
            return Poll::Ready(());
        }
        // The consumer polls the run again as soon as it has emptied the queue; waking here
        // keeps that true when this future sits inside a set of futures (the tasks of one
        // step) that polls only the members that woke.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
