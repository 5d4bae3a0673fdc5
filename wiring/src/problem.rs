//! What can be wrong with a graph's wiring, and how to say it.

use std::fmt;

/// Which list of a node a target was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EdgeKind {
    /// `next = ..`: a static edge, a branch or a router target.
    Next,
    /// `send = ..`: a Send target.
    Send,
}

/// One broken wiring rule. Indices refer to [`crate::Topology::nodes`] and to the node's
/// `next`/`send` lists, so a caller can point at the token that was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Problem {
    /// An edge names a node that does not exist.
    UnknownTarget {
        /// The graph's name.
        graph: String,
        /// The node whose edge is wrong.
        node: usize,
        /// Index of the target in the node's `next` or `send` list.
        target: usize,
        /// Which list.
        kind: EdgeKind,
        /// The name as written.
        name: String,
        /// The closest existing node name, if one is close.
        suggestion: Option<String>,
    },
    /// `END` used as a Send target.
    SendToEnd {
        /// The node whose Send targets END.
        node: usize,
        /// Index of the target in the node's `send` list.
        target: usize,
    },
    /// No node is marked as an entry.
    NoEntry {
        /// The graph's name.
        graph: String,
    },
    /// Two nodes share a name.
    DuplicateNode {
        /// The graph's name.
        graph: String,
        /// The later of the two nodes.
        node: usize,
        /// Its name.
        name: String,
    },
    /// A node takes a name reserved for the virtual start or end.
    ReservedName {
        /// The node.
        node: usize,
        /// Its name.
        name: String,
    },
    /// A node has neither `next` nor `send`.
    NoOutgoingEdge {
        /// The node.
        node: usize,
        /// Its name.
        name: String,
    },
    /// No path from an entry leads to the node.
    Unreachable {
        /// The node.
        node: usize,
        /// Its name.
        name: String,
    },
    /// From the node no path leads to END.
    NeverEnds {
        /// The first node (in declaration order) that cannot reach END.
        node: usize,
        /// Its name.
        name: String,
        /// Every reachable node that cannot reach END, in declaration order.
        trapped: Vec<String>,
    },
}

impl Problem {
    /// The node the problem belongs to, if it belongs to one.
    #[must_use]
    pub fn node(&self) -> Option<usize> {
        match self {
            Self::NoEntry { .. } => None,
            Self::UnknownTarget { node, .. }
            | Self::SendToEnd { node, .. }
            | Self::DuplicateNode { node, .. }
            | Self::ReservedName { node, .. }
            | Self::NoOutgoingEdge { node, .. }
            | Self::Unreachable { node, .. }
            | Self::NeverEnds { node, .. } => Some(*node),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTarget { graph, name, suggestion, .. } => {
                write!(f, "no node named `{name}` in graph `{graph}`")?;
                match suggestion {
                    Some(near) => write!(f, "; did you mean `{near}`?"),
                    None => Ok(()),
                }
            }
            Self::SendToEnd { .. } => {
                f.write_str("a Send payload needs a node to run it; END cannot be a `send` target")
            }
            Self::NoEntry { graph } => write!(f, "graph `{graph}` has no entry node: mark one with `#[node(entry)]`"),
            Self::DuplicateNode { graph, name, .. } => {
                write!(f, "graph `{graph}` already has a node named `{name}`: give each node its own name")
            }
            Self::ReservedName { name, .. } => {
                write!(f, "`{name}` is reserved for the virtual start and end of a graph: rename the node")
            }
            Self::NoOutgoingEdge { name, .. } => {
                write!(f, "node `{name}` has no outgoing edge: add `next = ...` or `next = END`")
            }
            Self::Unreachable { name, .. } => {
                write!(f, "node `{name}` can never run: no edge leads to it")
            }
            Self::NeverEnds { name, trapped, .. } => {
                write!(f, "from node `{name}` the graph can never reach END")?;
                if trapped.len() > 1 {
                    let cycle = trapped.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>();
                    write!(f, " (it loops through {})", cycle.join(", "))?;
                }
                f.write_str(": add an edge or a branch that leads to END")
            }
        }
    }
}

impl std::error::Error for Problem {}
