//! Serve graphwright graphs behind the LangGraph Agent Server API, so that LangGraph's own
//! clients (`langgraph-sdk` for Python, `@langchain/langgraph-sdk` for JavaScript, and chat UIs
//! built on them) drive graphs written in Rust.
//!
//! ```no_run
//! use graphwright::prelude::*;
//! use graphwright_server::Server;
//!
//! #[graph]
//! mod echo {
//!     use graphwright::prelude::*;
//!
//!     #[state]
//!     pub struct State {
//!         #[reducer(messages)]
//!         pub messages: Vec<Message>,
//!     }
//!
//!     #[node(entry, next = END)]
//!     fn reply(state: &State) -> StateUpdate {
//!         let last = state.messages.last().map(|m| m.content.clone()).unwrap_or_default();
//!         StateUpdate::new().messages(vec![Message::assistant(format!("you said: {last}"))])
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let app = echo::graph().compile()?;
//!     Server::new().graph("echo", app).sqlite("echo.db").serve("127.0.0.1:2024").await?;
//!     Ok(())
//! }
//! ```
//!
//! From Python, the same graph is then driven as any LangGraph deployment:
//!
//! ```text
//! from langgraph_sdk import get_client
//! client = get_client(url="http://127.0.0.1:2024")
//! thread = await client.threads.create()
//! async for part in client.runs.stream(thread["thread_id"], "echo",
//!         input={"messages": [{"type": "human", "content": "hi"}]}, stream_mode="messages-tuple"):
//!     print(part.event, part.data)
//! ```
//!
//! A browser pointed at the server's root gets a small studio for trying a graph (drawn, its
//! runs streamed node by node, its thread's checkpoints to inspect and fork, and a chat):
//! `http://127.0.0.1:2024/?graph=echo&message=hi` opens it and sends a first message. Chat front
//! ends served from other ports of this machine (LangGraph's agent-chat-ui, say) may call the
//! server from the browser; pages of other websites may not, unless [`Server::cors`] names them:
//!
//! ```
//! use graphwright_server::{Cors, Server};
//!
//! let server = Server::new().cors(Cors::loopback().allow_origin("https://chat.example.com"));
//! ```
//!
//! With [`Server::auth`], every request but `GET /ok`, the studio page's files and CORS preflights
//! must carry credentials the authenticator accepts ([`ApiKeys`] for the `x-api-key` header
//! LangGraph's clients send, [`Jwt`] for bearer tokens, or an async function of an
//! [`AuthRequest`]); nodes see the caller as [`Runtime::user`](graphwright::Runtime::user). Without
//! an authenticator the server binds loopback addresses only, unless
//! [`Server::allow_unauthenticated`] says otherwise.
//!
//! With [`Server::authorize`], an [`authz::Policy`] decides what each caller may see and do,
//! per resource and action; [`authz::OwnerIsolation`] keeps each user to the threads, runs,
//! crons, assistants and store namespaces they made (another user's thread is 404 everywhere).
//!
//! `/metrics` reports runs, their model calls (tokens per provider and model) and tool calls (per
//! tool and outcome), the queue and requests in Prometheus's text format.
//!
//! Threads, runs and the store live in one SQLite file for one process
//! ([`Server::sqlite`]), or with the `postgres` feature in a PostgreSQL database that several
//! server processes share (`Server::postgres`): a run accepted by one can be joined, streamed and
//! cancelled through another, and the runs of a process that dies are taken over by another,
//! going on from their checkpoints. A server restarted on its SQLite file takes up the runs it
//! had accepted the same way.
//!
//! Crons (`client.crons` in LangGraph's clients) make runs on a schedule, stateless or on a
//! thread; each server process runs a scheduler, and with PostgreSQL each firing is made by
//! exactly one process.
//!
//! Each assistant is also a tool of the MCP server at `/mcp` (streamable HTTP: a call runs the
//! assistant and answers with its output values) and an agent of the `Agent2Agent` protocol at
//! `/a2a/{assistant_id}` (JSON-RPC: a message runs the assistant on the thread its `contextId`
//! names), with its agent card at `/a2a/{assistant_id}/.well-known/agent-card.json`.
//!
//! What is served, and where it differs from LangGraph's server, is listed in the
//! repository's README.

mod api;
mod app;
mod auth;
pub mod authz;
#[cfg(feature = "postgres")]
mod cluster;
mod cors;
mod crons;
mod error;
mod meta;
mod metrics;
mod runs;
mod sealed;
mod served;
mod server;
mod time;
mod wire;

pub use auth::{ApiKeys, AuthRequest, Authenticator, Jwt, JwtError, Refusal};
pub use cors::{Cors, CorsError};
pub use error::{ApiError, ServerError};
pub use graphwright::AuthUser;
pub use server::{Bound, DEFAULT_BODY_LIMIT, DEFAULT_DRAIN_GRACE, DEFAULT_MAX_ATTEMPTS, Server};
