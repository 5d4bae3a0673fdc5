//! A cron as both databases store and read it, and the SQL they share for it, apart from the
//! crons' operations so that each database's code can read them without depending on those.

use super::columns::parse;
use crate::time;
use serde_json::{Value, json};

/// The columns of `gw_crons`, in the order [`CronRecord::read`] reads them.
pub(crate) const CRON_COLUMNS: &str = "cron_id, assistant_id, thread_id, schedule, timezone, end_ms, payload, metadata, \
     enabled, on_run_completed, user_id, next_run_ms, created_at, updated_at";

/// A stored cron.
#[derive(Clone, Debug)]
pub(crate) struct CronRecord {
    pub(crate) cron_id: String,
    pub(crate) assistant_id: String,
    /// The thread each firing runs on; `None` for a stateless cron (a new thread each time).
    pub(crate) thread_id: Option<String>,
    pub(crate) schedule: String,
    pub(crate) timezone: Option<String>,
    /// No firing after this time.
    pub(crate) end_ms: Option<i64>,
    /// The run request each firing makes.
    pub(crate) payload: Value,
    pub(crate) metadata: Value,
    pub(crate) enabled: bool,
    /// `delete` or `keep`, for a stateless cron's threads; `None` for a thread's cron.
    pub(crate) on_run_completed: Option<String>,
    pub(crate) user_id: Option<String>,
    /// When it fires next; `None` when its schedule has no time left.
    pub(crate) next_run_ms: Option<i64>,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
}

/// A result row of either database, read by position, as crons need it.
pub(crate) trait CronColumns {
    type Error;
    fn text(&self, at: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error>;
    fn maybe_int(&self, at: usize) -> Result<Option<i64>, Self::Error>;
    fn boolean(&self, at: usize) -> Result<bool, Self::Error>;
}

impl CronColumns for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, at: usize) -> rusqlite::Result<String> {
        self.get(at)
    }
    fn maybe_text(&self, at: usize) -> rusqlite::Result<Option<String>> {
        self.get(at)
    }
    fn maybe_int(&self, at: usize) -> rusqlite::Result<Option<i64>> {
        self.get(at)
    }
    fn boolean(&self, at: usize) -> rusqlite::Result<bool> {
        self.get(at)
    }
}

impl CronRecord {
    /// A row of [`CRON_COLUMNS`].
    pub(crate) fn read<R: CronColumns>(row: &R) -> Result<Self, R::Error> {
        Ok(Self {
            cron_id: row.text(0)?,
            assistant_id: row.text(1)?,
            thread_id: row.maybe_text(2)?,
            schedule: row.text(3)?,
            timezone: row.maybe_text(4)?,
            end_ms: row.maybe_int(5)?,
            payload: parse(&row.text(6)?),
            metadata: parse(&row.text(7)?),
            enabled: row.boolean(8)?,
            on_run_completed: row.maybe_text(9)?,
            user_id: row.maybe_text(10)?,
            next_run_ms: row.maybe_int(11)?,
            created_at: row.text(12)?,
            updated_at: row.text(13)?,
        })
    }

    /// The cron as the API shows it (LangGraph's `Cron`).
    pub(crate) fn json(&self) -> Value {
        json!({
            "cron_id": self.cron_id,
            "assistant_id": self.assistant_id,
            "thread_id": self.thread_id,
            "on_run_completed": self.on_run_completed,
            "end_time": self.end_ms.and_then(shown),
            "schedule": self.schedule,
            "timezone": self.timezone,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "user_id": self.user_id,
            "payload": self.payload,
            "next_run_date": self.next_run_ms.and_then(shown),
            "metadata": self.metadata,
            "enabled": self.enabled,
        })
    }
}

/// A time in milliseconds as the API writes times.
fn shown(ms: i64) -> Option<String> {
    u64::try_from(ms).ok().map(time::from_millis)
}

/// The condition, in SQL, of a cron that may fire at the time bound as `now` (`?1` or `$1`):
/// enabled, with a next run time, and not past its end.
pub(crate) fn may_fire(now: &str) -> String {
    format!("enabled AND next_run_ms IS NOT NULL AND (end_ms IS NULL OR (end_ms >= {now} AND next_run_ms <= end_ms))")
}
