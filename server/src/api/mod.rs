//! The HTTP routes of the Agent Server API.

mod a2a;
mod assistants;
mod crons;
mod docs;
mod drawing;
mod mcp;
pub(crate) mod page;
pub(crate) mod page_files;
mod respond;
mod runs;
mod storage;
mod store;
mod subgraphs;
mod system;
mod thread_stream;
mod threads;
mod trace;
mod versions;

use crate::app::App;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post, put};
use std::sync::Arc;

/// Every route, over `app`.
pub(crate) fn router(app: Arc<App>) -> Router {
    let router = Router::new()
        .merge(page::routes())
        .route("/ok", get(system::ok))
        .route("/info", get(system::info))
        .route("/metrics", get(system::metrics))
        .route("/docs", get(docs::get))
        .route("/assistants", post(assistants::create))
        .route("/assistants/search", post(assistants::search))
        .route("/assistants/count", post(assistants::count))
        .route("/assistants/{id}", get(assistants::get).patch(assistants::update).delete(assistants::delete))
        .route("/assistants/{id}/graph", get(drawing::get))
        .route("/assistants/{id}/schemas", get(assistants::schemas))
        .route("/assistants/{id}/subgraphs", get(subgraphs::all))
        .route("/assistants/{id}/subgraphs/{namespace}", get(subgraphs::at))
        .route("/assistants/{id}/versions", post(versions::list))
        .route("/assistants/{id}/latest", post(versions::set_latest))
        .route("/threads", post(threads::create))
        .route("/threads/search", post(threads::search))
        .route("/threads/count", post(threads::count))
        .route("/threads/prune", post(threads::prune))
        .route("/threads/{id}", get(threads::get).patch(threads::update).delete(threads::delete))
        .route("/threads/{id}/copy", post(threads::copy))
        .route("/threads/{id}/state", get(threads::state).post(threads::update_state))
        .route("/threads/{id}/state/checkpoint", post(threads::state_at_body))
        .route("/threads/{id}/state/{checkpoint_id}", get(threads::state_at))
        .route("/threads/{id}/history", get(threads::history_query).post(threads::history))
        .route("/threads/{id}/stream", get(thread_stream::join))
        .route("/threads/{id}/storage", get(storage::get))
        .route("/threads/{id}/runs", get(runs::list).post(runs::create))
        .route("/threads/{id}/runs/stream", post(runs::stream))
        .route("/threads/{id}/runs/wait", post(runs::wait))
        .route("/threads/{id}/runs/{run_id}", get(runs::get).delete(runs::delete))
        .route("/threads/{id}/runs/{run_id}/cancel", post(runs::cancel))
        .route("/threads/{id}/runs/{run_id}/join", get(runs::join))
        .route("/threads/{id}/runs/{run_id}/stream", get(runs::join_stream))
        .route("/runs", post(runs::create_stateless))
        .route("/runs/stream", post(runs::stream_stateless))
        .route("/runs/wait", post(runs::wait_stateless))
        .route("/runs/batch", post(runs::create_batch))
        .route("/runs/cancel", post(runs::cancel_many))
        .route("/runs/crons", post(crons::create))
        .route("/runs/crons/search", post(crons::search))
        .route("/runs/crons/count", post(crons::count))
        .route("/runs/crons/{id}", get(crons::get).patch(crons::update).delete(crons::delete))
        .route("/threads/{id}/runs/crons", post(crons::create_for_thread))
        .route("/store/items", put(store::put).get(store::get).delete(store::delete))
        .route("/store/items/search", post(store::search))
        .route("/store/namespaces", post(store::namespaces))
        .merge(mcp::routes(&app))
        .merge(a2a::routes())
        // After routing, so each request is counted under its route's pattern.
        .route_layer(axum::middleware::from_fn_with_state(Arc::clone(&app), system::count_request));
    // After routing too, so each request is checked under its route's pattern.
    let router = if app.policy.is_some() {
        router.route_layer(axum::middleware::from_fn_with_state(Arc::clone(&app), crate::authz::gate::guard))
    } else {
        router
    };
    // Outermost of the route layers: the request's span holds its checks and its answer.
    router
        .route_layer(axum::middleware::from_fn(trace::request))
        .fallback(system::not_found)
        // Bodies are read, and limited, by `wire::body::Body`.
        .layer(DefaultBodyLimit::disable())
        .with_state(app)
}
