//! [`PostgresSaver`]: connecting, migrating the schema, holding claims and writing a
//! checkpoint in a transaction.

use super::sql::{
    CLAIM_OF, HEAD, INSERT_CHECKPOINT, INSERT_WRITES, LOCK_THREAD, MIGRATION_LOCK, MIGRATIONS, OWNER_LOCK, SET_CLAIM,
    THREAD_LOCK,
};
use crate::checkpoint::pool::{DbError, postgres_pool};
use crate::checkpoint::{CheckpointError, CheckpointRecord, Claim, WriteRecord};
use deadpool_postgres::{Object, Pool, Transaction};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio_postgres::Row;

/// Keeps checkpoints in PostgreSQL, for many processes sharing threads.
///
/// `put` is a compare-and-set that holds across processes: it locks the thread with a
/// transaction-scoped advisory lock (`pg_advisory_xact_lock` on a hash of the thread id), reads
/// the head, and inserts the checkpoint and its writes in that same transaction; a second
/// writer waits for the lock, then sees the new head and gets [`CheckpointError::Conflict`].
/// The lock needs no table of thread heads to keep in step with the checkpoints, and the head
/// stays what [`Checkpointer::get`](crate::checkpoint::Checkpointer::get) returns: the newest id. Two threads whose ids hash alike
/// only wait for each other.
///
/// Connections come from a [`deadpool_postgres`] pool over `tokio-postgres`: it is maintained,
/// has no runtime of its own beyond tokio, and caches each connection's prepared statements,
/// so a put does not parse its SQL again. `bb8-postgres` would do as well, but caches nothing.
///
/// On connecting, the saver brings the current schema (`search_path`) up to date: each
/// migration runs once, in a transaction under an advisory lock, so processes starting at once
/// do not race. A database whose schema is newer than this version knows is refused.
///
/// # Example
///
/// ```no_run
/// use graphwright::checkpoint::PostgresSaver;
/// use graphwright::prelude::*;
///
/// #[state]
/// struct Count {
///     counter: i64,
/// }
///
/// fn bump(state: &Count) -> CountUpdate {
///     CountUpdate::new().counter(state.counter + 1)
/// }
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let saver = PostgresSaver::connect("postgres://agents@db.internal/agents").await?;
/// let app = StateGraph::<Count>::new()
///     .add_node("bump", bump)
///     .add_edge(START, "bump")
///     .add_edge("bump", END)
///     .checkpointer(saver)
///     .compile()?;
/// // Any process connected to the same database can resume or inspect this thread.
/// let out = app.invoke(Count::default(), &RunConfig::thread("ticket-4711")).await?;
/// assert_eq!(out.state.counter, 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresSaver {
    pub(super) pool: Pool,
    pub(super) owner: Arc<Owner>,
}

/// This saver's identity in the claims table: a number whose lock it holds on a connection of
/// its own while it lives, and the threads it holds now.
pub(super) struct Owner {
    /// The owner id and the connection that holds its lock, once the first claim needed them.
    pub(super) alive: tokio::sync::Mutex<Option<(i32, deadpool_postgres::ClientWrapper)>>,
    /// Threads this saver holds now, with the fence of each claim (0 while being claimed).
    pub(super) held: Mutex<HashMap<String, u64>>,
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSaver").field("pool", &self.pool.status()).finish_non_exhaustive()
    }
}

impl PostgresSaver {
    /// This saver with its checkpoints and writes encrypted at rest under `keys` (see
    /// [`Encrypted`](crate::encryption::Encrypted)); threads stored before stay readable.
    #[must_use]
    pub fn encrypted(self, keys: crate::encryption::Keys) -> crate::encryption::Encrypted<Self> {
        crate::encryption::Encrypted::new(self, keys)
    }

    /// Connects to the database at `url` (`postgres://user@host:port/db`, or `host=... dbname=...`)
    /// without TLS, with a pool of the default size, and brings its schema up to date.
    /// For TLS or other pool settings, build the pool and call [`PostgresSaver::from_pool`].
    pub async fn connect(url: &str) -> Result<Self, CheckpointError> {
        let pool = postgres_pool(url)?;
        Self::from_pool(pool).await
    }

    /// Uses a pool built elsewhere (with TLS, a size or timeouts of its own), and brings the
    /// schema its connections see up to date.
    pub async fn from_pool(pool: Pool) -> Result<Self, CheckpointError> {
        let owner = Arc::new(Owner { alive: tokio::sync::Mutex::new(None), held: Mutex::new(HashMap::new()) });
        let saver = Self { pool, owner };
        saver.migrate().await?;
        Ok(saver)
    }

