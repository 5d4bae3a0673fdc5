//! What each route does, for the policy: every route of the API has a rule, and a route
//! without one is refused.

use super::{Action, Resource};
use axum::http::Method;

/// How a route is authorized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    /// It holds no user's data: health, the server's description, metrics, the chat page.
    Open,
    /// It acts on the record its path parameter `param` names: checked before the handler.
    Record { resource: Resource, action: Action, param: &'static str },
    /// Its handler asks the policy, with the request's body (creates, searches, stateless
    /// runs, the store, MCP and A2A calls).
    InHandler,
}

const fn thread(action: Action) -> Rule {
    Rule::Record { resource: Resource::Threads, action, param: "id" }
}

const fn assistant(action: Action, param: &'static str) -> Rule {
    Rule::Record { resource: Resource::Assistants, action, param }
}

const fn cron(action: Action) -> Rule {
    Rule::Record { resource: Resource::Crons, action, param: "id" }
}

/// The rule of `method` on the route pattern `route`; `None` for a route with no rule.
pub(crate) fn rule(method: &Method, route: &str) -> Option<Rule> {
    use Action::{CreateRun, Delete, Read, Update};
    let rule = match (method.as_str(), route) {
        (_, "/ok" | "/info" | "/metrics" | "/docs") => Rule::Open,
        (_, page) if crate::api::page_files::is_page_file(page) => Rule::Open,
        (
            "POST",
            "/assistants"
            | "/assistants/search"
            | "/assistants/count"
            | "/threads"
            | "/threads/search"
            | "/threads/count"
            | "/threads/prune"
            | "/runs"
            | "/runs/stream"
            | "/runs/wait"
            | "/runs/batch"
            | "/runs/cancel"
            | "/runs/crons"
            | "/runs/crons/search"
            | "/runs/crons/count"
            | "/store/items/search"
            | "/store/namespaces",
        )
        | ("GET" | "PUT" | "DELETE", "/store/items")
        | (_, "/mcp" | "/mcp/")
        | ("GET", "/.well-known/agent-card.json") => Rule::InHandler,
        (
            "GET",
            "/assistants/{id}"
            | "/assistants/{id}/graph"
            | "/assistants/{id}/schemas"
            | "/assistants/{id}/subgraphs"
            | "/assistants/{id}/subgraphs/{namespace}",
        )
        | ("POST", "/assistants/{id}/versions") => assistant(Read, "id"),
        ("PATCH", "/assistants/{id}") | ("POST", "/assistants/{id}/latest") => assistant(Update, "id"),
        ("DELETE", "/assistants/{id}") => assistant(Delete, "id"),
        (
            "GET",
            "/a2a/{assistant_id}"
            | "/a2a/{assistant_id}/"
            | "/a2a/{assistant_id}/.well-known/agent-card.json"
            | "/a2a/{assistant_id}/.well-known/agent.json",
        )
        | ("POST", "/a2a/{assistant_id}" | "/a2a/{assistant_id}/") => assistant(Read, "assistant_id"),
        (
            "GET",
            "/threads/{id}"
            | "/threads/{id}/state"
            | "/threads/{id}/state/{checkpoint_id}"
            | "/threads/{id}/history"
            | "/threads/{id}/stream"
            | "/threads/{id}/storage"
            | "/threads/{id}/runs"
            | "/threads/{id}/runs/{run_id}"
            | "/threads/{id}/runs/{run_id}/join"
            | "/threads/{id}/runs/{run_id}/stream",
        )
        | ("POST", "/threads/{id}/copy" | "/threads/{id}/state/checkpoint" | "/threads/{id}/history") => thread(Read),
        ("PATCH", "/threads/{id}") | ("POST", "/threads/{id}/state" | "/threads/{id}/runs/{run_id}/cancel") => {
            thread(Update)
        }
        ("DELETE", "/threads/{id}" | "/threads/{id}/runs/{run_id}") => thread(Delete),
        (
            "POST",
            "/threads/{id}/runs" | "/threads/{id}/runs/stream" | "/threads/{id}/runs/wait" | "/threads/{id}/runs/crons",
        ) => thread(CreateRun),
        ("GET", "/runs/crons/{id}") => cron(Read),
        ("PATCH", "/runs/crons/{id}") => cron(Update),
        ("DELETE", "/runs/crons/{id}") => cron(Delete),
        _ => return None,
    };
    Some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.route(path, handlers)` of the API's sources, with its methods.
    fn routes() -> Vec<(String, Vec<&'static str>)> {
        let sources =
            [include_str!("../api/mod.rs"), include_str!("../api/a2a/mod.rs"), include_str!("../api/mcp/mod.rs")];
        let methods = [
            ("get(", "GET"),
            ("post(", "POST"),
            ("put(", "PUT"),
            ("patch(", "PATCH"),
            ("delete(", "DELETE"),
            ("any(", "ANY"),
        ];
        let mut found = Vec::new();
        for source in sources {
            for call in source.split(".route(\"").skip(1) {
                let Some((path, rest)) = call.split_once('"') else { continue };
                let handlers = rest.split(".route(").next().unwrap_or(rest);
                let handlers = handlers.split("\n        .").next().unwrap_or(handlers);
                let verbs: Vec<&str> =
                    methods.iter().filter(|(call, _)| handlers.contains(call)).map(|(_, verb)| *verb).collect();
                found.push((path.to_owned(), verbs));
            }
        }
        found
    }

    #[test]
    fn every_route_of_the_api_has_a_rule() {
        let routes = routes();
        assert!(routes.len() > 50, "the route table was not read: {routes:?}");
        for (path, verbs) in routes {
            assert!(!verbs.is_empty(), "no method read for {path}");
            for verb in verbs {
                let verbs: Vec<&str> = if verb == "ANY" { vec!["GET", "POST", "DELETE"] } else { vec![verb] };
                for verb in verbs {
                    let method = Method::from_bytes(verb.as_bytes()).unwrap();
                    assert!(rule(&method, &path).is_some(), "{verb} {path} has no authorization rule");
                }
            }
        }
    }

    #[test]
    fn the_studio_page_s_files_are_open_and_nothing_else_under_ui() {
        for path in ["/", "/ui/app.js", "/ui/graph.js", "/ui/style.css"] {
            assert_eq!(rule(&Method::GET, path), Some(Rule::Open), "{path}");
        }
        assert_eq!(rule(&Method::GET, "/ui/other.js"), None);
    }

    #[test]
    fn a_thread_s_runs_are_authorized_through_the_thread() {
        assert_eq!(rule(&Method::POST, "/threads/{id}/runs/wait"), Some(thread(Action::CreateRun)));
        assert_eq!(rule(&Method::POST, "/threads/{id}/runs/{run_id}/cancel"), Some(thread(Action::Update)));
        assert_eq!(rule(&Method::GET, "/threads/{id}/runs/{run_id}/stream"), Some(thread(Action::Read)));
        assert_eq!(rule(&Method::PUT, "/threads/{id}"), None);
    }
}
