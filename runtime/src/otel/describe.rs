//! What a recorded span says in OpenTelemetry: its name, kind, attributes and events, as the
//! GenAI conventions give them and as `tracing-opentelemetry` made them of the runtime's
//! `tracing` spans. Written once here, for two renderings: the SDK's span data
//! ([`convert`](super::convert), for an exporter of the program's own and for gRPC) and OTLP's
//! protobuf written straight from the record ([`encode`](super::encode)).

use crate::telemetry::{Batch, Body, ChatBody, NodeMark, RunBody, Ticks, ToolBody};
use opentelemetry::trace::TraceState;
use std::str::FromStr;

/// An attribute's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Val<'a> {
    Str(&'a str),
    Int(i64),
    Bool(bool),
    Float(f64),
}

/// Where a span's attributes and events go.
pub(super) trait Out {
    /// An attribute of the span.
    fn attr(&mut self, key: &'static str, value: Val<'_>);
    /// An event of the span, at `at`.
    fn event(&mut self, name: &'static str, at: Ticks, attributes: &[(&'static str, Val<'_>)]);
}

/// A span's name: a fixed part and, after it, the part that varies.
#[derive(Clone, Copy, Debug)]
pub(super) struct Name<'a> {
    pub(super) prefix: &'static str,
    pub(super) tail: Tail<'a>,
}

/// The part of a span's name that varies.
#[derive(Clone, Copy, Debug)]
pub(super) enum Tail<'a> {
    None,
    Str(&'a str),
    Int(u64),
}

impl Name<'_> {
    /// The name as one string.
    pub(super) fn to_text(self) -> String {
        let mut name = String::with_capacity(self.prefix.len() + 20);
        name.push_str(self.prefix);
        match self.tail {
            Tail::None => {}
            Tail::Str(tail) => name.push_str(tail),
            Tail::Int(n) => name.push_str(decimal(n, &mut [0; 20])),
        }
        name
    }
}

/// `n` in decimal, written at the end of `buf` (`format!` cost a fifth of the conversion to
/// span data: one span in three is a step, named by its number).
pub(super) fn decimal(mut n: u64, buf: &mut [u8; 20]) -> &str {
    let mut at = buf.len();
    loop {
        at -= 1;
        // A digit: cannot truncate.
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[at..]).unwrap_or_default()
}

/// A span's kind, as OpenTelemetry has them (those a run makes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    Internal,
    Client,
}

/// The trace state the spans of `batch` carry: the `tracestate` of the span the run continues,
/// parsed (none when it does not parse).
pub(super) fn trace_state(batch: &Batch) -> TraceState {
    batch
        .parent
        .as_ref()
        .filter(|p| !p.trace_state.is_empty())
        .and_then(|p| TraceState::from_str(&p.trace_state).ok())
        .unwrap_or_default()
}

/// How many attributes a span of `body`'s kind carries at most (room made for them up front).
pub(super) fn room(body: &Body) -> usize {
    match body {
        Body::Run(_) | Body::Tool(_) => 10,
        Body::Step { .. } => 2,
        Body::Node { .. } => 6,
        Body::Chat(_) => 20,
        Body::CheckpointWrite { .. } => 5,
    }
}

/// A count as OpenTelemetry's signed integer (saturating).
fn int(n: impl TryInto<i64>) -> Val<'static> {
    Val::Int(n.try_into().unwrap_or(i64::MAX))
}

/// Says what `body` carries into `out`; gives the span's name and kind.
pub(super) fn describe<'a>(batch: &'a Batch, body: &'a Body, out: &mut impl Out) -> (Name<'a>, Kind) {
    match body {
        Body::Run(run) => (self::run(run, out), Kind::Internal),
        Body::Step { step, tasks } => {
            out.attr("graphwright.step", int(*step));
            out.attr("graphwright.tasks", int(*tasks));
            (Name { prefix: "step ", tail: Tail::Int(*step) }, Kind::Internal)
        }
        Body::Node { graph, node, step, task, attempt, mark } => {
            let name = batch.get(*node);
            out.attr("graphwright.graph", Val::Str(batch.get(*graph)));
            out.attr("graphwright.node", Val::Str(name));
            out.attr("graphwright.step", int(*step));
            out.attr("graphwright.task", int(*task));
            out.attr("graphwright.attempt", int(*attempt));
            match mark {
                NodeMark::Ran => {}
                NodeMark::Cached => out.attr("graphwright.cached", Val::Bool(true)),
                NodeMark::Resumed => out.attr("graphwright.resumed", Val::Bool(true)),
                NodeMark::Interrupted { at, id, value } => {
                    let id = ("graphwright.interrupt.id", Val::Str(batch.get(*id)));
                    let (level, target) =
                        (("level", Val::Str("INFO")), ("target", Val::Str("graphwright::pregel::span")));
                    match value {
                        Some(value) => {
                            let value = ("graphwright.interrupt.value", Val::Str(batch.get(*value)));
                            out.event("interrupt", *at, &[id, value, level, target]);
                        }
                        None => out.event("interrupt", *at, &[id, level, target]),
                    }
                }
            }
            (Name { prefix: "", tail: Tail::Str(name) }, Kind::Internal)
        }
        Body::Chat(chat) => (self::chat(chat, out), Kind::Client),
        Body::Tool(tool) => (self::tool(batch, tool, out), Kind::Internal),
        Body::CheckpointWrite { id, step, bytes, writes, batch: stored } => {
            if let Some(id) = id {
                out.attr("graphwright.checkpoint.id", Val::Str(batch.get(*id)));
            }
            if let Some(step) = step {
                out.attr("graphwright.checkpoint.step", Val::Int(*step));
            }
            out.attr("graphwright.checkpoint.bytes", int(*bytes));
            out.attr("graphwright.checkpoint.writes", int(*writes));
            out.attr("graphwright.checkpoint.batch", int(*stored));
            (Name { prefix: "checkpoint_write", tail: Tail::None }, Kind::Internal)
        }
    }
}

