//! The records in PostgreSQL, shared by several server processes: the same tables as in
//! SQLite, and for the run queue each run's owner (the process executing it), a requested
//! cancellation, its outcome and its events, so that another process can follow, join and
//! cancel it.

mod crons;
mod crons_table;
mod versions;
mod versions_table;

use super::columns::Columns;
use super::{
    ASSISTANT_COLUMNS, AssistantRow, OpenRun, RUN_COLUMNS, RunEnd, RunRow, THREAD_COLUMNS, ThreadCheck, assistant_json,
    check_multitask, check_thread, refreshed_status, run_json, run_thread_metadata, text, thread_json,
};
use crate::error::ApiError;
use crate::meta::version_columns::NEXT_VERSION;
use crate::runs::request::Multitask;
use crate::time;
use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, Row};
use graphwright::checkpoint::deadpool_postgres::{GenericClient, Object, Pool};
use serde_json::Value;
use std::fmt::Write as _;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gw_assistants (
    assistant_id text PRIMARY KEY, graph_id text NOT NULL, config text NOT NULL, context text NOT NULL,
    metadata text NOT NULL, name text NOT NULL, description text, version bigint NOT NULL,
    created_at text NOT NULL, updated_at text NOT NULL);
CREATE TABLE IF NOT EXISTS gw_threads (
    thread_id text PRIMARY KEY, created_at text NOT NULL, updated_at text NOT NULL,
    state_updated_at text NOT NULL, metadata text NOT NULL, status text NOT NULL, config text NOT NULL,
    vals text, interrupts text NOT NULL, graph_id text);
CREATE TABLE IF NOT EXISTS gw_runs (
    run_id text PRIMARY KEY, thread_id text NOT NULL, assistant_id text NOT NULL, created_at text NOT NULL,
    updated_at text NOT NULL, status text NOT NULL, metadata text NOT NULL, kwargs text NOT NULL,
    multitask_strategy text NOT NULL, seq bigserial NOT NULL,
    owner integer NOT NULL, cancel text, outcome text, ended_at_ms bigint);
CREATE INDEX IF NOT EXISTS gw_runs_thread ON gw_runs (thread_id, seq);
CREATE INDEX IF NOT EXISTS gw_runs_open ON gw_runs (owner) WHERE status IN ('pending', 'running');
-- Added after the table's first release: databases made before get them here. (A change to
-- these tables raises SCHEMA_VERSION, or databases already made are not given it.)
ALTER TABLE gw_runs ADD COLUMN IF NOT EXISTS attempt integer NOT NULL DEFAULT 1;
ALTER TABLE gw_runs ADD COLUMN IF NOT EXISTS caller text;
ALTER TABLE gw_runs ADD COLUMN IF NOT EXISTS started_at text;
CREATE TABLE IF NOT EXISTS gw_run_events (
    run_id text NOT NULL REFERENCES gw_runs (run_id) ON DELETE CASCADE,
    seq integer NOT NULL, name text NOT NULL, data text NOT NULL,
    PRIMARY KEY (run_id, seq));
";

/// The version of the tables above (`gw_schema_version`): raised with every change to them, so
/// that a database already at it is opened without running them.
const SCHEMA_VERSION: i32 = 1;

/// Whether the database's tables are at [`SCHEMA_VERSION`] (or later, brought there by a newer
/// server).
async fn up_to_date(client: &impl GenericClient) -> Result<bool, ApiError> {
    let exists: bool =
        client.query_one("SELECT to_regclass('gw_schema_version') IS NOT NULL", &[]).await?.try_get(0)?;
    if !exists {
        return Ok(false);
    }
    let version: Option<i32> = client.query_one("SELECT max(version) FROM gw_schema_version", &[]).await?.try_get(0)?;
    Ok(version.is_some_and(|v| v >= SCHEMA_VERSION))
}

/// The channel the server processes sharing the database notify each other on (`crate::cluster`),
/// and the run ends this module announces.
pub(crate) const CHANNEL: &str = "gw_runs";

