//! The server's own records: assistants, threads and runs (graph checkpoints and store items
//! live in graphwright's savers beside them). In SQLite for one process, or in PostgreSQL for
//! several processes sharing threads and one run queue.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod sqlite;

use crate::error::ApiError;
use crate::runs::request::Multitask;
use crate::sealed::{Row, Sealer, open_run, open_thread};
use serde_json::{Map, Value, json};

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

pub(crate) fn text(value: &Value) -> String {
    value.to_string()
}

/// A JSON column as stored by this server; `null` if it is not JSON (the records are the
/// server's own bookkeeping, shown to clients as they are, never read back into a graph).
pub(crate) fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A result row of either database, read by position.
pub(crate) trait Columns {
    type Error;
    fn text(&self, at: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, at: usize) -> Result<i64, Self::Error>;
}

impl Columns for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, at: usize) -> rusqlite::Result<String> {
        self.get(at)
    }
    fn maybe_text(&self, at: usize) -> rusqlite::Result<Option<String>> {
        self.get(at)
    }
    fn int(&self, at: usize) -> rusqlite::Result<i64> {
        self.get(at)
    }
}

pub(crate) const ASSISTANT_COLUMNS: &str =
    "assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at";

pub(crate) fn assistant_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "assistant_id": row.text(0)?,
        "graph_id": row.text(1)?,
        "config": parse(&row.text(2)?),
        "context": parse(&row.text(3)?),
        "metadata": parse(&row.text(4)?),
        "name": row.text(5)?,
        "description": row.maybe_text(6)?,
        "version": row.int(7)?,
        "created_at": row.text(8)?,
        "updated_at": row.text(9)?,
    }))
}

pub(crate) const THREAD_COLUMNS: &str =
    "thread_id, created_at, updated_at, state_updated_at, metadata, status, config, vals, interrupts, graph_id";

pub(crate) fn thread_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "thread_id": row.text(0)?,
        "created_at": row.text(1)?,
        "updated_at": row.text(2)?,
        "state_updated_at": row.text(3)?,
        "metadata": parse(&row.text(4)?),
        "status": row.text(5)?,
        "config": parse(&row.text(6)?),
        "values": row.maybe_text(7)?.as_deref().map_or(Value::Null, parse),
        "interrupts": parse(&row.text(8)?),
    }))
}

pub(crate) const RUN_COLUMNS: &str =
    "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, kwargs, multitask_strategy";

pub(crate) fn run_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "run_id": row.text(0)?,
        "thread_id": row.text(1)?,
        "assistant_id": row.text(2)?,
        "created_at": row.text(3)?,
        "updated_at": row.text(4)?,
        "status": row.text(5)?,
        "metadata": parse(&row.text(6)?),
        "kwargs": parse(&row.text(7)?),
        "multitask_strategy": row.text(8)?,
    }))
}

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

/// A new run's record.
pub(crate) struct RunRow {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) graph_id: String,
    pub(crate) assistant_id: String,
    pub(crate) metadata: Value,
    pub(crate) kwargs: Value,
    /// What the server's policy sets in the metadata of the thread the run is on (its owner).
    pub(crate) thread_metadata: Map<String, Value>,
    /// Who started the run (`null`: nobody authenticated), kept so that the run can be taken
    /// up again as them when the process dies before it ends.
    pub(crate) caller: Value,
}

/// A run an earlier process accepted and did not finish, to be taken up again.
pub(crate) struct Unfinished {
    /// Its record (its request opened once [`Meta::prepare`] returns it).
    pub(crate) run: Value,
    /// Who started it, as stored (`null`: nobody authenticated).
    pub(crate) caller: Value,
    /// When it first started executing (RFC 3339): it continues from its thread's checkpoints
    /// if one was written since. `None`: it was still waiting for its turn (it starts as asked).
    pub(crate) started_at: Option<String>,
    /// The attempt about to be made (1 for a run that never started).
    pub(crate) attempt: u32,
}

/// A run an earlier process left unfinished that is not taken up again: it was started
/// `attempts` times, its process stopping each time before it ended.
pub(crate) struct GivenUp {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) attempts: u32,
}

/// How a run given up after `attempts` starts ended, as its followers and joiners are told.
pub(crate) fn attempts_exhausted(attempts: impl std::fmt::Display) -> crate::served::Outcome {
    crate::served::Outcome::Failed {
        error: "WorkerLostError".into(),
        message: format!(
            "the run was started {attempts} times and its server process stopped each time before it ended: \
             it is not started again"
        ),
    }
}

/// How a run ended, as its record and its thread's record keep it.
pub(crate) struct RunEnd {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    /// The run's status; `None`: the run is deleted (rolled back).
    pub(crate) run_status: Option<&'static str>,
    /// The thread's status unless another run is queued on it (then it stays `busy`).
    pub(crate) thread_status: &'static str,
    pub(crate) values: Value,
    pub(crate) interrupts: Value,
}

/// A run that has not ended, as the queue's figures count it.
pub(crate) struct OpenRun {
    pub(crate) thread_id: String,
    pub(crate) running: bool,
    /// When it was created (RFC 3339).
    pub(crate) created_at: String,
}

/// What registering a run does to its thread, given the thread's graph as found (`None`: no
/// such thread).
pub(crate) enum ThreadCheck {
    Create,
    SetGraph,
}

#[allow(clippy::option_option)] // the two cases differ: no thread, or a thread with no graph yet
pub(crate) fn check_thread(found: Option<Option<&str>>, row: &RunRow, creates: bool) -> Result<ThreadCheck, ApiError> {
    match found {
        None if creates => Ok(ThreadCheck::Create),
        None => Err(ApiError::thread_not_found(&row.thread_id)),
        Some(Some(other)) if other != row.graph_id => Err(ApiError::Conflict(format!(
            "Thread {} holds a run of graph {other:?}; graph {:?} cannot continue it: use a new thread",
            row.thread_id, row.graph_id
        ))),
        Some(_) => Ok(ThreadCheck::SetGraph),
    }
}

/// What a run adds to its thread's metadata (the whole metadata of a thread the run creates).
pub(crate) fn run_thread_metadata(row: &RunRow) -> Value {
    let mut metadata = row.thread_metadata.clone();
    metadata.insert("graph_id".into(), json!(row.graph_id));
    metadata.insert("assistant_id".into(), json!(row.assistant_id));
    Value::Object(metadata)
}

/// Refuses a run on a thread that has runs in flight under the `reject` strategy; otherwise the
/// runs the new one supersedes (cancelled by `interrupt` and `rollback`).
pub(crate) fn check_multitask(open: Vec<String>, multitask: Multitask, thread: &str) -> Result<Vec<String>, ApiError> {
    if !open.is_empty() && multitask == Multitask::Reject {
        return Err(ApiError::Conflict(format!(
            "Thread {thread} is already running a task (run {}): wait for it to finish, or pass multitask_strategy \"enqueue\" or \"interrupt\"",
            open[0]
        )));
    }
    Ok(if matches!(multitask, Multitask::Interrupt | Multitask::Rollback) { open } else { Vec::new() })
}

/// A thread's status after its state changed outside a run.
pub(crate) fn refreshed_status(busy: bool, interrupted: bool) -> &'static str {
    if busy {
        "busy"
    } else if interrupted {
        "interrupted"
    } else {
        "idle"
    }
}

/// Whether every key of `filter` is in `value` with an equal value (metadata search).
pub(crate) fn contains(value: &Value, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| value.get(k) == Some(v))
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
