//! OpenAI-compatible services by name: where each listens and which variable holds its key,
//! for [`OpenAi::compatible`](super::OpenAi::compatible) and [`from_spec`](super::from_spec).
//! Addresses are the services' documented OpenAI-compatible base URLs (the local servers'
//! default ports); each can be moved with its `*_BASE_URL` variable.

/// One service.
pub(crate) struct Preset {
    /// Its name in a `provider:model` spec, in errors and in spans.
    pub(crate) name: &'static str,
    /// Its base URL, up to and including the API's version.
    pub(crate) base_url: &'static str,
    /// The variable that moves it (a proxy, another region, another port).
    pub(crate) url_var: &'static str,
    /// The variable holding the API key (the local servers need none unless started with one).
    pub(crate) key_var: &'static str,
    /// Whether it serves OpenAI's `/embeddings` too.
    pub(crate) embeddings: bool,
}

/// Every service, hosted ones first.
static PRESETS: &[Preset] = &[
    preset("groq", "https://api.groq.com/openai/v1", "GROQ_BASE_URL", "GROQ_API_KEY").chat_only(),
    preset("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_BASE_URL", "DEEPSEEK_API_KEY").chat_only(),
    preset("xai", "https://api.x.ai/v1", "XAI_BASE_URL", "XAI_API_KEY").chat_only(),
    preset("mistral", "https://api.mistral.ai/v1", "MISTRAL_BASE_URL", "MISTRAL_API_KEY"),
    preset("together", "https://api.together.xyz/v1", "TOGETHER_BASE_URL", "TOGETHER_API_KEY"),
    preset("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_BASE_URL", "FIREWORKS_API_KEY"),
    preset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_BASE_URL", "OPENROUTER_API_KEY"),
    preset("vllm", "http://localhost:8000/v1", "VLLM_BASE_URL", "VLLM_API_KEY"),
    preset("lmstudio", "http://localhost:1234/v1", "LMSTUDIO_BASE_URL", "LMSTUDIO_API_KEY"),
    preset("llamacpp", "http://localhost:8080/v1", "LLAMACPP_BASE_URL", "LLAMACPP_API_KEY"),
];

/// A service that serves chat completions and embeddings.
const fn preset(name: &'static str, base_url: &'static str, url_var: &'static str, key_var: &'static str) -> Preset {
    Preset { name, base_url, url_var, key_var, embeddings: true }
}

impl Preset {
    /// The same service, serving no embeddings.
    const fn chat_only(self) -> Self {
        Self { embeddings: false, ..self }
    }
}

/// The service named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|preset| preset.name == name)
}

/// Every service's name, in the order they are listed.
pub(crate) fn names() -> Vec<&'static str> {
    PRESETS.iter().map(|preset| preset.name).collect()
}

/// The names of the services that serve embeddings, in the order they are listed.
pub(crate) fn embedding_names() -> Vec<&'static str> {
    PRESETS.iter().filter(|preset| preset.embeddings).map(|preset| preset.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_address_is_a_versioned_base_url() {
        let mut names = names();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), PRESETS.len());
        for preset in PRESETS {
            assert!(preset.base_url.starts_with("http") && preset.base_url.ends_with("/v1"), "{}", preset.base_url);
            assert!(preset.key_var.ends_with("_API_KEY") && preset.url_var.ends_with("_BASE_URL"));
            assert!(find(preset.name).is_some_and(|found| std::ptr::eq(found, preset)));
        }
        assert!(find("openai").is_none(), "OpenAI itself is `OpenAi::new`");
    }
}
