//! AWS Bedrock (feature `bedrock`): `SigV4` signatures checked against AWS's published test
//! vector and recomputed here, independently, over the bytes a request really sent; Converse
//! and `ConverseStream` against aimock (text, usage, streamed text and tool calls, a `ReAct` agent
//! through a rate limit, errors that are not retried); Bedrock's own error shapes and damaged
//! event streams from canned replies; and the embeddings of Titan and Cohere.

#[path = "support/model_servers.rs"]
mod model_servers;

use futures::StreamExt;
use graphwright::model::{
    AwsCredentials, Bedrock, BedrockEmbeddings, ChatModel, Embeddings, FinishReason, ModelError, ModelRetry, SigV4,
    ToolChoice, Usage, from_spec,
};
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode};
use model_servers::{Aimock, Canned, Loopback};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};

const MODEL: &str = "anthropic.claude-3-5-haiku-20241022-v1:0";
/// The model id as a path segment, its colon percent-encoded.
const MODEL_PATH: &str = "/model/anthropic.claude-3-5-haiku-20241022-v1%3A0";
const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
const TOKEN: &str = "session-token-of-the-test";

fn credentials() -> AwsCredentials {
    AwsCredentials::new("AKIDEXAMPLE", SECRET, Some(TOKEN.to_owned()), None, "test")
}

fn bedrock(base: &str) -> Bedrock {
    Bedrock::new(MODEL).base_url(base).region("us-west-2").credentials(credentials())
}

