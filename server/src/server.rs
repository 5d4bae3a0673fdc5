//! [`Server`]: which graphs to serve, where to keep their threads, and the listening socket.

use crate::app::{App, Scratch, system_assistant_id};
use crate::auth::Authenticator;
use crate::authz::Policy;
use crate::cors::Cors;
use crate::error::ServerError;
use crate::meta::sqlite::SqliteMeta;
use crate::meta::{AssistantRow, Db, Meta};
use crate::runs::Runs;
use crate::sealed::Sealer;
use crate::served::{self, Served};
use graphwright::encryption::{Encrypted, Keys};
use graphwright::store::{SqliteStore, StoreOptions};
use graphwright::{Checkpointer, CompiledGraph, InMemoryStore, MemorySaver, SqliteSaver, State, Store};
use serde::de::DeserializeOwned;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest request body accepted unless [`Server::body_limit`] says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// How long a server asked to stop lets its runs in flight finish, unless
/// [`Server::drain_grace`] says otherwise.
pub const DEFAULT_DRAIN_GRACE: std::time::Duration = std::time::Duration::from_secs(30);

/// How many times a run is started before it is given up on, its server process having
/// stopped every time before it ended, unless [`Server::max_attempts`] says otherwise.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// Where the server keeps threads, runs, assistants and the store.
#[derive(Clone, Debug)]
enum Database {
    Memory,
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

/// The storage opened: checkpoints, the store, the server's records, and the cluster of
/// server processes sharing them (PostgreSQL only).
/// `saver`, encrypted under `keys` when there are keys.
fn sealed_saver<C: Checkpointer>(saver: C, keys: Option<&Keys>) -> Arc<dyn Checkpointer> {
    match keys {
        Some(keys) => Arc::new(Encrypted::new(saver, keys.clone())),
        None => Arc::new(saver),
    }
}

/// `store`, encrypted under `keys` when there are keys.
fn sealed_store<S: Store>(store: S, keys: Option<&Keys>) -> Arc<dyn Store> {
    match keys {
        Some(keys) => Arc::new(Encrypted::new(store, keys.clone())),
        None => Arc::new(store),
    }
}

struct Storage {
    saver: Arc<dyn Checkpointer>,
    store: Arc<dyn Store>,
    meta: Meta,
    #[cfg(feature = "postgres")]
    cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// An HTTP server for compiled graphs, speaking the LangGraph Agent Server API.
///
/// Each graph is served under its name, which clients pass as `assistant_id` (or use the
/// id of its default assistant). The server keeps every thread's checkpoints, its own records
/// (assistants, threads, runs) and the store in one SQLite file given with
/// [`sqlite`](Self::sqlite), in a PostgreSQL database shared by several server processes
/// given with `postgres` (feature `postgres`), or in memory without either; the checkpointer
/// and store a graph was compiled with are replaced by the server's.
///
/// ```no_run
/// use graphwright::prebuilt::MessagesState;
/// use graphwright::prelude::*;
/// use graphwright_server::Server;
///
/// # async fn serve(agent: CompiledGraph<MessagesState>) -> Result<(), graphwright_server::ServerError> {
/// Server::new().graph("agent", agent).sqlite("threads.db").serve("127.0.0.1:2024").await
/// # }
/// ```
#[must_use]
pub struct Server {
    graphs: Vec<(String, Arc<dyn Served>)>,
    database: Database,
    body_limit: usize,
    max_runs_per_user: Option<usize>,
    cors: Cors,
    /// The keys the server's storage is encrypted with.
    encryption: Option<Keys>,
    /// The store's index for search by meaning, if any.
    store_index: Option<graphwright::store::IndexConfig>,
    auth: Option<Arc<dyn Authenticator>>,
    /// Who may see and do what.
    policy: Option<Arc<Policy>>,
    /// How long a terminated server lets its runs in flight finish.
    drain_grace: std::time::Duration,
    /// How many times a run is started before it is given up on.
    max_attempts: u32,
    /// Whether binding an address other machines reach without `auth` was asked for.
    open: bool,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("graphs", &self.graphs.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("database", &self.database)
            .field("body_limit", &self.body_limit)
            .field("max_runs_per_user", &self.max_runs_per_user)
            .field("cors", &self.cors)
            .field("encryption", &self.encryption.as_ref().map(Keys::id))
            .field("store_index", &self.store_index)
            .field("auth", &self.auth.is_some())
            .field("policy", &self.policy)
            .field("drain_grace", &self.drain_grace)
            .field("max_attempts", &self.max_attempts)
            .field("allow_unauthenticated", &self.open)
            .finish()
    }
}

impl Server {
    /// A server with no graphs, keeping everything in memory.
    pub fn new() -> Self {
        Self {
            graphs: Vec::new(),
            database: Database::Memory,
            body_limit: DEFAULT_BODY_LIMIT,
            max_runs_per_user: None,
            cors: Cors::loopback(),
            encryption: None,
            store_index: None,
            auth: None,
            policy: None,
            drain_grace: DEFAULT_DRAIN_GRACE,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            open: false,
        }
    }

