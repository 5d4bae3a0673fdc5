//! Serves a graph to real users: every request authenticated, each user kept to their own
//! threads, runs, crons and store namespaces, what is stored encrypted, browsers let in from the
//! front ends named only, and each user's runs in flight capped.
//!
//! Everything is read from the environment; a value that cannot be used stops the server with a
//! message saying which, and so does the absence of any credentials:
//!
//! | variable | what |
//! | --- | --- |
//! | `GRAPHWRIGHT_API_KEYS` | `key=user,key=user`: API keys and the user each lets in (`openssl rand -hex 32` makes a key; a user may have several keys, say while rotating theirs) |
//! | `GRAPHWRIGHT_JWT_SECRET` | bearer JWTs signed with HS256 and this secret (32 bytes or more) |
//! | `GRAPHWRIGHT_JWKS_URL` | bearer JWTs signed by an identity provider's keys, published at this URL (`https://`); needs `GRAPHWRIGHT_JWT_AUDIENCE` |
//! | `GRAPHWRIGHT_JWT_AUDIENCE`, `GRAPHWRIGHT_JWT_ISSUER` | the `aud` and `iss` tokens must carry (comma-separated to accept several) |
//! | `GRAPHWRIGHT_AES_KEY` | base64 of 32 bytes (`openssl rand -base64 32`): what is stored is encrypted with it |
//! | `GRAPHWRIGHT_AES_OLD_KEYS` | keys rotated out, comma-separated: still read what they wrote |
//! | `GRAPHWRIGHT_ALLOWED_ORIGINS` | web front ends that may call the server from a browser, comma-separated (`https://chat.example.com`, `https://*.example.com`); pages of this machine always may |
//! | `GRAPHWRIGHT_MAX_RUNS_PER_USER` | runs in flight per user (default 8); one more is answered 429 |
//! | `GRAPHWRIGHT_POSTGRES_URL` | keep everything in this PostgreSQL database (feature `postgres`), shared by every process given it |
//! | `GRAPHWRIGHT_SQLITE_PATH` | otherwise, this SQLite file (default `graphwright-secure.db`) |
//! | `GRAPHWRIGHT_BIND` | where to listen (default `127.0.0.1:2024`, behind a reverse proxy that terminates TLS) |
//!
//! API keys and JWTs may be configured together: a key sent in `x-api-key`, or as a bearer token
//! that is not a JWT, is checked against the keys, any other bearer token as a JWT.
//!
//! ```text
//! ADA_KEY=$(openssl rand -hex 32) BOB_KEY=$(openssl rand -hex 32)   # give each user theirs
//! AES_KEY=$(openssl rand -base64 32)   # keep it: what it encrypted cannot be read without it
//! GRAPHWRIGHT_API_KEYS="$ADA_KEY=ada,$BOB_KEY=bob" GRAPHWRIGHT_AES_KEY="$AES_KEY" \
//! GRAPHWRIGHT_ALLOWED_ORIGINS=https://chat.example.com \
//!     cargo run --example serve_secure
//! GRAPHWRIGHT_JWKS_URL=https://id.example.com/.well-known/jwks.json GRAPHWRIGHT_JWT_AUDIENCE=agents \
//! GRAPHWRIGHT_POSTGRES_URL=postgres://agents@db/agents \
//!     cargo run --features postgres --example serve_secure
//! ```
//!
//! The graph, `chat`, greets its caller by name ([`Runtime::user`]) and keeps a note of each
//! conversation in the store under the caller's own namespace, `[identity, "notes"]`, which
//! under owner isolation is the only part of the store the caller can reach over the API too.
//! From Python (`pip install langgraph-sdk`):
//!
//! ```text
//! from langgraph_sdk import get_client
//! client = get_client(url="https://agents.example.com", api_key="<ada's key>")
//! thread = await client.threads.create()
//! run = await client.runs.wait(thread["thread_id"], "chat",
//!         input={"messages": [{"type": "human", "content": "hello"}]})
//! await client.store.search_items(["ada", "notes"])
//! ```

use futures::future::BoxFuture;
use graphwright::encryption::Keys;
use graphwright::prelude::*;
use graphwright_server::authz::OwnerIsolation;
use graphwright_server::{ApiKeys, AuthRequest, AuthUser, Authenticator, Cors, Jwt, Refusal, Server};
use std::collections::HashMap;