fn ask(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

/// Get the weather for a city.
#[tool]
fn get_weather(
    /// The city.
    city: String,
) -> String {
    format!("sunny in {city}")
}

/// Get the time in a time zone.
#[tool]
fn get_time(
    /// The zone.
    tz: String,
) -> String {
    format!("noon in {tz}")
}

// ---- SigV4, computed here from AWS's documentation (not by the crate under test) ----

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut block = [0u8; 64];
    if key.len() > 64 {
        block[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        block[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).chain(data.iter().copied()).collect();
    let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).chain(Sha256::digest(&inner)).collect();
    Sha256::digest(&outer).to_vec()
}

/// A path as `SigV4` canonicalises it for every service but S3: each segment percent-encoded
/// (again, when it already was).
fn canonical_uri(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            segment
                .bytes()
                .map(|b| {
                    if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                        char::from(b).to_string()
                    } else {
                        format!("%{b:02X}")
                    }
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// The signature of a request without a query, as AWS's `SigV4` documentation computes it:
/// `headers` are the signed ones (lowercase names).
fn signature(secret: &str, method: &str, path: &str, headers: &[(String, String)], body: &[u8], scope: &str) -> String {
    let mut headers = headers.to_vec();
    headers.sort();
    let canonical_headers = headers.iter().fold(String::new(), |mut text, (n, v)| {
        let _ = writeln!(text, "{n}:{}", v.trim());
        text
    });
    let signed: Vec<&str> = headers.iter().map(|(n, _)| n.as_str()).collect();
    let canonical = format!(
        "{method}\n{}\n\n{canonical_headers}\n{}\n{}",
        canonical_uri(path),
        signed.join(";"),
        hex(&Sha256::digest(body))
    );
    let date_time = &headers.iter().find(|(n, _)| n == "x-amz-date").unwrap().1;
    let to_sign = format!("AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}", hex(&Sha256::digest(canonical.as_bytes())));
    let mut key = format!("AWS4{secret}").into_bytes();
    for part in scope.split('/') {
        key = hmac(&key, part.as_bytes());
    }
    hex(&hmac(&key, to_sign.as_bytes()))
}

/// AWS's published test vector `get-vanilla` (`SigV4` test suite): `GET /` to
/// `example.amazonaws.com`, service `service`, at 2015-08-30T12:36:00Z.
const VANILLA_SIGNATURE: &str = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";

#[test]
fn sigv4_gives_the_published_get_vanilla_signature() {
    let key = AwsCredentials::new("AKIDEXAMPLE", SECRET, None, None, "test-suite");
    let at = httpdate::parse_http_date("Sun, 30 Aug 2015 12:36:00 GMT").unwrap();
    let sign = |signer: &SigV4| signer.sign("GET", "https://example.amazonaws.com/", &[], b"", at).unwrap();
    let headers = sign(&SigV4::new(key.clone(), "us-east-1", "service"));
    let header = |name: &str| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(header("x-amz-date"), "20150830T123600Z");
    assert_eq!(
        header("authorization"),
        format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, Signature={VANILLA_SIGNATURE}"
        )
    );
    assert!(headers.iter().all(|(n, _)| *n != "x-amz-security-token"), "no session token, no header");

    // The reference computation of this file gives the published signature too, so it can
    // judge the signatures of real requests below.
    let vanilla = [
        ("host".to_owned(), "example.amazonaws.com".to_owned()),
        ("x-amz-date".to_owned(), "20150830T123600Z".to_owned()),
    ];
    assert_eq!(
        signature(SECRET, "GET", "/", &vanilla, b"", "20150830/us-east-1/service/aws4_request"),
        VANILLA_SIGNATURE
    );

    // A wrong secret, region or service gives another signature, so the checks above can fail.
    let wrong_secret = AwsCredentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEZ", None, None, "x");
    for signer in [
        SigV4::new(wrong_secret, "us-east-1", "service"),
        SigV4::new(key.clone(), "us-east-2", "service"),
        SigV4::new(key, "us-east-1", "bedrock"),
    ] {
        let headers = sign(&signer);
        let authorization = &headers.iter().find(|(n, _)| *n == "authorization").unwrap().1;
        assert!(!authorization.ends_with(VANILLA_SIGNATURE), "{signer:?}: {authorization}");
    }
}

/// A request a loopback server recorded: its request line, headers (lowercase names) and body.
struct Recorded {
    line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Recorded {
    fn parse(raw: &str) -> Self {
        let (head, body) = raw.split_once("\r\n\r\n").unwrap();
        let mut lines = head.split("\r\n");
        let line = lines.next().unwrap().to_owned();
        let headers = lines
            .map(|l| {
                let (name, value) = l.split_once(':').unwrap();
                (name.trim().to_lowercase(), value.trim().to_owned())
            })
            .collect();
        Self { line, headers, body: body.as_bytes().to_vec() }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// Whether the request's `SigV4` signature is the one computed again from what was sent,
    /// with `secret`.
    fn signed_with(&self, secret: &str) -> bool {
        let authorization = self.header("authorization").expect("the request is signed");
        let rest = authorization.strip_prefix("AWS4-HMAC-SHA256 Credential=").unwrap();
        let (credential, rest) = rest.split_once(", SignedHeaders=").unwrap();
        let (signed, sent_signature) = rest.split_once(", Signature=").unwrap();
        let scope = credential.split_once('/').unwrap().1;
        let headers: Vec<(String, String)> =
            signed.split(';').map(|name| (name.to_owned(), self.header(name).unwrap().to_owned())).collect();
        let mut parts = self.line.split(' ');
        let (method, path) = (parts.next().unwrap(), parts.next().unwrap());
        signature(secret, method, path, &headers, &self.body, scope) == sent_signature
    }
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Verdict {
    approve: bool,
    reason: String,
}

/// A request is signed over what it sent (the path with the model id's colon encoded, the
/// host with its port, the body, the session token), carries the Converse body, and its reply
/// is read; a Bedrock API key goes as a bearer instead; structured output is a forced tool.
#[tokio::test]
async fn converse_requests_are_signed_over_what_they_send_and_carry_converse_bodies() {
    let reply = r#"{"output": {"message": {"role": "assistant", "content": [{"text": "Sunny."}]}},
        "stopReason": "end_turn", "usage": {"inputTokens": 9, "outputTokens": 2, "totalTokens": 11}}"#;
    let verdict = r#"{"output": {"message": {"role": "assistant", "content": [{"toolUse":
        {"toolUseId": "tooluse_v", "name": "Verdict", "input": {"approve": false, "reason": "no"}}}]}},
        "stopReason": "tool_use", "usage": {"inputTokens": 5, "outputTokens": 7}}"#;
    let server = Loopback::serve(vec![
        Canned::new(200, "application/json", reply).header("x-amzn-RequestId: req-123"),
        Canned::new(200, "application/json", verdict),
        Canned::new(200, "application/json", reply),
    ])
    .await;
    let model = bedrock(server.url())
        .bind_tools(&tools![GetWeather, GetTime])
        .tool_choice(ToolChoice::Tool("get_weather".into()))
        .temperature(0.25)
        .max_tokens(100);
    let conversation = [
        Message::system("be brief"),
        Message::user("weather?"),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "tooluse_0",
            "get_weather",
            json!({"city": "Oslo"}),
        )]),
        Message::tool("tooluse_0", "sunny"),
    ];
    let answer = model.respond(&conversation, &Runtime::detached()).await.unwrap();
    assert_eq!((answer.message.content.as_str(), answer.finish_reason), ("Sunny.", FinishReason::Stop));
    assert_eq!(answer.usage, Usage::tokens(9, 2));
    assert_eq!((answer.model.as_str(), answer.response_id.as_deref()), (MODEL, Some("req-123")));
    let typed = model.structured::<Verdict>().invoke(&ask("approve?"), &Runtime::detached()).await.unwrap();
    assert_eq!(typed, Verdict { approve: false, reason: "no".into() });
    let keyed = Bedrock::new(MODEL).base_url(server.url()).region("us-west-2").api_key("bedrock-api-key");
    keyed.invoke(&ask("hi"), &Runtime::detached()).await.unwrap();

    let requests: Vec<Recorded> = server.requests().iter().map(|r| Recorded::parse(r)).collect();
    let first = &requests[0];
    assert_eq!(first.line, format!("POST {MODEL_PATH}/converse HTTP/1.1"));
    let authorization = first.header("authorization").unwrap();
    let date = &first.header("x-amz-date").unwrap()[..8];
    assert!(
        authorization.starts_with(&format!(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/{date}/us-west-2/bedrock/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        )),
        "{authorization}"
    );
    assert_eq!(first.header("x-amz-security-token"), Some(TOKEN));
    assert!(first.signed_with(SECRET) && requests[1].signed_with(SECRET), "the signatures cover what was sent");
    assert!(!first.signed_with("another secret"), "and would not match another key's");
    let body = first.json();
    assert_eq!(body["system"], json!([{"text": "be brief"}]));
    assert_eq!(body["inferenceConfig"], json!({"maxTokens": 100, "temperature": 0.25}));
    assert_eq!(body["toolConfig"]["toolChoice"], json!({"tool": {"name": "get_weather"}}));
    let spec = &body["toolConfig"]["tools"][1]["toolSpec"];
    assert_eq!(
        (spec["name"].as_str(), spec["description"].as_str()),
        (Some("get_time"), Some("Get the time in a time zone."))
    );
    assert_eq!(spec["inputSchema"]["json"]["required"], json!(["tz"]));
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"text": "weather?"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_0", "name": "get_weather", "input": {"city": "Oslo"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_0", "content": [{"text": "sunny"}]}}]}
        ])
    );
    let structured = requests[1].json();
    assert_eq!(structured["toolConfig"]["toolChoice"], json!({"tool": {"name": "Verdict"}}));
    assert_eq!(structured["toolConfig"]["tools"].as_array().unwrap().len(), 1, "bound tools are not offered");
    let keyed = &requests[2];
    assert_eq!(keyed.header("authorization"), Some("Bearer bedrock-api-key"));
    assert!(keyed.header("x-amz-date").is_none(), "an API key replaces the signature");
}

