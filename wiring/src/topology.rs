//! The graph as the wiring rules see it: node names and edges, without the code behind them.

/// The name of the virtual node a finished branch goes to.
pub const END: &str = "END";

/// A graph reduced to what the wiring rules look at: node names and edges, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology<'a> {
    /// The graph's name, used in messages (the `#[graph]` module's name, or the builder's).
    pub graph: &'a str,
    /// Every node, in declaration order.
    pub nodes: Vec<NodeDecl<'a>>,
}

/// One node as the wiring rules see it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeDecl<'a> {
    /// The node's name.
    pub name: &'a str,
    /// An edge leads from START to this node.
    pub entry: bool,
    /// Targets of static edges, branches and routers ([`END`] included), as written.
    pub next: Vec<&'a str>,
    /// Targets that receive this node's Send payloads, as written.
    pub send: Vec<&'a str>,
    /// The `next` targets are alternatives chosen at run time (a branch or a router), not
    /// static edges. Only diagrams look at this.
    pub conditional: bool,
}

impl<'a> NodeDecl<'a> {
    /// A node with no edges yet.
    #[must_use]
    pub fn new(name: &'a str) -> Self {
        Self { name, ..Self::default() }
    }

    /// Marks the node as an entry (an edge from START).
    #[must_use]
    pub fn entry(mut self) -> Self {
        self.entry = true;
        self
    }

    /// Adds targets of static edges, branches or routers.
    #[must_use]
    pub fn next(mut self, targets: impl IntoIterator<Item = &'a str>) -> Self {
        self.next.extend(targets);
        self
    }

    /// Marks the `next` targets as alternatives chosen at run time.
    #[must_use]
    pub fn conditional(mut self) -> Self {
        self.conditional = true;
        self
    }

    /// Adds Send targets.
    #[must_use]
    pub fn send(mut self, targets: impl IntoIterator<Item = &'a str>) -> Self {
        self.send.extend(targets);
        self
    }
}
