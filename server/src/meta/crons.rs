//! Crons in the server's records (`gw_crons`, beside assistants, threads and runs): the record,
//! its JSON as clients see it, and the calls the two databases answer.
//!
//! Times a scheduler compares (`next_run_ms`, `end_ms`) are kept as milliseconds since the Unix
//! epoch, so that finding and claiming a due cron is a comparison of integers in SQL; they are
//! written out as RFC 3339 like every other time of the API.

pub(crate) use super::cron_record::CronRecord;

use super::{Db, Meta};
use crate::error::ApiError;
use crate::sealed::Row;

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
