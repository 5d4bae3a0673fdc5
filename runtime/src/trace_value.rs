//! Counts as span fields. OpenTelemetry's attributes have signed 64-bit integers only, and
//! `tracing-opentelemetry` writes an unsigned field as text; the spans record counts through
//! here so that token counts, steps and sizes arrive as numbers.

/// `n` as a signed integer field (saturating: no count comes near `i64::MAX`).
pub(crate) fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