/// First key of the two-key advisory lock that serializes creating the schema (the second is
/// 0). Two processes starting at once would otherwise race on `CREATE TABLE IF NOT EXISTS`.
const SCHEMA_LOCK: i32 = 0x4757_0010;

/// First key of the two-key advisory lock each live server process holds on a connection of
/// its own, keyed by its owner id: PostgreSQL releases it when that connection or the process
/// dies, which is how the others know the process's runs are orphaned.
pub(crate) const OWNER_LOCK: i32 = 0x4757_0011;

impl Columns for Row {
    type Error = tokio_postgres::Error;
    fn text(&self, at: usize) -> Result<String, Self::Error> {
        self.try_get(at)
    }
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error> {
        self.try_get(at)
    }
    fn int(&self, at: usize) -> Result<i64, Self::Error> {
        self.try_get(at)
    }
}

/// A PostgreSQL error as a storage error whose text carries the server's reason
/// (tokio-postgres's own display says only "db error").
pub(crate) fn pg(error: &tokio_postgres::Error) -> ApiError {
    let text = match error.as_db_error() {
        Some(db) => {
            let mut text = format!("PostgreSQL {} {}: {}", db.severity(), db.code().code(), db.message());
            if let Some(detail) = db.detail() {
                let _ = write!(text, " ({detail})");
            }
            text
        }
        None => match std::error::Error::source(error) {
            Some(cause) => format!("PostgreSQL: {error}: {cause}"),
            None => format!("PostgreSQL: {error}"),
        },
    };
    ApiError::Storage(text)
}

impl From<tokio_postgres::Error> for ApiError {
    fn from(error: tokio_postgres::Error) -> Self {
        pg(&error)
    }
}

/// The records, over a pool of connections, for the process whose owner id is `owner`.
#[derive(Clone)]
pub(crate) struct PgMeta {
    pub(crate) pool: Pool,
    /// This process's owner id: its runs carry it, and its liveness lock is keyed by it.
    pub(crate) owner: i32,
}

