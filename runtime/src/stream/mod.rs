//! Watching a run live: typed events for any combination of modes.
//!
//! [`CompiledGraph::stream`](crate::CompiledGraph::stream) hands back a [`RunStream`]: a
//! `futures::Stream` of [`Event`]s that drives the run itself, as LangGraph's `stream`
//! generator does. Polling the stream runs the graph until it has an event to give or must wait;
//! nothing is spawned, and the run advances only while the stream is polled. At most a bounded
//! number of step events wait for the consumer, so one that falls behind holds the run back
//! instead of growing memory; dropping the stream cancels the run. Every stream ends with
//! exactly one terminal event: [`EventKind::Finished`], [`EventKind::Interrupted`],
//! [`EventKind::Failed`] or [`EventKind::Cancelled`].

use crate::checkpoint::Source;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::state::State;
use futures::Stream;
use futures::task::AtomicWaker;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::ops::BitOr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Wake, Waker};

mod app;
pub(crate) mod nested;
mod queue;

pub(crate) use queue::Queue;

pub use app::{APP_MODES, AppEvent, AppEvents};

/// What a stream reports, as LangGraph's stream modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StreamMode {
    /// The whole state after each step.
    Values = 1,
    /// Each task's update, as soon as the task finishes (so in the order tasks finish; the
    /// merge into the state stays in task order).
    Updates = 2,
    /// Token deltas written with [`Runtime::message_delta`](crate::Runtime::message_delta).
    Messages = 4,
    /// Anything nodes write with [`Runtime::write`](crate::Runtime::write).
    Custom = 8,
    /// Task start and finish, with each task's update, error or interrupt.
    Tasks = 16,
    /// Each stored checkpoint.
    Checkpoints = 32,
    /// Tasks and checkpoints together.
    Debug = 48,
    /// Also the `values`, `updates`, `tasks` and `checkpoints` events of subgraphs (LangGraph's
    /// `subgraphs=True`), as [`EventKind::SubgraphValues`], [`EventKind::SubgraphUpdate`] and
    /// the task and checkpoint kinds, each with its [`Event::namespace`]. `custom` and
    /// `messages` events from inside subgraphs come without it: they are what a node chose to
    /// show.
    Subgraphs = 64,
}

/// A set of [`StreamMode`]s: `StreamMode::Updates | StreamMode::Messages`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(u8);

impl StreamModes {
    /// Whether `mode` (every part of it, for `Debug`) is in the set.
    #[must_use]
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode as u8 == mode as u8
    }

    /// The set holding `mode` (usable in constants).
    #[must_use]
    pub const fn of(mode: StreamMode) -> Self {
        Self(mode as u8)
    }

    /// The set with `mode` added (usable in constants).
    #[must_use]
    pub const fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode as u8)
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self(mode as u8)
    }
}

impl BitOr for StreamMode {
    type Output = StreamModes;
    fn bitor(self, other: Self) -> StreamModes {
        StreamModes(self as u8 | other as u8)
    }
}

impl BitOr<StreamMode> for StreamModes {
    type Output = StreamModes;
    fn bitor(self, other: StreamMode) -> StreamModes {
        StreamModes(self.0 | other as u8)
    }
}

/// One event of a run.
#[derive(Debug)]
#[non_exhaustive]
pub struct Event<S: State> {
    /// The run it belongs to (as [`Runtime::run_id`](crate::Runtime::run_id)).
    pub run_id: u64,
    /// The super-step (0 before the first).
    pub step: u64,
    /// Where in nested graphs the event comes from; empty for the graph that was run.
    pub namespace: Vec<String>,
    /// What happened.
    pub kind: EventKind<S>,
}

