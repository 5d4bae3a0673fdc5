//! Which web pages may call the server from a browser: CORS answers for the origins allowed,
//! and a refusal for requests that other pages' scripts send.
//!
//! Browsers let a page read a response from another origin only when the response grants it
//! (`Access-Control-Allow-Origin`), and ask first (a preflight `OPTIONS`) before requests
//! with JSON bodies or custom headers. Answering is done by tower-http's `CorsLayer`; the
//! origins it grants are decided here. A grant is not the only guard: a page may still *send*
//! a simple request (a form post, say) without reading the answer, so a request that carries
//! the `Origin` of a page that is neither allowed nor the server's own is refused (403) before
//! it reaches a route, and starts no run.

use axum::extract::Request;
use axum::http::header::{HOST, ORIGIN};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;
use tower_http::cors::{AllowHeaders, AllowMethods, AllowOrigin, AllowPrivateNetwork, CorsLayer, ExposeHeaders};

/// The response headers LangGraph's clients read from another origin: the run behind a
/// response (`@langchain/langgraph-sdk` rejoins a stream through it), where to rejoin, and
/// the pagination of searches.
const EXPOSED: [&str; 4] = ["content-location", "location", "x-pagination-total", "x-pagination-next"];

/// How long a browser may keep a preflight's answer.
const DEFAULT_MAX_AGE: Duration = Duration::from_mins(10);

/// Which web pages (origins) may call the server from a browser, given to
/// [`Server::cors`](crate::Server::cors).
///
/// The default, [`Cors::loopback`], lets pages served from this machine in (`http://localhost:*`,
/// `http://127.0.0.1:*`, `http://[::1]:*`, and the same over `https`), so a chat front end or
/// LangGraph Studio run locally works out of the box, and no other website can read the
/// server's threads or start its runs. Add an origin for a front end served from elsewhere:
///
/// ```
/// use graphwright_server::{Cors, Server};
///
/// let server = Server::new().cors(Cors::loopback().allow_origin("https://chat.example.com"));
/// // LangGraph Studio in the browser is a hosted page:
/// let server = Server::new().cors(Cors::loopback().allow_origin(Cors::LANGGRAPH_STUDIO));
/// ```
///
/// Patterns: an exact origin (`https://chat.example.com`, `http://localhost:3000`), any port
/// (`http://localhost:*`), or any subdomain (`https://*.example.com`). A pattern that is not an
/// origin makes [`Server::bind`](crate::Server::bind) fail with [`ServerError::Cors`](crate::ServerError::Cors).
///
/// Every granted response exposes `Content-Location`, `Location`, `X-Pagination-Total` and
/// `X-Pagination-Next`, which LangGraph's JavaScript client reads; preflights grant the methods
/// of the API and whichever request headers the page asks for (`x-api-key`, say), and answer
/// Chrome's private-network question for granted origins.
#[derive(Clone, Debug)]
#[must_use]
pub struct Cors {
    origins: Origins,
    methods: Vec<String>,
    headers: Option<Vec<String>>,
    expose: Vec<String>,
    max_age: Duration,
}

#[derive(Clone, Debug)]
enum Origins {
    Any,
    Listed(Vec<String>),
}

impl Default for Cors {
    fn default() -> Self {
        Self::loopback()
    }
}

impl Cors {
    /// The origin of LangGraph Studio's web page, to allow when Studio is to reach the server.
    pub const LANGGRAPH_STUDIO: &str = "https://smith.langchain.com";

    /// Pages served from this machine only: `http(s)://localhost`, `127.0.0.1` and `[::1]` on
    /// any port. The default.
    pub fn loopback() -> Self {
        let loopback = ["localhost", "127.0.0.1", "[::1]"];
        let origins = ["http", "https"]
            .iter()
            .flat_map(|scheme| loopback.iter().map(move |host| format!("{scheme}://{host}:*")))
            .collect();
        Self::with(Origins::Listed(origins))
    }

    /// No page but the server's own (its chat page at `/`): every cross-origin browser request
    /// is refused. Clients that are not browsers send no `Origin` and are not affected.
    pub fn none() -> Self {
        Self::with(Origins::Listed(Vec::new()))
    }

    /// Every origin, as LangGraph's server allows by default: any website a user visits may
    /// then read and drive the server. Refused by a server with [`Server::auth`](crate::Server::auth)
    /// (list the front ends' origins instead); for a server that is open on purpose.
    pub fn any() -> Self {
        Self::with(Origins::Any)
    }

