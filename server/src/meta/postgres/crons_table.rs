//! The crons table in PostgreSQL and the deletes a thread's or an assistant's deletion makes in it,
//! in the same transaction, apart from the crons' operations so that the other records' code can call
//! them.

use crate::error::ApiError;
use graphwright::checkpoint::deadpool_postgres::GenericClient;

/// The crons' table, created beside the others when the records are opened.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS gw_crons (
    cron_id text PRIMARY KEY, assistant_id text NOT NULL, thread_id text, schedule text NOT NULL, timezone text,
    end_ms bigint, payload text NOT NULL, metadata text NOT NULL, enabled boolean NOT NULL,
    on_run_completed text, user_id text, next_run_ms bigint, created_at text NOT NULL, updated_at text NOT NULL);
CREATE INDEX IF NOT EXISTS gw_crons_next ON gw_crons (next_run_ms) WHERE enabled;
CREATE INDEX IF NOT EXISTS gw_crons_thread ON gw_crons (thread_id);
CREATE INDEX IF NOT EXISTS gw_crons_assistant ON gw_crons (assistant_id);
";

/// Deletes the crons of a thread that is being deleted, in the deletion's transaction.
pub(super) async fn delete_thread_crons(client: &impl GenericClient, thread: &str) -> Result<(), ApiError> {
    client.execute("DELETE FROM gw_crons WHERE thread_id = $1", &[&thread]).await?;
    Ok(())
}

/// Deletes the crons of an assistant that is being deleted (LangGraph's server deletes them too).
pub(super) async fn delete_assistant_crons(client: &impl GenericClient, assistant: &str) -> Result<(), ApiError> {
    client.execute("DELETE FROM gw_crons WHERE assistant_id = $1", &[&assistant]).await?;
    Ok(())
}
