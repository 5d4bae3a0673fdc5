//! Compiling a builder: its wiring checked (names, shapes, cache policies, then the wiring
//! rules shared with the `#[graph]` macro) and its edges resolved to indices.

use super::builder::StateGraph;
use super::compiled::CompiledGraph;
use super::inner::{CompiledNode, Inner, JoinSpec, LinkedRouter, Router, Start, Target};
use super::node_spec::{PayloadType, Shape};
use crate::checkpoint::MemorySaver;
use crate::node::{END, START};
use crate::policy::CachePolicy;
use crate::state::State;
use graphwright_wiring::{NodeDecl, Topology};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

impl<S: State, C: Send + Sync + 'static> StateGraph<S, C> {
    /// The graph as the wiring rules see it.
    pub(super) fn topology(&self) -> Topology<'_> {
        let mut nodes: Vec<NodeDecl<'_>> = self.nodes.iter().map(|e| NodeDecl::new(&e.name)).collect();
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().rev().map(|(i, e)| (&*e.name, i)).collect();
        let position = |name: &str| index.get(name).copied();
        for (from, to) in &self.edges {
            if from == START {
                if let Some(i) = position(to) {
                    nodes[i].entry = true;
                }
            } else if let Some(i) = position(from) {
                nodes[i].next.push(to);
            }
        }
        for (i, entry) in self.nodes.iter().enumerate() {
            if let Shape::Branch { targets, .. } = entry.spec.shape {
                nodes[i].next.extend(targets.iter().copied());
            }
        }
        for (from, router) in &self.routers {
            if from == START {
                for target in &router.targets {
                    if let Some(i) = position(target) {
                        nodes[i].entry = true;
                    }
                }
            } else if let Some(i) = position(from) {
                nodes[i].next.extend(router.targets.iter().map(|t| &**t));
            }
        }
        for (to, _, _) in &self.start_sends {
            if let Some(i) = position(to) {
                nodes[i].entry = true;
            }
        }
        for (from, to) in &self.sends {
            if let Some(i) = position(from) {
                nodes[i].send.push(to);
            }
        }
        for (sources, target) in &self.joins {
            for source in sources {
                if let Some(i) = position(source) {
                    nodes[i].next.push(target);
                }
            }
        }
        Topology { graph: &self.name, nodes }
    }

    /// Builder-only rules about edge endpoints: names the wiring rules cannot see.
    pub(super) fn check_endpoints(&self, index: &HashMap<String, usize>, invalid: &mut Vec<String>) {
        for (from, to) in &self.edges {
            if from == END {
                invalid.push(format!("an edge cannot start at END (edge END -> `{to}`)"));
            } else if to == START {
                invalid.push(format!("an edge cannot lead to START (edge `{from}` -> START)"));
            } else if from == START && to == END {
                invalid.push("an edge from START must lead to a node, not to END".to_owned());
            } else if from == START && !index.contains_key(to.as_str()) {
                // An entry edge belongs to no node, so the wiring rules cannot report it.
                let near = graphwright_wiring::closest(to, self.nodes.iter().map(|e| &*e.name));
                let hint = near.map(|n| format!("; did you mean `{n}`?")).unwrap_or_default();
                invalid.push(format!("edge START -> `{to}` leads to no node named `{to}`{hint}"));
            } else if from != START && !index.contains_key(from.as_str()) {
                invalid.push(format!("edge `{from}` -> `{to}` starts at no node named `{from}`"));
            }
        }
        for name in self.policies.keys().filter(|name| !index.contains_key(name.as_str())) {
            invalid.push(format!("`policy` names no node `{name}`"));
        }
        for name in self.interrupt_before.iter().chain(&self.interrupt_after) {
            if !index.contains_key(name.as_str()) {
                invalid.push(format!("a breakpoint names no node `{name}`"));
            }
        }
        let routers = self.routers.iter().map(|(f, _)| f).filter(|f| *f != START);
        let sources = self.sends.iter().map(|(f, _)| f).chain(routers);
        for from in sources.chain(self.joins.iter().flat_map(|(s, _)| s)) {
            if !index.contains_key(from.as_str()) {
                invalid.push(format!("no node named `{from}` to start an edge from"));
            }
        }
        for (_, router) in self.routers.iter().filter(|(f, _)| f == START) {
            if router.targets.iter().any(|t| t == END) {
                invalid.push("a router from START must lead to nodes, not to END".to_owned());
            }
            for target in router.targets.iter().filter(|t| *t != END && !index.contains_key(&***t)) {
                let near = graphwright_wiring::closest(target, self.nodes.iter().map(|e| &*e.name));
                let hint = near.map(|n| format!("; did you mean `{n}`?")).unwrap_or_default();
                invalid.push(format!("the router from START leads to no node named `{target}`{hint}"));
            }
        }
        for (to, payload, _) in &self.start_sends {
            match index.get(to.as_str()).map(|&i| self.nodes[i].spec.takes) {
                None => invalid.push(format!("`add_start_send` sends to no node named `{to}`")),
                Some(takes) if takes != Some(*payload) => invalid.push(format!(
                    "START sends `{}` to `{to}`, which does not take it as its payload \
                     (add `{to}` with `add_payload_node` and a `&{}` parameter)",
                    payload.name, payload.name
                )),
                Some(_) => {}
            }
        }
    }

    /// Builder-only rules that the macro leaves to rustc's type checks.
    pub(super) fn check_shapes(&self, index: &HashMap<String, usize>, invalid: &mut Vec<String>) {
        // Every list indexed by node once, so the checks stay linear in the graph's size.
        let mut pulled: HashSet<&str> = HashSet::new();
        for (_, to) in &self.edges {
            pulled.insert(to);
        }
        pulled.extend(self.joins.iter().map(|(_, t)| t.as_str()));
        for entry in &self.nodes {
            if let Shape::Branch { targets, .. } = entry.spec.shape {
                pulled.extend(targets.iter().copied());
            }
        }
        for (_, router) in &self.routers {
            pulled.extend(router.targets.iter().map(|t| &**t));
        }
        let mut sends: HashMap<&str, Vec<&str>> = HashMap::new();
        for (from, to) in &self.sends {
            sends.entry(from).or_default().push(to);
        }
        for entry in &self.nodes {
            let name = &*entry.name;
            let sends = sends.get(name).map_or(&[][..], Vec::as_slice);
            match &entry.spec.shape {
                Shape::Send { payloads } => {
                    if sends.len() != payloads.len() {
                        invalid.push(format!(
                            "node `{name}` returns Send payloads for {} target(s) but has {} `add_send` edge(s)",
                            payloads.len(),
                            sends.len()
                        ));
                    }
                    for (target, payload) in sends.iter().zip(payloads) {
                        let takes = index.get(*target).and_then(|&t| self.nodes[t].spec.takes);
                        if takes.is_some_and(|t| t != *payload) || (index.contains_key(*target) && takes.is_none()) {
                            invalid.push(format!(
                                "node `{name}` sends `{}` to `{target}`, which does not take it as its payload \
                                 (add `{target}` with `add_payload_node` and a `&{}` parameter)",
                                payload.name, payload.name
                            ));
                        }
                    }
                }
                _ if !sends.is_empty() => invalid
                    .push(format!("node `{name}` has a Send edge but returns no payloads: make it return `Vec<P>`")),
                _ => {}
            }
            if self.policies.get(name).is_some_and(|p| p.timeout.is_some()) && !entry.spec.is_async() {
                invalid.push(format!(
                    "node `{name}` is sync, so a timeout could not stop it: make it `async` or drop the timeout"
                ));
            }
            if let Some(policy) = self.policies.get(name).and_then(|p| p.cache.as_ref()) {
                self.check_cache(name, entry.spec.takes.as_ref(), policy, invalid);
            }
            if entry.spec.takes.is_some() && pulled.contains(name) {
                invalid.push(format!("node `{name}` takes a Send payload, so only `add_send` edges may lead to it"));
            }
        }
    }

    /// A cache policy needs the graph's cache, and a key function of the node's input type.
    pub(super) fn check_cache(
        &self,
        name: &str,
        takes: Option<&PayloadType>,
        policy: &CachePolicy,
        invalid: &mut Vec<String>,
    ) {
        if self.cache.is_none() {
            invalid.push(format!(
                "node `{name}` has a cache policy but the graph has no cache: give it one with \
                 `.cache(InMemoryCache::new())` (or a `SqliteCache` or `PostgresCache`) on the builder"
            ));
        }
        let Some(key) = &policy.key else { return };
        let (input, input_name) = takes.map_or((TypeId::of::<S>(), std::any::type_name::<S>()), |t| (t.id, t.name));
        if key.input != input {
            invalid.push(format!(
                "the cache key of node `{name}` reads `&{}`, but the node's input is `{input_name}`: \
                 make the key function take `&{input_name}`",
                key.input_name
            ));
        }
    }

    /// Resolves names to indices. Runs only on a graph that passed every check.
    pub(super) fn link(self, index: &HashMap<String, usize>) -> CompiledGraph<S, C> {
        let target = |name: &str| if name == END { Target::END } else { Target(index[name] as u32) };
        let mut joins: Vec<JoinSpec> = Vec::new();
        let mut join_inputs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); self.nodes.len()];
        for (sources, to) in &self.joins {
            let join = joins.len() as u32;
            joins.push(JoinSpec { target: target(to), sources: sources.len() as u32 });
            for (slot, source) in sources.iter().enumerate() {
                join_inputs[index[source.as_str()]].push((join, slot as u32));
            }
        }
        let entries: Vec<u32> = {
            let mut e: Vec<u32> =
                self.edges.iter().filter(|(f, _)| f == START).map(|(_, t)| index[t.as_str()] as u32).collect();
            e.sort_unstable();
            e.dedup();
            e
        };
        let link_router = |router: Router<S>| LinkedRouter {
            pick: router.pick,
            targets: router.targets.iter().map(|t| target(t)).collect(),
        };
        let mut routers_by_node: HashMap<String, Vec<LinkedRouter<S>>> = HashMap::new();
        for (from, router) in self.routers {
            routers_by_node.entry(from).or_default().push(link_router(router));
        }
        let start = Start {
            entries,
            routers: routers_by_node.remove(START).unwrap_or_default().into(),
            sends: self.start_sends.into_iter().map(|(to, _, make)| (make, index[to.as_str()] as u32)).collect(),
        };
        let mut policies = self.policies;
        let mut edges_by_node: HashMap<&str, Vec<Target>> = HashMap::new();
        for (from, to) in &self.edges {
            edges_by_node.entry(from.as_str()).or_default().push(target(to));
        }
        let mut sends_by_node: HashMap<&str, Vec<u32>> = HashMap::new();
        for (from, to) in &self.sends {
            sends_by_node.entry(from.as_str()).or_default().push(index[to.as_str()] as u32);
        }
        let nodes: Vec<CompiledNode<S, C>> = self
            .nodes
            .into_iter()
            .enumerate()
            .map(|(i, entry)| {
                let name = &*entry.name;
                let routes = match &entry.spec.shape {
                    Shape::Branch { targets, .. } => targets.iter().map(|t| target(t)).collect(),
                    _ => Box::default(),
                };
                CompiledNode {
                    name: entry.name.clone(),
                    action: entry.spec.action,
                    edges: edges_by_node.remove(name).unwrap_or_default().into(),
                    routes,
                    routers: routers_by_node.remove(name).unwrap_or_default().into(),
                    sends: sends_by_node.remove(name).unwrap_or_default().into(),
                    joins: std::mem::take(&mut join_inputs[i]).into(),
                    policy: policies.remove(name).unwrap_or_default(),
                    takes: entry.spec.takes,
                    interrupt_before: self.interrupt_before.iter().any(|n| n == name),
                    interrupt_after: self.interrupt_after.iter().any(|n| n == name),
                    subgraph: entry.spec.subgraph,
                }
            })
            .collect();
        let node_names: Arc<[Arc<str>]> = nodes.iter().map(|n| n.name.clone()).collect();
        let runs_in_place = nodes.iter().all(|n| {
            n.action.never_waits()
                && n.policy.retry.is_empty()
                && n.policy.timeout.is_none()
                && n.policy.cache.is_none()
        });
        CompiledGraph::new(Inner {
            name: self.name,
            node_index: node_names.iter().enumerate().map(|(i, n)| (Arc::clone(n), i as u32)).collect(),
            node_names,
            nodes,
            start,
            joins,
            recursion_limit: self.recursion_limit,
            runs_in_place,
            default_context: self.default_context,
            saver: self.saver.unwrap_or_else(|| Arc::new(MemorySaver::new())),
            store: self.store,
            cache: self.cache,
            busy: Mutex::default(),
        })
    }
}
