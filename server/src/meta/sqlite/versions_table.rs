//! The versions table in SQLite and the writes an assistant's own writes make to it, in the same
//! transaction, apart from the versions' reads so that the assistants' code can call them.

use crate::meta::version_columns::{CURRENT_COLUMNS, KEPT_COLUMNS};
use rusqlite::Connection;

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
