//! The `model_call` tracing span carries the call's prompt hash for a subscriber, with no run
//! log to ask for it. Alone in its binary: tracing caches whether a span is wanted per call site,
//! across threads, and other tests calling models with no subscriber would race with this one.

use graphwright::model::{ChatModel, ScriptedModel};
use graphwright::prelude::*;
use std::sync::Arc;

/// Keeps the `prompt_hash` recorded on every span it is given.
#[derive(Default)]
struct SpanHashes(std::sync::Mutex<Vec<String>>);

impl tracing::field::Visit for &SpanHashes {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "graphwright.prompt_hash" {
            self.0.lock().unwrap().push(value.to_owned());
        }
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "graphwright.prompt_hash" {
            self.0.lock().unwrap().push(format!("{value:?}"));
        }
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
    assert_eq!(*hashes.0.lock().unwrap(), expected);
    assert_ne!(expected[0], expected[1], "different prompts, different hashes");
}
