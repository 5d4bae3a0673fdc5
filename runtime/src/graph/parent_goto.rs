//! Why a subgraph's request to go to a node of its parent could not be followed: the error
//! [`Runtime::goto_parent`](crate::Runtime::goto_parent) and the subgraph node share.

/// Why a subgraph's [`Runtime::goto_parent`](crate::Runtime::goto_parent) could not be followed (the error of the node that
/// called it, or of the subgraph node).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParentGotoError {
    /// The graph was run on its own, so there is no parent to go to.
    #[error(
        "node `{node}` asked to go to `{target}` in the parent graph, but its graph runs on its own, not as a subgraph"
    )]
    NoParent {
        /// The node that asked.
        node: String,
        /// Where it asked to go.
        target: String,
    },
    /// The subgraph node follows its edges, so it cannot go where the subgraph asks.
    #[error(
        "the subgraph of node `{node}` asked to go to `{target}`, but `{node}` has no targets to choose from: \
         declare them with `#[node(subgraph, next = a | b)]` (or `add_routed_subgraph`)"
    )]
    Unrouted {
        /// The subgraph node.
        node: String,
        /// Where its subgraph asked to go.
        target: String,
    },
    /// The subgraph asked for a node that is not among the subgraph node's targets.
    #[error("the subgraph of node `{node}` asked to go to `{target}`, which is not one of its targets ({})", targets.join(", "))]
    NotATarget {
        /// The subgraph node.
        node: String,
        /// Where its subgraph asked to go.
        target: String,
        /// The node's targets.
        targets: Vec<String>,
    },
    /// The subgraph node chooses its next node by the subgraph's request, and none came.
    #[error(
        "node `{node}` goes where its subgraph says ({}), but the subgraph ended without calling `goto_parent`",
        targets.join(", ")
    )]
    Missing {
        /// The subgraph node.
        node: String,
        /// The node's targets.
        targets: Vec<String>,
    },
}
