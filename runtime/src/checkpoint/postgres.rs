//! The PostgreSQL checkpointer: many processes sharing threads through one database.

use super::{CheckpointError, CheckpointRecord, Checkpointer, ListFilter, Source, WriteRecord};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction};
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_postgres::types::FromSqlOwned;
use tokio_postgres::{NoTls, Row};

/// The schema, one migration per version, applied in order and recorded in
/// `graphwright_migrations`. A released migration is never edited: a change is a new entry.
///
/// Ids are compared byte by byte (`COLLATE "C"`), as the other backends compare them, whatever
/// the database's locale. The primary key `(thread_id, id)` is also the index for newest-first
/// listing and for the head (PostgreSQL scans a B-tree backwards), so there is no second one.
const MIGRATIONS: &[(i32, &str)] = &[(
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
)];

/// First keys of the two-key advisory locks this saver takes; the second key is a hash of the
/// schema (migrations) or of the thread id (puts and deletes). Two-key locks live in a key
/// space of their own, apart from the one-key locks applications usually take.
const MIGRATION_LOCK: i32 = 0x4757_0001;
const THREAD_LOCK: i32 = 0x4757_0002;

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
}

impl std::fmt::Debug for PostgresSaver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresSaver").field("pool", &self.pool.status()).finish()
    }
}

impl PostgresSaver {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or `host=... dbname=...`)
    /// without TLS, with a pool of the default size, and brings its schema up to date.
    /// For TLS or other pool settings, build the pool and call [`PostgresSaver::from_pool`].
    pub async fn connect(url: &str) -> Result<Self, CheckpointError> {
        // The URL may hold a password: the error names the step, not the URL.
        let config: tokio_postgres::Config =
            url.parse().map_err(|e| CheckpointError::backend("parsed the PostgreSQL connection string", e))?;
        let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let pool = Pool::builder(manager)
            .build()
            .map_err(|e| CheckpointError::backend("built the PostgreSQL connection pool", e))?;
        Self::from_pool(pool).await
    }

    /// Uses a pool built elsewhere (with TLS, a size or timeouts of its own), and brings the
    /// schema its connections see up to date.
    pub async fn from_pool(pool: Pool) -> Result<Self, CheckpointError> {
        let saver = Self { pool };
        saver.migrate().await?;
        Ok(saver)
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

fn pg(operation: &str) -> impl Fn(tokio_postgres::Error) -> CheckpointError + '_ {
    move |e| CheckpointError::backend(operation.to_owned(), e)
}

/// Inserts `writes` in one statement; a write already stored under its key is kept.
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
    fn put(
        &self,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'_, Result<(), CheckpointError>> {
        async move {
            let op = &format!("stored checkpoint {} of thread `{}`", record.id, record.thread_id);
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
            tx.execute(LOCK_THREAD, &[&THREAD_LOCK, &record.thread_id]).await.map_err(pg(op))?;
            // A statement of its own: under READ COMMITTED it sees what the lock's last holder committed.
            let head: Option<String> =
                tx.query_one(HEAD, &[&record.thread_id]).await.and_then(|r| r.try_get(0)).map_err(pg(op))?;
            if head != expected_head {
                // Dropping the transaction rolls it back and releases the lock.
                return Err(CheckpointError::Conflict {
                    thread: record.thread_id,
                    expected: expected_head,
                    found: head,
                });
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
            futures::try_join!(insert_checkpoint, insert_writes(&tx, &writes)).map_err(pg(op))?;
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn put_writes(&self, writes: Vec<WriteRecord>) -> BoxFuture<'_, Result<(), CheckpointError>> {
        async move {
            let op = &format!("stored {} task write(s)", writes.len());
            let mut client = self.client(op).await?;
            let tx = client.transaction().await.map_err(pg(op))?;
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
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }
}
