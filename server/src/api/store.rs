//! `/store`: the long-term memory the served graphs share, as LangGraph's clients use it.

use super::respond::{json, no_content, number};
use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::wire::body::{Body, Query};
use axum::extract::{RawQuery, State};
use axum::response::Response;
use graphwright::store::{Filter, Indexing, Item, SearchQuery};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Checks a namespace as LangGraph does: labels neither empty nor holding a dot.
fn checked(namespace: &[String]) -> Result<Vec<&str>, ApiError> {
    for label in namespace {
        if label.is_empty() || label.contains('.') {
            return Err(ApiError::Invalid(format!(
                "namespace label {label:?} is not allowed: labels must be non-empty and contain no '.'"
            )));
        }
    }
    Ok(namespace.iter().map(String::as_str).collect())
}

/// The namespace a store request acts on, as the server's policy lets `action` on `namespace`
/// (with `key`): the one asked, or the one the policy moves it to.
async fn allowed(
    gate: &Gate,
    action: Action,
    namespace: Vec<String>,
    key: Option<&str>,
) -> Result<Vec<String>, ApiError> {
    let grant = gate.grant(Resource::Store, action, json!({"namespace": namespace, "key": key})).await?;
    Ok(grant.namespace().map_or(namespace, <[String]>::to_vec))
}

fn item(item: &Item) -> Value {
    json!({
        "namespace": item.namespace,
        "key": item.key,
        "value": item.value,
        "created_at": humantime::format_rfc3339_micros(item.created_at).to_string(),
        "updated_at": humantime::format_rfc3339_micros(item.updated_at).to_string(),
    })
}

/// An item as a search returns it: with its `score` (null outside a search by meaning).
fn found(found: &Item) -> Value {
    let mut value = item(found);
    value["score"] = found.score.map_or(Value::Null, |score| json!(score));
    value
}

/// What a put's `index` asks: `false` for no vectors, a list of paths for those, nothing (or
/// null) for the store's own fields.
fn indexing(index: Option<Value>) -> Result<Indexing, ApiError> {
    match index {
        None | Some(Value::Null) => Ok(Indexing::AsConfigured),
        Some(Value::Bool(false)) => Ok(Indexing::Off),
        Some(Value::Array(paths)) => paths
            .into_iter()
            .map(|path| match path {
                Value::String(path) => Ok(path),
                other => Err(ApiError::Invalid(format!("`index` paths must be strings, not {other}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Indexing::Fields),
        Some(other) => Err(ApiError::Invalid(format!("`index` must be false or a list of field paths, not {other}"))),
    }
}

#[derive(Deserialize)]
pub(super) struct Put {
    namespace: Vec<String>,
    key: String,
    value: Map<String, Value>,
    /// Minutes.
    #[serde(default)]
    ttl: Option<f64>,
    /// `false`, or the paths to embed instead of the index's own.
    #[serde(default)]
    index: Option<Value>,
}

pub(super) async fn put(State(app): State<Arc<App>>, gate: Gate, Body(body): Body<Put>) -> Result<Response, ApiError> {
    if body.namespace.is_empty() {
        return Err(ApiError::BadRequest("an item needs a namespace of at least one label".into()));
    }
    checked(&body.namespace)?;
    let labels = allowed(&gate, Action::Update, body.namespace, Some(&body.key)).await?;
    let namespace = checked(&labels)?;
    let ttl = match body.ttl {
        None => None,
        Some(minutes) if minutes.is_finite() && minutes > 0.0 => Some(Duration::from_secs_f64(minutes * 60.0)),
        Some(other) => {
            return Err(ApiError::Invalid(format!("`ttl` must be a positive number of minutes, not {other}")));
        }
    };
    let indexing = indexing(body.index)?;
    app.store.put_with(&namespace, &body.key, Value::Object(body.value), ttl, indexing).await?;
    Ok(no_content())
}

pub(super) async fn get(
    State(app): State<Arc<App>>,
    gate: Gate,
    RawQuery(raw): RawQuery,
) -> Result<Response, ApiError> {
    let query = Query::parse(raw.as_deref());
    let key = query.get("key").ok_or_else(|| ApiError::Invalid("`key` is required".into()))?;
    let namespace: Vec<String> =
        query.get("namespace").map(|n| n.split('.').map(str::to_owned).collect()).unwrap_or_default();
    checked(&namespace)?;
    let namespace = allowed(&gate, Action::Read, namespace, Some(key)).await?;
    let found = app.store.get(&checked(&namespace)?, key).await?;
    Ok(json(&found.as_ref().map_or(Value::Null, item)))
}

#[derive(Deserialize)]
pub(super) struct Delete {
    namespace: Vec<String>,
    key: String,
}

pub(super) async fn delete(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Delete>,
) -> Result<Response, ApiError> {
    checked(&body.namespace)?;
    let namespace = allowed(&gate, Action::Delete, body.namespace, Some(&body.key)).await?;
    app.store.delete(&checked(&namespace)?, &body.key).await?;
    Ok(no_content())
}

pub(super) async fn search(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let prefix: Vec<String> =
        serde_json::from_value(body.get("namespace_prefix").cloned().unwrap_or_else(|| json!([])))
            .map_err(|e| ApiError::Invalid(format!("`namespace_prefix` must be a list of labels: {e}")))?;
    checked(&prefix)?;
    let prefix = allowed(&gate, Action::Search, prefix, None).await?;
    let labels = checked(&prefix)?;
    let text = match body.get("query") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.clone()),
        Some(other) => return Err(ApiError::Invalid(format!("`query` must be a string, not {other}"))),
    };
    let filter = match body.get("filter") {
        None | Some(Value::Null) => Filter::new(),
        Some(filter) => Filter::from_json(filter).map_err(|e| ApiError::Invalid(e.to_string()))?,
    };
    let mut query =
        SearchQuery::new().filter(filter).limit(number(&body, "limit", 10)?).offset(number(&body, "offset", 0)?);
    if let Some(text) = text {
        query = query.query(text);
    }
    let items = app.store.search(&labels, query).await?;
    Ok(json(&json!({"items": items.iter().map(found).collect::<Vec<_>>()})))
}

pub(super) async fn namespaces(
    State(app): State<Arc<App>>,
    gate: Gate,
    Body(body): Body<Map<String, Value>>,
) -> Result<Response, ApiError> {
    let labels_of = |key: &str| -> Result<Vec<String>, ApiError> {
        serde_json::from_value(body.get(key).cloned().filter(|v| !v.is_null()).unwrap_or_else(|| json!([])))
            .map_err(|e| ApiError::Invalid(format!("`{key}` must be a list of labels: {e}")))
    };
    let prefix = labels_of("prefix")?;
    let suffix = labels_of("suffix")?;
    let max_depth = match body.get("max_depth") {
        None | Some(Value::Null) => None,
        Some(_) => Some(number(&body, "max_depth", 0)?).filter(|d| *d > 0),
    };
    checked(&prefix)?;
    let prefix = allowed(&gate, Action::Search, prefix, None).await?;
    let all = app.store.list_namespaces(&checked(&prefix)?, max_depth).await?;
    let found: Vec<Vec<String>> = all.into_iter().filter(|ns| ns.ends_with(&suffix)).collect();
    let offset = number(&body, "offset", 0)?;
    let limit = number(&body, "limit", 100)?;
    let page: Vec<_> = found.into_iter().skip(offset).take(limit).collect();
    Ok(json(&json!({"namespaces": page})))
}
