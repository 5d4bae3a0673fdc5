//! The PostgreSQL checkpointer: many processes sharing threads through one database.

use super::{BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, Source, WriteRecord};
use crate::error::BoxError;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use tokio_postgres::types::FromSqlOwned;
use tokio_postgres::{NoTls, Row};

/// The schema, one migration per version, applied in order and recorded in
/// `graphwright_migrations`. A released migration is never edited: a change is a new entry.
///
/// Ids are compared byte by byte (`COLLATE "C"`), as the other backends compare them, whatever
/// the database's locale. The primary key `(thread_id, id)` is also the index for newest-first
/// listing and for the head (PostgreSQL scans a B-tree backwards), so there is no second one.
const MIGRATIONS: &[(i32, &str)] = &[
    (
        1,
        r#"
CREATE TABLE graphwright_checkpoints (
    thread_id text COLLATE "C" NOT NULL,
    id text COLLATE "C" NOT NULL,
    parent_id text COLLATE "C",
    step bigint NOT NULL,
    source text NOT NULL,
    created_at_ms bigint NOT NULL,
    format integer NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (thread_id, id)
);
CREATE TABLE graphwright_writes (
    thread_id text COLLATE "C" NOT NULL,
    checkpoint_id text COLLATE "C" NOT NULL,
    task bigint NOT NULL,
    idx bigint NOT NULL,
    format integer NOT NULL,
    body bytea NOT NULL,
    PRIMARY KEY (thread_id, checkpoint_id, task, idx)
);
"#,
    ),
    (
        2,
        r#"
CREATE TABLE graphwright_claims (
    thread_id text COLLATE "C" PRIMARY KEY,
    owner integer NOT NULL,
    fence bigint NOT NULL
);
"#,
    ),
];

/// First keys of the two-key advisory locks this saver takes; the second key is a hash of the
/// schema (migrations) or of the thread id (puts and deletes). Two-key locks live in a key
/// space of their own, apart from the one-key locks applications usually take.
const MIGRATION_LOCK: i32 = 0x4757_0001;
const THREAD_LOCK: i32 = 0x4757_0002;
/// Held (session-level) by each live saver on a connection of its own, keyed by its owner id:
/// the server releases it when that connection or its process dies.
const OWNER_LOCK: i32 = 0x4757_0003;

const CLAIM_OF: &str = "SELECT owner, fence FROM graphwright_claims WHERE thread_id = $1";
const CLAIM_SHARED: &str = "SELECT owner, fence FROM graphwright_claims WHERE thread_id = $1 FOR SHARE";
const SET_CLAIM: &str = "INSERT INTO graphwright_claims (thread_id, owner, fence) VALUES ($1, $2, $3) \
     ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, fence = excluded.fence";

const LOCK_THREAD: &str = "SELECT pg_advisory_xact_lock($1, hashtext($2))";
const HEAD: &str = "SELECT max(id) FROM graphwright_checkpoints WHERE thread_id = $1";
const INSERT_CHECKPOINT: &str = "INSERT INTO graphwright_checkpoints \
     (thread_id, id, parent_id, step, source, created_at_ms, format, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const INSERT_WRITES: &str = "INSERT INTO graphwright_writes (thread_id, checkpoint_id, task, idx, format, body) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::bytea[]) \
     ON CONFLICT DO NOTHING";
const SELECT_CHECKPOINT: &str =
    "SELECT thread_id, id, parent_id, step, source, created_at_ms, format, body FROM graphwright_checkpoints";

/// Keeps checkpoints in PostgreSQL, for many processes sharing threads.
///
/// `put` is a compare-and-set that holds across processes: it locks the thread with a
/// transaction-scoped advisory lock (`pg_advisory_xact_lock` on a hash of the thread id), reads
/// the head, and inserts the checkpoint and its writes in that same transaction; a second
/// writer waits for the lock, then sees the new head and gets [`CheckpointError::Conflict`].
/// The lock needs no table of thread heads to keep in step with the checkpoints, and the head
/// stays what [`Checkpointer::get`] returns: the newest id. Two threads whose ids hash alike
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
    pool: Pool,
    owner: Arc<Owner>,
}

