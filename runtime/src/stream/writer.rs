//! What a node writes to while a run is streamed: the narrow side of a sink that is not
//! generic over the state, so the runtime, tools and models can hold it.

use super::mode::{StreamMode, StreamModes};
use super::nested;
use crate::error::GraphError;
use crate::model::reporting::{CallDelta, DeltaSink};
use serde_json::Value;
use std::sync::Arc;

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
pub(crate) trait NodeWriter: DeltaSink {
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

/// A shared handle on a sink's node side, for `Runtime`.
pub(crate) type SharedWriter = Arc<dyn NodeWriter>;

/// A model call's pieces go to the stream as the node's writes.
impl<W: NodeWriter + ?Sized> DeltaSink for W {
    fn streams_messages(&self) -> bool {
        NodeWriter::streams_messages(self)
    }

    fn delta(&self, node: &str, step: u64, delta: CallDelta) {
        let written = match delta {
            CallDelta::Message { message_id, delta } => Written::Message { message_id, delta },
            CallDelta::ToolCall { message_id, index, id, name, arguments } => {
                Written::ToolCall { message_id, index, id, name, arguments }
            }
            CallDelta::Usage { message_id, usage } => Written::Usage { message_id, usage },
        };
        self.write(node, step, written);
    }
}
