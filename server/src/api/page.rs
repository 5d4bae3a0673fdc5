//! The studio at `/`: static files compiled into the server, no build step, talking to the same
//! endpoints as LangGraph's clients. It draws the chosen graph (`/assistants/{id}/graph?xray=true`,
//! subgraphs folded until clicked), streams runs with the running node lit, lists a thread's
//! checkpoints (`/threads/{id}/history`) to show, edit and fork (`POST /threads/{id}/state` at a
//! checkpoint) or run again from, notes each model call's tokens and each tool call's outcome
//! beside the node that made it, and keeps a chat with interrupts answered. `server/page/app.js`
//! says how the files share the work.

use super::page_files::FILES;
use crate::app::App;
use axum::Router;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

/// A route for each of the page's files.
pub(super) fn routes() -> Router<Arc<App>> {
    FILES.iter().fold(Router::new(), |router, &(path, content_type, body)| {
        router.route(path, get(move || async move { file(content_type, body) }))
    })
}

fn file(content_type: &'static str, body: &'static str) -> Response {
    ([(CONTENT_TYPE, content_type), (CACHE_CONTROL, "no-cache")], body).into_response()
}
