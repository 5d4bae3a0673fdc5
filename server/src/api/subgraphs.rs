//! `/assistants/{id}/subgraphs` and `/assistants/{id}/subgraphs/{namespace}`: the schemas of the
//! graphs an assistant's subgraph nodes run, keyed by namespace as LangGraph keys them (the node's
//! name, then `|` and the names of nested subgraph nodes).

use super::respond::json;
use crate::app::App;
use crate::error::ApiError;
use crate::served::Served;
use crate::wire::body::Query;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use graphwright::Subgraph;
use serde_json::{Map, Value};
use std::sync::Arc;

/// What separates the node names of a nested subgraph's namespace (LangGraph's `NS_SEP`).
const SEPARATOR: char = '|';

/// `GET /assistants/{id}/subgraphs`: the graph's subgraph nodes, and with `recurse=true` theirs.
pub(super) async fn all(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    answer(&app, &id, None, raw.as_deref()).await
}

/// `GET /assistants/{id}/subgraphs/{namespace}`: the subgraph at `namespace` (a nested one only
/// with `recurse=true`, as LangGraph answers); an empty map when there is none.
pub(super) async fn at(
    State(app): State<Arc<App>>,
    Path((id, namespace)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    answer(&app, &id, Some(&namespace), raw.as_deref()).await
}

async fn answer(app: &App, id: &str, namespace: Option<&str>, raw: Option<&str>) -> Result<Response, ApiError> {
    let recurse = Query::parse(raw).flag("recurse")?.unwrap_or(false);
    let assistant = app.assistant(id).await?;
    let graph = app.graph(assistant["graph_id"].as_str().unwrap_or_default())?;
    let subgraphs = graph.subgraphs();
    let mut found = Vec::new();
    select(&subgraphs, namespace, recurse, "", &mut found);
    let answer: Map<String, Value> =
        found.into_iter().map(|(ns, subgraph)| (ns, schemas(graph.as_ref(), subgraph))).collect();
    Ok(json(&Value::Object(answer)))
}

/// The schemas of one subgraph, under the names `/assistants/{id}/schemas` gives them.
fn schemas(graph: &dyn Served, subgraph: &Subgraph) -> Value {
    Value::Object(graph.subgraph_schemas(subgraph).fields())
}

/// Adds to `found` the subgraphs among `subgraphs` (whose namespaces start with `prefix`) that a
/// request for `namespace` (every one when `None`) with `recurse` gets, as LangGraph's
/// `get_subgraphs` walks them: a namespace names one subgraph, whose own subgraphs are not
/// listed; without a namespace, each level's subgraphs are listed, and their subgraphs with
/// `recurse`; a nested namespace is followed only with `recurse`.
fn select<'a>(
    subgraphs: &'a [Subgraph],
    namespace: Option<&str>,
    recurse: bool,
    prefix: &str,
    found: &mut Vec<(String, &'a Subgraph)>,
) {
    for subgraph in subgraphs {
        let node = subgraph.node();
        let rest = match namespace {
            None => None,
            Some(namespace) if namespace == node => {
                found.push((format!("{prefix}{node}"), subgraph));
                continue;
            }
            Some(namespace) => match namespace.strip_prefix(node).and_then(|r| r.strip_prefix(SEPARATOR)) {
                Some(rest) => Some(rest),
                None => continue,
            },
        };
        if namespace.is_none() {
            found.push((format!("{prefix}{node}"), subgraph));
        }
        if recurse {
            select(subgraph.subgraphs(), rest, recurse, &format!("{prefix}{node}{SEPARATOR}"), found);
        }
    }
}
