//! A served graph with a cached node, over a real socket on loopback: the `updates` stream
//! marks an update the cache gave as LangGraph does, with `"__metadata__": {"cached": true}`
//! beside it, and a run that ran the node carries no such mark; two callers with their own API
//! keys never get each other's cached output.

use graphwright::InMemoryCache;
use graphwright::prelude::*;
use graphwright_server::Server;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

static RUNS: AtomicUsize = AtomicUsize::new(0);

#[graph]
mod echo {
    use graphwright::CachePolicy;
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub text: String,
    }

    #[node(entry, next = END, cache = CachePolicy::new())]
    fn shout(state: &State) -> StateUpdate {
        super::RUNS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        StateUpdate::new().text(state.text.to_uppercase())
    }
}

/// The `updates` parts of a stateless streamed run of `echo`.
async fn updates(url: &str) -> Vec<Value> {
    updates_as(url, "echo", None).await
}

/// The `updates` parts of a stateless streamed run of `graph`, with `key` as the API key.
async fn updates_as(url: &str, graph: &str, key: Option<&str>) -> Vec<Value> {
    let body = json!({"assistant_id": graph, "input": {"text": "hi"}, "stream_mode": ["updates"]});
    let mut request = reqwest::Client::new().post(format!("{url}/runs/stream")).json(&body);
    if let Some(key) = key {
        request = request.header("x-api-key", key);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = response.text().await.unwrap();
    let mut parts = Vec::new();
    let mut event = "";
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("event: ") {
            event = name;
        } else if let Some(data) = line.strip_prefix("data: ")
            && event == "updates"
        {
            parts.push(serde_json::from_str(data).unwrap());
        }
    }
    parts
}

#[tokio::test]
async fn a_cached_update_is_streamed_with_langgraphs_metadata() {
    let app = echo::graph().cache(InMemoryCache::new()).compile().unwrap();
    let bound = Server::new().graph("echo", app).bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());

    assert_eq!(updates(&url).await, [json!({"shout": {"text": "HI"}})], "the first run ran the node");
    assert_eq!(
        updates(&url).await,
        [json!({"shout": {"text": "HI"}, "__metadata__": {"cached": true}})],
        "the second was served from the cache"
    );
    assert_eq!(RUNS.load(Ordering::SeqCst), 1);
}

#[graph]
mod whoami {
    use graphwright::CachePolicy;
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub text: String,
    }

    /// Its output names the caller: a cache shared between callers would leak it.
    #[node(entry, next = END, cache = CachePolicy::new())]
    fn sign(state: &State, rt: &Runtime) -> StateUpdate {
        let who = rt.user().map_or("nobody", |u| u.identity.as_str());
        StateUpdate::new().text(format!("{} from {who}", state.text))
    }
}

#[tokio::test]
async fn callers_never_get_each_others_cached_output() {
    use graphwright_server::{ApiKeys, AuthUser};
    let keys = ApiKeys::new()
        .key("key-of-ada-0123456789", AuthUser::new("ada"))
        .key("key-of-bo-0123456789", AuthUser::new("bo"));
    let app = whoami::graph().cache(InMemoryCache::new()).compile().unwrap();
    let bound = Server::new().auth(keys).graph("whoami", app).bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());

    let ada = Some("key-of-ada-0123456789");
    assert_eq!(updates_as(&url, "whoami", ada).await, [json!({"sign": {"text": "hi from ada"}})]);
    assert_eq!(
        updates_as(&url, "whoami", Some("key-of-bo-0123456789")).await,
        [json!({"sign": {"text": "hi from bo"}})],
        "bo's run ran the node: ada's entry is hers"
    );
    assert_eq!(
        updates_as(&url, "whoami", ada).await,
        [json!({"sign": {"text": "hi from ada"}, "__metadata__": {"cached": true}})],
        "ada's own entry serves her"
    );
}
