//! Trace context across MCP: a call carries its caller's `traceparent` in its `_meta` (where
//! OpenTelemetry's conventions for MCP put it, so it crosses stdio as well as HTTP), and a
//! served call's span continues it.

use rmcp::model::RequestMetaObject;
use serde_json::Value;

/// The `_meta` of an outgoing call: the current span's `traceparent`, when spans are exported
/// (feature `otel`); none otherwise.
pub(super) fn meta() -> Option<RequestMetaObject> {
    #[cfg(feature = "otel")]
    if let Some(traceparent) = crate::otel::current_traceparent() {
        let mut meta = serde_json::Map::new();
        meta.insert("traceparent".to_owned(), Value::String(traceparent));
        return Some(RequestMetaObject::from(rmcp::model::MetaObject::from(meta)));
    }
    None
}

/// The span of a call this process serves, named as the GenAI conventions name a tool's
/// execution, and a child of the caller's span when `meta` names one.
pub(super) fn served_call(tool: &str, meta: Option<&RequestMetaObject>) -> tracing::Span {
    let span = tracing::info_span!(
        "execute_tool",
        "otel.name" = %crate::trace_value::SpanName("execute_tool", tool),
        "otel.kind" = "server",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = tool,
    );
    let traceparent = meta.and_then(|m| m.get("traceparent")).and_then(Value::as_str);
    #[cfg(feature = "otel")]
    if let Some(traceparent) = traceparent {
        crate::otel::set_parent(&span, traceparent, None);
    }
    #[cfg(not(feature = "otel"))]
    let _ = traceparent;
    span
}
