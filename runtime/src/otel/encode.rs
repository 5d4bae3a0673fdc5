//! Runs' recorded spans written straight as OTLP's `ExportTraceServiceRequest` in protobuf:
//! what [`describe`](super::describe) says of each span, with no span data and no protobuf
//! structs in between (which cost the SDK's OTLP exporter several times what the run spent
//! recording the span).
//!
//! The messages and field numbers are those of `opentelemetry/proto/collector/trace/v1` and
//! the `trace/v1`, `resource/v1` and `common/v1` messages it carries.

use super::describe::{Kind, Out, Tail, Val, decimal, describe, trace_state};
use super::protobuf::{Writer, delimited_len};
use crate::telemetry::{Anchor, Batch, Kept, Record, Ticks};
use opentelemetry_sdk::Resource;

/// `Span.flags`: the W3C trace flags' sampled bit, and that whether the parent is remote is known.
const SAMPLED: u32 = 0x01;
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// Spans of any number of batches, gathered into one request.
#[derive(Debug)]
pub(super) struct Request {
    /// The `Resource` message's content, written once.
    resource: Vec<u8>,
    resource_schema: Option<String>,
    /// The `InstrumentationScope` message's content, written once.
    scope: Vec<u8>,
    /// Each span as a `spans` field of `ScopeSpans`.
    spans: Writer,
    count: usize,
}

impl Request {
    /// An empty request of spans from `resource`, in this crate's instrumentation scope.
    pub(super) fn new(resource: &Resource) -> Self {
        let mut attributes = Writer::default();
        for (key, value) in resource {
            attributes.message(1, |w| {
                w.bytes(1, key.as_str().as_bytes());
                w.message(2, |w| any_value(w, value));
            });
        }
        let mut scope = Writer::default();
        scope.bytes(1, b"graphwright");
        scope.bytes(2, env!("CARGO_PKG_VERSION").as_bytes());
        Self {
            resource: attributes.buf,
            resource_schema: resource.schema_url().map(str::to_owned),
            scope: scope.buf,
            spans: Writer::default(),
            count: 0,
        }
    }

    /// How many spans the request holds.
    pub(super) fn len(&self) -> usize {
        self.count
    }

    /// Adds every span of `batch`.
    pub(super) fn add(&mut self, batch: &Batch) {
        let anchor = batch.anchor.unwrap_or_else(Anchor::now);
        // As the SDK's span data has it: parsed, and written out again.
        let trace_state = trace_state(batch).header();
        for record in &batch.records {
            self.spans.message(2, |w| span(w, batch, record, &anchor, &trace_state));
        }
        self.count += batch.records.len();
    }

    /// The request's bytes; the request is empty again after (keeping its room for the next).
    pub(super) fn take(&mut self) -> Vec<u8> {
        // The lengths of the enclosing messages, worked out first, so that the spans are
        // copied once, after them.
        let scope_spans = 1 + delimited_len(self.scope.len()) + self.spans.buf.len();
        let schema = self.resource_schema.as_ref().map_or(0, |s| 1 + delimited_len(s.len()));
        let resource_spans = 1 + delimited_len(self.resource.len()) + 1 + delimited_len(scope_spans) + schema;
        let total = 1 + delimited_len(resource_spans);
        let mut request = Writer { buf: Vec::with_capacity(total) };
        request.delimited(1, resource_spans);
        request.bytes(1, &self.resource);
        request.delimited(2, scope_spans);
        request.bytes(1, &self.scope);
        request.buf.extend_from_slice(&self.spans.buf);
        if let Some(schema) = &self.resource_schema {
            request.bytes(3, schema.as_bytes());
        }
        debug_assert_eq!(request.buf.len(), total, "the lengths worked out are the lengths written");
        self.spans.buf.clear();
        self.count = 0;
        request.buf
    }
}

/// One `Span` message's content.
fn span(w: &mut Writer, batch: &Batch, record: &Record, anchor: &Anchor, trace_state: &str) {
    w.bytes(1, &batch.trace_id.to_be_bytes());
    w.bytes(2, &record.span_id.to_be_bytes());
    if !trace_state.is_empty() {
        w.bytes(3, trace_state.as_bytes());
    }
    let (parent, remote) = match (record.parent, &batch.parent) {
        (0, Some(parent)) => (parent.span_id, parent.remote),
        (0, None) => (0, false),
        (id, _) => (id, false),
    };
    if parent != 0 {
        w.bytes(4, &parent.to_be_bytes());
    }
    w.fixed32(16, SAMPLED | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 });
    let (name, kind) = describe(batch, &record.body, &mut Fields { w, anchor });
    match name.tail {
        Tail::None => w.str_parts(5, &[name.prefix]),
        Tail::Str(tail) => w.str_parts(5, &[name.prefix, tail]),
        Tail::Int(n) => {
            let mut digits = [0; 20];
            w.str_parts(5, &[name.prefix, decimal(n, &mut digits)]);
        }
    }
    // `SpanKind`: INTERNAL is 1, CLIENT 3.
    w.uint(6, if kind == Kind::Client { 3 } else { 1 });
    w.fixed64(7, anchor.unix_nanos(record.start));
    w.fixed64(8, anchor.unix_nanos(record.end));
    w.message(15, |w| match record.status {
        Kept::Unset => {}
        // `StatusCode`: OK is 1, ERROR 2.
        Kept::Ok => w.uint(3, 1),
        Kept::Error(message) => {
            w.bytes(2, batch.get(message).as_bytes());
            w.uint(3, 2);
        }
    });
}

