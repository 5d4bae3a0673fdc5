//! `/assistants/{id}/versions` and `/assistants/{id}/latest`: the configurations an assistant
//! has had, and going back to one of them.

use super::respond::json;
use crate::app::App;
use crate::error::ApiError;
use crate::meta::contains;
use crate::wire::body::{Body, Query};
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The most versions one request lists, as LangGraph's document bounds `limit`.
const MAX_LIMIT: i64 = 1000;

#[derive(Deserialize)]
pub(super) struct Search {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(default)]
    limit: Option<i64>,
    #[serde(default)]
    offset: Option<i64>,
}

/// The assistant's id, from an id or the name of a graph (its default assistant).
async fn assistant_id(app: &App, id: &str) -> Result<String, ApiError> {
    let assistant = app.assistant(id).await?;
    Ok(assistant["assistant_id"].as_str().unwrap_or_default().to_owned())
}

/// `POST /assistants/{id}/versions`: the assistant's versions, newest first, those whose
/// metadata holds `metadata`'s pairs, `limit` of them after `offset`.
pub(super) async fn list(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Body(search): Body<Search>,
) -> Result<Response, ApiError> {
    let limit = search.limit.unwrap_or(10);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::Invalid(format!("`limit` must be between 1 and {MAX_LIMIT}, not {limit}")));
    }
    let offset = search.offset.unwrap_or(0);
    if offset < 0 {
        return Err(ApiError::Invalid(format!("`offset` must not be negative, not {offset}")));
    }
    let id = assistant_id(&app, &id).await?;
    let filter = search.metadata.unwrap_or_default();
    let versions: Vec<Value> = app
        .meta
        .assistant_versions(&id)
        .await?
        .into_iter()
        .filter(|version| contains(&version["metadata"], &filter))
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    Ok(json(&Value::Array(versions)))
}

#[derive(Deserialize)]
pub(super) struct Latest {
    #[serde(default)]
    version: Option<i64>,
}

/// `POST /assistants/{id}/latest`: makes version `version` (from the body, as LangGraph's
/// clients send it, or the query, as LangGraph's document places it) the assistant's current
/// configuration; the assistant as it now is.
pub(super) async fn set_latest(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
    Body(body): Body<Latest>,
) -> Result<Response, ApiError> {
    let from_query = Query::parse(raw.as_deref())
        .get("version")
        .map(|v| v.parse::<i64>().map_err(|_| ApiError::Invalid(format!("`version` must be an integer, not {v:?}"))))
        .transpose()?;
    let version = body
        .version
        .or(from_query)
        .ok_or_else(|| ApiError::Invalid("`version` is required: the version to make current".into()))?;
    let id = assistant_id(&app, &id).await?;
    let versions = app.meta.assistant_versions(&id).await?;
    let Some(kept) = versions.iter().find(|v| v["version"] == version) else {
        let kept: Vec<String> = versions.iter().map(|v| v["version"].to_string()).collect();
        return Err(ApiError::NotFound(format!(
            "Assistant {id} has no version {version}: its versions are {}",
            kept.join(", ")
        )));
    };
    // A version made for a graph this server no longer serves would leave the assistant unable
    // to run.
    let graph_id = kept["graph_id"].as_str().unwrap_or_default();
    if !app.graphs.contains_key(graph_id) {
        return Err(ApiError::Conflict(format!(
            "Version {version} of assistant {id} runs graph {graph_id:?}, which this server does not serve"
        )));
    }
    let updated = app.meta.set_latest_version(&id, version).await?;
    let updated = updated.ok_or_else(|| ApiError::NotFound(format!("Assistant {id} has no version {version}")))?;
    Ok(json(&updated))
}
