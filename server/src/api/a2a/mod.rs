//! `/a2a/{assistant_id}`: each assistant as an agent of the `Agent2Agent` protocol (JSON-RPC 2.0
//! over HTTP), in A2A 0.3's method names and shapes (`message/send`, `message/stream`,
//! `tasks/get`, `tasks/cancel`) and 1.0's (`SendMessage`, `SendStreamingMessage`, `GetTask`,
//! `CancelTask`), with its agent card.
//!
//! A context (`contextId`) is a thread, made on its first message; a task is the run a message
//! starts (its id is the run's), and the runs that answer the question it waits on when the
//! graph pauses (input-required). A message's text parts become one message in the graph's
//! `messages`; its data parts' fields the rest of the run's input. The task's reply is the
//! agent's last message of the turn, as an artifact; its history is the context's messages up
//! to the task's end.

mod card;
mod dialect;
mod input;
mod rpc;
mod send;
mod stream;
mod task;
mod tasks;

use crate::app::App;
use crate::auth::Caller;
use crate::authz::gate::Gate;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::{get, post};
use rpc::Method;
use std::sync::Arc;

/// The agent routes: the JSON-RPC endpoint and the agent cards.
pub(super) fn routes() -> Router<Arc<App>> {
    Router::new()
        .route("/a2a/{assistant_id}", post(endpoint).get(card::for_path))
        .route("/a2a/{assistant_id}/", post(endpoint).get(card::for_path))
        .route("/a2a/{assistant_id}/.well-known/agent-card.json", get(card::for_path))
        .route("/a2a/{assistant_id}/.well-known/agent.json", get(card::for_path))
        .route("/.well-known/agent-card.json", get(card::for_query))
}

async fn endpoint(
    State(app): State<Arc<App>>,
    Path(assistant): Path<String>,
    Caller(user): Caller,
    gate: Gate,
    body: Body,
) -> Response {
    let call = match rpc::read(body, app.body_limit).await {
        Ok(call) => call,
        Err((id, error)) => return rpc::respond_error(&id, &error),
    };
    let (id, params, dialect) = (call.id, call.params, call.dialect);
    let answer = match call.method {
        Method::Stream => return stream::stream(app, &assistant, id, &params, dialect, user).await,
        Method::Send => send::send(&app, &assistant, &params, dialect, user).await,
        Method::GetTask => tasks::get(&app, &gate, &assistant, &params, dialect).await,
        Method::CancelTask => tasks::cancel(&app, &gate, &assistant, &params, dialect).await,
    };
    match answer {
        Ok(result) => rpc::respond(&id, &result),
        Err(error) => rpc::respond_error(&id, &error),
    }
}
