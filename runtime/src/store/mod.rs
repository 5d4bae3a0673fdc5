//! Long-term memory shared across threads: JSON values under hierarchical namespaces.
//!
//! A checkpointer remembers one thread; a [`Store`] remembers across all of them. Items live
//! under a namespace (a path of labels such as `["users", "u1", "memories"]`) and a key, hold a
//! `serde_json::Value`, and may expire. Nodes reach the graph's store with
//! [`Runtime::store`](crate::Runtime::store); give the graph one with
//! [`StateGraph::store`](crate::StateGraph::store).
//!
//! - [`Store::put`], [`Store::get`], [`Store::delete`]: one item by namespace and key.
//! - [`Store::search`]: the items under a namespace prefix, narrowed by a [`Filter`] on top-level
//!   fields (`eq`, `ne`, `gt`, `gte`, `lt`, `lte`), paged with `limit` and `offset`, in
//!   (namespace, key) order.
//! - [`Store::list_namespaces`]: the namespaces that hold items, under a prefix, cut to a depth.
//! - TTL: an item put with a time to live is never returned once it has expired; expired items
//!   are deleted by [`Store::sweep`] and, at most once per sweep interval, by writes. With
//!   [`StoreOptions::refresh_on_read`] a read restarts the item's time to live.
//!
//! Backends: [`InMemoryStore`], `SqliteStore` (feature `sqlite`; its own tables, so it can
//! share a file with `SqliteSaver`) and `PostgresStore` (feature `postgres`; many processes
//! sharing one database, which it can share with `PostgresSaver`). They behave alike, down to
//! the order of results and the errors for invalid names (save that PostgreSQL cannot hold
//! U+0000 in a name), and all take their time from a [`Clock`], so tests of expiry advance a
//! [`ManualClock`] instead of sleeping.
//!
//! Namespace labels and keys must be non-empty and must not contain [`SEPARATOR`] (U+001F, the
//! ASCII unit separator), which the stores use to keep a namespace as one string; anything else
//! (dots, slashes, e-mail addresses, any Unicode) is allowed.
//!
//! ```
//! use graphwright::prelude::*;
//! use graphwright::store::{Filter, InMemoryStore, SearchQuery, Store};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! #[graph]
//! mod assistant {
//!     use super::*;
//!
//!     #[state]
//!     pub struct State {
//!         pub user: String,
//!         pub message: String,
//!         pub known: Vec<String>,
//!     }
//!
//!     /// Remembers what the user said, then recalls everything it knows about them.
//!     #[node(entry, next = END)]
//!     async fn remember(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
//!         let store = rt.store()?;
//!         let namespace = ["users", state.user.as_str(), "facts"];
//!         let key = format!("fact-{}", rt.thread_id().unwrap_or("none"));
//!         store.put(&namespace, &key, json!({"text": state.message, "kind": "fact"}), None).await?;
//!         let facts = store.search(&namespace, SearchQuery::new().filter(Filter::new().eq("kind", "fact"))).await?;
//!         let known: Vec<String> = facts.iter().filter_map(|item| item.value["text"].as_str().map(str::to_owned)).collect();
//!         Ok(StateUpdate::new().known(known))
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Report> {
//!     let store = Arc::new(InMemoryStore::new());
//!     let app = assistant::graph().shared_store(store.clone()).compile()?;
//!     let said = |message: &str| assistant::StateUpdate::new().user("u1".to_owned()).message(message.to_owned());
//!
//!     app.invoke(said("likes tea"), &RunConfig::thread("monday")).await?;
//!     // Another thread, same user: the memory written on Monday is there.
//!     let out = app.invoke(said("lives in Oslo"), &RunConfig::thread("tuesday")).await?;
//!     assert_eq!(out.state.known, ["likes tea", "lives in Oslo"]);
//!     assert_eq!(store.list_namespaces(&["users"], None).await?, [vec!["users", "u1", "facts"]]);
//!     Ok(())
//! }
//! ```

mod backend;
mod clock;
mod error;
mod filter;
mod index;
mod item;
mod memory;
mod namespace;
mod options;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_index;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod rows;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_index;
mod sweeper;
mod time;

pub use backend::Store;
pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StoreError;
pub use filter::{Condition, Filter, FilterOp};
pub use index::{IndexConfig, Indexing};
pub use item::{Item, PutItem, SEPARATOR, SearchQuery};
pub use memory::InMemoryStore;
pub use options::StoreOptions;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
