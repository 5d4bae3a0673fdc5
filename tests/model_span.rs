//! The runtime's `tracing` spans as a subscriber without export sees them: a model call's span
//! carries its prompt hash with no run log to ask for it, and prompt, completion and tool
//! arguments when the run's capture policy lets them out. Alone in its binary: tracing caches
//! whether a span is wanted per call site, across threads, and other tests calling models with
//! no subscriber would race with this one.

use graphwright::log::CapturePolicy;
use graphwright::model::{ChatModel, ScriptedModel};
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use std::sync::Arc;

/// Keeps every text field recorded on every span it is given, as (name, value).
#[derive(Default)]
struct SpanHashes(std::sync::Mutex<Vec<(String, String)>>);

impl SpanHashes {
    /// The values recorded under `name`, in order.
    fn values(&self, name: &str) -> Vec<String> {
        self.0.lock().unwrap().iter().filter(|(n, _)| n == name).map(|(_, v)| v.clone()).collect()
    }
}

impl tracing::field::Visit for &SpanHashes {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.lock().unwrap().push((field.name().to_owned(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.lock().unwrap().push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl tracing::Subscriber for SpanHashes {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        span.record(&mut &*self);
        tracing::span::Id::from_u64(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        values.record(&mut &*self);
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, _: &tracing::Event<'_>) {}

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test]
async fn a_subscriber_sees_each_calls_prompt_hash_without_a_log() {
    let hashes = Arc::new(SpanHashes::default());
    let _listening = tracing::subscriber::set_default(Arc::clone(&hashes));
    let model = ScriptedModel::new([Message::assistant("done"), Message::assistant("again")]);
    let first = [Message::user("What is the weather?")];
    model.invoke(&first, &Runtime::detached()).await.unwrap();
    model.invoke(&[Message::user("And tomorrow?")], &Runtime::detached()).await.unwrap();
    let requests = model.requests();
    let expected: Vec<String> =
        requests.iter().map(|r| graphwright::model::prompt_hash("scripted", &r.messages, &r.settings)).collect();
    assert_eq!(hashes.values("graphwright.prompt_hash"), expected);
    assert_ne!(expected[0], expected[1], "different prompts, different hashes");
}

/// Look a place up.
#[tool]
fn lookup(place: String) -> String {
    format!("{place}: 717,000 people")
}

#[tokio::test]
async fn a_subscriber_sees_the_text_the_capture_policy_lets_out() {
    let fields = Arc::new(SpanHashes::default());
    let _listening = tracing::subscriber::set_default(Arc::clone(&fields));
    let call = || ToolCall::new("c1", "lookup", json!({"place": "Oslo"}));
    // Two runs, each a tool call and an answer.
    let model = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![call()]),
        Message::assistant("Oslo has 717,000 people."),
        Message::assistant("").with_tool_calls(vec![call()]),
        Message::assistant("Oslo has 717,000 people."),
    ]);
    let app = react_agent(model, tools![Lookup]).compile().unwrap();
    let input = MessagesState::new([Message::user("How many live in Oslo?")]);

    app.invoke(input.clone(), &RunConfig::default()).await.unwrap();
    assert!(fields.values("gen_ai.input.messages").is_empty(), "no text under the default policy");
    assert!(fields.values("gen_ai.tool.call.arguments").is_empty());

    let cfg = RunConfig::default().capture(CapturePolicy::messages());
    app.invoke(input, &cfg).await.unwrap();
    let prompts = fields.values("gen_ai.input.messages");
    assert_eq!(prompts.len(), 2, "one prompt per model call");
    assert!(prompts[0].contains("How many live in Oslo?"), "{prompts:?}");
    assert!(fields.values("gen_ai.output.messages").iter().any(|t| t.contains("717,000")));
    assert_eq!(fields.values("gen_ai.tool.call.arguments"), [r#"{"place":"Oslo"}"#]);
}
