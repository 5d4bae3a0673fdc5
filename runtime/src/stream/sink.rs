//! Where a streamed run's events go: the typed side the executor writes to, and the node
//! side it lends to the nodes.

use super::event::{Event, EventKind};
use super::mode::{StreamMode, StreamModes};
use super::nested;
use super::queue::Queue;
use super::writer::{NodeWriter, SharedWriter, Written};
use crate::error::GraphError;
use crate::state::State;
use std::sync::Arc;

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