/// A span's attributes and events, written into its message as they come (protobuf lets a
/// message's repeated fields interleave).
struct Fields<'a> {
    w: &'a mut Writer,
    anchor: &'a Anchor,
}

/// A `KeyValue` message's content.
fn key_value(w: &mut Writer, key: &str, value: Val<'_>) {
    w.bytes(1, key.as_bytes());
    w.message(2, |w| match value {
        Val::Str(s) => w.bytes(1, s.as_bytes()),
        Val::Bool(b) => w.uint(2, u64::from(b)),
        // `int64` is written as its two's complement.
        Val::Int(n) => w.uint(3, n.cast_unsigned()),
        Val::Float(f) => w.fixed64(4, f.to_bits()),
    });
}

impl Out for Fields<'_> {
    fn attr(&mut self, key: &'static str, value: Val<'_>) {
        self.w.message(9, |w| key_value(w, key, value));
    }

    fn event(&mut self, name: &'static str, at: Ticks, attributes: &[(&'static str, Val<'_>)]) {
        let time = self.anchor.unix_nanos(at);
        self.w.message(11, |w| {
            w.fixed64(1, time);
            w.bytes(2, name.as_bytes());
            for &(key, value) in attributes {
                w.message(3, |w| key_value(w, key, value));
            }
        });
    }
}

