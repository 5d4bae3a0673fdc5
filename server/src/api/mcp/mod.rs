//! `/mcp`: the server's assistants as MCP tools, over MCP's streamable HTTP transport (rmcp).
//!
//! Every assistant is a tool: its name made fit for MCP, its description, and its graph's input
//! schema. A call runs the assistant as a stateless run waited on (what `POST /runs/wait` does,
//! recorded like any run) and answers with the run's output values as JSON text and as
//! `structuredContent`; a failed run is a tool result with `isError` and the reason.
//!
//! Sessions are rmcp's: `initialize` opens one (the `Mcp-Session-Id` header), `DELETE /mcp`
//! ends it, and one idle for five minutes ends by itself.
//!
//! Browsers: a request whose `Origin` the server does not allow is refused (403) by the server's
//! origin guard, as every route's is (`Server::cors`). `/mcp` also refuses a request whose `Host`
//! is a name other than `localhost` (a DNS-rebinding page's). A host given as an IP address, such
//! as the address the server is bound to, is accepted: no rebinding can put one there.

mod call;
mod caller;
mod tools;

use caller::caller;

use crate::app::App;
use axum::Router;
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::sync::Arc;

type Service = StreamableHttpService<Assistants, LocalSessionManager>;

/// The routes `/mcp` and `/mcp/` (LangGraph's document spells it with the slash).
pub(super) fn routes(app: &Arc<App>) -> Router<Arc<App>> {
    let handler = Assistants { app: Arc::clone(app) };
    let config = StreamableHttpServerConfig::default()
        // `Host` is checked by `host_allowed`, which also lets in the server's own IP address
        // whatever it is bound to.
        .disable_allowed_hosts()
        // `Origin` is the server's origin guard's to check, under the server's `Cors` settings.
        .disable_allowed_origins()
        .with_max_request_body_bytes(app.body_limit);
    let service: Arc<Service> =
        Arc::new(StreamableHttpService::new(move || Ok(handler.clone()), Arc::default(), config));
    let endpoint = move |request: Request| {
        let service = Arc::clone(&service);
        async move { serve(&service, request).await }
    };
    Router::new().route("/mcp", any(endpoint.clone())).route("/mcp/", any(endpoint))
}

async fn serve(service: &Service, request: Request) -> Response {
    let host = request.headers().get(header::HOST).map(|h| h.to_str().unwrap_or_default());
    if let Some(host) = host
        && !host_allowed(host)
    {
        tracing::warn!(host, "refused an MCP request for another host name (a DNS-rebinding page's?)");
        let reason = format!("Forbidden: /mcp answers requests for localhost or an IP address, not for {host:?}");
        return (StatusCode::FORBIDDEN, reason).into_response();
    }
    service.handle(request).await.into_response()
}

/// Whether a request's `Host` may be served: `localhost` or an IP address, with any port. A
/// page on another name that was made to resolve to this machine (DNS rebinding) still sends
/// its own name, and is refused.
fn host_allowed(host: &str) -> bool {
    let Ok(authority) = host.parse::<axum::http::uri::Authority>() else { return false };
    let name = authority.host();
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    name.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok()
}

/// The MCP server of one session: lists the assistants as tools, runs them when called.
#[derive(Clone)]
struct Assistants {
    app: Arc<App>,
}

impl rmcp::ServerHandler for Assistants {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("graphwright-server", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Each tool runs one assistant of this server (a graph with its configuration) on a thread of its \
                 own: the arguments are the run's input, the result is the run's output values.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let listed = tools::list(&self.app, caller(&context).as_ref())
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        Ok(ListToolsResult::with_all_items(listed.into_iter().map(|t| t.tool).collect()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        call::run(&self.app, request, &context).await.map(Into::into)
    }
}

#[cfg(test)]
mod tests {
    use super::host_allowed;

    #[test]
    fn loopback_names_and_ip_addresses_are_served_other_names_are_not() {
        for host in ["localhost", "LOCALHOST:2024", "127.0.0.1:2024", "[::1]:80", "10.0.0.7:2024", "0.0.0.0"] {
            assert!(host_allowed(host), "{host} is refused");
        }
        for host in ["evil.example", "evil.example:2024", "localhost.evil.example", "", "a b"] {
            assert!(!host_allowed(host), "{host} is served");
        }
    }
}