/// This saver's identity in the claims table: a number whose lock it holds on a connection of
/// its own while it lives, and the threads it holds now.
struct Owner {
    /// The owner id and the connection that holds its lock, once the first claim needed them.
    alive: tokio::sync::Mutex<Option<(i32, deadpool_postgres::ClientWrapper)>>,
    /// Threads this saver holds now, with the fence of each claim (0 while being claimed).
    held: Mutex<HashMap<String, u64>>,
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
    async fn owner_id(&self) -> Result<i32, CheckpointError> {
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
    async fn claim_in_store(&self, thread: &str) -> Result<Claim, CheckpointError> {
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

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
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
    async fn client(&self, operation: &str) -> Result<Object, CheckpointError> {
        self.pool.get().await.map_err(|e| CheckpointError::backend(operation.to_owned(), e))
    }
}

/// A pool of the default size for `url`, without TLS (shared with `PostgresStore`). On failure,
/// the step that failed and why: never the URL, which may hold a password.
pub(crate) fn pool_for(url: &str) -> Result<Pool, (&'static str, BoxError)> {
    let config: tokio_postgres::Config =
        url.parse().map_err(|e| ("parsed the PostgreSQL connection string", BoxError::from(e)))?;
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager).build().map_err(|e| ("built the PostgreSQL connection pool", BoxError::from(e)))
}

/// A pool of connections to the PostgreSQL database at `url` (`postgres://user@host:port/db`),
/// without TLS and of the default size, for one pool shared by a [`PostgresSaver`], a
/// [`PostgresStore`](crate::store::PostgresStore) (both take it in `from_pool`) and an
/// application's own queries. No connection is made until one is needed. The error names the
/// step that failed, never the URL, which may hold a password.
///
/// ```no_run
/// use graphwright::checkpoint::{PostgresSaver, postgres_pool};
/// use graphwright::store::{PostgresStore, StoreOptions};
///
/// # async fn open() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = postgres_pool("postgres://agents@127.0.0.1:5432/agents")?;
/// let saver = PostgresSaver::from_pool(pool.clone()).await?;
/// let store = PostgresStore::from_pool(pool, StoreOptions::default()).await?;
/// # let _ = (saver, store); Ok(()) }
/// ```
pub fn postgres_pool(url: &str) -> Result<Pool, CheckpointError> {
    pool_for(url).map_err(|(step, e)| CheckpointError::backend(step, e))
}

fn pg(operation: &str) -> impl Fn(tokio_postgres::Error) -> CheckpointError + '_ {
    move |e| CheckpointError::backend(operation.to_owned(), DbError::from(e))
}

/// A PostgreSQL error whose text carries the server's reason (tokio-postgres's own says only
/// "db error" and keeps the reason in its source). Shared with `PostgresStore`.
#[derive(Debug)]
pub(crate) struct DbError {
    text: String,
    source: tokio_postgres::Error,
}