#[test]
fn specs_configuration_errors_and_debug_output() {
    let model = from_spec(&format!("bedrock:{MODEL}")).unwrap();
    assert_eq!((model.provider(), model.model()), ("bedrock", MODEL), "the id keeps its colon");
    let unknown = from_spec("bedrok:m").unwrap_err().to_string();
    assert!(unknown.contains("bedrock"), "{unknown}");

    let shown = format!("{:?} {:?}", bedrock("http://127.0.0.1:9"), bedrock_embeddings("http://127.0.0.1:9"));
    assert!(!shown.contains(SECRET) && !shown.contains(TOKEN), "secrets are redacted: {shown}");
    let keyed = format!("{:?}", Bedrock::new(MODEL).api_key("bedrock-api-key"));
    assert!(!keyed.contains("bedrock-api-key"), "{keyed}");
    let error = Bedrock::new(MODEL).region("us east 1").endpoint(false).unwrap_err();
    assert!(error.to_string().contains("not an AWS region"), "{error}");
}

/// A model whose credentials are missing or expired is not sent, and says what to set.
#[tokio::test]
async fn missing_or_expired_credentials_are_errors_that_say_what_to_set() {
    let server = Loopback::serve(vec![Canned::new(500, "text/plain", "never asked")]).await;
    let expired = AwsCredentials::new("AKID", "secret", None, Some(UNIX_EPOCH + Duration::from_mins(1)), "test");
    let error = Bedrock::new(MODEL)
        .base_url(server.url())
        .region("us-east-1")
        .credentials(expired)
        .invoke(&ask("hi"), &Runtime::detached())
        .await
        .unwrap_err();
    assert!(matches!(&error, ModelError::Config(m) if m.contains("expired")), "{error}");
    assert!(server.requests().is_empty());
}

// ---- aimock: Converse and ConverseStream ----

#[graph(context = Arc<dyn ChatModel>)]
mod agent {
    use graphwright::model::ChatModel;
    use graphwright::prelude::*;
    use std::sync::Arc;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn call_model(state: &State, rt: &Runtime<Arc<dyn ChatModel>>) -> Result<StateUpdate, NodeError> {
        let reply = rt.context().invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }
}

/// A streamed tool-call piece: message id, call index, id, name, arguments.
type Piece = (String, u32, Option<String>, Option<String>, String);

