//! `/assistants`: a graph's default assistant, and assistants created with their own
//! configuration, context and metadata.

use super::respond::{json, no_content, page};
use crate::app::App;
use crate::authz::gate::{Gate, Granted};
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::meta::{AssistantRow, contains};
use crate::wire::body::{Body, Query};
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

pub(super) async fn create(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Create>,
) -> Result<Response, ApiError> {
    app.graph(&body.graph_id)?;
    let raise = match body.if_exists.as_deref() {
        None | Some("raise") => true,
        Some("do_nothing") => false,
        Some(other) => {
            return Err(ApiError::Invalid(format!("`if_exists` must be raise or do_nothing, not {other:?}")));
        }
    };
    let mut metadata = match body.metadata {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(metadata)) => metadata,
        Some(other) => return Err(ApiError::Invalid(format!("`metadata` must be an object, not {other}"))),
    };
    let asked = json!({"assistant_id": body.assistant_id, "graph_id": body.graph_id, "metadata": metadata,
        "name": body.name, "if_exists": body.if_exists});
    let grant = gate.grant(Resource::Assistants, Action::Create, asked).await?;
    grant.stamp(&mut metadata);
    let id = body.assistant_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let row = AssistantRow {
        assistant_id: id.clone(),
        name: body.name.unwrap_or_else(|| body.graph_id.clone()),
        graph_id: body.graph_id,
        config: body.config.unwrap_or_else(|| json!({})),
        context: body.context.unwrap_or_else(|| json!({})),
        metadata: Value::Object(metadata),
        description: body.description,
    };
    let assistant = app.meta.create_assistant(row, raise).await?;
    // `do_nothing` finds an existing assistant: the caller sees it only if they may read it.
    let readable = gate.grant(Resource::Assistants, Action::Read, json!({"assistant_id": id})).await?;
    if !readable.filter().admits(&assistant["metadata"]) {
        return Err(ApiError::Conflict(format!("Assistant id {id} is taken: create the assistant under another id")));
    }
    Ok(json(&assistant))
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

/// The assistants `search` finds among those the caller may see.
async fn matching(app: &App, gate: &Gate, search: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let grant = gate.grant(Resource::Assistants, Action::Search, Value::Object(search.clone())).await?;
    let all = app.meta.assistants().await?;
    Ok(all.into_iter().filter(|a| grant.filter().admits(&a["metadata"]) && matches(a, search)).collect())
}

pub(super) async fn search(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &gate, &search).await?;
    page(found, &search, "created_at", &["assistant_id", "graph_id", "name", "created_at", "updated_at"])
}

pub(super) async fn count(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&matching(&app, &gate, &search).await?.len().into()))
}

pub(super) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Granted(grant): Granted,
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
    if let Value::Object(old) = &mut assistant["metadata"] {
        if let Some(Value::Object(new)) = patch.get("metadata") {
            old.extend(new.clone());
        }
        grant.stamp(old);
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
    gate: Gate,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let with_threads = Query::parse(raw.as_deref()).flag("delete_threads")?.unwrap_or(false);
    let assistant = app.assistant(&id).await?;
    let id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    if with_threads {
        // Only the threads the caller may delete go with it.
        let deletable = gate.grant(Resource::Threads, Action::Delete, json!({"assistant_id": id})).await?;
        for thread in app.meta.threads().await? {
            if thread["metadata"]["assistant_id"] == id.as_str()
                && deletable.filter().admits(&thread["metadata"])
                && let Some(thread_id) = thread["thread_id"].as_str()
            {
                super::threads::delete_thread(&app, thread_id).await?;
            }
        }
    }
    app.meta.delete_assistant(&id).await?;
    Ok(no_content())
}

pub(super) async fn schemas(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let assistant = app.assistant(&id).await?;
    let graph = app.graph(assistant["graph_id"].as_str().unwrap_or_default())?;
    let mut answer = graph.schemas().fields();
    answer.insert("graph_id".into(), assistant["graph_id"].clone());
    Ok(json(&Value::Object(answer)))
}
