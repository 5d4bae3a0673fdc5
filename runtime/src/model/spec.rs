//! Models named by a `provider:model` string.

use super::{
    Anthropic, ChatModel, CohereEmbeddings, Embeddings, Gemini, GeminiEmbeddings, ModelError, Ollama, OllamaEmbeddings,
    OpenAi, OpenAiEmbeddings,
};
use std::sync::Arc;

/// The model a `provider:model` spec names, configured from the environment: `openai:gpt-4o-mini`
/// ([`OpenAi`], also any OpenAI-compatible server through `OPENAI_BASE_URL`),
/// `openai-responses:gpt-4.1` (the same client speaking OpenAI's Responses API,
/// [`OpenAi::responses`]), `azure:{deployment}` ([`OpenAi::azure`]),
/// `anthropic:claude-sonnet-4-5` ([`Anthropic`]),
/// `gemini:gemini-2.5-flash` ([`Gemini`], also `google:`), `ollama:qwen3` ([`Ollama`], its
/// native API), `bedrock:anthropic.claude-3-5-haiku-20241022-v1:0` (`Bedrock`, with the
/// `bedrock` feature; the model id keeps its own colons), or a known OpenAI-compatible service
/// ([`OpenAi::compatible`]): `groq`, `deepseek`, `xai`, `mistral`, `together`, `fireworks`,
/// `openrouter`, and the local servers `vllm`, `lmstudio`, `llamacpp`.
///
/// ```
/// use graphwright::model::from_spec;
///
/// let model = from_spec("openai:gpt-4o-mini")?;
/// assert_eq!((model.provider(), model.model()), ("openai", "gpt-4o-mini"));
/// let model = from_spec("openai-responses:gpt-4.1")?;
/// assert_eq!((model.provider(), model.model()), ("openai", "gpt-4.1"));
/// let model = from_spec("openrouter:meta-llama/llama-3.3-70b-instruct")?;
/// assert_eq!((model.provider(), model.model()), ("openrouter", "meta-llama/llama-3.3-70b-instruct"));
/// let error = from_spec("gpt-4o-mini").unwrap_err();
/// assert!(error.to_string().contains("provider:model"));
/// let error = from_spec("nowhere:m").unwrap_err();
/// assert!(error.to_string().contains("anthropic") && error.to_string().contains("llamacpp"));
/// # Ok::<(), graphwright::model::ModelError>(())
/// ```
pub fn from_spec(spec: &str) -> Result<Arc<dyn ChatModel>, ModelError> {
    let Some((provider, model)) = spec.split_once(':').filter(|(p, m)| !p.is_empty() && !m.is_empty()) else {
        return Err(ModelError::Config(format!(
            "`{spec}` is not a model spec: write `provider:model`, e.g. `openai:gpt-4o-mini` or `anthropic:claude-sonnet-4-5`"
        )));
    };
    match provider {
        "openai" => Ok(Arc::new(OpenAi::new(model))),
        "openai-responses" => Ok(Arc::new(OpenAi::new(model).responses())),
        "anthropic" => Ok(Arc::new(Anthropic::new(model))),
        "ollama" => Ok(Arc::new(Ollama::new(model))),
        "gemini" | "google" => Ok(Arc::new(Gemini::new(model))),
        "azure" => Ok(Arc::new(OpenAi::azure(model)?)),
        #[cfg(feature = "bedrock")]
        "bedrock" => Ok(Arc::new(super::Bedrock::new(model))),
        #[cfg(not(feature = "bedrock"))]
        "bedrock" => Err(ModelError::Config(format!(
            "`{spec}` needs graphwright's `bedrock` feature: features = [\"bedrock\"] in Cargo.toml"
        ))),
        other if super::presets::find(other).is_some() => Ok(Arc::new(OpenAi::compatible(other, model)?)),
        other => Err(ModelError::Config(format!(
            "unknown model provider `{other}` in `{spec}`: use one of openai (also for any OpenAI-compatible server, \
             with OPENAI_BASE_URL), openai-responses, azure, anthropic, bedrock, gemini, ollama, {}",
            super::presets::names().join(", ")
        ))),
    }
}

