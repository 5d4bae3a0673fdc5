//! Crons in SQLite.

use super::SqliteMeta;
use crate::error::ApiError;
use crate::meta::cron_record::{CRON_COLUMNS, CronRecord, may_fire};
use crate::meta::text;
use crate::time;
use rusqlite::{Connection, OptionalExtension, params};

impl SqliteMeta {
    pub(crate) async fn create_cron(&self, cron: CronRecord) -> Result<bool, ApiError> {
        self.call(move |conn| {
            let n = conn.execute(
                &format!(
                    "INSERT INTO gw_crons ({CRON_COLUMNS})
                     SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13
                     WHERE ?3 IS NULL OR EXISTS (SELECT 1 FROM gw_threads WHERE thread_id = ?3)"
                ),
                params![
                    cron.cron_id,
                    cron.assistant_id,
                    cron.thread_id,
                    cron.schedule,
                    cron.timezone,
                    cron.end_ms,
                    text(&cron.payload),
                    text(&cron.metadata),
                    cron.enabled,
                    cron.on_run_completed,
                    cron.user_id,
                    cron.next_run_ms,
                    cron.created_at,
                ],
            )?;
            Ok(n == 1)
        })
        .await
    }

    pub(crate) async fn cron(&self, id: &str) -> Result<Option<CronRecord>, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| Ok(cron(conn, &id)?)).await
    }

    pub(crate) async fn crons(&self) -> Result<Vec<CronRecord>, ApiError> {
        self.call(|conn| {
            let mut stmt = conn.prepare(&format!("SELECT {CRON_COLUMNS} FROM gw_crons ORDER BY created_at DESC"))?;
            Ok(stmt.query_map([], |r| CronRecord::read(r))?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(crate) async fn update_cron(
        &self,
        cron: CronRecord,
        rescheduled: bool,
    ) -> Result<Option<CronRecord>, ApiError> {
        self.call(move |conn| {
            conn.execute(
                "UPDATE gw_crons SET schedule = ?2, timezone = ?3, end_ms = ?4, payload = ?5, metadata = ?6,
                 enabled = ?7, on_run_completed = ?8, updated_at = ?9,
                 next_run_ms = CASE WHEN ?10 THEN ?11 ELSE next_run_ms END
                 WHERE cron_id = ?1",
                params![
                    cron.cron_id,
                    cron.schedule,
                    cron.timezone,
                    cron.end_ms,
                    text(&cron.payload),
                    text(&cron.metadata),
                    cron.enabled,
                    cron.on_run_completed,
                    time::now(),
                    rescheduled,
                    cron.next_run_ms,
                ],
            )?;
            Ok(self::cron(conn, &cron.cron_id)?)
        })
        .await
    }

    pub(crate) async fn delete_cron(&self, id: &str) -> Result<bool, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| Ok(conn.execute("DELETE FROM gw_crons WHERE cron_id = ?1", [id])? == 1)).await
    }

    pub(crate) async fn due_crons(&self, now_ms: i64) -> Result<Vec<CronRecord>, ApiError> {
        self.call(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {CRON_COLUMNS} FROM gw_crons WHERE {} AND next_run_ms <= ?1 ORDER BY next_run_ms",
                may_fire("?1")
            ))?;
            Ok(stmt.query_map([now_ms], |r| CronRecord::read(r))?.collect::<rusqlite::Result<_>>()?)
        })
        .await
    }

    pub(crate) async fn claim_cron(&self, id: &str, due_ms: i64, next_ms: Option<i64>) -> Result<bool, ApiError> {
        let id = id.to_owned();
        self.call(move |conn| {
            let n = conn.execute(
                "UPDATE gw_crons SET next_run_ms = ?3 WHERE cron_id = ?1 AND next_run_ms = ?2 AND enabled",
                params![id, due_ms, next_ms],
            )?;
            Ok(n == 1)
        })
        .await
    }

    pub(crate) async fn next_cron_due(&self, now_ms: i64) -> Result<Option<i64>, ApiError> {
        self.call(move |conn| {
            let next = conn.query_row(
                &format!("SELECT MIN(next_run_ms) FROM gw_crons WHERE {}", may_fire("?1")),
                [now_ms],
                |r| r.get(0),
            )?;
            Ok(next)
        })
        .await
    }
}

fn cron(conn: &Connection, id: &str) -> rusqlite::Result<Option<CronRecord>> {
    conn.query_row(&format!("SELECT {CRON_COLUMNS} FROM gw_crons WHERE cron_id = ?1"), [id], |r| CronRecord::read(r))
        .optional()
}