impl PgMeta {
    /// Creates the tables if missing.
    pub(crate) async fn open(pool: Pool, owner: i32) -> Result<Self, ApiError> {
        let meta = Self { pool, owner };
        let mut client = meta.client().await?;
        // A database already at this version is left alone: `ALTER TABLE` and `CREATE INDEX`
        // lock their tables even when they change nothing, and a process that starts beside
        // live ones would stall their runs, or deadlock with them.
        if up_to_date(&client).await? {
            return Ok(meta);
        }
        let tx = client.transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1, 0)", &[&SCHEMA_LOCK]).await?;
        // Looked at again under the lock: a process that started at the same moment may have
        // brought it up to date meanwhile.
        if !up_to_date(&tx).await? {
            tx.batch_execute(SCHEMA).await?;
            tx.batch_execute(crons_table::SCHEMA).await?;
            tx.batch_execute(&versions_table::schema()).await?;
            tx.batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS gw_schema_version (version integer NOT NULL);
                 DELETE FROM gw_schema_version;
                 INSERT INTO gw_schema_version (version) VALUES ({SCHEMA_VERSION});"
            ))
            .await?;
        }
        tx.commit().await?;
        Ok(meta)
    }

    pub(crate) async fn client(&self) -> Result<Object, ApiError> {
        self.pool.get().await.map_err(|e| ApiError::Storage(format!("no PostgreSQL connection: {e}")))
    }

    pub(crate) async fn create_assistant(&self, row: AssistantRow, raise: bool) -> Result<Value, ApiError> {
        let client = self.client().await?;
        if !insert_assistant(&client, &row).await? && raise {
            return Err(ApiError::Conflict(format!("Assistant {} already exists", row.assistant_id)));
        }
        Ok(assistant(&client, &row.assistant_id).await?.unwrap_or(Value::Null))
    }

    pub(crate) async fn assistant(&self, id: &str) -> Result<Option<Value>, ApiError> {
        assistant(&self.client().await?, id).await
    }

    pub(crate) async fn assistants(&self) -> Result<Vec<Value>, ApiError> {
        let client = self.client().await?;
        let rows = client
            .query(&format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants ORDER BY created_at DESC"), &[])
            .await?;
        Ok(rows.iter().map(assistant_json).collect::<Result<_, _>>()?)
    }

    pub(crate) async fn update_assistant(&self, id: &str, merged: Value) -> Result<Option<Value>, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        // Locked first, so the update's statement starts after any other update of the
        // assistant committed, and counts the version that one kept.
        tx.execute("SELECT 1 FROM gw_assistants WHERE assistant_id = $1 FOR UPDATE", &[&id]).await?;
        tx.execute(
            &format!(
                "UPDATE gw_assistants SET graph_id = $2, config = $3, context = $4, metadata = $5, name = $6,
                     description = $7, version = {NEXT_VERSION}, updated_at = $8 WHERE assistant_id = $1"
            ),
            &[
                &id,
                &merged["graph_id"].as_str().unwrap_or_default(),
                &text(&merged["config"]),
                &text(&merged["context"]),
                &text(&merged["metadata"]),
                &merged["name"].as_str().unwrap_or_default(),
                &merged["description"].as_str(),
                &time::now(),
            ],
        )
        .await?;
        versions_table::keep_current(&tx, id).await?;
        let updated = assistant(&tx, id).await?;
        tx.commit().await?;
        Ok(updated)
    }

    pub(crate) async fn delete_assistant(&self, id: &str) -> Result<bool, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        crons_table::delete_assistant_crons(&tx, id).await?;
        versions_table::delete_versions(&tx, id).await?;
        let n = tx.execute("DELETE FROM gw_assistants WHERE assistant_id = $1", &[&id]).await?;
        tx.commit().await?;
        Ok(n == 1)
    }

    pub(crate) async fn create_thread(
        &self,
        id: &str,
        metadata: Value,
        graph_id: Option<String>,
        raise: bool,
    ) -> Result<(Option<Value>, bool), ApiError> {
        let client = self.client().await?;
        let inserted = insert_thread(&client, id, &metadata, graph_id.as_deref()).await?;
        if !inserted && raise {
            return Err(ApiError::Conflict(format!("Thread {id} already exists")));
        }
        Ok((thread(&client, id).await?, inserted))
    }

    pub(crate) async fn thread(&self, id: &str) -> Result<Option<Value>, ApiError> {
        thread(&self.client().await?, id).await
    }

    #[allow(clippy::option_option)]
    pub(crate) async fn thread_graph(&self, id: &str) -> Result<Option<Option<String>>, ApiError> {
        let client = self.client().await?;
        let row = client.query_opt("SELECT graph_id FROM gw_threads WHERE thread_id = $1", &[&id]).await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    pub(crate) async fn thread_metadata(&self, id: &str) -> Result<Option<Value>, ApiError> {
        let client = self.client().await?;
        let row = client.query_opt("SELECT metadata FROM gw_threads WHERE thread_id = $1", &[&id]).await?;
        let text: Option<String> = row.map(|r| r.try_get(0)).transpose()?;
        Ok(text.as_deref().map(super::parse))
    }

    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        let client = self.client().await?;
        let rows = client.query(&format!("SELECT {THREAD_COLUMNS} FROM gw_threads"), &[]).await?;
        Ok(rows.iter().map(thread_json).collect::<Result<_, _>>()?)
    }

    pub(crate) async fn set_thread_metadata(&self, id: &str, metadata: Value) -> Result<Option<Value>, ApiError> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE gw_threads SET metadata = $2, updated_at = $3 WHERE thread_id = $1",
                &[&id, &text(&metadata), &time::now()],
            )
            .await?;
        thread(&client, id).await
    }

    pub(crate) async fn refresh_thread(
        &self,
        id: &str,
        interrupted: bool,
        values: Value,
        interrupts: Value,
    ) -> Result<Value, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        let status = refreshed_status(!open_runs(&tx, id).await?.is_empty(), interrupted);
        set_thread_state(&tx, id, status, &values, &interrupts).await?;
        let thread = thread(&tx, id).await?;
        tx.commit().await?;
        Ok(thread.unwrap_or(Value::Null))
    }

    pub(crate) async fn delete_thread(&self, id: &str) -> Result<bool, ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("DELETE FROM gw_runs WHERE thread_id = $1", &[&id]).await?;
        crons_table::delete_thread_crons(&tx, id).await?;
        let n = tx.execute("DELETE FROM gw_threads WHERE thread_id = $1", &[&id]).await?;
        tx.commit().await?;
        Ok(n == 1)
    }

    pub(crate) async fn register(
        &self,
        row: RunRow,
        creates: bool,
        multitask: Multitask,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        if creates {
            // Adds it if missing; two requests creating one thread wait for each other here.
            insert_thread(&tx, &row.thread_id, &run_thread_metadata(&row), Some(&row.graph_id)).await?;
        }
        // The thread's row lock serializes the runs registered on it, across processes.
        let found: Option<Option<String>> = tx
            .query_opt("SELECT graph_id FROM gw_threads WHERE thread_id = $1 FOR UPDATE", &[&row.thread_id])
            .await?
            .map(|r| r.try_get(0))
            .transpose()?;
        if let ThreadCheck::SetGraph = check_thread(found.as_ref().map(Option::as_deref), &row, false)? {
            tx.execute(
                "UPDATE gw_threads SET graph_id = $2 WHERE thread_id = $1 AND graph_id IS NULL",
                &[&row.thread_id, &row.graph_id],
            )
            .await?;
        }
        let superseded = check_multitask(open_runs(&tx, &row.thread_id).await?, multitask, &row.thread_id)?;
        let now = time::now();
        let inserted = tx
            .query_one(
                &format!(
                    "INSERT INTO gw_runs (run_id, thread_id, assistant_id, created_at, updated_at, status, metadata,
                     kwargs, multitask_strategy, owner, caller)
                     VALUES ($1, $2, $3, $4, $4, 'pending', $5, $6, $7, $8, $9)
                     RETURNING {RUN_COLUMNS}"
                ),
                &[
                    &row.run_id,
                    &row.thread_id,
                    &row.assistant_id,
                    &now,
                    &text(&row.metadata),
                    &text(&row.kwargs),
                    &multitask.as_str(),
                    &self.owner,
                    &text(&row.caller),
                ],
            )
            .await?;
        // As LangGraph's server does, the thread's metadata names the graph and assistant of its
        // latest run: front ends list a graph's threads by searching for them.
        tx.execute(
            "UPDATE gw_threads SET status = 'busy', updated_at = $2,
             metadata = (metadata::jsonb || $3::text::jsonb)::text WHERE thread_id = $1",
            &[&row.thread_id, &now, &text(&run_thread_metadata(&row))],
        )
        .await?;
        tx.commit().await?;
        Ok((run_json(&inserted)?, superseded))
    }

    pub(crate) async fn run_of(&self, thread: &str, run: &str) -> Result<Option<Value>, ApiError> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = $1 AND thread_id = $2"),
                &[&run, &thread],
            )
            .await?;
        Ok(row.as_ref().map(run_json).transpose()?)
    }

    pub(crate) async fn runs_by_id(&self, ids: Vec<String>) -> Result<Vec<Value>, ApiError> {
        let client = self.client().await?;
        let rows = client
            .query(&format!("SELECT {RUN_COLUMNS} FROM gw_runs WHERE run_id = ANY($1) ORDER BY seq"), &[&ids])
            .await?;
        Ok(rows.iter().map(run_json).collect::<Result<_, _>>()?)
    }

    pub(crate) async fn runs_of(
        &self,
        thread: &str,
        status: Option<String>,
        limit: i64,
        offset: i64,
    ) -> Result<Option<Vec<Value>>, ApiError> {
        let client = self.client().await?;
        if client.query_opt("SELECT 1 FROM gw_threads WHERE thread_id = $1", &[&thread]).await?.is_none() {
            return Ok(None);
        }
        let rows = client
            .query(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM gw_runs WHERE thread_id = $1 AND ($2::text IS NULL OR status = $2)
                     ORDER BY seq DESC LIMIT $3 OFFSET $4"
                ),
                &[&thread, &status, &limit, &offset],
            )
            .await?;
        Ok(Some(rows.iter().map(run_json).collect::<Result<_, _>>()?))
    }

    pub(crate) async fn open_runs(&self, thread: &str) -> Result<Vec<String>, ApiError> {
        open_runs(&self.client().await?, thread).await
    }

    pub(crate) async fn delete_run(&self, thread: &str, run: &str) -> Result<bool, ApiError> {
        let client = self.client().await?;
        Ok(client.execute("DELETE FROM gw_runs WHERE run_id = $1 AND thread_id = $2", &[&run, &thread]).await? == 1)
    }

    pub(crate) async fn queue(&self) -> Result<Vec<OpenRun>, ApiError> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT thread_id, status, created_at FROM gw_runs WHERE status IN ('pending', 'running') ORDER BY seq",
                &[],
            )
            .await?;
        rows.iter()
            .map(|r| {
                Ok(OpenRun {
                    thread_id: r.try_get(0)?,
                    running: r.try_get::<_, String>(1)? == "running",
                    created_at: r.try_get(2)?,
                })
            })
            .collect()
    }

    pub(crate) async fn set_running(&self, run: &str) -> Result<(), ApiError> {
        let client = self.client().await?;
        client
            .execute("UPDATE gw_runs SET status = 'running', updated_at = $2 WHERE run_id = $1", &[&run, &time::now()])
            .await?;
        Ok(())
    }

    pub(crate) async fn end_run(&self, end: RunEnd) -> Result<(), ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        tx.execute("SELECT 1 FROM gw_threads WHERE thread_id = $1 FOR UPDATE", &[&end.thread_id]).await?;
        match end.run_status {
            Some(status) => {
                tx.execute(
                    // A run another process already failed as orphaned stays failed: its
                    // followers were told so.
                    "UPDATE gw_runs SET status = $2, updated_at = $3 WHERE run_id = $1 AND status IN ('pending', 'running')",
                    &[&end.run_id, &status, &time::now()],
                )
                .await?;
            }
            None => {
                tx.execute("DELETE FROM gw_runs WHERE run_id = $1", &[&end.run_id]).await?;
            }
        }
        let queued = !open_runs(&tx, &end.thread_id).await?.is_empty();
        let status = if queued { "busy" } else { end.thread_status };
        set_thread_state(&tx, &end.thread_id, status, &end.values, &end.interrupts).await?;
        tx.execute("SELECT pg_notify('gw_runs', 'ended ' || $1)", &[&end.run_id]).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Marks a run this process took over and cannot execute `error`, with `outcome` (sealed)
    /// for its followers, frees its thread unless another run of it is open, and tells every
    /// process it ended.
    pub(crate) async fn give_up(&self, thread: &str, run: &str, outcome: &str) -> Result<(), ApiError> {
        let mut client = self.client().await?;
        let tx = client.transaction().await?;
        give_up_in(&tx, thread, run, outcome).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Adds the default assistants. Runs of processes that are gone are left to the
    /// orphan sweep, which every process runs (other processes' runs may be live).
    pub(crate) async fn prepare(&self, assistants: Vec<AssistantRow>) -> Result<(), ApiError> {
        let client = self.client().await?;
        for row in &assistants {
            insert_assistant(&client, row).await?;
        }
        Ok(())
    }
}

