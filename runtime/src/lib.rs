//! # graphwright
//!
//! LLM agents and workflows as graphs whose wiring the Rust compiler checks.
//!
//! You write ordinary functions and mark them: `#[state]` on the struct the graph carries,
//! `#[node]` on each step, `#[graph]` on the module that holds them. The macros generate the
//! update type with its reducers, one routing enum per branching node, and the wiring; a graph
//! with an edge to a node that does not exist, a node that can never run, or a branch that
//! returns a route it did not declare does not compile. The runtime runs the graph in
//! super-steps, the way LangGraph does, with concurrent tasks and deterministic merges.
//!
//! ```
//! use graphwright::prelude::*;
//!
//! #[graph]
//! mod triage {
//!     use super::*;
//!
//!     #[state]
//!     pub struct State {
//!         pub question: String,
//!         #[reducer(append)]
//!         pub trail: Vec<String>,
//!         #[reducer(add)]
//!         pub attempts: u32,
//!     }
//!
//!     /// Decide whether the question needs a lookup.
//!     #[node(entry, next = lookup | answer)]
//!     fn classify(state: &State) -> (StateUpdate, ClassifyNext) {
//!         let update = StateUpdate::new().trail(vec!["classify".into()]).attempts(1);
//!         if state.question.ends_with('?') {
//!             (update, ClassifyNext::Lookup)
//!         } else {
//!             (update, ClassifyNext::Answer)
//!         }
//!     }
//!
//!     #[node(next = answer)]
//!     async fn lookup(_state: &State) -> StateUpdate {
//!         StateUpdate::new().trail(vec!["lookup".into()])
//!     }
//!
//!     #[node(next = END)]
//!     fn answer(_state: &State) -> StateUpdate {
//!         StateUpdate::new().trail(vec!["answer".into()])
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let app = triage::graph().compile()?;
//! let input = triage::StateUpdate::new().question("what is a super-step?".to_owned());
//! let out = app.invoke(input, &RunConfig::default()).await?;
//! assert_eq!(out.state.trail, ["classify", "lookup", "answer"]);
//! assert_eq!(out.state.attempts, 1);
//! assert!(triage::MERMAID.contains("classify -.-> lookup"));
//! # Ok(()) }
//! ```
//!
//! The same graph can be built at run time with [`StateGraph`], whose `compile` applies the
//! same wiring rules the macro applies at compile time.

#![forbid(unsafe_code)]

extern crate self as graphwright;

mod boxed_error;
pub mod cache;
mod capture;
pub mod checkpoint;
pub mod command;
pub mod config;
pub mod encryption;
pub mod error;
mod field;
pub mod functional;
pub mod graph;
pub mod interrupt;
pub mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod message;
pub mod metrics;
pub mod model;
pub mod node;
mod node_error;
#[cfg(feature = "otel")]
pub mod otel;
pub mod policy;
pub mod prebuilt;
pub(crate) mod pregel;
mod record;
pub mod reducer;
mod report;
pub mod runtime;
#[cfg(feature = "sqlite")]
pub mod sqlite_file;
pub mod state;
pub mod store;
pub mod stream;
pub mod tool;
// Records are made only for export, which the `otel` feature brings.
#[cfg_attr(not(feature = "otel"), allow(dead_code, unused_imports))]
mod telemetry;
mod trace_value;
mod user;

pub use cache::{Cache, CacheError, InMemoryCache};
#[cfg(feature = "postgres")]
pub use checkpoint::PostgresSaver;
#[cfg(feature = "sqlite")]
pub use checkpoint::SqliteSaver;
pub use checkpoint::{Checkpointer, MemorySaver};
pub use command::{IntoRunInput, RunCommand, RunInput};
pub use config::{Durability, RunConfig};
pub use error::{BuildError, GraphError, NodeError, PanicError, TimeoutError};
pub use graph::{
    CompiledGraph, DEFAULT_RECURSION_LIMIT, Drawing, DrawnEdge, FullUpdate, IntoSubgraph, NodeSpec, ParentGotoError,
    PendingTask, RunFailure, RunOutput, RunStatus, StateGraph, StateSnapshot, Subgraph, SubgraphError,
    SubgraphSnapshot, SubgraphState,
};
#[doc = include_str!("../docs/entrypoint.md")]
pub use graphwright_macros::entrypoint;
#[doc = include_str!("../docs/graph.md")]
pub use graphwright_macros::graph;
#[doc = include_str!("../docs/node.md")]
pub use graphwright_macros::node;
#[doc = include_str!("../docs/start.md")]
pub use graphwright_macros::start;
#[doc = include_str!("../docs/state.md")]
pub use graphwright_macros::state;
#[doc = include_str!("../docs/task.md")]
pub use graphwright_macros::task;
#[doc = include_str!("tool/attr.md")]
pub use graphwright_macros::tool;
pub use interrupt::{Interrupt, Resume};
pub use message::{Message, Role, ToolCall};
pub use node::{Command, END, Route, START};
pub use policy::{CachePolicy, NodePolicy, RetryPolicy};
pub use pregel::MAX_STEPS_AHEAD;
pub use report::Report;
pub use runtime::Runtime;
pub use state::{Overwrite, State, Update, Write};
pub use store::{InMemoryStore, Store, StoreError};
pub use stream::{Event, EventKind, RunStream, StreamMode, StreamModes};
pub use tool::{Tool, ToolError, ToolNode, ToolRuntime, ToolSet, tools_condition};
pub use user::AuthUser;

