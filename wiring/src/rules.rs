//! The wiring rules, one function per rule, each stated above it.

use crate::problem::{EdgeKind, Problem};
use crate::suggest::{RESERVED, closest};
use crate::{END, Topology};
use std::collections::HashMap;

/// Checks every wiring rule and returns every problem found, in a stable order: per-node
/// problems in declaration order first, then whole-graph problems. Reachability rules run only
/// when every edge names a real node, so one typo gives one error, not a cascade.
#[must_use]
pub fn check(topology: &Topology<'_>) -> Vec<Problem> {
    let mut problems = Vec::new();
    let index = check_unique_names(topology, &mut problems);
    check_reserved_names(topology, &mut problems);
    check_targets_exist(topology, &index, &mut problems);
    check_outgoing_edges(topology, &mut problems);
    check_has_entry(topology, &mut problems);
    if problems.is_empty() {
        let successors = successors(topology, &index);
        check_reachable(topology, &successors, &mut problems);
        if problems.is_empty() {
            check_reaches_end(topology, &successors, &mut problems);
        }
    }
    problems
}

/// Rule: node names are unique within a graph. Edges resolve to the first declaration.
fn check_unique_names<'a>(topology: &Topology<'a>, problems: &mut Vec<Problem>) -> HashMap<&'a str, usize> {
    let mut index = HashMap::with_capacity(topology.nodes.len());
    for (i, node) in topology.nodes.iter().enumerate() {
        if index.contains_key(node.name) {
            problems.push(Problem::DuplicateNode {
                graph: topology.graph.to_owned(),
                node: i,
                name: node.name.to_owned(),
            });
        } else {
            index.insert(node.name, i);
        }
    }
    index
}

/// Rule: START and END (and their internal spellings) are not node names.
fn check_reserved_names(topology: &Topology<'_>, problems: &mut Vec<Problem>) {
    for (i, node) in topology.nodes.iter().enumerate() {
        if RESERVED.contains(&node.name) {
            problems.push(Problem::ReservedName { node: i, name: node.name.to_owned() });
        }
    }
}

/// Rule: every edge and Send target names a node of the graph (END only as an edge target).
fn check_targets_exist(topology: &Topology<'_>, index: &HashMap<&str, usize>, problems: &mut Vec<Problem>) {
    let names = || topology.nodes.iter().map(|n| n.name);
    for (i, node) in topology.nodes.iter().enumerate() {
        let lists = [(EdgeKind::Next, &node.next), (EdgeKind::Send, &node.send)];
        for (kind, targets) in lists {
            for (t, target) in targets.iter().enumerate() {
                if *target == END {
                    if kind == EdgeKind::Send {
                        problems.push(Problem::SendToEnd { node: i, target: t });
                    }
                    continue;
                }
                if index.contains_key(target) {
                    continue;
                }
                let suggestion = match kind {
                    EdgeKind::Next => closest(target, names().chain([END])),
                    EdgeKind::Send => closest(target, names()),
                };
                problems.push(Problem::UnknownTarget {
                    graph: topology.graph.to_owned(),
                    node: i,
                    target: t,
                    kind,
                    name: (*target).to_owned(),
                    suggestion: suggestion.map(str::to_owned),
                });
            }
        }
    }
}

/// Rule: every node says where the run goes after it (`next`, possibly `END`, or `send`).
fn check_outgoing_edges(topology: &Topology<'_>, problems: &mut Vec<Problem>) {
    for (i, node) in topology.nodes.iter().enumerate() {
        if node.next.is_empty() && node.send.is_empty() {
            problems.push(Problem::NoOutgoingEdge { node: i, name: node.name.to_owned() });
        }
    }
}

/// Rule: at least one node is an entry.
fn check_has_entry(topology: &Topology<'_>, problems: &mut Vec<Problem>) {
    if !topology.nodes.is_empty() && !topology.nodes.iter().any(|n| n.entry) {
        problems.push(Problem::NoEntry { graph: topology.graph.to_owned() });
    }
}

/// Where each node may lead: node indices, with `None` for END.
fn successors(topology: &Topology<'_>, index: &HashMap<&str, usize>) -> Vec<Vec<Option<usize>>> {
    topology
        .nodes
        .iter()
        .map(|node| {
            node.next
                .iter()
                .chain(&node.send)
                .map(|target| if *target == END { None } else { index.get(target).copied() })
                .collect()
        })
        .collect()
}

/// Rule: every node can be reached from an entry.
fn check_reachable(topology: &Topology<'_>, successors: &[Vec<Option<usize>>], problems: &mut Vec<Problem>) {
    let mut seen = vec![false; topology.nodes.len()];
    let mut stack: Vec<usize> = (0..topology.nodes.len()).filter(|&i| topology.nodes[i].entry).collect();
    for &i in &stack {
        seen[i] = true;
    }
    while let Some(i) = stack.pop() {
        for &next in successors[i].iter().flatten() {
            if !seen[next] {
                seen[next] = true;
                stack.push(next);
            }
        }
    }
    for (i, node) in topology.nodes.iter().enumerate() {
        if !seen[i] {
            problems.push(Problem::Unreachable { node: i, name: node.name.to_owned() });
        }
    }
}

