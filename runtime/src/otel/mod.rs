//! OpenTelemetry export (feature `otel`): the run's spans, which follow OpenTelemetry's GenAI
//! semantic conventions, and its metrics, sent over OTLP to any backend (Jaeger, Grafana Tempo,
//! Langfuse, Arize Phoenix, Datadog, an OpenTelemetry Collector).
//!
//! One call sets it up from the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_PROTOCOL` (`http/protobuf` by default, or `grpc`), `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_COMPRESSION`
//! (`gzip` or `none`), `OTEL_TRACES_SAMPLER`, and the per-signal `OTEL_EXPORTER_OTLP_TRACES_*` /
//! `_METRICS_*` forms), and keeps exporting until the value it returns is dropped:
//!
//! ```no_run
//! # async fn agent() {}
//! #[tokio::main]
//! async fn main() -> Result<(), graphwright::otel::OtelError> {
//!     let _telemetry = graphwright::otel::init()?; // flushes what is left when dropped
//!     agent().await;
//!     Ok(())
//! }
//! ```
//!
//! A program that already has a `tracing` subscriber adds one layer to it instead:
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! # fn main() -> Result<(), graphwright::otel::OtelError> {
//! let telemetry = graphwright::otel::Otel::from_env().service_name("support-agent").build()?;
//! tracing_subscriber::registry().with(telemetry.layer()).init();
//! # Ok(())
//! # }
//! ```
//!
//! What each span carries:
//! - `invoke_agent {graph}`: the run (`gen_ai.agent.name`, `gen_ai.conversation.id` = the
//!   thread, `graphwright.run.status`, `graphwright.steps`, the tokens of all its model calls);
//! - `step {n}`: a super-step (`graphwright.step`, `graphwright.tasks`);
//! - one span per attempt of a task, named after its node (`graphwright.node`, `.task`,
//!   `.attempt`, `.cached`, `.resumed`; an `interrupt` event when it pauses);
//! - `chat {model}`: a model call (`gen_ai.provider.name`, `gen_ai.request.model`,
//!   `gen_ai.request.temperature`, `gen_ai.request.max_tokens`, `gen_ai.response.id`,
//!   `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens` / `output_tokens`,
//!   `graphwright.prompt_hash`; a retried failure is an event);
//! - `execute_tool {name}`: a tool call (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
//!   `graphwright.tool.outcome`);
//! - `checkpoint_write`: storing a checkpoint (`graphwright.checkpoint.bytes`).
//!
//! A failure sets its span's error status with the error's message. Prompts, completions and
//! tool arguments and results are left out unless the run's
//! [`CapturePolicy`](crate::log::CapturePolicy) has `messages` ([`RunConfig::capture`](crate::RunConfig::capture)).
//! Model requests carry the model call's `traceparent`, so a tracing gateway joins the trace.
//!
//! A run started under a subscriber that has export's layer records these spans itself: one
//! small record per span on the run's thread, sent on by a thread of the export's own. Over
//! OTLP/HTTP that thread writes the records straight into OTLP's protobuf, gathering the runs'
//! spans into requests as the `OTEL_BSP_*` variables say (a request goes once it holds
//! `OTEL_BSP_MAX_EXPORT_BATCH_SIZE` spans or its first span has waited
//! `OTEL_BSP_SCHEDULE_DELAY`; past `OTEL_BSP_MAX_QUEUE_SIZE` spans waiting, further spans are
//! dropped); over gRPC, or to an exporter given with [`Otel::build_with_exporter`], it makes
//! them OpenTelemetry span data for the batch processor that also exports the program's own
//! `tracing` spans. Those the program opens inside a node, a model call or a tool call are
//! children of its span, and a run started inside a span of the program's continues that
//! span's trace. [`Telemetry::flush`] says when a request of the runs' spans failed since the
//! last flush (the receiver refused it or could not be reached); the run itself never waits on
//! export.
//! Other subscribers see the run's spans as `tracing` spans. With no subscriber (nothing set
//! up) no span is built: the run pays one check per span.
//!
//! Metrics: every run without metrics of its own ([`RunConfig::metrics`](crate::RunConfig::metrics))
//! reports to [`OtelMetrics`] over the global meter provider, which [`Otel::build`] installs (or
//! the application, with `opentelemetry::global::set_meter_provider`); until one is installed the
//! instruments do nothing. They are named after OpenTelemetry's GenAI conventions where those
//! name one (`gen_ai.client.token.usage`, `gen_ai.client.operation.duration`), and
//! `graphwright.*` where they do not (runs, tool calls).

mod convert;
mod describe;
mod encode;
mod export;
mod filter;
mod inbox;
pub(crate) mod metrics;
mod parent;
mod propagate;
mod protobuf;
mod recorder;
mod sampler;
mod send;
mod tool_instruments;

pub use export::{Otel, OtelError, Protocol, Telemetry, init};
pub use metrics::{OtelMetrics, global_metrics};
/// The sampler [`Otel::sampler`] takes (OpenTelemetry SDK's).
pub use opentelemetry_sdk::trace::Sampler;
#[cfg(feature = "mcp")]
pub(crate) use propagate::current_traceparent;
pub(crate) use propagate::inject;
pub use propagate::{set_parent, traceparent};
