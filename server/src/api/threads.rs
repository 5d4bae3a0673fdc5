//! `/threads`: create, read, search, edit and delete threads; their state and history.

use super::respond::{json, no_content, number, page};
use crate::app::App;
use crate::authz::gate::{Gate, Granted};
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::meta::contains;
use crate::runs::Cancel;
use crate::served::{Served, interrupts_by_task};
use crate::wire::body::{Body, Query};
use crate::wire::names::node_from_wire;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;

#[derive(Deserialize)]
pub(super) struct Create {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    if_exists: Option<String>,
    #[serde(default)]
    supersteps: Option<Vec<Superstep>>,
}

#[derive(Deserialize)]
struct Superstep {
    updates: Vec<SuperstepUpdate>,
}

#[derive(Deserialize)]
struct SuperstepUpdate {
    #[serde(default)]
    values: Value,
    #[serde(default)]
    as_node: Option<String>,
}

pub(super) async fn create(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Create>,
) -> Result<Response, ApiError> {
    let raise = match body.if_exists.as_deref() {
        None | Some("raise") => true,
        Some("do_nothing") => false,
        Some(other) => {
            return Err(ApiError::Invalid(format!("`if_exists` must be raise or do_nothing, not {other:?}")));
        }
    };
    let mut metadata = body.metadata.unwrap_or_default();
    let asked = json!({"thread_id": body.thread_id, "metadata": metadata, "if_exists": body.if_exists});
    let grant = gate.grant(Resource::Threads, Action::Create, asked).await?;
    grant.stamp(&mut metadata);
    let graph_id = metadata.get("graph_id").and_then(Value::as_str).map(str::to_owned);
    if let Some(graph_id) = &graph_id {
        app.graph(graph_id)?;
    }
    if body.supersteps.as_ref().is_some_and(|s| !s.is_empty()) && graph_id.is_none() {
        return Err(ApiError::BadRequest("`supersteps` need a graph: pass graph_id".into()));
    }
    let id = body.thread_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let (thread, inserted) = app.meta.create_thread(&id, Value::Object(metadata), graph_id.clone(), raise).await?;
    if let Some(found) = thread.as_ref().filter(|_| !inserted)
        && !grant.filter().admits(&found["metadata"])
    {
        // Someone else's: the id is taken, and nothing of their thread is shown.
        return Err(ApiError::Conflict(format!("Thread id {id} is taken: create the thread under another id")));
    }
    if let (true, Some(graph_id), Some(steps)) = (inserted, graph_id, body.supersteps) {
        let graph = Arc::clone(app.graph(&graph_id)?);
        for update in steps.into_iter().flat_map(|s| s.updates) {
            graph.update_state(&id, update.values, as_node(update.as_node), None).await?;
        }
        return Ok(json(&refresh(&app, &graph, &id).await?));
    }
    Ok(json(&thread.unwrap_or(Value::Null)))
}

/// `as_node` as graphwright names the node.
fn as_node(name: Option<String>) -> Option<String> {
    name.map(|name| node_from_wire(&name).to_owned())
}

/// Re-reads a thread's state into its record (after an update); the thread as it now is.
async fn refresh(app: &App, graph: &Arc<dyn Served>, id: &str) -> Result<Value, ApiError> {
    let state = graph.state(id, None).await?;
    let (values, interrupted, interrupts) = match &state {
        Some(s) => {
            let by_task = interrupts_by_task(s);
            (s["values"].clone(), !by_task.is_empty(), Value::Object(by_task))
        }
        None => (Value::Null, false, json!({})),
    };
    app.meta.refresh_thread(id, interrupted, values, interrupts).await
}

async fn thread(app: &App, id: &str) -> Result<Value, ApiError> {
    app.meta.thread(id).await?.ok_or_else(|| ApiError::thread_not_found(id))
}

pub(super) async fn get(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(json(&thread(&app, &id).await?))
}

pub(super) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Granted(grant): Granted,
    headers: HeaderMap,
    Body(patch): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let mut current = thread(&app, &id).await?;
    if let Value::Object(old) = &mut current["metadata"] {
        if let Some(Value::Object(new)) = patch.get("metadata") {
            old.extend(new.clone());
        }
        grant.stamp(old);
    }
    let metadata = current["metadata"].clone();
    let updated = app.meta.set_thread_metadata(&id, metadata).await?;
    let minimal = headers.get("prefer").and_then(|v| v.to_str().ok()).is_some_and(|p| p.contains("return=minimal"));
    Ok(if minimal { no_content() } else { json(&updated.unwrap_or(Value::Null)) })
}

