//! OpenTelemetry (feature `otel`): a run's metrics as OpenTelemetry instruments, named after
//! OpenTelemetry's semantic conventions for generative AI where they name one
//! (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`), and as `graphwright.*`
//! where they do not (runs, tool calls).
//!
//! Every run without metrics of its own reports to [`OtelMetrics`] over the global meter
//! provider: install one (`opentelemetry::global::set_meter_provider`) and the instruments
//! export through it; until then they do nothing. Give a run
//! [`RunConfig::metrics`](crate::RunConfig::metrics) to report elsewhere.

pub(crate) mod metrics;

pub use metrics::OtelMetrics;
