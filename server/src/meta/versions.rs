//! An assistant's versions (`gw_assistant_versions`, beside the assistants): every
//! configuration an assistant has had, kept so that `POST /assistants/{id}/latest` can make an
//! older one current again. An assistant is version 1 when created; each update keeps the new
//! configuration as the next version (one more than the largest kept, so going back to an old
//! version and updating again never reuses a number); the assistant's own record is its current
//! version.

use super::Meta;
use crate::error::ApiError;
use serde_json::Value;

/// The columns of a kept version, in the order [`assistant_json`](super::assistant_json) reads
/// an assistant: a version never changes once kept, so its `updated_at` is when it was made.
pub(crate) const VERSION_COLUMNS: &str =
    "assistant_id, graph_id, config, context, metadata, name, description, version, created_at, created_at";

/// The columns a version is kept with, in its table's order.
pub(crate) const KEPT_COLUMNS: &str =
    "assistant_id, version, graph_id, config, context, metadata, name, description, created_at";

/// The same columns read from an assistant's record: its current configuration, made when the
/// assistant last changed.
pub(crate) const CURRENT_COLUMNS: &str =
    "assistant_id, version, graph_id, config, context, metadata, name, description, updated_at";

/// The version an update of the assistant being updated gets, in SQL: one more than the largest
/// kept (its own version plus one if none is kept).
pub(crate) const NEXT_VERSION: &str = "COALESCE((SELECT MAX(v.version) FROM gw_assistant_versions v
     WHERE v.assistant_id = gw_assistants.assistant_id), gw_assistants.version) + 1";

/// Makes the kept version bound as `version` of the assistant bound as `id` its current
/// configuration (`id`, `version` and `now` are the placeholders of the backend); changes
/// nothing if that version is not kept.
pub(crate) fn set_latest_sql(id: &str, version: &str, now: &str) -> String {
    format!(
        "UPDATE gw_assistants SET graph_id = v.graph_id, config = v.config, context = v.context,
         metadata = v.metadata, name = v.name, description = v.description, version = v.version,
         updated_at = {now}
         FROM gw_assistant_versions v
         WHERE gw_assistants.assistant_id = {id} AND v.assistant_id = {id} AND v.version = {version}"
    )
}

impl Meta {
    /// Every kept version of assistant `id`, newest first; none for an unknown assistant.
    pub(crate) async fn assistant_versions(&self, id: &str) -> Result<Vec<Value>, ApiError> {
        on_backend!(self, db => db.assistant_versions(id).await)
    }

    /// Makes the kept version `version` of assistant `id` its current configuration (its graph,
    /// config, context, metadata, name and description, and its version number). The assistant
    /// as it now is; `None` if that version is not kept.
    pub(crate) async fn set_latest_version(&self, id: &str, version: i64) -> Result<Option<Value>, ApiError> {
        on_backend!(self, db => db.set_latest_version(id, version).await)
    }
}