/// Rule: from every node some path leads to END, so no run is trapped in a loop by its wiring.
/// A node with `send` counts as a way out: when it sends no payload its branch ends there.
/// (A run may still loop at run time; the recursion limit bounds that.)
fn check_reaches_end(topology: &Topology<'_>, successors: &[Vec<Option<usize>>], problems: &mut Vec<Problem>) {
    let n = topology.nodes.len();
    let mut predecessors = vec![Vec::new(); n];
    let mut ends = vec![false; n];
    let mut queue = Vec::new();
    for (i, next) in successors.iter().enumerate() {
        for target in next {
            match target {
                Some(j) => predecessors[*j].push(i),
                None => {
                    if !ends[i] {
                        ends[i] = true;
                        queue.push(i);
                    }
                }
            }
        }
        if !topology.nodes[i].send.is_empty() && !ends[i] {
            ends[i] = true;
            queue.push(i);
        }
    }
    while let Some(i) = queue.pop() {
        for &p in &predecessors[i] {
            if !ends[p] {
                ends[p] = true;
                queue.push(p);
            }
        }
    }
    let trapped: Vec<usize> = (0..n).filter(|&i| !ends[i]).collect();
    if let Some(&first) = trapped.first() {
        problems.push(Problem::NeverEnds {
            node: first,
            name: topology.nodes[first].name.to_owned(),
            trapped: trapped.iter().map(|&i| topology.nodes[i].name.to_owned()).collect(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use crate::{END, NodeDecl, Problem, Topology};

    fn graph(nodes: Vec<NodeDecl<'static>>) -> Vec<String> {
        check(&Topology { graph: "g", nodes }).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn accepts_a_branching_loop_with_an_exit() {
        let problems = graph(vec![
            NodeDecl::new("planner").entry().next(["tools", END]),
            NodeDecl::new("tools").next(["planner"]),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn names_an_unknown_target_with_a_suggestion() {
        let problems = graph(vec![NodeDecl::new("planner").entry().next(["planer"])]);
        assert_eq!(problems, ["no node named `planer` in graph `g`; did you mean `planner`?"]);
    }

    #[test]
    fn suggests_end_for_a_misspelt_end() {
        let problems = graph(vec![NodeDecl::new("a").entry().next(["ENd"])]);
        assert_eq!(problems, ["no node named `ENd` in graph `g`; did you mean `END`?"]);
    }

    #[test]
    fn reports_a_missing_entry() {
        let problems = graph(vec![NodeDecl::new("a").next([END])]);
        assert_eq!(problems, ["graph `g` has no entry node: mark one with `#[node(entry)]`"]);
    }

    #[test]
    fn reports_an_orphan() {
        let problems = graph(vec![NodeDecl::new("a").entry().next([END]), NodeDecl::new("orphan").next([END])]);
        assert_eq!(problems, ["node `orphan` can never run: no edge leads to it"]);
    }

    #[test]
    fn reports_a_trap_once_with_its_members() {
        let problems = graph(vec![
            NodeDecl::new("start").entry().next(["a", END]),
            NodeDecl::new("a").next(["b"]),
            NodeDecl::new("b").next(["a"]),
        ]);
        assert_eq!(
            problems,
            [
                "from node `a` the graph can never reach END (it loops through `a`, `b`): add an edge or a branch that leads to END"
            ]
        );
    }

    #[test]
    fn a_node_that_sends_can_end_its_branch_by_sending_nothing() {
        let problems =
            graph(vec![NodeDecl::new("agent").entry().send(["tools"]), NodeDecl::new("tools").next(["agent"])]);
        assert!(problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn a_long_chain_is_checked_in_linear_time() {
        let names: Vec<String> = (0..20_000).map(|i| format!("n{i}")).collect();
        let mut nodes: Vec<NodeDecl<'_>> = names.iter().map(|n| NodeDecl::new(n)).collect();
        for i in 0..names.len() - 1 {
            nodes[i].next.push(&names[i + 1]);
        }
        nodes[0].entry = true;
        nodes.last_mut().unwrap().next.push(END);
        assert!(check(&Topology { graph: "g", nodes }).is_empty());
    }

    #[test]
    fn reports_a_node_without_edges() {
        let problems = graph(vec![NodeDecl::new("x").entry()]);
        assert_eq!(problems, ["node `x` has no outgoing edge: add `next = ...` or `next = END`"]);
    }

    #[test]
    fn send_targets_count_as_edges_and_must_exist() {
        assert!(
            graph(vec![NodeDecl::new("dispatch").entry().send(["worker"]), NodeDecl::new("worker").next([END]),])
                .is_empty()
        );
        let problems = check(&Topology {
            graph: "g",
            nodes: vec![NodeDecl::new("dispatch").entry().send(["wrker"]), NodeDecl::new("worker").next([END])],
        });
        assert!(matches!(&problems[0], Problem::UnknownTarget { suggestion: Some(s), .. } if s == "worker"));
        assert_eq!(problems.len(), 1, "the unknown target hides the reachability cascade: {problems:?}");
    }

    #[test]
    fn rejects_duplicates_and_reserved_names() {
        let problems = graph(vec![
            NodeDecl::new("a").entry().next([END]),
            NodeDecl::new("a").next([END]),
            NodeDecl::new("END").next([END]),
        ]);
        assert_eq!(
            problems,
            [
                "graph `g` already has a node named `a`: give each node its own name",
                "`END` is reserved for the virtual start and end of a graph: rename the node",
            ]
        );
    }

    #[test]
    fn rejects_end_as_a_send_target() {
        let problems = graph(vec![NodeDecl::new("a").entry().send([END])]);
        assert_eq!(problems, ["a Send payload needs a node to run it; END cannot be a `send` target"]);
    }
}
