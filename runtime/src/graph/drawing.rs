//! A compiled graph's shape as data ([`Drawing`]): its nodes and edges, and its subgraph nodes
//! described, for tools that draw or describe it.

use super::compiled::CompiledGraph;
use super::describe::{Drawing, DrawnEdge, Subgraph};
use super::inner::{Inner, Target};
use crate::node::{END, START};
use crate::state::State;

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// The graph's nodes and edges.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[graph]
    /// mod two {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub n: u32,
    ///     }
    ///
    ///     #[node(entry, next = second)]
    ///     fn first(_state: &State) -> StateUpdate {
    ///         StateUpdate::new()
    ///     }
    ///
    ///     #[node(next = END)]
    ///     fn second(_state: &State) -> StateUpdate {
    ///         StateUpdate::new()
    ///     }
    /// }
    ///
    /// let drawing = two::graph().compile().unwrap().drawing();
    /// assert_eq!(drawing.nodes, ["first", "second"]);
    /// let edges: Vec<_> = drawing.edges.iter().map(|e| (e.source.as_str(), e.target.as_str())).collect();
    /// assert_eq!(edges, [(START, "first"), ("first", "second"), ("second", END)]);
    /// ```
    pub fn drawing(&self) -> Drawing {
        let inner = self.inner();
        let mut edges = Edges { inner, list: Vec::new() };
        for &entry in &inner.start.entries {
            edges.add(START, Target(entry), false);
        }
        for router in &inner.start.routers {
            for &target in &router.targets {
                edges.add(START, target, true);
            }
        }
        for &(_, target) in &inner.start.sends {
            edges.add(START, Target(target), true);
        }
        for node in &inner.nodes {
            for &target in &node.edges {
                edges.add(&node.name, target, false);
            }
            for &target in &node.routes {
                edges.add(&node.name, target, true);
            }
            for router in &node.routers {
                for &target in &router.targets {
                    edges.add(&node.name, target, true);
                }
            }
            for &target in &node.sends {
                edges.add(&node.name, Target(target), true);
            }
            for &(join, _) in &node.joins {
                edges.add(&node.name, inner.joins[join as usize].target, false);
            }
        }
        Drawing {
            nodes: inner.node_names.iter().map(ToString::to_string).collect(),
            edges: edges.list,
            subgraphs: inner.nodes.iter().filter(|n| n.subgraph.is_some()).map(|n| n.name.to_string()).collect(),
        }
    }
}

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// The graph's subgraph nodes (`#[node(subgraph)]`, [`StateGraph::add_subgraph`] and the
    /// other `add_*subgraph` methods), in declaration order, each with the graph it runs
    /// described: its state's JSON Schema and its own subgraph nodes. See [`Subgraph`].
    ///
    /// [`StateGraph::add_subgraph`]: crate::StateGraph::add_subgraph
    pub fn subgraphs(&self) -> Vec<Subgraph> {
        let nodes = &self.inner().nodes;
        nodes.iter().filter_map(|node| node.subgraph.as_ref().map(|child| child.describe(&node.name))).collect()
    }
}

struct Edges<'a, S: State, C> {
    inner: &'a Inner<S, C>,
    list: Vec<DrawnEdge>,
}

impl<S: State, C> Edges<'_, S, C> {
    fn add(&mut self, source: &str, target: Target, conditional: bool) {
        let target = if target == Target::END { END } else { &self.inner.node_names[target.0 as usize] };
        if let Some(seen) = self.list.iter_mut().find(|e| e.source == source && e.target == target) {
            // A node that both always and sometimes reaches a target reaches it always.
            seen.conditional &= conditional;
            return;
        }
        self.list.push(DrawnEdge { source: source.to_owned(), target: target.to_owned(), conditional });
    }
}
