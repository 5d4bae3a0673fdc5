//! A task: the runs that answer one exchange on a thread (the A2A context), found by the id of
//! its first run, and how it is shown (status, reply, history).
//!
//! A run started by A2A keeps in its metadata the task it belongs to and the id of the message
//! it was sent (`{"a2a": {"task_id", "message_id"}}`): the task's later runs (an answer to the
//! question it waits on) are found by it, and the history's messages are told apart by task.

use super::dialect::{Artifact, Part, Role, Said, Status, TaskState, TaskView};
use crate::app::App;
use crate::error::ApiError;
use serde_json::{Value, json};
use std::collections::HashMap;

/// A task, as its runs and its thread say it is.
pub(super) struct Task {
    pub(super) id: String,
    pub(super) context_id: String,
    pub(super) state: TaskState,
    /// The task's runs, newest first (never empty).
    pub(super) runs: Vec<Value>,
    /// Every run of the thread, newest first.
    thread_runs: Vec<Value>,
    /// The thread's record (its status, values and interrupts).
    thread: Value,
}

/// The metadata a run of a task carries.
pub(super) fn run_metadata(task_id: Option<&str>, message_id: &str) -> Value {
    let mut a2a = json!({"message_id": message_id});
    if let Some(task) = task_id {
        a2a["task_id"] = task.into();
    }
    json!({"a2a": a2a})
}

/// The task a run belongs to: the one its metadata names, or the task it started.
fn task_of(run: &Value) -> &str {
    run["metadata"]["a2a"]["task_id"].as_str().or_else(|| run["run_id"].as_str()).unwrap_or_default()
}

/// The task `task_id` of `assistant_id`; `None` if there is none. LangGraph's composite ids
/// (`{context_id}:{run_id}`) name the same task as the run id alone.
pub(super) async fn find(app: &App, assistant_id: &str, task_id: &str) -> Result<Option<Task>, ApiError> {
    let run_id = task_id.rsplit(':').next().unwrap_or(task_id);
    let Some(first) = app.meta.runs_by_id(vec![run_id.to_owned()]).await?.into_iter().next() else {
        return Ok(None);
    };
    // A run that continues a task is not a task of its own.
    if first["assistant_id"].as_str() != Some(assistant_id) || task_of(&first) != run_id {
        return Ok(None);
    }
    let context_id = first["thread_id"].as_str().unwrap_or_default().to_owned();
    let thread_runs = app.meta.runs_of(&context_id, None, i64::MAX, 0).await?.unwrap_or_default();
    let mut runs: Vec<Value> = thread_runs.iter().filter(|r| task_of(r) == run_id).cloned().collect();
    if runs.is_empty() {
        runs.push(first);
    }
    let thread = app.meta.thread(&context_id).await?.unwrap_or(Value::Null);
    let latest = &runs[0];
    let newest = thread_runs.first().is_some_and(|r| r["run_id"] == latest["run_id"]);
    let state = state_of(latest["status"].as_str().unwrap_or_default(), thread["status"].as_str(), newest);
    Ok(Some(Task { id: run_id.to_owned(), context_id, state, runs, thread_runs, thread }))
}

/// A task's state from its latest run's status: a run that ended with its thread paused on a
/// question (and no run after it) waits for input.
fn state_of(run_status: &str, thread_status: Option<&str>, newest: bool) -> TaskState {
    match run_status {
        "running" => TaskState::Working,
        "success" if newest && thread_status == Some("interrupted") => TaskState::InputRequired,
        "success" => TaskState::Completed,
        "interrupted" => TaskState::Canceled,
        "error" | "timeout" => TaskState::Failed,
        _ => TaskState::Submitted,
    }
}

impl Task {
    /// The task as shown: its status (with `failure`, the reason of a failed run, when known),
    /// its reply or the question it waits on, and the context's messages up to its end (the
    /// last `history_length`; none when 0).
    pub(super) fn view(&self, history_length: Option<usize>, failure: Option<&str>) -> TaskView {
        let latest = &self.runs[0];
        let timestamp = latest["updated_at"].as_str().unwrap_or_default().to_owned();
        let said = |text: String| Said {
            id: uuid::Uuid::new_v4().to_string(),
            role: Role::Agent,
            parts: vec![Part::Text(text)],
            task_id: Some(self.id.clone()),
        };
        let message = match self.state {
            TaskState::Failed => Some(said(
                failure.map_or_else(|| "the run failed".to_owned(), |reason| format!("the run failed: {reason}")),
            )),
            TaskState::Canceled => Some(said("the task was cancelled".to_owned())),
            _ => None,
        };
        let values = &self.thread["values"];
        let messages = values["messages"].as_array().map(Vec::as_slice).unwrap_or_default();
        let end = self.end_of_turn(messages);
        let artifacts = match self.state {
            TaskState::Completed => {
                let parts = if values.get("messages").is_some() {
                    vec![Part::Text(reply(&messages[..end]))]
                } else {
                    // A graph without messages answers with its output values.
                    vec![Part::Data(values.clone())]
                };
                vec![Artifact {
                    id: format!("reply-{}", latest["run_id"].as_str().unwrap_or_default()),
                    name: "reply",
                    parts,
                }]
            }
            TaskState::InputRequired => vec![Artifact {
                id: format!("question-{}", latest["run_id"].as_str().unwrap_or_default()),
                name: "question",
                parts: self.questions(),
            }],
            _ => Vec::new(),
        };
        let history = match history_length {
            Some(0) => None,
            keep => {
                let mut history = self.history(&messages[..end]);
                if let Some(keep) = keep {
                    history.drain(..history.len().saturating_sub(keep));
                }
                Some(history)
            }
        };
        TaskView {
            id: self.id.clone(),
            context_id: self.context_id.clone(),
            status: Status { state: self.state, timestamp, message },
            artifacts,
            history,
        }
    }

