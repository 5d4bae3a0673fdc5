//! A recorded span as OpenTelemetry's span data (what [`describe`](super::describe) says of it),
//! for the SDK's batch processor: an exporter of the program's own, or OTLP over gRPC.

use super::describe::{Kind, Out, Val, describe, room, trace_state};
use crate::telemetry::{Anchor, Batch, Kept, Record, Ticks};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};

/// The span data of every record of `batch`.
pub(super) fn spans(batch: &Batch, scope: &InstrumentationScope) -> Vec<SpanData> {
    let anchor = batch.anchor.unwrap_or_else(Anchor::now);
    let trace_state = trace_state(batch);
    batch.records.iter().map(|record| span(batch, record, &anchor, &trace_state, scope)).collect()
}

fn span(batch: &Batch, record: &Record, anchor: &Anchor, state: &TraceState, scope: &InstrumentationScope) -> SpanData {
    let trace_id = TraceId::from(batch.trace_id);
    let (parent, remote) = match (record.parent, &batch.parent) {
        (0, Some(parent)) => (SpanId::from(parent.span_id), parent.remote),
        (0, None) => (SpanId::INVALID, false),
        (id, _) => (SpanId::from(id), false),
    };
    let mut out = Data { anchor, attributes: Vec::with_capacity(room(&record.body)), events: Vec::new() };
    let (name, kind) = describe(batch, &record.body, &mut out);
    debug_assert!(out.attributes.len() <= room(&record.body), "`room` knows every attribute a span can carry");
    let mut events = SpanEvents::default();
    events.events = out.events;
    SpanData {
        span_context: SpanContext::new(
            trace_id,
            SpanId::from(record.span_id),
            TraceFlags::SAMPLED,
            false,
            state.clone(),
        ),
        parent_span_id: parent,
        parent_span_is_remote: remote,
        span_kind: match kind {
            Kind::Internal => SpanKind::Internal,
            Kind::Client => SpanKind::Client,
        },
        name: name.to_text().into(),
        start_time: anchor.wall(record.start),
        end_time: anchor.wall(record.end),
        attributes: out.attributes,
        dropped_attributes_count: 0,
        events,
        links: SpanLinks::default(),
        status: match record.status {
            Kept::Unset => opentelemetry::trace::Status::Unset,
            Kept::Ok => opentelemetry::trace::Status::Ok,
            Kept::Error(description) => opentelemetry::trace::Status::error(batch.get(description).to_owned()),
        },
        instrumentation_scope: scope.clone(),
    }
}

/// A span's attributes and events as span data.
struct Data<'a> {
    anchor: &'a Anchor,
    attributes: Vec<KeyValue>,
    events: Vec<opentelemetry::trace::Event>,
}

fn key_value(key: &'static str, value: Val<'_>) -> KeyValue {
    match value {
        Val::Str(s) => KeyValue::new(key, s.to_owned()),
        Val::Int(n) => KeyValue::new(key, n),
        Val::Bool(b) => KeyValue::new(key, b),
        Val::Float(f) => KeyValue::new(key, f),
    }
}

impl Out for Data<'_> {
    fn attr(&mut self, key: &'static str, value: Val<'_>) {
        self.attributes.push(key_value(key, value));
    }

    fn event(&mut self, name: &'static str, at: Ticks, attributes: &[(&'static str, Val<'_>)]) {
        let attributes = attributes.iter().map(|&(key, value)| key_value(key, value)).collect();
        self.events.push(opentelemetry::trace::Event::new(name, self.anchor.wall(at), attributes, 0));
    }
}
