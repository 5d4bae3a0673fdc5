//! A store's index for search by meaning: which fields of a value are embedded, by which model,
//! and how vectors are compared.

pub(crate) mod arena;
mod path;
pub(crate) mod vector;

use super::StoreError;
use crate::model::Embeddings;
use path::FieldPath;
use serde_json::Value;
use std::sync::Arc;

/// What a store embeds, and with which model, so that [`SearchQuery::query`] ranks items by
/// meaning (LangGraph's `IndexConfig`).
///
/// `fields` are paths into each stored value (LangGraph's syntax): `$` for the whole value (the
/// default), `text`, `profile.summary`, `notes[*].text`, `notes[-1]`, `{title,body}`. Every text
/// they find is embedded on [`put`](super::Store::put), and an item scores as its best-matching
/// text. Vectors must have `dims` numbers; the stores keep them normalised, so a score is the
/// cosine similarity of the query and the text, from -1 to 1.
///
/// ```
/// use graphwright::model::OpenAiEmbeddings;
/// use graphwright::store::{IndexConfig, InMemoryStore, StoreOptions};
///
/// let embed = OpenAiEmbeddings::new("text-embedding-3-small");
/// let index = IndexConfig::new(embed, 1536).fields(["text", "tags[*]"])?;
/// let store = InMemoryStore::with_options(StoreOptions::new().index(index));
/// # let _ = store;
/// # Ok::<(), graphwright::store::StoreError>(())
/// ```
///
/// [`SearchQuery::query`]: super::SearchQuery::query
#[derive(Clone)]
pub struct IndexConfig {
    embed: Arc<dyn Embeddings>,
    dims: usize,
    fields: Vec<FieldPath>,
}

impl std::fmt::Debug for IndexConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexConfig")
            .field("dims", &self.dims)
            .field("fields", &self.field_names())
            .finish_non_exhaustive()
    }
}

/// Which fields one [`put`](super::Store::put_with) embeds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Indexing {
    /// The fields of the store's [`IndexConfig`] (nothing for a store without one).
    #[default]
    AsConfigured,
    /// None: the item is stored without vectors, and a search by meaning ranks it after every
    /// item that has some (LangGraph's `index=False`).
    Off,
    /// These paths instead of the configured ones (LangGraph's `index=[..]`); the store needs
    /// an index (for its model).
    Fields(Vec<String>),
}

impl IndexConfig {
    /// An index embedding whole values (`$`) with `embed`, whose vectors have `dims` numbers.
    #[must_use]
    pub fn new(embed: impl Embeddings, dims: usize) -> Self {
        Self::shared(Arc::new(embed), dims)
    }

    /// [`new`](Self::new) with a model already shared (by a server's stores, say).
    #[must_use]
    pub fn shared(embed: Arc<dyn Embeddings>, dims: usize) -> Self {
        Self { embed, dims, fields: vec![FieldPath::parse("$").unwrap_or_else(|_| unreachable!("`$` is a path"))] }
    }

    /// Embeds the texts at `fields` instead of the whole value. A malformed path is
    /// [`StoreError::InvalidIndex`], saying what is wrong with it.
    pub fn fields<I, S>(mut self, fields: I) -> Result<Self, StoreError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.fields = parse_fields(fields)?;
        if self.fields.is_empty() {
            return Err(StoreError::InvalidIndex {
                reason: "it names no fields: give at least one path, or `$` for the whole value".into(),
            });
        }
        Ok(self)
    }

    /// How many numbers each vector has.
    #[must_use]
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The paths embedded, as written.
    #[must_use]
    pub fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(FieldPath::as_str).collect()
    }

    /// The model that embeds stored texts and queries.
    #[must_use]
    pub fn embeddings(&self) -> &Arc<dyn Embeddings> {
        &self.embed
    }

    /// The normalised vector of a search query.
    pub(crate) async fn query_vector(&self, query: &str) -> Result<Vec<f32>, StoreError> {
        // The query's length, not its text: the error may reach a server's log, and what a
        // user searched for is theirs (the capture policy's rule for spans, kept here too).
        let vector = self.embed.embed_query(query).await.map_err(|source| StoreError::Embedding {
            what: format!("the search query ({} characters)", query.chars().count()),
            source,
        })?;
        self.checked(vector, "the search query")
    }

    /// Checks a vector's length and normalises it.
    fn checked(&self, mut vector: Vec<f32>, what: &str) -> Result<Vec<f32>, StoreError> {
        if vector.len() != self.dims {
            return Err(StoreError::InvalidIndex {
                reason: format!(
                    "the model gave {what} a vector of {} numbers, but the index was configured with dims = {}: \
                     set dims to the model's size (or ask the model for {} dimensions)",
                    vector.len(),
                    self.dims,
                    self.dims
                ),
            });
        }
        if vector.iter().any(|x| !x.is_finite()) {
            return Err(StoreError::InvalidIndex {
                reason: format!("the model gave {what} a vector holding NaN or infinity"),
            });
        }
        vector::normalize(&mut vector);
        Ok(vector)
    }
}

/// One embedded text of an item: the path it was found at, and its normalised vector.
pub(crate) type Embedded = (String, Vec<f32>);

/// The vectors of each of `items` (value, indexing, key), in order, with one call of the
/// model for all their texts (which batches them as it must).
pub(crate) async fn vectors_for_many(
    index: Option<&IndexConfig>,
    items: &[(&Value, &Indexing, &str)],
) -> Result<Vec<Vec<Embedded>>, StoreError> {
    let Some(index) = index else {
        if items.iter().any(|(_, indexing, _)| matches!(indexing, Indexing::Fields(_))) {
            return Err(no_index("put an item with fields to embed"));
        }
        return Ok(vec![Vec::new(); items.len()]);
    };
    // Each text's item and path, in the order the texts are sent.
    let mut found: Vec<(usize, String)> = Vec::new();
    let mut texts = Vec::new();
    for (at, (value, indexing, _)) in items.iter().enumerate() {
        let owned;
        let fields: &[FieldPath] = match indexing {
            Indexing::Off => continue,
            Indexing::AsConfigured => &index.fields,
            Indexing::Fields(paths) => {
                owned = parse_fields(paths)?;
                &owned
            }
        };
        for field in fields {
            for text in field.texts(value) {
                found.push((at, field.as_str().to_owned()));
                texts.push(text);
            }
        }
    }
    let mut out = vec![Vec::new(); items.len()];
    if texts.is_empty() {
        return Ok(out);
    }
    let what = || match items {
        [(_, _, key)] => format!("the value of {key:?}"),
        _ => format!("the values of {} items", items.len()),
    };
    let vectors = index.embed.embed(&texts).await.map_err(|source| StoreError::Embedding { what: what(), source })?;
    if vectors.len() != texts.len() {
        return Err(StoreError::InvalidIndex {
            reason: format!("the model gave {} vectors for {} texts of {}", vectors.len(), texts.len(), what()),
        });
    }
    for ((at, path), vector) in found.into_iter().zip(vectors) {
        out[at].push((path, index.checked(vector, &what())?));
    }
    Ok(out)
}

/// The error for a search by meaning, or a put naming fields, on a store without an index.
pub(crate) fn no_index(operation: &str) -> StoreError {
    StoreError::NoIndex { operation: operation.to_owned() }
}

fn parse_fields<I, S>(fields: I) -> Result<Vec<FieldPath>, StoreError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    fields
        .into_iter()
        .map(|field| FieldPath::parse(field.as_ref()).map_err(|reason| StoreError::InvalidIndex { reason }))
        .collect()
}
