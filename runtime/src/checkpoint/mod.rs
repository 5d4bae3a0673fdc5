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
//! naming the thread, checkpoint and field, never a default value. Any backend can keep its
//! records encrypted at rest behind
//! [`Encrypted`](crate::encryption::Encrypted) (AES-256-GCM).

mod checkpointer;
mod error;
pub(crate) mod id;
mod memory;
#[cfg(feature = "postgres")]
pub(crate) mod pool;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use checkpointer::Checkpointer;
pub(crate) use checkpointer::check_prune;
/// The pool crate [`PostgresSaver::from_pool`] and
/// [`PostgresStore::from_pool`](crate::store::PostgresStore::from_pool) take, re-exported so a
/// pool built for them is of the same version (its `tokio_postgres` is re-exported within it).
#[cfg(feature = "postgres")]
pub use deadpool_postgres;
pub use error::CheckpointError;
pub use id::new_checkpoint_id;
pub use memory::MemorySaver;
#[cfg(feature = "postgres")]
pub use pool::postgres_pool;
#[cfg(feature = "postgres")]
pub use postgres::PostgresSaver;
pub use record::{
    BatchOp, CheckpointRecord, Claim, FORMAT_VERSION, ListFilter, NAMESPACE_SEPARATOR, Source, WriteRecord,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteSaver;
