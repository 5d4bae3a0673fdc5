//! [`OtelMetrics`]: a run's metrics as OpenTelemetry instruments.

use super::tool_instruments::ToolInstruments;
use crate::metrics::{ModelCallEnded, RunEnded, RunMetrics, RunStarted, ToolCallEnded};
use opentelemetry::metrics::{Counter, Histogram, Meter, MeterProvider};
use opentelemetry::{InstrumentationScope, KeyValue};
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The operation every model call is, as OpenTelemetry's conventions for generative AI name it.
const CHAT: &str = "chat";

/// A run's metrics as OpenTelemetry instruments:
///
/// | instrument | kind, unit | attributes |
/// | --- | --- | --- |
/// | `gen_ai.client.token.usage` | histogram, `{token}` | `gen_ai.operation.name` (`chat`), `gen_ai.provider.name`, `gen_ai.request.model`, `gen_ai.token.type` (`input`, `output`) |
/// | `gen_ai.client.operation.duration` | histogram, `s` | `gen_ai.operation.name`, `gen_ai.provider.name`, `gen_ai.request.model`, `error.type` when it failed |
/// | `graphwright.runs.started` | counter, `{run}` | `graphwright.graph` |
/// | `graphwright.runs.ended` | counter, `{run}` | `graphwright.graph`, `graphwright.run.status` (`success`, `error`, `interrupted`, `cancelled`) |
/// | `graphwright.run.duration` | histogram, `s` | `graphwright.graph`, `graphwright.run.status` |
/// | `graphwright.tool.calls` | counter, `{call}` | `gen_ai.tool.name`, `graphwright.tool.outcome` (`ok` or how it failed), `error.type` when it failed |
/// | `graphwright.tool.duration` | histogram, `s` | as `graphwright.tool.calls` |
///
/// The first two follow OpenTelemetry's semantic conventions for generative AI clients,
/// bucket boundaries included; a model call's tokens are recorded whenever a reply came (also
/// when the reply then passed the run's budget). A call to a tool that does not exist is
/// counted under the tool name `unknown` (see [`ToolCallEnded::tool_label`]).
///
/// A tool call is reported through the tool instruments' handles bound to its tool and
/// outcome (the SDK's bound instruments), made the first time such a call ends, so that it
/// costs its run no hashing of attributes. Make the instruments once and share them, as the
/// example does: each `OtelMetrics` keeps its own bound handles.
///
/// ```
/// use graphwright::otel::OtelMetrics;
/// use graphwright::RunConfig;
/// use std::sync::Arc;
///
/// let meter = opentelemetry::global::meter("my-service");
/// let cfg: RunConfig = RunConfig::thread("t1").metrics(Arc::new(OtelMetrics::new(&meter)));
/// # drop(cfg);
/// ```
#[derive(Clone, Debug)]
pub struct OtelMetrics {
    token_usage: Histogram<u64>,
    operation_duration: Histogram<f64>,
    runs_started: Counter<u64>,
    runs_ended: Counter<u64>,
    run_duration: Histogram<f64>,
    /// `graphwright.tool.calls` and `graphwright.tool.duration`.
    tools: Arc<ToolInstruments>,
}

/// `count` bucket boundaries from `first`, each `factor` times the one before.
fn boundaries(first: f64, factor: f64, count: i32) -> Vec<f64> {
    (0..count).map(|i| first * factor.powi(i)).collect()
}

impl OtelMetrics {
    /// The instruments, made by `meter`.
    #[must_use]
    pub fn new(meter: &Meter) -> Self {
        // The GenAI conventions' advice: tokens by powers of 4 from 1 to 4^13, durations
        // doubling from 10 ms to 81.92 s.
        let tokens = boundaries(1.0, 4.0, 14);
        let calls = boundaries(0.01, 2.0, 14);
        Self {
            token_usage: meter
                .u64_histogram("gen_ai.client.token.usage")
                .with_description("Number of input and output tokens used")
                .with_unit("{token}")
                .with_boundaries(tokens)
                .build(),
            operation_duration: meter
                .f64_histogram("gen_ai.client.operation.duration")
                .with_description("GenAI operation duration")
                .with_unit("s")
                .with_boundaries(calls.clone())
                .build(),
            runs_started: meter
                .u64_counter("graphwright.runs.started")
                .with_description("Graph runs started (a subgraph's run is part of its parent's)")
                .with_unit("{run}")
                .build(),
            runs_ended: meter
                .u64_counter("graphwright.runs.ended")
                .with_description("Graph runs ended, by how they ended")
                .with_unit("{run}")
                .build(),
            run_duration: meter
                .f64_histogram("graphwright.run.duration")
                .with_description("How long graph runs took")
                .with_unit("s")
                // 10 ms to about 22 minutes.
                .with_boundaries(boundaries(0.01, 2.0, 18))
                .build(),
            tools: Arc::new(ToolInstruments::new(
                meter
                    .u64_counter("graphwright.tool.calls")
                    .with_description("Tool calls run, by tool and outcome")
                    .with_unit("{call}")
                    .build(),
                meter
                    .f64_histogram("graphwright.tool.duration")
                    .with_description("How long tool calls took, retries included")
                    .with_unit("s")
                    .with_boundaries(calls)
                    .build(),
            )),
        }
    }

