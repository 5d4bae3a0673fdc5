//! The crons table in SQLite and the deletes a thread's or an assistant's deletion makes in it, in the
//! same transaction, apart from the crons' operations so that the other records' code can call them.

use rusqlite::Connection;

/// The crons' table, created beside the others when the records are opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gw_crons (
    cron_id TEXT PRIMARY KEY, assistant_id TEXT NOT NULL, thread_id TEXT, schedule TEXT NOT NULL, timezone TEXT,
    end_ms INTEGER, payload TEXT NOT NULL, metadata TEXT NOT NULL, enabled INTEGER NOT NULL,
    on_run_completed TEXT, user_id TEXT, next_run_ms INTEGER, created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS gw_crons_next ON gw_crons (next_run_ms) WHERE enabled;
CREATE INDEX IF NOT EXISTS gw_crons_thread ON gw_crons (thread_id);
CREATE INDEX IF NOT EXISTS gw_crons_assistant ON gw_crons (assistant_id);
";

/// Deletes the crons of a thread that is being deleted, in the deletion's transaction.
pub(super) fn delete_thread_crons(conn: &Connection, thread: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM gw_crons WHERE thread_id = ?1", [thread])?;
    Ok(())
}

/// Deletes the crons of an assistant that is being deleted (LangGraph's server deletes them too).
pub(super) fn delete_assistant_crons(conn: &Connection, assistant: &str) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM gw_crons WHERE assistant_id = ?1", [assistant])?;
    Ok(())
}
