//! Serves two graphs behind the LangGraph Agent Server API, for LangGraph's own clients.
//!
//! `chat` answers every message (streaming its reply word by word) and looks up the weather
//! with a tool when asked; `refund` pauses for a person's approval. Threads, runs and the store
//! live in a SQLite file, so they outlive the process.
//!
//! ```text
//! cargo run --example serve                         # 127.0.0.1:2024, ./graphwright-serve.db
//! cargo run --example serve -- 127.0.0.1:8123 other.db
//! cargo run --features postgres --example serve -- 127.0.0.1:8123 postgres://user@db/agents
//! cargo run --example serve -- 127.0.0.1:8123 :memory:   # nothing kept when the process ends
//! GRAPHWRIGHT_API_KEY=.. cargo run --example serve -- 0.0.0.0:2024   # other machines, with a key
//! ```
//!
//! With `GRAPHWRIGHT_AES_KEY` set (base64 of 32 bytes: `openssl rand -base64 32`), what is
//! stored is encrypted with it; keys rotated out go, comma-separated, in
//! `GRAPHWRIGHT_AES_OLD_KEYS`, to keep reading what they wrote.
//!
//! With `GRAPHWRIGHT_API_KEY` set, every request must carry that key (`get_client(url=..,
//! api_key=..)` sends it), nodes see the caller as user `owner`, and what the caller makes is
//! theirs (`OwnerIsolation`); without it the server listens on loopback addresses only. For a
//! server with many users, see `examples/serve_secure.rs`.
//!
//! With `GRAPHWRIGHT_STORE_EMBEDDINGS` set to an embeddings model (`openai:text-embedding-3-small`,
//! `ollama:nomic-embed-text`, any `provider:model` that `embeddings_from_spec` knows) and
//! `GRAPHWRIGHT_STORE_DIMS` to its vectors' size, the store is searched by meaning:
//! `client.store.search_items(["memories"], query="what does she drink?")`. The model's key comes
//! from the provider's usual variable (`OPENAI_API_KEY`...).
//!
//! Built with `--features otel` and run with `OTEL_EXPORTER_OTLP_ENDPOINT` set (an OpenTelemetry
//! Collector, Jaeger, Phoenix...), it exports a trace per request: the request (continuing the
//! client's `traceparent`), its run, each step, node, model call and tool call. `/metrics`
//! serves Prometheus's text either way.
//!
//! With a PostgreSQL URL, start as many processes as you like on the same database: they share
//! threads, runs and the store. `/assistants/chat/schemas` describes a graph's input, output and
//! state with JSON Schemas made from its `#[state]` (the doc comments below become their
//! descriptions), for front ends that draw a form for a run's input.
//!
//! Then, from Python (`pip install langgraph-sdk`):
//!
//! ```text
//! from langgraph_sdk import get_client
//! client = get_client(url="http://127.0.0.1:2024")
//! thread = await client.threads.create()
//! async for part in client.runs.stream(thread["thread_id"], "chat",
//!         input={"messages": [{"type": "human", "content": "what is the weather?"}]},
//!         stream_mode="messages-tuple"):
//!     print(part.event, part.data)
//! ```

use graphwright::model::embeddings_from_spec;
use graphwright::prelude::*;
use graphwright::store::IndexConfig;
use graphwright_server::authz::OwnerIsolation;
use graphwright_server::{ApiKeys, AuthUser, Server};

/// A chat agent: replies word by word, and calls a weather tool when asked about the weather.
#[graph]
pub mod chat {
    use graphwright::prelude::*;

    /// The conversation.
    #[state]
    pub struct State {
        /// Oldest first.
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Answers the last message, or asks for the weather tool.
    #[node(entry, next = weather | END, route = after)]
    fn agent(state: &State, rt: &Runtime) -> StateUpdate {
        let last = state.messages.last().cloned().unwrap_or_else(|| Message::user(""));
        let id = format!("reply-{}", state.messages.len());
        if last.role == Role::User && last.content.to_lowercase().contains("weather") {
            let call = ToolCall::new(format!("call-{}", state.messages.len()), "weather", json!({"city": "Oslo"}));
            return StateUpdate::new().messages(vec![Message::assistant("").with_id(id).with_tool_calls(vec![call])]);
        }
        let text = match last.role {
            Role::Tool => format!("The weather in Oslo: {}.", last.content),
            _ => format!("You said: {}", last.content),
        };
        for (i, word) in text.split(' ').enumerate() {
            rt.message_delta(&id, &if i == 0 { word.to_owned() } else { format!(" {word}") });
        }
        StateUpdate::new().messages(vec![Message::assistant(text).with_id(id)])
    }

