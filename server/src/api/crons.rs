//! `/runs/crons` and `/threads/{id}/runs/crons`: create, read, search, count, update and delete
//! crons (see [`crate::crons`] for what they do).

use super::respond::{json, no_content, page};
use crate::app::{App, system_assistant_id};
use crate::auth::Caller;
use crate::authz::gate::{Gate, Granted};
use crate::authz::{Action, Resource};
use crate::crons;
use crate::error::ApiError;
use crate::meta::contains;
use crate::wire::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The fields a search may `select`, as LangGraph's server names them.
const FIELDS: [&str; 14] = [
    "cron_id",
    "assistant_id",
    "thread_id",
    "on_run_completed",
    "end_time",
    "schedule",
    "timezone",
    "created_at",
    "updated_at",
    "user_id",
    "payload",
    "next_run_date",
    "metadata",
    "enabled",
];

/// The fields a search may sort by.
const SORTABLE: [&str; 7] =
    ["cron_id", "assistant_id", "thread_id", "next_run_date", "end_time", "created_at", "updated_at"];

pub(super) async fn create(
    State(app): State<Arc<App>>,
    gate: Gate,
    Caller(user): Caller,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&crons::create(&app, None, body, &gate, user.as_ref()).await?.json()))
}

pub(super) async fn create_for_thread(
    State(app): State<Arc<App>>,
    Path(thread): Path<String>,
    gate: Gate,
    Caller(user): Caller,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&crons::create(&app, Some(thread), body, &gate, user.as_ref()).await?.json()))
}

pub(super) async fn get(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(json(&crons::get(&app, &id).await?.json()))
}

pub(super) async fn update(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Granted(grant): Granted,
    Caller(user): Caller,
    Body(patch): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&crons::update(&app, &id, patch, &grant, user.as_ref()).await?.json()))
}

pub(super) async fn delete(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    crons::delete(&app, &id).await?;
    Ok(no_content())
}

/// A search's filters: by assistant (an id, or a graph name for its default assistant), by
/// thread, by `enabled`, by metadata.
struct Filters {
    assistant_id: Option<String>,
    thread_id: Option<String>,
    enabled: Option<bool>,
    metadata: Option<Map<String, Value>>,
}

impl Filters {
    fn read(app: &App, search: &Map<String, Value>) -> Result<Self, ApiError> {
        let text = |key: &str| match search.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ApiError::Invalid(format!("`{key}` must be a string, not {other}"))),
        };
        let assistant_id =
            text("assistant_id")?.map(|id| if app.graphs.contains_key(&id) { system_assistant_id(&id) } else { id });
        let enabled = match search.get("enabled") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => return Err(ApiError::Invalid(format!("`enabled` must be true or false, not {other}"))),
        };
        let metadata = match search.get("metadata") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(other) => return Err(ApiError::Invalid(format!("`metadata` must be an object, not {other}"))),
        };
        Ok(Self { assistant_id, thread_id: text("thread_id")?, enabled, metadata })
    }

    fn admit(&self, cron: &Value) -> bool {
        self.assistant_id.as_ref().is_none_or(|id| cron["assistant_id"] == id.as_str())
            && self.thread_id.as_ref().is_none_or(|id| cron["thread_id"] == id.as_str())
            && self.enabled.is_none_or(|enabled| cron["enabled"] == enabled)
            && self.metadata.as_ref().is_none_or(|m| contains(&cron["metadata"], m))
    }
}

/// The crons `search` finds among those the caller may see.
async fn matching(app: &App, gate: &Gate, search: &Map<String, Value>) -> Result<Vec<Value>, ApiError> {
    let filters = Filters::read(app, search)?;
    let grant = gate.grant(Resource::Crons, Action::Search, Value::Object(search.clone())).await?;
    let all = app.meta.crons().await?;
    Ok(all
        .iter()
        .filter(|c| grant.filter().admits(&c.metadata))
        .map(crate::meta::crons::CronRecord::json)
        .filter(|c| filters.admit(c))
        .collect())
}

pub(super) async fn search(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    if let Some(limit) = search.get("limit").filter(|l| !l.is_null())
        && !limit.as_u64().is_some_and(|n| (1..=1000).contains(&n))
    {
        return Err(ApiError::Invalid(format!("`limit` must be an integer from 1 to 1000, not {limit}")));
    }
    if let Some(select) = search.get("select").filter(|s| !s.is_null()) {
        let names = select
            .as_array()
            .ok_or_else(|| ApiError::Invalid(format!("`select` must be a list of field names, not {select}")))?;
        if let Some(unknown) = names.iter().find(|n| n.as_str().is_none_or(|n| !FIELDS.contains(&n))) {
            return Err(ApiError::Invalid(format!(
                "`select` names {unknown}, which a cron does not have; its fields are: {}",
                FIELDS.join(", ")
            )));
        }
    }
    let found = matching(&app, &gate, &search).await?;
    page(found, &search, "created_at", &SORTABLE)
}

pub(super) async fn count(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(search): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    Ok(json(&matching(&app, &gate, &search).await?.len().into()))
}
