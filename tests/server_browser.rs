//! The server called from web pages of other origins, as chat front ends call it: LangGraph's
//! JavaScript client (`@langchain/langgraph-sdk`) on a page served from a second port, in headless
//! Chromium (`tests/server/cross_origin/`), and the CORS answers themselves over a real socket.
//!
//! By default the server lets in pages served from this machine and nothing else: a page on
//! another website can neither read the server's threads nor start its runs.
//!
//! `scripts/test` prepares what the browser test needs: `GRAPHWRIGHT_TEST_JS_SDK` names a folder
//! whose `node_modules` holds the client and playwright-core, `GRAPHWRIGHT_TEST_CHROMIUM`
//! Debian's Chromium.

use graphwright::prelude::*;
use graphwright_server::{Cors, Server, ServerError};
use reqwest::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, ACCESS_CONTROL_MAX_AGE, HeaderMap,
};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Answers every message, streaming its reply word by word.
#[graph]
mod chat {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    fn reply(state: &State, rt: &Runtime) -> StateUpdate {
        let last = state.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let id = format!("reply-{}", state.messages.len());
        let text = format!("You said: {last}");
        for (i, word) in text.split(' ').enumerate() {
            rt.message_delta(&id, &if i == 0 { word.to_owned() } else { format!(" {word}") });
        }
        rt.write(json!({"type": "progress"}));
        StateUpdate::new().messages(vec![Message::assistant(text).with_id(id)])
    }
}

/// Serves the chat graph with `cors` on a fresh SQLite file; its base URL.
async fn serve(cors: Cors, dir: &tempfile::TempDir) -> String {
    serve_counting(cors, dir).await.0
}

/// [`serve`], also counting the preflights the server answers.
async fn serve_counting(cors: Cors, dir: &tempfile::TempDir) -> (String, Arc<AtomicUsize>) {
    let server = Server::new().graph("chat", chat::graph().compile().unwrap()).sqlite(dir.path().join("server.db"));
    let preflights = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&preflights);
    let router = server.cors(cors).into_router().await.unwrap().layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            if request.method() == Method::OPTIONS && request.headers().contains_key("access-control-request-method") {
                counted.fetch_add(1, Ordering::SeqCst);
            }
            next.run(request)
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, preflights)
}

/// Sends `method path` with `headers` (as a browser would, `Origin` included); the status, the
/// response headers and the body.
async fn send(
    url: &str,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, HeaderMap, String) {
    let mut request = reqwest::Client::new().request(method, format!("{url}{path}")).body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    (status, headers, response.text().await.unwrap())
}

fn header<'a>(headers: &'a HeaderMap, name: &reqwest::header::HeaderName) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

