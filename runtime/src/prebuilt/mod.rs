//! Prebuilt agents: a `ReAct` loop ([`react_agent`]), a team led by a supervisor
//! ([`supervisor`]) and a team whose members hand the conversation to each other ([`swarm`]).
//!
//! Each is an ordinary graph, built with the same builder as a hand-written one: it
//! checkpoints on a thread, pauses for review and resumes, streams, and is a subgraph of a
//! larger graph. Models and tools are the ones of [`crate::model`] and [`crate::tool`](mod@crate::tool); the
//! states are [`MessagesState`] and [`SwarmState`].

mod error;
mod handoff;
mod react;
mod review;
mod state;
mod supervisor;
mod swarm;
mod team;

pub use error::AgentError;
pub use react::{AGENT_NODE, DEFAULT_STEP_LIMIT, IntoChatModel, ReactAgent, STRUCTURE_NODE, TOOLS_NODE, react_agent};
pub use review::{ReviewRequest, ToolReview};
pub use state::{MessagesState, MessagesStateUpdate, SwarmState, SwarmStateUpdate};
pub use supervisor::{Supervisor, supervisor};
pub use swarm::{Swarm, swarm};