    /// Where this task's part of the thread's messages ends: at the first user message after
    /// the task's own that another task sent (or at the end).
    fn end_of_turn(&self, messages: &[Value]) -> usize {
        let own: Vec<&str> = self.runs.iter().filter_map(|r| r["metadata"]["a2a"]["message_id"].as_str()).collect();
        let Some(start) = messages.iter().rposition(|m| m["id"].as_str().is_some_and(|id| own.contains(&id))) else {
            return messages.len();
        };
        messages[start + 1..]
            .iter()
            .position(|m| is_user(m) && !m["id"].as_str().is_some_and(|id| own.contains(&id)))
            .map_or(messages.len(), |at| start + 1 + at)
    }

    /// The messages as A2A shows them: the user's and the agent's text (tool and system
    /// messages, and the agent's tool calls without text, are left out), each marked with the
    /// task whose run received it.
    fn history(&self, messages: &[Value]) -> Vec<Said> {
        let tasks: HashMap<&str, &str> = self
            .thread_runs
            .iter()
            .filter_map(|r| Some((r["metadata"]["a2a"]["message_id"].as_str()?, task_of(r))))
            .collect();
        let mut current: Option<String> = None;
        let mut out = Vec::new();
        for message in messages {
            let id = message["id"].as_str().map_or_else(|| uuid::Uuid::new_v4().to_string(), str::to_owned);
            let role = if is_user(message) {
                current = tasks.get(id.as_str()).map(|t| (*t).to_owned());
                Role::User
            } else if message["type"] == "ai" {
                Role::Agent
            } else {
                continue;
            };
            let text = text_of(&message["content"]);
            if role == Role::Agent && text.is_empty() {
                continue;
            }
            out.push(Said { id, role, parts: vec![Part::Text(text)], task_id: current.clone() });
        }
        out
    }

    /// The questions the thread waits on, one data part each (`{"id", "value"}`).
    fn questions(&self) -> Vec<Part> {
        let by_task = self.thread["interrupts"].as_object().into_iter().flat_map(|m| m.values());
        by_task
            .filter_map(Value::as_array)
            .flatten()
            .map(|i| Part::Data(json!({"id": i["id"], "value": i["value"]})))
            .collect()
    }
}

/// The agent's reply in a turn: its last message with text after the user's last.
fn reply(messages: &[Value]) -> String {
    let turn = messages.iter().rposition(is_user).map_or(messages, |at| &messages[at + 1..]);
    turn.iter()
        .rev()
        .filter(|m| m["type"] == "ai")
        .map(|m| text_of(&m["content"]))
        .find(|t| !t.is_empty())
        .unwrap_or_default()
}

fn is_user(message: &Value) -> bool {
    message["type"] == "human"
}

/// A message's content as text: a string, or the text blocks of a list.
pub(super) fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(kind: &str, id: &str, text: &str) -> Value {
        json!({"type": kind, "id": id, "content": text})
    }

    fn task(runs: Vec<Value>, thread_runs: Vec<Value>, messages: Vec<Value>) -> Task {
        Task {
            id: "r1".into(),
            context_id: "c".into(),
            state: TaskState::Completed,
            runs,
            thread_runs,
            thread: json!({"values": {"messages": Value::Array(messages)}, "status": "idle", "interrupts": {}}),
        }
    }

    fn run(id: &str, task: Option<&str>, message: &str) -> Value {
        json!({"run_id": id, "status": "success", "updated_at": "t", "metadata": run_metadata(task, message)})
    }

    #[test]
    fn a_task_shows_its_own_turn_and_what_came_before_not_what_came_after() {
        let messages = vec![
            message("human", "m0", "earlier"),
            message("ai", "a0", "earlier reply"),
            message("human", "m1", "hi"),
            message("ai", "a1", ""),
            message("tool", "t1", "tool output"),
            message("ai", "a2", "hello"),
            message("human", "m2", "later"),
            message("ai", "a3", "later reply"),
        ];
        let thread_runs = vec![run("r2", None, "m2"), run("r1", None, "m1"), run("r0", None, "m0")];
        let view = task(vec![thread_runs[1].clone()], thread_runs, messages).view(None, None);
        assert_eq!(view.artifacts[0].parts, vec![Part::Text("hello".into())]);
        let history = view.history.unwrap();
        let shown: Vec<(&str, Option<&str>)> = history.iter().map(|m| (m.id.as_str(), m.task_id.as_deref())).collect();
        assert_eq!(shown, [("m0", Some("r0")), ("a0", Some("r0")), ("m1", Some("r1")), ("a2", Some("r1"))]);
    }

    #[test]
    fn history_length_keeps_the_last_messages_and_zero_none() {
        let messages = vec![message("human", "m1", "hi"), message("ai", "a1", "hello")];
        let runs = vec![run("r1", None, "m1")];
        let t = task(runs.clone(), runs, messages);
        assert_eq!(t.view(Some(1), None).history.unwrap()[0].id, "a1");
        assert!(t.view(Some(0), None).history.is_none());
    }

    #[test]
    fn states_follow_the_latest_run_and_the_thread() {
        assert_eq!(state_of("success", Some("interrupted"), true), TaskState::InputRequired);
        assert_eq!(state_of("success", Some("interrupted"), false), TaskState::Completed);
        assert_eq!(state_of("error", Some("error"), true), TaskState::Failed);
        assert_eq!(state_of("interrupted", Some("idle"), true), TaskState::Canceled);
        assert_eq!(state_of("pending", Some("busy"), true), TaskState::Submitted);
        assert_eq!(state_of("running", Some("busy"), true), TaskState::Working);
    }
}
