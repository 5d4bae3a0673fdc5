//! The saver's schema and statements, and the decoding of the rows it reads back: what the
//! database holds, apart from how the saver drives it.

use crate::checkpoint::{CheckpointError, CheckpointRecord, Source, WriteRecord};
use tokio_postgres::Row;
use tokio_postgres::types::FromSqlOwned;

/// The schema, one migration per version, applied in order and recorded in
/// `graphwright_migrations`. A released migration is never edited: a change is a new entry.
///
/// Ids are compared byte by byte (`COLLATE "C"`), as the other backends compare them, whatever
/// the database's locale. The primary key `(thread_id, id)` is also the index for newest-first
/// listing and for the head (PostgreSQL scans a B-tree backwards), so there is no second one.
pub(super) const MIGRATIONS: &[(i32, &str)] = &[
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
pub(super) const MIGRATION_LOCK: i32 = 0x4757_0001;
pub(super) const THREAD_LOCK: i32 = 0x4757_0002;
/// Held (session-level) by each live saver on a connection of its own, keyed by its owner id:
/// the server releases it when that connection or its process dies.
pub(super) const OWNER_LOCK: i32 = 0x4757_0003;

pub(super) const CLAIM_OF: &str = "SELECT owner, fence FROM graphwright_claims WHERE thread_id = $1";
pub(super) const CLAIM_SHARED: &str = "SELECT owner, fence FROM graphwright_claims WHERE thread_id = $1 FOR SHARE";
pub(super) const SET_CLAIM: &str = "INSERT INTO graphwright_claims (thread_id, owner, fence) VALUES ($1, $2, $3) \
     ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, fence = excluded.fence";

pub(super) const LOCK_THREAD: &str = "SELECT pg_advisory_xact_lock($1, hashtext($2))";
pub(super) const HEAD: &str = "SELECT max(id) FROM graphwright_checkpoints WHERE thread_id = $1";
pub(super) const INSERT_CHECKPOINT: &str = "INSERT INTO graphwright_checkpoints \
     (thread_id, id, parent_id, step, source, created_at_ms, format, body) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
pub(super) const INSERT_WRITES: &str = "INSERT INTO graphwright_writes (thread_id, checkpoint_id, task, idx, format, body) \
     SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::bytea[]) \
     ON CONFLICT DO NOTHING";
pub(super) const SELECT_CHECKPOINT: &str =
    "SELECT thread_id, id, parent_id, step, source, created_at_ms, format, body FROM graphwright_checkpoints";

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
pub(super) fn checkpoint_row(thread: &str, row: &Row) -> Result<CheckpointRecord, CheckpointError> {
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
pub(super) fn write_row(thread: &str, checkpoint: &str, row: &Row) -> Result<WriteRecord, CheckpointError> {
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