/// An `AnyValue` message's content for a value of the SDK's (a resource attribute's).
fn any_value(w: &mut Writer, value: &opentelemetry::Value) {
    use opentelemetry::{Array, Value};
    match value {
        Value::Bool(b) => w.uint(2, u64::from(*b)),
        Value::I64(n) => w.uint(3, n.cast_unsigned()),
        Value::F64(f) => w.fixed64(4, f.to_bits()),
        Value::String(s) => w.bytes(1, s.as_str().as_bytes()),
        // `ArrayValue`: its values, each an `AnyValue`.
        Value::Array(array) => w.message(5, |w| match array {
            Array::Bool(values) => values.iter().for_each(|b| w.message(1, |w| w.uint(2, u64::from(*b)))),
            Array::I64(values) => values.iter().for_each(|n| w.message(1, |w| w.uint(3, n.cast_unsigned()))),
            Array::F64(values) => values.iter().for_each(|f| w.message(1, |w| w.fixed64(4, f.to_bits()))),
            Array::String(values) => values.iter().for_each(|s| w.message(1, |w| w.bytes(1, s.as_str().as_bytes()))),
            // Kinds of array added to the API later: written as their text, not lost.
            other => w.message(1, |w| w.bytes(1, other.to_string().as_bytes())),
        }),
        other => w.bytes(1, other.to_string().as_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::{Body, ChatBody, NodeMark, Parent, RunBody, ToolBody};
    use opentelemetry::InstrumentationScope;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use prost::Message as _;

    fn record(span_id: u64, parent: u64, status: Kept, body: Body) -> Record {
        let start = Ticks::now();
        Record { span_id, parent, start, end: Ticks::now(), status, body }
    }

    /// A batch with a span of every kind, every optional field set, events and statuses.
    fn every_kind(parent: Option<Parent>) -> Batch {
        let mut batch = Batch::new(0x0123_4567_89ab_cdef_0011_2233_4455_6677, parent, (8, 1024));
        let (graph, node) = (batch.text("research"), batch.text("agent"));
        let (id, value) = (batch.text("interrupt-1"), batch.text("{\"ask\":\"ok?\"}"));
        let (tool, call, arguments, result) =
            (batch.text("lookup"), batch.text("call-7"), batch.text("{\"key\":\"k\"}"), batch.text("v"));
        let (said_no, no_entry) = (batch.text("the model said no"), batch.text("no entry"));
        let chat = ChatBody {
            provider: "openai".into(),
            model: "gpt-4o".into(),
            temperature: Some(0.25),
            max_tokens: Some(300),
            node: "agent".into(),
            step: 3,
            prompt_hash: Some("v1:ab".into()),
            system_instructions: Some("be brief".into()),
            input_messages: Some("[]".into()),
            attempts: 2,
            retries: vec![(Ticks::now(), 1, std::time::Duration::from_millis(250), "429 slow down".into())],
            response_id: Some("resp-1".into()),
            response_model: Some("gpt-4o-2024".into()),
            finish_reasons: Some("[\"stop\"]".into()),
            usage: Some([120, 30, 5]),
            cost: Some(0.0012),
            output_messages: Some("[{}]".into()),
            error_type: None,
        };
        let run = RunBody {
            graph: "research".into(),
            thread: Some("t-1".into()),
            run_id: 42,
            status: "success",
            steps: Some(7),
            input_tokens: Some(120),
            output_tokens: Some(30),
            model_calls: Some(1),
        };
        batch.records = vec![
            record(11, 10, Kept::Unset, Body::Step { step: 3, tasks: 2 }),
            record(
                12,
                11,
                Kept::Ok,
                Body::Node {
                    graph,
                    node,
                    step: 3,
                    task: 1,
                    attempt: 2,
                    mark: NodeMark::Interrupted { at: Ticks::now(), id, value: Some(value) },
                },
            ),
            record(13, 11, Kept::Ok, Body::Node { graph, node, step: 3, task: 0, attempt: 0, mark: NodeMark::Cached }),
            record(14, 12, Kept::Error(said_no), Body::Chat(Box::new(chat))),
            record(
                15,
                12,
                Kept::Error(no_entry),
                Body::Tool(ToolBody {
                    name: tool,
                    call_id: call,
                    index: 0,
                    attempts: Some(1),
                    outcome: Some("failed"),
                    failed: true,
                    arguments: Some(arguments),
                    result: Some(result),
                }),
            ),
            record(
                16,
                10,
                Kept::Unset,
                Body::CheckpointWrite { id: Some(id), step: Some(-1), bytes: 512, writes: 3, batch: 1 },
            ),
            record(10, 0, Kept::Ok, Body::Run(Box::new(run))),
        ];
        batch.anchor = Some(Anchor::now());
        batch
    }

    fn resource() -> Resource {
        Resource::builder()
            .with_service_name("encode-test")
            .with_attributes([
                opentelemetry::KeyValue::new("deployment.environment.name", "test"),
                opentelemetry::KeyValue::new("replicas", 3_i64),
                opentelemetry::KeyValue::new(
                    "zones",
                    opentelemetry::Value::Array(vec![opentelemetry::StringValue::from("a"), "b".into()].into()),
                ),
            ])
            .with_schema_url([], "https://opentelemetry.io/schemas/1.30.0")
            .build()
    }

    /// What the SDK's OTLP exporter sends for `batches`: span data, then its conversion.
    fn through_the_sdk(batches: &[&Batch], resource: &Resource) -> ExportTraceServiceRequest {
        let scope = InstrumentationScope::builder("graphwright").with_version(env!("CARGO_PKG_VERSION")).build();
        let spans = batches.iter().flat_map(|batch| super::super::convert::spans(batch, &scope)).collect();
        let resource_spans = group_spans_by_resource_and_scope(spans, &ResourceAttributesWithSchema::from(resource));
        ExportTraceServiceRequest { resource_spans }
    }

    #[test]
    fn the_request_is_what_the_sdk_exporter_sends() {
        let resource = resource();
        let remote = Parent { span_id: 0xfeed, remote: true, trace_state: "vendor=abc, other=1".into() };
        let (continued, fresh) = (every_kind(Some(remote)), every_kind(None));
        let mut request = Request::new(&resource);
        request.add(&continued);
        request.add(&fresh);
        assert_eq!(request.len(), 14);

        let sent = ExportTraceServiceRequest::decode(request.take().as_slice()).expect("a well-formed request");
        assert_eq!(sent, through_the_sdk(&[&continued, &fresh], &resource));
        let spans = &sent.resource_spans[0].scope_spans[0].spans;
        assert_eq!(spans[0].flags, SAMPLED | HAS_IS_REMOTE, "a step's parent is local");
        assert_eq!(spans[6].flags, SAMPLED | HAS_IS_REMOTE | IS_REMOTE, "the run's parent came from afar");
        assert_eq!(spans[6].trace_state, "vendor=abc,other=1");
        assert_eq!(spans[0].name, "step 3");

        assert_eq!(request.len(), 0, "taking the request empties it");
        request.add(&fresh);
        let again = ExportTraceServiceRequest::decode(request.take().as_slice()).unwrap();
        assert_eq!(again, through_the_sdk(&[&fresh], &resource));
    }

    #[test]
    fn decimals_are_written_in_full() {
        for n in [0, 7, 10, 4_096, u64::MAX] {
            let mut buf = [0; 20];
            assert_eq!(decimal(n, &mut buf), n.to_string());
        }
    }
}
