//! The records in SQLite: one connection, one server process per file.

mod crons;
mod crons_table;
mod versions;
mod versions_table;

use super::{
    ASSISTANT_COLUMNS, AssistantRow, GivenUp, OpenRun, RUN_COLUMNS, RunEnd, RunRow, THREAD_COLUMNS, ThreadCheck,
    Unfinished, assistant_json, check_multitask, check_thread, refreshed_status, run_json, run_thread_metadata, text,
    thread_json,
};
use crate::error::ApiError;
use crate::meta::version_columns::NEXT_VERSION;
use crate::runs::request::Multitask;
use crate::time;
use rusqlite::{Connection, OptionalExtension, params};
use serde_json::Value;
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
-- A new run's `seq` is the largest one's plus one: found in the index, not by a scan.
CREATE INDEX IF NOT EXISTS gw_runs_seq ON gw_runs (seq);
-- The runs that have not ended, for the queue's figures.
CREATE INDEX IF NOT EXISTS gw_runs_open ON gw_runs (seq) WHERE status IN ('pending', 'running');
";

/// The records, behind one connection.
#[derive(Clone)]
pub(crate) struct SqliteMeta {
    conn: Arc<Mutex<Connection>>,
}

impl SqliteMeta {
    /// Opens (creating) the records in `path`, or in memory.
    pub(crate) fn open(path: Option<&std::path::Path>) -> rusqlite::Result<Self> {
        let conn = match path {
            Some(path) => Connection::open(path)?,
            None => Connection::open_in_memory()?,
        };
        if path.is_some() {
            graphwright::sqlite_file::share(&conn, std::time::Duration::from_secs(5))?;
            // The records' commits are not synced one by one: they survive the process's death,
            // and reach the disk with the checkpointer's next commit, which is synced and shares
            // the file's log. A machine that crashes may lose the last ones; the records are
            // bookkeeping around the checkpoints, and a run left `running` by a lost commit is
            // taken up again when the server starts again.
            conn.pragma_update(None, "synchronous", "NORMAL")?;
        } else {
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
        }
        // Plans that do not depend on bound values: the open-runs query matches the partial
        // index's condition, and SQLite would otherwise compare each bound thread id with it and
        // compile the statement again at every call, which costs more than running it.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
        conn.execute_batch(SCHEMA)?;
        // Columns added after the table's first release: files written before get them here.
        add_column(&conn, "gw_runs", "attempt", "INTEGER NOT NULL DEFAULT 1")?;
        add_column(&conn, "gw_runs", "caller", "TEXT")?;
        add_column(&conn, "gw_runs", "started_at", "TEXT")?;
        conn.execute_batch(crons_table::SCHEMA)?;
        conn.execute_batch(&versions_table::schema())?;
        Ok(Self { conn: Arc::new(Mutex::new(conn)) })
    }

