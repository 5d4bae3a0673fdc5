//! The recorder export sets up: it begins each run's trace (its parent and the sampler's
//! decision) on the run's thread, and on a thread of its own turns the runs' batches into
//! OpenTelemetry spans for the batch processor that exports the program's other spans too.

use super::convert;
use crate::telemetry::{Batch, Begun, Parent, Recorder, calibrate, trace_id};
use opentelemetry::InstrumentationScope;
use opentelemetry::trace::{SpanKind, TraceContextExt, TraceId};
use opentelemetry_sdk::trace::{BatchSpanProcessor, Sampler, SamplingDecision, ShouldSample, SpanProcessor};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// How long [`Exporting::flush`] waits for the recorder's thread.
const FLUSH_WAIT: Duration = Duration::from_secs(30);

enum Message {
    Batch(Batch),
    Flush(Sender<()>),
}

/// Runs' spans, exported through `processor`.
pub(super) struct Exporting {
    sampler: Sampler,
    sender: Mutex<Option<Sender<Message>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Exporting {
    /// Starts the recorder's thread, which hands spans to `processor`.
    pub(super) fn start(processor: Arc<BatchSpanProcessor>, sampler: Sampler) -> std::io::Result<Self> {
        let (sender, receiver) = channel();
        let scope = InstrumentationScope::builder("graphwright").with_version(env!("CARGO_PKG_VERSION")).build();
        let thread = std::thread::Builder::new().name("graphwright-spans".to_owned()).spawn(move || {
            // Here rather than in the first run recorded, which would wait for it.
            calibrate();
            convert_all(&receiver, &processor, &scope);
        })?;
        Ok(Self { sampler, sender: Mutex::new(Some(sender)), thread: Mutex::new(Some(thread)) })
    }

    /// Waits until every batch sent so far is with the batch processor.
    pub(super) fn flush(&self) -> bool {
        let (done, wait) = channel();
        if !self.send(Message::Flush(done)) {
            return true;
        }
        wait.recv_timeout(FLUSH_WAIT).is_ok()
    }

    /// Hands what is left to the batch processor and stops the thread.
    pub(super) fn stop(&self) {
        drop(self.sender.lock().unwrap_or_else(PoisonError::into_inner).take());
        if let Some(thread) = self.thread.lock().unwrap_or_else(PoisonError::into_inner).take() {
            let _ = thread.join();
        }
    }

    fn send(&self, message: Message) -> bool {
        let sender = self.sender.lock().unwrap_or_else(PoisonError::into_inner);
        sender.as_ref().is_some_and(|s| s.send(message).is_ok())
    }
}

fn convert_all(receiver: &Receiver<Message>, processor: &BatchSpanProcessor, scope: &InstrumentationScope) {
    while let Ok(message) = receiver.recv() {
        match message {
            Message::Batch(batch) => {
                for span in convert::spans(&batch, scope) {
                    processor.on_end(span);
                }
            }
            Message::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl Recorder for Exporting {
    fn begin(&self, graph: &str) -> Option<Begun> {
        let outer = tracing::Span::current();
        let mut context = outer.context();
        if !context.span().span_context().is_valid() {
            context = opentelemetry::Context::current();
        }
        let parent = context.span().span_context().clone();
        let trace = if parent.is_valid() { parent.trace_id() } else { TraceId::from(trace_id()) };
        let name = format!("invoke_agent {graph}");
        let sampled = self.sampler.should_sample(Some(&context), trace, &name, &SpanKind::Internal, &[], &[]);
        if sampled.decision != SamplingDecision::RecordAndSample {
            return None;
        }
        let parent = parent.is_valid().then(|| Parent {
            span_id: u64::from_be_bytes(parent.span_id().to_bytes()),
            remote: parent.is_remote(),
            trace_state: sampled.trace_state.header(),
        });
        Some(Begun {
            trace_id: u128::from_be_bytes(trace.to_bytes()),
            parent,
            outer: outer.id().map_or(0, |id| id.into_u64()),
        })
    }

    fn record(&self, batch: Batch) {
        self.send(Message::Batch(batch));
    }
}

/// The batch processor, shared by the tracer provider (the program's own spans) and the
/// recorder (the runs').
#[derive(Debug)]
pub(super) struct Shared(pub(super) Arc<BatchSpanProcessor>);

impl SpanProcessor for Shared {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.0.on_start(span, cx);
    }

    fn on_end(&self, span: opentelemetry_sdk::trace::SpanData) {
        self.0.on_end(span);
    }

    fn force_flush(&self) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.shutdown_with_timeout(timeout)
    }
}

/// Carried by export's layer, where a run finds the recorder (`RecorderHandle::current`).
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for crate::telemetry::RecorderHandle {}
