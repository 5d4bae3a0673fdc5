//! Building a graph: the dynamic builder [`StateGraph`] and its compiled form.

mod builder;
mod compile;
mod compiled;
mod describe;
mod drawing;
mod inner;
mod inspect;
mod into_node;
mod node_spec;
mod parent_goto;
mod run_output;
mod snapshot;
mod subgraph;
mod threads;

pub use builder::{DEFAULT_RECURSION_LIMIT, StateGraph};
pub use compiled::CompiledGraph;
pub use describe::{Drawing, DrawnEdge, Subgraph};
pub use into_node::{AsyncFn1, AsyncFn2, IntoNode, IntoOutput, IntoPayloadNode, marker};
pub use node_spec::{Input, NodeFuture, NodeResult, NodeSpec, PayloadType, Shape, take_payload};
pub use parent_goto::ParentGotoError;
pub use run_output::{RunFailure, RunOutput, RunStatus};
pub use snapshot::{PendingTask, StateSnapshot, SubgraphSnapshot};
pub use subgraph::{FullUpdate, IntoSubgraph, SubgraphError, SubgraphState};

pub(crate) use inner::{CompiledNode, Inner, RouterFn, Target};
pub(crate) use node_spec::Action;
pub(crate) use node_spec::SyncFn;
pub(crate) use run_output::{Halt, complete};