    fn with(origins: Origins) -> Self {
        Self {
            origins,
            methods: ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"].map(str::to_owned).into(),
            headers: None,
            expose: EXPOSED.map(str::to_owned).into(),
            max_age: DEFAULT_MAX_AGE,
        }
    }

    /// Also allows the origins `pattern` matches: an exact origin, `scheme://host:*` for any
    /// port, or `scheme://*.domain` for its subdomains.
    pub fn allow_origin(mut self, pattern: impl Into<String>) -> Self {
        if let Origins::Listed(origins) = &mut self.origins {
            origins.push(pattern.into());
        }
        self
    }

    /// The methods preflights grant (default: those of the API).
    pub fn allow_methods<I: IntoIterator<Item = S>, S: Into<String>>(mut self, methods: I) -> Self {
        self.methods = methods.into_iter().map(Into::into).collect();
        self
    }

    /// The request headers preflights grant (default: whichever the page asks for).
    pub fn allow_headers<I: IntoIterator<Item = S>, S: Into<String>>(mut self, headers: I) -> Self {
        self.headers = Some(headers.into_iter().map(Into::into).collect());
        self
    }

    /// Response headers pages may read, beyond the four LangGraph's clients need.
    pub fn expose_headers<I: IntoIterator<Item = S>, S: Into<String>>(mut self, headers: I) -> Self {
        self.expose.extend(headers.into_iter().map(Into::into));
        self
    }

    /// How long a browser may keep a preflight's answer (default: ten minutes).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Whether every origin is allowed ([`Cors::any`]).
    pub(crate) fn is_any(&self) -> bool {
        matches!(self.origins, Origins::Any)
    }

    /// Checks the configuration and builds what serves it: the CORS layer and the origin guard.
    pub(crate) fn build(&self) -> Result<(CorsLayer, OriginGuard), CorsError> {
        let rules = match &self.origins {
            Origins::Any => None,
            Origins::Listed(patterns) => {
                Some(patterns.iter().map(|p| OriginRule::parse(p)).collect::<Result<Vec<_>, _>>()?)
            }
        };
        let methods = self
            .methods
            .iter()
            .map(|m| m.parse::<Method>().map_err(|_| CorsError::new(m, "not an HTTP method")))
            .collect::<Result<Vec<_>, _>>()?;
        let names = |list: &[String]| {
            list.iter()
                .map(|h| h.parse::<HeaderName>().map_err(|_| CorsError::new(h, "not an HTTP header name")))
                .collect::<Result<Vec<_>, _>>()
        };
        let expose = names(&self.expose)?;
        let headers = match &self.headers {
            None => AllowHeaders::mirror_request(),
            Some(list) => AllowHeaders::list(names(list)?),
        };
        let guard = OriginGuard { rules: rules.map(Arc::new) };
        let layer = CorsLayer::new()
            .allow_methods(AllowMethods::list(methods))
            .allow_headers(headers)
            .expose_headers(ExposeHeaders::list(expose))
            .max_age(self.max_age);
        let layer = match &guard.rules {
            None => layer.allow_origin(AllowOrigin::any()),
            Some(rules) => {
                let granted = Arc::clone(rules);
                let private = Arc::clone(rules);
                layer
                    .allow_origin(AllowOrigin::predicate(move |origin, _| allowed(&granted, origin)))
                    .allow_private_network(AllowPrivateNetwork::predicate(move |origin, _| allowed(&private, origin)))
            }
        };
        Ok((layer, guard))
    }
}

/// A pattern given to [`Cors`] that is not an origin, a method or a header name.
#[derive(Clone, Debug, thiserror::Error)]
#[error("CORS setting {value:?} is not usable: {reason}")]
pub struct CorsError {
    value: String,
    reason: String,
}

impl CorsError {
    fn new(value: &str, reason: &str) -> Self {
        Self { value: value.to_owned(), reason: reason.to_owned() }
    }
}

/// One allowed origin, or a family of them.
#[derive(Debug)]
struct OriginRule {
    scheme: String,
    /// The host, or the domain whose subdomains match (`*.domain`).
    host: Host,
    /// The port; `None` for any.
    port: Option<u16>,
}

#[derive(Debug, PartialEq, Eq)]
enum Host {
    Exact(String),
    SubdomainsOf(String),
}

/// An origin, taken apart: scheme, lowercase host, port (the scheme's default when absent).
struct Origin {
    scheme: String,
    host: String,
    port: u16,
}

