//! Crons: runs made on a schedule, as LangGraph's Agent Server has them.
//!
//! A cron is a run request kept with a schedule. A stateless cron (`POST /runs/crons`) runs on
//! a new thread each time, deleted after the run unless `on_run_completed` is `keep`; a thread's
//! cron (`POST /threads/{id}/runs/crons`) runs on that thread, queued behind its other runs
//! (`multitask_strategy` `enqueue` unless the request says otherwise). A firing makes its run
//! through the same path as a client's run request.
//!
//! - **Schedules** are read as LangGraph's server reads them ([`schedule`]): five fields, a
//!   sixth for seconds (last), a seventh for the year, in a time zone (UTC unless given).
//! - **Firing.** Each server process runs one scheduler ([`scheduler`]), which sleeps until the
//!   earliest next run time among the crons and is woken early when a cron is created, changed
//!   or deleted (by any process, on PostgreSQL). A firing is claimed by moving the cron's next
//!   run time on in one conditional `UPDATE`; only the process whose update succeeds makes the
//!   run, so several processes on one database never fire an occurrence twice, and any of
//!   them keeps a cron going when another dies.
//! - **Missed firings** (no process was running, or the cron was disabled) are not made up:
//!   a cron found overdue fires once, then at its next time after now, as in LangGraph. A cron
//!   enabled again starts from its next time after now.
//! - **End.** A disabled cron, or one past its `end_time`, does not fire. Deleting a thread
//!   deletes its crons; deleting an assistant deletes the crons that run it (as LangGraph does).

mod alarm;
mod request;
mod schedule;
mod scheduler;

pub(crate) use alarm::Alarm;
pub(crate) use scheduler::start;

use scheduler::changed;

use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Grant, Resource};
use crate::error::ApiError;
use crate::meta::crons::CronRecord;
use crate::time;
use graphwright::AuthUser;
use schedule::Schedule;
use serde_json::{Map, Value, json};
use std::sync::Arc;

use crate::time::now_ms;

fn cron_not_found(id: &str) -> ApiError {
    ApiError::NotFound(format!("Cron {id} not found"))
}

fn thread_not_found(thread: &str) -> ApiError {
    ApiError::NotFound(format!(
        "Thread {thread} not found: a thread's cron runs on a thread that exists; create it first (POST /threads), or make a stateless cron (POST /runs/crons)"
    ))
}

/// Creates a cron from a create request: on `thread`, or stateless when `None`.
pub(crate) async fn create(
    app: &Arc<App>,
    thread: Option<String>,
    body: Map<String, Value>,
    gate: &Gate,
    user: Option<&Arc<AuthUser>>,
) -> Result<CronRecord, ApiError> {
    let stateless = thread.is_none();
    let fields: request::CronCreate = request::fields(&body)?;
    let now = now_ms();
    let (_, next) = Schedule::parse_firing(&fields.schedule, fields.timezone.as_deref(), now)?;
    let end_ms = fields.end_time.as_deref().map(|end| request::end_ms(end, now)).transpose()?;
    let on_run_completed = request::on_run_completed(fields.on_run_completed.as_deref())?;
    let grant = gate.grant(Resource::Crons, Action::Create, json!({"thread_id": thread, "payload": body})).await?;
    let mut metadata = fields.metadata.unwrap_or_default();
    grant.stamp(&mut metadata);
    let assistant = request::check_run(app, stateless, &mut request::run_request(&body)?, user).await?;
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    if let Some(thread) = &thread {
        check_thread(app, thread, assistant["graph_id"].as_str().unwrap_or_default()).await?;
    }
    let mut payload = body;
    payload.insert("assistant_id".into(), Value::String(assistant_id.clone()));
    let created_at = time::now();
    let cron = CronRecord {
        cron_id: uuid::Uuid::new_v4().to_string(),
        assistant_id,
        thread_id: thread.clone(),
        schedule: fields.schedule,
        timezone: fields.timezone,
        end_ms,
        payload: Value::Object(payload),
        metadata: Value::Object(metadata),
        enabled: fields.enabled.unwrap_or(true),
        on_run_completed: stateless.then_some(on_run_completed),
        user_id: user.map(|u| u.identity.clone()),
        next_run_ms: Some(next),
        created_at: created_at.clone(),
        updated_at: created_at,
    };
    if !app.meta.create_cron(cron.clone()).await? {
        return Err(thread_not_found(thread.as_deref().unwrap_or_default()));
    }
    changed(app).await;
    Ok(cron)
}

