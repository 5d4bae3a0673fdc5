//! The wiring rules of a graphwright graph.
//!
//! The `#[graph]` macro checks a graph while it compiles; the runtime's `StateGraph::compile`
//! checks a graph built at run time. Both describe the graph as a [`Topology`] and call
//! [`check`], so they accept and reject exactly the same graphs, with the same words. The macro
//! turns each [`Problem`] into a `compile_error!` under the user's token; the builder returns it
//! inside a `BuildError`.
//!
//! ```
//! use graphwright_wiring::{check, NodeDecl, Problem, Topology, END};
//!
//! let topology = Topology {
//!     graph: "support",
//!     nodes: vec![
//!         NodeDecl::new("planner").entry().next(["generator", "tools"]),
//!         NodeDecl::new("tools").next(["planer"]),
//!         NodeDecl::new("generator").next([END]),
//!     ],
//! };
//! let problems = check(&topology);
//! assert_eq!(
//!     problems[0].to_string(),
//!     "no node named `planer` in graph `support`; did you mean `planner`?"
//! );
//! assert!(matches!(problems[0], Problem::UnknownTarget { node: 1, target: 0, .. }));
//! ```

mod mermaid;
mod problem;
mod rules;
mod suggest;
mod topology;

pub use mermaid::mermaid;
pub use problem::{EdgeKind, Problem};
pub use rules::check;
pub use suggest::{RESERVED, closest};
pub use topology::{END, NodeDecl, Topology};
