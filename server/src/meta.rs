//! The server's own records, in SQLite: assistants, threads and runs (graph checkpoints and
//! store items live in graphwright's savers beside them).

use crate::error::ApiError;
use crate::time;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gw_assistants (
    assistant_id TEXT PRIMARY KEY, graph_id TEXT NOT NULL, config TEXT NOT NULL, context TEXT NOT NULL,
    metadata TEXT NOT NULL, name TEXT NOT NULL, description TEXT, version INTEGER NOT NULL,
    created_at TEXT NOT NULL, updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS gw_threads (
    thread_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
    state_updated_at TEXT NOT NULL, metadata TEXT NOT NULL, status TEXT NOT NULL, config TEXT NOT NULL,
    vals TEXT, interrupts TEXT NOT NULL, graph_id TEXT);
CREATE TABLE IF NOT EXISTS gw_runs (
    run_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, assistant_id TEXT NOT NULL, created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL, status TEXT NOT NULL, metadata TEXT NOT NULL, kwargs TEXT NOT NULL,
    multitask_strategy TEXT NOT NULL, seq INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS gw_runs_thread ON gw_runs (thread_id, seq);
";

/// The records, behind one connection.
#[derive(Clone)]
pub(crate) struct Meta {
    conn: Arc<Mutex<Connection>>,
}

fn text(value: &Value) -> String {
    value.to_string()
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

impl Meta {
    /// Opens (creating) the records in `path`, or in memory.
    pub(crate) fn open(path: Option<&std::path::Path>) -> rusqlite::Result<Self> {
        let conn = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        if path.is_some() {
            conn.pragma_update(None, "journal_mode", "wal")?;
        }
        conn.execute_batch(SCHEMA)?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Runs `f` on the connection, on this thread (set-up, before serving).
    pub(crate) fn blocking<T>(&self, f: impl FnOnce(&mut Connection) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        let mut conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut conn)
    }

    /// Runs `f` on the connection, off the async threads.
    pub(crate) async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            f(&mut conn)
        })
        .await
        .map_err(|e| ApiError::Storage(format!("a storage task stopped: {e}")))?
    }
}

/// A transaction that writes. Taken as `IMMEDIATE`: the checkpoints and the store write to the
/// same file, and a deferred transaction that reads first and then writes cannot wait for them
/// (SQLite answers "database is locked" at once instead of applying the busy timeout).
pub(crate) fn write(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

// ---- assistants -------------------------------------------------------------------------

/// An assistant record's fields.
pub(crate) struct AssistantRow {
    pub(crate) assistant_id: String,
    pub(crate) graph_id: String,
    pub(crate) config: Value,
    pub(crate) context: Value,
    pub(crate) metadata: Value,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
}

pub(crate) fn assistant_json(row: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "assistant_id": row.get::<_, String>(0)?,
        "graph_id": row.get::<_, String>(1)?,
        "config": parse(&row.get::<_, String>(2)?),
        "context": parse(&row.get::<_, String>(3)?),
        "metadata": parse(&row.get::<_, String>(4)?),
        "name": row.get::<_, String>(5)?,
        "description": row.get::<_, Option<String>>(6)?,
        "version": row.get::<_, i64>(7)?,
        "created_at": row.get::<_, String>(8)?,
        "updated_at": row.get::<_, String>(9)?,
    }))
}

const ASSISTANT_COLUMNS: &str =
    "assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at";

/// Inserts an assistant; `false` if the id is taken.
pub(crate) fn insert_assistant(conn: &Connection, row: &AssistantRow) -> rusqlite::Result<bool> {
    let now = time::now();
    let n = conn.execute(
        "INSERT OR IGNORE INTO gw_assistants VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8, ?8)",
        params![
            row.assistant_id,
            row.graph_id,
            text(&row.config),
            text(&row.context),
            text(&row.metadata),
            row.name,
            row.description,
            now
        ],
    )?;
    Ok(n == 1)
}

pub(crate) fn assistant(conn: &Connection, id: &str) -> rusqlite::Result<Option<Value>> {
    conn.query_row(
        &format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants WHERE assistant_id = ?1"),
        [id],
        assistant_json,
    )
    .optional()
}

