//! A span for each request a route answers, named by its route pattern, continuing the caller's
//! trace when the request carries a W3C `traceparent` (with the `otel` feature), so one trace
//! runs from the client through the server to the run and its model calls.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use tracing::field::Empty;

/// Answers `request` inside its span, and records the status it got.
pub(super) async fn request(request: Request, next: Next) -> Response {
    let method = request.method().as_str().to_owned();
    let route = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_owned());
    let span = tracing::info_span!(
        "request",
        "otel.name" = format!("{method} {}", route.as_deref().unwrap_or("unmatched")),
        "otel.kind" = "server",
        "otel.status_code" = Empty,
        "http.request.method" = %method,
        "http.route" = route,
        "url.path" = request.uri().path(),
        "http.response.status_code" = Empty,
    );
    #[cfg(feature = "otel")]
    continue_caller(&span, request.headers());
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        // Client errors are the caller's: OpenTelemetry's HTTP conventions leave a server span unset.
        span.record("otel.status_code", "error");
    }
    response
}

/// Makes `span` a child of the caller's span, when the request names one.
#[cfg(feature = "otel")]
fn continue_caller(span: &tracing::Span, headers: &axum::http::HeaderMap) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(traceparent) = header("traceparent") {
        graphwright::otel::set_parent(span, traceparent, header("tracestate"));
    }
}
