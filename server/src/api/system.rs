//! `/ok`, `/info`, `/metrics`, and the answer for a route the server does not have (`/docs` is
//! in `docs.rs`).

use crate::app::App;
use crate::error::ApiError;
use crate::metrics::{Metrics, QueueStats};
use crate::wire::body::Query;
use axum::Json;
use axum::extract::{MatchedPath, RawQuery, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{Method, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

pub(super) async fn ok() -> Json<Value> {
    Json(json!({"ok": true}))
}

pub(super) async fn info(State(app): State<Arc<App>>) -> Json<Value> {
    Json(json!({
        "version": env!("CARGO_PKG_VERSION"),
        "server": "graphwright-server",
        "flags": {
            "assistants": true,
            "assistant_versions": true,
            "subgraphs": true,
            "thread_storage": true,
            "docs": true,
            "crons": true,
            "langsmith": false,
            "store": true,
            "auth": app.authenticated,
            "authorization": app.policy.is_some(),
        },
    }))
}

/// `GET /metrics`: Prometheus's text format, or `?format=json` for LangGraph's JSON figures.
pub(super) async fn metrics(State(app): State<Arc<App>>, RawQuery(raw): RawQuery) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let json = match query.get("format") {
        None | Some("prometheus") => false,
        Some("json") => true,
        Some(other) => return Err(ApiError::Invalid(format!("`format` must be prometheus or json, not {other:?}"))),
    };
    let queue = QueueStats::of(&app.meta.queue().await?, SystemTime::now());
    if json {
        return Ok(Json(app.metrics.json(&queue, app.graphs.keys().map(String::as_str))).into_response());
    }
    let text = app.metrics.prometheus(&queue);
    Ok(([(CONTENT_TYPE, prometheus_client::encoding::prometheus_text::CONTENT_TYPE)], text).into_response())
}

/// Counts every request a route answered, by method, route pattern and status, and times it.
pub(super) async fn count_request(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_owned();
    let route = request.extensions().get::<MatchedPath>().map_or(Metrics::UNMATCHED, MatchedPath::as_str).to_owned();
    let response = next.run(request).await;
    app.metrics.request(&method, &route, response.status().as_u16(), started.elapsed());
    response
}

pub(super) async fn not_found(method: Method, uri: Uri) -> ApiError {
    ApiError::NotFound(format!("no route for {method} {}", uri.path()))
}