    /// Runs `f` on the connection, in place: its statements are prepared once and its commits
    /// are not synced, so a call takes tens of microseconds, less than handing it to another
    /// thread would.
    #[allow(clippy::unused_async)] // the records' interface is async: PostgreSQL's awaits
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let mut conn = self.conn.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut conn)
    }

    pub(crate) async fn create_assistant(&self, row: AssistantRow, raise: bool) -> Result<Value, ApiError> {
        self.call(move |conn| {
            if !insert_assistant(conn, &row)? && raise {
                return Err(ApiError::Conflict(format!("Assistant {} already exists", row.assistant_id)));
            }
            Ok(assistant(conn, &row.assistant_id)?.unwrap_or(Value::Null))
        })
        .await
    }

    pub(crate) async fn assistant(&self, id: &str) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| Ok(assistant(conn, &id)?)).await
    }

    pub(crate) async fn assistants(&self) -> Result<Vec<Value>, ApiError> {
        self.call(|conn| {
            let mut stmt = conn
                .prepare_cached(&format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants ORDER BY created_at DESC"))?;
            Ok(stmt.query_map([], |r| assistant_json(r))?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(crate) async fn update_assistant(&self, id: &str, merged: Value) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let tx = write(conn)?;
            exec(
                &tx,
                &format!(
                    "UPDATE gw_assistants SET graph_id = ?2, config = ?3, context = ?4, metadata = ?5, name = ?6,
                     description = ?7, version = {NEXT_VERSION}, updated_at = ?8 WHERE assistant_id = ?1"
                ),
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
            versions_table::keep_current(&tx, &id)?;
            let updated = assistant(&tx, &id)?;
            tx.commit()?;
            Ok(updated)
        })
        .await
    }

    pub(crate) async fn delete_assistant(&self, id: &str) -> Result<bool, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let tx = write(conn)?;
            crons_table::delete_assistant_crons(&tx, &id)?;
            versions_table::delete_versions(&tx, &id)?;
            let n = exec(&tx, "DELETE FROM gw_assistants WHERE assistant_id = ?1", [id])?;
            tx.commit()?;
            Ok(n == 1)
        })
        .await
    }

    pub(crate) async fn create_thread(
        &self,
        id: &str,
        metadata: Value,
        graph_id: Option<String>,
        raise: bool,
    ) -> Result<(Option<Value>, bool), ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let inserted = insert_thread(conn, &id, &metadata, graph_id.as_deref())?;
            if !inserted && raise {
                return Err(ApiError::Conflict(format!("Thread {id} already exists")));
            }
            Ok((thread(conn, &id)?, inserted))
        })
        .await
    }

    pub(crate) async fn thread(&self, id: &str) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| Ok(thread(conn, &id)?)).await
    }

    #[allow(clippy::option_option)]
    pub(crate) async fn thread_graph(&self, id: &str) -> Result<Option<Option<String>>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| Ok(thread_graph(conn, &id)?)).await
    }

    pub(crate) async fn thread_metadata(&self, id: &str) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let found: Option<String> =
                row(conn, "SELECT metadata FROM gw_threads WHERE thread_id = ?1", [&id], |r| r.get(0)).optional()?;
            Ok(found.as_deref().map(super::parse))
        })
        .await
    }

    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        self.call(|conn| {
            let mut stmt = conn.prepare_cached(&format!("SELECT {THREAD_COLUMNS} FROM gw_threads"))?;
            Ok(stmt.query_map([], |r| thread_json(r))?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(crate) async fn set_thread_metadata(&self, id: &str, metadata: Value) -> Result<Option<Value>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            exec(
                conn,
                "UPDATE gw_threads SET metadata = ?2, updated_at = ?3 WHERE thread_id = ?1",
                params![id, text(&metadata), time::now()],
            )?;
            Ok(thread(conn, &id)?)
        })
        .await
    }

    pub(crate) async fn refresh_thread(
        &self,
        id: &str,
        interrupted: bool,
        values: Value,
        interrupts: Value,
    ) -> Result<Value, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let status = refreshed_status(!open_runs(conn, &id)?.is_empty(), interrupted);
            set_thread_state(conn, &id, status, &values, &interrupts)?;
            Ok(thread(conn, &id)?.unwrap_or(Value::Null))
        })
        .await
    }

    pub(crate) async fn delete_thread(&self, id: &str) -> Result<bool, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let tx = write(conn)?;
            exec(&tx, "DELETE FROM gw_runs WHERE thread_id = ?1", [&id])?;
            crons_table::delete_thread_crons(&tx, &id)?;
            let n = exec(&tx, "DELETE FROM gw_threads WHERE thread_id = ?1", [&id])?;
            tx.commit()?;
            Ok(n == 1)
        })
        .await
    }

    pub(crate) async fn register(
        &self,
        row: RunRow,
        creates: bool,
        multitask: Multitask,
    ) -> Result<(Value, Vec<String>), ApiError> {
        self.call(move |conn| {
            let tx = write(conn)?;
            let found = thread_graph(&tx, &row.thread_id)?;
            match check_thread(found.as_ref().map(Option::as_deref), &row, creates)? {
                ThreadCheck::Create => {
                    insert_thread(&tx, &row.thread_id, &run_thread_metadata(&row), Some(&row.graph_id))?;
                }
                ThreadCheck::SetGraph => {
                    exec(
                        &tx,
                        "UPDATE gw_threads SET graph_id = ?2 WHERE thread_id = ?1 AND graph_id IS NULL",
                        params![row.thread_id, row.graph_id],
                    )?;
                }
            }
            let superseded = check_multitask(open_runs(&tx, &row.thread_id)?, multitask, &row.thread_id)?;
            let now = time::now();
            exec(
                &tx,
                "INSERT INTO gw_runs (run_id, thread_id, assistant_id, created_at, updated_at, status, metadata,
                     kwargs, multitask_strategy, seq, caller)
                 VALUES (?1, ?2, ?3, ?4, ?4, 'pending', ?5, ?6, ?7, (SELECT COALESCE(MAX(seq), 0) + 1 FROM gw_runs), ?8)",
                params![
                    row.run_id,
                    row.thread_id,
                    row.assistant_id,
                    now,
                    text(&row.metadata),
                    text(&row.kwargs),
                    multitask.as_str(),
                    text(&row.caller)
                ],
            )?;
            let run = run_of(&tx, &row.thread_id, &row.run_id)?.unwrap_or(Value::Null);
            // As LangGraph's server does, the thread's metadata names the graph and assistant of
            // its latest run: front ends list a graph's threads by searching for them.
            exec(
                &tx,
                "UPDATE gw_threads SET status = 'busy', updated_at = ?2, metadata = json_patch(metadata, ?3)
                 WHERE thread_id = ?1",
                params![row.thread_id, now, text(&run_thread_metadata(&row))],
            )?;
            tx.commit()?;
            Ok((run, superseded))
        })
        .await
    }

    pub(crate) async fn run_of(&self, thread: &str, run: &str) -> Result<Option<Value>, ApiError> {
        let (thread, run) = (thread.to_owned(), run.to_owned());
        self.call(move |conn| Ok(run_of(conn, &thread, &run)?)).await
    }

    pub(crate) async fn runs_by_id(&self, ids: Vec<String>) -> Result<Vec<Value>, ApiError> {
        self.call(move |conn| {
            let mut stmt = conn.prepare_cached(&format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = ?1"))?;
            let mut out = Vec::new();
            for id in ids {
                out.extend(stmt.query_row([id], |r| run_json(r)).optional()?);
            }
            Ok(out)
        })
        .await
    }

    pub(crate) async fn runs_of(
        &self,
        thread: &str,
        status: Option<String>,
        limit: i64,
        offset: i64,
    ) -> Result<Option<Vec<Value>>, ApiError> {
        let thread = thread.to_owned();
        self.call(move |conn| {
            if thread_graph(conn, &thread)?.is_none() {
                return Ok(None);
            }
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLUMNS} FROM gw_runs WHERE thread_id = ?1 AND (?2 IS NULL OR status = ?2)
                 ORDER BY seq DESC LIMIT ?3 OFFSET ?4"
            ))?;
            let runs = stmt.query_map(params![thread, status, limit, offset], |r| run_json(r))?;
            Ok(Some(runs.collect::<rusqlite::Result<_>>()?))
        })
        .await
    }

    pub(crate) async fn open_runs(&self, thread: &str) -> Result<Vec<String>, ApiError> {
        let thread = thread.to_owned();
        self.call(move |conn| Ok(open_runs(conn, &thread)?)).await
    }

    pub(crate) async fn delete_run(&self, thread: &str, run: &str) -> Result<bool, ApiError> {
        let (thread, run) = (thread.to_owned(), run.to_owned());
        self.call(move |conn| Ok(delete_run(conn, &thread, &run)?)).await
    }

    pub(crate) async fn set_running(&self, run: &str) -> Result<(), ApiError> {
        let run = run.to_owned();
        self.call(move |conn| {
            // When it first started is kept: a run taken up again continues from what it wrote since.
            exec(
                conn,
                "UPDATE gw_runs SET status = 'running', updated_at = ?2, started_at = COALESCE(started_at, ?2) WHERE run_id = ?1",
                params![run, time::now()],
            )?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn end_run(&self, end: RunEnd) -> Result<(), ApiError> {
        self.call(move |conn| {
            let tx = write(conn)?;
            match end.run_status {
                Some(status) => set_run_status(&tx, &end.run_id, status)?,
                None => {
                    delete_run(&tx, &end.thread_id, &end.run_id)?;
                }
            }
            // Another run queued on the thread keeps it busy.
            let queued = !open_runs(&tx, &end.thread_id)?.is_empty();
            let status = if queued { "busy" } else { end.thread_status };
            set_thread_state(&tx, &end.thread_id, status, &end.values, &end.interrupts)?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    pub(crate) async fn queue(&self) -> Result<Vec<OpenRun>, ApiError> {
        self.call(|conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT thread_id, status, created_at FROM gw_runs WHERE status IN ('pending', 'running') ORDER BY seq",
            )?;
            let rows = stmt.query_map([], |r| {
                Ok(OpenRun {
                    thread_id: r.get(0)?,
                    running: r.get::<_, String>(1)? == "running",
                    created_at: r.get(2)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    /// Marks a run an earlier process left unfinished `error`: it cannot be taken up again.
    /// Its thread is freed unless another run of it is open.
    pub(crate) async fn give_up(&self, thread: &str, run: &str) -> Result<(), ApiError> {
        let (thread, run) = (thread.to_owned(), run.to_owned());
        self.call(move |conn| {
            let tx = write(conn)?;
            set_run_status(&tx, &run, "error")?;
            exec(
                &tx,
                "UPDATE gw_threads SET status = 'error', updated_at = ?2 WHERE thread_id = ?1 AND NOT EXISTS (
                     SELECT 1 FROM gw_runs r WHERE r.thread_id = ?1 AND r.status IN ('pending', 'running'))",
                params![thread, time::now()],
            )?;
            tx.commit()?;
            Ok(())
        })
        .await
    }

    /// Adds the default assistants; the runs an earlier process left unfinished, to take up
    /// again (record, caller, whether it had started, the attempt about to be made), oldest
    /// first. A started run whose next attempt would be past `max_attempts` is marked `error`
    /// instead, and listed second.
    pub(crate) async fn prepare(
        &self,
        assistants: Vec<AssistantRow>,
        max_attempts: u32,
    ) -> Result<(Vec<Unfinished>, Vec<GivenUp>), ApiError> {
        self.call(move |conn| {
            for row in &assistants {
                insert_assistant(conn, row)?;
            }
            let tx = write(conn)?;
            let now = time::now();
            let open: Vec<(bool, Unfinished)> = {
                let mut stmt = tx.prepare(&format!(
                    "SELECT {RUN_COLUMNS}, caller, attempt, started_at FROM gw_runs
                     WHERE status IN ('pending', 'running') ORDER BY seq"
                ))?;
                stmt.query_map([], |r| {
                    let running = r.get::<_, String>(5)? == "running";
                    let caller: Option<String> = r.get(9)?;
                    let caller = caller.as_deref().map_or(Value::Null, super::parse);
                    let run = Unfinished { run: run_json(r)?, caller, started_at: r.get(11)?, attempt: r.get(10)? };
                    Ok((running, run))
                })?
                .collect::<rusqlite::Result<_>>()?
            };
            let (mut unfinished, mut given_up) = (Vec::new(), Vec::new());
            for (started, mut run) in open {
                let attempt = run.attempt;
                let id = run.run["run_id"].as_str().unwrap_or_default().to_owned();
                let next = if started { attempt + 1 } else { attempt };
                if next > max_attempts {
                    exec(&tx, "UPDATE gw_runs SET status = 'error', updated_at = ?2 WHERE run_id = ?1", params![id, now])?;
                    tracing::error!(
                        run = %id, attempts = attempt,
                        "a run was started {attempt} times and its server process stopped each time before it ended: \
                         it is marked `error` and not started again"
                    );
                    let thread_id = run.run["thread_id"].as_str().unwrap_or_default().to_owned();
                    given_up.push(GivenUp { run_id: id, thread_id, attempts: attempt });
                    continue;
                }
                exec(
                    &tx,
                    "UPDATE gw_runs SET status = 'pending', attempt = ?2, updated_at = ?3 WHERE run_id = ?1",
                    params![id, next, now],
                )?;
                run.attempt = next;
                unfinished.push(run);
            }
            // Threads with no run left to take up are freed.
            exec(
                &tx,
                "UPDATE gw_threads SET status = 'error', updated_at = ?1 WHERE status = 'busy' AND NOT EXISTS (
                     SELECT 1 FROM gw_runs r WHERE r.thread_id = gw_threads.thread_id AND r.status IN ('pending', 'running'))",
                [&now],
            )?;
            tx.commit()?;
            if !unfinished.is_empty() {
                tracing::warn!(runs = unfinished.len(), "runs left unfinished by an earlier server process are taken up again");
            }
            Ok((unfinished, given_up))
        })
        .await
    }
}

/// Adds `column` to `table` unless it has it.
fn add_column(conn: &Connection, table: &str, column: &str, declaration: &str) -> rusqlite::Result<()> {
    let has: bool = conn.query_row(
        &format!("SELECT EXISTS (SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1)"),
        [column],
        |r| r.get(0),
    )?;
    if !has {
        conn.execute_batch(&format!("ALTER TABLE {table} ADD COLUMN {column} {declaration}"))?;
    }
    Ok(())
}

/// Runs `sql` with `params`, its statement prepared once per connection.
fn exec(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

/// The one row `sql` with `params` finds, read by `read`; its statement prepared once per
/// connection.
fn row<T>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    read: impl FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, read)
}

/// A transaction that writes. Taken as `IMMEDIATE`: the checkpoints and the store write to the
/// same file, and a deferred transaction that reads first and then writes cannot wait for them
/// (SQLite answers "database is locked" at once instead of applying the busy timeout).
fn write(conn: &mut Connection) -> rusqlite::Result<rusqlite::Transaction<'_>> {
    conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
}

/// Inserts an assistant; `false` if the id is taken.
fn insert_assistant(conn: &Connection, row: &AssistantRow) -> rusqlite::Result<bool> {
    let now = time::now();
    let n = exec(
        conn,
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
    if n == 1 {
        versions_table::keep_current(conn, &row.assistant_id)?;
    }
    Ok(n == 1)
}

fn assistant(conn: &Connection, id: &str) -> rusqlite::Result<Option<Value>> {
    row(conn, &format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants WHERE assistant_id = ?1"), [id], |r| {
        assistant_json(r)
    })
    .optional()
}

/// Inserts a thread; `false` if the id is taken.
fn insert_thread(conn: &Connection, id: &str, metadata: &Value, graph_id: Option<&str>) -> rusqlite::Result<bool> {
    let now = time::now();
    let n = exec(
        conn,
        "INSERT OR IGNORE INTO gw_threads VALUES (?1, ?2, ?2, ?2, ?3, 'idle', '{}', NULL, '{}', ?4)",
        params![id, now, text(metadata), graph_id],
    )?;
    Ok(n == 1)
}

fn thread(conn: &Connection, id: &str) -> rusqlite::Result<Option<Value>> {
    row(conn, &format!("SELECT {THREAD_COLUMNS} FROM gw_threads WHERE thread_id = ?1"), [id], |r| thread_json(r))
        .optional()
}

#[allow(clippy::option_option)]
fn thread_graph(conn: &Connection, id: &str) -> rusqlite::Result<Option<Option<String>>> {
    row(conn, "SELECT graph_id FROM gw_threads WHERE thread_id = ?1", [id], |r| r.get(0)).optional()
}

fn set_thread_state(
    conn: &Connection,
    id: &str,
    status: &str,
    values: &Value,
    interrupts: &Value,
) -> rusqlite::Result<()> {
    let now = time::now();
    exec(
        conn,
        "UPDATE gw_threads SET status = ?2, vals = ?3, interrupts = ?4, updated_at = ?5, state_updated_at = ?5
         WHERE thread_id = ?1",
        params![id, status, text(values), text(interrupts), now],
    )?;
    Ok(())
}

fn run_of(conn: &Connection, thread: &str, run: &str) -> rusqlite::Result<Option<Value>> {
    row(conn, &format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = ?1 AND thread_id = ?2"), [run, thread], |r| {
        run_json(r)
    })
    .optional()
}

fn open_runs(conn: &Connection, thread: &str) -> rusqlite::Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT run_id FROM gw_runs WHERE thread_id = ?1 AND status IN ('pending', 'running') ORDER BY seq",
    )?;
    stmt.query_map([thread], |r| r.get(0))?.collect()
}

fn set_run_status(conn: &Connection, run: &str, status: &str) -> rusqlite::Result<()> {
    exec(conn, "UPDATE gw_runs SET status = ?2, updated_at = ?3 WHERE run_id = ?1", params![run, status, time::now()])?;
    Ok(())
}

fn delete_run(conn: &Connection, thread: &str, run: &str) -> rusqlite::Result<bool> {
    Ok(exec(conn, "DELETE FROM gw_runs WHERE run_id = ?1 AND thread_id = ?2", [run, thread])? == 1)
}
