//! Building a graph: the dynamic builder [`StateGraph`] and its compiled form.

mod builder;
mod compiled;
mod describe;
mod drawing;
mod into_node;
mod node_spec;
mod run_output;
mod subgraph;
mod threads;

pub use builder::StateGraph;
pub use compiled::CompiledGraph;
pub use describe::{Drawing, DrawnEdge, Subgraph};
pub use into_node::{AsyncFn1, AsyncFn2, IntoNode, IntoOutput, IntoPayloadNode, marker};
pub use node_spec::{Input, NodeFuture, NodeResult, NodeSpec, PayloadType, Shape, take_payload};
pub use run_output::{RunFailure, RunOutput, RunStatus};
pub use subgraph::{FullUpdate, IntoSubgraph, ParentGotoError, SubgraphError, SubgraphSnapshot, SubgraphState};
pub use threads::{PendingTask, StateSnapshot};

pub(crate) use compiled::{CompiledNode, Inner, RouterFn, Target};
pub(crate) use node_spec::Action;
pub(crate) use node_spec::SyncFn;
pub(crate) use run_output::{Halt, complete};

/// The default bound on super-steps per run. LangGraph's is 10 007 (since March 2026): a
/// long agent loop takes two steps per tool call, and a lower limit surprised its users. An
/// accidental loop in a graphwright graph reaches 10 000 steps in milliseconds, so the bound
/// costs nothing in the failure case and never trips a healthy agent.
pub const DEFAULT_RECURSION_LIMIT: u64 = 10_000;
