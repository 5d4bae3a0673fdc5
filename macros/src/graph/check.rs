//! The compile-time checks of a `#[graph]` module. The wiring rules themselves live in
//! `graphwright-wiring`, shared with the runtime builder; this module maps each problem to
//! the token the user wrote, and adds the rules only the macro can see (parameters, options).

use super::ir::{GraphDef, NodeDef, Param, Targets};
use crate::ctxt::Ctxt;
use graphwright_wiring::{EdgeKind, NodeDecl, Problem, Topology};
use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::FnArg;

/// Runs every check, recording errors in `cx`.
pub(crate) fn check(cx: &mut Ctxt, def: &GraphDef, has_state: bool) {
    check_has_state(cx, def, has_state);
    for node in &def.nodes {
        check_route_option(cx, node);
        check_send_and_branch(cx, node);
        check_timeout_needs_async(cx, node);
        check_params(cx, node);
        check_subgraph(cx, node);
    }
    check_payload_targets(cx, def);
    check_starts(cx, def);
    if !cx.has_errors() {
        check_wiring(cx, def);
    }
}

/// Rule: a graph has a state, declared in the module or named with `state = Path`.
fn check_has_state(cx: &mut Ctxt, def: &GraphDef, has_state: bool) {
    if !has_state {
        let name = &def.module.ident;
        cx.error_spanned_by(
            name,
            format!("graph `{name}` has no state: add a `#[state]` struct or `#[graph(state = Path)]`"),
        );
    }
}

/// Rule: `route = f` belongs on a node with alternatives (`next = a | b`).
fn check_route_option(cx: &mut Ctxt, node: &NodeDef) {
    if let Some(route) = &node.route
        && !node.branches()
    {
        cx.error_spanned_by(
            route,
            format!(
                "node `{}` has no alternatives for `route` to choose from: write `next = a | b` with it",
                node.name()
            ),
        );
    }
}

/// Rule: a node either branches (`next = a | b`) or sends (`send = ..`), not both.
fn check_send_and_branch(cx: &mut Ctxt, node: &NodeDef) {
    if let (Some(send), true) = (&node.send, node.branches()) {
        cx.error_spanned_by(
            &send.names[0],
            format!("node `{}` both branches and sends: split it, or send from a node with static edges", node.name()),
        );
    }
}

/// Rule: a `subgraph` node is a plain fn without parameters that returns the graph; it gives
/// back an update and follows static edges, a router, or (with `next = a | b` and no router) the
/// target its subgraph names; it sends nothing.
fn check_subgraph(cx: &mut Ctxt, node: &NodeDef) {
    if node.subgraph.is_none() {
        return;
    }
    let name = node.name();
    let sig = &node.item.sig;
    if let Some(input) = sig.inputs.first() {
        cx.error_spanned_by(
            input,
            format!("subgraph node `{name}` takes no parameters: its fn only returns the graph that runs as the node"),
        );
    }
    if let Some(asyncness) = &sig.asyncness {
        cx.error_spanned_by(
            asyncness,
            format!("subgraph node `{name}` is built once, when the graph is: drop `async`"),
        );
    }
    if matches!(sig.output, syn::ReturnType::Default) {
        cx.error_spanned_by(
            &sig.ident,
            format!("subgraph node `{name}` returns the graph it runs: `fn {name}() -> StateGraph<child::State>`"),
        );
    }
    if let Some(send) = &node.send {
        cx.error_spanned_by(&send.names[0], format!("subgraph node `{name}` cannot send: send from a node before it"));
    }
}

/// Rule: only an async node can be stopped by a timeout.
fn check_timeout_needs_async(cx: &mut Ctxt, node: &NodeDef) {
    if let (Some(timeout), false) = (&node.timeout, node.is_async()) {
        cx.error_spanned_by(
            timeout,
            format!(
                "node `{}` is sync, so a timeout could not stop it: make it `async fn` or drop `timeout`",
                node.name()
            ),
        );
    }
}