    /// Serves `graph` as `name`. Inputs and updates from clients are decoded into the state's
    /// update type (message fields also accept LangChain's message dicts), and a run's
    /// `context` (or `config.configurable`) into `C`.
    ///
    /// `/assistants/{id}/schemas` describes the graph with JSON Schemas made from its types, so
    /// that front ends can draw a form for its input: the state's (which `#[state]` derives; its
    /// message fields shown as LangChain messages) and the context's, which is why `C` must
    /// implement `schemars::JsonSchema` (derive it on your context type; a graph without a
    /// context has `()`, served as no context schema). They are made when a client first asks.
    ///
    /// An [`Entrypoint`](graphwright::functional::Entrypoint) is served as LangGraph serves
    /// one: a run's `input` is the value its fn takes, its values (and its node's update) are
    /// the value it returned, and `update_state` sets what the next run gets as `previous`.
    pub fn graph<S, C>(self, name: impl Into<String>, graph: impl Into<CompiledGraph<S, C>>) -> Self
    where
        S: State,
        C: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    {
        self.add(name.into(), served::erase(graph.into()))
    }

    fn add(mut self, name: String, graph: Arc<dyn Served>) -> Self {
        self.graphs.push((name, graph));
        self
    }

    /// Keeps threads, runs, assistants and the store in the SQLite file at `path` (created if
    /// missing), so that they outlive the process. One server process per file.
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.database = Database::Sqlite(path.into());
        self
    }

    /// Keeps threads, runs, assistants and the store in the PostgreSQL database at `url`
    /// (`postgres://user@host:port/db`, without TLS), shared by every server process given
    /// the same URL: a run accepted by one process can be joined, streamed and cancelled
    /// through any other, runs on a thread execute one at a time whichever process accepted
    /// them, and the runs of a process that dies are taken over by another within about a
    /// second (a run in flight goes on from its checkpoints; one whose process died three
    /// times is marked `error`).
    #[cfg(feature = "postgres")]
    pub fn postgres(mut self, url: impl Into<String>) -> Self {
        self.database = Database::Postgres(url.into());
        self
    }

    /// At most `runs` runs in flight (accepted, queued or running, not yet ended) per
    /// authenticated user ([`auth`](Self::auth)), counted in this process (processes sharing
    /// PostgreSQL each count their own): a run beyond it is
    /// refused with 429, a `Retry-After` header and a `detail` naming the limit, before anything
    /// of it is stored, so one user cannot crowd out the others or spend without bound. Runs of
    /// a server without authentication, and runs crons fire, have no user and are not counted.
    /// No limit unless set.
    ///
    /// ```
    /// use graphwright_server::{ApiKeys, AuthUser, Server};
    ///
    /// let server = Server::new().auth(ApiKeys::new().key("k", AuthUser::new("ada"))).max_runs_per_user(4);
    /// # let _ = server;
    /// ```
    pub fn max_runs_per_user(mut self, runs: usize) -> Self {
        self.max_runs_per_user = Some(runs);
        self
    }

