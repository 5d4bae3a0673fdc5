//! An assistant's versions in PostgreSQL.

use super::{PgMeta, assistant};
use crate::error::ApiError;
use crate::meta::assistant_json;
use crate::meta::version_columns::{VERSION_COLUMNS, set_latest_sql};
use crate::time;
use graphwright::checkpoint::deadpool_postgres::GenericClient;
use serde_json::Value;

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
