//! The server's own records: assistants, threads and runs (graph checkpoints and store items
//! live in graphwright's savers beside them). In SQLite for one process, or in PostgreSQL for
//! several processes sharing threads and one run queue.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod sqlite;

mod columns;
mod cron_record;
mod queue;
mod rows;
mod version_columns;

pub(crate) use columns::{
    ASSISTANT_COLUMNS, RUN_COLUMNS, THREAD_COLUMNS, assistant_json, parse, run_json, text, thread_json,
};
pub(crate) use queue::OpenRun;
pub(crate) use rows::{
    AssistantRow, GivenUp, RunEnd, RunRow, ThreadCheck, Unfinished, attempts_exhausted, check_multitask, check_thread,
    contains, refreshed_status, run_thread_metadata,
};

use crate::error::ApiError;
use crate::runs::request::Multitask;
use crate::sealed::{Row, Sealer, open_run, open_thread};
use serde_json::Value;

/// The records, in one of the two databases, with their sensitive values (a thread's values
/// and interrupts, a run's request, a cron's run request) sealed when the server has keys.
#[derive(Clone)]
pub(crate) struct Meta {
    db: Db,
    sealer: Sealer,
}

/// One of the two databases.
#[derive(Clone)]
pub(crate) enum Db {
    Sqlite(sqlite::SqliteMeta),
    #[cfg(feature = "postgres")]
    Postgres(postgres::PgMeta),
}

/// Dispatches a call to the database in use.
macro_rules! on_backend {
    ($meta:expr, $db:ident => $call:expr) => {
        match &$meta.db {
            $crate::meta::Db::Sqlite($db) => $call,
            #[cfg(feature = "postgres")]
            $crate::meta::Db::Postgres($db) => $call,
        }
    };
}

// Declared after `on_backend!`, which they use.
pub(crate) mod crons;
pub(crate) mod versions;

impl Meta {
    pub(crate) fn new(db: Db, sealer: Sealer) -> Self {
        Self { db, sealer }
    }

    /// The database underneath.
    pub(crate) fn db(&self) -> &Db {
        &self.db
    }

