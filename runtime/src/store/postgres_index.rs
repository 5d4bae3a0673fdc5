//! The PostgreSQL store's vectors: a table beside the items, scored in SQL.
//!
//! Where the pgvector extension is installed when the table is created (and the store has an
//! index, so the size is known), vectors are pgvector's `vector(dims)` with an HNSW index on
//! cosine distance, as LangGraph's store keeps them; elsewhere they are `real[]`, scored
//! exactly by a dot product in SQL. The kind is read back from the table, so processes agree.

use super::StoreError;
use super::index::Embedded;
use crate::checkpoint::pool::DbError;
use deadpool_postgres::Transaction;
use tokio_postgres::types::ToSql;

/// A database error during `operation`, as the store reports it.
pub(super) fn pg(operation: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
    move |e| StoreError::backend(operation.to_owned(), DbError::from(e))
}

/// How the vectors are held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// `real[]`, scored exactly.
    Array,
    /// pgvector's `vector`, scored by its cosine distance through an HNSW index.
    PgVector,
}

/// The table as `Kind::Array`. Rows go with their item (`ON DELETE CASCADE`): a delete or a
/// sweep of items needs no statement of its own for their vectors.
const ARRAY_TABLE: &str = r#"
CREATE TABLE IF NOT EXISTS graphwright_store_vectors (
    namespace text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    position integer NOT NULL,
    field text NOT NULL,
    embedding real[] NOT NULL,
    PRIMARY KEY (namespace, key, position),
    FOREIGN KEY (namespace, key) REFERENCES graphwright_store_items (namespace, key) ON DELETE CASCADE
)"#;

/// Creates the vectors' table if it is missing (with pgvector's type when the extension is
/// installed and `dims` is known), and returns how it holds vectors.
pub(super) async fn set_up(tx: &Transaction<'_>, dims: Option<usize>, op: &str) -> Result<Kind, StoreError> {
    let exists: bool = tx
        .query_one("SELECT to_regclass('graphwright_store_vectors') IS NOT NULL", &[])
        .await
        .and_then(|row| row.try_get(0))
        .map_err(pg(op))?;
    if !exists {
        let pgvector: bool = tx
            .query_one("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'vector')", &[])
            .await
            .and_then(|row| row.try_get(0))
            .map_err(pg(op))?;
        match dims.filter(|_| pgvector) {
            Some(dims) => {
                let table = ARRAY_TABLE.replace("real[]", &format!("vector({dims})"));
                tx.batch_execute(&format!(
                    "{table}; CREATE INDEX IF NOT EXISTS graphwright_store_vectors_hnsw \
                     ON graphwright_store_vectors USING hnsw (embedding vector_cosine_ops)"
                ))
                .await
                .map_err(pg(op))?;
            }
            None => tx.batch_execute(ARRAY_TABLE).await.map_err(pg(op))?,
        }
    }
    let kind: String = tx
        .query_one(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = 'graphwright_store_vectors'::regclass AND attname = 'embedding'",
            &[],
        )
        .await
        .and_then(|row| row.try_get(0))
        .map_err(pg(op))?;
    Ok(if kind.starts_with("vector") { Kind::PgVector } else { Kind::Array })
}

/// pgvector's text form of a vector, which its `vector` type parses.
fn pgvector_text(vector: &[f32]) -> String {
    let numbers: Vec<String> = vector.iter().map(f32::to_string).collect();
    format!("[{}]", numbers.join(","))
}

/// Replaces the vectors of an item.
pub(super) async fn write(
    tx: &Transaction<'_>,
    kind: Kind,
    namespace: &str,
    key: &str,
    embedded: Vec<Embedded>,
    op: &str,
) -> Result<(), StoreError> {
    let delete = tx
        .prepare_cached("DELETE FROM graphwright_store_vectors WHERE namespace = $1 AND key = $2")
        .await
        .map_err(pg(op))?;
    tx.execute(&delete, &[&namespace, &key]).await.map_err(pg(op))?;
    if embedded.is_empty() {
        return Ok(());
    }
    let cast = match kind {
        Kind::Array => "$5::real[]",
        Kind::PgVector => "($5::text)::vector",
    };
    let insert = tx
        .prepare_cached(&format!(
            "INSERT INTO graphwright_store_vectors (namespace, key, position, field, embedding) \
             VALUES ($1, $2, $3, $4, {cast})"
        ))
        .await
        .map_err(pg(op))?;
    for (position, (field, vector)) in embedded.into_iter().enumerate() {
        let position = i32::try_from(position).unwrap_or(i32::MAX);
        let text;
        let embedding: &(dyn ToSql + Sync) = match kind {
            Kind::Array => &vector,
            Kind::PgVector => {
                text = pgvector_text(&vector);
                &text
            }
        };
        tx.execute(&insert, &[&namespace, &key, &position, &field, embedding]).await.map_err(pg(op))?;
    }
    Ok(())
}

/// The query vector as the ranking statement takes it (`$2`).
pub(super) fn query_param(kind: Kind, vector: Vec<f32>) -> Box<dyn ToSql + Sync + Send> {
    match kind {
        Kind::Array => Box::new(vector),
        Kind::PgVector => Box::new(pgvector_text(&vector)),
    }
}

/// The statement ranking live items by their best-matching vector: `$1` the time, `$2` the
/// query, `$3` how many vectors at most (NULL for all), then `$4`..`$6` the prefix and its
/// bounds when `prefixed`. It selects the item's columns in the order the store reads them
/// (`item_row`), then its score.
pub(super) fn ranking_sql(kind: Kind, prefixed: bool) -> String {
    let under = if prefixed { "WHERE v.namespace = $4 OR (v.namespace >= $5 AND v.namespace < $6)" } else { "" };
    let (score, order) = match kind {
        // Both vectors are unit: their dot product is their cosine similarity.
        Kind::Array => ("(SELECT sum(a::float8 * b) FROM unnest(v.embedding, $2::real[]) AS t(a, b))", "score DESC"),
        Kind::PgVector => ("1 - (v.embedding <=> ($2::text)::vector)", "v.embedding <=> ($2::text)::vector"),
    };
    format!(
        "WITH nearest AS (SELECT v.namespace, v.key, {score} AS score FROM graphwright_store_vectors v {under} \
           ORDER BY {order} LIMIT $3), \
         best AS (SELECT namespace, key, max(score) AS score FROM nearest GROUP BY namespace, key) \
         SELECT i.namespace, i.key, i.value, i.created_at_ms, i.updated_at_ms, i.expires_at_ms, i.ttl_ms, b.score \
         FROM best b JOIN graphwright_store_items i ON i.namespace = b.namespace AND i.key = b.key \
         WHERE (i.expires_at_ms IS NULL OR i.expires_at_ms > $1) \
         ORDER BY b.score DESC, i.namespace, i.key"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ranking_selects_the_items_columns_then_the_score() {
        let sql = ranking_sql(Kind::Array, true);
        assert!(sql.contains("i.ttl_ms, b.score FROM best b"), "{sql}");
        assert!(sql.contains("unnest(v.embedding, $2::real[])") && sql.contains("v.namespace >= $5"), "{sql}");
        let sql = ranking_sql(Kind::PgVector, false);
        assert!(sql.contains("ORDER BY v.embedding <=> ($2::text)::vector LIMIT $3") && !sql.contains("$4"), "{sql}");
        assert_eq!(pgvector_text(&[0.5, -1.0]), "[0.5,-1]");
    }
}