async fn insert_assistant(client: &impl GenericClient, row: &AssistantRow) -> Result<bool, ApiError> {
    let now = time::now();
    let n = client
        .execute(
            "INSERT INTO gw_assistants VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8) ON CONFLICT DO NOTHING",
            &[
                &row.assistant_id,
                &row.graph_id,
                &text(&row.config),
                &text(&row.context),
                &text(&row.metadata),
                &row.name,
                &row.description,
                &now,
            ],
        )
        .await?;
    if n == 1 {
        versions_table::keep_current(client, &row.assistant_id).await?;
    }
    Ok(n == 1)
}

async fn assistant(client: &impl GenericClient, id: &str) -> Result<Option<Value>, ApiError> {
    let row = client
        .query_opt(&format!("SELECT {ASSISTANT_COLUMNS} FROM gw_assistants WHERE assistant_id = $1"), &[&id])
        .await?;
    Ok(row.as_ref().map(assistant_json).transpose()?)
}

async fn insert_thread(
    client: &impl GenericClient,
    id: &str,
    metadata: &Value,
    graph_id: Option<&str>,
) -> Result<bool, ApiError> {
    let now = time::now();
    let n = client
        .execute(
            "INSERT INTO gw_threads VALUES ($1, $2, $2, $2, $3, 'idle', '{}', NULL, '{}', $4) ON CONFLICT DO NOTHING",
            &[&id, &now, &text(metadata), &graph_id],
        )
        .await?;
    Ok(n == 1)
}

