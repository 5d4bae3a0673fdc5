//! The SQLite store's vectors: kept in their own table, scored from a copy held in memory.
//!
//! Scoring reads every vector under the prefix. Read from the file, 100,000 vectors of 384
//! numbers are 150 MB of pages per search; held in memory they are scored in a few
//! milliseconds. The copy is loaded by the first search and kept in step by this store's own
//! writes; a counter in `graphwright_meta`, bumped by every write to the table in the same
//! transaction, tells a search when another connection (another process) has changed it, and
//! the copy is then loaded again.

use super::error::StoreError;
use super::index::Embedded;
use super::index::arena::{Arena, Ranking, Span};
use super::index::vector;
use super::namespace::Address;
use rusqlite::{Transaction, params};
use std::collections::BTreeMap;

/// The vectors' table, and the counter of its changes.
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS store_vectors (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    position INTEGER NOT NULL,
    field TEXT NOT NULL,
    embedding BLOB NOT NULL,
    PRIMARY KEY (namespace, key, position)
) WITHOUT ROWID;
INSERT OR IGNORE INTO graphwright_meta (key, value) VALUES ('store_vectors_version', 0);
";

/// The vectors of the table as of one version of it.
#[derive(Debug, Default)]
pub(super) struct VectorCache {
    /// The table's version the copy holds; `None` until loaded.
    version: Option<i64>,
    spans: BTreeMap<Address, Span>,
    arena: Arena,
}

fn sql(operation: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::backend(operation.to_owned(), e)
}

/// The table's version, bumped; returns the new one.
fn bump(tx: &Transaction<'_>, op: &str) -> Result<i64, StoreError> {
    tx.query_row(
        "UPDATE graphwright_meta SET value = value + 1 WHERE key = 'store_vectors_version' RETURNING value",
        [],
        |r| r.get(0),
    )
    .map_err(sql(op))
}

impl VectorCache {
    /// Applies a change made at table version `version` to the copy, if it held the version just
    /// before it; otherwise the copy is out of date anyway and is loaded again by the next search.
    fn apply(&mut self, version: i64, change: Change) {
        if self.version != Some(version - 1) {
            self.version = None;
            return;
        }
        self.version = Some(version);
        let gone = match change {
            Change::Set(address, vectors) if vectors.is_empty() => vec![self.spans.remove(&address)],
            Change::Set(address, vectors) => {
                let span = self.arena.push(&vectors);
                vec![self.spans.insert(address, span)]
            }
            Change::Remove(addresses) => addresses.iter().map(|address| self.spans.remove(address)).collect(),
        };
        for span in gone.into_iter().flatten() {
            self.arena.free(span);
        }
        if self.arena.wasteful() {
            self.arena.compact(self.spans.values_mut());
        }
    }

    /// Loads the copy again if the table changed since it was taken.
    fn refresh(&mut self, tx: &Transaction<'_>, dims: usize, op: &str) -> Result<(), StoreError> {
        let version: i64 = tx
            .query_row("SELECT value FROM graphwright_meta WHERE key = 'store_vectors_version'", [], |r| r.get(0))
            .map_err(sql(op))?;
        if self.version == Some(version) {
            return Ok(());
        }
        let mut arena = Arena::new(dims);
        let mut spans = BTreeMap::new();
        let mut statement = tx
            .prepare_cached("SELECT namespace, key, embedding FROM store_vectors ORDER BY namespace, key, position")
            .map_err(sql(op))?;
        let mut rows = statement.query([]).map_err(sql(op))?;
        // An item's rows come together: its vectors are gathered, then stored side by side.
        let mut item: Option<(Address, Vec<Vec<f32>>)> = None;
        while let Some(row) = rows.next().map_err(sql(op))? {
            let (namespace, key): (String, String) = (row.get(0).map_err(sql(op))?, row.get(1).map_err(sql(op))?);
            let bytes: Vec<u8> = row.get(2).map_err(sql(op))?;
            let vector = vector::from_bytes(&bytes, dims).map_err(|reason| StoreError::Corrupt {
                namespace: namespace.clone(),
                key: key.clone(),
                field: "embedding".into(),
                reason: format!(
                    "{reason}; the index's dims may have changed since it was stored: put the item again to \
                     embed it anew"
                ),
            })?;
            match &mut item {
                Some((address, vectors)) if address.0 == namespace && address.1 == key => vectors.push(vector),
                _ => {
                    if let Some((address, vectors)) = item.replace(((namespace, key), vec![vector])) {
                        spans.insert(address, arena.push(&vectors));
                    }
                }
            }
        }
        if let Some((address, vectors)) = item {
            spans.insert(address, arena.push(&vectors));
        }
        *self = Self { version: Some(version), spans, arena };
        Ok(())
    }
}