    /// This saver's owner id, taking its liveness lock on a connection of its own the first
    /// time. An id another live saver holds is skipped.
    pub(super) async fn owner_id(&self) -> Result<i32, CheckpointError> {
        let op = "took this saver's liveness lock";
        let mut alive = self.owner.alive.lock().await;
        if let Some((id, client)) = &*alive
            && !client.is_closed()
        {
            return Ok(*id);
        }
        let client = deadpool_postgres::Object::take(self.client(op).await?);
        for _ in 0..16 {
            let id = i32::try_from(uuid::Uuid::new_v4().as_u128() as u32 >> 1).unwrap_or(1);
            if id == 0 {
                continue;
            }
            let locked: bool = client
                .query_one("SELECT pg_try_advisory_lock($1, $2)", &[&OWNER_LOCK, &id])
                .await
                .and_then(|r| r.try_get(0))
                .map_err(pg(op))?;
            if locked {
                *alive = Some((id, client));
                return Ok(id);
            }
        }
        Err(CheckpointError::backend(op, "every owner id tried is held by another saver"))
    }

    /// Claims `thread` in the claims table, under the thread's lock: free, held by this saver
    /// earlier, or held by an owner whose liveness lock is gone.
    pub(super) async fn claim_in_store(&self, thread: &str) -> Result<Claim, CheckpointError> {
        let op = &format!("claimed thread `{thread}`");
        let owner = self.owner_id().await?;
        let mut client = self.client(op).await?;
        let tx = client.transaction().await.map_err(pg(op))?;
        tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &thread]).await.map_err(pg(op))?;
        let row = tx.query_opt(CLAIM_OF, &[&thread]).await.map_err(pg(op))?;
        let fence: i64 = match row {
            None => 1,
            Some(row) => {
                let holder: i32 = row.try_get(0).map_err(pg(op))?;
                let fence: i64 = row.try_get(1).map_err(pg(op))?;
                if holder != 0 && holder != owner {
                    // The owner's lock can be had only if no live session holds it. Asked for as a
                    // shared lock: claims of other threads asking about the same owner at the
                    // same moment (the threads of a process that died, taken over together) do
                    // not stand in each other's way, where exclusive asks would see each other.
                    let gone: bool = tx
                        .query_one("SELECT pg_try_advisory_xact_lock_shared($1, $2)", &[&OWNER_LOCK, &holder])
                        .await
                        .and_then(|r| r.try_get(0))
                        .map_err(pg(op))?;
                    if !gone {
                        return Err(CheckpointError::Busy {
                            thread: thread.to_owned(),
                            holder: Some("a live process".to_owned()),
                        });
                    }
                }
                fence + 1
            }
        };
        tx.execute(SET_CLAIM, &[&thread, &owner, &fence]).await.map_err(pg(op))?;
        tx.commit().await.map_err(pg(op))?;
        Ok(Claim::new(thread, u64::try_from(fence).unwrap_or(0)))
    }

    pub(super) fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.owner.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Applies the migrations the schema lacks, in one transaction under an advisory lock.
    async fn migrate(&self) -> Result<(), CheckpointError> {
        let op = "migrated the checkpoint tables";
        let mut client = self.client(op).await?;
        let tx = client.transaction().await.map_err(pg(op))?;
        // Taken before anything else, so `CREATE TABLE IF NOT EXISTS` never races either.
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))", &[&MIGRATION_LOCK])
            .await
            .map_err(pg(op))?;
        tx.batch_execute(
            "CREATE TABLE IF NOT EXISTS graphwright_migrations \
             (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .await
        .map_err(pg(op))?;
        let applied: Option<i32> = tx
            .query_one("SELECT max(version) FROM graphwright_migrations", &[])
            .await
            .and_then(|r| r.try_get(0))
            .map_err(pg(op))?;
        let applied = applied.unwrap_or(0);
        let latest = MIGRATIONS.last().map_or(0, |(version, _)| *version);
        if applied > latest {
            return Err(CheckpointError::backend(
                "checked the schema version",
                format!("the database has schema version {applied}; this version of graphwright reads up to {latest}"),
            ));
        }
        for (version, sql) in MIGRATIONS.iter().filter(|(version, _)| *version > applied) {
            tx.batch_execute(sql).await.map_err(pg(op))?;
            tx.execute("INSERT INTO graphwright_migrations (version) VALUES ($1)", &[version]).await.map_err(pg(op))?;
        }
        tx.commit().await.map_err(pg(op))
    }

    /// A connection from the pool.
    pub(super) async fn client(&self, operation: &str) -> Result<Object, CheckpointError> {
        self.pool.get().await.map_err(|e| CheckpointError::backend(operation.to_owned(), e))
    }
}

