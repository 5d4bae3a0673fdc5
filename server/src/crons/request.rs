//! The bodies of cron requests, checked: a cron's own fields, and the run request each firing
//! makes (the rest of the body, as LangGraph's server keeps it in the cron's `payload`).

use crate::app::App;
use crate::error::ApiError;
use crate::meta::crons::CronRecord;
use crate::runs;
use crate::runs::request::RunCreate;
use crate::time;
use chrono::{DateTime, NaiveDateTime};
use graphwright::AuthUser;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A cron's own fields in a create request.
#[derive(Deserialize)]
pub(super) struct CronCreate {
    pub(super) schedule: String,
    #[serde(default)]
    pub(super) timezone: Option<String>,
    #[serde(default)]
    pub(super) end_time: Option<String>,
    #[serde(default)]
    pub(super) enabled: Option<bool>,
    #[serde(default)]
    pub(super) on_run_completed: Option<String>,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}

/// A cron's own fields in an update; `end_time` is read from the body itself, where `null`
/// (clear it) and absent (keep it) differ.
#[derive(Deserialize)]
pub(super) struct CronPatch {
    #[serde(default)]
    pub(super) schedule: Option<String>,
    #[serde(default)]
    pub(super) timezone: Option<String>,
    #[serde(default)]
    pub(super) enabled: Option<bool>,
    #[serde(default)]
    pub(super) on_run_completed: Option<String>,
    #[serde(default)]
    pub(super) metadata: Option<Map<String, Value>>,
}

/// `body` read as `T`; a 422 naming the field that does not fit.
pub(super) fn fields<T: DeserializeOwned>(body: &Map<String, Value>) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(body.clone()))
        .map_err(|e| ApiError::Invalid(format!("the cron request does not have the expected fields: {e}")))
}

/// `on_run_completed`: what happens to a stateless cron's threads (`delete` unless given).
pub(super) fn on_run_completed(value: Option<&str>) -> Result<String, ApiError> {
    match value {
        None => Ok("delete".to_owned()),
        Some(v @ ("delete" | "keep")) => Ok(v.to_owned()),
        Some(other) => Err(ApiError::Invalid(format!("`on_run_completed` must be delete or keep, not {other:?}"))),
    }
}

/// `end_time` as milliseconds, refused if it is not a date and time or not after `now_ms` (a
/// cron ending before now would never fire). A time without an offset is UTC.
pub(super) fn end_ms(text: &str, now_ms: i64) -> Result<i64, ApiError> {
    let ms = DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .or_else(|_| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f").map(|t| t.and_utc().timestamp_millis())
        })
        .map_err(|_| {
            ApiError::Invalid(format!(
                "`end_time` must be an ISO 8601 date and time (e.g. 2030-01-01T00:00:00+00:00), not {text:?}"
            ))
        })?;
    if ms <= now_ms {
        return Err(ApiError::Invalid(format!(
            "`end_time` {text:?} is in the past: the cron would never fire; give a later time, or none"
        )));
    }
    Ok(ms)
}

/// The run request in a cron's body, read as a client's run request is.
pub(super) fn run_request(payload: &Map<String, Value>) -> Result<RunCreate, ApiError> {
    serde_json::from_value(Value::Object(payload.clone()))
        .map_err(|e| ApiError::Invalid(format!("the cron's run request does not have the expected fields: {e}")))
}

/// Checks a cron's run request as a run request is checked when a client sends it (the
/// assistant, the strategies, the context, the input and the breakpoints), so that what a
/// firing would refuse is refused now. The assistant, with its id resolved from a graph name.
pub(super) async fn check_run(
    app: &App,
    stateless: bool,
    body: &mut RunCreate,
    user: Option<&Arc<AuthUser>>,
) -> Result<Value, ApiError> {
    // Checked as its caller: the assistant and the thread must be theirs to run.
    body.user = user.cloned();
    if stateless && body.command.is_some() {
        return Err(ApiError::BadRequest(
            "a stateless cron runs on a new thread each time, which has nothing to resume: give `input`, or make the cron on a thread".into(),
        ));
    }
    // Checked exactly as a client's run request is; nothing of it is recorded.
    let thread = (!stateless).then(String::new);
    runs::prepare(app, thread, body).await?;
    app.assistant(&body.assistant_id).await
}

/// The run request of a cron's firing at `due_ms`: its payload, with the cron's metadata under
/// the payload's own (LangGraph's order), a stateless cron's `on_run_completed: keep` as the
/// run's `on_completion`, and the cron and the time it fired for in the run's `kwargs`. Stream
/// modes are dropped: nobody streams a cron's run.
pub(super) fn firing(cron: &CronRecord, due_ms: i64) -> Result<RunCreate, ApiError> {
    let mut payload = cron.payload.as_object().cloned().unwrap_or_default();
    let mut metadata = cron.metadata.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(own)) = payload.get("metadata") {
        metadata.extend(own.clone());
    }
    payload.insert("metadata".into(), Value::Object(metadata));
    if cron.thread_id.is_none() && cron.on_run_completed.as_deref() == Some("keep") {
        payload.entry("on_completion").or_insert_with(|| json!("keep"));
    }
    payload.remove("stream_mode");
    let mut body = run_request(&payload)?;
    // The firing runs as the cron's creator, whose identity is all the cron keeps of them.
    body.user = cron.user_id.as_ref().map(|id| Arc::new(AuthUser::new(id.clone())));
    let scheduled = u64::try_from(due_ms).map(time::from_millis).unwrap_or_default();
    body.cron = Some(json!({"cron_id": cron.cron_id, "scheduled_at": scheduled}));
    Ok(body)
}
