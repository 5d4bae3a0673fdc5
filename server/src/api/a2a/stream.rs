//! `message/stream` (`SendStreamingMessage`): the task as server-sent events, each a JSON-RPC
//! response: the task as submitted, `working`, one `working` update per piece of the agent's
//! text as the graph streams it, the reply (or the question it waits on) as an artifact, and the
//! final status, after which the stream ends.

use super::dialect::{Dialect, Part, Role, Said, Status, TaskState, TaskView};
use super::rpc::{self, RpcError, code};
use super::send::{self, Begun};
use super::task::{self, text_of};
use crate::app::App;
use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// How long the stream may stay silent before a comment line keeps it open.
const KEEP_ALIVE: Duration = Duration::from_secs(10);

/// Starts the run and answers with its events; a request that cannot start one gets a stream
/// holding only the error.
pub(super) async fn stream(
    app: Arc<App>,
    assistant: &str,
    id: Value,
    params: &Map<String, Value>,
    dialect: Dialect,
    user: Option<Arc<graphwright::AuthUser>>,
) -> Response {
    let begun = match send::begin(&app, assistant, params, dialect, true, user).await {
        Ok(begun) => begun,
        Err(error) => return rpc::event_stream(Body::from(rpc::error_event(&id, &error))),
    };
    let (tx, rx) = mpsc::channel(64);
    // The run goes on if the client leaves; its task can be read with tasks/get.
    tokio::spawn(Events { app, id, dialect, tx }.send_all(begun));
    let body =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (Ok::<Bytes, Infallible>(b), rx)) });
    rpc::event_stream(Body::from_stream(body))
}

struct Events {
    app: Arc<App>,
    id: Value,
    dialect: Dialect,
    tx: mpsc::Sender<Bytes>,
}

impl Events {
    /// Sends one result; `false` once the client is gone.
    async fn result(&self, result: Value) -> bool {
        self.tx.send(rpc::result_event(&self.id, &result)).await.is_ok()
    }

    async fn send_all(self, begun: Begun) {
        let (task_id, context_id, d) = (begun.task_id.clone(), begun.context_id.clone(), self.dialect);
        let now = crate::time::now;
        let incoming = &begun.incoming;
        let sent = Said {
            id: incoming.message_id.clone(),
            role: incoming.role,
            parts: incoming
                .text
                .iter()
                .cloned()
                .map(Part::Text)
                .chain((!incoming.data.is_empty()).then(|| Part::Data(Value::Object(incoming.data.clone()))))
                .collect(),
            task_id: Some(task_id.clone()),
        };
        let submitted = TaskView {
            id: task_id.clone(),
            context_id: context_id.clone(),
            status: Status { state: TaskState::Submitted, timestamp: now(), message: None },
            artifacts: Vec::new(),
            history: Some(vec![sent]),
        };
        let working = |message| Status { state: TaskState::Working, timestamp: now(), message };
        if !self.result(d.task_result(&submitted)).await
            || !self.result(d.status_update(&task_id, &context_id, &working(None), false)).await
        {
            return;
        }
        let live = Arc::clone(&begun.accepted.live);
        let mut frames = Arc::clone(&live).follow(0);
        loop {
            tokio::select! {
                frame = frames.next() => {
                    let Some(frame) = frame else { break };
                    let Some(text) = (frame.name == "messages").then(|| streamed_text(&frame.data)).flatten() else { continue };
                    let said = Said { id: uuid::Uuid::new_v4().to_string(), role: Role::Agent, parts: vec![Part::Text(text)], task_id: Some(task_id.clone()) };
                    if !self.result(d.status_update(&task_id, &context_id, &working(Some(said)), false)).await {
                        return;
                    }
                }
                () = tokio::time::sleep(KEEP_ALIVE) => {
                    if self.tx.send(Bytes::from_static(b": keep-alive\n\n")).await.is_err() {
                        return;
                    }
                }
            }
        }
        let failure = send::failure(live.outcome().as_ref());
        let found = task::find(&self.app, &begun.assistant_id, &task_id).await;
        let task = match found {
            Ok(Some(task)) => task,
            Ok(None) => {
                let error =
                    RpcError::new(code::INTERNAL_ERROR, format!("task {task_id} is gone: its thread was deleted"));
                self.tx.send(rpc::error_event(&self.id, &error)).await.ok();
                return;
            }
            Err(error) => {
                self.tx.send(rpc::error_event(&self.id, &RpcError::from(error))).await.ok();
                return;
            }
        };
        let view = task.view(Some(0), failure.as_deref());
        for artifact in &view.artifacts {
            if !self.result(d.artifact_update(&task_id, &context_id, artifact)).await {
                return;
            }
        }
        self.result(d.status_update(&task_id, &context_id, &view.status, true)).await;
    }
}

/// The agent's text in a `messages` event (`[message chunk, metadata]`), if it has any.
fn streamed_text(data: &str) -> Option<String> {
    let event: Value = serde_json::from_str(data).ok()?;
    let message = event.get(0)?;
    let kind = message["type"].as_str()?;
    if !matches!(kind, "AIMessageChunk" | "ai") {
        return None;
    }
    Some(text_of(&message["content"])).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::streamed_text;

    #[test]
    fn only_the_agents_text_is_streamed() {
        assert_eq!(streamed_text(r#"[{"type": "AIMessageChunk", "content": "Hel"}, {}]"#).as_deref(), Some("Hel"));
        assert_eq!(
            streamed_text(r#"[{"type": "ai", "content": [{"type": "text", "text": "lo"}]}, {}]"#).as_deref(),
            Some("lo")
        );
        assert_eq!(streamed_text(r#"[{"type": "tool", "content": "4 °C"}, {}]"#), None);
        assert_eq!(streamed_text(r#"[{"type": "AIMessageChunk", "content": ""}, {}]"#), None);
        assert_eq!(streamed_text("not json"), None);
    }
}
