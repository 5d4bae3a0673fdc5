//! Runs on a thread and stateless runs: create, stream, wait, join, cancel, list, delete.

use super::respond::{event_stream, json, locate, no_content, result_of, result_when_done};
use crate::app::App;
use crate::auth::Caller;
use crate::authz::gate::{Gate, Granted};
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::runs::request::RunCreate;
use crate::runs::{self, Attached, Cancel, Live};
use crate::wire::body::{Body, Query};
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;

async fn background(app: &Arc<App>, thread: Option<String>, body: RunCreate) -> Result<Response, ApiError> {
    let stateless = thread.is_none();
    let accepted = runs::create(app, thread, body, Attached::Background).await?;
    let mut response = json(&accepted.run);
    locate(&mut response, &accepted.live, stateless, "stream");
    Ok(response)
}

async fn streamed(app: &Arc<App>, thread: Option<String>, body: RunCreate) -> Result<Response, ApiError> {
    let stateless = thread.is_none();
    let cancel = body.cancel_on_disconnect()?;
    let accepted = runs::create(app, thread, body, Attached::Client).await?;
    let mut response = event_stream(&accepted.live, 0, cancel, &app.metrics);
    locate(&mut response, &accepted.live, stateless, "stream");
    Ok(response)
}

async fn waited(app: &Arc<App>, thread: Option<String>, body: RunCreate) -> Result<Response, ApiError> {
    let stateless = thread.is_none();
    let cancel = body.cancel_on_disconnect()?;
    let accepted = runs::create(app, thread, body, Attached::Client).await?;
    let mut response = result_when_done(&accepted.live, cancel);
    locate(&mut response, &accepted.live, stateless, "join");
    Ok(response)
}

pub(super) async fn create(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    Caller(user): Caller,
    Granted(grant): Granted,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    body.thread_grant = Some(grant);
    background(&app, Some(thread), body).await
}

pub(super) async fn create_stateless(
    State(app): State<Arc<App>>,
    Caller(user): Caller,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    background(&app, None, body).await
}

/// Starts several stateless background runs. Every request is checked before any run is
/// recorded, so a bad one starts none.
pub(super) async fn create_batch(
    State(app): State<Arc<App>>,
    Caller(user): Caller,
    Body(mut bodies): Body<Vec<RunCreate>>,
) -> Result<Response, ApiError> {
    for body in &mut bodies {
        body.user.clone_from(&user);
    }
    if bodies.is_empty() {
        return Err(ApiError::Invalid("a batch needs at least one run".into()));
    }
    let mut prepared = Vec::with_capacity(bodies.len());
    for (i, body) in bodies.iter().enumerate() {
        let checked = runs::prepare(&app, None, body).await;
        prepared.push(checked.map_err(|error| error.within(&format!("run {i} of the batch")))?);
    }
    let mut records = Vec::with_capacity(prepared.len());
    for run in prepared {
        records.push(run.start(&app, Attached::Background).await?.run);
    }
    Ok(json(&Value::Array(records)))
}

pub(super) async fn stream(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    Caller(user): Caller,
    Granted(grant): Granted,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    body.thread_grant = Some(grant);
    streamed(&app, Some(thread), body).await
}

pub(super) async fn stream_stateless(
    State(app): State<Arc<App>>,
    Caller(user): Caller,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    streamed(&app, None, body).await
}

pub(super) async fn wait(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    Caller(user): Caller,
    Granted(grant): Granted,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    body.thread_grant = Some(grant);
    waited(&app, Some(thread), body).await
}

pub(super) async fn wait_stateless(
    State(app): State<Arc<App>>,
    Caller(user): Caller,
    Body(mut body): Body<RunCreate>,
) -> Result<Response, ApiError> {
    body.user = user;
    waited(&app, None, body).await
}

async fn run_record(app: &App, thread: &str, run: &str) -> Result<Value, ApiError> {
    app.meta.run_of(thread, run).await?.ok_or_else(|| ApiError::run_not_found(run))
}

