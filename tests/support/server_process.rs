//! Server processes for the tests that need several: the test binary run again with only one of
//! its ignored tests, which binds a server, prints `listening on {addr}` and serves until the
//! process is killed.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A server process, killed when dropped.
pub struct ServerProcess(Child);

impl ServerProcess {
    /// Runs this binary's test `test` (its full name, e.g. `on_postgres::server_process`) with
    /// `variable` set to `value`; the process and the address it listens on.
    pub fn start(test: &str, variable: &str, value: &str) -> (Self, String) {
        let mut process = Self::spawn(test, variable, value);
        let stdout = process.0.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let addr = loop {
            match lines.next() {
                Some(Ok(line)) => {
                    // The test harness writes the test's name on the same line first.
                    if let Some((_, addr)) = line.split_once("listening on ") {
                        break addr.trim().to_owned();
                    }
                }
                _ => panic!("a server process ended before it listened"),
            }
        };
        // Keeps reading, so that the process never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        (process, addr)
    }

    /// Runs this binary's test `test` with `variable` set to `value`, without waiting for it
    /// to listen.
    pub fn spawn(test: &str, variable: &str, value: &str) -> Self {
        let exe = std::env::current_exe().unwrap();
        let child = Command::new(exe)
            .args([test, "--exact", "--ignored", "--nocapture", "--test-threads=1"])
            .env(variable, value)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        Self(child)
    }

    /// Whether the process ended within `within` (it is not killed).
    #[allow(dead_code)] // not every test file that starts servers waits for one to end
    pub fn ended_within(&mut self, within: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if matches!(self.0.try_wait(), Ok(Some(_))) {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        false
    }

    /// The process id.
    #[allow(dead_code)] // not every test file that starts servers asks for it
    pub fn id(&self) -> u32 {
        self.0.id()
    }
}

/// `server` on `database`: `postgres:{url}` (feature `postgres`), or a SQLite file's path.
#[allow(dead_code)] // not every test file that starts servers names a database this way
pub fn on_database(server: graphwright_server::Server, database: &str) -> graphwright_server::Server {
    match database.strip_prefix("postgres:") {
        #[cfg(feature = "postgres")]
        Some(url) => server.postgres(url),
        #[cfg(not(feature = "postgres"))]
        Some(_) => panic!("a PostgreSQL server process needs the `postgres` feature"),
        None => server.sqlite(database),
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