async fn thread_count(url: &str) -> u64 {
    let (_, _, body) = send(url, Method::POST, "/threads/count", &[], "{}").await;
    body.trim().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_page_is_granted_and_reads_the_exposed_headers() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve(Cors::default(), &dir).await;
    let page = "http://localhost:5173";

    let preflight = [
        ("origin", page),
        ("access-control-request-method", "POST"),
        ("access-control-request-headers", "content-type,x-api-key"),
    ];
    let (status, headers, _) = send(&url, Method::OPTIONS, "/threads/search", &preflight, "").await;
    assert!(status.is_success(), "a preflight is answered, not 405: {status}");
    assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN), Some(page));
    let methods = header(&headers, &ACCESS_CONTROL_ALLOW_METHODS).unwrap();
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        assert!(methods.contains(method), "{methods}");
    }
    let allowed = header(&headers, &ACCESS_CONTROL_ALLOW_HEADERS).unwrap().to_ascii_lowercase();
    assert!(allowed.contains("x-api-key") && allowed.contains("content-type"), "{allowed}");
    assert_eq!(header(&headers, &ACCESS_CONTROL_MAX_AGE), Some("600"));

    let (status, headers, body) = send(&url, Method::POST, "/threads/search", &[("origin", page)], "{}").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN), Some(page));
    let exposed = header(&headers, &ACCESS_CONTROL_EXPOSE_HEADERS).unwrap().to_ascii_lowercase();
    for name in ["content-location", "location", "x-pagination-total", "x-pagination-next"] {
        assert!(exposed.contains(name), "{name} is not exposed: {exposed}");
    }
    assert!(header(&headers, &reqwest::header::VARY).is_some_and(|v| v.to_ascii_lowercase().contains("origin")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_on_another_website_gets_no_grant_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve(Cors::default(), &dir).await;
    let evil = "https://evil.example";

    let preflight = [("origin", evil), ("access-control-request-method", "POST")];
    let (_, headers, _) = send(&url, Method::OPTIONS, "/threads", &preflight, "").await;
    assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN), None, "no grant for {evil}");

    // A form post needs no preflight: the browser sends it and only hides the answer. The
    // server refuses it before any route runs.
    let body = r#"{"assistant_id": "chat", "input": {"messages": ["hi"]}}"#;
    let (status, headers, detail) =
        send(&url, Method::POST, "/runs/wait", &[("origin", evil), ("content-type", "text/plain")], body).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN), None);
    let detail: Value = serde_json::from_str(&detail).unwrap();
    let detail = detail["detail"].as_str().unwrap();
    assert!(detail.contains("https://evil.example") && detail.contains("Server::cors"), "{detail}");
    let (status, _, _) = send(&url, Method::POST, "/threads", &[("origin", "null")], "{}").await;
    assert_eq!(status, StatusCode::FORBIDDEN, "a sandboxed page's `null` origin is not let in");
    assert_eq!(thread_count(&url).await, 0, "no thread was made, no run started");

    // Clients that are not browsers send no Origin, and the server's own page is same-origin.
    let (status, _, _) = send(&url, Method::POST, "/threads", &[], "{}").await;
    assert_eq!(status, StatusCode::OK);
    let own = url.clone();
    let (status, _, _) = send(&url, Method::POST, "/threads", &[("origin", &own)], "{}").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(thread_count(&url).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn origins_are_configured_and_bad_settings_fail_the_bind() {
    let dir = tempfile::tempdir().unwrap();
    let url = serve(Cors::loopback().allow_origin("https://chat.example.com"), &dir).await;
    for (origin, granted) in
        [("https://chat.example.com", true), ("http://localhost:3000", true), ("https://other.example.com", false)]
    {
        let (_, headers, _) = send(&url, Method::GET, "/ok", &[("origin", origin)], "").await;
        assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN).is_some(), granted, "{origin}");
    }

    // Chrome asks before a public page calls a private address, and gets a yes when granted.
    let studio = [
        ("origin", Cors::LANGGRAPH_STUDIO),
        ("access-control-request-method", "GET"),
        ("access-control-request-private-network", "true"),
    ];
    let studio_url = serve(Cors::loopback().allow_origin(Cors::LANGGRAPH_STUDIO), &dir).await;
    let (_, headers, _) = send(&studio_url, Method::OPTIONS, "/info", &studio, "").await;
    assert_eq!(header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN), Some(Cors::LANGGRAPH_STUDIO));
    assert_eq!(headers.get("access-control-allow-private-network").and_then(|v| v.to_str().ok()), Some("true"));
    let (_, headers, _) = send(&url, Method::OPTIONS, "/info", &studio, "").await;
    assert!(headers.get("access-control-allow-private-network").is_none(), "not for an origin that is not allowed");

    let any = serve(Cors::any(), &dir).await;
    let (status, headers, _) =
        send(&any, Method::POST, "/threads/count", &[("origin", "https://x.example")], "{}").await;
    assert_eq!((status, header(&headers, &ACCESS_CONTROL_ALLOW_ORIGIN)), (StatusCode::OK, Some("*")));

    let none = serve(Cors::none(), &dir).await;
    let (status, _, _) =
        send(&none, Method::POST, "/threads/count", &[("origin", "http://localhost:3000")], "{}").await;
    assert_eq!(status, StatusCode::FORBIDDEN);

    let bad = Server::new().cors(Cors::loopback().allow_origin("chat.example.com")).bind("127.0.0.1:0").await;
    match bad {
        Err(error @ ServerError::Cors(_)) => {
            assert!(error.to_string().contains("\"chat.example.com\""), "{error}");
        }
        other => panic!("a bad origin must fail the bind, not {other:?}"),
    }
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// Runs `tests/server/cross_origin_check.mjs` with `args`; what it printed.
async fn check(args: Vec<String>) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/cross_origin_check.mjs");
    let run =
        tokio::task::spawn_blocking(move || Command::new("node").arg(script).args(args).output().expect("node starts"));
    let output = tokio::time::timeout(Duration::from_mins(2), run).await.expect("the page settles").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "the page check failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// Bundles the test page with the JavaScript client into `dir` and serves it on a port of its
/// own; the port.
async fn serve_page(node_dir: &str, dir: &std::path::Path) -> u16 {
    check(vec!["build".into(), dir.display().to_string(), node_dir.to_owned()]).await;
    let app = axum::Router::new().fallback_service(tower_http::services::ServeDir::new(dir));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    port
}

/// Opens `page` in headless Chromium; the scenarios' results, console errors, failed requests
/// and every response's status.
async fn open(page: String, node_dir: &str) -> Value {
    let chromium = prepared("GRAPHWRIGHT_TEST_CHROMIUM", "Debian's chromium");
    let stdout = check(vec!["open".into(), page, node_dir.to_owned(), chromium]).await;
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("the page check printed no report ({e}): {stdout}"))
}

fn assert_all_passed(report: &Value) {
    assert_eq!(report["finished"], true, "the page's scenarios did not finish: {report:#}");
    let results = report["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{report:#}");
    for result in results {
        assert_eq!(result["ok"], true, "{}: {}", result["name"], result["detail"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraphs_js_client_in_chromium_from_another_origin() {
    let node = prepared("GRAPHWRIGHT_TEST_JS_SDK", "@langchain/langgraph-sdk, esbuild and playwright-core");
    let dir = tempfile::tempdir().unwrap();
    let (api, preflights) = serve_counting(Cors::default(), &dir).await;
    let page = tempfile::tempdir().unwrap();
    let port = serve_page(&node, page.path()).await;

    // A page on another port of this machine: let in, and nothing fails.
    let report = open(format!("http://localhost:{port}/index.html?api={api}"), &node).await;
    assert_all_passed(&report);
    assert_eq!(report["console"], serde_json::json!([]), "{report:#}");
    assert_eq!(report["failed"], serde_json::json!([]), "{report:#}");
    // The client's JSON bodies and `x-api-key` header need the browser to ask first.
    assert!(preflights.load(Ordering::SeqCst) > 0, "the browser sent no preflight");
    let before = thread_count(&api).await;
    assert!(before >= 1);

    // The same page from a website that is not this machine: blocked, and nothing was made.
    let report = open(format!("http://evil.test:{port}/index.html?api={api}&expect=refused"), &node).await;
    assert_all_passed(&report);
    assert!(!report["failed"].as_array().unwrap().is_empty(), "the browser blocked the requests: {report:#}");
    assert_eq!(thread_count(&api).await, before, "the refused page made no thread");
}
