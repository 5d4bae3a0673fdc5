//! JSON-RPC 2.0 as A2A uses it: one request object per POST, answered with one response object
//! (or, for a streaming method, with server-sent events each holding one). Every error is a
//! JSON-RPC error object in a `200 OK`, never an HTTP error status.

use super::dialect::Dialect;
use crate::error::ApiError;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

/// The JSON-RPC and A2A error codes this endpoint answers with.
pub(super) mod code {
    /// The body is not JSON.
    pub(crate) const PARSE_ERROR: i64 = -32700;
    /// The JSON is not a request object.
    pub(crate) const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
    /// The method's parameters are missing or wrong.
    pub(crate) const INVALID_PARAMS: i64 = -32602;
    /// The server failed (its storage, say); the request may be tried again.
    pub(crate) const INTERNAL_ERROR: i64 = -32603;
    /// No task with that id for this agent.
    pub(crate) const TASK_NOT_FOUND: i64 = -32001;
    /// The task cannot be cancelled in its state.
    pub(crate) const TASK_NOT_CANCELABLE: i64 = -32002;
    /// Push notifications are not offered.
    pub(crate) const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// The operation is not offered, or not for this task.
    pub(crate) const UNSUPPORTED_OPERATION: i64 = -32004;
    /// A part of a kind the agent does not take (a file).
    pub(crate) const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
}

/// A JSON-RPC error object.
#[derive(Debug)]
pub(super) struct RpcError {
    pub(super) code: i64,
    pub(super) message: String,
}

impl RpcError {
    pub(super) fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into() }
    }

    pub(super) fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(code::INVALID_PARAMS, message)
    }

    pub(super) fn json(&self) -> Value {
        json!({"code": self.code, "message": self.message})
    }
}

/// What the server's API errors are on this endpoint: the request's fault (an unknown assistant,
/// a thread of another graph, input the graph does not take) is an invalid-params error, the
/// server's is an internal error.
impl From<ApiError> for RpcError {
    fn from(error: ApiError) -> Self {
        let code = match error {
            ApiError::Storage(_) | ApiError::Graph(_) => code::INTERNAL_ERROR,
            _ => code::INVALID_PARAMS,
        };
        Self::new(code, error.to_string())
    }
}

/// The A2A methods served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Method {
    Send,
    Stream,
    GetTask,
    CancelTask,
}

/// A request read from the body.
pub(super) struct Call {
    pub(super) id: Value,
    pub(super) method: Method,
    pub(super) dialect: Dialect,
    pub(super) params: Map<String, Value>,
}

/// Reads the body as one JSON-RPC request to an A2A method; otherwise the error to answer, and
/// the request's id when it has a valid one.
pub(super) async fn read(body: Body, limit: usize) -> Result<Call, (Value, RpcError)> {
    let fail = |id: &Value, error: RpcError| Err((id.clone(), error));
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        let message = format!("the request body could not be read, or has more than {limit} bytes");
        return fail(&Value::Null, RpcError::new(code::INVALID_REQUEST, message));
    };
    let message: Value = match serde_json::from_slice(&bytes) {
        Ok(message) => message,
        Err(e) => return fail(&Value::Null, RpcError::new(code::PARSE_ERROR, format!("the body is not JSON: {e}"))),
    };
    let Value::Object(mut message) = message else {
        let what = if message.is_array() { "a batch of requests, which A2A does not use" } else { "not an object" };
        return fail(
            &Value::Null,
            RpcError::new(code::INVALID_REQUEST, format!("the body is {what}: send one JSON-RPC request object")),
        );
    };
    let id = match message.remove("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        None | Some(Value::Null) => {
            let error = RpcError::new(
                code::INVALID_REQUEST,
                "the request has no `id`: every A2A method answers, so each request needs one",
            );
            return fail(&Value::Null, error);
        }
        Some(_) => {
            return fail(&Value::Null, RpcError::new(code::INVALID_REQUEST, "`id` must be a string or a number"));
        }
    };
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return fail(&id, RpcError::new(code::INVALID_REQUEST, "`jsonrpc` must be \"2.0\""));
    }
    let Some(name) = message.get("method").and_then(Value::as_str) else {
        return fail(&id, RpcError::new(code::INVALID_REQUEST, "the request has no `method` string"));
    };
    let (method, dialect) = match method_of(name) {
        Ok(found) => found,
        Err(error) => return fail(&id, error),
    };
    let params = match message.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return fail(&id, RpcError::invalid_params("`params` must be an object")),
    };
    Ok(Call { id, method, dialect, params })
}

/// The method a name stands for, in A2A 0.3's spelling (`message/send`) or 1.0's (`SendMessage`).
fn method_of(name: &str) -> Result<(Method, Dialect), RpcError> {
    Ok(match name {
        "message/send" => (Method::Send, Dialect::V03),
        "message/stream" => (Method::Stream, Dialect::V03),
        "tasks/get" => (Method::GetTask, Dialect::V03),
        "tasks/cancel" => (Method::CancelTask, Dialect::V03),
        "SendMessage" => (Method::Send, Dialect::V1),
        "SendStreamingMessage" => (Method::Stream, Dialect::V1),
        "GetTask" => (Method::GetTask, Dialect::V1),
        "CancelTask" => (Method::CancelTask, Dialect::V1),
        push if push.starts_with("tasks/pushNotificationConfig/")
            || push.ends_with("TaskPushNotificationConfig")
            || push == "ListTaskPushNotificationConfigs" =>
        {
            return Err(RpcError::new(
                code::PUSH_NOTIFICATION_NOT_SUPPORTED,
                "push notifications are not offered: stream the task (message/stream) or poll it (tasks/get)",
            ));
        }
        "tasks/resubscribe" | "SubscribeToTask" | "tasks/list" | "ListTasks" => {
            return Err(RpcError::new(
                code::UNSUPPORTED_OPERATION,
                format!("{name} is not offered: poll a task with tasks/get"),
            ));
        }
        other => {
            let shown: String = other.chars().take(100).collect();
            return Err(RpcError::new(
                code::METHOD_NOT_FOUND,
                format!(
                    "no method {shown:?}: this agent answers message/send, message/stream, tasks/get and tasks/cancel (or SendMessage, SendStreamingMessage, GetTask and CancelTask)"
                ),
            ));
        }
    })
}

/// A result response.
pub(super) fn respond(id: &Value, result: &Value) -> Response {
    json_response(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// An error response.
pub(super) fn respond_error(id: &Value, error: &RpcError) -> Response {
    json_response(&json!({"jsonrpc": "2.0", "id": id, "error": error.json()}))
}

fn json_response(body: &Value) -> Response {
    (StatusCode::OK, axum::Json(body)).into_response()
}

/// One server-sent event holding a result response.
pub(super) fn result_event(id: &Value, result: &Value) -> Bytes {
    event(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// One server-sent event holding an error response.
pub(super) fn error_event(id: &Value, error: &RpcError) -> Bytes {
    event(&json!({"jsonrpc": "2.0", "id": id, "error": error.json()}))
}

fn event(response: &Value) -> Bytes {
    // serde_json writes no raw newline, so the response is one `data:` line.
    Bytes::from(format!("data: {response}\n\n"))
}

/// A stream of server-sent events as the response.
pub(super) fn event_stream(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}
