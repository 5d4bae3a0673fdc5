//! A graph as the server sees it: JSON in, JSON out, whatever its state and context types.

mod chains;
mod erased;
mod events;
mod graph;
mod run;
mod schemas;
mod snapshot;

pub(crate) use erased::Served;
pub(crate) use graph::erase;
pub(crate) use run::{Emitted, Modes, Outcome, RunSpec, Start, WireEvent};
pub(crate) use snapshot::interrupts_by_task;
