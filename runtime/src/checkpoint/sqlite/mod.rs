//! The SQLite checkpointer: one file, the embedded default for durable runs.

mod liveness;

use super::{BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, Source, WriteRecord};
use futures::FutureExt;
use futures::future::BoxFuture;
use liveness::Owner;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The schema this version writes and reads; stored in `graphwright_meta`. Version 2 adds the
/// claims table.
const SCHEMA_VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS graphwright_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS checkpoints (
    thread_id TEXT NOT NULL,
    id TEXT NOT NULL,
    parent_id TEXT,
    step INTEGER NOT NULL,
    source TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    format INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (thread_id, id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS writes (
    thread_id TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    format INTEGER NOT NULL,
    body BLOB NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS graphwright_claims (
    thread_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    fence INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Keeps checkpoints in one SQLite file in WAL mode, with every commit synced (`synchronous =
/// FULL`), so a checkpoint that was stored survives a crash of the process or the machine.
///
/// rusqlite with SQLite compiled in (`bundled`): no system library to match, one file to back
/// up, and calls that go straight to SQLite without a driver's connection pool in between.
/// Calls run on tokio's blocking pool, so a slow disk never stalls the async workers; on a
/// current-thread runtime with no task alive (a run in `block_on`, as a command-line agent
/// runs one), a call runs in place instead, as nothing else could use the thread meanwhile.
///
/// ```
/// use graphwright::checkpoint::SqliteSaver;
///
/// let dir = std::env::temp_dir().join(format!("graphwright-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let saver = SqliteSaver::open(dir.join("agent.db"))?;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct SqliteSaver {
    connection: Arc<Mutex<Connection>>,
    before_commit: Option<fn()>,
    /// This saver's identity in the claims table.
    owner: Arc<Owner>,
    /// Threads this saver holds now, with the fence of each claim.
    held: Arc<Mutex<HashMap<String, u64>>>,
}

impl std::fmt::Debug for SqliteSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteSaver").finish_non_exhaustive()
    }
}

impl SqliteSaver {
    /// This saver with its checkpoints and writes encrypted at rest under `keys` (see
    /// [`Encrypted`](crate::encryption::Encrypted)); threads stored before stay readable.
    ///
    /// ```
    /// use graphwright::checkpoint::SqliteSaver;
    /// use graphwright::encryption::Keys;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let keys = Keys::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")?;
    /// let saver = SqliteSaver::open(dir.path().join("agent.db"))?.encrypted(keys);
    /// # let _ = saver;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn encrypted(self, keys: crate::encryption::Keys) -> crate::encryption::Encrypted<Self> {
        crate::encryption::Encrypted::new(self, keys)
    }

    /// Opens (or creates) the database at `path` and its tables.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CheckpointError> {
        let path = path.as_ref();
        let connection =
            Connection::open(path).map_err(|e| CheckpointError::backend(format!("opened {}", path.display()), e))?;
        Self::from_connection(connection)
    }

    /// Uses an open connection (for example one opened with custom flags).
    pub fn from_connection(connection: Connection) -> Result<Self, CheckpointError> {
        let setup = |c: &Connection| -> rusqlite::Result<Option<i64>> {
            crate::sqlite_file::share(c, std::time::Duration::from_secs(5))?;
            c.pragma_update(None, "synchronous", "FULL")?;
            // Plans that do not depend on bound values: without this, a cached statement whose
            // plan looked at a parameter's value (STAT4 is compiled in) is compiled again each
            // time it is bound, which costs more than running it. Every statement here finds
            // rows by key, so no value has a better plan to offer.
            c.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
            c.execute_batch(SCHEMA)?;
            c.execute(
                "INSERT OR IGNORE INTO graphwright_meta (key, value) VALUES ('schema_version', ?1)",
                [SCHEMA_VERSION],
            )?;
            // Version 1 lacked only the claims table, which the schema above creates.
            c.execute(
                "UPDATE graphwright_meta SET value = ?1 WHERE key = 'schema_version' AND value = 1",
                [SCHEMA_VERSION],
            )?;
            c.query_row("SELECT value FROM graphwright_meta WHERE key = 'schema_version'", [], |r| r.get(0)).optional()
        };
        let version = setup(&connection).map_err(|e| CheckpointError::backend("set up the checkpoint tables", e))?;
        if version != Some(SCHEMA_VERSION) {
            return Err(CheckpointError::backend(
                "checked the schema version",
                format!("the file has schema version {version:?}; this version of graphwright reads {SCHEMA_VERSION}"),
            ));
        }
        let owner = Arc::new(Owner::new(connection.path().map(Path::new)));
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
            before_commit: None,
            owner,
            held: Arc::new(Mutex::new(HashMap::new())),
        })
    }

    /// Calls `hook` inside every `put` and `prune_to_head`, after its rows are written and
    /// before they commit: a fail point for crash tests (a hook that kills the process leaves a
    /// transaction that never committed). Not for other uses.
    #[doc(hidden)]
    #[must_use]
    pub fn before_commit(mut self, hook: fn()) -> Self {
        self.before_commit = Some(hook);
        self
    }

    /// Runs `f` on the connection: on the blocking pool, or in place when nothing else could
    /// run meanwhile ([`nothing_else_could_run`]).
    fn call<T, F>(&self, operation: String, f: F) -> BoxFuture<'static, Result<T, CheckpointError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, CheckpointError> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        async move {
            let run = move || {
                let mut guard = connection
                    .lock()
                    .map_err(|_| CheckpointError::backend(operation.clone(), "the connection lock is poisoned"))?;
                f(&mut guard)
            };
            if nothing_else_could_run() {
                return run();
            }
            tokio::task::spawn_blocking(run).await.map_err(|e| CheckpointError::backend("ran a database call", e))?
        }
        .boxed()
    }
}