    /// The instruments, made by `provider`'s meter for this crate (named `graphwright`, with
    /// the crate's version).
    #[must_use]
    pub fn from_provider<P: MeterProvider + ?Sized>(provider: &P) -> Self {
        let scope = InstrumentationScope::builder("graphwright").with_version(env!("CARGO_PKG_VERSION")).build();
        Self::new(&provider.meter_with_scope(scope))
    }
}

impl Default for OtelMetrics {
    /// The instruments, made by the global meter provider installed now.
    fn default() -> Self {
        Self::from_provider(&*opentelemetry::global::meter_provider())
    }
}

impl RunMetrics for OtelMetrics {
    fn run_started(&self, run: &RunStarted<'_>) {
        self.runs_started.add(1, &[KeyValue::new("graphwright.graph", run.graph.to_owned())]);
    }

    fn run_ended(&self, run: &RunEnded<'_>) {
        let attributes = [
            KeyValue::new("graphwright.graph", run.graph.to_owned()),
            KeyValue::new("graphwright.run.status", run.status.as_str()),
        ];
        self.runs_ended.add(1, &attributes);
        self.run_duration.record(run.duration.as_secs_f64(), &attributes);
    }

    fn model_call_ended(&self, call: &ModelCallEnded<'_>) {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", CHAT),
            KeyValue::new("gen_ai.provider.name", call.provider.to_owned()),
            KeyValue::new("gen_ai.request.model", call.model.to_owned()),
        ];
        if let Some(usage) = call.usage {
            for (kind, tokens) in [("input", usage.input_tokens), ("output", usage.output_tokens)] {
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                self.token_usage.record(tokens, &attributes);
                attributes.pop();
            }
        }
        if let Some(error) = call.error {
            attributes.push(KeyValue::new("error.type", error));
        }
        self.operation_duration.record(call.duration.as_secs_f64(), &attributes);
    }

    fn tool_call_ended(&self, call: &ToolCallEnded<'_>) {
        self.tools.record(call.tool_label(), call.error, call.duration.as_secs_f64());
    }
}

/// The metrics of runs given none: [`OtelMetrics`] over the global meter provider. Made once
/// per provider: a run asks which provider is installed (a lock and a pointer compared), and
/// gets the instruments made over it, made anew only when the application has installed
/// another provider since (instruments made before stay with the provider that made them).
///
/// A program that gives its runs metrics of its own (as `graphwright-server` does, for its
/// `/metrics`) can report to these too by forwarding to what this returns.
#[must_use]
pub fn global_metrics() -> Arc<dyn RunMetrics> {
    static CURRENT: Mutex<Option<Made>> = Mutex::new(None);
    let provider = opentelemetry::global::meter_provider();
    let mut current = CURRENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(made) = current.as_ref().filter(|made| made.is_over(&provider)) {
        return Arc::clone(&made.metrics);
    }
    let metrics: Arc<dyn RunMetrics> = Arc::new(OtelMetrics::from_provider(&*provider));
    *current = Some(Made { provider: Arc::downgrade(&provider), metrics: Arc::clone(&metrics) });
    metrics
}

type Provider = dyn MeterProvider + Send + Sync;

/// Instruments, and which provider made them.
struct Made {
    provider: Weak<Provider>,
    metrics: Arc<dyn RunMetrics>,
}

impl Made {
    fn is_over(&self, provider: &Arc<Provider>) -> bool {
        // A provider that is gone may have left its address to the new one.
        self.provider.strong_count() > 0 && std::ptr::addr_eq(self.provider.as_ptr(), Arc::as_ptr(provider))
    }
}
