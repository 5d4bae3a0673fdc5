//! The server checked against LangGraph's own API document: schemathesis generates requests
//! for every operation of the `openapi.json` that ships in the `langgraph-api` wheel (valid
//! ones, and ones the document forbids) and sends them to the served example
//! (`examples/serve.rs`) over a real socket. No request may get a 5xx: a request the server
//! cannot carry out is the client's mistake, answered with a 4xx that says why.
//!
//! Where the server's answers fall outside LangGraph's response schemas, and why, is in
//! docs/decisions.md ("The API document").
//!
//! `scripts/test` prepares the tools: `GRAPHWRIGHT_TEST_SCHEMATHESIS` names schemathesis's `st`,
//! `GRAPHWRIGHT_TEST_LANGGRAPH_OPENAPI` the document.

use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

/// The served example's graphs.
#[allow(dead_code)] // its `main` and PostgreSQL set-up are the example's own
#[path = "../examples/serve.rs"]
mod example;

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

async fn post(url: &str, path: &str, body: Value) -> Value {
    let request = reqwest::Client::new().post(format!("{url}{path}")).header("content-type", "application/json");
    let response = request.body(body.to_string()).send().await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

async fn get(url: &str, path: &str) -> Value {
    let response = reqwest::get(format!("{url}{path}")).await.unwrap();
    assert!(response.status().is_success(), "{path}: {}", response.status());
    serde_json::from_str(&response.text().await.unwrap()).unwrap()
}

/// Ids of things that exist, so that operations on a thread, a run, an assistant or a cron are
/// tried on real ones as well as on made-up ones. Deleting operations get things of their own.
async fn seed(url: &str) -> Vec<(&'static str, String)> {
    let message = json!({"messages": [{"type": "human", "content": "what is the weather?"}]});
    let thread = post(url, "/threads", json!({"metadata": {"seeded": true}})).await;
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let run = post(url, &format!("/threads/{thread_id}/runs"), json!({"assistant_id": "chat", "input": message})).await;
    let run_id = run["run_id"].as_str().unwrap().to_owned();
    get(url, &format!("/threads/{thread_id}/runs/{run_id}/join")).await;
    let state = get(url, &format!("/threads/{thread_id}/state")).await;
    let checkpoint = state["checkpoint"]["checkpoint_id"].as_str().unwrap_or_default().to_owned();
    let assistant = post(url, "/assistants", json!({"graph_id": "chat", "name": "seeded"})).await;
    let cron = post(
        url,
        &format!("/threads/{thread_id}/runs/crons"),
        json!({"assistant_id": "chat", "schedule": "0 0 1 1 *", "input": message}),
    )
    .await;
    let spare = post(url, "/threads", json!({})).await;
    let spare_assistant = post(url, "/assistants", json!({"graph_id": "chat", "name": "spare"})).await;
    let spare_cron = post(url, "/runs/crons", json!({"assistant_id": "chat", "schedule": "0 0 1 1 *"})).await;
    vec![
        ("GW_THREAD", thread_id),
        ("GW_RUN", run_id),
        ("GW_CHECKPOINT", checkpoint),
        ("GW_ASSISTANT", assistant["assistant_id"].as_str().unwrap().to_owned()),
        ("GW_CRON", cron["cron_id"].as_str().unwrap().to_owned()),
        ("GW_SPARE_THREAD", spare["thread_id"].as_str().unwrap().to_owned()),
        ("GW_SPARE_ASSISTANT", spare_assistant["assistant_id"].as_str().unwrap().to_owned()),
        ("GW_SPARE_CRON", spare_cron["cron_id"].as_str().unwrap().to_owned()),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_langgraphs_document_allows_gets_a_server_error() {
    let st = prepared("GRAPHWRIGHT_TEST_SCHEMATHESIS", "schemathesis");
    let document = prepared("GRAPHWRIGHT_TEST_LANGGRAPH_OPENAPI", "LangGraph's openapi.json");
    let dir = tempfile::tempdir().unwrap();
    let server = graphwright_server::Server::new()
        .graph("chat", example::chat::graph().compile().unwrap())
        .graph("refund", example::refund::graph().compile().unwrap())
        .sqlite(dir.path().join("server.db"));
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    let ids = seed(&url).await;

    let config = dir.path().join("schemathesis.toml");
    std::fs::write(&config, include_str!("server/schemathesis.toml")).unwrap();
    let report = dir.path().join("report");
    let run = {
        let (url, report, dir_path) = (url.clone(), report.clone(), dir.path().to_owned());
        tokio::task::spawn_blocking(move || {
            Command::new(st)
                // Its cache of what it found goes in the temporary directory, not the checkout.
                .current_dir(&dir_path)
                .args(["--config-file", &config.display().to_string(), "run", &document, "--url", &url])
                .args(["--report", "junit", "--report-dir", &report.display().to_string()])
                .envs(ids)
                .env("NO_COLOR", "1")
                .output()
                .expect("schemathesis starts")
        })
    };
    let output = tokio::time::timeout(Duration::from_mins(10), run).await.expect("schemathesis finishes").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "schemathesis found server errors:\n{stdout}\n{stderr}");
    let count =
        |label: &str| stdout.lines().find_map(|l| l.trim().strip_prefix(label)).map(str::trim).map(str::to_owned);
    let selected = count("Selected:").unwrap_or_default();
    let tested = count("Tested:").unwrap_or_default();
    assert!(
        !tested.is_empty() && selected.starts_with(&format!("{tested}/")),
        "not every operation was tried:\n{stdout}"
    );
}
