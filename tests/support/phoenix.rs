//! [`Phoenix`]: Arize Phoenix (`arize-phoenix` from `PyPI`), a real OpenTelemetry receiver, run on
//! 127.0.0.1 for tests that export traces and read the spans back: OTLP over HTTP and over
//! gRPC in, every span of a project out through Phoenix's REST API, and a screenshot of a trace
//! in Phoenix's own page.
//!
//! ```ignore
//! #[path = "support/phoenix.rs"]
//! mod phoenix;
//! use phoenix::{Phoenix, attr, named};
//!
//! let phoenix = Phoenix::shared(); // or Phoenix::start() for a server of the test's own
//! // ... export to phoenix.otlp_http_endpoint() or phoenix.otlp_grpc_endpoint(), with the
//! // resource attribute `openinference.project.name` = "my-test" ...
//! let spans = phoenix.wait_for_spans("my-test", |spans| spans.len() >= 2, Duration::from_secs(30)).await;
//! let chat = named(&spans, "chat gpt-4o-mini");
//! assert_eq!(attr(chat, "gen_ai.request.model"), Some(&json!("gpt-4o-mini")));
//! phoenix.screenshot_trace(trace_id, &["chat gpt-4o-mini"], &png_path).await;
//! ```
//!
//! `scripts/test` installs Phoenix in a virtualenv under `target/test-cache` and names its
//! interpreter in `GRAPHWRIGHT_TEST_PHOENIX`; the screenshot also needs `GRAPHWRIGHT_TEST_JS_SDK`
//! (playwright-core) and `GRAPHWRIGHT_TEST_CHROMIUM`, which it prepares too.
//!
//! # Where spans land
//!
//! Phoenix files each exported batch under a project, by name, created on first use:
//! - the resource attribute `openinference.project.name`, over HTTP and gRPC alike;
//! - over HTTP, the request header `x-project-name` instead, when present;
//! - otherwise the project `default`. `service.name` does not choose the project.
//!
//! A test picks a project name of its own (so tests sharing a server do not see each other's
//! spans) and sets it as that resource attribute; or it starts a server of its own and reads
//! `default`.
//!
//! # What Phoenix accepts and adds
//!
//! - `otlp_http_endpoint()` is the base URL in `OTEL_EXPORTER_OTLP_ENDPOINT`'s sense: the traces
//!   go to `/v1/traces` under it. Phoenix takes protobuf there only (`application/x-protobuf`,
//!   optionally gzip or deflate), and answers 415 to OTLP's JSON encoding.
//! - Phoenix reads `gen_ai.*` attributes and adds `OpenInference`'s own beside them where the
//!   span has none (`llm.model_name`, `llm.token_count.prompt`, …), and derives the span's kind
//!   from `gen_ai.operation.name`: `chat`, `text_completion` and `generate_content` are `LLM`,
//!   `invoke_agent` and `create_agent` `AGENT`, `execute_tool` `TOOL`, `embeddings`
//!   `EMBEDDING`, `retrieval` `RETRIEVER`, anything else `UNKNOWN`. The kind comes back as
//!   `span_kind`, and `openinference.span.kind` is taken out of the attributes.
//! - Export is asynchronous on Phoenix's side too: an accepted batch is written a moment later,
//!   so reads go through [`Phoenix::wait_for_spans`].
//!
//! # A span as [`Phoenix::spans`] returns it
//!
//! Phoenix's own JSON, in the order Phoenix stored the spans (attributes abridged):
//!
//! ```json
//! {
//!   "id": "U3Bhbjoz",
//!   "name": "chat gpt-4o-mini",
//!   "context": {"trace_id": "5645c1f1919eee058e745ca77ebb857b", "span_id": "340751effd7ac062"},
//!   "span_kind": "LLM",
//!   "parent_id": "3ddf627ab8e72140",
//!   "start_time": "2026-11-28T14:08:41.542176+00:00",
//!   "end_time": "2026-11-28T14:08:41.542251+00:00",
//!   "status_code": "ERROR",
//!   "status_message": "rate limited by the provider",
//!   "attributes": {"gen_ai.request.model": "gpt-4o-mini", "gen_ai.usage.input_tokens": 42, "llm.model_name": "gpt-4o-mini"},
//!   "events": [{"name": "exception", "timestamp": "2026-11-28T14:08:41.542232+00:00",
//!               "attributes": {"exception.type": "RateLimitError", "exception.message": "rate limited by the provider"}}]
//! }
//! ```
//!
//! `id` is Phoenix's own (a GraphQL global id), not the OpenTelemetry span id; trace and span ids
//! are lowercase hex; `parent_id` is `null` on a root span; `status_code` is `UNSET`, `OK` or `ERROR`. Phoenix
//! stores attributes nested at their dots and this route flattens them again; [`attr`] finds a
//! dotted key either way, so a test does not depend on which.
//!
//! Phoenix binds its HTTP port on 127.0.0.1 but its gRPC port on every interface (`[::]`), which
//! `PHOENIX_HOST` does not change; nothing is sent anywhere but loopback.
//!
//! # Fragile on an upgrade of Phoenix
//!
//! The REST route and its shape, the GraphQL field `getTraceByOtelId`, the UI's trace route
//! (`/projects/<project id>/traces/<trace id>`), the `gen_ai` to `OpenInference` mapping and the
//! `PHOENIX_*` variables are Phoenix's, not a standard's: `tests/phoenix_receiver.rs` checks
//! each with the OpenTelemetry SDK's own exporters, so an upgrade that changes one fails there
//! first.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long Phoenix may take to start: its first start on a fresh database runs its migrations,
/// about ten seconds on two cores when they are not busy with anything else.
const START_TIMEOUT: Duration = Duration::from_mins(2);
/// How long the page may take, browser start included.
const PAGE_TIMEOUT: Duration = Duration::from_mins(2);
/// The screenshot's size, as `phoenix_page.mjs` sets the window.
const PAGE_SIZE: (u32, u32) = (1400, 900);