pub(super) async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    thread(&app, &id).await?;
    delete_thread(&app, &id).await?;
    Ok(no_content())
}

/// Stops a thread's runs, then deletes its checkpoints, runs and record.
pub(super) async fn delete_thread(app: &App, id: &str) -> Result<(), ApiError> {
    for run in app.meta.open_runs(id).await? {
        if let Some(live) = app.follow(id, &run).await? {
            live.cancel(Cancel::Interrupt);
            live.done().await;
        }
    }
    app.saver.delete_thread(id).await.map_err(|e| ApiError::Storage(e.to_string()))?;
    app.meta.delete_thread(id).await?;
    Ok(())
}

#[derive(Deserialize)]
pub(super) struct Prune {
    thread_ids: Vec<String>,
    #[serde(default)]
    strategy: Option<String>,
}

/// Prunes threads: `delete` deletes them as `DELETE /threads/{id}` does; `keep_latest` keeps
/// each one's latest checkpoint (its state, pending tasks and interrupts) and deletes its
/// history, its subgraphs' included. Ids of no thread are skipped; the answer counts the threads
/// pruned. Under `keep_latest` a thread with a run in progress is a conflict, found before any
/// thread is pruned.
pub(super) async fn prune(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Prune>,
) -> Result<Response, ApiError> {
    let keep_latest = match body.strategy.as_deref() {
        None | Some("delete") => false,
        Some("keep_latest") => true,
        Some(other) => {
            return Err(ApiError::Invalid(format!("`strategy` must be delete or keep_latest, not {other:?}")));
        }
    };
    let grant = gate.grant(Resource::Threads, Action::Delete, json!({"thread_ids": body.thread_ids})).await?;
    let mut known = Vec::with_capacity(body.thread_ids.len());
    for id in &body.thread_ids {
        // Threads the caller may not see are skipped as unknown ones are.
        let Some(record) = app.meta.thread(id).await?.filter(|t| grant.filter().admits(&t["metadata"])) else {
            continue;
        };
        if keep_latest && record["status"] == "busy" {
            return Err(ApiError::Conflict(format!(
                "Thread {id} has a run in progress: prune its history once its runs have ended"
            )));
        }
        known.push(id);
    }
    for id in &known {
        if keep_latest {
            keep_latest_of(&app, id).await?;
        } else {
            delete_thread(&app, id).await?;
        }
    }
    Ok(json(&json!({ "pruned_count": known.len() })))
}

/// Deletes a thread's checkpoints but its latest, through the graph that wrote them.
async fn keep_latest_of(app: &App, id: &str) -> Result<(), ApiError> {
    // No graph: no run has written to the thread, so it has no history.
    let Some(Some(graph_id)) = app.meta.thread_graph(id).await? else { return Ok(()) };
    let graph = app.graphs.get(&graph_id).ok_or_else(|| {
        ApiError::BadRequest(format!(
            "Thread {id} was written by graph {graph_id}, which this server does not serve, so its checkpoints \
             cannot be read to keep the latest: serve that graph, or prune the thread with strategy delete"
        ))
    })?;
    graph.prune_history(id).await?;
    Ok(())
}

/// Copies a thread: its checkpoints (subgraphs' included) under a new id, with its metadata.
pub(super) async fn copy(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    gate: Gate,
) -> Result<Response, ApiError> {
    let source = thread(&app, &id).await?;
    if source["status"] == "busy" {
        return Err(ApiError::Conflict(format!("Thread {id} has a run in progress: copy it once its runs have ended")));
    }
    let graph_id = app.meta.thread_graph(&id).await?.flatten();
    let copy = uuid::Uuid::new_v4().to_string();
    let mut metadata = source["metadata"].as_object().cloned().unwrap_or_default();
    let asked = json!({"thread_id": copy, "metadata": metadata, "copied_from": id});
    gate.grant(Resource::Threads, Action::Create, asked).await?.stamp(&mut metadata);
    app.saver.copy_thread(&id, &copy).await.map_err(|e| ApiError::Storage(e.to_string()))?;
    let (created, _) = app.meta.create_thread(&copy, Value::Object(metadata), graph_id.clone(), true).await?;
    match graph_id.as_deref().and_then(|g| app.graphs.get(g)) {
        Some(graph) => Ok(json(&refresh(&app, graph, &copy).await?)),
        None => Ok(json(&created.unwrap_or(Value::Null))),
    }
}