impl Origin {
    fn parse(text: &str) -> Option<Self> {
        let uri: Uri = text.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?;
        // An origin is scheme, host and port only.
        if authority.as_str().contains('@')
            || uri.path_and_query().is_some_and(|p| p.as_str() != "/" && !p.as_str().is_empty())
        {
            return None;
        }
        let port = authority.port_u16().or(match scheme.as_str() {
            "http" => Some(80),
            "https" => Some(443),
            _ => None,
        })?;
        Some(Self { scheme, host: authority.host().to_ascii_lowercase(), port })
    }
}

impl OriginRule {
    fn parse(pattern: &str) -> Result<Self, CorsError> {
        let invalid = |reason: &str| CorsError::new(pattern, reason);
        let expected =
            "expected an origin such as https://chat.example.com, http://localhost:* or https://*.example.com";
        let (any_port, text) = match pattern.strip_suffix(":*") {
            Some(rest) => (true, rest.to_owned()),
            None => (false, pattern.to_owned()),
        };
        let (subdomains, text) = match text.split_once("://*.") {
            Some((scheme, domain)) => (true, format!("{scheme}://{domain}")),
            None => (false, text),
        };
        let origin = Origin::parse(&text).ok_or_else(|| invalid(expected))?;
        if origin.host.contains('*') {
            return Err(invalid(expected));
        }
        let explicit_port = text.rsplit_once(':').is_some_and(|(_, p)| p.chars().all(|c| c.is_ascii_digit()));
        if any_port && explicit_port {
            return Err(invalid("give a port or `:*`, not both"));
        }
        Ok(Self {
            scheme: origin.scheme,
            host: if subdomains { Host::SubdomainsOf(origin.host) } else { Host::Exact(origin.host) },
            port: (!any_port).then_some(origin.port),
        })
    }

    fn matches(&self, origin: &Origin) -> bool {
        let host = match &self.host {
            Host::Exact(host) => origin.host == *host,
            Host::SubdomainsOf(domain) => {
                origin.host.strip_suffix(domain.as_str()).is_some_and(|sub| sub.len() > 1 && sub.ends_with('.'))
            }
        };
        self.scheme == origin.scheme && host && self.port.is_none_or(|port| port == origin.port)
    }
}

fn allowed(rules: &[OriginRule], origin: &HeaderValue) -> bool {
    let parsed = origin.to_str().ok().and_then(Origin::parse);
    parsed.is_some_and(|origin| rules.iter().any(|rule| rule.matches(&origin)))
}

/// Refuses requests sent by pages of origins that are neither allowed nor the server's own
/// address.
#[derive(Clone)]
pub(crate) struct OriginGuard {
    /// `None`: every origin is allowed.
    rules: Option<Arc<Vec<OriginRule>>>,
}

impl OriginGuard {
    fn admits(&self, request: &Request) -> bool {
        let Some(rules) = &self.rules else { return true };
        let Some(origin) = request.headers().get(ORIGIN) else { return true };
        allowed(rules, origin) || same_origin(request, origin)
    }

    /// The middleware: passes admitted requests on, answers the others 403.
    pub(crate) async fn check(self, request: Request, next: Next) -> Response {
        if self.admits(&request) {
            return next.run(request).await;
        }
        let origin = request.headers().get(ORIGIN).and_then(|o| o.to_str().ok()).unwrap_or("?").to_owned();
        let detail = format!(
            "requests from web pages at {origin:?} are not allowed: the server lets in pages from the origins its \
             CORS settings list (this machine's by default); allow that origin with \
             Server::cors(Cors::loopback().allow_origin(..))"
        );
        (StatusCode::FORBIDDEN, axum::Json(serde_json::json!({ "detail": detail }))).into_response()
    }
}