/// Runs the one-node agent with `model`, streaming `messages`: the final state, the tool-call
/// pieces and the text streamed, and the usage reported.
async fn stream_agent(model: Arc<dyn ChatModel>, question: &str) -> (agent::State, Vec<Piece>, String, Vec<Usage>) {
    let app = agent::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model);
    let mut stream = app.stream(agent::StateUpdate::new().messages(ask(question)), &cfg, StreamMode::Messages);
    let (mut calls, mut text, mut usage, mut end) = (Vec::new(), String::new(), Vec::new(), None);
    while let Some(event) = stream.next().await {
        match event.kind {
            EventKind::ToolCallDelta { message_id, index, id, name, arguments, .. } => {
                calls.push((message_id, index, id, name, arguments));
            }
            EventKind::Message { delta, .. } => text.push_str(&delta),
            EventKind::Usage { usage: reported, .. } => usage.push(reported),
            EventKind::Finished { state, .. } => end = Some(state),
            EventKind::Failed(error) => panic!("the run failed: {error}"),
            _ => {}
        }
    }
    (end.expect("a terminal event"), calls, text, usage)
}

#[tokio::test]
async fn aimock_converse_text_reply_with_usage_and_a_signed_request() {
    let mock = Aimock::start();
    let model = bedrock(mock.url()).temperature(0.5).max_tokens(64);
    let messages = [Message::system("be brief"), Message::user("say hello")];
    let reply = model.respond(&messages, &Runtime::detached()).await.unwrap();
    assert_eq!(reply.message.content, "Hello there, friend!");
    assert_eq!(reply.usage, Usage { calls: 1, ..Usage::tokens(12, 5) });
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    let journal = mock.journal().await;
    assert_eq!(journal[0]["path"], format!("{MODEL_PATH}/converse"));
    let headers = &journal[0]["headers"];
    // aimock journals `authorization` as "[REDACTED]"; its form and signature are checked
    // against a loopback server above.
    assert!(headers["authorization"].is_string(), "the request is signed: {headers}");
    assert!(headers["x-amz-date"].as_str().is_some_and(|d| d.len() == 16 && d.ends_with('Z')));
    assert_eq!(headers["x-amz-security-token"], TOKEN);
    // aimock journals a Converse request translated to the OpenAI shape.
    let sent = &journal[0]["body"];
    assert_eq!(
        sent["messages"],
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "say hello"}])
    );
    assert_eq!((sent["temperature"].as_f64(), sent["max_tokens"].as_u64()), (Some(0.5), Some(64)));
}

#[tokio::test]
async fn aimock_converse_stream_text_arrives_in_pieces_with_its_usage() {
    let mock = Aimock::start();
    let model = bedrock(mock.url()).streaming(true);
    let (state, _, text, usage) = stream_agent(Arc::new(model), "say hello").await;
    assert_eq!(text, "Hello there, friend!", "the text arrived on the messages stream");
    assert_eq!(state.messages.last().unwrap().content, "Hello there, friend!");
    assert_eq!(usage, [Usage { calls: 1, ..Usage::tokens(12, 5) }]);
    assert_eq!(mock.journal().await[0]["path"], format!("{MODEL_PATH}/converse-stream"));
}

#[tokio::test]
async fn aimock_converse_stream_tool_calls_reach_the_state_and_the_messages_stream() {
    let mock = Aimock::start();
    let model = bedrock(mock.url()).streaming(true).bind_tools(&tools![GetWeather, GetTime]);
    let (state, pieces, _, _) = stream_agent(Arc::new(model), "weather and time").await;
    let reply = state.messages.last().unwrap();
    let calls: Vec<_> =
        reply.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone())).collect();
    assert_eq!(
        calls,
        [("call_w", "get_weather", json!({"city": "Paris"})), ("call_t", "get_time", json!({"tz": "CET"}))]
    );
    assert!(pieces.iter().all(|p| Some(&p.0) == reply.id.as_ref()), "pieces carry the reply's id");
    let starts: Vec<_> = pieces.iter().filter_map(|p| Some((p.1, p.2.clone()?, p.3.clone()?))).collect();
    assert_eq!(
        starts,
        [(0, "call_w".to_owned(), "get_weather".to_owned()), (1, "call_t".to_owned(), "get_time".to_owned())]
    );
    let args_of = |i| pieces.iter().filter(|p| p.1 == i).map(|p| p.4.as_str()).collect::<String>();
    assert_eq!(serde_json::from_str::<Value>(&args_of(0)).unwrap(), json!({"city": "Paris"}));
    assert_eq!(serde_json::from_str::<Value>(&args_of(1)).unwrap(), json!({"tz": "CET"}));
    let sent = &mock.bodies(&format!("{MODEL_PATH}/converse-stream")).await[0];
    assert_eq!(sent["tools"][1]["function"]["name"], "get_time", "the tools went as toolSpecs");
}

