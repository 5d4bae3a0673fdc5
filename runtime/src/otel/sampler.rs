//! The sampler of the standard variables (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`), as
//! the SDK reads them for its own spans, for the runs' recorded ones.

use opentelemetry_sdk::trace::Sampler;

/// The sampler the variables name; `parentbased_always_on` when they name none (or one not
/// built in, as the SDK does).
pub(super) fn from_env() -> Sampler {
    let name = std::env::var("OTEL_TRACES_SAMPLER").unwrap_or_default();
    let ratio =
        || std::env::var("OTEL_TRACES_SAMPLER_ARG").ok().and_then(|arg| arg.trim().parse::<f64>().ok()).unwrap_or(1.0);
    match name.trim() {
        "always_on" => Sampler::AlwaysOn,
        "always_off" => Sampler::AlwaysOff,
        "traceidratio" => Sampler::TraceIdRatioBased(ratio()),
        "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
        "parentbased_traceidratio" => Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio()))),
        _ => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
    }
}
