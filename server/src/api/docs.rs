//! `GET /docs`: a page listing the operations this server serves, with a link to LangGraph's
//! API reference, which describes their requests and answers. This server has no API document
//! of its own to render (see docs/decisions.md), so the page says what is here and where the
//! shapes are described.

use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use std::fmt::Write as _;
use std::sync::OnceLock;

/// LangGraph's public reference of the Agent Server API.
const REFERENCE: &str = "https://docs.langchain.com/langsmith/server-api-ref";

/// A group of operations: its title and each operation's methods, path and what it does.
type Group = (&'static str, &'static [(&'static str, &'static str, &'static str)]);

/// Every operation the router serves, grouped as LangGraph's reference groups them.
const OPERATIONS: &[Group] = &[
    (
        "Assistants",
        &[
            ("POST", "/assistants", "create an assistant"),
            ("POST", "/assistants/search", "search assistants"),
            ("POST", "/assistants/count", "count assistants"),
            ("GET PATCH DELETE", "/assistants/{assistant_id}", "read, update (a new version) or delete an assistant"),
            ("GET", "/assistants/{assistant_id}/graph", "the graph's nodes and edges (xray: subgraphs drawn in)"),
            ("GET", "/assistants/{assistant_id}/schemas", "the graph's JSON Schemas"),
            ("GET", "/assistants/{assistant_id}/subgraphs", "the schemas of its subgraphs (recurse=true: all levels)"),
            ("GET", "/assistants/{assistant_id}/subgraphs/{namespace}", "the schemas of one subgraph"),
            ("POST", "/assistants/{assistant_id}/versions", "the assistant's versions, newest first"),
            ("POST", "/assistants/{assistant_id}/latest", "make a version the assistant's current one"),
        ],
    ),
    (
        "Threads",
        &[
            ("POST", "/threads", "create a thread"),
            ("POST", "/threads/search", "search threads"),
            ("POST", "/threads/count", "count threads"),
            ("POST", "/threads/prune", "delete threads, or keep only their latest checkpoint"),
            ("GET PATCH DELETE", "/threads/{thread_id}", "read, update the metadata of, or delete a thread"),
            ("POST", "/threads/{thread_id}/copy", "copy a thread with its history"),
            ("GET POST", "/threads/{thread_id}/state", "the thread's state, or update it"),
            ("POST", "/threads/{thread_id}/state/checkpoint", "the state at a checkpoint"),
            ("GET", "/threads/{thread_id}/state/{checkpoint_id}", "the state at a checkpoint"),
            ("GET POST", "/threads/{thread_id}/history", "the thread's checkpoints, newest first"),
            ("GET", "/threads/{thread_id}/stream", "every run of the thread as one stream"),
            ("GET", "/threads/{thread_id}/storage", "the bytes its checkpoints occupy"),
        ],
    ),
    (
        "Runs on a thread",
        &[
            ("GET POST", "/threads/{thread_id}/runs", "list runs, or start one in the background"),
            ("POST", "/threads/{thread_id}/runs/stream", "start a run and stream it"),
            ("POST", "/threads/{thread_id}/runs/wait", "start a run and wait for its values"),
            ("GET DELETE", "/threads/{thread_id}/runs/{run_id}", "read or delete a run"),
            ("POST", "/threads/{thread_id}/runs/{run_id}/cancel", "cancel a run"),
            ("GET", "/threads/{thread_id}/runs/{run_id}/join", "wait for a run's values"),
            ("GET", "/threads/{thread_id}/runs/{run_id}/stream", "join a run's stream"),
        ],
    ),
    (
        "Stateless runs",
        &[
            ("POST", "/runs", "start a run on a new thread, in the background"),
            ("POST", "/runs/stream", "start a run and stream it"),
            ("POST", "/runs/wait", "start a run and wait for its values"),
            ("POST", "/runs/batch", "start several runs"),
            ("POST", "/runs/cancel", "cancel runs"),
        ],
    ),
    (
        "Crons",
        &[
            ("POST", "/runs/crons", "create a cron that starts stateless runs"),
            ("POST", "/threads/{thread_id}/runs/crons", "create a cron that runs on a thread"),
            ("POST", "/runs/crons/search", "search crons"),
            ("POST", "/runs/crons/count", "count crons"),
            ("GET PATCH DELETE", "/runs/crons/{cron_id}", "read, update or delete a cron"),
        ],
    ),
    (
        "Store",
        &[
            ("PUT GET DELETE", "/store/items", "put, read or delete an item"),
            ("POST", "/store/items/search", "search items"),
            ("POST", "/store/namespaces", "list namespaces"),
        ],
    ),
    (
        "Protocols",
        &[
            ("GET POST DELETE", "/mcp", "the assistants as MCP tools (streamable HTTP)"),
            ("POST", "/a2a/{assistant_id}", "an assistant as an Agent2Agent agent (JSON-RPC)"),
            ("GET", "/a2a/{assistant_id}/.well-known/agent-card.json", "its agent card"),
        ],
    ),
    (
        "System",
        &[
            ("GET", "/ok", "health check"),
            ("GET", "/info", "server version and flags"),
            ("GET", "/metrics", "Prometheus metrics (format=json: LangGraph's figures)"),
            ("GET", "/docs", "this page"),
            ("GET", "/", "the studio: a graph drawn, its runs, its thread's checkpoints, a chat"),
        ],
    ),
];

/// The page, made from [`OPERATIONS`].
fn page() -> String {
    let mut html = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>graphwright-server: operations</title>\n<style>\n\
         body {{ font-family: system-ui, sans-serif; max-width: 62rem; margin: 2rem auto; padding: 0 1rem; }}\n\
         table {{ border-collapse: collapse; width: 100%; }}\n\
         td {{ padding: 0.25rem 0.6rem; border-bottom: 1px solid #ddd; vertical-align: top; }}\n\
         td.method {{ white-space: nowrap; font-weight: 600; }}\n\
         </style>\n</head>\n<body>\n<h1>graphwright-server</h1>\n\
         <p>graphwright-server {} serves graphs written in Rust behind LangGraph's Agent Server API, so \
         LangGraph's clients drive them. The operations it serves are listed below; their requests and \
         answers are LangGraph's, described in <a href=\"{REFERENCE}\">LangGraph's API reference</a>. \
         Where this server answers differently, graphwright's <code>docs/decisions.md</code> says how and why.</p>\n",
        env!("CARGO_PKG_VERSION")
    );
    for (title, operations) in OPERATIONS {
        let _ = write!(html, "<h2>{title}</h2>\n<table>\n");
        for (methods, path, what) in *operations {
            let _ = writeln!(
                html,
                "<tr data-methods=\"{methods}\" data-path=\"{path}\"><td class=\"method\">{methods}</td>\
                 <td><code>{path}</code></td><td>{what}</td></tr>"
            );
        }
        html.push_str("</table>\n");
    }
    html.push_str("</body>\n</html>\n");
    html
}

pub(super) async fn get() -> Response {
    static PAGE: OnceLock<String> = OnceLock::new();
    let page = PAGE.get_or_init(page).as_str();
    ([(CONTENT_TYPE, "text/html; charset=utf-8"), (CACHE_CONTROL, "no-cache")], page).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page is built from literals: none may carry markup of its own.
    #[test]
    fn no_listed_text_needs_escaping() {
        for (title, operations) in OPERATIONS {
            let texts = operations.iter().flat_map(|(m, p, w)| [*m, *p, *w]);
            for text in std::iter::once(*title).chain(texts) {
                assert!(!text.contains(['<', '>', '&', '"']), "{text:?}");
            }
        }
    }
}