/// A Phoenix server of its own on free loopback ports, with a fresh working directory and
/// `SQLite` database; killed on drop, and gone anyway when the test process ends.
pub struct Phoenix {
    child: Child,
    // Held open: the launcher exits when it closes.
    _stdin: ChildStdin,
    http_port: u16,
    grpc_port: u16,
    version: String,
    // Dropped after the child is killed (fields drop after `Drop::drop`).
    dir: tempfile::TempDir,
}

impl Phoenix {
    /// The binary's server, started on first use. Tests sharing it each use projects of their
    /// own.
    pub fn shared() -> &'static Phoenix {
        static SERVER: OnceLock<Phoenix> = OnceLock::new();
        SERVER.get_or_init(Self::start)
    }

    /// Starts a server of its own and returns once both its HTTP and gRPC ports answer.
    ///
    /// # Panics
    ///
    /// When `GRAPHWRIGHT_TEST_PHOENIX` is not set, or Phoenix exits or is not ready within two
    /// minutes (with the end of what it wrote on stderr).
    pub fn start() -> Self {
        let python = prepared("GRAPHWRIGHT_TEST_PHOENIX", "Arize Phoenix");
        // Free ports are found by binding and letting go, so another process can take one
        // before Phoenix binds it: Phoenix then exits saying so, and is started on others.
        let mut refused = String::new();
        for _ in 0..3 {
            match Self::launch(&python) {
                Ok(phoenix) => return phoenix,
                Err(stderr) => refused = stderr,
            }
        }
        panic!("Phoenix could not bind its ports in three tries; the last time it said:\n{refused}");
    }

    /// One start; `Err` with Phoenix's stderr when it could not bind a port.
    fn launch(python: &str) -> Result<Self, String> {
        let dir = tempfile::Builder::new().prefix("phoenix-").tempdir().expect("a temporary directory for Phoenix");
        let (http_port, grpc_port) = free_ports();
        let stdout = File::create(dir.path().join("stdout.log")).unwrap();
        let stderr = File::create(dir.path().join("stderr.log")).unwrap();
        let mut command = Command::new(python);
        command.arg(workspace().join("tests/support/phoenix_serve.py")).arg(dir.path());
        // Only what is set here configures it, whatever the test process inherited.
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("PHOENIX_") {
                command.env_remove(name);
            }
        }
        command
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", http_port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_SQL_DATABASE_URL", format!("sqlite:///{}", dir.path().join("phoenix.db").display()))
            // No analytics pixels, web fonts or downloads: the tests reach nothing outside.
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            // Its migrations would otherwise print every SQL statement (hundreds of kilobytes).
            .env("PHOENIX_LOG_MIGRATIONS", "false")
            // So that the stderr shown on a failure is complete up to the failure.
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::piped())
            .stdout(stdout)
            .stderr(stderr);
        let mut child = command.spawn().unwrap_or_else(|e| panic!("could not start Phoenix with {python}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let mut phoenix = Self { child, _stdin: stdin, http_port, grpc_port, version: String::new(), dir };
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = phoenix.child.try_wait().unwrap() {
                let stderr = phoenix.stderr_tail();
                if stderr.contains("Failed to bind") || stderr.contains("address already in use") {
                    return Err(stderr);
                }
                panic!("Phoenix exited ({status}) before it was ready; the end of its stderr:\n{stderr}");
            }
            if let Some(version) = phoenix.answers() {
                phoenix.version = version;
                return Ok(phoenix);
            }
            assert!(
                Instant::now() <= deadline,
                "Phoenix was not ready on ports {http_port} (HTTP) and {grpc_port} (gRPC) within {} s; the end of its stderr:\n{}",
                START_TIMEOUT.as_secs(),
                phoenix.stderr_tail()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Phoenix's version, once both ports answer: the gRPC server is started before the HTTP
    /// one, but it is checked anyway since spans may go to either.
    fn answers(&self) -> Option<String> {
        let (status, body) = http_get(self.http_port, "/arize_phoenix_version")?;
        (status == 200 && TcpStream::connect(("127.0.0.1", self.grpc_port)).is_ok()).then(|| body.trim().to_owned())
    }

    /// The last 60 lines Phoenix wrote on stderr.
    pub fn stderr_tail(&self) -> String {
        let text = fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// The version of Phoenix running, as it reports it.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The base URL of OTLP over HTTP (`http://127.0.0.1:PORT`): exporters send to `/v1/traces`
    /// under it, as with `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub fn otlp_http_endpoint(&self) -> String {
        self.ui_url()
    }

    /// The endpoint of OTLP over gRPC (`http://127.0.0.1:PORT`, without TLS).
    pub fn otlp_grpc_endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.grpc_port)
    }

    /// Phoenix's UI, which also serves its REST API (`/v1`) and GraphQL (`/graphql`).
    pub fn ui_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http_port)
    }

    /// Every span of `project` stored so far (none when the project does not exist yet), in the
    /// order Phoenix stored them, through `GET /v1/projects/{project}/spans`, page by page.
    ///
    /// # Panics
    ///
    /// When Phoenix does not answer, or answers with something else than spans.
    pub async fn spans(&self, project: &str) -> Vec<Value> {
        let mut spans = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut url = reqwest::Url::parse(&self.ui_url()).unwrap();
            url.path_segments_mut().unwrap().extend(["v1", "projects", project, "spans"]);
            url.query_pairs_mut().append_pair("limit", "1000").append_pair("sort", "id").append_pair("order", "asc");
            if let Some(cursor) = &cursor {
                url.query_pairs_mut().append_pair("cursor", cursor);
            }
            let (status, text) = self.get(url.as_str()).await;
            if status == 404 && text.contains("not found") && cursor.is_none() {
                return spans;
            }
            let page: Value = serde_json::from_str(&text)
                .ok()
                .filter(|_| status == 200)
                .unwrap_or_else(|| panic!("Phoenix answered {status} to {url}:\n{text}"));
            let data = page["data"].as_array().unwrap_or_else(|| panic!("Phoenix's spans page has no `data`: {page}"));
            spans.extend(data.iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return spans,
            }
        }
    }

    /// The spans of `project` once `done` holds for them, reading them again every 100 ms.
    ///
    /// # Panics
    ///
    /// When `done` does not hold within `timeout`, showing the spans last read.
    pub async fn wait_for_spans(
        &self,
        project: &str,
        done: impl Fn(&[Value]) -> bool,
        timeout: Duration,
    ) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        loop {
            let spans = self.spans(project).await;
            if done(&spans) {
                return spans;
            }
            assert!(
                Instant::now() <= deadline,
                "the spans awaited did not reach Phoenix's project {project:?} within {timeout:?}; it has {}:\n{}\nthe end of Phoenix's stderr:\n{}",
                spans.len(),
                serde_json::to_string_pretty(&spans).unwrap(),
                self.stderr_tail()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The page of the trace `trace_id` in Phoenix's UI: `/projects/<id>/traces/<trace_id>`, the
    /// project's id (a GraphQL global id) asked of Phoenix's GraphQL API.
    ///
    /// # Panics
    ///
    /// When Phoenix has no such trace (wait for its spans first).
    pub async fn trace_url(&self, trace_id: &str) -> String {
        let query = json!({
            "query": "query ($traceId: String!) { getTraceByOtelId(traceId: $traceId) { project { id } } }",
            "variables": {"traceId": trace_id},
        });
        let response = reqwest::Client::new()
            .post(format!("{}/graphql", self.ui_url()))
            .header("content-type", "application/json")
            .body(query.to_string())
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .unwrap_or_else(|e| panic!("Phoenix's GraphQL API does not answer: {e}"));
        let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
        let Some(project) = answer["data"]["getTraceByOtelId"]["project"]["id"].as_str() else {
            panic!("Phoenix has no trace {trace_id} (wait for its spans before opening it): {answer}");
        };
        format!("{}/projects/{project}/traces/{trace_id}", self.ui_url())
    }

    /// Opens the trace `trace_id` in Phoenix's UI in headless Chromium, waits until the page
    /// shows the trace id and each of `names`, saves a screenshot at `picture` and returns the
    /// page's text. The picture must decode as a PNG of the window's size and not be blank.
    ///
    /// # Panics
    ///
    /// When a name is not shown within 30 seconds (the page's text and its picture as it then
    /// stood are kept), the page's script fails, or the picture is blank.
    pub async fn screenshot_trace(&self, trace_id: &str, names: &[&str], picture: &Path) -> String {
        let url = self.trace_url(trace_id).await;
        let chromium = prepared("GRAPHWRIGHT_TEST_CHROMIUM", "Debian's chromium");
        let node_dir = prepared("GRAPHWRIGHT_TEST_JS_SDK", "playwright-core");
        let mut command = Command::new("node");
        command.arg(workspace().join("tests/support/phoenix_page.mjs")).args([&url, &node_dir, &chromium]);
        command.arg(picture).arg(trace_id).args(names);
        let picture = picture.to_owned();
        let (status, stdout, stderr) =
            tokio::task::spawn_blocking(move || run_bounded(command, PAGE_TIMEOUT, "the Phoenix page check"))
                .await
                .unwrap();
        assert!(
            status.success(),
            "Phoenix's page of trace {trace_id} failed ({status}); see {}:\n{stderr}",
            picture.display()
        );
        check_picture(&picture);
        stdout
    }

    async fn get(&self, url: &str) -> (u16, String) {
        let response =
            reqwest::Client::new().get(url).timeout(Duration::from_secs(10)).send().await.unwrap_or_else(|e| {
                panic!("Phoenix does not answer {url}: {e}\nthe end of its stderr:\n{}", self.stderr_tail())
            });
        let status = response.status().as_u16();
        (status, response.text().await.unwrap_or_default())
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The attribute `key` of a span or an event (the member `attributes` of `item`), by its dotted
/// name: stored under the whole name, or nested in objects at its dots, or any mix of the two.
pub fn attr<'a>(item: &'a Value, key: &str) -> Option<&'a Value> {
    dotted(item.get("attributes")?, key)
}

fn dotted<'a>(object: &'a Value, key: &str) -> Option<&'a Value> {
    let map = object.as_object()?;
    if let Some(value) = map.get(key) {
        return Some(value);
    }
    key.match_indices('.').find_map(|(at, _)| dotted(map.get(&key[..at])?, &key[at + 1..]))
}

