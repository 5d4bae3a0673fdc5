//! The versions table in PostgreSQL and the writes an assistant's own writes make to it, in the
//! same transaction, apart from the versions' reads so that the assistants' code can call them.

use crate::error::ApiError;
use crate::meta::version_columns::{CURRENT_COLUMNS, KEPT_COLUMNS};
use graphwright::checkpoint::deadpool_postgres::GenericClient;

/// The versions' table, created beside the others when the records are opened. A database made
/// before versions were kept gets each assistant's current configuration as its one kept
/// version; the same statement restores the current version of an assistant whose creation
/// stopped between its two inserts.
pub(super) fn schema() -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS gw_assistant_versions (
             assistant_id text NOT NULL, version bigint NOT NULL, graph_id text NOT NULL, config text NOT NULL,
             context text NOT NULL, metadata text NOT NULL, name text NOT NULL, description text,
             created_at text NOT NULL, PRIMARY KEY (assistant_id, version));
         INSERT INTO gw_assistant_versions ({KEPT_COLUMNS}) SELECT {CURRENT_COLUMNS} FROM gw_assistants
         ON CONFLICT DO NOTHING;"
    )
}

/// Keeps assistant `id`'s current configuration as the version it has (an update's new
/// version, or a new assistant's first); a version already kept stays as it was.
pub(super) async fn keep_current(client: &impl GenericClient, id: &str) -> Result<(), ApiError> {
    client
        .execute(
            &format!(
                "INSERT INTO gw_assistant_versions ({KEPT_COLUMNS})
                 SELECT {CURRENT_COLUMNS} FROM gw_assistants WHERE assistant_id = $1 ON CONFLICT DO NOTHING"
            ),
            &[&id],
        )
        .await?;
    Ok(())
}

/// Deletes the versions of an assistant that is being deleted, in the deletion's transaction.
pub(super) async fn delete_versions(client: &impl GenericClient, id: &str) -> Result<(), ApiError> {
    client.execute("DELETE FROM gw_assistant_versions WHERE assistant_id = $1", &[&id]).await?;
    Ok(())
}
