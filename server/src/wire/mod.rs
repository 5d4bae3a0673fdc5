//! The HTTP side of the protocol: bodies, query strings, SSE framing, message shapes, node names.

pub(crate) mod body;
pub(crate) mod message_schema;
pub(crate) mod messages;
pub(crate) mod names;
pub(crate) mod sse;