/// The one span of `spans` called `name`.
///
/// # Panics
///
/// When there is none or more than one.
pub fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    let found: Vec<&Value> = spans.iter().filter(|span| span["name"] == name).collect();
    match found[..] {
        [span] => span,
        _ => panic!(
            "{} spans are called {name:?} among: {:?}",
            found.len(),
            spans.iter().map(|span| span["name"].as_str().unwrap_or_default()).collect::<Vec<_>>()
        ),
    }
}

/// Runs `command` to its end or until `timeout` (then it is killed and the test fails), and
/// returns its exit status, stdout and stderr. The output goes through files, so a command
/// that writes much cannot block on a full pipe while this waits.
pub fn run_bounded(mut command: Command, timeout: Duration, what: &str) -> (ExitStatus, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    command.stdin(Stdio::null()).stdout(File::create(&out).unwrap()).stderr(File::create(&err).unwrap());
    let mut child = command.spawn().unwrap_or_else(|e| panic!("could not start {what} ({command:?}): {e}"));
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not end within {timeout:?}; its stdout:\n{}\nits stderr:\n{}",
                fs::read_to_string(&out).unwrap_or_default(),
                fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    (status, fs::read_to_string(&out).unwrap_or_default(), fs::read_to_string(&err).unwrap_or_default())
}