/// A chat that greets its caller and keeps notes per caller.
#[graph]
pub mod chat {
    use graphwright::prelude::*;
    use graphwright::store::SearchQuery;

    /// The conversation.
    #[state]
    pub struct State {
        /// Oldest first.
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Greets the caller by name, notes what they said last under `[identity, "notes"]` (one
    /// note per thread), and says how many conversations it has notes of.
    #[node(entry, next = END)]
    async fn reply(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let Some(user) = rt.user() else {
            return Err(NodeError::msg("the chat answers authenticated callers only: serve it with Server::auth"));
        };
        let said = state.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let store = rt.store()?;
        let namespace = [user.identity.as_str(), "notes"];
        store.put(&namespace, rt.thread_id().unwrap_or("stateless"), json!({ "said": said }), None).await?;
        let conversations = store.search(&namespace, SearchQuery::new()).await?.len();
        let text = format!(
            "Hello, {}! You said: {said}. I have notes from {conversations} of your conversations.",
            user.display_name
        );
        Ok(StateUpdate::new().messages(vec![Message::assistant(text)]))
    }
}

/// Who may call: API keys, JWTs, or both.
enum Credentials {
    Keys(ApiKeys),
    Jwt(Jwt),
    Both(ApiKeys, Jwt),
}

impl Authenticator for Credentials {
    fn authenticate<'a>(&'a self, request: &'a AuthRequest) -> BoxFuture<'a, Result<AuthUser, Refusal>> {
        match self {
            Self::Keys(keys) => keys.authenticate(request),
            Self::Jwt(jwt) => jwt.authenticate(request),
            Self::Both(keys, jwt) => {
                // A JWT is three base64url parts joined by dots; an API key may come in either header.
                let bearer = request.bearer();
                if request.headers().contains_key("x-api-key") || bearer.is_some_and(|t| t.split('.').count() != 3) {
                    keys.authenticate(request)
                } else if bearer.is_some() {
                    jwt.authenticate(request)
                } else {
                    let refusal = Refusal::new(
                        "no credentials: send an API key in the x-api-key header, or a JWT as `Authorization: Bearer <token>`",
                    );
                    Box::pin(std::future::ready(Err(
                        refusal.challenge(r#"ApiKey header="x-api-key", Bearer realm="graphwright""#)
                    )))
                }
            }
        }
    }
}

impl Credentials {
    fn describe(&self, users: usize) -> String {
        match self {
            Self::Keys(_) => format!("API keys of {users} user(s)"),
            Self::Jwt(_) => "JWTs".to_owned(),
            Self::Both(..) => format!("API keys of {users} user(s) and JWTs"),
        }
    }
}

/// The variable `name`, trimmed; `None` when unset or blank.
fn env(name: &str) -> Result<Option<String>, Report> {
    match std::env::var(name) {
        Ok(value) if value.trim().is_empty() => Ok(None),
        Ok(value) => Ok(Some(value.trim().to_owned())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(format!("{name} is not valid UTF-8").into()),
    }
}

/// The non-blank items of a comma-separated list.
fn items(list: &str) -> impl Iterator<Item = &str> {
    list.split(',').map(str::trim).filter(|item| !item.is_empty())
}

/// `GRAPHWRIGHT_API_KEYS`: the keys, and how many users they let in. No error ever shows a key.
fn api_keys(list: &str) -> Result<(ApiKeys, usize), Report> {
    let mut keys = ApiKeys::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut users = Vec::new();
    for (n, entry) in items(list).enumerate().map(|(i, entry)| (i + 1, entry)) {
        // A base64 key may end in `=`; a user name holds none.
        let Some((key, user)) = entry.rsplit_once('=').map(|(k, u)| (k.trim(), u.trim())) else {
            return Err(format!("GRAPHWRIGHT_API_KEYS: entry {n} is not key=user (entries are comma-separated)").into());
        };
        if key.len() < 16 {
            return Err(format!(
                "GRAPHWRIGHT_API_KEYS: the key of entry {n} ({user:?}) is shorter than 16 characters: \
                 make keys with `openssl rand -hex 32`"
            )
            .into());
        }
        if user.is_empty() || user.contains('.') {
            return Err(format!(
                "GRAPHWRIGHT_API_KEYS: entry {n} names user {user:?}: a user is a non-empty name without '.' \
                 (under owner isolation it starts the user's store namespaces)"
            )
            .into());
        }
        if let Some(first) = seen.insert(key, n) {
            return Err(
                format!("GRAPHWRIGHT_API_KEYS: entries {first} and {n} have the same key: give each its own").into()
            );
        }
        if !users.contains(&user) {
            users.push(user);
        }
        keys = keys.key(key, AuthUser::new(user));
    }
    if users.is_empty() {
        return Err("GRAPHWRIGHT_API_KEYS is set but lists no key=user entry".into());
    }
    Ok((keys, users.len()))
}

/// `GRAPHWRIGHT_JWT_SECRET` or `GRAPHWRIGHT_JWKS_URL`, and the audiences and issuers tokens must name.
fn jwt() -> Result<Option<Jwt>, Report> {
    let audience = env("GRAPHWRIGHT_JWT_AUDIENCE")?;
    let issuer = env("GRAPHWRIGHT_JWT_ISSUER")?;
    let jwt = match (env("GRAPHWRIGHT_JWT_SECRET")?, env("GRAPHWRIGHT_JWKS_URL")?) {
        (None, None) if audience.is_some() || issuer.is_some() => {
            return Err("GRAPHWRIGHT_JWT_AUDIENCE or GRAPHWRIGHT_JWT_ISSUER is set, but neither \
                        GRAPHWRIGHT_JWT_SECRET nor GRAPHWRIGHT_JWKS_URL says how to verify tokens"
                .into());
        }
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => {
            return Err("set GRAPHWRIGHT_JWT_SECRET (HS256) or GRAPHWRIGHT_JWKS_URL (an identity provider's keys), \
                        not both"
                .into());
        }
        (Some(secret), None) if secret.len() < 32 => {
            return Err("GRAPHWRIGHT_JWT_SECRET is shorter than 32 bytes, which HS256 needs: make one with \
                        `openssl rand -base64 48`"
                .into());
        }
        (Some(secret), None) => Jwt::hs256(secret),
        (None, Some(url)) => {
            // Plain HTTP only from this machine (an identity provider run locally, for tests).
            let local =
                ["http://localhost:", "http://localhost/", "http://127.0.0.1:", "http://127.0.0.1/", "http://[::1]"];
            if !url.starts_with("https://") && !local.iter().any(|prefix| url.starts_with(prefix)) {
                return Err(format!(
                    "GRAPHWRIGHT_JWKS_URL {url:?} is not an https:// URL: the keys that verify every token must \
                     come over TLS"
                )
                .into());
            }
            if audience.is_none() {
                return Err("GRAPHWRIGHT_JWKS_URL needs GRAPHWRIGHT_JWT_AUDIENCE: without it, tokens the identity \
                            provider issues for any of its applications would be let in"
                    .into());
            }
            Jwt::jwks_url(url)
        }
    };
    let jwt = items(audience.as_deref().unwrap_or_default()).fold(jwt, Jwt::audience);
    Ok(Some(items(issuer.as_deref().unwrap_or_default()).fold(jwt, Jwt::issuer)))
}

/// The credentials configured; an error when there are none.
fn credentials() -> Result<(Credentials, usize), Report> {
    let keys = env("GRAPHWRIGHT_API_KEYS")?.map(|list| api_keys(&list)).transpose()?;
    Ok(match (keys, jwt()?) {
        (Some((keys, users)), Some(jwt)) => (Credentials::Both(keys, jwt), users),
        (Some((keys, users)), None) => (Credentials::Keys(keys), users),
        (None, Some(jwt)) => (Credentials::Jwt(jwt), 0),
        (None, None) => {
            return Err("no credentials configured, so the server does not start: set GRAPHWRIGHT_API_KEYS \
                        (key=user,key=user), GRAPHWRIGHT_JWT_SECRET (HS256) or GRAPHWRIGHT_JWKS_URL with \
                        GRAPHWRIGHT_JWT_AUDIENCE"
                .into());
        }
    })
}

/// `GRAPHWRIGHT_AES_KEY`, and the keys rotated out in `GRAPHWRIGHT_AES_OLD_KEYS`.
fn encryption() -> Result<Option<Keys>, Report> {
    let old = env("GRAPHWRIGHT_AES_OLD_KEYS")?;
    let Some(current) = env("GRAPHWRIGHT_AES_KEY")? else {
        if old.is_some() {
            return Err("GRAPHWRIGHT_AES_OLD_KEYS is set without GRAPHWRIGHT_AES_KEY: old keys only read; \
                        the current key encrypts what is written"
                .into());
        }
        return Ok(None);
    };
    let mut keys = Keys::from_base64(&current).map_err(|e| format!("GRAPHWRIGHT_AES_KEY: {e}"))?;
    for (n, key) in items(old.as_deref().unwrap_or_default()).enumerate() {
        keys = keys.with_old_base64(key).map_err(|e| format!("GRAPHWRIGHT_AES_OLD_KEYS, key {}: {e}", n + 1))?;
    }
    Ok(Some(keys))
}

/// `GRAPHWRIGHT_MAX_RUNS_PER_USER`, 8 unless set.
fn max_runs_per_user() -> Result<usize, Report> {
    match env("GRAPHWRIGHT_MAX_RUNS_PER_USER")? {
        None => Ok(8),
        Some(text) => match text.parse::<usize>() {
            Ok(runs) if runs > 0 => Ok(runs),
            _ => Err(format!("GRAPHWRIGHT_MAX_RUNS_PER_USER is {text:?}: give a number of runs, 1 or more").into()),
        },
    }
}

/// Several processes given the same URL share threads, runs and the store (feature `postgres`).
#[cfg(feature = "postgres")]
#[allow(clippy::unnecessary_wraps)] // fails without the feature
fn on_postgres(server: Server, url: &str) -> Result<Server, Report> {
    Ok(server.postgres(url))
}

#[cfg(not(feature = "postgres"))]
fn on_postgres(_server: Server, _url: &str) -> Result<Server, Report> {
    Err("GRAPHWRIGHT_POSTGRES_URL needs the `postgres` feature: cargo run --features postgres --example serve_secure"
        .into())
}

/// Where threads, runs and the store are kept, as shown at start (never a URL, which may hold
/// a password).
fn database(server: Server) -> Result<(Server, String), Report> {
    match (env("GRAPHWRIGHT_POSTGRES_URL")?, env("GRAPHWRIGHT_SQLITE_PATH")?) {
        (Some(_), Some(_)) => Err("set GRAPHWRIGHT_POSTGRES_URL or GRAPHWRIGHT_SQLITE_PATH, not both".into()),
        (Some(url), None) => Ok((on_postgres(server, &url)?, "PostgreSQL database".to_owned())),
        (None, path) => {
            let path = path.unwrap_or_else(|| "graphwright-secure.db".to_owned());
            let shown = format!("SQLite file {path}");
            Ok((server.sqlite(path), shown))
        }
    }
}

#[tokio::main]
async fn main() -> Result<(), Report> {
    // Refusals (401, 403) and the server's warnings, on stderr.
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_max_level(tracing::Level::INFO).init();

    let (credentials, users) = credentials()?;
    let who = credentials.describe(users);
    let mut cors = Cors::loopback();
    let origins: Vec<String> = env("GRAPHWRIGHT_ALLOWED_ORIGINS")?
        .as_deref()
        .map(|l| items(l).map(str::to_owned).collect())
        .unwrap_or_default();
    for origin in &origins {
        cors = cors.allow_origin(origin);
    }
    let runs = max_runs_per_user()?;
    let server = Server::new()
        .graph("chat", chat::graph().compile()?)
        .auth(credentials)
        .authorize(OwnerIsolation)
        .cors(cors)
        .max_runs_per_user(runs);
    let (server, kept) = database(server)?;
    let (server, sealed) = match encryption()? {
        Some(keys) => {
            let id = keys.id();
            (server.encryption(keys), format!("encrypted with key {id}"))
        }
        None => (server, "NOT encrypted (set GRAPHWRIGHT_AES_KEY)".to_owned()),
    };
    let addr = env("GRAPHWRIGHT_BIND")?.unwrap_or_else(|| "127.0.0.1:2024".to_owned());
    let bound = server.bind(addr.as_str()).await?;
    println!("serving graph chat on http://{}", bound.local_addr()?);
    println!("  callers: {who}, each kept to their own threads, runs, crons and store namespaces");
    println!("  at most {runs} runs in flight per user; stored in the {kept}, {sealed}");
    println!(
        "  browsers: pages of this machine{}",
        if origins.is_empty() { String::new() } else { format!(" and {}", origins.join(", ")) }
    );
    bound.run().await?;
    Ok(())
}
