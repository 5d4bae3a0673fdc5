//! The PostgreSQL server of the `postgres` feature's tests, and a schema of its own per test.
//!
//! The server is `GRAPHWRIGHT_TEST_POSTGRES`, or `postgres://postgres@127.0.0.1:5432/test`.
//! Each test binary connects to it once, up front: when it cannot, every test that needs it
//! fails at once with one line saying what to start, instead of panicking in a schema's
//! destructor while unwinding from a refused connection (which aborts the whole binary).

use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, NoTls};
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The server's URL when nothing else is named.
const DEFAULT_SERVER: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A schema of its own for one test on the test server, dropped when the test ends.
pub struct TestSchema {
    server: String,
    name: String,
}

impl TestSchema {
    /// Creates `{prefix}_{pid}_{n}` on the server; fails the test with one line when the
    /// server cannot be reached.
    pub fn new(prefix: &str) -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let server = reachable_server();
        let name = format!("{prefix}_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        if let Err(error) = execute(&server, format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}")) {
            panic!("could not create schema `{name}` on {server}: {error}");
        }
        Self { server, name }
    }

    /// The server's URL with this schema as the connections' `search_path`, and its name as
    /// their `application_name`, by which the schema's drop finds them.
    pub fn url(&self) -> String {
        let separator = if self.server.contains('?') { '&' } else { '?' };
        format!("{}{separator}options=-c%20search_path%3D{}&application_name={}", self.server, self.name, self.name)
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        // The test's own connections go first: a task of the test still in a transaction on one
        // of them (a background release, say) holds locks the drop would wait for, and on a
        // single-threaded runtime that task cannot finish while this drop blocks the thread.
        // Best effort: a failure here (the server went away mid-test) must not become a second
        // panic while the test is already unwinding.
        let name = &self.name;
        let _ = execute(
            &self.server,
            format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE application_name = '{name}' AND pid <> pg_backend_pid(); \
                 DROP SCHEMA {name} CASCADE"
            ),
        );
    }
}

/// The test server's URL, once this process has connected to it; otherwise the test fails
/// with the reason and what to do.
fn reachable_server() -> String {
    static SERVER: OnceLock<Result<String, String>> = OnceLock::new();
    let server = SERVER.get_or_init(|| {
        let url = std::env::var("GRAPHWRIGHT_TEST_POSTGRES").unwrap_or_else(|_| DEFAULT_SERVER.to_owned());
        match execute(&url, "SELECT 1".to_owned()) {
            Ok(()) => Ok(url),
            Err(error) => Err(format!(
                "the PostgreSQL tests need a server, and connecting to {url} failed ({error}): \
                 run `scripts/test`, which starts one, or set GRAPHWRIGHT_TEST_POSTGRES to a server's URL"
            )),
        }
    });
    match server {
        Ok(url) => url.clone(),
        Err(line) => panic!("{line}"),
    }
}

/// Runs `sql` on a connection and a thread of its own (callers may be inside a runtime, or in
/// `drop`), giving up on connecting after five seconds.
fn execute(url: &str, sql: String) -> Result<(), String> {
    let mut config = tokio_postgres::Config::from_str(url).map_err(|e| describe(&e))?;
    config.connect_timeout(Duration::from_secs(5));
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| describe(&e))?;
        runtime.block_on(async {
            let (client, connection) = config.connect(NoTls).await.map_err(|e| describe(&e))?;
            tokio::spawn(connection);
            client.batch_execute(&sql).await.map_err(|e| describe(&e))
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the connection thread panicked".to_owned()))
}

/// The error and its causes on one line: tokio-postgres keeps the reason ("Connection
/// refused", "password authentication failed") in the source, not in the message.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        text.push_str(": ");
        text.push_str(&error.to_string());
        cause = error.source();
    }
    text
}
