//! A recorded span as OpenTelemetry's span data: the names, attributes, events and statuses
//! the GenAI conventions give them, as `tracing-opentelemetry` would make of the same spans.

use crate::telemetry::{Anchor, Batch, Body, ChatBody, NodeMark, Record, RunBody, Status, Ticks, ToolBody};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::str::FromStr;

/// The span data of every record of `batch`.
pub(super) fn spans(batch: &Batch, scope: &InstrumentationScope) -> Vec<SpanData> {
    let anchor = batch.anchor.unwrap_or_else(Anchor::now);
    let trace_state = batch
        .parent
        .as_ref()
        .filter(|p| !p.trace_state.is_empty())
        .and_then(|p| TraceState::from_str(&p.trace_state).ok())
        .unwrap_or_default();
    batch.records.iter().map(|record| span(batch, record, &anchor, &trace_state, scope)).collect()
}

fn span(batch: &Batch, record: &Record, anchor: &Anchor, state: &TraceState, scope: &InstrumentationScope) -> SpanData {
    let trace_id = TraceId::from(batch.trace_id);
    let (parent, remote) = match (record.parent, &batch.parent) {
        (0, Some(parent)) => (SpanId::from(parent.span_id), parent.remote),
        (0, None) => (SpanId::INVALID, false),
        (id, _) => (SpanId::from(id), false),
    };
    let attributes = Vec::with_capacity(room(&record.body));
    let mut out = Out { batch, anchor, attributes, events: Vec::new() };
    let (name, kind) = out.body(&record.body);
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
        span_kind: kind,
        name,
        start_time: anchor.wall(record.start),
        end_time: anchor.wall(record.end),
        attributes: out.attributes,
        dropped_attributes_count: 0,
        events,
        links: SpanLinks::default(),
        status: match &record.status {
            Status::Unset => opentelemetry::trace::Status::Unset,
            Status::Ok => opentelemetry::trace::Status::Ok,
            Status::Error(description) => opentelemetry::trace::Status::error(description.clone()),
        },
        instrumentation_scope: scope.clone(),
    }
}

/// How many attributes a span of `body`'s kind carries at most: made with room for them, its
/// attributes are not copied over as they grow (most of the conversion's cost, otherwise).
fn room(body: &Body) -> usize {
    match body {
        Body::Run(_) | Body::Tool(_) => 10,
        Body::Step { .. } => 2,
        Body::Node { .. } => 6,
        Body::Chat(_) => 20,
        Body::CheckpointWrite { .. } => 5,
    }
}

/// A span's attributes and events as they are made.
struct Out<'a> {
    batch: &'a Batch,
    anchor: &'a Anchor,
    attributes: Vec<KeyValue>,
    events: Vec<opentelemetry::trace::Event>,
}

/// A count as OpenTelemetry's signed integer (saturating).
fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