pub(super) fn pg(operation: &str) -> impl Fn(tokio_postgres::Error) -> CheckpointError + '_ {
    move |e| CheckpointError::backend(operation.to_owned(), DbError::from(e))
}

/// Fails unless `claim` is the thread's current claim and `owner` holds it (`row` is the
/// thread's claim row).
pub(super) fn check_claim(claim: &Claim, owner: i32, row: Option<&Row>) -> Result<(), CheckpointError> {
    let held = row.map(|r| (r.try_get::<_, i32>(0).unwrap_or(0), r.try_get::<_, i64>(1).unwrap_or(0)));
    match held {
        Some((holder, fence)) if holder == owner && u64::try_from(fence).ok() == Some(claim.fence()) => Ok(()),
        other => Err(CheckpointError::Fenced {
            thread: claim.thread().to_owned(),
            fence: claim.fence(),
            current: other.map_or(0, |(_, fence)| u64::try_from(fence).unwrap_or(0)),
        }),
    }
}

/// Inserts `writes` in one statement; a write already stored under its key is kept.
impl PostgresSaver {
    /// Ends a deletion on `thread`: frees its claim and bumps its fence (the claim row stays, so
    /// fences keep growing and a run still writing is fenced off), then commits `tx`.
    pub(super) async fn fence_off(&self, tx: Transaction<'_>, thread: &str, op: &str) -> Result<(), CheckpointError> {
        tx.execute("UPDATE graphwright_claims SET owner = 0, fence = fence + 1 WHERE thread_id = $1", &[&thread])
            .await
            .map_err(pg(op))?;
        tx.commit().await.map_err(pg(op))?;
        self.held().remove(thread);
        Ok(())
    }
}

pub(super) async fn insert_writes(tx: &Transaction<'_>, writes: &[WriteRecord]) -> Result<(), tokio_postgres::Error> {
    if writes.is_empty() {
        return Ok(());
    }
    let threads: Vec<&str> = writes.iter().map(|w| w.thread_id.as_str()).collect();
    let checkpoints: Vec<&str> = writes.iter().map(|w| w.checkpoint_id.as_str()).collect();
    let tasks: Vec<i64> = writes.iter().map(|w| i64::from(w.task)).collect();
    let indices: Vec<i64> = writes.iter().map(|w| i64::from(w.index)).collect();
    let formats: Vec<i32> = writes.iter().map(|w| i32::from(w.format)).collect();
    let bodies: Vec<&[u8]> = writes.iter().map(|w| w.body.as_slice()).collect();
    let insert = tx.prepare_cached(INSERT_WRITES).await?;
    tx.execute(&insert, &[&threads, &checkpoints, &tasks, &indices, &formats, &bodies]).await?;
    Ok(())
}

/// Inserts a checkpoint and its writes if the thread's head is still `expected_head` (the
/// thread's lock is held).
pub(super) async fn put_in(
    tx: &Transaction<'_>,
    op: &str,
    record: CheckpointRecord,
    expected_head: Option<String>,
    writes: &[WriteRecord],
) -> Result<(), CheckpointError> {
    // A statement of its own: under READ COMMITTED it sees what the lock's last holder committed.
    let head: Option<String> =
        tx.query_one(HEAD, &[&record.thread_id]).await.and_then(|r| r.try_get(0)).map_err(pg(op))?;
    if head != expected_head {
        // Dropping the transaction rolls it back and releases the lock.
        return Err(CheckpointError::Conflict { thread: record.thread_id, expected: expected_head, found: head });
    }
    let created_at_ms = i64::try_from(record.created_at_ms).unwrap_or(i64::MAX);
    let insert_checkpoint = async {
        let insert = tx.prepare_cached(INSERT_CHECKPOINT).await?;
        tx.execute(
            &insert,
            &[
                &record.thread_id,
                &record.id,
                &record.parent_id,
                &record.step,
                &record.source.as_str(),
                &created_at_ms,
                &i32::from(record.format),
                &record.body,
            ],
        )
        .await
    };
    // Both statements go out before either answer comes back (the client pipelines them).
    futures::try_join!(insert_checkpoint, insert_writes(tx, writes)).map_err(pg(op))?;
    Ok(())
}