    /// The largest request body accepted, in bytes; larger ones are answered 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Which web pages may call the server from a browser (default: [`Cors::loopback`], pages
    /// served from this machine). Requests sent by pages of other origins are refused (403),
    /// and the browser lets them read nothing.
    pub fn cors(mut self, cors: Cors) -> Self {
        self.cors = cors;
        self
    }

    /// Encrypts what the server stores with `keys` (AES-256-GCM, see
    /// [`graphwright::encryption`]): every checkpoint and task write, every store value, and the
    /// sensitive parts of its own records (a thread's last values and interrupts, a run's
    /// request and, on PostgreSQL, its events and outcome, a cron's run request). Ids, times,
    /// statuses and metadata stay readable, as they are what searches and the run queue use.
    /// What was stored before encryption was turned on stays readable, and older keys listed
    /// with [`Keys::with_old`] read what they wrote. `examples/serve.rs` reads the key from
    /// `GRAPHWRIGHT_AES_KEY` (base64 of 32 bytes).
    ///
    /// ```no_run
    /// use graphwright::encryption::Keys;
    /// use graphwright_server::Server;
    ///
    /// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
    /// let keys = Keys::from_base64(&std::env::var("GRAPHWRIGHT_AES_KEY")?)?;
    /// Server::new().sqlite("threads.db").encryption(keys).serve("127.0.0.1:2024").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn encryption(mut self, keys: Keys) -> Self {
        self.encryption = Some(keys);
        self
    }

    /// Gives the store an index, so that `POST /store/items/search` with a `query` ranks items
    /// by meaning, as LangGraph's server does with `store.index` in `langgraph.json`: the
    /// fields it names are embedded on every put (`"index": false` in a put stores an item
    /// without vectors; a list of paths embeds those instead), and each item found carries its
    /// `score`. Nodes see the same index through [`Runtime::store`](graphwright::Runtime::store).
    /// It cannot be combined with [`encryption`](Self::encryption)
    /// ([`ServerError::IndexWithEncryption`]).
    ///
    /// ```no_run
    /// use graphwright::model::OpenAiEmbeddings;
    /// use graphwright::store::IndexConfig;
    /// use graphwright_server::Server;
    ///
    /// # fn index() -> Result<IndexConfig, graphwright::store::StoreError> {
    /// let index = IndexConfig::new(OpenAiEmbeddings::new("text-embedding-3-small"), 1536).fields(["text"])?;
    /// let server = Server::new().sqlite("threads.db").store_index(index);
    /// # unimplemented!() }
    /// ```
    pub fn store_index(mut self, index: graphwright::store::IndexConfig) -> Self {
        self.store_index = Some(index);
        self
    }

    /// Authenticates every request with `authenticator` before it reaches a route: a request it
    /// refuses is answered 401 with a `WWW-Authenticate` challenge and `{"detail": reason}`, and
    /// the runs a request it lets in starts see its user as
    /// [`Runtime::user`](graphwright::Runtime::user). `GET /ok`, the studio page's files (`/`,
    /// its scripts and style under `/ui/`) and CORS preflights are let in without credentials; `/info` reports
    /// `"flags": {"auth": true}`. The credentials themselves (`Authorization`, `x-api-key`) are
    /// taken off the request once it is let in, so they reach no handler, log or record.
    ///
    /// Authentication says who is calling; [`authorize`](Self::authorize) says what they may
    /// see and do. Without a policy, every caller it lets in can read and act on every thread,
    /// run, cron and store item.
    ///
    /// With authentication, [`Cors::any`] is refused: list the origins of your front ends.
    ///
    /// ```no_run
    /// use graphwright::AuthUser;
    /// use graphwright::prebuilt::MessagesState;
    /// use graphwright::prelude::*;
    /// use graphwright_server::{ApiKeys, Server};
    ///
    /// # async fn serve(agent: CompiledGraph<MessagesState>) -> Result<(), graphwright_server::ServerError> {
    /// let key = std::env::var("GRAPHWRIGHT_API_KEY").expect("an API key for the server's clients");
    /// Server::new()
    ///     .graph("agent", agent)
    ///     .auth(ApiKeys::new().key(key, AuthUser::new("team")))
    ///     .serve("0.0.0.0:2024")
    ///     .await
    /// # }
    /// ```
    ///
    /// From Python, `get_client(url=.., api_key=key)` sends the key in `x-api-key`.
    pub fn auth(mut self, authenticator: impl Authenticator) -> Self {
        self.auth = Some(Arc::new(authenticator));
        self
    }