/// What an [`Event`] reports.
#[non_exhaustive]
pub enum EventKind<S: State> {
    /// `values`: the state after a step.
    Values(S),
    /// `updates`: what one task wrote.
    Update {
        /// The node.
        node: String,
        /// Its update.
        update: S::Update,
        /// The node did not run: its output came from the graph's cache (its
        /// [`CachePolicy`](crate::CachePolicy)).
        cached: bool,
    },
    /// `values` inside a subgraph (with [`StreamMode::Subgraphs`]): the subgraph's state after
    /// one of its steps, as JSON (its type is not the graph's).
    SubgraphValues(Value),
    /// `updates` inside a subgraph (with [`StreamMode::Subgraphs`]): what one of its tasks
    /// wrote, as JSON.
    SubgraphUpdate {
        /// The subgraph's node.
        node: String,
        /// The node's update.
        update: Value,
        /// The node did not run: its output came from the subgraph's cache.
        cached: bool,
    },
    /// `custom`: a value a node wrote.
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// `messages`: a piece of a message being generated.
    Message {
        /// The node generating it.
        node: String,
        /// The message it belongs to.
        message_id: String,
        /// The new text.
        delta: String,
    },
    /// `messages`: a piece of a tool call a model is asking for, in the reply `message_id`.
    ToolCallDelta {
        /// The node generating it.
        node: String,
        /// The reply (assistant message) it belongs to.
        message_id: String,
        /// Which call of the reply (0 for the first).
        index: u32,
        /// The call's id, on its first piece.
        id: Option<String>,
        /// The tool's name, on its first piece.
        name: Option<String>,
        /// More of the arguments' JSON text.
        arguments: String,
    },
    /// `custom`: what happened to a tool call a [`ToolNode`](crate::ToolNode) runs in the node:
    /// started (with its redacted arguments), progress the tool wrote, finished (with its
    /// redacted result), under the model's call id.
    Tool {
        /// The node running the call.
        node: String,
        /// What happened.
        event: crate::tool::ToolEvent,
    },
    /// `messages`: what a model call in the node used, once its reply `message_id` is complete.
    Usage {
        /// The node that made the call.
        node: String,
        /// The reply.
        message_id: String,
        /// Its tokens and cost.
        usage: crate::model::Usage,
    },
    /// `tasks`: a task started.
    TaskStarted {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
    },
    /// `tasks`: a task finished, sent as soon as it did: `result` holds its update, `error` its
    /// error, `interrupted` whether it paused.
    TaskFinished {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
        /// The error, if the task failed.
        error: Option<String>,
        /// Whether the task paused with an interrupt.
        interrupted: bool,
        /// What the task wrote, if it finished; `None` for a task of a subgraph (its update
        /// comes as [`EventKind::SubgraphUpdate`]).
        result: Option<S::Update>,
    },
    /// `checkpoints`: a checkpoint was stored (or queued, under async durability).
    Checkpoint {
        /// Its id.
        id: String,
        /// Its step.
        step: i64,
        /// Why it was written.
        source: Source,
    },
    /// Terminal: the run finished with this state.
    Finished {
        /// The final state.
        state: S,
        /// Super-steps run.
        steps: u64,
    },
    /// Terminal: the run paused.
    Interrupted {
        /// The state at the pause.
        state: S,
        /// Why it paused.
        interrupts: Vec<Interrupt>,
    },
    /// Terminal: the run failed.
    Failed(GraphError),
    /// Terminal: the run stopped before it could report (the stream was cancelled, or the
    /// run's task was aborted).
    Cancelled,
}

impl<S: State> EventKind<S> {
    /// Whether this is the last event of its stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Finished { .. } | Self::Interrupted { .. } | Self::Failed(_) | Self::Cancelled)
    }
}

impl<S: State> fmt::Debug for EventKind<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Values(state) => f.debug_tuple("Values").field(state).finish(),
            Self::SubgraphValues(state) => f.debug_tuple("SubgraphValues").field(state).finish(),
            Self::SubgraphUpdate { node, update, cached } => f
                .debug_struct("SubgraphUpdate")
                .field("node", node)
                .field("update", update)
                .field("cached", cached)
                .finish(),
            Self::Update { node, update, cached } => {
                f.debug_struct("Update").field("node", node).field("update", update).field("cached", cached).finish()
            }
            Self::Custom { node, value } => f.debug_struct("Custom").field("node", node).field("value", value).finish(),
            Self::Message { node, message_id, delta } => f
                .debug_struct("Message")
                .field("node", node)
                .field("message_id", message_id)
                .field("delta", delta)
                .finish(),
            Self::ToolCallDelta { node, message_id, index, id, name, arguments } => f
                .debug_struct("ToolCallDelta")
                .field("node", node)
                .field("message_id", message_id)
                .field("index", index)
                .field("id", id)
                .field("name", name)
                .field("arguments", arguments)
                .finish(),
            Self::Tool { node, event } => f.debug_struct("Tool").field("node", node).field("event", event).finish(),
            Self::Usage { node, message_id, usage } => f
                .debug_struct("Usage")
                .field("node", node)
                .field("message_id", message_id)
                .field("usage", usage)
                .finish(),
            Self::TaskStarted { node, task } => {
                f.debug_struct("TaskStarted").field("node", node).field("task", task).finish()
            }
            Self::TaskFinished { node, task, error, interrupted, result } => f
                .debug_struct("TaskFinished")
                .field("node", node)
                .field("task", task)
                .field("error", error)
                .field("interrupted", interrupted)
                .field("result", result)
                .finish(),
            Self::Checkpoint { id, step, source } => {
                f.debug_struct("Checkpoint").field("id", id).field("step", step).field("source", source).finish()
            }
            Self::Finished { state, steps } => {
                f.debug_struct("Finished").field("state", state).field("steps", steps).finish()
            }
            Self::Interrupted { state, interrupts } => {
                f.debug_struct("Interrupted").field("state", state).field("interrupts", interrupts).finish()
            }
            Self::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Self::Cancelled => f.write_str("Cancelled"),
        }
    }
}

/// A value written from inside a node, before it is typed as an event.
pub(crate) enum Written {
    Custom(Value),
    Message { message_id: String, delta: String },
    ToolCall { message_id: String, index: u32, id: Option<String>, name: Option<String>, arguments: String },
    Tool(crate::tool::ToolEvent),
    Usage { message_id: String, usage: crate::model::Usage },
}

/// The part of a sink that nodes (and subgraphs run by nodes) write to: not generic over the
/// state, so `Runtime` can hold it.
pub(crate) trait NodeWriter: Send + Sync {
    fn write(&self, node: &str, step: u64, written: Written) {
        self.write_nested(&[], node, step, written);
    }