/// A `ReAct` agent on Bedrock: the first call is rate-limited (429, `Retry-After: 1`) and sent
/// again after the second asked for; the model asks for a tool (its arguments streamed in
/// pieces), the tool's answer goes back as a `toolResult`, and the model answers.
#[tokio::test]
async fn a_react_agent_on_bedrock_calls_a_tool_through_a_rate_limit() {
    let mock = Aimock::start();
    mock.fail_next(429, "ThrottlingException", "Too many requests, please wait before trying again.").await;
    let model = bedrock(mock.url()).streaming(true);
    let app = react_agent(model, tools![GetWeather]).compile().unwrap();
    let started = Instant::now();
    let out = app
        .invoke(MessagesState::new([Message::user("weather in Oslo, by Bedrock")]), &RunConfig::default())
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 is honoured ({:?})", started.elapsed());
    assert_eq!(out.state.last_reply(), Some("It is sunny in Oslo."));
    let call = &out.state.messages[1].tool_calls[0];
    assert_eq!(
        (call.id.as_str(), call.name.as_str(), &call.arguments),
        ("tooluse_oslo", "get_weather", &json!({"city": "Oslo"}))
    );
    assert_eq!(out.state.messages[2].content, "sunny in Oslo");
    assert_eq!(out.usage().total_tokens(), 20 + 8 + 30 + 6);
    let journal = mock.journal().await;
    let statuses: Vec<_> = journal.iter().map(|e| e["response"]["status"].as_u64().unwrap()).collect();
    assert_eq!(statuses, [429, 200, 200], "one rate-limited attempt, its retry, and the answer");
    let last = &journal[2]["body"]["messages"];
    assert_eq!(last[2], json!({"role": "tool", "content": "sunny in Oslo", "tool_call_id": "tooluse_oslo"}));
}

#[tokio::test]
async fn aimock_validation_and_access_errors_are_not_retried() {
    let mock = Aimock::start();
    let model = bedrock(mock.url()).retry(ModelRetry::default().initial_wait(Duration::from_millis(10)));
    mock.fail_next(400, "ValidationException", "The provided model identifier is invalid.").await;
    let error = model.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::BadRequest { status: 400, .. }), "{error}");
    assert!(error.to_string().starts_with("bedrock ") && error.to_string().contains("model identifier"), "{error}");
    mock.fail_next(403, "AccessDeniedException", "You don't have access to the model.").await;
    let error = model.clone().streaming(true).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::Auth { status: 403, .. }), "{error}");
    assert_eq!(mock.journal().await.len(), 2, "neither was sent again");
    mock.fail_next(500, "InternalServerException", "Internal").await;
    let reply = model.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "Hello there, friend!", "a 500 is retried");
}

#[tokio::test]
async fn aimock_structured_output_by_a_forced_tool() {
    let mock = Aimock::start();
    let verdict = bedrock(mock.url()).structured::<Verdict>();
    let answer = verdict.invoke(&ask("verdict as a tool"), &Runtime::detached()).await.unwrap();
    assert_eq!(answer, Verdict { approve: true, reason: "fine".into() });
    let sent = &mock.bodies(&format!("{MODEL_PATH}/converse")).await[0];
    assert_eq!(sent["tools"][0]["function"]["name"], "Verdict");
}

// ---- Bedrock's own error shapes and damaged event streams ----

fn aws_error(status: u16, name: &str, message: &str) -> Canned {
    Canned::new(status, "application/json", &json!({"message": message}).to_string())
        .header(&format!("x-amzn-ErrorType: {name}:http://internal.amazon.com/coral/com.amazon.bedrock/"))
}

fn ok_reply() -> Canned {
    let body = r#"{"output": {"message": {"content": [{"text": "ok"}]}}, "stopReason": "end_turn"}"#;
    Canned::new(200, "application/json", body)
}

#[tokio::test]
async fn throttling_is_retried_and_validation_and_access_denied_are_not() {
    let server = Loopback::serve(vec![
        aws_error(429, "ThrottlingException", "Too many requests, please wait before trying again.")
            .header("retry-after: 0.2"),
        ok_reply(),
        aws_error(400, "ValidationException", "messages: first message must use the user role"),
        aws_error(403, "AccessDeniedException", "You don't have access to the model with the specified model ID."),
        aws_error(400, "ValidationException", "Input is too long for requested model."),
    ])
    .await;
    let model = bedrock(server.url());
    let reply = model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "ok");
    let error = model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::BadRequest { status: 400, message, .. } if message.contains("ValidationException")),
        "{error}"
    );
    let error = model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::Auth { status: 403, .. }), "{error}");
    assert!(error.to_string().contains("bedrock:InvokeModel"), "the error says what access is needed: {error}");
    let error = model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::ContextLength { .. }), "{error}");
    assert_eq!(server.requests().len(), 5, "one retry, after the throttling only");
}

