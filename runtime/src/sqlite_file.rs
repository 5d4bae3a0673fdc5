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

#[cfg(test)]
mod tests {
    use super::share;
    use rusqlite::{Connection, ErrorCode};
    use std::time::{Duration, Instant};

    /// A second connection to `path` that holds the file locked (a rollback-journal write
    /// transaction), as a process switching it to WAL or creating tables does.
    fn locker(path: &std::path::Path) -> Connection {
        let holder = Connection::open(path).unwrap();
        holder.execute_batch("CREATE TABLE IF NOT EXISTS t (x); BEGIN EXCLUSIVE;").unwrap();
        holder
    }

    #[test]
    fn a_file_locked_for_all_of_the_wait_is_reported_busy_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.db");
        let _holder = locker(&path);
        let connection = Connection::open(&path).unwrap();
        let started = Instant::now();
        let error = share(&connection, Duration::from_millis(200)).unwrap_err();
        assert_eq!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy), "{error}");
        assert!(started.elapsed() >= Duration::from_millis(200), "it waited for all of `wait`");
    }

    #[test]
    fn a_lock_let_go_within_the_wait_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("let-go.db");
        let holder = locker(&path);
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            holder.execute_batch("COMMIT").unwrap();
        });
        let connection = Connection::open(&path).unwrap();
        share(&connection, Duration::from_secs(5)).unwrap();
        release.join().unwrap();
        let mode: String = connection.pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap();
        assert_eq!(mode, "wal");
    }
}
