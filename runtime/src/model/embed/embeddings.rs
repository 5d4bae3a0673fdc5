//! The [`Embeddings`] trait every embeddings client implements, and what a store's semantic
//! index calls.

use crate::model::ModelError;
use futures::future::BoxFuture;

/// A model that turns texts into vectors whose closeness stands for closeness of meaning.
///
/// Implementations return one vector per text, in the texts' order, all of the same length.
pub trait Embeddings: Send + Sync + 'static {
    /// The vectors of `texts` (documents to store), one per text, in order.
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>>;

    /// The vector of a search query. Models that embed queries and documents alike (most)
    /// keep this default, [`embed`](Self::embed) of the one text.
    fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>, ModelError>> {
        Box::pin(async move {
            let texts = [query.to_owned()];
            let mut vectors = self.embed(&texts).await?;
            vectors.pop().ok_or_else(|| ModelError::InvalidOutput {
                raw: String::new(),
                reason: "the model gave no vector for the query".to_owned(),
            })
        })
    }
}

impl std::fmt::Debug for dyn Embeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("dyn Embeddings")
    }
}