/// Whether a database call may block the calling thread: it runs on a current-thread runtime
/// that has no task alive, so the caller is `block_on`'s own future and nothing else of the
/// runtime is waiting for the thread. Handing the call to the blocking pool then only adds two
/// thread switches to every commit (20 to 50 µs here, against about 250 µs for the commit);
/// with a task alive, or on a multi-thread runtime, the call goes to the pool so that a slow
/// disk stalls no other task.
fn nothing_else_could_run() -> bool {
    tokio::runtime::Handle::try_current().is_ok_and(|runtime| {
        runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread
            && runtime.metrics().num_alive_tasks() == 0
    })
}

fn sql(operation: &str) -> impl Fn(rusqlite::Error) -> CheckpointError + '_ {
    move |e| CheckpointError::backend(operation.to_owned(), e)
}

fn insert_writes(tx: &rusqlite::Transaction<'_>, writes: &[WriteRecord]) -> rusqlite::Result<()> {
    let mut insert = tx.prepare_cached(
        "INSERT OR IGNORE INTO writes (thread_id, checkpoint_id, task, idx, format, body) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    for w in writes {
        insert.execute(params![w.thread_id, w.checkpoint_id, w.task, w.index, w.format, w.body])?;
    }
    Ok(())
}

/// Forgets this process's hold on `thread` if it is the claim with `fence` (a newer claim of
/// the thread, after a delete, stays).
fn forget(held: &Mutex<HashMap<String, u64>>, thread: &str, fence: u64) {
    let mut held = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if held.get(thread) == Some(&fence) {
        held.remove(thread);
    }
}

/// Fails unless `claim` is the thread's current claim and `owner` holds it.
fn check_claim(tx: &Transaction<'_>, claim: &Claim, owner: &str) -> Result<(), CheckpointError> {
    // Cached, like every statement a put runs: compiling a statement costs more CPU than
    // running it, and a put under sync durability runs these once per step.
    let row: Option<(String, i64)> = tx
        .prepare_cached("SELECT owner, fence FROM graphwright_claims WHERE thread_id = ?1")
        .and_then(|mut select| select.query_row([claim.thread()], |r| Ok((r.get(0)?, r.get(1)?))).optional())
        .map_err(sql("checked the thread's claim"))?;
    match row {
        Some((holder, fence)) if holder == owner && u64::try_from(fence).ok() == Some(claim.fence()) => Ok(()),
        Some((_, fence)) => Err(CheckpointError::Fenced {
            thread: claim.thread().to_owned(),
            fence: claim.fence(),
            current: u64::try_from(fence).unwrap_or(0),
        }),
        None => Err(CheckpointError::Fenced { thread: claim.thread().to_owned(), fence: claim.fence(), current: 0 }),
    }
}