/// Whether `origin` is the server's own address as the browser reached it (its `Host`): the
/// chat page at `/` calls the API from there, whatever address the server is bound to. Only for
/// a host that is `localhost` or an IP address: a page on a DNS name that an attacker made
/// resolve to this machine (DNS rebinding) would otherwise pass as the server's own. A page
/// served under a DNS name is let in by adding its origin to [`Cors`].
fn same_origin(request: &Request, origin: &HeaderValue) -> bool {
    let (Some(host), Some(origin)) = (request.headers().get(HOST), origin.to_str().ok().and_then(Origin::parse)) else {
        return false;
    };
    let Some(host) = host.to_str().ok().and_then(|h| format!("{}://{h}", origin.scheme).parse::<Uri>().ok()) else {
        return false;
    };
    let Some(name) = host.host() else { return false };
    let bare = name.trim_start_matches('[').trim_end_matches(']');
    let rebindable = !(name.eq_ignore_ascii_case("localhost") || bare.parse::<std::net::IpAddr>().is_ok());
    let port = host.port_u16().unwrap_or(if origin.scheme == "https" { 443 } else { 80 });
    !rebindable && name.eq_ignore_ascii_case(&origin.host) && port == origin.port
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admits(cors: &Cors, origin: &str) -> bool {
        let (_, guard) = cors.build().unwrap();
        let request =
            Request::builder().uri("/threads").header(ORIGIN, origin).body(axum::body::Body::empty()).unwrap();
        guard.admits(&request)
    }

    #[test]
    fn loopback_pages_on_any_port_are_allowed_and_other_websites_are_not() {
        let cors = Cors::loopback();
        for origin in [
            "http://localhost:3000",
            "http://127.0.0.1:5173",
            "http://[::1]:8080",
            "https://localhost",
            "HTTP://LOCALHOST:1",
        ] {
            assert!(admits(&cors, origin), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://localhost.evil.example:3000",
            "http://127.0.0.2:3000",
            "null",
            "file://",
            "http://user@localhost:3000",
        ] {
            assert!(!admits(&cors, origin), "{origin}");
        }
    }

    #[test]
    fn patterns_match_exact_origins_any_port_and_subdomains() {
        let cors = Cors::none()
            .allow_origin("https://chat.example.com")
            .allow_origin("http://dev.example.com:*")
            .allow_origin("https://*.apps.example.com");
        assert!(admits(&cors, "https://chat.example.com"));
        assert!(admits(&cors, "https://chat.example.com:443"));
        assert!(!admits(&cors, "https://chat.example.com:8443"));
        assert!(!admits(&cors, "http://chat.example.com"));
        assert!(admits(&cors, "http://dev.example.com:4000"));
        assert!(admits(&cors, "https://a.apps.example.com"));
        assert!(admits(&cors, "https://a.b.apps.example.com"));
        assert!(!admits(&cors, "https://apps.example.com"));
        assert!(!admits(&cors, "https://evilapps.example.com"));
        assert!(!admits(&cors, "http://localhost:3000"), "none() drops the loopback default");
        assert!(admits(&Cors::any(), "https://anything.example"));
    }

    #[test]
    fn a_request_from_the_servers_own_address_is_its_own_page() {
        let (_, guard) = Cors::none().build().unwrap();
        let request = |host: &str, origin: &str| {
            Request::builder()
                .uri("/threads")
                .header(HOST, host)
                .header(ORIGIN, origin)
                .body(axum::body::Body::empty())
                .unwrap()
        };
        assert!(guard.admits(&request("10.0.0.5:2024", "http://10.0.0.5:2024")));
        assert!(guard.admits(&request("localhost:2024", "http://localhost:2024")));
        assert!(guard.admits(&request("[::1]:2024", "http://[::1]:2024")));
        // A DNS name may have been made to point here by the page's own author: it must be
        // allowed by name.
        assert!(!guard.admits(&request("rebound.example:2024", "http://rebound.example:2024")));
        let (_, named) = Cors::none().allow_origin("http://agents.example.com").build().unwrap();
        assert!(named.admits(&request("agents.example.com", "http://agents.example.com")));
        assert!(!guard.admits(&request("10.0.0.5:2024", "http://10.0.0.5:3000")));
        assert!(!guard.admits(&request("10.0.0.5:2024", "https://evil.example")));
        let no_origin = Request::builder().uri("/threads").body(axum::body::Body::empty()).unwrap();
        assert!(guard.admits(&no_origin), "clients that are not browsers send no Origin");
    }

    #[test]
    fn settings_that_are_not_origins_methods_or_headers_are_errors_naming_them() {
        for bad in ["localhost:3000", "https://", "https://chat.example.com/path", "https://*", "http://x:80:*", "*"] {
            let error = Cors::none().allow_origin(bad).build().err().unwrap_or_else(|| panic!("{bad} was accepted"));
            assert!(error.to_string().contains(&format!("{bad:?}")), "{error}");
        }
        assert!(Cors::loopback().allow_methods(["GE T"]).build().is_err());
        assert!(Cors::loopback().allow_headers(["x api key"]).build().is_err());
        assert!(Cors::loopback().expose_headers(["bad header"]).build().is_err());
    }
}
