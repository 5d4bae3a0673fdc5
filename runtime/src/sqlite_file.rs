//! How graphwright sets up a connection to a SQLite file that other connections, in this
//! process or others, may open at the same moment.

use rusqlite::{Connection, ErrorCode};
use std::time::{Duration, Instant};

/// Sets `connection` up to share its file: it waits up to `wait` for a lock another
/// connection holds, and puts the file in write-ahead-log mode so readers and one writer go on
/// together.
///
/// [`SqliteSaver`](crate::SqliteSaver) and `SqliteStore` call this when they open a file; a
/// crate that keeps tables of its own beside theirs can call it on its own connection.
/// SQLite answers a switch to write-ahead logging that races another connection's switch or
/// schema change with "database is locked" at once, whatever the busy timeout, so the switch
/// is tried again, with growing pauses, until `wait` is spent.
///
/// # Errors
/// The SQLite error of the last try: `DatabaseBusy` when the file stayed locked for all of
/// `wait`, or any other error at once.
///
/// # Examples
/// ```
/// let dir = tempfile::tempdir()?;
/// let connection = rusqlite::Connection::open(dir.path().join("shared.db"))?;
/// graphwright::sqlite_file::share(&connection, std::time::Duration::from_secs(5))?;
/// let mode: String = connection.pragma_query_value(None, "journal_mode", |row| row.get(0))?;
/// assert_eq!(mode, "wal");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn share(connection: &Connection, wait: Duration) -> rusqlite::Result<()> {
    connection.busy_timeout(wait)?;
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        match connection.pragma_update(None, "journal_mode", "WAL") {
            Err(e) if e.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) && Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}
