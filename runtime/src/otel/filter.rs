//! Which `tracing` spans and events export's layer takes: those of the program at `INFO` and
//! above, none of the crates the export itself uses, and none of the runtime's that a run
//! records instead (its steps, tasks and checkpoint writes; its model and tool calls, whose
//! spans carry the `RECORDED` target when their run is recorded, or left out by the sampler).
//! A model or tool call made outside any such run (a tool served over MCP, say) is exported
//! through its `tracing` span.

use crate::telemetry::RECORDED;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::filter::Targets;

/// The runtime's targets: a span of the program's own opened inside a recorded span skips
/// these when looking for the span it was opened in.
pub(super) const RUNTIME: &str = "graphwright::";

/// The filter of export's layer. Decided by target alone, so that a span it leaves out is not
/// made at all when no other layer wants it.
pub(super) fn exported() -> Targets {
    Targets::new()
        .with_default(LevelFilter::INFO)
        .with_target(RECORDED, LevelFilter::OFF)
        .with_target("graphwright::pregel", LevelFilter::OFF)
        .with_target("h2", LevelFilter::OFF)
        .with_target("hyper", LevelFilter::OFF)
        .with_target("hyper_util", LevelFilter::OFF)
        .with_target("tonic", LevelFilter::OFF)
        .with_target("tower", LevelFilter::OFF)
        .with_target("reqwest", LevelFilter::OFF)
        .with_target("opentelemetry", LevelFilter::OFF)
        .with_target("opentelemetry_sdk", LevelFilter::OFF)
        .with_target("opentelemetry_otlp", LevelFilter::OFF)
}