/// Reads a checkpoint row, naming the column that does not hold what it should.
fn checkpoint_row(row: &Row<'_>) -> rusqlite::Result<Result<CheckpointRecord, CheckpointError>> {
    let thread_id: String = row.get(0)?;
    let id: String = row.get(1)?;
    let corrupt = |field: &str, reason: String| CheckpointError::Corrupt {
        thread: thread_id.clone(),
        checkpoint: id.clone(),
        field: field.to_owned(),
        reason,
    };
    let parent_id: Option<String> = match row.get(2) {
        Ok(v) => v,
        Err(e) => return Ok(Err(corrupt("parent_id", e.to_string()))),
    };
    let step: i64 = match row.get(3) {
        Ok(v) => v,
        Err(e) => return Ok(Err(corrupt("step", e.to_string()))),
    };
    let source = match row.get::<_, String>(4).map(|s| (Source::parse(&s), s)) {
        Ok((Some(source), _)) => source,
        Ok((None, name)) => return Ok(Err(corrupt("source", format!("unknown source {name:?}")))),
        Err(e) => return Ok(Err(corrupt("source", e.to_string()))),
    };
    let created_at_ms = match row.get::<_, i64>(5).map(u64::try_from) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return Ok(Err(corrupt("created_at_ms", e.to_string()))),
        Err(e) => return Ok(Err(corrupt("created_at_ms", e.to_string()))),
    };
    let format = match row.get::<_, i64>(6).map(u16::try_from) {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => return Ok(Err(corrupt("format", e.to_string()))),
        Err(e) => return Ok(Err(corrupt("format", e.to_string()))),
    };
    let body: Vec<u8> = match row.get(7) {
        Ok(v) => v,
        Err(e) => return Ok(Err(corrupt("body", e.to_string()))),
    };
    Ok(Ok(CheckpointRecord { thread_id, id, parent_id, step, source, created_at_ms, format, body }))
}

/// Inserts a checkpoint and its writes if the thread's head is still `expected_head`.
fn put_in(
    tx: &rusqlite::Transaction<'_>,
    op: &str,
    record: CheckpointRecord,
    expected_head: Option<String>,
    writes: &[WriteRecord],
) -> Result<(), CheckpointError> {
    let head: Option<String> = tx
        .prepare_cached("SELECT max(id) FROM checkpoints WHERE thread_id = ?1")
        .and_then(|mut select| select.query_row([&record.thread_id], |r| r.get(0)))
        .map_err(sql(op))?;
    if head != expected_head {
        return Err(CheckpointError::Conflict { thread: record.thread_id, expected: expected_head, found: head });
    }
    insert_writes(tx, writes).map_err(sql(op))?;
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO checkpoints (thread_id, id, parent_id, step, source, created_at_ms, format, body) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )
        .map_err(sql(op))?;
    insert
        .execute(params![
            record.thread_id,
            record.id,
            record.parent_id,
            record.step,
            record.source.as_str(),
            i64::try_from(record.created_at_ms).unwrap_or(i64::MAX),
            record.format,
            record.body
        ])
        .map_err(sql(op))?;
    Ok(())
}

/// Runs `f` with commits that are not synced (`synchronous = NORMAL` in write-ahead-log mode):
/// they survive the process's death, and reach the disk with the next synced commit. For the
/// claims of threads alone: a claim only keeps live processes apart, and after a crash of the
/// machine no process from before it is alive, so a claim lost with it is lost harmlessly.
/// Checkpoints and writes are always committed synced.
fn unsynced<T>(
    connection: &mut Connection,
    operation: &str,
    f: impl FnOnce(&mut Connection) -> Result<T, CheckpointError>,
) -> Result<T, CheckpointError> {
    let pragma = |c: &Connection, level: &str| {
        c.prepare_cached(&format!("PRAGMA synchronous = {level}"))
            .and_then(|mut s| s.execute([]))
            .map_err(sql(operation))
    };
    pragma(connection, "NORMAL")?;
    let result = f(connection);
    pragma(connection, "FULL")?;
    result
}

const SELECT_CHECKPOINT: &str =
    "SELECT thread_id, id, parent_id, step, source, created_at_ms, format, body FROM checkpoints";