pub(crate) fn assistants(conn: &Connection) -> rusqlite::Result<Vec<Value>> {
    let mut stmt = conn.prepare(&format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants ORDER BY created_at DESC"))?;
    stmt.query_map([], assistant_json)?.collect()
}

pub(crate) fn update_assistant(conn: &Connection, id: &str, merged: &Value) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE gw_assistants SET graph_id = ?2, config = ?3, context = ?4, metadata = ?5, name = ?6,
         description = ?7, version = version + 1, updated_at = ?8 WHERE assistant_id = ?1",
        params![
            id,
            merged["graph_id"].as_str().unwrap_or_default(),
            text(&merged["config"]),
            text(&merged["context"]),
            text(&merged["metadata"]),
            merged["name"].as_str().unwrap_or_default(),
            merged["description"].as_str(),
            time::now()
        ],
    )?;
    Ok(())
}

pub(crate) fn delete_assistant(conn: &Connection, id: &str) -> rusqlite::Result<bool> {
    Ok(conn.execute("DELETE FROM gw_assistants WHERE assistant_id = ?1", [id])? == 1)
}

// ---- threads ----------------------------------------------------------------------------

const THREAD_COLUMNS: &str =
    "thread_id, created_at, updated_at, state_updated_at, metadata, status, config, vals, interrupts, graph_id";

pub(crate) fn thread_json(row: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "thread_id": row.get::<_, String>(0)?,
        "created_at": row.get::<_, String>(1)?,
        "updated_at": row.get::<_, String>(2)?,
        "state_updated_at": row.get::<_, String>(3)?,
        "metadata": parse(&row.get::<_, String>(4)?),
        "status": row.get::<_, String>(5)?,
        "config": parse(&row.get::<_, String>(6)?),
        "values": row.get::<_, Option<String>>(7)?.as_deref().map_or(Value::Null, parse),
        "interrupts": parse(&row.get::<_, String>(8)?),
    }))
}

/// Inserts a thread; `false` if the id is taken.
pub(crate) fn insert_thread(
    conn: &Connection,
    id: &str,
    metadata: &Value,
    graph_id: Option<&str>,
) -> rusqlite::Result<bool> {
    let now = time::now();
    let n = conn.execute(
        "INSERT OR IGNORE INTO gw_threads VALUES (?1, ?2, ?2, ?2, ?3, 'idle', '{}', NULL, '{}', ?4)",
        params![id, now, text(metadata), graph_id],
    )?;
    Ok(n == 1)
}

pub(crate) fn thread(conn: &Connection, id: &str) -> rusqlite::Result<Option<Value>> {
    conn.query_row(&format!("SELECT {THREAD_COLUMNS} FROM gw_threads WHERE thread_id = ?1"), [id], thread_json)
        .optional()
}

/// The graph a thread's runs use, once one has run (or as given at creation): `None` for no
/// such thread, `Some(None)` for a thread that has no graph yet.
#[allow(clippy::option_option)] // the two cases differ: 404, or a thread with no state yet
pub(crate) fn thread_graph(conn: &Connection, id: &str) -> rusqlite::Result<Option<Option<String>>> {
    conn.query_row("SELECT graph_id FROM gw_threads WHERE thread_id = ?1", [id], |r| r.get(0)).optional()
}

pub(crate) fn threads(conn: &Connection) -> rusqlite::Result<Vec<Value>> {
    let mut stmt = conn.prepare(&format!("SELECT {THREAD_COLUMNS} FROM gw_threads"))?;
    stmt.query_map([], thread_json)?.collect()
}

pub(crate) fn set_thread_metadata(conn: &Connection, id: &str, metadata: &Value) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE gw_threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
        params![id, text(metadata), time::now()],
    )?;
    Ok(())
}

pub(crate) fn set_thread_graph(conn: &Connection, id: &str, graph_id: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE gw_threads SET graph_id = ?2 WHERE thread_id = ?1 AND graph_id IS NULL",
        params![id, graph_id],
    )?;
    Ok(())
}

pub(crate) fn set_thread_status(conn: &Connection, id: &str, status: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE gw_threads SET status = ?2, updated_at = ?3 WHERE thread_id = ?1",
        params![id, status, time::now()],
    )?;
    Ok(())
}

/// Records a thread's state after a run or an update: its values, status and pending interrupts.
pub(crate) fn set_thread_state(
    conn: &Connection,
    id: &str,
    status: &str,
    values: &Value,
    interrupts: &Value,
) -> rusqlite::Result<()> {
    let now = time::now();
    conn.execute(
        "UPDATE gw_threads SET status = ?2, vals = ?3, interrupts = ?4, updated_at = ?5, state_updated_at = ?5
         WHERE thread_id = ?1",
        params![id, status, text(values), text(interrupts), now],
    )?;
    Ok(())
}

