//! The agent card: what an A2A client reads first (name, description, where to send requests,
//! what the agent takes and gives). One card per assistant, at
//! `/a2a/{assistant_id}/.well-known/agent-card.json` (where A2A clients look given the agent's
//! URL), at `GET /a2a/{assistant_id}`, and at `/.well-known/agent-card.json?assistant_id=..`.
//!
//! It names both protocol versions served at the agent's URL: 0.3 (`url`, `protocolVersion`)
//! and 1.0 (`supportedInterfaces`), so clients of either find their way.

use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::wire::body::Query;
use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, header};
use serde_json::{Value, json};
use std::sync::Arc;

pub(super) async fn for_path(
    State(app): State<Arc<App>>,
    Path(assistant): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(card(&app, &assistant, &headers).await?))
}

/// The card of `?assistant_id=`; without it, of the only graph's default assistant when the
/// server serves one graph.
pub(super) async fn for_query(
    State(app): State<Arc<App>>,
    gate: Gate,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let query = Query::parse(raw.as_deref());
    let assistant = match (query.get("assistant_id"), app.graphs.keys().next()) {
        (Some(assistant), _) => assistant.to_owned(),
        (None, Some(only)) if app.graphs.len() == 1 => only.clone(),
        (None, _) => {
            let graphs: Vec<&str> = app.graphs.keys().map(String::as_str).collect();
            return Err(ApiError::BadRequest(format!(
                "this server has several agents: name one with ?assistant_id= (an assistant id, or a graph: {})",
                graphs.join(", ")
            )));
        }
    };
    gate.record(&app, Resource::Assistants, Action::Read, &assistant).await?;
    Ok(Json(card(&app, &assistant, &headers).await?))
}

async fn card(app: &App, assistant: &str, headers: &HeaderMap) -> Result<Value, ApiError> {
    let assistant = app.assistant(assistant).await?;
    let id = assistant["assistant_id"].as_str().unwrap_or_default();
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default();
    let name = assistant["name"].as_str().unwrap_or(graph_id);
    let description = match assistant["description"].as_str() {
        Some(text) if !text.trim().is_empty() => text.to_owned(),
        _ => format!("Graph `{graph_id}` as assistant {name:?}, served by graphwright-server"),
    };
    let takes_text = app.graph(graph_id)?.message_fields().contains(&"messages");
    // Text parts become a chat message; a graph without one takes data parts only.
    let input_modes = if takes_text { json!(["application/json", "text/plain"]) } else { json!(["application/json"]) };
    let output_modes = input_modes.clone();
    let url = format!("{}/a2a/{id}", base_url(headers));
    Ok(json!({
        "name": name,
        "description": description,
        "url": url,
        "preferredTransport": "JSONRPC",
        "protocolVersion": "0.3.0",
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "version": env!("CARGO_PKG_VERSION"),
        "capabilities": {"streaming": true, "pushNotifications": false, "stateTransitionHistory": false},
        "defaultInputModes": input_modes,
        "defaultOutputModes": output_modes,
        "skills": [{
            "id": id,
            "name": name,
            "description": description,
            "tags": ["graphwright", graph_id],
            "examples": [],
            "inputModes": input_modes,
            "outputModes": output_modes,
        }],
    }))
}

/// The server's URL as the client reached it: its `Host`, and `https` when a proxy says so.
fn base_url(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .filter(|h| h.parse::<axum::http::uri::Authority>().is_ok())
        .unwrap_or("localhost");
    let https = headers.get("x-forwarded-proto").and_then(|p| p.to_str().ok()) == Some("https");
    format!("{}://{host}", if https { "https" } else { "http" })
}
