//! `tasks/get` (`GetTask`) and `tasks/cancel` (`CancelTask`).

use super::dialect::{Dialect, TaskState};
use super::input::count;
use super::rpc::{RpcError, code};
use super::task::{self, Task};
use crate::app::App;
use crate::runs::Cancel;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The task `params.id` names.
async fn named(app: &App, assistant: &str, params: &Map<String, Value>) -> Result<Task, RpcError> {
    let Some(Value::String(id)) = params.get("id") else {
        return Err(RpcError::invalid_params("`params.id` is required: the task's id, a string"));
    };
    let assistant = app.assistant(assistant).await?;
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default();
    task::find(app, assistant_id, id)
        .await?
        .ok_or_else(|| RpcError::new(code::TASK_NOT_FOUND, format!("no task {id:?} of this agent")))
}

/// `tasks/get`: the task as it now is, with the context's messages up to its end.
pub(super) async fn get(
    app: &Arc<App>,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Value, RpcError> {
    let history_length = match params.get("historyLength") {
        None | Some(Value::Null) => None,
        Some(n) => Some(count(n, "historyLength")?),
    };
    let task = named(app, assistant, params).await?;
    Ok(dialect.task(&task.view(history_length, None)))
}

/// `tasks/cancel`: stops the task's run and answers the task, cancelled. A task that has
/// ended, or that waits for an answer (it has no run in flight), cannot be cancelled.
pub(super) async fn cancel(
    app: &Arc<App>,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
) -> Result<Value, RpcError> {
    let task = named(app, assistant, params).await?;
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