/// The embeddings model a `provider:model` spec names, configured from the environment as the
/// chat clients are: `openai:text-embedding-3-small` ([`OpenAiEmbeddings`], also any
/// OpenAI-compatible server through `OPENAI_BASE_URL`), `azure:{deployment}`
/// ([`OpenAiEmbeddings::azure`]), `cohere:embed-english-v3.0` ([`CohereEmbeddings`]),
/// `gemini:gemini-embedding-001` ([`GeminiEmbeddings`], also `google:`),
/// `ollama:nomic-embed-text` ([`OllamaEmbeddings`], its native API), or a known
/// OpenAI-compatible service that serves embeddings ([`OpenAiEmbeddings::compatible`]):
/// `mistral`, `together`, `fireworks`, `openrouter`, and the local servers `vllm`, `lmstudio`,
/// `llamacpp`.
///
/// ```
/// use graphwright::model::embeddings_from_spec;
///
/// for spec in ["openai:text-embedding-3-small", "gemini:gemini-embedding-001", "ollama:nomic-embed-text"] {
///     let _embed = embeddings_from_spec(spec)?;
/// }
/// let error = embeddings_from_spec("text-embedding-3-small").unwrap_err();
/// assert!(error.to_string().contains("provider:model"));
/// let error = embeddings_from_spec("anthropic:claude").unwrap_err().to_string();
/// assert!(error.contains("cohere") && error.contains("gemini") && error.contains("llamacpp"), "{error}");
/// let error = embeddings_from_spec("groq:llama").unwrap_err().to_string();
/// assert!(error.contains("`groq` serves no embeddings API"), "{error}");
/// # Ok::<(), graphwright::model::ModelError>(())
/// ```
pub fn embeddings_from_spec(spec: &str) -> Result<Arc<dyn Embeddings>, ModelError> {
    let Some((provider, model)) = spec.split_once(':').filter(|(p, m)| !p.is_empty() && !m.is_empty()) else {
        return Err(ModelError::Config(format!(
            "`{spec}` is not an embeddings model spec: write `provider:model`, e.g. `openai:text-embedding-3-small` \
             or `ollama:nomic-embed-text`"
        )));
    };
    match provider {
        "openai" => Ok(Arc::new(OpenAiEmbeddings::new(model))),
        "azure" => Ok(Arc::new(OpenAiEmbeddings::azure(model)?)),
        "cohere" => Ok(Arc::new(CohereEmbeddings::new(model))),
        "gemini" | "google" => Ok(Arc::new(GeminiEmbeddings::new(model))),
        "ollama" => Ok(Arc::new(OllamaEmbeddings::new(model))),
        #[cfg(feature = "bedrock")]
        "bedrock" => Ok(Arc::new(super::BedrockEmbeddings::new(model)?)),
        #[cfg(not(feature = "bedrock"))]
        "bedrock" => Err(ModelError::Config(format!(
            "`{spec}` needs graphwright's `bedrock` feature: features = [\"bedrock\"] in Cargo.toml"
        ))),
        other if super::presets::find(other).is_some_and(|p| p.embeddings) => {
            Ok(Arc::new(OpenAiEmbeddings::compatible(other, model)?))
        }
        other => {
            let why = match super::presets::find(other) {
                Some(_) => format!("`{other}` serves no embeddings API"),
                None => format!("unknown embeddings provider `{other}`"),
            };
            Err(ModelError::Config(format!(
                "{why} in `{spec}`: use one of openai (also for any OpenAI-compatible server, with \
                 OPENAI_BASE_URL), azure, bedrock, cohere, gemini, ollama, {}",
                super::presets::embedding_names().join(", ")
            )))
        }
    }
}
