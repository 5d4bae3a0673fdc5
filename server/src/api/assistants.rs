//! `/assistants`: a graph's default assistant, and assistants created with their own
//! configuration, context and metadata.

use super::respond::{json, no_content, page};
use crate::app::App;
use crate::error::ApiError;
use crate::meta::{AssistantRow, contains};
use crate::wire::body::{Body, Query};
use crate::wire::names::{WIRE_END, WIRE_START, node_to_wire};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[derive(Deserialize)]
pub(super) struct Create {
    graph_id: String,
    #[serde(default)]
    config: Option<Value>,
    #[serde(default)]
    context: Option<Value>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    assistant_id: Option<String>,
    #[serde(default)]
    if_exists: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
}

pub(super) async fn create(State(app): State<Arc<App>>, Body(body): Body<Create>) -> Result<Response, ApiError> {
    app.graph(&body.graph_id)?;
    let raise = match body.if_exists.as_deref() {
        None | Some("raise") => true,
        Some("do_nothing") => false,
        Some(other) => {
            return Err(ApiError::Invalid(format!("`if_exists` must be raise or do_nothing, not {other:?}")));
        }
    };
    let id = body.assistant_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let row = AssistantRow {
        assistant_id: id.clone(),
        name: body.name.unwrap_or_else(|| body.graph_id.clone()),
        graph_id: body.graph_id,
        config: body.config.unwrap_or_else(|| json!({})),
        context: body.context.unwrap_or_else(|| json!({})),
        metadata: body.metadata.unwrap_or_else(|| json!({})),
        description: body.description,
    };
    Ok(json(&app.meta.create_assistant(row, raise).await?))
}

pub(super) async fn get(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(json(&app.assistant(&id).await?))
}

fn matches(assistant: &Value, search: &Map<String, Value>) -> bool {
    let metadata = search.get("metadata").and_then(Value::as_object);
    metadata.is_none_or(|m| contains(&assistant["metadata"], m))
        && search.get("graph_id").and_then(Value::as_str).is_none_or(|g| assistant["graph_id"] == g)
        && search
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(|n| assistant["name"].as_str().is_some_and(|name| name.contains(n)))
}

async fn matching(app: &App, search: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let all = app.meta.assistants().await?;
    Ok(all.into_iter().filter(|a| matches(a, search)).collect())
}

pub(super) async fn search(
    State(app): State<Arc<App>>,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &search).await?;
    page(found, &search, "created_at", &["assistant_id", "graph_id", "name", "created_at", "updated_at"])
}

pub(super) async fn count(
    State(app): State<Arc<App>>,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&matching(&app, &search).await?.len().into()))
}

pub(super) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(patch): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let mut assistant = app.assistant(&id).await?;
    if let Some(graph_id) = patch.get("graph_id").and_then(Value::as_str) {
        app.graph(graph_id)?;
    }
    for key in ["graph_id", "config", "context", "name", "description"] {
        if let Some(value) = patch.get(key).filter(|v| !v.is_null()) {
            assistant[key] = value.clone();
        }
    }
    if let (Some(Value::Object(new)), Value::Object(old)) = (patch.get("metadata"), &mut assistant["metadata"]) {
        old.extend(new.clone());
    }
    let id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    let updated = app.meta.update_assistant(&id, assistant).await?;
    Ok(json(&updated.unwrap_or(Value::Null)))
}

/// Deletes an assistant; with `?delete_threads=true`, first the threads whose metadata names it
/// (those its runs ran on), as LangGraph's server does.
pub(super) async fn delete(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let with_threads = Query::parse(raw.as_deref()).flag("delete_threads")?.unwrap_or(false);
    let assistant = app.assistant(&id).await?;
    let id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    if with_threads {
        for thread in app.meta.threads().await? {
            if thread["metadata"]["assistant_id"] == id.as_str()
                && let Some(thread_id) = thread["thread_id"].as_str()
            {
                super::threads::delete_thread(&app, thread_id).await?;
            }
        }
    }
    app.meta.delete_assistant(&id).await?;
    Ok(no_content())
}

pub(super) async fn graph(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let assistant = app.assistant(&id).await?;
    let drawing = app.graph(assistant["graph_id"].as_str().unwrap_or_default())?.drawing();
    let mut nodes = vec![json!({"id": WIRE_START, "type": "schema", "data": WIRE_START})];
    nodes.extend(drawing.nodes.iter().map(|n| {
        let subgraph = drawing.subgraphs.contains(n);
        json!({"id": n, "type": "runnable", "data": {"id": ["graphwright", n], "name": n}, "metadata": {"subgraph": subgraph}})
    }));
    nodes.push(json!({"id": WIRE_END, "type": "schema", "data": WIRE_END}));
    let edges: Vec<Value> = drawing
        .edges
        .iter()
        .map(|e| json!({"source": node_to_wire(&e.source), "target": node_to_wire(&e.target), "conditional": e.conditional}))
        .collect();
    Ok(json(&json!({"nodes": nodes, "edges": edges})))
}

pub(super) async fn schemas(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let assistant = app.assistant(&id).await?;
    let graph = app.graph(assistant["graph_id"].as_str().unwrap_or_default())?;
    let mut answer = graph.schemas().fields();
    answer.insert("graph_id".into(), assistant["graph_id"].clone());
    Ok(json(&Value::Object(answer)))
}