/// Rule: each of `&State` and `&Runtime<..>` is taken at most once.
fn check_params(cx: &mut Ctxt, node: &NodeDef) {
    let inputs = &node.item.sig.inputs;
    if inputs.len() != node.params.len() {
        return; // a parameter that is not injectable was reported already
    }
    let (mut state, mut runtime) = (false, false);
    for (input, param) in inputs.iter().zip(&node.params) {
        let seen = match param {
            Param::State => std::mem::replace(&mut state, true),
            Param::Runtime => std::mem::replace(&mut runtime, true),
            Param::Payload(_) => false,
        };
        if seen {
            let what = if matches!(param, Param::State) { "&State" } else { "&Runtime<..>" };
            cx.error_spanned_by(input, format!("a node takes `{what}` at most once: remove this parameter"));
        }
    }
}

/// Rules: a Send target takes its payload as `&P`; a node that takes a payload is reached only
/// by Sends (a static edge or a branch would start it without one).
fn check_payload_targets(cx: &mut Ctxt, def: &GraphDef) {
    let sent_to: Vec<String> = def
        .nodes
        .iter()
        .filter_map(|n| n.send.as_ref())
        .flat_map(|t| t.names.iter().map(ToString::to_string))
        .chain(sent_to(def))
        .collect();
    // A misspelt `send = ..` target is the wiring check's error; the node it meant to reach
    // would otherwise be reported too, as taking a payload nobody sends.
    let sends_resolve =
        sent_to.iter().all(|t| t == graphwright_wiring::END || def.nodes.iter().any(|n| n.name() == *t));
    for node in &def.nodes {
        let name = node.name();
        let payload_param = node.item.sig.inputs.first();
        match (node.payload(), sent_to.contains(&name)) {
            (Some(_), false) if sends_resolve => cx.error_spanned_by(
                payload_param,
                "this parameter can't be injected; expected `&State` or `&Runtime<..>` \
                 (only a node that another node sends to takes a payload `&P`)",
            ),
            (None, true) => cx.error_spanned_by(
                node.ident(),
                format!("node `{name}` is a `send` target, so its first parameter must be its payload `&P`"),
            ),
            _ => {}
        }
        if node.payload().is_some() {
            let pulled = def.nodes.iter().filter_map(|n| n.next.as_ref()).flat_map(|t| &t.names).find(|t| **t == name);
            if let Some(edge) = pulled {
                cx.error_spanned_by(
                    edge,
                    format!("node `{name}` takes a Send payload, so only `send = {name}` may lead to it"),
                );
            }
        }
    }
}

/// The rules of `#[start]` fns: one of `next` (with alternatives) or `send` (one target), names
/// that exist, a router that leads to nodes, a sync fn reading the state.
fn check_starts(cx: &mut Ctxt, def: &GraphDef) {
    let names: Vec<String> = def.nodes.iter().map(NodeDef::name).collect();
    let mut routers = 0;
    for start in &def.starts {
        let fn_name = &start.item.sig.ident;
        match (&start.next, &start.send) {
            (Some(_), Some(send)) => cx.error_spanned_by(
                &send.names[0],
                format!("`{fn_name}` both routes and sends from START: split it into two `#[start]` fns"),
            ),
            (None, None) => {
                cx.error_spanned_by(&start.attr, "say where a run starts: `next = a | b` or `send = worker`");
            }
            (Some(next), None) if !next.alternatives => cx.error_spanned_by(
                &next.names[0],
                format!("a start with one target is an entry: mark `{}` with `#[node(entry)]`", next.names[0]),
            ),
            (Some(_), None) => routers += 1,
            (None, Some(send)) if send.names.len() > 1 => {
                cx.error_spanned_by(&send.names[1], "a `#[start]` fn sends to one node: write one fn per target");
            }
            (None, Some(_)) => {}
        }
        if routers > 1 && start.next.is_some() {
            cx.error_spanned_by(fn_name, "a graph has one `#[start(next = ..)]` router: merge the two");
        }
        for target in start.next.iter().chain(&start.send).flat_map(|t| &t.names) {
            let name = target.to_string();
            if name == graphwright_wiring::END {
                cx.error_spanned_by(target, "a run cannot start at END: name the nodes it may start at");
            } else if !names.contains(&name) {
                let hint = graphwright_wiring::closest(&name, names.iter().map(String::as_str))
                    .map(|near| format!("; did you mean `{near}`?"))
                    .unwrap_or_default();
                cx.error_spanned_by(target, format!("no node named `{name}` in graph `{}`{hint}", def.module.ident));
            }
        }
        if start.item.sig.asyncness.is_some() {
            cx.error_spanned_by(
                start.item.sig.asyncness,
                "a `#[start]` fn decides where a run starts: make it a sync fn",
            );
        }
        if start.item.sig.inputs.len() != 1 || !matches!(start.item.sig.inputs.first(), Some(FnArg::Typed(_))) {
            cx.error_spanned_by(
                &start.item.sig.inputs,
                format!("`{fn_name}` takes the state: `{fn_name}(state: &State)`"),
            );
        }
    }
}

