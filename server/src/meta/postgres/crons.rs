//! Crons in PostgreSQL, shared by every server process on the database. Each process runs a
//! scheduler; a firing goes to the one whose conditional `UPDATE` moves the cron's next run
//! time on first (`claim_cron`), so no firing runs twice, and none depends on one process.

use super::PgMeta;
use crate::error::ApiError;
use crate::meta::cron_record::{CRON_COLUMNS, CronColumns, CronRecord, may_fire};
use crate::meta::text;
use crate::time;
use graphwright::checkpoint::deadpool_postgres::GenericClient;
use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, Row};

impl CronColumns for Row {
    type Error = tokio_postgres::Error;
    fn text(&self, at: usize) -> Result<String, Self::Error> {
        self.try_get(at)
    }
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error> {
        self.try_get(at)
    }
    fn maybe_int(&self, at: usize) -> Result<Option<i64>, Self::Error> {
        self.try_get(at)
    }
    fn boolean(&self, at: usize) -> Result<bool, Self::Error> {
        self.try_get(at)
    }
}

fn records(rows: &[Row]) -> Result<Vec<CronRecord>, ApiError> {
    Ok(rows.iter().map(CronRecord::read).collect::<Result<_, _>>()?)
}

impl PgMeta {
    pub(crate) async fn create_cron(&self, cron: CronRecord) -> Result<bool, ApiError> {
        let client = self.client().await?;
        let (payload, metadata) = (text(&cron.payload), text(&cron.metadata));
        let n = client
            .execute(
                &format!(
                    "INSERT INTO gw_crons ({CRON_COLUMNS})
                     SELECT $1, $2, $3::text, $4, $5, $6::bigint, $7, $8, $9::boolean, $10, $11, $12::bigint, $13, $13
                     WHERE $3::text IS NULL OR EXISTS (SELECT 1 FROM gw_threads WHERE thread_id = $3::text)"
                ),
                &[
                    &cron.cron_id,
                    &cron.assistant_id,
                    &cron.thread_id,
                    &cron.schedule,
                    &cron.timezone,
                    &cron.end_ms,
                    &payload,
                    &metadata,
                    &cron.enabled,
                    &cron.on_run_completed,
                    &cron.user_id,
                    &cron.next_run_ms,
                    &cron.created_at,
                ],
            )
            .await?;
        Ok(n == 1)
    }

    pub(crate) async fn cron(&self, id: &str) -> Result<Option<CronRecord>, ApiError> {
        cron(&self.client().await?, id).await
    }

    pub(crate) async fn crons(&self) -> Result<Vec<CronRecord>, ApiError> {
        let client = self.client().await?;
        records(&client.query(&format!("SELECT {CRON_COLUMNS} FROM gw_crons ORDER BY created_at DESC"), &[]).await?)
    }

    pub(crate) async fn update_cron(
        &self,
        cron: CronRecord,
        rescheduled: bool,
    ) -> Result<Option<CronRecord>, ApiError> {
        let client = self.client().await?;
        let (payload, metadata) = (text(&cron.payload), text(&cron.metadata));
        client
            .execute(
                "UPDATE gw_crons SET schedule = $2, timezone = $3, end_ms = $4, payload = $5, metadata = $6,
                 enabled = $7, on_run_completed = $8, updated_at = $9,
                 next_run_ms = CASE WHEN $10 THEN $11 ELSE next_run_ms END
                 WHERE cron_id = $1",
                &[
                    &cron.cron_id,
                    &cron.schedule,
                    &cron.timezone,
                    &cron.end_ms,
                    &payload,
                    &metadata,
                    &cron.enabled,
                    &cron.on_run_completed,
                    &time::now(),
                    &rescheduled,
                    &cron.next_run_ms,
                ],
            )
            .await?;
        self::cron(&client, &cron.cron_id).await
    }

    pub(crate) async fn delete_cron(&self, id: &str) -> Result<bool, ApiError> {
        let client = self.client().await?;
        Ok(client.execute("DELETE FROM gw_crons WHERE cron_id = $1", &[&id]).await? == 1)
    }

    pub(crate) async fn due_crons(&self, now_ms: i64) -> Result<Vec<CronRecord>, ApiError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {CRON_COLUMNS} FROM gw_crons WHERE {} AND next_run_ms <= $1 ORDER BY next_run_ms",
                    may_fire("$1")
                ),
                &[&now_ms],
            )
            .await?;
        records(&rows)
    }

    pub(crate) async fn claim_cron(&self, id: &str, due_ms: i64, next_ms: Option<i64>) -> Result<bool, ApiError> {
        let client = self.client().await?;
        // Of two processes claiming one firing, the second waits on the row's lock, then finds
        // `next_run_ms` moved on and updates nothing.
        let n = client
            .execute(
                "UPDATE gw_crons SET next_run_ms = $3 WHERE cron_id = $1 AND next_run_ms = $2 AND enabled",
                &[&id, &due_ms, &next_ms],
            )
            .await?;
        Ok(n == 1)
    }

    pub(crate) async fn next_cron_due(&self, now_ms: i64) -> Result<Option<i64>, ApiError> {
        let client = self.client().await?;
        let row = client
            .query_one(&format!("SELECT MIN(next_run_ms) FROM gw_crons WHERE {}", may_fire("$1")), &[&now_ms])
            .await?;
        Ok(row.try_get(0)?)
    }

    /// Wakes the cron schedulers of every process on the database (this one's too).
    pub(crate) async fn announce_cron_change(&self) -> Result<(), ApiError> {
        let client = self.client().await?;
        client.execute("SELECT pg_notify('gw_runs', 'crons')", &[]).await?;
        Ok(())
    }
}

async fn cron(client: &impl GenericClient, id: &str) -> Result<Option<CronRecord>, ApiError> {
    let row = client.query_opt(&format!("SELECT {CRON_COLUMNS} FROM gw_crons WHERE cron_id = $1"), &[&id]).await?;
    Ok(row.as_ref().map(CronRecord::read).transpose()?)
}
