//! An assistant's versions in SQLite.

use super::{SqliteMeta, assistant};
use crate::error::ApiError;
use crate::meta::assistant_json;
use crate::meta::version_columns::{VERSION_COLUMNS, set_latest_sql};
use crate::time;
use rusqlite::params;
use serde_json::Value;

impl SqliteMeta {
    pub(crate) async fn assistant_versions(&self, id: &str) -> Result<Vec<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {VERSION_COLUMNS} FROM gw_assistant_versions WHERE assistant_id = ?1 ORDER BY version DESC"
            ))?;
            Ok(stmt.query_map([id], |r| assistant_json(r))?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(crate) async fn set_latest_version(&self, id: &str, version: i64) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let changed =
                conn.prepare_cached(&set_latest_sql("?1", "?2", "?3"))?.execute(params![id, version, time::now()])?;
            if changed == 0 {
                return Ok(None);
            }
            Ok(assistant(conn, &id)?)
        })
        .await
    }
}
