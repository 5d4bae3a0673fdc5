//! The per-user cap on runs in flight (`Server::max_runs_per_user`), over a real socket on
//! loopback: a user at the cap is refused with 429 and `Retry-After` before anything of the run
//! is stored, other users are not, the user's places come back when runs end, and without
//! authentication there is no user to count.

use graphwright::prelude::*;
use graphwright_server::{ApiKeys, AuthUser, Server};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// Runs of `held` wait here until the test lets them finish.
static GATE: Semaphore = Semaphore::const_new(0);

#[graph]
mod held {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub done: bool,
    }

    #[node(entry, next = END)]
    async fn wait(_state: &State) -> StateUpdate {
        if let Ok(permit) = super::GATE.acquire().await {
            permit.forget();
        }
        StateUpdate::new().done(true)
    }
}

async fn start(server: Server) -> String {
    let bound = server.graph("held", held::graph().compile().unwrap()).bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    url
}

/// Sends `body` to `path` as the user of `key`; status, `Retry-After`, answer.
async fn post(url: &str, key: &str, path: &str, body: Value) -> (u16, Option<String>, Value) {
    let response = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header("x-api-key", key)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    let retry = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).map(str::to_owned);
    (status, retry, serde_json::from_str(&response.text().await.unwrap()).unwrap_or(Value::Null))
}

async fn new_thread(url: &str, key: &str) -> String {
    let (status, _, thread) = post(url, key, "/threads", json!({})).await;
    assert_eq!(status, 200, "{thread}");
    thread["thread_id"].as_str().unwrap().to_owned()
}

/// Starts a background run on a new thread; the status, `Retry-After`, the answer and the thread.
async fn run(url: &str, key: &str) -> (u16, Option<String>, Value, String) {
    let thread = new_thread(url, key).await;
    let (status, retry, answer) =
        post(url, key, &format!("/threads/{thread}/runs"), json!({"assistant_id": "held", "input": {}})).await;
    (status, retry, answer, thread)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_at_the_cap_waits_for_a_run_to_end_and_others_do_not_and_without_auth_nobody_does() {
    let keys = ApiKeys::new().key("key-ada", AuthUser::new("ada")).key("key-grace", AuthUser::new("grace"));
    let url = start(Server::new().auth(keys).max_runs_per_user(2)).await;

    let (first, _, _, first_thread) = run(&url, "key-ada").await;
    let (second, _, _, second_thread) = run(&url, "key-ada").await;
    assert_eq!((first, second), (200, 200));
    let (status, retry, answer, refused_thread) = run(&url, "key-ada").await;
    assert_eq!(status, 429, "{answer}");
    assert_eq!(retry.as_deref(), Some("1"));
    let detail = answer["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("\"ada\" already has 2 runs in flight"), "{detail}");
    // Nothing of the refused run was stored.
    let response = reqwest::Client::new()
        .get(format!("{url}/threads/{refused_thread}/runs"))
        .header("x-api-key", "key-ada")
        .send()
        .await
        .unwrap();
    assert_eq!(response.json::<Value>().await.unwrap(), json!([]));
    // A stateless run waited on counts too.
    let (status, _, _) = post(&url, "key-ada", "/runs/wait", json!({"assistant_id": "held", "input": {}})).await;
    assert_eq!(status, 429);

    // Another user is not held back by ada's runs.
    let (status, _, answer, _) = run(&url, "key-grace").await;
    assert_eq!(status, 200, "{answer}");

    // Her runs end: her places come back as soon as they have.
    GATE.add_permits(3);
    for thread in [&first_thread, &second_thread] {
        let joined = reqwest::Client::new()
            .get(format!("{url}/threads/{thread}/runs/{}/join", run_id(&url, thread).await))
            .header("x-api-key", "key-ada")
            .send()
            .await
            .unwrap();
        assert_eq!(joined.json::<Value>().await.unwrap()["done"], true);
    }
    let (status, _, answer, _) = run(&url, "key-ada").await;
    assert_eq!(status, 200, "{answer}");
    GATE.add_permits(1);

    // Without authentication there is no user, and so no cap.
    let url = start(Server::new().max_runs_per_user(1)).await;
    for _ in 0..2 {
        let (status, _, answer, _) = run(&url, "").await;
        assert_eq!(status, 200, "{answer}");
    }
    GATE.add_permits(2);
}

/// The id of the only run of `thread`.
async fn run_id(url: &str, thread: &str) -> String {
    let runs = reqwest::Client::new()
        .get(format!("{url}/threads/{thread}/runs"))
        .header("x-api-key", "key-ada")
        .send()
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    runs[0]["run_id"].as_str().unwrap().to_owned()
}
