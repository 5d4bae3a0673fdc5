//! Responses shared by the routes: lists with pagination headers, run streams, run results.

use crate::error::ApiError;
use crate::metrics::Metrics;
use crate::runs::{Cancel, Live};
use crate::served::Outcome;
use crate::wire::sse;
use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use futures::stream;
use serde_json::{Map, Value, json};
use std::cmp::Ordering;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

/// How often a waiting client gets a keep-alive newline (LangGraph's server sends them too;
/// its clients skip leading whitespace), and a quiet run stream a keep-alive comment.
const KEEP_ALIVE: Duration = Duration::from_secs(5);

pub(super) fn json(value: &Value) -> Response {
    (StatusCode::OK, axum::Json(value)).into_response()
}

pub(super) fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// Sorts, pages and answers a search: `X-Pagination-Total` and, when more follow,
/// `X-Pagination-Next` (the next offset).
pub(super) fn page(
    mut items: Vec<Value>,
    search: &Map<String, Value>,
    default_sort: &str,
    sortable: &[&str],
) -> Result<Response, ApiError> {
    let sort_by = search.get("sort_by").and_then(Value::as_str).unwrap_or(default_sort);
    if !sortable.contains(&sort_by) {
        return Err(ApiError::Invalid(format!("`sort_by` must be one of {}, not {sort_by:?}", sortable.join(", "))));
    }
    let descending = match search.get("sort_order").and_then(Value::as_str) {
        None | Some("desc") => true,
        Some("asc") => false,
        Some(other) => return Err(ApiError::Invalid(format!("`sort_order` must be asc or desc, not {other:?}"))),
    };
    items.sort_by(|a, b| {
        let order = compare(&a[sort_by], &b[sort_by]);
        if descending { order.reverse() } else { order }
    });
    let total = items.len();
    let offset = number(search, "offset", 0)?;
    let limit = number(search, "limit", 10)?;
    let selected: Vec<String> = search
        .get("select")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    let page: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|item| if selected.is_empty() { item } else { select(item, &selected) })
        .collect();
    let mut response = json(&Value::Array(page));
    let headers = response.headers_mut();
    headers.insert("x-pagination-total", HeaderValue::from(total));
    if offset + limit < total {
        headers.insert("x-pagination-next", HeaderValue::from(offset + limit));
    }
    Ok(response)
}

fn select(item: Value, fields: &[String]) -> Value {
    match item {
        Value::Object(mut o) => {
            Value::Object(fields.iter().filter_map(|f| o.remove(f).map(|v| (f.clone(), v))).collect())
        }
        other => other,
    }
}

fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::String(a), Value::String(b)) => a.cmp(b),
        (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()).unwrap_or(Ordering::Equal),
        _ => a.to_string().cmp(&b.to_string()),
    }
}

pub(super) fn number(body: &Map<String, Value>, key: &str, default: usize) -> Result<usize, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| ApiError::Invalid(format!("`{key}` must be a non-negative integer, not {v}"))),
    }
}

/// Adds `Content-Location` (the run) and `Location` (where to rejoin it).
pub(super) fn locate(response: &mut Response, live: &Live, stateless: bool, rejoin: &str) {
    let run = if stateless {
        format!("/runs/{}", live.run_id)
    } else {
        format!("/threads/{}/runs/{}", live.thread_id, live.run_id)
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&run) {
        headers.insert(header::CONTENT_LOCATION, value);
    }
    if !stateless && let Ok(value) = HeaderValue::from_str(&format!("{run}/{rejoin}")) {
        headers.insert(header::LOCATION, value);
    }
}

/// Cancels the run when the client goes away before it ended (`on_disconnect: "cancel"`).
struct OnDisconnect {
    live: Arc<Live>,
    cancel: bool,
}

impl Drop for OnDisconnect {
    fn drop(&mut self) {
        if self.cancel && self.live.outcome().is_none() {
            self.live.cancel(Cancel::Interrupt);
        }
    }
}

/// A run's events as an SSE response, from event `from` on.
pub(super) fn event_stream(
    live: &Arc<Live>,
    from: usize,
    cancel_on_disconnect: bool,
    metrics: &Arc<Metrics>,
) -> Response {
    let guard = OnDisconnect { live: Arc::clone(live), cancel: cancel_on_disconnect };
    let open = metrics.stream_opened();
    let with_id = live.resumable;
    // A comment while the run is quiet (a long model or tool call), so that proxies that close
    // idle connections keep the stream open; clients skip comments.
    let frames =
        stream::unfold((Arc::clone(live).follow(from), guard, open), move |(mut frames, guard, open)| async move {
            let bytes = tokio::select! {
                frame = frames.next() => sse::encode(&*frame?, with_id),
                () = tokio::time::sleep(KEEP_ALIVE) => Bytes::from_static(sse::KEEP_ALIVE),
            };
            Some((Ok::<_, Infallible>(bytes), (frames, guard, open)))
        });
    sse_response(Body::from_stream(frames))
}

/// A response streaming `body` as server-sent events, past any proxy's buffering.
pub(super) fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream; charset=utf-8"));
    // `no-cache`, not `no-store`: Chrome reports a streamed `no-store` response it read to its
    // end as aborted (`net::ERR_ABORTED`), so every run would show as failed in a front end's
    // network log. A stream is never reused from a cache either way: it cannot be revalidated.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

/// What `wait` and `join` answer for a run that ended this way.
pub(crate) fn result_of(outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Finished { values } => values.clone(),
        Outcome::Interrupted { values, interrupts } => {
            let mut values = values.clone();
            if let Value::Object(o) = &mut values {
                o.insert("__interrupt__".into(), Value::Array(interrupts.clone()));
            }
            values
        }
        Outcome::Failed { error, message } => json!({"__error__": {"error": error, "message": message}}),
    }
}

/// The run's result once it ends, with keep-alive newlines while it runs.
pub(super) fn result_when_done(live: &Arc<Live>, cancel_on_disconnect: bool) -> Response {
    let guard = OnDisconnect { live: Arc::clone(live), cancel: cancel_on_disconnect };
    let body = stream::unfold(Some(guard), |guard| async move {
        let guard = guard?;
        tokio::select! {
            outcome = guard.live.done() => {
                let bytes = Bytes::from(result_of(&outcome).to_string());
                Some((Ok::<_, Infallible>(bytes), None))
            }
            () = tokio::time::sleep(KEEP_ALIVE) => Some((Ok(Bytes::from_static(b"\n")), Some(guard))),
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}
