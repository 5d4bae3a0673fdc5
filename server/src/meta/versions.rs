//! An assistant's versions (`gw_assistant_versions`, beside the assistants): every
//! configuration an assistant has had, kept so that `POST /assistants/{id}/latest` can make an
//! older one current again. An assistant is version 1 when created; each update keeps the new
//! configuration as the next version (one more than the largest kept, so going back to an old
//! version and updating again never reuses a number); the assistant's own record is its current
//! version.

use super::Meta;
use crate::error::ApiError;
use serde_json::Value;

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
