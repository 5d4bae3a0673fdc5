//! An assistant's versions in SQLite.

use super::{SqliteMeta, assistant};
use crate::error::ApiError;
use crate::meta::assistant_json;
use crate::meta::versions::{CURRENT_COLUMNS, KEPT_COLUMNS, VERSION_COLUMNS, set_latest_sql};
use crate::time;
use rusqlite::{Connection, params};
use serde_json::Value;

/// The versions' table, created beside the others when the records are opened. A file made
/// before versions were kept gets each assistant's current configuration as its one kept
/// version; the same statement restores the current version of an assistant whose creation
/// stopped between its two inserts (they are not one transaction).
pub(super) fn schema() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS gw_assistant_versions (
             assistant_id TEXT NOT NULL, version INTEGER NOT NULL, graph_id TEXT NOT NULL, config TEXT NOT NULL,
             context TEXT NOT NULL, metadata TEXT NOT NULL, name TEXT NOT NULL, description TEXT,
             created_at TEXT NOT NULL, PRIMARY KEY (assistant_id, version));
         INSERT OR IGNORE INTO gw_assistant_versions ({KEPT_COLUMNS}) SELECT {CURRENT_COLUMNS} FROM gw_assistants;"
    )
}

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

/// Keeps assistant `id`'s current configuration as the version it has (an update's new
/// version, or a new assistant's first); a version already kept stays as it was.
pub(super) fn keep_current(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
        "INSERT OR IGNORE INTO gw_assistant_versions ({KEPT_COLUMNS})
         SELECT {CURRENT_COLUMNS} FROM gw_assistants WHERE assistant_id = ?1"
    ))?
    .execute([id])?;
    Ok(())
}

/// Deletes the versions of an assistant that is being deleted, in the deletion's transaction.
pub(super) fn delete_versions(conn: &Connection, id: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM gw_assistant_versions WHERE assistant_id = ?1")?.execute([id])?;
    Ok(())
}