async fn thread(client: &impl GenericClient, id: &str) -> Result<Option<Value>, ApiError> {
    let row =
        client.query_opt(&format!("SELECT {THREAD_COLUMNS} FROM gw_threads WHERE thread_id = $1"), &[&id]).await?;
    Ok(row.as_ref().map(thread_json).transpose()?)
}

async fn set_thread_state(
    client: &impl GenericClient,
    id: &str,
    status: &str,
    values: &Value,
    interrupts: &Value,
) -> Result<(), ApiError> {
    client
        .execute(
            "UPDATE gw_threads SET status = $2, vals = $3, interrupts = $4, updated_at = $5, state_updated_at = $5
             WHERE thread_id = $1",
            &[&id, &status, &text(values), &text(interrupts), &time::now()],
        )
        .await?;
    Ok(())
}

pub(crate) async fn open_runs(client: &impl GenericClient, thread: &str) -> Result<Vec<String>, ApiError> {
    let rows = client
        .query(
            "SELECT run_id FROM gw_runs WHERE thread_id = $1 AND status IN ('pending', 'running') ORDER BY seq",
            &[&thread],
        )
        .await?;
    Ok(rows.iter().map(|r| r.try_get(0)).collect::<Result<_, _>>()?)
}

/// [`PgMeta::give_up`] inside the transaction `tx` (the orphan sweep's, which holds the dead
/// owner's lock).
pub(crate) async fn give_up_in(
    tx: &tokio_postgres::Transaction<'_>,
    thread: &str,
    run: &str,
    outcome: &str,
) -> Result<(), ApiError> {
    let now = time::now();
    let ended_ms = time::now_ms();
    tx.execute(
        "UPDATE gw_runs SET status = 'error', updated_at = $2, outcome = COALESCE(outcome, $3),
             ended_at_ms = $4 WHERE run_id = $1",
        &[&run, &now, &outcome, &ended_ms],
    )
    .await?;
    tx.execute(
        "UPDATE gw_threads SET updated_at = $2, status = CASE WHEN EXISTS (
             SELECT 1 FROM gw_runs WHERE thread_id = $1 AND status IN ('pending', 'running'))
             THEN 'busy' ELSE 'error' END
         WHERE thread_id = $1",
        &[&thread, &now],
    )
    .await?;
    tx.execute("SELECT pg_notify($1, 'ended ' || $2)", &[&CHANNEL, &run]).await?;
    Ok(())
}
