//! The JSON shapes of A2A 0.3 (`message/send`; objects tagged with `kind`, states such as
//! `completed`, roles `user` and `agent`) and of A2A 1.0 (`SendMessage`; protobuf's JSON form:
//! `TASK_STATE_COMPLETED`, `ROLE_AGENT`, untagged parts, results and stream events wrapped in
//! the field naming their type). A request is answered in the shape of the version it used.

use serde_json::{Value, json};

/// The protocol version a request spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    /// A2A 0.3: `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`.
    V03,
    /// A2A 1.0: `SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`.
    V1,
}

/// Where a task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum TaskState {
    Submitted,
    Working,
    Completed,
    Failed,
    Canceled,
    InputRequired,
}

impl TaskState {
    /// Whether the task has ended for good: no message continues it.
    pub(super) fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Canceled)
    }

    /// The state's name in A2A 0.3.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Submitted => "submitted",
            Self::Working => "working",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Canceled => "canceled",
            Self::InputRequired => "input-required",
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    User,
    Agent,
}

impl Role {
    /// A role as either version writes it (`user`, `ROLE_USER`, ..).
    pub(super) fn parse(role: &str) -> Option<Self> {
        match role {
            "user" | "ROLE_USER" => Some(Self::User),
            "agent" | "ROLE_AGENT" => Some(Self::Agent),
            _ => None,
        }
    }
}

/// One part of a message or an artifact.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Part {
    Text(String),
    /// Structured data (an object in A2A 0.3).
    Data(Value),
}

/// A message to show: its id, who wrote it, its parts, and the task it belongs to.
#[derive(Clone, Debug)]
pub(super) struct Said {
    pub(super) id: String,
    pub(super) role: Role,
    pub(super) parts: Vec<Part>,
    pub(super) task_id: Option<String>,
}

/// A task's status: its state, when it got there, and what the agent says about it.
#[derive(Clone, Debug)]
pub(super) struct Status {
    pub(super) state: TaskState,
    pub(super) timestamp: String,
    pub(super) message: Option<Said>,
}

/// An output of a task.
#[derive(Clone, Debug)]
pub(super) struct Artifact {
    pub(super) id: String,
    pub(super) name: &'static str,
    pub(super) parts: Vec<Part>,
}

/// A task as shown.
#[derive(Clone, Debug)]
pub(super) struct TaskView {
    pub(super) id: String,
    pub(super) context_id: String,
    pub(super) status: Status,
    pub(super) artifacts: Vec<Artifact>,
    /// `None`: not asked for (`historyLength: 0`).
    pub(super) history: Option<Vec<Said>>,
}

impl Dialect {
    fn state(self, state: TaskState) -> String {
        match self {
            Self::V03 => state.name().to_owned(),
            Self::V1 => format!("TASK_STATE_{}", state.name().replace('-', "_").to_uppercase()),
        }
    }

