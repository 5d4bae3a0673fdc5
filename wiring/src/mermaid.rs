//! A Mermaid flowchart of a graph, for docs and debugging.

use crate::{END, Topology};
use std::fmt::Write as _;

/// Renders `topology` as a Mermaid flowchart: solid arrows for static edges, dotted arrows for
/// branches and routers, labelled dotted arrows for Sends.
///
/// ```
/// use graphwright_wiring::{mermaid, NodeDecl, Topology, END};
///
/// let topology = Topology {
///     graph: "g",
///     nodes: vec![
///         NodeDecl::new("agent").entry().next(["tools", END]).conditional(),
///         NodeDecl::new("tools").next(["agent"]),
///     ],
/// };
/// assert_eq!(
///     mermaid(&topology),
///     "flowchart TD\n    __start__([START]) --> agent\n    agent -.-> tools\n    agent -.-> __end__\n    tools --> agent\n    __end__([END])\n"
/// );
/// ```
#[must_use]
pub fn mermaid(topology: &Topology<'_>) -> String {
    let mut out = String::from("flowchart TD\n");
    for node in topology.nodes.iter().filter(|n| n.entry) {
        let _ = writeln!(out, "    __start__([START]) --> {}", node.name);
    }
    for node in &topology.nodes {
        let arrow = if node.conditional { "-.->" } else { "-->" };
        for target in &node.next {
            let target = if *target == END { "__end__" } else { target };
            let _ = writeln!(out, "    {} {arrow} {target}", node.name);
        }
        for target in &node.send {
            let _ = writeln!(out, "    {} -. send .-> {target}", node.name);
        }
    }
    out.push_str("    __end__([END])\n");
    out
}