impl Out<'_> {
    fn str(&mut self, key: &'static str, value: impl Into<opentelemetry::StringValue>) {
        self.attributes.push(KeyValue::new(key, opentelemetry::Value::String(value.into())));
    }

    fn text(&mut self, key: &'static str, text: crate::telemetry::Text) {
        self.str(key, self.batch.get(text).to_owned());
    }

    fn int(&mut self, key: &'static str, value: impl TryInto<i64>) {
        self.attributes.push(KeyValue::new(key, int(value)));
    }

    fn event(
        &mut self,
        name: &'static str,
        at: Ticks,
        level: &'static str,
        target: &'static str,
        mut attributes: Vec<KeyValue>,
    ) {
        attributes.push(KeyValue::new("level", level));
        attributes.push(KeyValue::new("target", target));
        self.events.push(opentelemetry::trace::Event::new(name, self.anchor.wall(at), attributes, 0));
    }

    /// The span's name and kind; its attributes and events into `self`.
    fn body(&mut self, body: &Body) -> (Cow<'static, str>, SpanKind) {
        match body {
            Body::Run(run) => (self.run(run).into(), SpanKind::Internal),
            Body::Step { step, tasks } => {
                self.int("graphwright.step", *step);
                self.int("graphwright.tasks", *tasks);
                let mut name = String::with_capacity(24);
                name.push_str("step ");
                // `format!` would cost a fifth of this thread's time: one span in three is a step.
                let _ = write!(name, "{step}");
                (name.into(), SpanKind::Internal)
            }
            Body::Node { graph, node, step, task, attempt, mark } => {
                let name = self.batch.get(*node).to_owned();
                self.text("graphwright.graph", *graph);
                self.str("graphwright.node", name.clone());
                self.int("graphwright.step", *step);
                self.int("graphwright.task", *task);
                self.int("graphwright.attempt", *attempt);
                match mark {
                    NodeMark::Ran => {}
                    NodeMark::Cached => self.attributes.push(KeyValue::new("graphwright.cached", true)),
                    NodeMark::Resumed => self.attributes.push(KeyValue::new("graphwright.resumed", true)),
                    NodeMark::Interrupted { at, id, value } => {
                        let mut attributes =
                            vec![KeyValue::new("graphwright.interrupt.id", self.batch.get(*id).to_owned())];
                        if let Some(value) = value {
                            attributes
                                .push(KeyValue::new("graphwright.interrupt.value", self.batch.get(*value).to_owned()));
                        }
                        self.event("interrupt", *at, "INFO", "graphwright::pregel::span", attributes);
                    }
                }
                (name.into(), SpanKind::Internal)
            }
            Body::Chat(chat) => (self.chat(chat).into(), SpanKind::Client),
            Body::Tool(tool) => (self.tool(tool).into(), SpanKind::Internal),
            Body::CheckpointWrite { id, step, bytes, writes, batch } => {
                if let Some(id) = id {
                    self.text("graphwright.checkpoint.id", *id);
                }
                if let Some(step) = step {
                    self.int("graphwright.checkpoint.step", *step);
                }
                self.int("graphwright.checkpoint.bytes", *bytes);
                self.int("graphwright.checkpoint.writes", *writes);
                self.int("graphwright.checkpoint.batch", *batch);
                ("checkpoint_write".into(), SpanKind::Internal)
            }
        }
    }

    fn run(&mut self, run: &RunBody) -> String {
        self.str("gen_ai.operation.name", "invoke_agent");
        self.str("gen_ai.agent.name", run.graph.clone());
        if let Some(thread) = &run.thread {
            self.str("gen_ai.conversation.id", thread.clone());
        }
        self.str("graphwright.graph", run.graph.clone());
        self.int("graphwright.run.id", run.run_id);
        self.str("graphwright.run.status", run.status);
        for (key, value) in [
            ("graphwright.steps", run.steps),
            ("gen_ai.usage.input_tokens", run.input_tokens),
            ("gen_ai.usage.output_tokens", run.output_tokens),
            ("graphwright.model_calls", run.model_calls),
        ] {
            if let Some(value) = value {
                self.int(key, value);
            }
        }
        ["invoke_agent ", &run.graph].concat()
    }

    fn chat(&mut self, chat: &ChatBody) -> String {
        self.str("gen_ai.operation.name", "chat");
        self.str("gen_ai.provider.name", chat.provider.clone());
        self.str("gen_ai.request.model", chat.model.clone());
        if let Some(temperature) = chat.temperature {
            self.attributes.push(KeyValue::new("gen_ai.request.temperature", temperature));
        }
        if let Some(max) = chat.max_tokens {
            self.int("gen_ai.request.max_tokens", max);
        }
        for (key, value) in [
            ("gen_ai.response.id", &chat.response_id),
            ("gen_ai.response.model", &chat.response_model),
            ("gen_ai.response.finish_reasons", &chat.finish_reasons),
            ("gen_ai.system_instructions", &chat.system_instructions),
            ("gen_ai.input.messages", &chat.input_messages),
            ("gen_ai.output.messages", &chat.output_messages),
            ("graphwright.prompt_hash", &chat.prompt_hash),
        ] {
            if let Some(value) = value {
                self.str(key, value.clone());
            }
        }
        if let Some([input, output, cached]) = chat.usage {
            self.int("gen_ai.usage.input_tokens", input);
            self.int("gen_ai.usage.output_tokens", output);
            self.int("gen_ai.usage.cache_read.input_tokens", cached);
        }
        if let Some(cost) = chat.cost {
            self.attributes.push(KeyValue::new("graphwright.cost", cost));
        }
        if let Some(kind) = chat.error_type {
            self.str("error.type", kind);
        }
        self.str("graphwright.node", chat.node.clone());
        self.int("graphwright.step", chat.step);
        self.int("graphwright.attempts", chat.attempts);
        for (at, attempt, wait, error) in &chat.retries {
            let attributes = vec![
                KeyValue::new("attempt", int(*attempt)),
                KeyValue::new("wait", format!("{wait:?}")),
                KeyValue::new("error", error.clone()),
            ];
            self.event("model call failed; retrying", *at, "WARN", "graphwright::model::call", attributes);
        }
        ["chat ", &chat.model].concat()
    }

    fn tool(&mut self, tool: &ToolBody) -> String {
        let name = self.batch.get(tool.name).to_owned();
        self.str("gen_ai.operation.name", "execute_tool");
        self.str("gen_ai.tool.name", name.clone());
        self.text("gen_ai.tool.call.id", tool.call_id);
        self.str("gen_ai.tool.type", "function");
        if let Some(arguments) = tool.arguments {
            self.text("gen_ai.tool.call.arguments", arguments);
        }
        if let Some(result) = tool.result {
            self.text("gen_ai.tool.call.result", result);
        }
        if let Some(kind) = tool.error_type {
            self.str("error.type", kind);
        }
        self.int("graphwright.tool.index", tool.index);
        if let Some(outcome) = tool.outcome {
            self.str("graphwright.tool.outcome", outcome);
        }
        if let Some(attempts) = tool.attempts {
            self.int("graphwright.tool.attempts", attempts);
        }
        ["execute_tool ", &name].concat()
    }
}