    /// Decides what each authenticated caller may see and do: handlers per resource and
    /// action ([`Policy`]), or the built-in [`OwnerIsolation`](crate::authz::OwnerIsolation),
    /// under which each user sees only the threads, runs, crons, assistants and store
    /// namespaces they made. Needs [`auth`](Self::auth) (without it the router is not built:
    /// [`ServerError::AuthorizationWithoutAuthentication`]).
    ///
    /// ```no_run
    /// use graphwright::AuthUser;
    /// use graphwright::prebuilt::MessagesState;
    /// use graphwright::prelude::*;
    /// use graphwright_server::authz::OwnerIsolation;
    /// use graphwright_server::{ApiKeys, Server};
    ///
    /// # async fn serve(agent: CompiledGraph<MessagesState>) -> Result<(), graphwright_server::ServerError> {
    /// let keys = ApiKeys::new().key("key-of-ada", AuthUser::new("ada")).key("key-of-bob", AuthUser::new("bob"));
    /// Server::new().graph("agent", agent).auth(keys).authorize(OwnerIsolation).serve("127.0.0.1:2024").await
    /// # }
    /// ```
    pub fn authorize(mut self, policy: impl Into<Policy>) -> Self {
        self.policy = Some(Arc::new(policy.into()));
        self
    }

    /// How long [`Bound::run`] lets the runs in flight finish once the process is asked to stop
    /// (SIGTERM, or Ctrl-C): [`DEFAULT_DRAIN_GRACE`] unless set. Runs still in flight after it,
    /// and runs that had not started, are left as recorded: the next server process on the
    /// database (another one now, on PostgreSQL) takes them up, none is marked failed.
    pub fn drain_grace(mut self, grace: std::time::Duration) -> Self {
        self.drain_grace = grace;
        self
    }

    /// How many times a run may be started ([`DEFAULT_MAX_ATTEMPTS`] unless set; at least 1).
    /// A run whose server process stopped before it ended (killed, crashed, or out of grace
    /// when asked to stop) is taken up again by the next process on the database; once it
    /// has been started this many times, it is marked `error` with a reason that names the
    /// attempts instead, and its thread takes new runs: a run that kills its process every
    /// time cannot keep a server restarting forever. A run that was only waiting for its turn
    /// was not started and is not counted.
    ///
    /// ```
    /// use graphwright_server::Server;
    ///
    /// let server = Server::new().sqlite("threads.db").max_attempts(5);
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Lets [`bind`](Self::bind) and [`serve`](Self::serve) listen on an address other machines
    /// reach (`0.0.0.0`, a LAN address) without [`auth`](Self::auth): anyone who reaches the
    /// port can then read every thread and start runs. Without it such a server refuses to
    /// start with [`ServerError::Unauthenticated`]; with it, it starts with a warning in the log.
    /// For a server behind a proxy that authenticates, or on a network you trust.
    pub fn allow_unauthenticated(mut self) -> Self {
        self.open = true;
        self
    }

    /// The server's routes, ready to be served by `axum` (or nested under a prefix of a
    /// larger application). Opens the storage; with SQLite, runs a previous process accepted
    /// and did not finish are taken up again (continuing from their threads' checkpoints; one
    /// started [`max_attempts`](Self::max_attempts) times already is marked `error`, as is one whose graph is no longer
    /// served).
    ///
    /// The router authenticates with [`auth`](Self::auth) when given one; where it listens is
    /// up to the caller, who takes on the check [`bind`](Self::bind) makes.
    pub async fn into_router(self) -> Result<axum::Router, ServerError> {
        Ok(self.build().await?.0)
    }

