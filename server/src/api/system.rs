//! `/ok`, `/info`, and what the server does not offer.

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
        "flags": {"assistants": true, "crons": false, "langsmith": false, "store": true},
    }))
}

pub(super) async fn crons() -> ApiError {
    ApiError::NotImplemented("crons are not offered by this server (see /info: flags.crons is false)".into())
}

pub(super) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {method} {}", uri.path()))
}
