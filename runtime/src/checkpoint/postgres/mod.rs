//! The PostgreSQL checkpointer: many processes sharing threads through one database.

mod checkpointer;
mod saver;
mod sql;

pub use saver::PostgresSaver;