fn run<'a>(run: &'a RunBody, out: &mut impl Out) -> Name<'a> {
    out.attr("gen_ai.operation.name", Val::Str("invoke_agent"));
    out.attr("gen_ai.agent.name", Val::Str(&run.graph));
    if let Some(thread) = &run.thread {
        out.attr("gen_ai.conversation.id", Val::Str(thread));
    }
    out.attr("graphwright.graph", Val::Str(&run.graph));
    out.attr("graphwright.run.id", int(run.run_id));
    out.attr("graphwright.run.status", Val::Str(run.status));
    for (key, value) in [
        ("graphwright.steps", run.steps),
        ("gen_ai.usage.input_tokens", run.input_tokens),
        ("gen_ai.usage.output_tokens", run.output_tokens),
        ("graphwright.model_calls", run.model_calls),
    ] {
        if let Some(value) = value {
            out.attr(key, int(value));
        }
    }
    Name { prefix: "invoke_agent ", tail: Tail::Str(&run.graph) }
}

fn chat<'a>(chat: &'a ChatBody, out: &mut impl Out) -> Name<'a> {
    out.attr("gen_ai.operation.name", Val::Str("chat"));
    out.attr("gen_ai.provider.name", Val::Str(&chat.provider));
    out.attr("gen_ai.request.model", Val::Str(&chat.model));
    if let Some(temperature) = chat.temperature {
        out.attr("gen_ai.request.temperature", Val::Float(temperature));
    }
    if let Some(max) = chat.max_tokens {
        out.attr("gen_ai.request.max_tokens", int(max));
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
            out.attr(key, Val::Str(value));
        }
    }
    if let Some([input, output, cached]) = chat.usage {
        out.attr("gen_ai.usage.input_tokens", int(input));
        out.attr("gen_ai.usage.output_tokens", int(output));
        out.attr("gen_ai.usage.cache_read.input_tokens", int(cached));
    }
    if let Some(cost) = chat.cost {
        out.attr("graphwright.cost", Val::Float(cost));
    }
    if let Some(kind) = chat.error_type {
        out.attr("error.type", Val::Str(kind));
    }
    out.attr("graphwright.node", Val::Str(&chat.node));
    out.attr("graphwright.step", int(chat.step));
    out.attr("graphwright.attempts", int(chat.attempts));
    for (at, attempt, wait, error) in &chat.retries {
        let wait = format!("{wait:?}");
        let attributes = [
            ("attempt", int(*attempt)),
            ("wait", Val::Str(&wait)),
            ("error", Val::Str(error)),
            ("level", Val::Str("WARN")),
            ("target", Val::Str("graphwright::model::call")),
        ];
        out.event("model call failed; retrying", *at, &attributes);
    }
    Name { prefix: "chat ", tail: Tail::Str(&chat.model) }
}

fn tool<'a>(batch: &'a Batch, tool: &ToolBody, out: &mut impl Out) -> Name<'a> {
    let name = batch.get(tool.name);
    out.attr("gen_ai.operation.name", Val::Str("execute_tool"));
    out.attr("gen_ai.tool.name", Val::Str(name));
    out.attr("gen_ai.tool.call.id", Val::Str(batch.get(tool.call_id)));
    out.attr("gen_ai.tool.type", Val::Str("function"));
    if let Some(arguments) = tool.arguments {
        out.attr("gen_ai.tool.call.arguments", Val::Str(batch.get(arguments)));
    }
    if let Some(result) = tool.result {
        out.attr("gen_ai.tool.call.result", Val::Str(batch.get(result)));
    }
    if let Some(kind) = tool.outcome.filter(|_| tool.failed) {
        out.attr("error.type", Val::Str(kind));
    }
    out.attr("graphwright.tool.index", int(tool.index));
    if let Some(outcome) = tool.outcome {
        out.attr("graphwright.tool.outcome", Val::Str(outcome));
    }
    if let Some(attempts) = tool.attempts {
        out.attr("graphwright.tool.attempts", int(attempts));
    }
    Name { prefix: "execute_tool ", tail: Tail::Str(name) }
}
