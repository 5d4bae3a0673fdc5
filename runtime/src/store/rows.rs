//! What the backends share when reading items back: a search's page and the decoding of a
//! database row.

use super::error::StoreError;
use super::item::{Item, SearchQuery};
use super::namespace::decode_namespace;
use super::time::{MAX_TIME_MS, time_of};
use serde_json::Value;
/// A search's page, gathered from live items in key order: those the filter matches, after
/// skipping the query's offset, at most its limit.
pub(crate) struct Page<'q> {
    query: &'q SearchQuery,
    skipped: usize,
    pub(crate) found: Vec<Stored>,
}

impl<'q> Page<'q> {
    pub(crate) fn new(query: &'q SearchQuery) -> Self {
        Self { query, skipped: 0, found: Vec::new() }
    }

    /// Whether the page holds as many items as the query asks for.
    pub(crate) fn full(&self) -> bool {
        self.query.limit.is_some_and(|limit| self.found.len() >= limit)
    }

    /// How many more items the page takes.
    pub(crate) fn wanted(&self) -> usize {
        self.query.limit.map_or(usize::MAX, |limit| limit.saturating_sub(self.found.len()))
    }

    /// Takes `stored` into the page if the filter matches it and the offset is used up.
    pub(crate) fn offer(&mut self, stored: Stored) {
        if !self.query.filter.matches(&stored.item.value) {
            return;
        }
        if self.skipped < self.query.offset {
            self.skipped += 1;
            return;
        }
        self.found.push(stored);
    }
}

/// One row as stored, before it becomes an [`Item`].
pub(crate) struct Stored {
    pub(crate) namespace: String,
    pub(crate) item: Item,
    pub(crate) ttl_ms: Option<u64>,
}

/// An item row as a database returned it, column by column: each a value (`None` for NULL) or
/// why it could not be read. The columns are those the backends select, in their order.
pub(crate) struct RawItem {
    pub(crate) namespace: Result<Option<String>, String>,
    pub(crate) key: Result<Option<String>, String>,
    pub(crate) value: Result<Option<String>, String>,
    /// `created_at_ms`, `updated_at_ms`, `expires_at_ms`, `ttl_ms`.
    pub(crate) times: [Result<Option<i64>, String>; 4],
}

impl RawItem {
    /// The item, or [`StoreError::Corrupt`] naming the column that does not hold what it should.
    pub(crate) fn decode(self) -> Result<Stored, StoreError> {
        let shown = |column: &Result<Option<String>, String>| {
            column.clone().ok().flatten().unwrap_or_else(|| "<unreadable>".to_owned())
        };
        let (namespace, key) = (shown(&self.namespace), shown(&self.key));
        let corrupt = |field: &str, reason: String| StoreError::Corrupt {
            namespace: namespace.clone(),
            key: key.clone(),
            field: field.to_owned(),
            reason,
        };
        let required = |column: Result<Option<String>, String>, field: &str| match column {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(corrupt(field, "it is NULL".into())),
            Err(e) => Err(corrupt(field, e)),
        };
        required(self.namespace, "namespace")?;
        required(self.key, "key")?;
        let Some(labels) = decode_namespace(&namespace) else {
            return Err(corrupt("namespace", "it has an empty label".into()));
        };
        let value = serde_json::from_str::<Value>(&required(self.value, "value")?)
            .map_err(|e| corrupt("value", format!("not JSON: {e}")))?;
        let [created, updated, expires, ttl] = self.times;
        let time = |column: Result<Option<i64>, String>, field: &str| -> Result<Option<u64>, StoreError> {
            match column {
                Ok(None) => Ok(None),
                Ok(Some(ms)) => match u64::try_from(ms) {
                    Ok(ms) if ms <= MAX_TIME_MS => Ok(Some(ms)),
                    _ => Err(corrupt(
                        field,
                        format!("{ms} is not a time in milliseconds since 1970 before the year 10000"),
                    )),
                },
                Err(e) => Err(corrupt(field, e)),
            }
        };
        let required_time =
            |column, field: &str| time(column, field)?.ok_or_else(|| corrupt(field, "it is NULL".into()));
        let created = required_time(created, "created_at_ms")?;
        let updated = required_time(updated, "updated_at_ms")?;
        let expires = time(expires, "expires_at_ms")?;
        let ttl_ms = time(ttl, "ttl_ms")?;
        Ok(Stored {
            item: Item {
                namespace: labels,
                key,
                value,
                created_at: time_of(created),
                updated_at: time_of(updated),
                expires_at: expires.map(time_of),
                score: None,
            },
            namespace,
            ttl_ms,
        })
    }
}
