//! The stored-record format, below both the checkpointers and the executor: how values are
//! encoded ([`codec`]: `MessagePack`, bounded nesting, integrity seals) and how a thread's
//! records are laid out apart from the graph's own types ([`format`]: write indices,
//! interrupts, answers, call results, outcomes, moving records to another thread). The records
//! that carry a graph's state and updates are encoded above, by the executor.

pub(crate) mod codec;
pub(crate) mod format;