pub(crate) fn delete_thread(conn: &mut Connection, id: &str) -> rusqlite::Result<bool> {
    let tx = write(conn)?;
    tx.execute("DELETE FROM gw_runs WHERE thread_id = ?1", [id])?;
    let n = tx.execute("DELETE FROM gw_threads WHERE thread_id = ?1", [id])?;
    tx.commit()?;
    Ok(n == 1)
}

// ---- runs -------------------------------------------------------------------------------

const RUN_COLUMNS: &str =
    "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, kwargs, multitask_strategy";

pub(crate) fn run_json(row: &rusqlite::Row<'_>) -> rusqlite::Result<Value> {
    Ok(json!({
        "run_id": row.get::<_, String>(0)?,
        "thread_id": row.get::<_, String>(1)?,
        "assistant_id": row.get::<_, String>(2)?,
        "created_at": row.get::<_, String>(3)?,
        "updated_at": row.get::<_, String>(4)?,
        "status": row.get::<_, String>(5)?,
        "metadata": parse(&row.get::<_, String>(6)?),
        "kwargs": parse(&row.get::<_, String>(7)?),
        "multitask_strategy": row.get::<_, String>(8)?,
    }))
}

/// A new run's record.
pub(crate) struct RunRow<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) thread_id: &'a str,
    pub(crate) assistant_id: &'a str,
    pub(crate) metadata: &'a Value,
    pub(crate) kwargs: &'a Value,
    pub(crate) multitask_strategy: &'a str,
}

pub(crate) fn insert_run(conn: &Connection, run: &RunRow<'_>) -> rusqlite::Result<Value> {
    let now = time::now();
    conn.execute(
        "INSERT INTO gw_runs VALUES (?1, ?2, ?3, ?4, ?4, 'pending', ?5, ?6, ?7,
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM gw_runs))",
        params![
            run.run_id,
            run.thread_id,
            run.assistant_id,
            now,
            text(run.metadata),
            text(run.kwargs),
            run.multitask_strategy
        ],
    )?;
    Ok(run_of(conn, run.thread_id, run.run_id)?.unwrap_or(Value::Null))
}

pub(crate) fn run_of(conn: &Connection, thread: &str, run: &str) -> rusqlite::Result<Option<Value>> {
    conn.query_row(
        &format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = ?1 AND thread_id = ?2"),
        [run, thread],
        run_json,
    )
    .optional()
}

pub(crate) fn run_by_id(conn: &Connection, run: &str) -> rusqlite::Result<Option<Value>> {
    conn.query_row(&format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = ?1"), [run], run_json).optional()
}

pub(crate) fn runs_of(
    conn: &Connection,
    thread: &str,
    status: Option<&str>,
    limit: i64,
    offset: i64,
) -> rusqlite::Result<Vec<Value>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {RUN_COLUMNS} FROM gw_runs WHERE thread_id = ?1 AND (?2 IS NULL OR status = ?2)
         ORDER BY seq DESC LIMIT ?3 OFFSET ?4"
    ))?;
    stmt.query_map(params![thread, status, limit, offset], run_json)?.collect()
}

/// The runs of a thread that have not ended, oldest first.
pub(crate) fn open_runs(conn: &Connection, thread: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn
        .prepare("SELECT run_id FROM gw_runs WHERE thread_id = ?1 AND status IN ('pending', 'running') ORDER BY seq")?;
    stmt.query_map([thread], |r| r.get(0))?.collect()
}

pub(crate) fn set_run_status(conn: &Connection, run: &str, status: &str) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE gw_runs SET status = ?2, updated_at = ?3 WHERE run_id = ?1",
        params![run, status, time::now()],
    )?;
    Ok(())
}

pub(crate) fn delete_run(conn: &Connection, thread: &str, run: &str) -> rusqlite::Result<bool> {
    Ok(conn.execute("DELETE FROM gw_runs WHERE run_id = ?1 AND thread_id = ?2", [run, thread])? == 1)
}

/// Marks every run that had not ended as failed: they belonged to a server process that is
/// gone, and their threads are free again.
pub(crate) fn fail_orphaned_runs(conn: &mut Connection) -> rusqlite::Result<usize> {
    let tx = write(conn)?;
    let now = time::now();
    let n = tx.execute(
        "UPDATE gw_runs SET status = 'error', updated_at = ?1 WHERE status IN ('pending', 'running')",
        [&now],
    )?;
    tx.execute("UPDATE gw_threads SET status = 'error', updated_at = ?1 WHERE status = 'busy'", [&now])?;
    tx.commit()?;
    Ok(n)
}

/// Whether every key of `filter` is in `value` with an equal value (metadata search).
pub(crate) fn contains(value: &Value, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| value.get(k) == Some(v))
}
