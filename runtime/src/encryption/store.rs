//! [`Encrypted`] as a [`Store`]: each item's value sealed, bound to its namespace and key.

use super::Encrypted;
use crate::store::{Indexing, Item, PutItem, SearchQuery, Store, StoreError};
use base64::Engine as _;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};
use std::time::Duration;

/// The one field of the JSON object an encrypted value is stored as: the backends keep JSON,
/// and an object is JSON for every one of them (PostgreSQL's `jsonb` included).
const SEALED_FIELD: &str = "$graphwright_encrypted";

/// How many items a filtered search reads from the backend at a time: the filter is applied
/// here, to the decrypted values, so the backend pages unfiltered.
const SCAN_PAGE: usize = 256;

/// What an item's ciphertext is bound to: its namespace and key, each label length-prefixed so
/// that no two namespaces give the same bytes.
fn item_aad(namespace: &[&str], key: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(32 + key.len() + namespace.iter().map(|l| l.len() + 4).sum::<usize>());
    aad.extend_from_slice(b"graphwright store item\0");
    for label in namespace {
        aad.extend_from_slice(&u32::try_from(label.len()).unwrap_or(u32::MAX).to_be_bytes());
        aad.extend_from_slice(label.as_bytes());
    }
    aad.push(0);
    aad.extend_from_slice(key.as_bytes());
    aad
}

impl<S: Store> Encrypted<S> {
    fn seal_value(&self, namespace: &[&str], key: &str, value: &Value) -> Result<Value, StoreError> {
        let operation = || format!("encrypted item {key:?} in namespace {namespace:?}");
        let plain = serde_json::to_vec(value).map_err(|e| StoreError::backend(operation(), e))?;
        let sealed =
            self.keys.seal(&plain, &item_aad(namespace, key)).map_err(|e| StoreError::backend(operation(), e))?;
        let text = base64::engine::general_purpose::STANDARD.encode(sealed);
        Ok(Value::Object(Map::from_iter([(SEALED_FIELD.to_owned(), Value::String(text))])))
    }

    /// The item with its value decrypted; an item stored before encryption was turned on is
    /// returned as it is.
    fn open_item(&self, mut item: Item) -> Result<Item, StoreError> {
        let Some(text) = sealed_text(&item.value) else {
            return Ok(item);
        };
        let corrupt = |reason: String| StoreError::Corrupt {
            namespace: item.namespace.join("\u{1f}"),
            key: item.key.clone(),
            field: "value".to_owned(),
            reason,
        };
        let sealed = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| corrupt(format!("the encrypted value is not base64: {e}")))?;
        let labels: Vec<&str> = item.namespace.iter().map(String::as_str).collect();
        let plain = self.keys.open(&sealed, &item_aad(&labels, &item.key)).map_err(corrupt)?;
        item.value =
            serde_json::from_slice(&plain).map_err(|e| corrupt(format!("the decrypted value is not JSON: {e}")))?;
        Ok(item)
    }

    /// A filtered search: the backend's items under `prefix` read page by page without
    /// refreshing them, decrypted, filtered and paged here; the items returned are then read
    /// again with `get`, which refreshes their time to live when the backend refreshes on read,
    /// so a search refreshes what it returns and nothing else, as the backend's own would.
    async fn search_filtered(
        &self,
        prefix: &[&str],
        query: SearchQuery,
        refresh: bool,
    ) -> Result<Vec<Item>, StoreError> {
        let (mut skipped, mut found, mut read) = (0, Vec::new(), 0);
        let wanted = query.limit.unwrap_or(usize::MAX);
        while found.len() < wanted {
            let page = self.inner.search_unrefreshed(prefix, SearchQuery::new().limit(SCAN_PAGE).offset(read)).await?;
            let last = page.len() < SCAN_PAGE;
            read += page.len();
            for item in page {
                let item = self.open_item(item)?;
                if !query.filter.matches(&item.value) {
                    continue;
                }
                if skipped < query.offset {
                    skipped += 1;
                    continue;
                }
                if found.len() < wanted {
                    found.push(item);
                }
            }
            if last {
                break;
            }
        }
        if !refresh {
            return Ok(found);
        }
        let mut refreshed = Vec::with_capacity(found.len());
        for item in found {
            if item.expires_at.is_none() {
                refreshed.push(item);
                continue;
            }
            let labels: Vec<&str> = item.namespace.iter().map(String::as_str).collect();
            // An item that expired or was deleted since it was read is left out, as a search
            // made a moment later would leave it out.
            if let Some(again) = self.inner.get(&labels, &item.key).await? {
                refreshed.push(self.open_item(again)?);
            }
        }
        Ok(refreshed)
    }
}