/// One frame of AWS's event stream, encoded here by the format's description.
fn frame(headers: &[(&str, &str)], payload: &str) -> Vec<u8> {
    let mut head = Vec::new();
    for (name, value) in headers {
        head.push(u8::try_from(name.len()).unwrap());
        head.extend_from_slice(name.as_bytes());
        head.push(7); // a string
        head.extend_from_slice(&u16::try_from(value.len()).unwrap().to_be_bytes());
        head.extend_from_slice(value.as_bytes());
    }
    let total = u32::try_from(12 + head.len() + payload.len() + 4).unwrap();
    let mut out = total.to_be_bytes().to_vec();
    out.extend_from_slice(&u32::try_from(head.len()).unwrap().to_be_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out.extend_from_slice(&head);
    out.extend_from_slice(payload.as_bytes());
    out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
    out
}

fn event(kind: &str, payload: &Value) -> Vec<u8> {
    frame(
        &[(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")],
        &payload.to_string(),
    )
}

fn exception(kind: &str, message: &str) -> Vec<u8> {
    let payload = json!({"message": message}).to_string();
    frame(&[(":exception-type", kind), (":content-type", "application/json"), (":message-type", "exception")], &payload)
}

fn text_delta(text: &str) -> Vec<u8> {
    event("contentBlockDelta", &json!({"contentBlockIndex": 0, "delta": {"text": text}, "p": "abcdef"}))
}

fn finished() -> Vec<Vec<u8>> {
    vec![
        event("contentBlockStop", &json!({"contentBlockIndex": 0})),
        event("messageStop", &json!({"stopReason": "max_tokens"})),
        event(
            "metadata",
            &json!({"usage": {"inputTokens": 4, "outputTokens": 3, "totalTokens": 7}, "metrics": {"latencyMs": 9}}),
        ),
    ]
}

/// A streamed reply from `frames`, sent as the given pieces of their bytes.
async fn streamed(responses: Vec<Vec<Vec<u8>>>, retry: ModelRetry) -> (Result<ModelReplyOf, ModelError>, usize) {
    let canned = responses
        .iter()
        .map(|pieces| {
            let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
            Canned::stream_bytes(&pieces, Duration::from_millis(2))
        })
        .collect();
    let server = Loopback::serve(canned).await;
    let reply = bedrock(server.url()).streaming(true).retry(retry).respond(&ask("hi"), &Runtime::detached()).await;
    (reply.map(|r| (r.message.content, r.finish_reason, r.usage)), server.requests().len())
}

type ModelReplyOf = (String, FinishReason, Usage);

#[tokio::test]
async fn event_streams_are_read_however_cut_and_damage_is_a_clear_error() {
    let quick = ModelRetry::default().initial_wait(Duration::from_millis(10));
    // Frames cut anywhere, several in one piece: the reply as sent.
    let mut whole = event("messageStart", &json!({"role": "assistant"}));
    whole.extend(text_delta("Hel"));
    whole.extend(text_delta("lo"));
    whole.extend(finished().concat());
    let pieces = vec![whole[..5].to_vec(), whole[5..40].to_vec(), whole[40..41].to_vec(), whole[41..].to_vec()];
    let (reply, _) = streamed(vec![pieces], quick).await;
    assert_eq!(reply.unwrap(), ("Hello".to_owned(), FinishReason::Length, Usage::tokens(4, 3)));

    // A body that ends inside a frame, after text: not sent again.
    let cut = text_delta("Hi");
    let (reply, sent) = streamed(vec![vec![text_delta("Hello"), cut[..cut.len() - 3].to_vec()]], quick).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { after_content: true, message, .. } if message.contains("ended inside a frame")),
        "{error}"
    );
    assert_eq!(sent, 1);

    // A payload byte changed: the message CRC no longer matches.
    let mut damaged = text_delta("Hello");
    let at = damaged.len() - 8;
    damaged[at] ^= 0x20;
    let (reply, _) = streamed(vec![vec![damaged]], ModelRetry::none()).await;
    let error = reply.unwrap_err();
    assert!(matches!(&error, ModelError::Stream { message, .. } if message.contains("does not decode")), "{error}");

    // Bytes that are not an event stream at all.
    let (reply, _) = streamed(vec![vec![b"{\"message\": \"not a stream\"}".to_vec()]], ModelRetry::none()).await;
    let error = reply.unwrap_err();
    assert!(matches!(&error, ModelError::Stream { message, .. } if message.contains("prelude checksum")), "{error}");

    // A stream that ends before `messageStop`.
    let (reply, _) = streamed(vec![vec![text_delta("Hello")]], ModelRetry::none()).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message.contains("before `messageStop`")),
        "{error}"
    );

    // Malformed JSON in a frame.
    let garbage = frame(&[(":event-type", "contentBlockDelta"), (":message-type", "event")], "{not json");
    let (reply, _) = streamed(vec![vec![garbage]], ModelRetry::none()).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message.contains("not ConverseStream's")),
        "{error}"
    );
}