/// The JSON crate this crate's API speaks (tool schemas and arguments, interrupt payloads),
/// re-exported so that `graphwright::serde_json::Value` is always the version it uses.
pub use serde_json;
/// Builds a `serde_json::Value` from JSON-like syntax: interrupt payloads, resume answers,
/// tool-call arguments. The same macro as `serde_json::json!`, in the prelude.
pub use serde_json::json;

/// The README's examples, compiled and run as doc tests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// What a graph module and the `main` that runs it need in one import.
///
/// The graph's building blocks (the macros, [`Runtime`], [`Command`], [`StateGraph`]), the
/// tool API ([`Tool`], [`ToolError`], [`ToolNode`], `tools!`), the run's configuration and
/// errors, the checkpointers, [`json!`](crate::json) for interrupt payloads and tool
/// arguments, and [`Report`] for `main`'s error type.
pub mod prelude {
    #[cfg(feature = "sqlite")]
    pub use crate::SqliteSaver;
    pub use crate::{
        BuildError, CachePolicy, Command, CompiledGraph, END, GraphError, InMemoryCache, MemorySaver, Message,
        NodeError, NodePolicy, Overwrite, Report, Resume, RetryPolicy, Role, Route, RunCommand, RunConfig, RunStatus,
        Runtime, START, State, StateGraph, StreamMode, Update, entrypoint, graph, json, node, start, state, task,
    };
    pub use crate::{Tool, ToolCall, ToolError, ToolNode, ToolRuntime, ToolSet, tool, tools, tools_condition};
}

/// Support for generated code. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::field::{StateField, StateFieldSchema, field_schema};
    pub use crate::graph::{FullUpdate, SubgraphState};
    pub use crate::graph::{Input, NodeFuture, NodeResult, NodeSpec, PayloadType, Shape, StateGraph, take_payload};
    pub use crate::node::{
        BranchReturn, MultiSendReturn, NodeOutput, Payload, Route, SendPayload, SendReturn, SendRoute, UpdateReturn,
    };
    pub use crate::reducer::{AddReducer, AppendReducer, MergeReducer, MessagesReducer, OrdReducer, UnionReducer};
    pub use crate::state::{Conflict, State, Update, Write, fold_step};
    pub use crate::tool::support::{
        DefaultJson, NoDefaultJson, ParamSpec, ToolArgs, ToolFailure, ToolParameter, ToolReturn, ToolSchema,
        param_spec, tool_result, tool_return,
    };
    pub use crate::tool::{Tool, ToolFuture, ToolRuntime};
    pub use crate::{END, NodePolicy, Runtime};
    pub use futures::future::BoxFuture;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use std::boxed::Box;
    pub use std::option::Option;
    pub use std::result::Result;
    pub use std::sync::OnceLock;
    pub use std::vec::Vec;

    /// The first pair of updates that both write a field a step may write once.
    ///
    /// `written` says, per update, whether it writes the field at all and whether the write is
    /// an [`Overwrite`](crate::Overwrite). A last-value field takes one write of any kind; a
    /// reducer field takes any number of reducer writes but at most one overwrite.
    pub fn conflict(
        field: &'static str,
        last_value: bool,
        written: impl Iterator<Item = Option<bool>>,
    ) -> Option<Conflict> {
        let mut first = None;
        for (index, write) in written.enumerate() {
            let counts = match write {
                None => false,
                Some(overwrite) => last_value || overwrite,
            };
            if counts {
                match first {
                    None => first = Some(index),
                    Some(first) => return Some(Conflict { field, first, second: index }),
                }
            }
        }
        None
    }

    /// Puts the header of an update's stored form, a map of `fields` entries, before the
    /// fields written from `start` on: the `encode_stored` that `#[state]` generates counts the
    /// fields while it writes them.
    pub fn encode_update_header(out: &mut Vec<u8>, start: usize, fields: usize) {
        crate::record::codec::encode_update_header(out, start, fields);
    }
}