fn matches(thread: &Value, search: &Map<String, Value>) -> bool {
    let metadata = search.get("metadata").and_then(Value::as_object);
    let values = search.get("values").and_then(Value::as_object);
    let ids = search.get("ids").and_then(Value::as_array);
    metadata.is_none_or(|m| contains(&thread["metadata"], m))
        && values.is_none_or(|v| contains(&thread["values"], v))
        && ids.is_none_or(|ids| ids.contains(&thread["thread_id"]))
        && search.get("status").and_then(Value::as_str).is_none_or(|s| thread["status"] == s)
}

/// The threads `search` finds among those the caller may see.
async fn matching(app: &App, gate: &Gate, search: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let grant = gate.grant(Resource::Threads, Action::Search, Value::Object(search.clone())).await?;
    let all = app.meta.threads().await?;
    Ok(all.into_iter().filter(|t| grant.filter().admits(&t["metadata"]) && matches(t, search)).collect())
}

pub(super) async fn search(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let found = matching(&app, &gate, &search).await?;
    page(found, &search, "created_at", &["thread_id", "status", "created_at", "updated_at", "state_updated_at"])
}

pub(super) async fn count(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&matching(&app, &gate, &search).await?.len().into()))
}

/// A thread with no checkpoint yet, as clients expect it.
fn empty_state() -> Value {
    json!({"values": {}, "next": [], "tasks": [], "metadata": {}, "created_at": null,
        "checkpoint": null, "parent_checkpoint": null, "interrupts": []})
}

/// A thread's state (at `checkpoint`, or its latest), as `ThreadState`.
pub(super) async fn state_of(app: &App, id: &str, checkpoint: Option<&str>) -> Result<Value, ApiError> {
    let Some(graph) = app.thread_graph(id).await? else { return Ok(empty_state()) };
    Ok(graph.state(id, checkpoint).await?.unwrap_or_else(empty_state))
}

pub(super) async fn state(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(json(&state_of(&app, &id, None).await?))
}

pub(super) async fn state_at(
    State(app): State<Arc<App>>,
    Path((id, checkpoint)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    Ok(json(&state_of(&app, &id, Some(&checkpoint)).await?))
}

pub(super) async fn state_at_body(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let checkpoint = body.get("checkpoint").and_then(|c| c.get("checkpoint_id")).and_then(Value::as_str);
    Ok(json(&state_of(&app, &id, checkpoint).await?))
}

#[derive(Deserialize)]
pub(super) struct UpdateState {
    #[serde(default)]
    values: Value,
    #[serde(default)]
    as_node: Option<String>,
    #[serde(default)]
    checkpoint: Option<Value>,
    #[serde(default)]
    checkpoint_id: Option<String>,
}

pub(super) async fn update_state(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(body): Body<UpdateState>,
) -> Result<Response, ApiError> {
    let current = thread(&app, &id).await?;
    if current["status"] == "busy" {
        return Err(ApiError::Conflict(format!(
            "Thread {id} is running a task: update its state once the run has ended"
        )));
    }
    let Some(graph) = app.thread_graph(&id).await? else {
        return Err(ApiError::BadRequest(format!(
            "Thread {id} has no graph yet: run it once, or create it with graph_id in its metadata"
        )));
    };
    let values = match body.values {
        Value::Array(_) => {
            return Err(ApiError::Invalid(
                "`values` must be one update (an object); lists of updates are not offered".into(),
            ));
        }
        other => other,
    };
    let checkpoint =
        body.checkpoint_id.or_else(|| body.checkpoint.as_ref()?.get("checkpoint_id")?.as_str().map(str::to_owned));
    let new_id = graph.update_state(&id, values, as_node(body.as_node), checkpoint).await?;
    refresh(&app, &graph, &id).await?;
    app.state_changed(&id).await;
    Ok(json(&json!({"checkpoint": {"thread_id": id, "checkpoint_ns": "", "checkpoint_id": new_id}})))
}

async fn history_of(app: &App, id: &str, limit: usize, before: Option<String>) -> Result<Value, ApiError> {
    thread(app, id).await?;
    let Some(graph) = app.thread_graph(id).await? else { return Ok(json!([])) };
    Ok(Value::Array(graph.history(id, limit, before).await?))
}

pub(super) async fn history(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let limit = number(&body, "limit", 10)?;
    let before = match body.get("before") {
        Some(Value::String(id)) => Some(id.clone()),
        Some(Value::Object(c)) => c.get("checkpoint_id").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    };
    Ok(json(&history_of(&app, &id, limit, before).await?))
}

pub(super) async fn history_query(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let limit = query.number("limit")?.unwrap_or(10);
    Ok(json(&history_of(&app, &id, limit, query.get("before").map(str::to_owned)).await?))
}