#[tokio::test]
async fn an_exception_in_a_stream_is_retried_before_content_and_breaks_it_after() {
    let quick = ModelRetry::default().initial_wait(Duration::from_millis(10));
    let throttled = vec![exception("throttlingException", "Too many tokens, please wait before trying again.")];
    let good = [vec![text_delta("fine")], finished()].concat();
    let (reply, sent) = streamed(vec![throttled, good], quick).await;
    assert_eq!(reply.unwrap().0, "fine");
    assert_eq!(sent, 2, "the throttled stream, then its retry");

    let broken = vec![text_delta("par"), exception("modelStreamErrorException", "The model failed mid-stream.")];
    let (reply, sent) = streamed(vec![broken], quick).await;
    let error = reply.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { after_content: true, message, .. } if message.contains("failed mid-stream")),
        "{error}"
    );
    assert_eq!(sent, 1, "part of the reply was delivered: not sent again");

    let (reply, _) = streamed(vec![vec![exception("validationException", "bad input")]], quick).await;
    assert!(matches!(reply.unwrap_err(), ModelError::BadRequest { status: 400, .. }));
}

// ---- Embeddings ----

fn bedrock_embeddings(base: &str) -> BedrockEmbeddings {
    BedrockEmbeddings::new("amazon.titan-embed-text-v2:0")
        .unwrap()
        .base_url(base)
        .region("us-east-1")
        .credentials(credentials())
}

/// A loopback server that embeds as a model would, from what each request asks: a Titan
/// request (`inputText`) gets `[length, first byte]`, texts later in the alphabet sooner (so
/// calls finish out of order); a Cohere request (`texts`) gets one such vector per text. It counts requests and
/// the most in flight at once.
struct Embedder {
    url: String,
    requests: Arc<AtomicUsize>,
    most_at_once: Arc<AtomicUsize>,
    bodies: Arc<std::sync::Mutex<Vec<Value>>>,
}

impl Embedder {
    async fn serve() -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (requests, most_at_once) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let bodies = Arc::new(std::sync::Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let (count, most, seen) = (requests.clone(), most_at_once.clone(), bodies.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let (count, most, seen, in_flight) = (count.clone(), most.clone(), seen.clone(), in_flight.clone());
                tokio::spawn(async move {
                    let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    count.fetch_add(1, Ordering::SeqCst);
                    let mut raw = Vec::new();
                    let mut buf = [0u8; 8192];
                    let body = loop {
                        let n = socket.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            in_flight.fetch_sub(1, Ordering::SeqCst);
                            return;
                        }
                        raw.extend_from_slice(&buf[..n]);
                        let text = String::from_utf8_lossy(&raw).into_owned();
                        if let Some((head, body)) = text.split_once("\r\n\r\n") {
                            let length: usize = head
                                .lines()
                                .find_map(|l| {
                                    l.to_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned())
                                })
                                .unwrap()
                                .parse()
                                .unwrap();
                            if body.len() >= length {
                                break serde_json::from_str::<Value>(body).unwrap();
                            }
                        }
                    };
                    seen.lock().unwrap().push(body.clone());
                    let vector = |text: &str| json!([text.len(), text.bytes().next().unwrap_or(0)]);
                    let reply = if let Some(text) = body["inputText"].as_str() {
                        let wait = 10 * u64::from(b'{'.saturating_sub(text.bytes().next().unwrap_or(b'z')));
                        tokio::time::sleep(Duration::from_millis(wait)).await;
                        json!({"embedding": vector(text), "inputTextTokenCount": 1})
                    } else {
                        let texts = body["texts"].as_array().unwrap();
                        let vectors: Vec<Value> = texts.iter().map(|t| vector(t.as_str().unwrap())).collect();
                        json!({"embeddings": vectors, "id": "e", "response_type": "embeddings_floats"})
                    };
                    let reply = reply.to_string();
                    let response = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
                        reply.len()
                    );
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    let _ = socket.write_all(response.as_bytes()).await;
                    let _ = socket.shutdown().await;
                });
            }
        });
        Self { url, requests, most_at_once, bodies }
    }
}

fn expected(texts: &[String]) -> Vec<Vec<f32>> {
    texts.iter().map(|t| vec![f32::from(u8::try_from(t.len()).unwrap()), f32::from(t.as_bytes()[0])]).collect()
}

#[tokio::test]
async fn titan_embeds_one_text_per_call_a_few_at_once_in_order() {
    let server = Embedder::serve().await;
    let titan = bedrock_embeddings(&server.url).dimensions(256).normalize(false);
    // The loopback's vectors have 2 numbers, not the 256 asked for: refused.
    let error = titan.embed(&["alpha".to_owned()]).await.unwrap_err().to_string();
    assert!(error.contains("2 numbers where 256 were asked for"), "{error}");
    let texts: Vec<String> =
        ["alpha", "bravo!", "charlie", "d", "echo echo", "foxtrot", "golf"].map(String::from).to_vec();

    let titan = bedrock_embeddings(&server.url).concurrency(3);
    let before = server.requests.load(Ordering::SeqCst);
    assert_eq!(titan.embed(&texts).await.unwrap(), expected(&texts), "in the texts' order");
    assert_eq!(server.requests.load(Ordering::SeqCst) - before, texts.len(), "one call per text");
    assert_eq!(server.most_at_once.load(Ordering::SeqCst), 3, "three calls at once, no more");
    assert_eq!(titan.embed_query("zulu").await.unwrap(), expected(&["zulu".to_owned()])[0]);
    let bodies = server.bodies.lock().unwrap().clone();
    assert_eq!(bodies[0]["dimensions"], 256);
    assert_eq!(bodies[0]["normalize"], false);
    assert_eq!(bodies.last().unwrap(), &json!({"inputText": "zulu", "normalize": true}));
}

