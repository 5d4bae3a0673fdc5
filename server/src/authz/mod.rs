//! Authorization: what an authenticated caller may see and do.
//!
//! A [`Policy`] holds [`Handler`]s per [`Resource`] and [`Action`]. For each request the most
//! specific handler is given an [`Access`] (the caller, the resource, the action and the
//! request's values) and answers with a [`Grant`] or a [`Forbidden`] (403). A grant may
//! - restrict the request to the records its [`Filter`] admits, on their metadata: the server
//!   applies it to every read, search, count, list, history, join, stream replay, copy, cancel
//!   and delete, and answers a record the filter keeps out as missing (404), so that its
//!   existence is not revealed;
//! - set metadata on the record the request creates or updates (an owner), after the client's
//!   own, so that a client cannot change it;
//! - move a store request to another namespace (under the caller's own, say).
//!
//! [`OwnerIsolation`] is the built-in policy: each user sees only the threads, runs, crons,
//! assistants and store namespaces they made.
//!
//! ```no_run
//! use graphwright::AuthUser;
//! use graphwright_server::authz::OwnerIsolation;
//! use graphwright_server::{ApiKeys, Server};
//!
//! # async fn serve() -> Result<(), graphwright_server::ServerError> {
//! let keys = ApiKeys::new().key("key-of-ada", AuthUser::new("ada")).key("key-of-bob", AuthUser::new("bob"));
//! Server::new().auth(keys).authorize(OwnerIsolation).sqlite("threads.db").serve("127.0.0.1:2024").await
//! # }
//! ```
//!
//! Every route of the API has a rule saying what it acts on; the rules are checked by the
//! server's tests against its route table, and a route with no rule is refused. The checks
//! read the shared records, so they hold the same in every process of a PostgreSQL cluster.

mod filter;
pub(crate) mod gate;
mod owner;
mod policy;
mod routes;

pub use filter::Filter;
pub use owner::OwnerIsolation;
pub use policy::{Access, Action, Forbidden, Grant, Handler, Policy, Resource};