    /// A node write from inside the subgraph at `namespace` (empty for this graph's own nodes).
    fn write_nested(&self, namespace: &[String], node: &str, step: u64, written: Written);

    /// A step event of the subgraph at `namespace`, waiting while the consumer is behind.
    fn forward<'a>(
        &'a self,
        namespace: &'a [String],
        step: u64,
        event: nested::Nested,
    ) -> futures::future::BoxFuture<'a, Result<(), GraphError>>;

    /// The modes the stream was asked for.
    fn modes(&self) -> StreamModes;

    /// Whether `messages` events are wanted, so a model reply is worth streaming.
    fn streams_messages(&self) -> bool {
        self.modes().contains(StreamMode::Messages)
    }
}

/// Where a streamed run's events go.
pub(crate) struct Sink<S: State> {
    pub(crate) modes: StreamModes,
    out: Out<S>,
}

enum Out<S: State> {
    /// The stream's queue: this is the graph that was run.
    Queue { run_id: u64, queue: Arc<Queue<S>> },
    /// A subgraph's events, passed up to the graph that runs it under `namespace`.
    Relay { up: SharedWriter, namespace: Vec<String> },
}

impl<S: State> Sink<S> {
    pub(crate) fn new(modes: StreamModes, run_id: u64, queue: Arc<Queue<S>>) -> Self {
        Self { modes, out: Out::Queue { run_id, queue } }
    }

    /// The sink of a subgraph run at `namespace` inside the run that writes to `up`: it takes
    /// the modes `up` takes, step events only with [`StreamMode::Subgraphs`].
    pub(crate) fn relay(up: SharedWriter, namespace: Vec<String>) -> Self {
        let modes = up.modes();
        let modes = if modes.contains(StreamMode::Subgraphs) {
            modes
        } else {
            StreamModes(modes.0 & (StreamMode::Custom as u8 | StreamMode::Messages as u8))
        };
        Self { modes, out: Out::Relay { up, namespace } }
    }

    /// Sends a step event, waiting while the consumer is behind.
    pub(crate) async fn send(&self, step: u64, kind: EventKind<S>) -> Result<(), GraphError> {
        match &self.out {
            Out::Queue { run_id, queue } => {
                queue.room().await;
                queue.push(Event { run_id: *run_id, step, namespace: Vec::new(), kind });
                Ok(())
            }
            Out::Relay { up, namespace } => match nested::Nested::of(kind) {
                Some(event) => up.forward(namespace, step, event).await,
                None => Ok(()),
            },
        }
    }

    /// Sends the terminal event (never held back: it is the last).
    pub(crate) fn finish(&self, step: u64, kind: EventKind<S>) {
        if let Out::Queue { run_id, queue } = &self.out {
            queue.push(Event { run_id: *run_id, step, namespace: Vec::new(), kind });
        }
    }
}

impl<S: State> NodeWriter for Sink<S> {
    fn modes(&self) -> StreamModes {
        self.modes
    }

    fn write_nested(&self, inner: &[String], node: &str, step: u64, written: Written) {
        let (run_id, queue) = match &self.out {
            Out::Queue { run_id, queue } => (*run_id, queue),
            Out::Relay { up, namespace } => {
                let path: Vec<String> = namespace.iter().chain(inner).cloned().collect();
                return up.write_nested(&path, node, step, written);
            }
        };
        let node = node.to_owned();
        let kind = match written {
            Written::Custom(value) if self.modes.contains(StreamMode::Custom) => EventKind::Custom { node, value },
            Written::Message { message_id, delta } if self.modes.contains(StreamMode::Messages) => {
                EventKind::Message { node, message_id, delta }
            }
            Written::ToolCall { message_id, index, id, name, arguments }
                if self.modes.contains(StreamMode::Messages) =>
            {
                EventKind::ToolCallDelta { node, message_id, index, id, name, arguments }
            }
            Written::Tool(event) if self.modes.contains(StreamMode::Custom) => EventKind::Tool { node, event },
            Written::Usage { message_id, usage } if self.modes.contains(StreamMode::Messages) => {
                EventKind::Usage { node, message_id, usage }
            }
            _ => return,
        };
        queue.push(Event { run_id, step, namespace: inner.to_vec(), kind });
    }

    fn forward<'a>(
        &'a self,
        inner: &'a [String],
        step: u64,
        event: nested::Nested,
    ) -> futures::future::BoxFuture<'a, Result<(), GraphError>> {
        Box::pin(async move {
            match &self.out {
                Out::Queue { run_id, queue } => {
                    queue.room().await;
                    queue.push(Event { run_id: *run_id, step, namespace: inner.to_vec(), kind: event.into_kind() });
                    Ok(())
                }
                Out::Relay { up, namespace } => {
                    let path: Vec<String> = namespace.iter().chain(inner).cloned().collect();
                    up.forward(&path, step, event).await
                }
            }
        })
    }
}

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

/// A shared handle on a sink's node side, for `Runtime`.
pub(crate) type SharedWriter = Arc<dyn NodeWriter>;