#[tokio::test]
async fn cohere_embeds_up_to_96_texts_per_call_documents_and_queries_apart() {
    let server = Embedder::serve().await;
    let cohere = BedrockEmbeddings::new("cohere.embed-english-v3")
        .unwrap()
        .base_url(&server.url)
        .region("us-east-1")
        .credentials(credentials());
    let texts: Vec<String> = (0..100u8).map(|i| format!("{}text {i}", char::from(b'a' + i % 26))).collect();
    assert_eq!(cohere.embed(&texts).await.unwrap(), expected(&texts));
    assert_eq!(cohere.embed_query("where?").await.unwrap(), expected(&["where?".to_owned()])[0]);
    let bodies = server.bodies.lock().unwrap().clone();
    let sizes: Vec<usize> = bodies.iter().map(|b| b["texts"].as_array().unwrap().len()).collect();
    assert_eq!(sizes, [96, 4, 1]);
    let kinds: Vec<&str> = bodies.iter().map(|b| b["input_type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["search_document", "search_document", "search_query"]);
}

#[tokio::test]
async fn embeddings_replies_of_the_wrong_shape_are_refused_and_throttling_is_retried() {
    let titan_reply =
        |v: Value| Canned::new(200, "application/json", &json!({"embedding": v, "inputTextTokenCount": 2}).to_string());
    let server = Loopback::serve(vec![
        aws_error(429, "ThrottlingException", "Too many requests").header("retry-after: 0.1"),
        titan_reply(json!([0.5, 0.25])),
        Canned::new(200, "application/json", r#"{"inputTextTokenCount": 2}"#),
        titan_reply(json!([1.0, 2.0])),
        titan_reply(json!([1.0, 2.0, 3.0])),
    ])
    .await;
    let titan = bedrock_embeddings(server.url()).concurrency(1);
    assert_eq!(titan.embed(&["a".to_owned()]).await.unwrap(), [vec![0.5, 0.25]], "retried after the throttling");
    let error = titan.embed(&["a".to_owned()]).await.unwrap_err();
    assert!(matches!(&error, ModelError::InvalidOutput { reason, .. } if reason.contains("no `embedding`")), "{error}");
    let error = titan.embed(&["a".to_owned(), "b".to_owned()]).await.unwrap_err();
    assert!(error.to_string().contains("vector 1 has 3 numbers where the first has 2"), "{error}");
    let sent = server.requests();
    assert_eq!(sent.len(), 5);
    assert!(sent[0].starts_with("POST /model/amazon.titan-embed-text-v2%3A0/invoke "), "{}", sent[0]);
    assert!(Recorded::parse(&sent[1]).signed_with(SECRET));

    let by_type = r#"{"embeddings": {"float": [[0.1, 0.2], [0.3, 0.4]]}, "response_type": "embeddings_by_type"}"#;
    let server = Loopback::serve(vec![
        Canned::new(200, "application/json", by_type),
        Canned::new(200, "application/json", r#"{"embeddings": [[0.1, 0.2]]}"#),
    ])
    .await;
    let cohere = BedrockEmbeddings::new("cohere.embed-v4:0")
        .unwrap()
        .base_url(server.url())
        .region("us-east-1")
        .credentials(credentials())
        .dimensions(2);
    let two = ["x".to_owned(), "y".to_owned()];
    assert_eq!(cohere.embed(&two).await.unwrap(), [vec![0.1, 0.2], vec![0.3, 0.4]]);
    let error = cohere.embed(&two).await.unwrap_err().to_string();
    assert!(error.contains("1 vectors for 2 texts"), "{error}");
    assert_eq!(Recorded::parse(&server.requests()[0]).json()["output_dimension"], 2);

    let v1 = BedrockEmbeddings::new("amazon.titan-embed-text-v1")
        .unwrap()
        .base_url(server.url())
        .region("us-east-1")
        .dimensions(256);
    let error = v1.embed(&two).await.unwrap_err();
    assert!(matches!(&error, ModelError::Config(m) if m.contains("cannot be asked for 256 dimensions")), "{error}");
    assert_eq!(server.requests().len(), 2, "refused before any request");
}