impl From<tokio_postgres::Error> for DbError {
    fn from(source: tokio_postgres::Error) -> Self {
        let text = match source.as_db_error() {
            Some(db) => {
                let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
                if let Some(detail) = db.detail() {
                    let _ = write!(text, " ({detail})");
                }
                if let Some(hint) = db.hint() {
                    let _ = write!(text, "; hint: {hint}");
                }
                text
            }
            None => match std::error::Error::source(&source) {
                Some(cause) => format!("{source}: {cause}"),
                None => source.to_string(),
            },
        };
        Self { text, source }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// Fails unless `claim` is the thread's current claim and `owner` holds it (`row` is the
/// thread's claim row).
fn check_claim(claim: &Claim, owner: i32, row: Option<&Row>) -> Result<(), CheckpointError> {
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
    async fn fence_off(&self, tx: Transaction<'_>, thread: &str, op: &str) -> Result<(), CheckpointError> {
        tx.execute("UPDATE graphwright_claims SET owner = 0, fence = fence + 1 WHERE thread_id = $1", &[&thread])
            .await
            .map_err(pg(op))?;
        tx.commit().await.map_err(pg(op))?;
        self.held().remove(thread);
        Ok(())
    }
}

async fn insert_writes(tx: &Transaction<'_>, writes: &[WriteRecord]) -> Result<(), tokio_postgres::Error> {
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
async fn put_in(
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

/// Reads the columns of one stored row, naming the one that does not hold what it should.
struct Columns<'r> {
    row: &'r Row,
    thread: &'r str,
    checkpoint: &'r str,
    /// Put before the column name (`writes[2].`), or empty.
    prefix: String,
}

impl Columns<'_> {
    fn corrupt(&self, column: &str, reason: String) -> CheckpointError {
        CheckpointError::Corrupt {
            thread: self.thread.to_owned(),
            checkpoint: self.checkpoint.to_owned(),
            field: format!("{}{column}", self.prefix),
            reason,
        }
    }

    /// The value of a nullable column.
    fn nullable<T: FromSqlOwned>(&self, index: usize, column: &str) -> Result<Option<T>, CheckpointError> {
        self.row.try_get(index).map_err(|e| self.corrupt(column, e.to_string()))
    }

    /// The value of a column that must hold one.
    fn required<T: FromSqlOwned>(&self, index: usize, column: &str) -> Result<T, CheckpointError> {
        self.nullable(index, column)?.ok_or_else(|| self.corrupt(column, "is NULL".to_owned()))
    }

    /// An integer column whose value must fit `T`.
    fn integer<S: FromSqlOwned + Copy + std::fmt::Display, T: TryFrom<S>>(
        &self,
        index: usize,
        column: &str,
    ) -> Result<T, CheckpointError> {
        let value: S = self.required(index, column)?;
        T::try_from(value).map_err(|_| self.corrupt(column, format!("{value} is out of range")))
    }
}

/// Reads a checkpoint row of `thread` (selected with [`SELECT_CHECKPOINT`]).
fn checkpoint_row(thread: &str, row: &Row) -> Result<CheckpointRecord, CheckpointError> {
    let id: String = Columns { row, thread, checkpoint: "(unreadable id)", prefix: String::new() }.required(1, "id")?;
    let columns = Columns { row, thread, checkpoint: &id, prefix: String::new() };
    let thread_id = columns.required(0, "thread_id")?;
    let parent_id = columns.nullable(2, "parent_id")?;
    let step = columns.required(3, "step")?;
    let source: String = columns.required(4, "source")?;
    let source =
        Source::parse(&source).ok_or_else(|| columns.corrupt("source", format!("unknown source {source:?}")))?;
    let created_at_ms = columns.integer::<i64, _>(5, "created_at_ms")?;
    let format = columns.integer::<i32, _>(6, "format")?;
    let body = columns.required(7, "body")?;
    Ok(CheckpointRecord { thread_id, id, parent_id, step, source, created_at_ms, format, body })
}

/// Reads a write row (`task, idx, format, body`) of checkpoint `checkpoint` of `thread`.
fn write_row(thread: &str, checkpoint: &str, row: &Row) -> Result<WriteRecord, CheckpointError> {
    let task: Option<i64> = row.try_get(0).ok().flatten();
    let prefix = format!("writes[{}].", task.map_or_else(|| "?".to_owned(), |t| t.to_string()));
    let columns = Columns { row, thread, checkpoint, prefix };
    Ok(WriteRecord {
        thread_id: thread.to_owned(),
        checkpoint_id: checkpoint.to_owned(),
        task: columns.integer::<i64, _>(0, "task")?,
        index: columns.integer::<i64, _>(1, "idx")?,
        format: columns.integer::<i32, _>(2, "format")?,
        body: columns.required(3, "body")?,
    })
}

impl Checkpointer for PostgresSaver {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        async move {
            {
                let mut held = self.held();
                if held.contains_key(thread) {
                    return Err(CheckpointError::Busy {
                        thread: thread.to_owned(),
                        holder: Some("a run of this process".to_owned()),
                    });
                }
                held.insert(thread.to_owned(), 0);
            }
            let result = self.claim_in_store(thread).await;
            match &result {
                Ok(claim) => self.held().insert(thread.to_owned(), claim.fence()),
                Err(_) => self.held().remove(thread),
            };
            result
        }
        .boxed()
    }

    fn forget_claim(&self, claim: &Claim) {
        let mut held = self.held();
        if held.get(claim.thread()) == Some(&claim.fence()) {
            held.remove(claim.thread());
        }
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            self.forget_claim(claim);
            let op = &format!("released thread `{}`", claim.thread());
            let Some(owner) = self.owner.alive.lock().await.as_ref().map(|(id, _)| *id) else { return Ok(()) };
            let client = self.client(op).await?;
            let fence = i64::try_from(claim.fence()).unwrap_or(i64::MAX);
            client
                .execute(
                    "UPDATE graphwright_claims SET owner = 0 WHERE thread_id = $1 AND owner = $2 AND fence = $3",
                    &[&claim.thread(), &owner, &fence],
                )
                .await
                .map_err(pg(op))?;
            Ok(())
        }
        .boxed()
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
        async move {
            let op = &match ops.as_slice() {
                [BatchOp::Put { record, .. }] => {
                    format!("stored checkpoint {} of thread `{}`", record.id, record.thread_id)
                }
                _ => format!("stored a batch of {} checkpoint operation(s)", ops.len()),
            };
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // The thread's lock serializes puts (the head's compare-and-set) and claims.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, tx.query_opt(CLAIM_OF, &[&claim.thread()]).await.map_err(pg(op))?.as_ref())?;
            for batch_op in ops {
                match batch_op {
                    BatchOp::Writes(writes) => insert_writes(&tx, &writes).await.map_err(pg(op))?,
                    BatchOp::Put { record, expected_head, writes } => {
                        put_in(&tx, op, record, expected_head, &writes).await?;
                    }
                }
            }
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let op = &format!("stored {} task write(s)", writes.len());
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // A row lock: a takeover of the claim waits until these writes are in.
            let row = tx.query_opt(CLAIM_SHARED, &[&claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, row.as_ref())?;
            insert_writes(&tx, &writes).await.map_err(pg(op))?;
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        async move {
            let op = &format!("read thread `{thread}`");
            let client = self.client(op).await?;
            // The checkpoint `id`, or with no id the newest.
            let select = client
                .prepare_cached(&format!(
                    "{SELECT_CHECKPOINT} WHERE thread_id = $1 AND ($2::text IS NULL OR id = $2) ORDER BY id DESC LIMIT 1"
                ))
                .await
                .map_err(pg(op))?;
            let row = client.query_opt(&select, &[&thread, &id]).await;
            row.map_err(pg(op))?.map(|row| checkpoint_row(thread, &row)).transpose()
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        async move {
            let op = &format!("listed thread `{thread}`");
            let client = self.client(op).await?;
            let select = client
                .prepare_cached(&format!(
                    "{SELECT_CHECKPOINT} WHERE thread_id = $1 AND ($2::text IS NULL OR id < $2) \
                     AND ($3::text IS NULL OR source = $3) ORDER BY id DESC LIMIT $4"
                ))
                .await
                .map_err(pg(op))?;
            // LIMIT NULL is no limit.
            let limit = filter.limit.map(|l| i64::try_from(l).unwrap_or(i64::MAX));
            let rows = client
                .query(&select, &[&thread, &filter.before, &filter.source.map(Source::as_str), &limit])
                .await
                .map_err(pg(op))?;
            rows.iter().map(|row| checkpoint_row(thread, row)).collect()
        }
        .boxed()
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        async move {
            let op = &format!("read the writes of checkpoint {checkpoint} of thread `{thread}`");
            let client = self.client(op).await?;
            let select = client
                .prepare_cached(
                    "SELECT task, idx, format, body FROM graphwright_writes \
                     WHERE thread_id = $1 AND checkpoint_id = $2 ORDER BY task, idx",
                )
                .await
                .map_err(pg(op))?;
            let rows = client.query(&select, &[&thread, &checkpoint]).await.map_err(pg(op))?;
            rows.iter().map(|row| write_row(thread, checkpoint, row)).collect()
        }
        .boxed()
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let op = &format!("deleted thread `{thread}`");
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // Under the thread's lock, so a put racing the delete lands wholly before or after it.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &thread]).await.map_err(pg(op))?;
            tx.execute("DELETE FROM graphwright_writes WHERE thread_id = $1", &[&thread]).await.map_err(pg(op))?;
            tx.execute("DELETE FROM graphwright_checkpoints WHERE thread_id = $1", &[&thread]).await.map_err(pg(op))?;
            self.fence_off(tx, thread, op).await
        }
        .boxed()
    }

    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        async move {
            super::check_prune(claim, &head, &subgraph_keys)?;
            let op = &format!("pruned the history of thread `{}`", claim.thread());
            let owner = self.owner_id().await?;
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            // The thread's lock, as a put takes it: a put racing the prune lands wholly before
            // it (and the prune finds a new head) or after it.
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &claim.thread()]).await.map_err(pg(op))?;
            check_claim(claim, owner, tx.query_opt(CLAIM_OF, &[&claim.thread()]).await.map_err(pg(op))?.as_ref())?;
            let found: Option<String> =
                tx.query_one(HEAD, &[&head.thread_id]).await.and_then(|r| r.try_get(0)).map_err(pg(op))?;
            if found.as_deref() != Some(head.id.as_str()) {
                return Err(CheckpointError::Conflict { thread: head.thread_id, expected: Some(head.id), found });
            }
            let created_at_ms = i64::try_from(head.created_at_ms).unwrap_or(i64::MAX);
            tx.execute(
                "UPDATE graphwright_checkpoints SET parent_id = $3, step = $4, source = $5, created_at_ms = $6, \
                 format = $7, body = $8 WHERE thread_id = $1 AND id = $2",
                &[
                    &head.thread_id,
                    &head.id,
                    &head.parent_id,
                    &head.step,
                    &head.source.as_str(),
                    &created_at_ms,
                    &i32::from(head.format),
                    &head.body,
                ],
            )
            .await
            .map_err(pg(op))?;
            tx.execute(
                "DELETE FROM graphwright_writes WHERE thread_id = $1 AND checkpoint_id <> $2",
                &[&head.thread_id, &head.id],
            )
            .await
            .map_err(pg(op))?;
            let mut deleted = tx
                .execute(
                    "DELETE FROM graphwright_checkpoints WHERE thread_id = $1 AND id <> $2",
                    &[&head.thread_id, &head.id],
                )
                .await
                .map_err(pg(op))?;
            if !subgraph_keys.is_empty() {
                tx.execute("DELETE FROM graphwright_writes WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
                deleted += tx
                    .execute("DELETE FROM graphwright_checkpoints WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
                // The keys name tasks of deleted checkpoints, so no run claims them again.
                tx.execute("DELETE FROM graphwright_claims WHERE thread_id = ANY($1)", &[&subgraph_keys])
                    .await
                    .map_err(pg(op))?;
            }
            tx.commit().await.map_err(pg(op))?;
            Ok(usize::try_from(deleted).unwrap_or(usize::MAX))
        }
        .boxed()
    }

    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        async move {
            let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
            let op = &format!("listed the keys of thread `{thread}`");
            let client = self.client(op).await?;
            let rows = client
                .query(
                    "SELECT DISTINCT thread_id FROM graphwright_checkpoints WHERE thread_id = $1 OR left(thread_id, length($2)) = $2",
                    &[&thread, &nested],
                )
                .await
                .map_err(pg(op))?;
            rows.iter().map(|r| r.try_get(0).map_err(pg(op))).collect()
        }
        .boxed()
    }

    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        async move {
            let after = after.unwrap_or_default();
            let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
            let op = &format!("rolled thread `{thread}` back to checkpoint `{after}`");
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &thread]).await.map_err(pg(op))?;
            // Ids are fixed-width and ordered by creation (collation "C"), so "newer" is a text
            // comparison.
            let of_thread = "(thread_id = $1 OR left(thread_id, length($2)) = $2)";
            tx.execute(
                &format!("DELETE FROM graphwright_writes WHERE {of_thread} AND checkpoint_id > $3"),
                &[&thread, &nested, &after],
            )
            .await
            .map_err(pg(op))?;
            tx.execute(
                &format!("DELETE FROM graphwright_checkpoints WHERE {of_thread} AND id > $3"),
                &[&thread, &nested, &after],
            )
            .await
            .map_err(pg(op))?;
            self.fence_off(tx, thread, op).await
        }
        .boxed()
    }
}
