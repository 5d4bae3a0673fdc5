//! The SQL both databases share for an assistant's versions, apart from the versions' operations
//! so that each database's code can use it without depending on those.

/// The columns of a kept version, in the order
/// [`assistant_json`](super::columns::assistant_json) reads an assistant: a version never
/// changes once kept, so its `updated_at` is when it was made.
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