    fn role(self, role: Role) -> &'static str {
        match (self, role) {
            (Self::V03, Role::User) => "user",
            (Self::V03, Role::Agent) => "agent",
            (Self::V1, Role::User) => "ROLE_USER",
            (Self::V1, Role::Agent) => "ROLE_AGENT",
        }
    }

    fn part(self, part: &Part) -> Value {
        match (self, part) {
            (Self::V03, Part::Text(text)) => json!({"kind": "text", "text": text}),
            (Self::V03, Part::Data(data)) => json!({"kind": "data", "data": data}),
            (Self::V1, Part::Text(text)) => json!({"text": text}),
            (Self::V1, Part::Data(data)) => json!({"data": data}),
        }
    }

    fn parts(self, parts: &[Part]) -> Value {
        parts.iter().map(|p| self.part(p)).collect()
    }

    /// A message of the task's context.
    pub(super) fn message(self, said: &Said, context_id: &str) -> Value {
        let mut message = json!({
            "messageId": said.id,
            "role": self.role(said.role),
            "parts": self.parts(&said.parts),
            "contextId": context_id,
        });
        if let Some(task) = &said.task_id {
            message["taskId"] = task.as_str().into();
        }
        if self == Self::V03 {
            message["kind"] = "message".into();
        }
        message
    }

    fn status(self, status: &Status, context_id: &str) -> Value {
        let mut out = json!({"state": self.state(status.state), "timestamp": status.timestamp});
        if let Some(message) = &status.message {
            out["message"] = self.message(message, context_id);
        }
        out
    }

    fn artifact(self, artifact: &Artifact) -> Value {
        json!({"artifactId": artifact.id, "name": artifact.name, "parts": self.parts(&artifact.parts)})
    }

    /// A task object.
    pub(super) fn task(self, task: &TaskView) -> Value {
        let mut out = json!({
            "id": task.id,
            "contextId": task.context_id,
            "status": self.status(&task.status, &task.context_id),
        });
        if !task.artifacts.is_empty() {
            out["artifacts"] = task.artifacts.iter().map(|a| self.artifact(a)).collect();
        }
        if let Some(history) = &task.history {
            out["history"] = history.iter().map(|m| self.message(m, &task.context_id)).collect();
        }
        if self == Self::V03 {
            out["kind"] = "task".into();
        }
        out
    }

    /// A task as the result of a send, or as a stream's first event (1.0 wraps it as `task`).
    pub(super) fn task_result(self, task: &TaskView) -> Value {
        match self {
            Self::V03 => self.task(task),
            Self::V1 => json!({"task": self.task(task)}),
        }
    }

    /// A stream event: the task's status changed; `last` on the stream's final event.
    pub(super) fn status_update(self, task_id: &str, context_id: &str, status: &Status, last: bool) -> Value {
        let update = json!({"taskId": task_id, "contextId": context_id, "status": self.status(status, context_id)});
        match self {
            Self::V03 => {
                let mut update = update;
                update["kind"] = "status-update".into();
                update["final"] = last.into();
                update
            }
            // 1.0 has no `final`: the stream ends after a terminal or input-required state.
            Self::V1 => json!({"statusUpdate": update}),
        }
    }

    /// A stream event: an artifact, whole.
    pub(super) fn artifact_update(self, task_id: &str, context_id: &str, artifact: &Artifact) -> Value {
        let update = json!({
            "taskId": task_id,
            "contextId": context_id,
            "artifact": self.artifact(artifact),
            "append": false,
            "lastChunk": true,
        });
        match self {
            Self::V03 => {
                let mut update = update;
                update["kind"] = "artifact-update".into();
                update
            }
            Self::V1 => json!({"artifactUpdate": update}),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view() -> TaskView {
        TaskView {
            id: "t1".into(),
            context_id: "c1".into(),
            status: Status { state: TaskState::InputRequired, timestamp: "2026-01-01T00:00:00Z".into(), message: None },
            artifacts: vec![Artifact { id: "a1".into(), name: "reply", parts: vec![Part::Text("hi".into())] }],
            history: Some(vec![Said {
                id: "m1".into(),
                role: Role::User,
                parts: vec![Part::Data(json!({"x": 1}))],
                task_id: Some("t1".into()),
            }]),
        }
    }

    #[test]
    fn a_task_in_a2a_0_3_is_tagged_with_kinds_and_lowercase_names() {
        let task = Dialect::V03.task_result(&view());
        assert_eq!(task["kind"], "task");
        assert_eq!(task["status"]["state"], "input-required");
        assert_eq!(task["artifacts"][0]["parts"][0], json!({"kind": "text", "text": "hi"}));
        assert_eq!(task["history"][0]["role"], "user");
        assert_eq!(task["history"][0]["kind"], "message");
        assert_eq!(task["history"][0]["parts"][0], json!({"kind": "data", "data": {"x": 1}}));
    }

    #[test]
    fn a_task_in_a2a_1_0_is_wrapped_with_protobuf_names_and_untagged_parts() {
        let result = Dialect::V1.task_result(&view());
        let task = &result["task"];
        assert!(task.get("kind").is_none());
        assert_eq!(task["status"]["state"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(task["artifacts"][0]["parts"][0], json!({"text": "hi"}));
        assert_eq!(task["history"][0]["role"], "ROLE_USER");
        let status = Status { state: TaskState::Completed, timestamp: "t".into(), message: None };
        let update = Dialect::V1.status_update("t1", "c1", &status, true);
        assert_eq!(update["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED");
        let update = Dialect::V03.status_update("t1", "c1", &status, true);
        assert_eq!((update["kind"].as_str(), update["final"].as_bool()), (Some("status-update"), Some(true)));
    }
}