/// Checks that `picture` is a PNG of the page's size with something drawn on it: no colour
/// covers nearly all of it, and there are many (text is drawn antialiased).
fn check_picture(picture: &Path) {
    let decoder = png::Decoder::new(BufReader::new(File::open(picture).unwrap()));
    let mut reader = decoder.read_info().unwrap_or_else(|e| panic!("{} is not a PNG: {e}", picture.display()));
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buffer).unwrap();
    assert_eq!((frame.width, frame.height), PAGE_SIZE, "the size of {}", picture.display());
    let channels = frame.color_type.samples();
    let mut colours: HashMap<&[u8], usize> = HashMap::new();
    for pixel in buffer[..frame.buffer_size()].chunks(channels) {
        *colours.entry(&pixel[..3.min(channels)]).or_default() += 1;
    }
    let pixels = (frame.width * frame.height) as usize;
    let commonest = colours.values().max().copied().unwrap_or_default();
    assert!(
        commonest * 100 < pixels * 95 && colours.len() > 100,
        "{} looks blank: {} colours, the commonest on {commonest} of {pixels} pixels",
        picture.display(),
        colours.len()
    );
}

/// `(status, body)` of `GET path` on 127.0.0.1:`port`, or `None` while nothing answers there.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let (head, body) = response.split_once("\r\n\r\n")?;
    let status = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, body.to_owned()))
}

/// Two distinct ports free on loopback when asked (both held until both are found).
fn free_ports() -> (u16, u16) {
    let first = TcpListener::bind("127.0.0.1:0").unwrap();
    let second = TcpListener::bind("127.0.0.1:0").unwrap();
    (first.local_addr().unwrap().port(), second.local_addr().unwrap().port())
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the runtime crate is in the workspace").to_path_buf()
}

fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}
