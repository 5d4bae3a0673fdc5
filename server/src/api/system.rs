//! `/ok`, `/info`, and the answer for a route the server does not have.

use crate::error::ApiError;
use axum::Json;
use axum::http::{Method, Uri};
use serde_json::{Value, json};

pub(super) async fn ok() -> Json<Value> {
    Json(json!({"ok": true}))
}

pub(super) async fn info() -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "server": "graphwright-server",
        "flags": {"assistants": true, "crons": true, "langsmith": false, "store": true},
    }))
}

pub(super) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {method} {}", uri.path()))
}
