//! `GET /assistants/{id}/graph`: the nodes and edges of an assistant's graph, as LangGraph's
//! `get_graph()` writes them. With `xray` (`true`, or how many levels down), a subgraph node is
//! drawn as the graph it runs: its nodes named `node:inner` (`node:inner:deeper` further down),
//! reached by the edges that reach the subgraph node and left by those that leave it.

use super::respond::json;
use crate::app::App;
use crate::error::ApiError;
use crate::wire::body::Query;
use crate::wire::names::{WIRE_END, WIRE_START};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use graphwright::{Drawing, END, START, Subgraph};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;

/// What separates the node names of a node drawn inside a subgraph node (LangGraph's).
const SEPARATOR: &str = ":";

/// `GET /assistants/{id}/graph`.
pub(super) async fn get(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let depth = xray(&Query::parse(raw.as_deref()))?;
    let assistant = app.assistant(&id).await?;
    let graph = app.graph(assistant["graph_id"].as_str().unwrap_or_default())?;
    let mut nodes = vec![json!({"id": WIRE_START, "type": "schema", "data": WIRE_START})];
    let edges = level(&graph.drawing(), &graph.subgraphs(), "", depth, &mut nodes);
    nodes.push(json!({"id": WIRE_END, "type": "schema", "data": WIRE_END}));
    let edges: Vec<Value> = edges
        .into_iter()
        .map(|e| json!({"source": e.source.wire(), "target": e.target.wire(), "conditional": e.conditional}))
        .collect();
    Ok(json(&json!({"nodes": nodes, "edges": edges})))
}

/// How many levels of subgraphs `xray` asks to draw: none without it, all with `true`.
fn xray(query: &Query) -> Result<u32, ApiError> {
    match query.get("xray") {
        None | Some("false" | "False") => Ok(0),
        Some("true" | "True") => Ok(u32::MAX),
        Some(depth) => depth.parse().map_err(|_| {
            ApiError::Invalid(format!(
                "`xray` must be true, false or how many levels of subgraphs to draw, not {depth:?}"
            ))
        }),
    }
}

/// An end of an edge: the graph's start or end, or a node, by the id clients see.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Point {
    Start,
    End,
    Node(String),
}

impl Point {
    fn wire(&self) -> &str {
        match self {
            Self::Start => WIRE_START,
            Self::End => WIRE_END,
            Self::Node(id) => id,
        }
    }
}

#[derive(Debug)]
struct Edge {
    source: Point,
    target: Point,
    conditional: bool,
}

/// Draws one graph whose node ids start with `prefix`, its subgraph nodes expanded `depth`
/// levels down: adds its nodes to `nodes` and returns its edges, from its start and to its end.
fn level(drawing: &Drawing, subgraphs: &[Subgraph], prefix: &str, depth: u32, nodes: &mut Vec<Value>) -> Vec<Edge> {
    let mut edges = Vec::new();
    // What an edge into each node reaches, and what an edge out of it leaves from: the node
    // itself, or the first and last nodes of the subgraph drawn in its place (each with whether
    // that part of the way is taken only sometimes).
    let mut entries: HashMap<&str, Vec<(String, bool)>> = HashMap::new();
    let mut exits: HashMap<&str, Vec<(String, bool)>> = HashMap::new();
    for name in &drawing.nodes {
        let id = format!("{prefix}{name}");
        let child = subgraphs.iter().find(|s| s.node() == name).filter(|_| depth > 0);
        let Some(child) = child else {
            let subgraph = drawing.subgraphs.contains(name);
            nodes.push(json!({"id": id, "type": "runnable", "data": {"id": ["graphwright", name], "name": name},
                "metadata": {"subgraph": subgraph}}));
            entries.insert(name, vec![(id.clone(), false)]);
            exits.insert(name, vec![(id, false)]);
            continue;
        };
        let inner = level(child.drawing(), child.subgraphs(), &format!("{id}{SEPARATOR}"), depth - 1, nodes);
        let (ins, outs) = (entries.entry(name).or_default(), exits.entry(name).or_default());
        for edge in inner {
            match (edge.source, edge.target) {
                (Point::Start, Point::Node(to)) => ins.push((to, edge.conditional)),
                (Point::Node(from), Point::End) => outs.push((from, edge.conditional)),
                (source @ Point::Node(_), target @ Point::Node(_)) => {
                    edges.push(Edge { source, target, conditional: edge.conditional });
                }
                // A subgraph that may end before any of its nodes runs: the way through it
                // has no node to draw.
                _ => {}
            }
        }
    }
    let none = Vec::new();
    for edge in &drawing.edges {
        let sources = match edge.source.as_str() {
            START => vec![(Point::Start, false)],
            name => exits.get(name).unwrap_or(&none).iter().map(|(id, c)| (Point::Node(id.clone()), *c)).collect(),
        };
        let targets = match edge.target.as_str() {
            END => vec![(Point::End, false)],
            name => entries.get(name).unwrap_or(&none).iter().map(|(id, c)| (Point::Node(id.clone()), *c)).collect(),
        };
        for (source, leaves) in &sources {
            for (target, reaches) in &targets {
                let conditional = edge.conditional || *leaves || *reaches;
                edges.push(Edge { source: source.clone(), target: target.clone(), conditional });
            }
        }
    }
    edges
}

#[cfg(test)]
mod tests {
    use super::{Query, xray};

    #[test]
    fn xray_takes_a_flag_or_a_depth() {
        let depth = |raw: &str| xray(&Query::parse(Some(raw))).ok();
        assert_eq!(depth(""), Some(0));
        assert_eq!(depth("xray=false"), Some(0));
        assert_eq!(depth("xray=true"), Some(u32::MAX));
        assert_eq!(depth("xray=2"), Some(2));
        assert_eq!(depth("xray=-1"), None);
        assert_eq!(depth("xray=deep"), None);
    }
}
