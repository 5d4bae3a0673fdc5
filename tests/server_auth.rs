//! Authentication of the server over real sockets on loopback: API keys, JWTs signed with a
//! shared secret (HS256) and with key pairs (ES256 and RS256, their public keys in a JWKS file
//! and at a JWKS URL), what is open without credentials, what a refusal says (and never
//! repeats), what reaches the log (no credential), the caller as nodes see it
//! (`Runtime::user`, subgraphs, A2A and MCP included), and the safe defaults: no public address
//! without authentication, no `Cors::any()` with it. LangGraph's clients drive it too:
//! `langgraph-sdk` with `api_key=` (`tests/server/auth_scenarios.py`) and
//! `@langchain/langgraph-sdk` with `apiKey` (`tests/server/auth_scenarios.mjs`), prepared by
//! `scripts/test`.

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use graphwright::prelude::*;
use graphwright_server::{ApiKeys, AuthRequest, AuthUser, Cors, Jwt, Refusal, Server};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Records who started the run, in a node of its own and in one of a subgraph.
#[graph]
mod whoami {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    #[node(entry, next = inner)]
    fn direct(rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![format!("direct:{}", super::caller(rt))])
    }

    #[node(subgraph, next = END)]
    fn inner() -> StateGraph<super::whoami_inner::State> {
        super::whoami_inner::graph()
    }
}

#[graph]
mod whoami_inner {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    #[node(entry, next = END)]
    fn inner(rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![format!("inner:{}", super::caller(rt))])
    }
}

impl From<&whoami::State> for whoami_inner::State {
    fn from(parent: &whoami::State) -> Self {
        Self { seen: parent.seen.clone() }
    }
}

impl From<whoami_inner::State> for whoami::StateUpdate {
    fn from(child: whoami_inner::State) -> Self {
        Self::new().seen(Overwrite(child.seen))
    }
}

/// The caller as a node sees it: identity, display name in brackets when it differs, and
/// permissions after a slash.
fn caller(rt: &Runtime) -> String {
    let Some(user) = rt.user() else { return "nobody".into() };
    let mut shown = user.identity.clone();
    if user.display_name != user.identity {
        shown = format!("{shown}[{}]", user.display_name);
    }
    if !user.permissions.is_empty() {
        shown = format!("{shown}/{}", user.permissions.join(","));
    }
    shown
}

const API_KEY: &str = "gw-test-key-7f3a9c41d2";
const SECRET: &str = "a shared HS256 secret for the tests, 32+ bytes";

async fn serve(server: Server) -> SocketAddr {
    let bound = server.graph("whoami", whoami::graph().compile().unwrap()).bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run());
    addr
}

/// What came back: status, `WWW-Authenticate`, body.
struct Answer {
    status: u16,
    challenge: Option<String>,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    fn detail(&self) -> String {
        self.json()["detail"].as_str().unwrap_or_default().to_owned()
    }

    /// A 401 with a challenge whose reason mentions `says` and none of `secrets`.
    fn refused(&self, says: &str, secrets: &[&str]) {
        assert_eq!(self.status, 401, "{}", self.text);
        assert!(self.challenge.as_deref().is_some_and(|c| c.contains("Bearer")), "{:?}", self.challenge);
        let detail = self.detail();
        assert!(detail.contains(says), "{detail:?} should say {says:?}");
        for secret in secrets {
            assert!(!self.text.contains(secret), "the refusal repeats a secret: {}", self.text);
        }
    }
}