/// Refuses a cron on a thread that does not exist, or that holds runs of another graph (its
/// firings could never run there).
async fn check_thread(app: &App, thread: &str, graph_id: &str) -> Result<(), ApiError> {
    match app.meta.thread_graph(thread).await? {
        None => Err(thread_not_found(thread)),
        Some(Some(other)) if other != graph_id => Err(ApiError::Conflict(format!(
            "Thread {thread} holds runs of graph {other:?}; a cron running graph {graph_id:?} could never run on it"
        ))),
        Some(_) => Ok(()),
    }
}

/// A cron, by id.
pub(crate) async fn get(app: &App, id: &str) -> Result<CronRecord, ApiError> {
    app.meta.cron(id).await?.ok_or_else(|| cron_not_found(id))
}

/// Applies an update request to a cron: its schedule, time zone, end, `enabled`,
/// `on_run_completed` and metadata (merged), and any run request fields (merged into its
/// payload; the assistant stays). A new schedule or time zone, or enabling a disabled cron,
/// sets its next run time from now.
pub(crate) async fn update(
    app: &Arc<App>,
    id: &str,
    patch: Map<String, Value>,
    grant: &Grant,
    user: Option<&Arc<AuthUser>>,
) -> Result<CronRecord, ApiError> {
    if patch.is_empty() {
        return Err(ApiError::BadRequest("Request body cannot be empty: give the cron fields to change".into()));
    }
    let fields: request::CronPatch = request::fields(&patch)?;
    let mut cron = get(app, id).await?;
    let now = now_ms();
    let rescheduled =
        fields.schedule.is_some() || fields.timezone.is_some() || (fields.enabled == Some(true) && !cron.enabled);
    if let Some(schedule) = fields.schedule {
        cron.schedule = schedule;
    }
    if let Some(timezone) = fields.timezone {
        cron.timezone = Some(timezone);
    }
    if rescheduled {
        let (_, next) = Schedule::parse_firing(&cron.schedule, cron.timezone.as_deref(), now)?;
        cron.next_run_ms = Some(next);
    }
    if let Some(enabled) = fields.enabled {
        cron.enabled = enabled;
    }
    match patch.get("end_time") {
        None => {}
        Some(Value::Null) => cron.end_ms = None,
        Some(Value::String(end)) => cron.end_ms = Some(request::end_ms(end, now)?),
        Some(other) => {
            return Err(ApiError::Invalid(format!(
                "`end_time` must be an ISO 8601 date and time or null, not {other}"
            )));
        }
    }
    if let Some(value) = fields.on_run_completed.as_deref() {
        cron.on_run_completed = Some(request::on_run_completed(Some(value))?);
    }
    if let Value::Object(old) = &mut cron.metadata {
        old.extend(fields.metadata.unwrap_or_default());
        grant.stamp(old);
    }
    let mut payload = cron.payload.as_object().cloned().unwrap_or_default();
    let assistant_id = payload.get("assistant_id").cloned();
    payload.extend(patch);
    if let Some(assistant_id) = assistant_id {
        payload.insert("assistant_id".into(), assistant_id);
    }
    request::check_run(app, cron.thread_id.is_none(), &mut request::run_request(&payload)?, user).await?;
    cron.payload = Value::Object(payload);
    let updated = app.meta.update_cron(cron, rescheduled).await?.ok_or_else(|| cron_not_found(id))?;
    changed(app).await;
    Ok(updated)
}

/// Deletes a cron; its runs in progress go on.
pub(crate) async fn delete(app: &App, id: &str) -> Result<(), ApiError> {
    if !app.meta.delete_cron(id).await? {
        return Err(cron_not_found(id));
    }
    changed(app).await;
    Ok(())
}
