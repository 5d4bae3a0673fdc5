//! Checkpoints: a thread's state after every super-step, so a run can pause, crash, resume,
//! and be inspected or rewound.
//!
//! A checkpoint stores what changed, not a copy of everything: its record holds the tasks of
//! the next step and, now and then, a full snapshot of the state; between snapshots the state
//! is rebuilt by folding the writes each step's tasks saved (which are kept anyway, so a
//! finished task never runs twice). Storage therefore grows linearly with a run.
//!
//! Backends implement [`Checkpointer`]: [`MemorySaver`] (the default), `SqliteSaver` (feature
//! `sqlite`, one file) and `PostgresSaver` (feature `postgres`, many processes). Every stored
//! record carries [`FORMAT_VERSION`]; a record that does not decode is a [`CheckpointError`]
//! naming the thread, checkpoint and field, never a default value.

mod error;
mod id;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

/// The pool crate [`PostgresSaver::from_pool`] takes, re-exported so a pool built for it is of
/// the same version (its `tokio_postgres` is re-exported within it).
#[cfg(feature = "postgres")]
pub use deadpool_postgres;
pub use error::CheckpointError;
pub use id::new_checkpoint_id;
pub use memory::MemorySaver;
#[cfg(feature = "postgres")]
pub use postgres::PostgresSaver;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSaver;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

/// The version of the stored record layout; bumped on any incompatible change.
pub const FORMAT_VERSION: u16 = 1;

/// Why a checkpoint was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The run's input, before any step (step -1).
    Input,
    /// After a super-step of the run (step 0 applies the input).
    Loop,
    /// Written by `update_state`.
    Update,
    /// The first checkpoint of a branch started from an older checkpoint.
    Fork,
}

impl Source {
    /// The name stored for this source.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Loop => "loop",
            Self::Update => "update",
            Self::Fork => "fork",
        }
    }

    /// The source with the stored name `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "input" => Some(Self::Input),
            "loop" => Some(Self::Loop),
            "update" => Some(Self::Update),
            "fork" => Some(Self::Fork),
            _ => None,
        }
    }
}

/// One stored checkpoint, as a backend sees it: metadata in columns, the body as bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The thread it belongs to.
    pub thread_id: String,
    /// Its id: unique, and ordered by creation time within a thread.
    pub id: String,
    /// The checkpoint it follows; `None` for the first of a thread.
    pub parent_id: Option<String>,
    /// The super-step it was taken after (-1 for the input).
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The layout version of `body`.
    pub format: u16,
    /// The encoded body (state snapshot or none, next tasks, pending interrupts).
    pub body: Vec<u8>,
}

/// One write a finished task saved, keyed so that saving it twice changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    /// The thread.
    pub thread_id: String,
    /// The checkpoint whose next tasks the task belongs to.
    pub checkpoint_id: String,
    /// The task's index among that checkpoint's next tasks.
    pub task: u32,
    /// The write's index within the task (a task may save more than one write).
    pub index: u32,
    /// The layout version of `body`.
    pub format: u16,
    /// The encoded write.
    pub body: Vec<u8>,
}

/// Which checkpoints of a thread `list` returns, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only checkpoints older than this id.
    pub before: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
    /// Only checkpoints with this source.
    pub source: Option<Source>,
}

/// One operation of [`Checkpointer::put_batch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// As [`Checkpointer::put_writes`].
    Writes(Vec<WriteRecord>),
    /// As [`Checkpointer::put`].
    Put {
        /// The checkpoint.
        record: CheckpointRecord,
        /// The head it must find.
        expected_head: Option<String>,
        /// Writes stored with it.
        writes: Vec<WriteRecord>,
    },
}

/// A store of checkpoints. Implementations must be safe to share between runs and threads.
///
/// `put` is a compare-and-set on the thread's head: it succeeds only when `expected_head` is
/// the id of the thread's newest checkpoint (or `None` for a thread with none), so two runs
/// that raced on one thread cannot both extend it, even from different processes.
pub trait Checkpointer: Send + Sync + 'static {
    /// Stores `record`, and `writes` with it in the same transaction, if the thread's newest
    /// checkpoint is still `expected_head`; stores nothing otherwise.
    fn put(
        &self,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'_, Result<(), CheckpointError>>;

    /// Stores writes of finished tasks; a write already stored under the same key is kept as it was.
    fn put_writes(&self, writes: Vec<WriteRecord>) -> BoxFuture<'_, Result<(), CheckpointError>>;

    /// The checkpoint `id` of `thread`, or its newest when `id` is `None`.
    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>>;

    /// The thread's checkpoints, newest first.
    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>>;

    /// The writes saved against checkpoint `checkpoint` of `thread`, ordered by task and index.
    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>>;

    /// Deletes every checkpoint and write of `thread`.
    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Applies `ops` in order. Backends with transactions override this to apply them in one
    /// (all or nothing), so a run under `Durability::Async` pays one commit for several steps.
    /// The default applies them one by one and stops at the first error.
    fn put_batch(&self, ops: Vec<BatchOp>) -> BoxFuture<'_, Result<(), CheckpointError>> {
        Box::pin(async move {
            for op in ops {
                match op {
                    BatchOp::Writes(writes) => self.put_writes(writes).await?,
                    BatchOp::Put { record, expected_head, writes } => self.put(record, expected_head, writes).await?,
                }
            }
            Ok(())
        })
    }
}