/// The changes to the copy that a committed write brings, applied once the commit succeeded.
#[must_use]
pub(super) struct Pending(Vec<(i64, Change)>);

enum Change {
    Set(Address, Vec<Vec<f32>>),
    Remove(Vec<Address>),
}

impl Pending {
    /// Nothing to change.
    pub(super) fn none() -> Self {
        Self(Vec::new())
    }

    /// These changes, then `later`'s.
    pub(super) fn and(mut self, later: Self) -> Self {
        self.0.extend(later.0);
        self
    }

    /// Brings the copy in step with the committed write.
    pub(super) fn apply(self, cache: &mut VectorCache) {
        for (version, change) in self.0 {
            cache.apply(version, change);
        }
    }
}

/// Replaces the vectors of an item in `tx`. With `indexed` false (a store without an index),
/// only vectors left from an earlier index are deleted.
pub(super) fn write(
    tx: &Transaction<'_>,
    namespace: &str,
    key: &str,
    embedded: Vec<Embedded>,
    indexed: bool,
    op: &str,
) -> Result<Pending, StoreError> {
    let deleted = tx
        .execute("DELETE FROM store_vectors WHERE namespace = ?1 AND key = ?2", params![namespace, key])
        .map_err(sql(op))?;
    if !indexed && deleted == 0 {
        return Ok(Pending::none());
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO store_vectors (namespace, key, position, field, embedding) VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(sql(op))?;
    let mut vectors = Vec::with_capacity(embedded.len());
    for (position, (field, vector)) in embedded.into_iter().enumerate() {
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        insert.execute(params![namespace, key, position, field, vector::to_bytes(&vector)]).map_err(sql(op))?;
        vectors.push(vector);
    }
    if deleted == 0 && vectors.is_empty() {
        return Ok(Pending::none());
    }
    let version = bump(tx, op)?;
    Ok(Pending(vec![(version, Change::Set((namespace.to_owned(), key.to_owned()), vectors))]))
}

/// Deletes the vectors of the items that expired by `now`, before the items themselves go.
pub(super) fn sweep(tx: &Transaction<'_>, now: i64, op: &str) -> Result<Pending, StoreError> {
    let mut statement = tx
        .prepare_cached(
            "DELETE FROM store_vectors WHERE (namespace, key) IN \
             (SELECT namespace, key FROM store_items WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1) \
             RETURNING namespace, key",
        )
        .map_err(sql(op))?;
    let removed = statement
        .query_map([now], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .map_err(sql(op))?
        .collect::<Result<Vec<Address>, _>>()
        .map_err(sql(op))?;
    if removed.is_empty() {
        return Ok(Pending::none());
    }
    let version = bump(tx, op)?;
    Ok(Pending(vec![(version, Change::Remove(removed))]))
}

impl VectorCache {
    /// The addresses under `prefix` that have vectors, best match for `wanted` first (the copy
    /// brought up to date first), sorting `batch` more at a time as they are taken.
    pub(super) fn ranking<'c>(
        &'c mut self,
        tx: &Transaction<'_>,
        dims: usize,
        wanted: Vec<f32>,
        prefix: &str,
        batch: usize,
        op: &str,
    ) -> Result<impl Iterator<Item = (f32, &'c Address)> + 'c, StoreError> {
        self.refresh(tx, dims, op)?;
        let (addresses, spans): (Vec<&Address>, Vec<Span>) = super::namespace::prefix_ranges(prefix)
            .into_iter()
            .flat_map(|range| self.spans.range(range))
            .map(|(address, span)| (address, *span))
            .unzip();
        Ok(Ranking::new(&self.arena, wanted, spans, batch).map(move |(score, at)| (score, addresses[at])))
    }
}
