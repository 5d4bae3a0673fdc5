//! OpenAI-compatible Chat Completions: OpenAI, the llama.cpp server, vLLM, Ollama's `/v1`,
//! `LiteLLM`; and the client that speaks OpenAI's Responses API too (see `responses.rs`).

mod client;
mod completion;
mod stream;

pub use client::{AZURE_API_VERSION, OpenAi};