pub(super) async fn get(
    State(app): State<Arc<App>>,
    Path((thread, run)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    Ok(json(&run_record(&app, &thread, &run).await?))
}

pub(super) async fn list(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let limit = i64::try_from(query.number("limit")?.unwrap_or(10)).unwrap_or(i64::MAX);
    let offset = i64::try_from(query.number("offset")?.unwrap_or(0)).unwrap_or(i64::MAX);
    let status = query.get("status").map(str::to_owned);
    let runs = app.meta.runs_of(&thread, status, limit, offset).await?;
    Ok(json(&Value::Array(runs.ok_or_else(|| ApiError::thread_not_found(&thread))?)))
}

pub(super) async fn delete(
    State(app): State<Arc<App>>,
    Path((thread, run)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let record = run_record(&app, &thread, &run).await?;
    if matches!(record["status"].as_str(), Some("pending" | "running")) {
        return Err(ApiError::Conflict(format!("Run {run} has not ended: cancel it first")));
    }
    app.runs.forget(&run);
    app.meta.delete_run(&thread, &run).await?;
    Ok(no_content())
}

fn cancel_action(query: &Query) -> Result<Cancel, ApiError> {
    match query.get("action") {
        None | Some("interrupt") => Ok(Cancel::Interrupt),
        Some("rollback") => Ok(Cancel::Rollback),
        Some(other) => Err(ApiError::Invalid(format!("`action` must be interrupt or rollback, not {other:?}"))),
    }
}

/// The run's progress, or `None` when it already ended and no process keeps its events.
async fn live_run(app: &App, thread: &str, run: &str) -> Result<Option<Arc<Live>>, ApiError> {
    run_record(app, thread, run).await?;
    app.follow(thread, run).await
}

pub(super) async fn cancel(
    State(app): State<Arc<App>>,
    Path((thread, run)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let action = cancel_action(&query)?;
    let wait = query.flag("wait")?.unwrap_or(false);
    let record = run_record(&app, &thread, &run).await?;
    if !matches!(record["status"].as_str(), Some("pending" | "running")) {
        return Err(ApiError::Conflict(format!("Run {run} has already ended ({})", record["status"])));
    }
    app.cancel_run(&run, action).await?;
    if wait && let Some(live) = app.follow(&thread, &run).await? {
        return Ok(json(&result_of(&live.done().await)));
    }
    Ok(StatusCode::ACCEPTED.into_response())
}

#[derive(Deserialize)]
pub(super) struct CancelMany {
    #[serde(default)]
    thread_id: Option<String>,
    #[serde(default)]
    run_ids: Option<Vec<String>>,
    #[serde(default)]
    status: Option<String>,
}

pub(super) async fn cancel_many(
    State(app): State<Arc<App>>,
    gate: Gate,
    RawQuery(raw): RawQuery,
    Body(body): Body<CancelMany>,
) -> Result<Response, ApiError> {
    let action = cancel_action(&Query::parse(raw.as_deref()))?;
    let asked = json!({"thread_id": body.thread_id, "run_ids": body.run_ids, "status": body.status});
    let grant = gate.grant(Resource::Threads, Action::Update, asked).await?;
    if let Some(thread) = &body.thread_id
        && !grant.filter().is_all()
        && let Some(metadata) = app.meta.thread_metadata(thread).await?
    {
        gate.admit(Resource::Threads, Action::Update, thread, &metadata, &grant).await?;
    }
    let statuses: &[&str] = match (body.status.as_deref(), &body.run_ids) {
        (Some(_), Some(_)) => return Err(ApiError::Invalid("give either `status` or `run_ids`, not both".into())),
        (None | Some("all"), _) => &["pending", "running"],
        (Some("pending"), _) => &["pending"],
        (Some("running"), _) => &["running"],
        (Some(other), _) => {
            return Err(ApiError::Invalid(format!("`status` must be pending, running or all, not {other:?}")));
        }
    };
    let records = match (body.thread_id, body.run_ids) {
        (_, Some(ids)) => {
            // Stateless runs a client waits on or streams are in no record: this process's
            // runs are looked at first.
            let mut unrecorded = Vec::new();
            for id in &ids {
                let mine = |live: &Arc<Live>| grant.filter().admits(live.thread_metadata());
                if let Some(live) =
                    app.runs.get(id).filter(|live| !live.remote && live.outcome().is_none() && mine(live))
                {
                    unrecorded.push(live);
                }
            }
            let records = app.meta.runs_by_id(ids).await?;
            for live in unrecorded {
                // They start at once: they count as running.
                if statuses.contains(&"running") && !records.iter().any(|r| r["run_id"] == live.run_id.as_str()) {
                    live.cancel(action);
                }
            }
            records
        }
        (Some(thread), None) => app.meta.runs_of(&thread, None, i64::MAX, 0).await?.unwrap_or_default(),
        (None, None) => return Err(ApiError::Invalid("give `thread_id`, `run_ids` or both".into())),
    };
    for record in records {
        if !grant.filter().is_all() {
            // Runs on threads the caller may not change are left alone, as unknown ids are.
            let thread = record["thread_id"].as_str().unwrap_or_default();
            let metadata = app.meta.thread_metadata(thread).await?.unwrap_or_default();
            if !grant.filter().admits(&metadata) {
                continue;
            }
        }
        if record["status"].as_str().is_some_and(|s| statuses.contains(&s))
            && let Some(id) = record["run_id"].as_str()
        {
            app.cancel_run(id, action).await?;
        }
    }
    Ok(no_content())
}

pub(super) async fn join(
    State(app): State<Arc<App>>,
    Path((thread, run)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    if let Some(live) = live_run(&app, &thread, &run).await? {
        return Ok(json(&result_of(&live.done().await)));
    }
    // Ended before this process followed it: the thread's values are the run's result.
    let record = app.meta.thread(&thread).await?;
    Ok(json(&record.map_or(Value::Null, |t| t["values"].clone())))
}

pub(super) async fn join_stream(
    State(app): State<Arc<App>>,
    Path((thread, run)): Path<(String, String)>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let cancel = query.flag("cancel_on_disconnect")?.unwrap_or(false);
    let Some(live) = live_run(&app, &thread, &run).await? else {
        // The run ended and its events are gone: an empty stream, which clients read as done.
        let ended = Arc::new(Live::new(run.clone(), thread, false));
        ended.finish(crate::served::Outcome::Finished { values: Value::Null });
        return Ok(event_stream(&ended, 0, false, &app.metrics));
    };
    let last = headers.get("last-event-id").and_then(|v| v.to_str().ok()).map(str::trim);
    let from = match last {
        // A resumable run replays what came after the last event the client saw, or
        // everything; a run that is not resumable streams from now on.
        _ if !live.resumable => live.len(),
        None | Some("" | "-1" | "-") => 0,
        Some(id) => id.parse::<usize>().map_or(0, |n| n + 1),
    };
    Ok(event_stream(&live, from, cancel, &app.metrics))
}
