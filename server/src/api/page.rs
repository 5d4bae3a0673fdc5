//! The chat page at `/`: three static files compiled into the server, no build step. It talks
//! to the same endpoints as LangGraph's clients (see `server/page/app.js`).

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

fn file(content_type: &'static str, body: &'static str) -> Response {
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")], body).into_response()
}

pub(super) async fn index() -> Response {
    file("text/html; charset=utf-8", include_str!("../../page/index.html"))
}

pub(super) async fn script() -> Response {
    file("text/javascript; charset=utf-8", include_str!("../../page/app.js"))
}

pub(super) async fn style() -> Response {
    file("text/css; charset=utf-8", include_str!("../../page/style.css"))
}
