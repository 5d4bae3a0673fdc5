//! `tasks/get` (`GetTask`) and `tasks/cancel` (`CancelTask`).

use super::dialect::{Dialect, TaskState};
use super::input::count;
use super::rpc::{RpcError, code};
use super::task::{self, Task};
use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::runs::Cancel;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The task `params.id` names, if the caller may `action` its context (thread): a task of
/// another user's context is not found.
async fn named(
    app: &App,
    gate: &Gate,
    action: Action,
    assistant: &str,
    params: &Map<String, Value>,
) -> Result<Task, RpcError> {
    let Some(Value::String(id)) = params.get("id") else {
        return Err(RpcError::invalid_params("`params.id` is required: the task's id, a string"));
    };
    let assistant = app.assistant(assistant).await?;
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default();
    let not_found = || RpcError::new(code::TASK_NOT_FOUND, format!("no task {id:?} of this agent"));
    let task = task::find(app, assistant_id, id).await?.ok_or_else(not_found)?;
    let grant = gate.grant(Resource::Threads, action, json!({"thread_id": task.context_id})).await?;
    let metadata = app.meta.thread_metadata(&task.context_id).await?.unwrap_or_default();
    match gate.admit(Resource::Threads, action, &task.context_id, &metadata, &grant).await {
        Ok(()) => Ok(task),
        Err(ApiError::NotFound(_)) => Err(not_found()),
        Err(other) => Err(other.into()),
    }
}

/// `tasks/get`: the task as it now is, with the context's messages up to its end.
pub(super) async fn get(
    app: &Arc<App>,
    gate: &Gate,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Value, RpcError> {
    let history_length = match params.get("historyLength") {
        None | Some(Value::Null) => None,
        Some(n) => Some(count(n, "historyLength")?),
    };
    let task = named(app, gate, Action::Read, assistant, params).await?;
    Ok(dialect.task(&task.view(history_length, None)))
}

/// `tasks/cancel`: stops the task's run and answers the task, cancelled. A task that has
/// ended, or that waits for an answer (it has no run in flight), cannot be cancelled.
pub(super) async fn cancel(
    app: &Arc<App>,
    gate: &Gate,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Value, RpcError> {
    let task = named(app, gate, Action::Update, assistant, params).await?;
    if task.state.is_terminal() || task.state == TaskState::InputRequired {
        let why = if task.state == TaskState::InputRequired {
            "waits for an answer: no run of it is in flight"
        } else {
            "has ended"
        };
        return Err(RpcError::new(
            code::TASK_NOT_CANCELABLE,
            format!("task {} {why} ({})", task.id, task.state.name()),
        ));
    }
    let run = task.runs[0]["run_id"].as_str().unwrap_or_default().to_owned();
    app.cancel_run(&run, Cancel::Interrupt).await?;
    if let Some(live) = app.follow(&task.context_id, &run).await? {
        live.done().await;
    }
    let assistant_id = task.runs[0]["assistant_id"].as_str().unwrap_or_default().to_owned();
    let task = task::find(app, &assistant_id, &task.id).await?.ok_or_else(|| {
        RpcError::new(code::TASK_NOT_FOUND, format!("task {} is gone: its thread was deleted", task.id))
    })?;
    Ok(dialect.task(&task.view(None, None)))
}