    /// The router, and the state it serves.
    async fn build(self) -> Result<(axum::Router, Arc<App>), ServerError> {
        if self.auth.is_some() && self.cors.is_any() {
            return Err(ServerError::AnyOriginWithAuth);
        }
        if self.policy.is_some() && self.auth.is_none() {
            return Err(ServerError::AuthorizationWithoutAuthentication);
        }
        if self.store_index.is_some() && self.encryption.is_some() {
            return Err(ServerError::IndexWithEncryption);
        }
        let (cors, guard) = self.cors.build()?;
        let runs = Arc::new(Runs::default());
        // Runs this process takes over from processes that are gone (PostgreSQL), to execute.
        let (adopted, mut taken_over) = tokio::sync::mpsc::unbounded_channel();
        let storage = self.open(&runs, adopted).await?;
        let mut graphs = BTreeMap::new();
        let scratch_saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
        let mut scratch = BTreeMap::new();
        for (name, graph) in self.graphs {
            let durable = graph.rebind(Arc::clone(&storage.saver), Arc::clone(&storage.store));
            scratch.insert(name.clone(), graph.rebind(Arc::clone(&scratch_saver), Arc::clone(&storage.store)));
            if graphs.insert(name.clone(), durable).is_some() {
                return Err(ServerError::DuplicateGraph(name));
            }
        }
        let assistants = graphs.keys().map(|graph| default_assistant(graph)).collect();
        let (unfinished, given_up) = storage
            .meta
            .prepare(assistants, self.max_attempts)
            .await
            .map_err(|e| self.database.failed(e.to_string()))?;
        let app = Arc::new(App {
            graphs,
            scratch: Scratch { graphs: scratch, saver: scratch_saver },
            meta: storage.meta,
            saver: storage.saver,
            store: storage.store,
            runs,
            #[cfg(feature = "postgres")]
            cluster: storage.cluster,
            body_limit: self.body_limit,
            max_runs_per_user: self.max_runs_per_user,
            metrics: Arc::default(),
            crons: crate::crons::Alarm::default(),
            authenticated: self.auth.is_some(),
            policy: self.policy,
            draining: tokio::sync::watch::Sender::new(false),
        });
        crate::crons::start(&app);
        // Once the lease is lost, no run is taken or started here: the processes taking this
        // one's runs over start them.
        #[cfg(feature = "postgres")]
        if let Some(cluster) = &app.cluster {
            let (mut lost, weak) = (cluster.lease_watch(), Arc::downgrade(&app));
            tokio::spawn(async move {
                if lost.wait_for(|lost| *lost).await.is_ok()
                    && let Some(app) = weak.upgrade()
                {
                    app.draining.send_replace(true);
                }
            });
        }
        for run in given_up {
            let outcome = crate::meta::attempts_exhausted(run.attempts);
            crate::runs::ended_without_running(&app, run.run_id, run.thread_id, outcome);
        }
        crate::runs::resume(&app, unfinished).await;
        let weak = Arc::downgrade(&app);
        tokio::spawn(async move {
            while let Some(runs) = taken_over.recv().await {
                let Some(app) = weak.upgrade() else { return };
                crate::runs::resume(&app, runs).await;
            }
        });
        let mut router = crate::api::router(Arc::clone(&app));
        if let Some(authenticator) = self.auth {
            // Inside the origin guard: a page that may not call the server is refused before
            // its credentials are looked at.
            router = router.layer(axum::middleware::from_fn(move |request, next| {
                crate::auth::guard(Arc::clone(&authenticator), request, next)
            }));
        }
        let router = router
            .layer(axum::middleware::from_fn(move |request, next| guard.clone().check(request, next)))
            // Outermost: preflights are answered before the guard, which sees no `OPTIONS`.
            .layer(cors);
        Ok((router, app))
    }

    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async, unused_variables))] // PostgreSQL only
    async fn open(
        &self,
        runs: &Arc<Runs>,
        adopted: tokio::sync::mpsc::UnboundedSender<Vec<crate::meta::Unfinished>>,
    ) -> Result<Storage, ServerError> {
        let fail = |reason: String| self.database.failed(reason);
        let sealer = Sealer::new(self.encryption.clone());
        let store_options = || match &self.store_index {
            Some(index) => StoreOptions::new().index(index.clone()),
            None => StoreOptions::new(),
        };
        match &self.database {
            Database::Memory => {
                // Nothing is at rest: there is nothing to encrypt.
                let meta = SqliteMeta::open(None).map_err(|e| fail(e.to_string()))?;
                Ok(Storage {
                    saver: Arc::new(MemorySaver::new()),
                    store: Arc::new(InMemoryStore::with_options(store_options())),
                    meta: Meta::new(Db::Sqlite(meta), Sealer::default()),
                    #[cfg(feature = "postgres")]
                    cluster: None,
                })
            }
            Database::Sqlite(path) => {
                let saver = SqliteSaver::open(path).map_err(|e| fail(e.to_string()))?;
                let store = SqliteStore::open_with(path, store_options()).map_err(|e| fail(e.to_string()))?;
                let meta = SqliteMeta::open(Some(path)).map_err(|e| fail(e.to_string()))?;
                Ok(Storage {
                    saver: sealed_saver(saver, self.encryption.as_ref()),
                    store: sealed_store(store, self.encryption.as_ref()),
                    meta: Meta::new(Db::Sqlite(meta), sealer),
                    #[cfg(feature = "postgres")]
                    cluster: None,
                })
            }
            #[cfg(feature = "postgres")]
            Database::Postgres(url) => {
                let pool = graphwright::checkpoint::postgres_pool(url).map_err(|e| fail(e.to_string()))?;
                let saver =
                    graphwright::PostgresSaver::from_pool(pool.clone()).await.map_err(|e| fail(e.to_string()))?;
                let store = graphwright::store::PostgresStore::from_pool(pool.clone(), store_options())
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let cluster = crate::cluster::Cluster::start(
                    url,
                    pool,
                    Arc::clone(runs),
                    sealer.clone(),
                    adopted,
                    self.max_attempts,
                )
                .await
                .map_err(|e| fail(e.to_string()))?;
                Ok(Storage {
                    saver: sealed_saver(saver, self.encryption.as_ref()),
                    store: sealed_store(store, self.encryption.as_ref()),
                    meta: Meta::new(Db::Postgres(cluster.meta().clone()), sealer),
                    cluster: Some(cluster),
                })
            }
        }
    }

    /// Binds `addr` (port 0 picks a free port) and returns the bound server, whose address is
    /// known before it serves.
    ///
    /// Without [`auth`](Self::auth), only loopback addresses (`127.0.0.1`, `[::1]`,
    /// `localhost`) are bound: any other fails with [`ServerError::Unauthenticated`] unless
    /// [`allow_unauthenticated`](Self::allow_unauthenticated) was called.
    pub async fn bind(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<Bound, ServerError> {
        let shown = addr.to_string();
        let io = |source| ServerError::Io { addr: shown.clone(), source };
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host(addr).await.map_err(io)?.collect();
        let public = addrs.iter().any(|a| !a.ip().to_canonical().is_loopback());
        if public && self.auth.is_none() {
            if !self.open {
                return Err(ServerError::Unauthenticated { addr: shown });
            }
            tracing::warn!(
                addr = %shown,
                "serving without authentication on an address other machines may reach: anyone who reaches it \
                 can read every thread and start runs (Server::allow_unauthenticated)"
            );
        }
        let grace = self.drain_grace;
        let (router, app) = self.build().await?;
        let listener = tokio::net::TcpListener::bind(&addrs[..]).await.map_err(io)?;
        Ok(Bound { listener, router, app, grace })
    }

    /// Binds `addr` and serves until the process is asked to stop, then drains (see
    /// [`Bound::run`]).
    pub async fn serve(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<(), ServerError> {
        self.bind(addr).await?.run().await
    }
}

/// A graph's default assistant, as LangGraph's server makes it.
fn default_assistant(graph: &str) -> AssistantRow {
    AssistantRow {
        assistant_id: system_assistant_id(graph),
        graph_id: graph.to_owned(),
        config: json!({}),
        context: json!({}),
        metadata: json!({"created_by": "system"}),
        name: graph.to_owned(),
        description: None,
    }
}

impl Database {
    /// The error for this database failing to open or prepare, without a URL's password.
    fn failed(&self, reason: String) -> ServerError {
        let path = match self {
            Self::Memory => ":memory:".to_owned(),
            Self::Sqlite(path) => path.display().to_string(),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => {
                url.parse::<graphwright::checkpoint::deadpool_postgres::tokio_postgres::Config>().map_or_else(
                    |_| "the PostgreSQL database".to_owned(),
                    |c| format!("PostgreSQL database {:?} on {:?}", c.get_dbname().unwrap_or_default(), c.get_hosts()),
                )
            }
        };
        ServerError::Database { path, reason }
    }
}

/// A server bound to its socket, not yet serving.
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: axum::Router,
    app: Arc<App>,
    grace: std::time::Duration,
}