async fn send(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: Option<Value>) -> Answer {
    let client = reqwest::Client::new();
    let mut request = client.request(method.parse().unwrap(), format!("http://{addr}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned());
    Answer { status, challenge, text: response.text().await.unwrap() }
}

async fn get(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Answer {
    send(addr, "GET", path, headers, None).await
}

/// What a run on a new thread, started with `headers`, recorded of its caller.
async fn run_as(addr: SocketAddr, headers: &[(&str, &str)]) -> Vec<String> {
    let thread = send(addr, "POST", "/threads", headers, Some(json!({}))).await;
    assert_eq!(thread.status, 200, "{}", thread.text);
    let id = thread.json()["thread_id"].as_str().unwrap().to_owned();
    let body = json!({"assistant_id": "whoami", "input": {}});
    let out = send(addr, "POST", &format!("/threads/{id}/runs/wait"), headers, Some(body)).await;
    assert_eq!(out.status, 200, "{}", out.text);
    serde_json::from_value(out.json()["seen"].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_keys_let_in_their_holders_as_their_users() {
    let keys = ApiKeys::new().key(API_KEY, AuthUser::new("ada").with_display_name("Ada L.").with_permissions(["runs"]));
    let addr = serve(Server::new().auth(keys)).await;

    get(addr, "/threads/x", &[]).await.refused("no credentials", &[]);
    send(addr, "POST", "/threads", &[], Some(json!({}))).await.refused("no credentials", &[]);
    get(addr, "/info", &[]).await.refused("no credentials", &[]);
    let guess = "gw-test-key-7f3a9c41d3";
    get(addr, "/info", &[("x-api-key", guess)]).await.refused("not valid", &[guess, API_KEY]);
    get(addr, "/info", &[("authorization", &format!("Bearer {guess}"))]).await.refused("not valid", &[guess, API_KEY]);

    let info = get(addr, "/info", &[("x-api-key", API_KEY)]).await;
    assert_eq!(info.status, 200, "{}", info.text);
    assert_eq!(info.json()["flags"]["auth"], true);
    let bearer = get(addr, "/info", &[("authorization", &format!("Bearer {API_KEY}"))]).await;
    assert_eq!(bearer.status, 200, "{}", bearer.text);

    let expected = ["direct:ada[Ada L.]/runs", "inner:ada[Ada L.]/runs"];
    assert_eq!(run_as(addr, &[("x-api-key", API_KEY)]).await, expected);

    // Nothing the server keeps or sends about the run holds the key.
    let stateless = json!({"assistant_id": "whoami", "input": {}, "stream_mode": ["values", "updates", "debug"]});
    let streamed = send(addr, "POST", "/runs/stream", &[("x-api-key", API_KEY)], Some(stateless)).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    assert!(streamed.text.contains("inner:ada"), "{}", streamed.text);
    assert!(!streamed.text.contains(API_KEY), "the key reached a run's events");
    let threads = send(addr, "POST", "/threads/search", &[("x-api-key", API_KEY)], Some(json!({}))).await;
    for thread in threads.json().as_array().unwrap() {
        let id = thread["thread_id"].as_str().unwrap();
        let runs = get(addr, &format!("/threads/{id}/runs"), &[("x-api-key", API_KEY)]).await;
        assert_eq!(runs.status, 200, "{}", runs.text);
        assert!(!runs.text.contains(API_KEY) && !runs.text.to_lowercase().contains("x-api-key"), "{}", runs.text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_the_chat_page_and_preflights_are_open() {
    let addr = serve(Server::new().auth(ApiKeys::new().key(API_KEY, AuthUser::new("ada")))).await;
    let page = ["/", "/ui/style.css", "/ui/app.js", "/ui/api.js", "/ui/layout.js", "/ui/graph.js", "/ui/timeline.js"];
    for path in std::iter::once("/ok").chain(page) {
        let answer = get(addr, path, &[]).await;
        assert_eq!(answer.status, 200, "{path}: {}", answer.text);
    }
    // Only the page's own files: any other path under `/ui/` asks for credentials.
    assert_eq!(get(addr, "/ui/other.js", &[]).await.status, 401);
    let preflight = send(
        addr,
        "OPTIONS",
        "/threads",
        &[
            ("origin", "http://localhost:3000"),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "x-api-key, content-type"),
        ],
        None,
    )
    .await;
    assert!(preflight.status < 300, "{} {}", preflight.status, preflight.text);
    // A page of an allowed origin can read the refusal, and so tell its user what failed.
    let client = reqwest::Client::new();
    let refused = client.get(format!("http://{addr}/threads/x")).header("origin", "http://localhost:3000");
    let refused = refused.send().await.unwrap();
    assert_eq!(refused.status(), 401);
    assert_eq!(refused.headers()["access-control-allow-origin"], "http://localhost:3000");
    assert_eq!(get(addr, "/ok?probe=1", &[]).await.status, 200);
    // Any other `OPTIONS` is answered by the CORS layer too, with nothing in it: it reaches no route.
    let options = send(addr, "OPTIONS", "/threads/search", &[], None).await;
    assert!(options.text.is_empty(), "{}", options.text);
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

fn token(alg: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).unwrap()
}

fn claims(extra: &Value) -> Value {
    let mut claims = json!({
        "sub": "user-7", "name": "Grace", "aud": "agents", "iss": "https://id.test/",
        "exp": now() + 600, "permissions": ["threads:write"], "scope": "runs:read threads:write",
    });
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            claims.as_object_mut().unwrap().remove(k);
        } else {
            claims[k] = v.clone();
        }
    }
    claims
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hs256_tokens_are_checked_and_refusals_say_what_failed() {
    let jwt = Jwt::hs256(SECRET).audience("agents").issuer("https://id.test/");
    let addr = serve(Server::new().auth(jwt)).await;
    let key = EncodingKey::from_secret(SECRET.as_bytes());
    let signed = |extra: Value| token(Algorithm::HS256, None, &key, &claims(&extra));

    let good = signed(json!({}));
    let seen = run_as(addr, &[("authorization", &bearer(&good))]).await;
    assert_eq!(seen, ["direct:user-7[Grace]/threads:write,runs:read", "inner:user-7[Grace]/threads:write,runs:read"]);

    get(addr, "/info", &[]).await.refused("no credentials", &[SECRET]);
    let cases = [
        ("not.a-jwt.at-all".to_owned(), "malformed"),
        ("Zm9v".to_owned(), "malformed"),
        (signed(json!({"exp": now() - 3600})), "expired"),
        (signed(json!({"nbf": now() + 3600})), "not valid yet"),
        (signed(json!({"aud": "billing"})), "wrong audience"),
        (signed(json!({"aud": null})), "`aud`"),
        (signed(json!({"iss": "https://evil.test/"})), "wrong issuer"),
        (signed(json!({"exp": null})), "`exp`"),
        (signed(json!({"sub": null})), "`sub`"),
        (
            token(Algorithm::HS256, None, &EncodingKey::from_secret(b"another secret"), &claims(&json!({}))),
            "bad signature",
        ),
        (token(Algorithm::HS384, None, &key, &claims(&json!({}))), "HS384"),
    ];
    for (token, says) in cases {
        let answer = get(addr, "/info", &[("authorization", &bearer(&token))]).await;
        answer.refused(says, &[SECRET, &token]);
        assert!(answer.challenge.as_deref().unwrap().contains("invalid_token"), "{:?}", answer.challenge);
    }
    // An API key is not a token.
    get(addr, "/info", &[("x-api-key", API_KEY)]).await.refused("no credentials", &[API_KEY]);
}

/// A fresh P-256 key pair: the key to sign with, and its public half as a JWK named `kid`.
fn es256_key(kid: &str) -> (EncodingKey, Value) {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap();
    let pkcs8 = pair.to_pkcs8v1().unwrap();
    // Uncompressed point: 0x04, then x and y, 32 bytes each.
    let point = pair.public_key().as_ref();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
        "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    (EncodingKey::from_ec_der(pkcs8.as_ref()), jwk)
}

/// A fresh 2048-bit RSA key pair: the key to sign with, and its public half as a JWK named
/// `kid`, with no `alg` (any RSA algorithm then goes).
fn rs256_key(kid: &str) -> (EncodingKey, Value) {
    use aws_lc_rs::encoding::AsDer;
    let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap();
    let public = aws_lc_rs::rsa::PublicKeyComponents::<Vec<u8>>::from(pair.public_key());
    let jwk = json!({"kty": "RSA", "use": "sig", "kid": kid,
        "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e)});
    // jsonwebtoken signs with the PKCS#1 key: the OCTET STRING of the PKCS#8 document, after
    // its fixed rsaEncryption algorithm identifier.
    let pkcs8 = AsDer::<aws_lc_rs::encoding::Pkcs8V1Der>::as_der(&pair).unwrap();
    let pkcs8 = pkcs8.as_ref();
    let rsa_encryption = [0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
    let at = pkcs8.windows(rsa_encryption.len()).position(|w| w == rsa_encryption).unwrap() + rsa_encryption.len();
    assert_eq!(pkcs8[at..at + 2], [0x04, 0x82], "an OCTET STRING with a two-byte length");
    let pkcs1 = &pkcs8[at + 4..];
    (EncodingKey::from_rsa_der(pkcs1), jwk)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn es256_and_rs256_tokens_are_verified_with_a_jwks_file() {
    let (signing, jwk) = es256_key("k1");
    let (stranger, _) = es256_key("k1");
    let (rsa, rsa_jwk) = rs256_key("r1");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, json!({"keys": [jwk, rsa_jwk]}).to_string()).unwrap();
    let addr = serve(Server::new().auth(Jwt::jwks_file(&file).unwrap().audience("agents"))).await;
    let plain = claims(&json!({"iss": null}));

    let good = token(Algorithm::ES256, Some("k1"), &signing, &plain);
    let seen = run_as(addr, &[("authorization", &bearer(&good))]).await;
    assert_eq!(seen[0], "direct:user-7[Grace]/threads:write,runs:read");
    let by_rsa = token(Algorithm::RS256, Some("r1"), &rsa, &plain);
    assert_eq!(get(addr, "/info", &[("authorization", &bearer(&by_rsa))]).await.status, 200);
    let rsa_as_ec = token(Algorithm::ES256, Some("r1"), &signing, &plain);
    get(addr, "/info", &[("authorization", &bearer(&rsa_as_ec))]).await.refused("ES256", &[&rsa_as_ec]);

    let forged = token(Algorithm::ES256, Some("k1"), &stranger, &plain);
    let unknown = token(Algorithm::ES256, Some("k2"), &signing, &plain);
    // The public key's coordinates used as an HMAC secret: the old algorithm-confusion attack.
    let confused = token(Algorithm::HS256, Some("k1"), &EncodingKey::from_secret(b"x"), &plain);
    let expired = token(Algorithm::ES256, Some("k1"), &signing, &claims(&json!({"iss": null, "exp": now() - 3600})));
    for (token, says) in
        [(forged, "bad signature"), (unknown, "unknown key"), (confused, "HS256"), (expired, "expired")]
    {
        get(addr, "/info", &[("authorization", &bearer(&token))]).await.refused(says, &[&token]);
    }

    assert!(Jwt::jwks("{\"keys\": 3}").is_err());
    let missing = Jwt::jwks_file(dir.path().join("nowhere.json")).unwrap_err().to_string();
    assert!(missing.contains("nowhere.json"), "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jwks_urls_are_fetched_once_and_again_for_a_new_key() {
    let (first, first_jwk) = es256_key("k1");
    let (second, second_jwk) = es256_key("k2");
    let document = Arc::new(Mutex::new(json!({"keys": [first_jwk]})));
    let fetches = Arc::new(AtomicUsize::new(0));
    let down = Arc::new(AtomicBool::new(false));
    let provider = {
        let (document, fetches, down) = (Arc::clone(&document), Arc::clone(&fetches), Arc::clone(&down));
        axum::Router::new().route(
            "/jwks.json",
            axum::routing::get(move || {
                fetches.fetch_add(1, Ordering::SeqCst);
                let body = document.lock().unwrap().clone();
                let status = if down.load(Ordering::SeqCst) { 503 } else { 200 };
                async move { (axum::http::StatusCode::from_u16(status).unwrap(), axum::Json(body)) }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let provider_addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, provider).await });

    let jwt = Jwt::jwks_url(format!("http://{provider_addr}/jwks.json")).refetch_after(Duration::ZERO);
    let addr = serve(Server::new().auth(jwt)).await;
    let plain = claims(&json!({"iss": null, "aud": null}));
    let by = |key: &EncodingKey, kid: &str| bearer(&token(Algorithm::ES256, Some(kid), key, &plain));

    assert_eq!(get(addr, "/info", &[("authorization", &by(&first, "k1"))]).await.status, 200);
    assert_eq!(get(addr, "/info", &[("authorization", &by(&first, "k1"))]).await.status, 200);
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "a known key is served from the cache");

    // The provider rotates in a new key: a token naming it makes the server fetch again.
    document.lock().unwrap()["keys"].as_array_mut().unwrap().push(second_jwk);
    assert_eq!(get(addr, "/info", &[("authorization", &by(&second, "k2"))]).await.status, 200);
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    get(addr, "/info", &[("authorization", &by(&second, "k9"))]).await.refused("unknown key", &[]);

    // The provider goes down: the keys fetched last still verify.
    down.store(true, Ordering::SeqCst);
    get(addr, "/info", &[("authorization", &by(&second, "k8"))]).await.refused("unknown key", &[]);
    assert_eq!(get(addr, "/info", &[("authorization", &by(&first, "k1"))]).await.status, 200);
    // A provider never reached: nothing can be verified, and the refusal says why.
    let nowhere = serve(Server::new().auth(Jwt::jwks_url("http://127.0.0.1:1/jwks.json"))).await;
    get(nowhere, "/info", &[("authorization", &by(&first, "k1"))]).await.refused("could not be fetched", &[]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_hs256_secret_accepts_no_token() {
    let addr = serve(Server::new().auth(Jwt::hs256(""))).await;
    let forged = token(Algorithm::HS256, None, &EncodingKey::from_secret(b""), &claims(&json!({"aud": null})));
    get(addr, "/info", &[("authorization", &bearer(&forged))]).await.refused("no secret", &[&forged]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_async_function_authenticates() {
    async fn by_header(request: AuthRequest) -> Result<AuthUser, Refusal> {
        match (request.header("x-user"), request.bearer()) {
            (Some(user), Some("open sesame")) => Ok(AuthUser::new(user)),
            _ => Err(Refusal::new("say the word").challenge("Word")),
        }
    }
    let addr = serve(Server::new().auth(by_header)).await;
    let refused = get(addr, "/info", &[("x-user", "ali")]).await;
    assert_eq!((refused.status, refused.challenge.as_deref()), (401, Some("Word")));
    assert_eq!(refused.detail(), "say the word");
    let seen = run_as(addr, &[("x-user", "ali"), ("authorization", "Bearer open sesame")]).await;
    assert_eq!(seen, ["direct:ali", "inner:ali"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auth_only_loopback_is_served_unless_opened_on_purpose() {
    let graph = || whoami::graph().compile().unwrap();
    let error = Server::new().graph("whoami", graph()).bind("0.0.0.0:0").await.unwrap_err().to_string();
    for says in ["without authentication", "Server::auth", "allow_unauthenticated()"] {
        assert!(error.contains(says), "{error}");
    }
    let open = Server::new().graph("whoami", graph()).allow_unauthenticated().bind("0.0.0.0:0").await;
    assert!(open.is_ok(), "{open:?}");
    let guarded = Server::new().auth(ApiKeys::new().key(API_KEY, AuthUser::new("ada"))).bind("0.0.0.0:0").await;
    assert!(guarded.is_ok(), "{guarded:?}");

    // On loopback without auth: everything is served, nodes see no user, /info says so.
    let addr = serve(Server::new()).await;
    assert_eq!(get(addr, "/info", &[]).await.json()["flags"]["auth"], false);
    assert_eq!(run_as(addr, &[]).await, ["direct:nobody", "inner:nobody"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_origin_is_refused_with_auth() {
    let keys = ApiKeys::new().key(API_KEY, AuthUser::new("ada"));
    let error = Server::new().auth(keys.clone()).cors(Cors::any()).bind("127.0.0.1:0").await.unwrap_err();
    assert!(error.to_string().contains("allow_origin"), "{error}");
    let listed = Server::new().auth(keys).cors(Cors::none().allow_origin("https://chat.example.com"));
    assert!(listed.bind("127.0.0.1:0").await.is_ok());
}

/// The caller reaches runs started over A2A and MCP too, and both refuse requests without a key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_started_over_a2a_and_mcp_see_the_caller() {
    let addr = serve(Server::new().auth(ApiKeys::new().key(API_KEY, AuthUser::new("ada")))).await;
    let key = [("x-api-key", API_KEY)];

    let message = json!({"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "role": "user", "messageId": "m-1", "parts": [{"kind": "data", "data": {}}]}}});
    send(addr, "POST", "/a2a/whoami", &[], Some(message.clone())).await.refused("no credentials", &[]);
    let sent = send(addr, "POST", "/a2a/whoami", &key, Some(message)).await;
    assert_eq!(sent.status, 200, "{}", sent.text);
    assert!(sent.text.contains("direct:ada") && sent.text.contains("inner:ada"), "{}", sent.text);

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
    let mcp = |session: Option<String>, body: Value| {
        let client = reqwest::Client::new();
        let mut request = client
            .post(format!("http://{addr}/mcp"))
            .header("x-api-key", API_KEY)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let refused = reqwest::Client::new().post(format!("http://{addr}/mcp")).json(&initialize).send().await.unwrap();
    assert_eq!(refused.status(), 401);
    let opened = mcp(None, initialize).await.unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    opened.text().await.unwrap();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(mcp(Some(session.clone()), initialized).await.unwrap().status().is_success());
    let call =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami", "arguments": {}}});
    let called = mcp(Some(session), call).await.unwrap().text().await.unwrap();
    assert!(called.contains("direct:ada") && called.contains("inner:ada"), "{called}");
}

/// Everything the process logs, at every level.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Log {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Keys and tokens, accepted or refused, never reach the log (the only test of this file that
/// installs a subscriber, for the whole process).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_never_reach_the_log() {
    let log = Log::default();
    let writer = log.clone();
    let subscriber =
        tracing_subscriber::fmt().with_max_level(tracing::Level::TRACE).with_writer(move || writer.clone()).finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let keys = serve(Server::new().auth(ApiKeys::new().key(API_KEY, AuthUser::new("ada")))).await;
    let guess = "gw-guessed-key-0000";
    assert_eq!(run_as(keys, &[("x-api-key", API_KEY)]).await.len(), 2);
    assert_eq!(get(keys, "/info", &[("x-api-key", guess)]).await.status, 401);
    assert_eq!(get(keys, "/info", &[("authorization", &bearer(API_KEY))]).await.status, 200);

    let tokens = serve(Server::new().auth(Jwt::hs256(SECRET))).await;
    let key = EncodingKey::from_secret(SECRET.as_bytes());
    let good = token(Algorithm::HS256, None, &key, &claims(&json!({"aud": null})));
    let expired = token(Algorithm::HS256, None, &key, &claims(&json!({"aud": null, "exp": now() - 3600})));
    assert_eq!(run_as(tokens, &[("authorization", &bearer(&good))]).await.len(), 2);
    assert_eq!(get(tokens, "/info", &[("authorization", &bearer(&expired))]).await.status, 401);
    assert_eq!(get(tokens, "/info", &[("authorization", "Bearer not.a.jwt")]).await.status, 401);

    let text = String::from_utf8_lossy(&log.0.lock().unwrap()).into_owned();
    assert!(text.contains("request refused"), "the log was captured:\n{text}");
    for secret in [API_KEY, guess, SECRET, &good, &expired, "not.a.jwt"] {
        assert!(!text.contains(secret), "{secret:?} reached the log:\n{text}");
    }
}

fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// Runs `program args..` against a server holding `API_KEY` for `ada`; it prints
/// `all scenarios passed` when every scenario held.
async fn run_client(program: String, args: Vec<String>) {
    let addr = serve(Server::new().auth(ApiKeys::new().key(API_KEY, AuthUser::new("ada")))).await;
    let run = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(&program);
        command.args(&args[..1]).arg(format!("http://{addr}")).arg(API_KEY).args(&args[1..]);
        command.output().unwrap_or_else(|error| panic!("{program} does not start: {error}"))
    });
    let output = tokio::time::timeout(Duration::from_mins(2), run).await.expect("the scenarios finish").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stdout.contains("all scenarios passed"), "{stdout}\n{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_python_client_with_an_api_key() {
    let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/auth_scenarios.py");
    run_client(python, vec![script.to_owned()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_js_client_with_an_api_key() {
    let sdk = prepared("GRAPHWRIGHT_TEST_JS_SDK", "@langchain/langgraph-sdk");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/auth_scenarios.mjs");
    run_client("node".to_owned(), vec![script.to_owned(), sdk]).await;
}