impl Checkpointer for SqliteSaver {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        let owner = Arc::clone(&self.owner);
        let held = Arc::clone(&self.held);
        let thread = thread.to_owned();
        let operation = format!("claimed thread `{thread}`");
        {
            let mut held = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if held.contains_key(&thread) {
                return async move {
                    Err(CheckpointError::Busy { thread, holder: Some("a run of this process".to_owned()) })
                }
                .boxed();
            }
            // Fence 0 until the store grants one: no claim has it.
            held.insert(thread.clone(), 0);
        }
        let name = thread.clone();
        let claimed = self.call(operation.clone(), move |c| {
            owner.announce().map_err(|e| CheckpointError::backend("locked this process's owner file", e))?;
            unsynced(c, &operation, |c| {
                let tx =
                    c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql(&operation))?;
                let row: Option<(String, i64)> = tx
                    .prepare_cached("SELECT owner, fence FROM graphwright_claims WHERE thread_id = ?1")
                    .and_then(|mut select| select.query_row([&thread], |r| Ok((r.get(0)?, r.get(1)?))).optional())
                    .map_err(sql(&operation))?;
                let fence = match row {
                    None => 1,
                    Some((holder, fence)) => {
                        let free = holder.is_empty() || holder == owner.id;
                        if !free
                            && owner
                                .is_alive(&holder)
                                .map_err(|e| CheckpointError::backend("checked a claim's owner", e))?
                        {
                            return Err(CheckpointError::Busy { thread, holder: Some("a live process".to_owned()) });
                        }
                        fence + 1
                    }
                };
                tx.prepare_cached(
                    "INSERT INTO graphwright_claims (thread_id, owner, fence) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, fence = excluded.fence",
                )
                .and_then(|mut upsert| upsert.execute(params![thread, owner.id, fence]))
                .map_err(sql(&operation))?;
                tx.commit().map_err(sql(&operation))?;
                Ok(Claim::new(thread, u64::try_from(fence).unwrap_or(0)))
            })
        });
        async move {
            let result = claimed.await;
            let mut held = held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &result {
                Ok(claim) => held.insert(name, claim.fence()),
                Err(_) => held.remove(&name),
            };
            result
        }
        .boxed()
    }

    fn forget_claim(&self, claim: &Claim) {
        forget(&self.held, claim.thread(), claim.fence());
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let owner = Arc::clone(&self.owner);
        let (thread, fence) = (claim.thread().to_owned(), i64::try_from(claim.fence()).unwrap_or(i64::MAX));
        forget(&self.held, &thread, claim.fence());
        let operation = format!("released thread `{thread}`");
        self.call(operation.clone(), move |c| {
            unsynced(c, &operation, |c| {
                c.prepare_cached(
                    "UPDATE graphwright_claims SET owner = '' WHERE thread_id = ?1 AND owner = ?2 AND fence = ?3",
                )
                .and_then(|mut update| update.execute(params![thread, owner.id, fence]))
                .map_err(sql(&operation))?;
                Ok(())
            })
        })
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.put_batch(claim, vec![BatchOp::Put { record, expected_head, writes }])
    }

    fn put_batch<'a>(&'a self, claim: &'a Claim, ops: Vec<BatchOp>) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let operation = match ops.as_slice() {
            [BatchOp::Put { record, .. }] => {
                format!("stored checkpoint {} of thread `{}`", record.id, record.thread_id)
            }
            _ => format!("stored a batch of {} checkpoint operation(s)", ops.len()),
        };
        let before_commit = self.before_commit;
        let (owner, claim) = (Arc::clone(&self.owner), claim.clone());
        self.call(operation.clone(), move |c| {
            let op = operation.as_str();
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql(op))?;
            check_claim(&tx, &claim, &owner.id)?;
            for batch_op in ops {
                match batch_op {
                    BatchOp::Writes(writes) => insert_writes(&tx, &writes).map_err(sql(op))?,
                    BatchOp::Put { record, expected_head, writes } => put_in(&tx, op, record, expected_head, &writes)?,
                }
            }
            if let Some(hook) = before_commit {
                hook();
            }
            tx.commit().map_err(sql(op))
        })
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let operation = format!("stored {} task write(s)", writes.len());
        let (owner, claim) = (Arc::clone(&self.owner), claim.clone());
        self.call(operation.clone(), move |c| {
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql(&operation))?;
            check_claim(&tx, &claim, &owner.id)?;
            insert_writes(&tx, &writes).map_err(sql(&operation))?;
            tx.commit().map_err(sql(&operation))
        })
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        let (thread, id) = (thread.to_owned(), id.map(str::to_owned));
        let operation = format!("read thread `{thread}`");
        self.call(operation.clone(), move |c| {
            // Cached: a run reads its thread's head as it starts, and compiling the statement
            // would cost more than running it.
            let row = match &id {
                Some(id) => c
                    .prepare_cached(&format!("{SELECT_CHECKPOINT} WHERE thread_id = ?1 AND id = ?2"))
                    .and_then(|mut select| select.query_row([&thread, id], checkpoint_row).optional()),
                None => c
                    .prepare_cached(&format!("{SELECT_CHECKPOINT} WHERE thread_id = ?1 ORDER BY id DESC LIMIT 1"))
                    .and_then(|mut select| select.query_row([&thread], checkpoint_row).optional()),
            };
            row.map_err(sql(&operation))?.transpose()
        })
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        let thread = thread.to_owned();
        let filter = filter.clone();
        let operation = format!("listed thread `{thread}`");
        self.call(operation.clone(), move |c| {
            let limit = filter.limit.map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX));
            let mut statement = c
                .prepare_cached(&format!(
                    "{SELECT_CHECKPOINT} WHERE thread_id = ?1 AND (?2 IS NULL OR id < ?2) AND (?3 IS NULL OR source = ?3) \
                     ORDER BY id DESC LIMIT ?4"
                ))
                .map_err(sql(&operation))?;
            let rows = statement
                .query_map(params![thread, filter.before, filter.source.map(Source::as_str), limit], checkpoint_row)
                .map_err(sql(&operation))?;
            let mut out = Vec::new();
            for row in rows {
                out.push(row.map_err(sql(&operation))??);
            }
            Ok(out)
        })
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        let (thread, checkpoint) = (thread.to_owned(), checkpoint.to_owned());
        let operation = format!("read the writes of checkpoint {checkpoint} of thread `{thread}`");
        self.call(operation.clone(), move |c| {
            let mut statement = c
                .prepare_cached(
                    "SELECT task, idx, format, body FROM writes WHERE thread_id = ?1 AND checkpoint_id = ?2 ORDER BY task, idx",
                )
                .map_err(sql(&operation))?;
            let rows = statement
                .query_map([&thread, &checkpoint], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, Vec<u8>>(3)))
                })
                .map_err(sql(&operation))?;
            let mut out = Vec::new();
            for row in rows {
                let (task, index, format, body) = row.map_err(sql(&operation))?;
                let corrupt = |field: &str, reason: String| CheckpointError::Corrupt {
                    thread: thread.clone(),
                    checkpoint: checkpoint.clone(),
                    field: format!("writes[{task}].{field}"),
                    reason,
                };
                let body = body.map_err(|e| corrupt("body", e.to_string()))?;
                out.push(WriteRecord {
                    thread_id: thread.clone(),
                    checkpoint_id: checkpoint.clone(),
                    task: u32::try_from(task).map_err(|e| corrupt("task", e.to_string()))?,
                    index: u32::try_from(index).map_err(|e| corrupt("idx", e.to_string()))?,
                    format: u16::try_from(format).map_err(|e| corrupt("format", e.to_string()))?,
                    body,
                });
            }
            Ok(out)
        })
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let thread = thread.to_owned();
        let held = Arc::clone(&self.held);
        let operation = format!("deleted thread `{thread}`");
        self.call(operation.clone(), move |c| {
            let tx = c.transaction().map_err(sql(&operation))?;
            tx.execute("DELETE FROM writes WHERE thread_id = ?1", [&thread]).map_err(sql(&operation))?;
            tx.execute("DELETE FROM checkpoints WHERE thread_id = ?1", [&thread]).map_err(sql(&operation))?;
            // The claim row stays, so fences keep growing; a run still writing is fenced off.
            tx.execute("UPDATE graphwright_claims SET owner = '', fence = fence + 1 WHERE thread_id = ?1", [&thread])
                .map_err(sql(&operation))?;
            held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&thread);
            tx.commit().map_err(sql(&operation))
        })
    }

    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        if let Err(error) = super::check_prune(claim, &head, &subgraph_keys) {
            return async move { Err(error) }.boxed();
        }
        let before_commit = self.before_commit;
        let (owner, claim) = (Arc::clone(&self.owner), claim.clone());
        let operation = format!("pruned the history of thread `{}`", claim.thread());
        self.call(operation.clone(), move |c| {
            let op = operation.as_str();
            let tx = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(sql(op))?;
            check_claim(&tx, &claim, &owner.id)?;
            let found: Option<String> = tx
                .query_row("SELECT max(id) FROM checkpoints WHERE thread_id = ?1", [&head.thread_id], |r| r.get(0))
                .map_err(sql(op))?;
            if found.as_deref() != Some(head.id.as_str()) {
                return Err(CheckpointError::Conflict { thread: head.thread_id, expected: Some(head.id), found });
            }
            tx.execute(
                "UPDATE checkpoints SET parent_id = ?3, step = ?4, source = ?5, created_at_ms = ?6, format = ?7, \
                 body = ?8 WHERE thread_id = ?1 AND id = ?2",
                params![
                    head.thread_id,
                    head.id,
                    head.parent_id,
                    head.step,
                    head.source.as_str(),
                    i64::try_from(head.created_at_ms).unwrap_or(i64::MAX),
                    head.format,
                    head.body
                ],
            )
            .map_err(sql(op))?;
            let of_thread = params![head.thread_id, head.id];
            tx.execute("DELETE FROM writes WHERE thread_id = ?1 AND checkpoint_id <> ?2", of_thread)
                .map_err(sql(op))?;
            let mut deleted =
                tx.execute("DELETE FROM checkpoints WHERE thread_id = ?1 AND id <> ?2", of_thread).map_err(sql(op))?;
            for key in &subgraph_keys {
                tx.execute("DELETE FROM writes WHERE thread_id = ?1", [key]).map_err(sql(op))?;
                deleted += tx.execute("DELETE FROM checkpoints WHERE thread_id = ?1", [key]).map_err(sql(op))?;
                // The key names a task of a deleted checkpoint, so no run claims it again.
                tx.execute("DELETE FROM graphwright_claims WHERE thread_id = ?1", [key]).map_err(sql(op))?;
            }
            if let Some(hook) = before_commit {
                hook();
            }
            tx.commit().map_err(sql(op))?;
            Ok(deleted)
        })
    }

    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        let thread = thread.to_owned();
        let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
        let operation = format!("listed the keys of thread `{thread}`");
        self.call(operation.clone(), move |c| {
            let mut select = c
                .prepare_cached(
                    "SELECT DISTINCT thread_id FROM checkpoints WHERE thread_id = ?1 OR substr(thread_id, 1, length(?2)) = ?2",
                )
                .map_err(sql(&operation))?;
            let keys = select.query_map([&thread, &nested], |r| r.get(0)).map_err(sql(&operation))?;
            keys.collect::<rusqlite::Result<Vec<String>>>().map_err(sql(&operation))
        })
    }

    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let thread = thread.to_owned();
        let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
        let after = after.unwrap_or_default().to_owned();
        let held = Arc::clone(&self.held);
        let operation = format!("rolled thread `{thread}` back to checkpoint `{after}`");
        self.call(operation.clone(), move |c| {
            let tx = c.transaction().map_err(sql(&operation))?;
            // Ids are fixed-width and ordered by creation, so "newer" is a text comparison.
            let of_thread = "(thread_id = ?1 OR substr(thread_id, 1, length(?2)) = ?2)";
            let params = rusqlite::params![thread, nested, after];
            tx.execute(&format!("DELETE FROM writes WHERE {of_thread} AND checkpoint_id > ?3"), params)
                .map_err(sql(&operation))?;
            tx.execute(&format!("DELETE FROM checkpoints WHERE {of_thread} AND id > ?3"), params)
                .map_err(sql(&operation))?;
            tx.execute("UPDATE graphwright_claims SET owner = '', fence = fence + 1 WHERE thread_id = ?1", [&thread])
                .map_err(sql(&operation))?;
            held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).remove(&thread);
            tx.commit().map_err(sql(&operation))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::SqliteSaver;
    use std::thread::ThreadId;

    /// The thread a database call of `saver` runs on.
    async fn call_thread(saver: &SqliteSaver) -> ThreadId {
        saver.call("asked for the thread".to_owned(), |_| Ok(std::thread::current().id())).await.unwrap()
    }

    #[test]
    fn calls_run_in_place_only_where_nothing_else_could_run() {
        let dir = tempfile::tempdir().unwrap();
        let saver = SqliteSaver::open(dir.path().join("calls.db")).unwrap();
        let here = std::thread::current().id();

        let current = tokio::runtime::Builder::new_current_thread().build().unwrap();
        assert_eq!(current.block_on(call_thread(&saver)), here, "block_on alone: in place");

        let with_a_task = current.block_on(async {
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let other = tokio::spawn(async move {
                let _ = stopped.await;
            });
            let thread = call_thread(&saver).await;
            drop(stop);
            other.await.unwrap();
            thread
        });
        assert_ne!(with_a_task, here, "another task is alive: on the blocking pool");

        let multi = tokio::runtime::Builder::new_multi_thread().worker_threads(1).build().unwrap();
        assert_ne!(multi.block_on(call_thread(&saver)), here, "a multi-thread runtime: on the blocking pool");
    }
}