impl std::fmt::Debug for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bound").field("listener", &self.listener).field("grace", &self.grace).finish_non_exhaustive()
    }
}

impl Bound {
    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener.local_addr().map_err(|source| ServerError::Io { addr: "the bound socket".into(), source })
    }

    /// Serves until the process is asked to stop (SIGTERM, or Ctrl-C), then drains: takes no
    /// new connections or runs (a run request is answered 503), lets the runs in flight finish
    /// within the server's [`drain_grace`](Server::drain_grace), and returns, leaving the runs
    /// that had not started, and any still in flight, recorded for the next server process on
    /// the database to take up.
    ///
    /// On PostgreSQL, a process that loses the connection holding its liveness lock returns
    /// [`ServerError::LeaseLost`] at once: the other processes are taking its runs over. Let
    /// the process end with it (return it from `main`), so that its runs in flight stop as
    /// if it had been killed, and start it again.
    pub async fn run(self) -> Result<(), ServerError> {
        use axum::serve::ListenerExt;
        let addr = self.local_addr()?.to_string();
        // Without it a response written in two pieces (a stream's last event, then its end)
        // waits for the client's delayed acknowledgement: about 40 ms per request.
        let listener = self.listener.tap_io(|stream| {
            if let Err(error) = stream.set_nodelay(true) {
                tracing::warn!(%error, "could not turn Nagle's algorithm off for a connection");
            }
        });
        let app = self.app;
        let stop = app.draining.clone();
        let serving = axum::serve(listener, self.router).with_graceful_shutdown(async move {
            terminated().await;
            stop.send_replace(true);
        });
        let serving = std::future::IntoFuture::into_future(serving);
        tokio::pin!(serving);
        // Serving ends by itself once the signal came and every connection closed; it may end
        // first, before the runs in flight do.
        let ended = tokio::select! {
            biased;
            // The other processes are taking this one's runs over: going on with them here, even
            // for a grace period, would run them twice.
            () = app.lease_lost() => return Err(ServerError::LeaseLost),
            result = &mut serving => Some(result),
            () = app.drained() => None,
        };
        if let Some(result) = ended {
            result.map_err(|source| ServerError::Io { addr, source })?;
        }
        let in_flight = app.runs.in_flight_here();
        tracing::info!(runs = in_flight, grace = ?self.grace, "stopping: no new runs; letting the runs in flight finish");
        let finished = async {
            while app.runs.in_flight_here() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        if tokio::time::timeout(self.grace, finished).await.is_err() {
            tracing::warn!(
                runs = app.runs.in_flight_here(),
                "runs still in flight when the grace period ended are left for the next server process to take up"
            );
        }
        Ok(())
    }
}

/// Resolves when the process is asked to stop: SIGTERM (on Unix) or Ctrl-C.
async fn terminated() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM: only Ctrl-C stops the server gracefully"),
        }
    }
    if tokio::signal::ctrl_c().await.is_err() {
        // No signal can be listened for: the server runs until the process is killed.
        std::future::pending::<()>().await;
    }
}