/// The nodes a run may start at through `#[start]` fns.
fn entries(def: &GraphDef) -> Vec<String> {
    def.starts
        .iter()
        .flat_map(|s| s.next.iter().chain(&s.send))
        .flat_map(|t| t.names.iter().map(ToString::to_string))
        .collect()
}

/// The nodes `#[start(send = ..)]` fns send to.
fn sent_to(def: &GraphDef) -> impl Iterator<Item = String> + '_ {
    def.starts.iter().filter_map(|s| s.send.as_ref()).flat_map(|t| t.names.iter().map(ToString::to_string))
}

/// The graph as the shared wiring rules see it, with every name as written.
pub(crate) fn topology<'a>(def: &'a GraphDef, names: &'a [String], targets: &'a [NodeTargets]) -> Topology<'a> {
    let started = entries(def);
    let nodes = def
        .nodes
        .iter()
        .zip(names)
        .zip(targets)
        .map(|((node, name), (next, send))| NodeDecl {
            name,
            entry: node.entry || started.contains(name),
            next: next.iter().map(String::as_str).collect(),
            send: send.iter().map(String::as_str).collect(),
            conditional: node.branches(),
        })
        .collect();
    Topology { graph: "", nodes }
}

/// One node's `next` and `send` targets, as strings.
pub(crate) type NodeTargets = (Vec<String>, Vec<String>);

/// The names each node's `next` and `send` lists hold, as strings.
pub(crate) fn target_names(def: &GraphDef) -> (Vec<String>, Vec<NodeTargets>) {
    let list =
        |t: &Option<Targets>| t.as_ref().map(|t| t.names.iter().map(ToString::to_string).collect()).unwrap_or_default();
    let names = def.nodes.iter().map(NodeDef::name).collect();
    let targets = def.nodes.iter().map(|n| (list(&n.next), list(&n.send))).collect();
    (names, targets)
}

/// The shared wiring rules, each problem reported under the token it is about.
fn check_wiring(cx: &mut Ctxt, def: &GraphDef) {
    let (names, targets) = target_names(def);
    let graph = def.module.ident.to_string();
    let mut topology = topology(def, &names, &targets);
    topology.graph = &graph;
    for problem in graphwright_wiring::check(&topology) {
        let tokens = problem_span(def, &problem);
        cx.error_spanned_by(tokens, &problem);
    }
}

/// The tokens a problem is about: a target as written, a node's name, or its whole attribute.
fn problem_span(def: &GraphDef, problem: &Problem) -> TokenStream {
    let node = |i: usize| &def.nodes[i];
    let target = |list: &Option<Targets>, i: usize, t: usize| {
        list.as_ref().map_or_else(|| node(i).attr.clone(), |list| list.names[t].to_token_stream())
    };
    match problem {
        Problem::NoEntry { .. } => def.module.ident.to_token_stream(),
        Problem::UnknownTarget { node: i, target: t, kind, .. } => match kind {
            EdgeKind::Next => target(&node(*i).next, *i, *t),
            EdgeKind::Send => target(&node(*i).send, *i, *t),
        },
        Problem::SendToEnd { node: i, target: t } => target(&node(*i).send, *i, *t),
        Problem::NoOutgoingEdge { node: i, .. } => node(*i).attr.clone(),
        other => other.node().map_or_else(|| def.module.ident.to_token_stream(), |i| node(i).ident().to_token_stream()),
    }
}
