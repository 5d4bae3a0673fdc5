//! A compiled graph described without its types, for tools that show a graph's parts (an HTTP
//! server answering LangGraph's `/assistants/{id}/graph` and `/assistants/{id}/subgraphs`): its
//! shape ([`Drawing`]) and what its subgraph nodes run ([`Subgraph`]). A leaf: the subgraph node
//! describes its child, and [`CompiledGraph::subgraphs`] lists them.
//!
//! [`CompiledGraph::subgraphs`]: crate::CompiledGraph::subgraphs

use crate::state::State;
use schemars::{Schema, SchemaGenerator};
use std::fmt;

/// One edge of a [`Drawing`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DrawnEdge {
    /// The node it leaves ([`START`](crate::START) for the entry).
    pub source: String,
    /// The node it reaches ([`END`](crate::END) when the run may stop there).
    pub target: String,
    /// Whether it is taken only sometimes: a route a branching node returns, a router's choice,
    /// or a `Send`.
    pub conditional: bool,
}

/// A compiled graph's nodes and edges (LangGraph's `get_graph()`), from
/// [`CompiledGraph::drawing`](crate::CompiledGraph::drawing) and, for a subgraph, [`Subgraph::drawing`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Drawing {
    /// The nodes, in declaration order, without [`START`](crate::START) and [`END`](crate::END).
    pub nodes: Vec<String>,
    /// Every edge, once each, in declaration order of their source.
    pub edges: Vec<DrawnEdge>,
    /// The nodes that run a subgraph.
    pub subgraphs: Vec<String>,
}

/// A subgraph node of a compiled graph and the graph it runs, from
/// [`CompiledGraph::subgraphs`](crate::CompiledGraph::subgraphs): the node's name, the
/// subgraph's name, its nodes and edges, its state's JSON Schema and message fields, and its own
/// subgraph nodes, described the same way.
///
/// The subgraph runs with its parent's context type, so the parent's context describes it too.
///
/// ```
/// use graphwright::prelude::*;
///
/// #[state]
/// pub struct Desk {
///     pub topic: String,
/// }
///
/// /// A research step's state.
/// #[state]
/// pub struct Research {
///     /// What to look up.
///     pub topic: String,
///     pub notes: Vec<String>,
/// }
///
/// impl From<&Desk> for Research {
///     fn from(desk: &Desk) -> Self {
///         Research { topic: desk.topic.clone(), notes: Vec::new() }
///     }
/// }
///
/// impl From<Research> for DeskUpdate {
///     fn from(_: Research) -> Self {
///         DeskUpdate::new()
///     }
/// }
///
/// fn look_up(_: &Research) -> ResearchUpdate {
///     ResearchUpdate::new()
/// }
///
/// let research = StateGraph::<Research>::new().add_node("look_up", look_up).add_edge(START, "look_up");
/// let desk = StateGraph::<Desk>::new()
///     .add_subgraph("research", research.add_edge("look_up", END))
///     .add_edge(START, "research")
///     .add_edge("research", END)
///     .compile()
///     .unwrap();
///
/// let subgraphs = desk.subgraphs();
/// assert_eq!(subgraphs.len(), 1);
/// assert_eq!(subgraphs[0].node(), "research");
/// assert_eq!(subgraphs[0].drawing().nodes, ["look_up"]);
/// let schema = subgraphs[0].state_schema().to_value();
/// assert_eq!(schema["properties"]["topic"]["description"], "What to look up.");
/// assert!(subgraphs[0].subgraphs().is_empty());
/// ```
#[derive(Clone)]
pub struct Subgraph {
    node: String,
    name: String,
    drawing: Drawing,
    /// The subgraph's state's root schema, made by the caller's generator (its settings: the
    /// dialect, where definitions go).
    state_schema: fn(&mut SchemaGenerator) -> Schema,
    message_fields: &'static [&'static str],
    subgraphs: Vec<Subgraph>,
}

impl Subgraph {
    /// The description of a subgraph named `name` over the state `CS`, run by the node `node`,
    /// drawn as `drawing`, whose own subgraph nodes are `subgraphs`.
    pub(crate) fn of<CS: State>(node: &str, name: &str, drawing: Drawing, subgraphs: Vec<Subgraph>) -> Self {
        Self {
            node: node.to_owned(),
            name: name.to_owned(),
            drawing,
            state_schema: |generator| generator.root_schema_for::<CS>(),
            message_fields: CS::MESSAGE_FIELDS,
            subgraphs,
        }
    }

    /// The node of the parent graph that runs the subgraph.
    pub fn node(&self) -> &str {
        &self.node
    }

    /// The subgraph's own name ([`CompiledGraph::name`](crate::CompiledGraph::name)).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The subgraph's nodes and edges, as its own
    /// [`CompiledGraph::drawing`](crate::CompiledGraph::drawing) gives them.
    pub fn drawing(&self) -> &Drawing {
        &self.drawing
    }

    /// The JSON Schema of the subgraph's state, as `schemars::schema_for!` makes it (JSON Schema
    /// 2020-12, definitions under `$defs`).
    pub fn state_schema(&self) -> Schema {
        (self.state_schema)(&mut SchemaGenerator::default())
    }

    /// The JSON Schema of the subgraph's state, made by `generator`: with its settings, and
    /// with the definitions it already holds, so a caller can look up the reference of another
    /// type in the same document (say, where [`Message`](crate::Message) is defined).
    pub fn state_schema_in(&self, generator: &mut SchemaGenerator) -> Schema {
        (self.state_schema)(generator)
    }

    /// The subgraph's state fields that hold chat messages ([`State::MESSAGE_FIELDS`]).
    pub fn message_fields(&self) -> &'static [&'static str] {
        self.message_fields
    }

    /// The subgraph's own subgraph nodes, described the same way, in declaration order.
    pub fn subgraphs(&self) -> &[Subgraph] {
        &self.subgraphs
    }
}

impl fmt::Debug for Subgraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Subgraph")
            .field("node", &self.node)
            .field("name", &self.name)
            .field("drawing", &self.drawing)
            .field("message_fields", &self.message_fields)
            .field("subgraphs", &self.subgraphs)
            .finish_non_exhaustive()
    }
}
