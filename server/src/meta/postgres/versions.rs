//! An assistant's versions in PostgreSQL.

use super::{PgMeta, assistant};
use crate::error::ApiError;
use crate::meta::assistant_json;
use crate::meta::versions::{CURRENT_COLUMNS, KEPT_COLUMNS, VERSION_COLUMNS, set_latest_sql};
use crate::time;
use graphwright::checkpoint::deadpool_postgres::GenericClient;
use serde_json::Value;

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

impl PgMeta {
    pub(crate) async fn assistant_versions(&self, id: &str) -> Result<Vec<Value>, ApiError> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {VERSION_COLUMNS} FROM gw_assistant_versions WHERE assistant_id = $1 ORDER BY version DESC"
                ),
                &[&id],
            )
            .await?;
        Ok(rows.iter().map(assistant_json).collect::<Result<_, _>>()?)
    }

    pub(crate) async fn set_latest_version(&self, id: &str, version: i64) -> Result<Option<Value>, ApiError> {
        let client = self.client().await?;
        let changed = client.execute(&set_latest_sql("$1", "$2", "$3"), &[&id, &version, &time::now()]).await?;
        if changed == 0 {
            return Ok(None);
        }
        assistant(&client, id).await
    }
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
