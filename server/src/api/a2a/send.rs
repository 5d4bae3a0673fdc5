//! `message/send` (`SendMessage`): a message starts a run on the context's thread (or answers
//! the question a task waits on), and the task is answered once the run ends.

use super::dialect::{Dialect, Role, TaskState};
use super::input::{self, Incoming};
use super::rpc::{RpcError, code};
use super::task::{self, Task};
use crate::app::App;
use crate::runs::{self, Accepted, request::RunCreate};
use crate::served::Outcome;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A run started for a message.
pub(super) struct Begun {
    pub(super) accepted: Accepted,
    pub(super) assistant_id: String,
    pub(super) task_id: String,
    pub(super) context_id: String,
    pub(super) incoming: Incoming,
}

/// Reads the message and starts its run: on the thread `contextId` names (made if new; a new
/// one when none is named), as a new task, or as the next run of the task `taskId` names. The
/// text parts become one message in the graph's `messages` (the user's, or the agent's for role
/// agent), the data parts' fields the rest of the input; to a task waiting for input the message
/// is the answer (a data part's `resume`, or else the text).
pub(super) async fn begin(
    app: &Arc<App>,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
    stream: bool,
    user: Option<Arc<graphwright::AuthUser>>,
) -> Result<Begun, RpcError> {
    let incoming = input::read(params, dialect)?;
    let assistant = app.assistant(assistant).await?;
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
    let graph = app.graph(graph_id)?;
    let existing = match &incoming.task_id {
        None => None,
        Some(id) => Some(continued(app, &assistant_id, id, incoming.context_id.as_deref()).await?),
    };
    if incoming.text.is_some() && !graph.message_fields().contains(&"messages") {
        return Err(RpcError::invalid_params(format!(
            "assistant {assistant_id} (graph `{graph_id}`) takes no chat messages: its state has no `messages` field \
             of messages, so text parts have nowhere to go; send data parts (their fields become the input) instead"
        )));
    }
    let answering = existing.as_ref().is_some_and(|t| t.state == TaskState::InputRequired);
    let command = if answering {
        let answer = incoming.resume.clone().or_else(|| incoming.text.clone().map(Value::String));
        let Some(answer) = answer.filter(|a| !a.is_null()) else {
            return Err(RpcError::invalid_params(
                "the task waits for an answer: send it as text, or as a data part `{\"resume\": ..}`",
            ));
        };
        Some(json!({"resume": answer}))
    } else {
        None
    };
    let mut input = Value::Object(incoming.data.clone());
    if let Some(text) = &incoming.text {
        let kind = if incoming.role == Role::User { "human" } else { "ai" };
        input["messages"] = json!([{"type": kind, "content": text, "id": incoming.message_id}]);
    }
    let context_id = existing
        .as_ref()
        .map(|t| t.context_id.clone())
        .or_else(|| incoming.context_id.clone())
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let task_id = existing.as_ref().map(|t| t.id.clone());
    let mut body = json!({
        "assistant_id": assistant_id,
        "metadata": task::run_metadata(task_id.as_deref(), &incoming.message_id),
        "if_not_exists": "create",
    });
    match command {
        Some(command) => body["command"] = command,
        None => body["input"] = input,
    }
    if stream {
        body["stream_mode"] = json!(["values", "messages-tuple"]);
    }
    let mut body: RunCreate =
        serde_json::from_value(body).map_err(|e| RpcError::new(code::INTERNAL_ERROR, e.to_string()))?;
    body.user = user;
    let accepted = runs::create(app, Some(context_id.clone()), body, runs::Attached::Client).await?;
    let task_id = task_id.unwrap_or_else(|| accepted.live.run_id.clone());
    Ok(Begun { accepted, assistant_id, task_id, context_id, incoming })
}

/// The task `taskId` names, which a message may continue: not one that has ended.
async fn continued(app: &App, assistant_id: &str, task_id: &str, context_id: Option<&str>) -> Result<Task, RpcError> {
    let found = task::find(app, assistant_id, task_id).await?;
    let Some(task) = found.filter(|t| context_id.is_none_or(|c| c == t.context_id)) else {
        return Err(RpcError::new(
            code::TASK_NOT_FOUND,
            format!("no task {task_id:?} of this agent (in this context)"),
        ));
    };
    if task.state.is_terminal() {
        return Err(RpcError::new(
            code::UNSUPPORTED_OPERATION,
            format!(
                "task {task_id} has ended ({}): send the message without `taskId` (and with its `contextId` to go on with the conversation)",
                task.state.name()
            ),
        ));
    }
    Ok(task)
}

/// The reason a run failed, for the task's status.
pub(super) fn failure(outcome: Option<&Outcome>) -> Option<String> {
    match outcome {
        Some(Outcome::Failed { error, message }) => Some(format!("{error}: {message}")),
        _ => None,
    }
}

/// `message/send`: the task once its run ends (at once when the client asked not to wait).
pub(super) async fn send(
    app: &Arc<App>,
    assistant: &str,
    params: &Map<String, Value>,
    dialect: Dialect,
    user: Option<Arc<graphwright::AuthUser>>,
) -> Result<Value, RpcError> {
    let begun = begin(app, assistant, params, dialect, false, user).await?;
    let outcome = if begun.incoming.blocking { Some(begun.accepted.live.done().await) } else { None };
    let Some(task) = task::find(app, &begun.assistant_id, &begun.task_id).await? else {
        return Err(RpcError::new(
            code::INTERNAL_ERROR,
            format!("task {} is gone: its thread was deleted", begun.task_id),
        ));
    };
    let view = task.view(begun.incoming.history_length, failure(outcome.as_ref()).as_deref());
    Ok(dialect.task_result(&view))
}
