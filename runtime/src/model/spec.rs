//! Models named by a `provider:model` string.

use super::{Anthropic, ChatModel, Gemini, ModelError, Ollama, OpenAi};
use std::sync::Arc;

/// The model a `provider:model` spec names, configured from the environment: `openai:gpt-4o-mini`
/// ([`OpenAi`], also any OpenAI-compatible server through `OPENAI_BASE_URL`),
/// `azure:{deployment}` ([`OpenAi::azure`]), `anthropic:claude-sonnet-4-5` ([`Anthropic`]),
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
             with OPENAI_BASE_URL), azure, anthropic, bedrock, gemini, ollama, {}",
            super::presets::names().join(", ")
        ))),
    }
}