    /// What seals and opens the records' sensitive values.
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.sealer
    }

    fn opened_threads(&self, threads: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        threads.into_iter().map(|t| open_thread(&self.sealer, t)).collect()
    }

    fn opened_runs(&self, runs: Vec<Value>) -> Result<Vec<Value>, ApiError> {
        runs.into_iter().map(|r| open_run(&self.sealer, r)).collect()
    }

    /// Seals a thread's values and interrupts as they are to be stored.
    fn seal_state(&self, id: &str, values: Value, interrupts: Value) -> Result<(Value, Value), ApiError> {
        let row = Row::thread(id);
        Ok((self.sealer.seal(values, row, "values")?, self.sealer.seal(interrupts, row, "interrupts")?))
    }

    /// Adds an assistant, or finds the one with its id (a conflict if `raise`).
    pub(crate) async fn create_assistant(&self, row: AssistantRow, raise: bool) -> Result<Value, ApiError> {
        on_backend!(self, db => db.create_assistant(row, raise).await)
    }

    pub(crate) async fn assistant(&self, id: &str) -> Result<Option<Value>, ApiError> {
        on_backend!(self, db => db.assistant(id).await)
    }

    /// Every assistant, newest first.
    pub(crate) async fn assistants(&self) -> Result<Vec<Value>, ApiError> {
        on_backend!(self, db => db.assistants().await)
    }

    /// Replaces an assistant's fields with `merged`'s as its next version, which is kept.
    pub(crate) async fn update_assistant(&self, id: &str, merged: Value) -> Result<Option<Value>, ApiError> {
        on_backend!(self, db => db.update_assistant(id, merged).await)
    }

    pub(crate) async fn delete_assistant(&self, id: &str) -> Result<bool, ApiError> {
        on_backend!(self, db => db.delete_assistant(id).await)
    }

    /// Adds a thread, or finds the one with its id (a conflict if `raise`); whether it was added.
    pub(crate) async fn create_thread(
        &self,
        id: &str,
        metadata: Value,
        graph_id: Option<String>,
        raise: bool,
    ) -> Result<(Option<Value>, bool), ApiError> {
        let (thread, added) = on_backend!(self, db => db.create_thread(id, metadata, graph_id, raise).await)?;
        Ok((thread.map(|t| open_thread(&self.sealer, t)).transpose()?, added))
    }

    pub(crate) async fn thread(&self, id: &str) -> Result<Option<Value>, ApiError> {
        let thread = on_backend!(self, db => db.thread(id).await)?;
        thread.map(|t| open_thread(&self.sealer, t)).transpose()
    }

    /// The graph a thread's runs use: `None` for no such thread, `Some(None)` for a thread
    /// that has no graph yet.
    #[allow(clippy::option_option)]
    pub(crate) async fn thread_graph(&self, id: &str) -> Result<Option<Option<String>>, ApiError> {
        on_backend!(self, db => db.thread_graph(id).await)
    }

    /// A thread's metadata; `None` for no such thread.
    pub(crate) async fn thread_metadata(&self, id: &str) -> Result<Option<Value>, ApiError> {
        on_backend!(self, db => db.thread_metadata(id).await)
    }

    pub(crate) async fn threads(&self) -> Result<Vec<Value>, ApiError> {
        let threads = on_backend!(self, db => db.threads().await)?;
        self.opened_threads(threads)
    }

    pub(crate) async fn set_thread_metadata(&self, id: &str, metadata: Value) -> Result<Option<Value>, ApiError> {
        let thread = on_backend!(self, db => db.set_thread_metadata(id, metadata).await)?;
        thread.map(|t| open_thread(&self.sealer, t)).transpose()
    }

    /// Records a thread's state after an update outside a run; the thread as it now is.
    pub(crate) async fn refresh_thread(
        &self,
        id: &str,
        interrupted: bool,
        values: Value,
        interrupts: Value,
    ) -> Result<Value, ApiError> {
        let (values, interrupts) = self.seal_state(id, values, interrupts)?;
        let thread = on_backend!(self, db => db.refresh_thread(id, interrupted, values, interrupts).await)?;
        open_thread(&self.sealer, thread)
    }

    /// Deletes a thread and its runs; whether it existed.
    pub(crate) async fn delete_thread(&self, id: &str) -> Result<bool, ApiError> {
        on_backend!(self, db => db.delete_thread(id).await)
    }

    /// Records a new run in one transaction (so that two requests cannot both find the thread
    /// free): creates its thread when asked, checks the thread's graph and its runs in flight
    /// against the multitask strategy, and marks the thread busy. Returns the run's record and
    /// the runs the new one supersedes.
    pub(crate) async fn register(
        &self,
        row: RunRow,
        creates: bool,
        multitask: Multitask,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let mut row = row;
        row.kwargs = self.sealer.seal(std::mem::take(&mut row.kwargs), Row::run(&row.run_id), "kwargs")?;
        row.caller = self.sealer.seal(std::mem::take(&mut row.caller), Row::run(&row.run_id), "caller")?;
        let (run, superseded) = on_backend!(self, db => db.register(row, creates, multitask).await)?;
        Ok((open_run(&self.sealer, run)?, superseded))
    }

    pub(crate) async fn run_of(&self, thread: &str, run: &str) -> Result<Option<Value>, ApiError> {
        let run = on_backend!(self, db => db.run_of(thread, run).await)?;
        run.map(|r| open_run(&self.sealer, r)).transpose()
    }

    /// The runs with these ids, wherever they are.
    pub(crate) async fn runs_by_id(&self, ids: Vec<String>) -> Result<Vec<Value>, ApiError> {
        let runs = on_backend!(self, db => db.runs_by_id(ids).await)?;
        self.opened_runs(runs)
    }

    /// A thread's runs, newest first; `None` if there is no such thread.
    pub(crate) async fn runs_of(
        &self,
        thread: &str,
        status: Option<String>,
        limit: i64,
        offset: i64,
    ) -> Result<Option<Vec<Value>>, ApiError> {
        let runs = on_backend!(self, db => db.runs_of(thread, status, limit, offset).await)?;
        runs.map(|runs| self.opened_runs(runs)).transpose()
    }

    /// The runs of a thread that have not ended, oldest first.
    pub(crate) async fn open_runs(&self, thread: &str) -> Result<Vec<String>, ApiError> {
        on_backend!(self, db => db.open_runs(thread).await)
    }

    pub(crate) async fn delete_run(&self, thread: &str, run: &str) -> Result<bool, ApiError> {
        on_backend!(self, db => db.delete_run(thread, run).await)
    }

    /// Marks a run `running` (a single process's runs: it already holds the thread's lock).
    pub(crate) async fn set_running(&self, run: &str) -> Result<(), ApiError> {
        on_backend!(self, db => db.set_running(run).await)
    }

    /// Stores how a run ended, and its thread's state, in one transaction.
    pub(crate) async fn end_run(&self, end: RunEnd) -> Result<(), ApiError> {
        let mut end = end;
        let (values, interrupts) = (std::mem::take(&mut end.values), std::mem::take(&mut end.interrupts));
        (end.values, end.interrupts) = self.seal_state(&end.thread_id, values, interrupts)?;
        on_backend!(self, db => db.end_run(end).await)
    }

    /// Every run that has not ended, oldest first.
    pub(crate) async fn queue(&self) -> Result<Vec<OpenRun>, ApiError> {
        on_backend!(self, db => db.queue().await)
    }

    /// Marks a run an earlier process left unfinished `error` (it cannot be taken up again), for
    /// the reason `outcome` gives (kept for followers in other processes, on PostgreSQL).
    #[cfg_attr(not(feature = "postgres"), allow(unused_variables))] // the reason is kept on PostgreSQL only
    pub(crate) async fn give_up(
        &self,
        thread: &str,
        run: &str,
        outcome: &crate::served::Outcome,
    ) -> Result<(), ApiError> {
        match &self.db {
            Db::Sqlite(db) => db.give_up(thread, run).await,
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                let outcome = serde_json::to_string(outcome).unwrap_or_else(|_| "null".to_owned());
                let outcome = self.sealer.seal_text(&outcome, Row::run(run), "outcome")?;
                db.give_up(thread, run, &outcome).await
            }
        }
    }

    /// Adds each graph's default assistant (kept if there), and deals with the runs a process
    /// that is gone left unfinished: on SQLite (one process), the ones to take up again, oldest
    /// first; and the runs marked `error` instead, having been started `max_attempts` times
    /// already. (On PostgreSQL the cluster's sweep takes runs over, and gives them up.)
    pub(crate) async fn prepare(
        &self,
        assistants: Vec<AssistantRow>,
        max_attempts: u32,
    ) -> Result<(Vec<Unfinished>, Vec<GivenUp>), ApiError> {
        let (unfinished, given_up) = match &self.db {
            Db::Sqlite(db) => db.prepare(assistants, max_attempts).await?,
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => {
                db.prepare(assistants).await?;
                (Vec::new(), Vec::new())
            }
        };
        let unfinished = unfinished
            .into_iter()
            .map(|unfinished| {
                let run = open_run(&self.sealer, unfinished.run)?;
                let id = run["run_id"].as_str().unwrap_or_default().to_owned();
                let caller = self.sealer.open(unfinished.caller, Row::run(&id), "caller")?;
                Ok(Unfinished { run, caller, ..unfinished })
            })
            .collect::<Result<_, ApiError>>()?;
        Ok((unfinished, given_up))
    }
}