    fn after(state: &State) -> AgentNext {
        if state.messages.last().is_some_and(Message::has_tool_calls) { AgentNext::Weather } else { AgentNext::End }
    }

    /// The weather tool.
    #[node(next = agent)]
    fn weather(state: &State) -> StateUpdate {
        let call = state.messages.last().and_then(|m| m.tool_calls.first().cloned());
        let id = call.map(|c| c.id).unwrap_or_default();
        StateUpdate::new().messages(vec![Message::tool(id, "4 °C and light rain").with_name("weather")])
    }
}

/// A refund that waits for a person's approval (resume with `command={"resume": true}`).
#[graph]
pub mod refund {
    use graphwright::prelude::*;

    /// The request and what happened to it.
    #[state]
    pub struct State {
        /// The order.
        pub order: String,
        /// What was done.
        #[reducer(append)]
        pub log: Vec<String>,
    }

    /// Pauses for approval.
    #[node(entry, next = END)]
    fn approve(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let approved: bool = rt.interrupt(json!({"question": "refund this order?", "order": state.order}))?;
        let outcome = if approved { "refunded" } else { "declined" };
        Ok(StateUpdate::new().log(vec![format!("{} {outcome}", state.order)]))
    }
}

/// Several processes given the same URL share threads and runs (feature `postgres`).
#[cfg(feature = "postgres")]
#[allow(clippy::unnecessary_wraps)] // fails without the feature
fn on_postgres(server: Server, url: &str) -> Result<Server, Box<dyn std::error::Error>> {
    Ok(server.postgres(url))
}

#[cfg(not(feature = "postgres"))]
fn on_postgres(_server: Server, _url: &str) -> Result<Server, Box<dyn std::error::Error>> {
    Err("a PostgreSQL database needs the `postgres` feature: cargo run -p graphwright-server --features postgres --example serve".into())
}

/// The key to encrypt with, and older ones (comma-separated) to read with.
fn keys(current: &str, old: &str) -> Result<graphwright::encryption::Keys, graphwright::encryption::KeyError> {
    let mut keys = graphwright::encryption::Keys::from_base64(current)?;
    for key in old.split(',').filter(|k| !k.trim().is_empty()) {
        keys = keys.with_old_base64(key)?;
    }
    Ok(keys)
}

/// The store's index: the embeddings model `spec`, with vectors of `GRAPHWRIGHT_STORE_DIMS`
/// numbers, over whole values.
fn store_index(spec: &str) -> Result<IndexConfig, Box<dyn std::error::Error>> {
    let dims = std::env::var("GRAPHWRIGHT_STORE_DIMS")
        .map_err(|_| "GRAPHWRIGHT_STORE_EMBEDDINGS needs GRAPHWRIGHT_STORE_DIMS: the size of the model's vectors")?;
    let dims = dims.parse().map_err(|_| format!("GRAPHWRIGHT_STORE_DIMS is `{dims}`, not a whole number"))?;
    Ok(IndexConfig::shared(embeddings_from_spec(spec)?, dims))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    #[cfg(feature = "otel")]
    let _telemetry = match std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT") {
        Some(_) => Some(graphwright::otel::Otel::from_env().service_name("graphwright-server").init()?),
        None => None,
    };
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:2024".to_owned());
    let database = args.next().unwrap_or_else(|| "graphwright-serve.db".to_owned());
    let server = Server::new().graph("chat", chat::graph().compile()?).graph("refund", refund::graph().compile()?);
    let server = if database.starts_with("postgres://") || database.starts_with("postgresql://") {
        on_postgres(server, &database)?
    } else if database == ":memory:" {
        // Nothing outlives the process, as with `langgraph dev`.
        server
    } else {
        server.sqlite(&database)
    };
    let server = match std::env::var("GRAPHWRIGHT_AES_KEY") {
        Ok(key) => server.encryption(keys(&key, &std::env::var("GRAPHWRIGHT_AES_OLD_KEYS").unwrap_or_default())?),
        Err(_) => server,
    };
    let server = match std::env::var("GRAPHWRIGHT_STORE_EMBEDDINGS") {
        Ok(spec) if !spec.is_empty() => server.store_index(store_index(&spec)?),
        _ => server,
    };
    let server = match std::env::var("GRAPHWRIGHT_API_KEY") {
        Ok(key) if !key.is_empty() => {
            server.auth(ApiKeys::new().key(key, AuthUser::new("owner"))).authorize(OwnerIsolation)
        }
        _ => server,
    };
    let bound = server.bind(addr.as_str()).await?;
    println!("serving graphs chat and refund on http://{} (threads in {database})", bound.local_addr()?);
    bound.run().await?;
    Ok(())
}