/// Why an encrypted store does not search by meaning.
fn not_by_meaning() -> StoreError {
    StoreError::InvalidQuery {
        reason: "an encrypted store is not searched by meaning: the vectors an index keeps would reveal what \
                 encryption hides (a text can be largely recovered from its embedding); search it with a filter, \
                 or keep memories to be searched by meaning in a store without encryption"
            .into(),
    }
}

/// The ciphertext of a value stored encrypted: an object whose only field is [`SEALED_FIELD`].
fn sealed_text(value: &Value) -> Option<&str> {
    match value.as_object() {
        Some(object) if object.len() == 1 => object.get(SEALED_FIELD)?.as_str(),
        _ => None,
    }
}

impl<S: Store> Store for Encrypted<S> {
    fn put<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_with(namespace, key, value, ttl, Indexing::AsConfigured)
    }

    /// Puts the sealed value without vectors, whatever the backend's index: vectors of the
    /// plain text would reveal it, and vectors of the ciphertext mean nothing.
    fn put_with<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
        indexing: Indexing,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        if let Indexing::Fields(_) = indexing {
            return async move { Err(not_by_meaning()) }.boxed();
        }
        match self.seal_value(namespace, key, &value) {
            Ok(sealed) => self.inner.put_with(namespace, key, sealed, ttl, Indexing::Off),
            Err(error) => async move { Err(error) }.boxed(),
        }
    }

    /// Seals every value and puts them all without vectors, in one call of the backend.
    fn put_many(&self, items: Vec<PutItem>) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut sealed = Vec::with_capacity(items.len());
        for item in items {
            if let Indexing::Fields(_) = item.indexing {
                return async move { Err(not_by_meaning()) }.boxed();
            }
            match self.seal_value(&item.labels(), &item.key, &item.value) {
                Ok(value) => sealed.push(PutItem { value, indexing: Indexing::Off, ..item }),
                Err(error) => return async move { Err(error) }.boxed(),
            }
        }
        self.inner.put_many(sealed)
    }

    fn get<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        async move { self.inner.get(namespace, key).await?.map(|item| self.open_item(item)).transpose() }.boxed()
    }

    fn delete<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.inner.delete(namespace, key)
    }

    fn search<'a>(&'a self, prefix: &'a [&'a str], query: SearchQuery) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        async move {
            if query.query.is_some() {
                return Err(not_by_meaning());
            }
            if query.filter.is_empty() {
                // Nothing to look at in the values: the backend pages as it would.
                let items = self.inner.search(prefix, query).await?;
                return items.into_iter().map(|item| self.open_item(item)).collect();
            }
            self.search_filtered(prefix, query, true).await
        }
        .boxed()
    }

    fn search_unrefreshed<'a>(
        &'a self,
        prefix: &'a [&'a str],
        query: SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        async move {
            if query.query.is_some() {
                return Err(not_by_meaning());
            }
            if query.filter.is_empty() {
                let items = self.inner.search_unrefreshed(prefix, query).await?;
                return items.into_iter().map(|item| self.open_item(item)).collect();
            }
            self.search_filtered(prefix, query, false).await
        }
        .boxed()
    }

    fn list_namespaces<'a>(
        &'a self,
        prefix: &'a [&'a str],
        max_depth: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Vec<String>>, StoreError>> {
        self.inner.list_namespaces(prefix, max_depth)
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        self.inner.sweep()
    }
}
