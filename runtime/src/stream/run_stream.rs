//! [`RunStream`]: the stream that drives a run as it is polled.

use super::event::{Event, EventKind};
use super::queue::Queue;
use crate::state::State;
use futures::Stream;
use futures::task::AtomicWaker;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

/// The run a [`RunStream`] drives, until it ends or is cancelled.
type Run = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A run's events. The stream drives the run: it advances while the stream is polled.
/// Dropping the stream cancels the run.
pub struct RunStream<S: State> {
    /// `None` once the run ended or was cancelled. In a mutex only so that [`cancel`]
    /// (`&self`) can drop it; polling reaches it through `get_mut`, without locking.
    ///
    /// [`cancel`]: RunStream::cancel
    run: Mutex<Option<Run>>,
    queue: Arc<Queue<S>>,
    /// Whether the run has been woken since it last returned `Pending`.
    woken: Arc<Woken>,
    /// The waker the run is polled with: it marks [`woken`](Self::woken), then wakes the
    /// consumer.
    run_waker: Waker,
    run_id: u64,
    done: bool,
}

/// The consumer's waker, behind a flag the run's wakers set. A run that handed over an event
/// and then waited must not be polled again until something it waits on is ready: a token
/// stream would otherwise poll the whole run twice per token, once to find the token and once
/// to find nothing.
struct Woken {
    flag: AtomicBool,
    consumer: AtomicWaker,
}

impl Wake for Woken {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.flag.store(true, Ordering::Release);
        self.consumer.wake();
    }
}

impl<S: State> RunStream<S> {
    pub(crate) fn new(run_id: u64, queue: Arc<Queue<S>>, run: Run) -> Self {
        // Woken at first: the run has not been polled yet.
        let woken = Arc::new(Woken { flag: AtomicBool::new(true), consumer: AtomicWaker::new() });
        let run_waker = Waker::from(woken.clone());
        Self { run: Mutex::new(Some(run)), queue, woken, run_waker, run_id, done: false }
    }

    /// Stops the run now: no more of its code runs, and what it holds is dropped. The stream
    /// then gives the events it already had and ends with [`EventKind::Cancelled`] (unless the
    /// run had already sent its terminal event).
    pub fn cancel(&self) {
        let run = self.run.lock().unwrap_or_else(PoisonError::into_inner).take();
        drop(run);
    }
}

impl<S: State> Stream for RunStream<S> {
    type Item = Event<S>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event<S>>> {
        let this = &mut *self;
        if this.done {
            return Poll::Ready(None);
        }
        loop {
            if let Some(event) = this.queue.pop() {
                this.done = event.kind.is_terminal();
                return Poll::Ready(Some(event));
            }
            let run = this.run.get_mut().unwrap_or_else(PoisonError::into_inner);
            let Some(future) = run.as_mut() else {
                // A run that completes queues its terminal event first, so an empty queue and
                // no run means it was cancelled.
                this.done = true;
                let kind = EventKind::Cancelled;
                return Poll::Ready(Some(Event { run_id: this.run_id, step: 0, namespace: Vec::new(), kind }));
            };
            // Registered before the flag is read, so that a wake in between is not lost.
            this.woken.consumer.register(cx.waker());
            if !this.woken.flag.swap(false, Ordering::Acquire) {
                return Poll::Pending;
            }
            match future.as_mut().poll(&mut Context::from_waker(&this.run_waker)) {
                Poll::Ready(()) => *run = None,
                Poll::Pending if this.queue.is_empty() => return Poll::Pending,
                Poll::Pending => {}
            }
        }
    }
}
