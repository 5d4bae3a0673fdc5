//! Crons in the server's records (`gw_crons`, beside assistants, threads and runs): the record,
//! its JSON as clients see it, and the calls the two databases answer.
//!
//! Times a scheduler compares (`next_run_ms`, `end_ms`) are kept as milliseconds since the Unix
//! epoch, so that finding and claiming a due cron is a comparison of integers in SQL; they are
//! written out as RFC 3339 like every other time of the API.

use super::{Db, Meta, parse};
use crate::error::ApiError;
use crate::sealed::Row;
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

impl Meta {
    /// A cron with its run request sealed as it is to be stored.
    fn seal_cron(&self, mut cron: CronRecord) -> Result<CronRecord, ApiError> {
        cron.payload = self.sealer().seal(std::mem::take(&mut cron.payload), Row::cron(&cron.cron_id), "payload")?;
        Ok(cron)
    }

    /// A cron as read, its run request opened.
    fn open_cron(&self, mut cron: CronRecord) -> Result<CronRecord, ApiError> {
        cron.payload = self.sealer().open(std::mem::take(&mut cron.payload), Row::cron(&cron.cron_id), "payload")?;
        Ok(cron)
    }

    /// Adds a cron. A thread's cron is added only if its thread exists (checked in the same
    /// statement, so a thread deleted meanwhile leaves no cron behind): `false` if it does not.
    pub(crate) async fn create_cron(&self, cron: CronRecord) -> Result<bool, ApiError> {
        let cron = self.seal_cron(cron)?;
        on_backend!(self, db => db.create_cron(cron).await)
    }

    pub(crate) async fn cron(&self, id: &str) -> Result<Option<CronRecord>, ApiError> {
        let cron = on_backend!(self, db => db.cron(id).await)?;
        cron.map(|c| self.open_cron(c)).transpose()
    }

    /// Every cron, newest first.
    pub(crate) async fn crons(&self) -> Result<Vec<CronRecord>, ApiError> {
        let crons = on_backend!(self, db => db.crons().await)?;
        crons.into_iter().map(|c| self.open_cron(c)).collect()
    }

    /// Replaces a cron's schedule, time zone, end, payload, metadata, `enabled` and
    /// `on_run_completed` with `cron`'s; its next run time too when `rescheduled` (otherwise a
    /// firing claimed meanwhile keeps the time it moved on to). The cron as it now is.
    pub(crate) async fn update_cron(
        &self,
        cron: CronRecord,
        rescheduled: bool,
    ) -> Result<Option<CronRecord>, ApiError> {
        let cron = self.seal_cron(cron)?;
        let cron = on_backend!(self, db => db.update_cron(cron, rescheduled).await)?;
        cron.map(|c| self.open_cron(c)).transpose()
    }

    /// Deletes a cron; whether it existed.
    pub(crate) async fn delete_cron(&self, id: &str) -> Result<bool, ApiError> {
        on_backend!(self, db => db.delete_cron(id).await)
    }

    /// The crons due at `now_ms`: enabled, their next run time reached, their end not passed.
    pub(crate) async fn due_crons(&self, now_ms: i64) -> Result<Vec<CronRecord>, ApiError> {
        let crons = on_backend!(self, db => db.due_crons(now_ms).await)?;
        crons.into_iter().map(|c| self.open_cron(c)).collect()
    }

    /// Claims the firing of cron `id` at `due_ms` by moving its next run time to `next_ms`, in
    /// one conditional statement: of several processes claiming the same firing, exactly one
    /// gets `true`.
    pub(crate) async fn claim_cron(&self, id: &str, due_ms: i64, next_ms: Option<i64>) -> Result<bool, ApiError> {
        on_backend!(self, db => db.claim_cron(id, due_ms, next_ms).await)
    }

    /// The earliest time a cron may fire after `now_ms` (or before: one is due); `None` when no
    /// cron will fire.
    pub(crate) async fn next_cron_due(&self, now_ms: i64) -> Result<Option<i64>, ApiError> {
        on_backend!(self, db => db.next_cron_due(now_ms).await)
    }

    /// Tells every server process sharing the records that crons changed (PostgreSQL); nothing
    /// to do for a single process.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))] // awaits only with PostgreSQL
    pub(crate) async fn announce_cron_change(&self) -> Result<(), ApiError> {
        match self.db() {
            Db::Sqlite(_) => Ok(()),
            #[cfg(feature = "postgres")]
            Db::Postgres(db) => db.announce_cron_change().await,
        }
    }
}

/// The condition, in SQL, of a cron that may fire at the time bound as `now` (`?1` or `$1`):
/// enabled, with a next run time, and not past its end.
pub(crate) fn may_fire(now: &str) -> String {
    format!("enabled AND next_run_ms IS NOT NULL AND (end_ms IS NULL OR (end_ms >= {now} AND next_run_ms <= end_ms))")
}
