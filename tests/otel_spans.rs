//! What a run's spans become in OpenTelemetry, read from the SDK's in-memory exporter behind
//! `graphwright::otel`'s export and its layer: the tree run → step →
//! node → model call / tool call, the GenAI attributes, token counts equal to the run's usage,
//! error statuses, interrupts, checkpoint writes, and prompt text only when the capture policy
//! allows it. The export itself, over OTLP to a real receiver, is tried in `otel_phoenix`.
//!
//! Each test runs on one thread under its own subscriber, so no test sees another's spans.

use graphwright::log::CapturePolicy;
use graphwright::model::{FinishReason, ModelReply, ScriptedModel, Usage};
use graphwright::otel::Otel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use opentelemetry::trace::Status;
use opentelemetry::{KeyValue, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SpanData};
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

/// Look a place up.
#[tool]
fn lookup(place: String, api_key: String) -> String {
    let _ = api_key;
    format!("{place}: 717,000 people")
}

/// Fails, as a broken service would.
#[tool]
fn broken(query: String) -> Result<String, ToolError> {
    Err(ToolError::msg("broken", format!("the service is down for {query}")))
}

/// The spans of what `run` does, once it has finished, as export sends them.
async fn spans_of<F: Future>(run: impl FnOnce() -> F) -> (F::Output, Vec<SpanData>) {
    let exporter = InMemorySpanExporter::default();
    let telemetry = Otel::from_env().metrics(false).build_with_exporter(exporter.clone()).unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let output = {
        let _guard = tracing::subscriber::set_default(subscriber);
        run().await
    };
    telemetry.flush().unwrap();
    (output, exporter.get_finished_spans().unwrap())
}

fn attr<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes.iter().find(|kv: &&KeyValue| kv.key.as_str() == key).map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attr(span, key).map_or_else(|| panic!("{} has no {key}", span.name), |v| v.as_str().into_owned())
}

/// A count: recorded as a signed integer, never below zero.
fn int(span: &SpanData, key: &str) -> u64 {
    match attr(span, key) {
        Some(Value::I64(v)) => u64::try_from(*v).unwrap(),
        other => panic!("{} has {key} = {other:?}", span.name),
    }
}

fn named<'a>(spans: &'a [SpanData], name: &str) -> Vec<&'a SpanData> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn one<'a>(spans: &'a [SpanData], name: &str) -> &'a SpanData {
    let found = named(spans, name);
    assert_eq!(found.len(), 1, "one `{name}` span among {:?}", spans.iter().map(|s| &s.name).collect::<Vec<_>>());
    found[0]
}

fn parent_of<'a>(spans: &'a [SpanData], span: &SpanData) -> &'a SpanData {
    spans
        .iter()
        .find(|s| s.span_context.span_id() == span.parent_span_id)
        .unwrap_or_else(|| panic!("the parent of {} is not among the spans", span.name))
}

fn replied(message: Message, input: u64, output: u64, id: &str) -> ModelReply {
    let mut reply = ModelReply::new(message);
    reply.usage = Usage::tokens(input, output);
    reply.response_id = Some(id.to_owned());
    "scripted-2026".clone_into(&mut reply.model);
    if reply.message.has_tool_calls() {
        reply.finish_reason = FinishReason::ToolCalls;
    }
    reply
}

/// A model that asks for both tools (one fails), then answers.
fn script() -> ScriptedModel {
    ScriptedModel::new([
        replied(
            Message::assistant("").with_tool_calls(vec![
                ToolCall::new("c1", "lookup", json!({"place": "Oslo", "api_key": "sk-hidden"})),
                ToolCall::new("c2", "broken", json!({"query": "Bergen"})),
            ]),
            120,
            30,
            "resp-1",
        ),
        replied(Message::assistant("Oslo has 717,000 people; Bergen is unknown."), 200, 15, "resp-2"),
    ])
}

#[tokio::test(flavor = "current_thread")]
async fn a_react_run_is_one_tree_with_genai_attributes_and_its_usage() {
    let model = script();
    let app = react_agent(model.clone(), tools![Lookup, Broken]).name("researcher").compile().unwrap();
    let cfg = RunConfig::thread("t-otel");
    let (out, spans) =
        spans_of(|| app.invoke(MessagesState::new([Message::user("How many live in Oslo and Bergen?")]), &cfg)).await;
    let out = out.unwrap();

    let run = one(&spans, "invoke_agent researcher");
    assert_eq!(run.parent_span_id, opentelemetry::trace::SpanId::INVALID, "the run is the root");
    assert_eq!(text(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(text(run, "gen_ai.agent.name"), "researcher");
    assert_eq!(text(run, "gen_ai.conversation.id"), "t-otel");
    assert_eq!(text(run, "graphwright.run.status"), "success");
    assert_eq!(run.status, Status::Ok);
    assert_eq!(int(run, "gen_ai.usage.input_tokens"), out.usage().input_tokens);
    assert_eq!(int(run, "gen_ai.usage.output_tokens"), out.usage().output_tokens);
    assert_eq!(int(run, "graphwright.steps"), out.steps);

    let chats = named(&spans, "chat scripted");
    assert_eq!(chats.len(), 2);
    let input: u64 = chats.iter().map(|s| int(s, "gen_ai.usage.input_tokens")).sum();
    let output: u64 = chats.iter().map(|s| int(s, "gen_ai.usage.output_tokens")).sum();
    assert_eq!((input, output), (out.usage().input_tokens, out.usage().output_tokens));
    let first = chats.iter().find(|s| text(s, "gen_ai.response.id") == "resp-1").expect("the first call's span");
    assert_eq!(text(first, "gen_ai.operation.name"), "chat");
    assert_eq!(text(first, "gen_ai.provider.name"), "scripted");
    assert_eq!(text(first, "gen_ai.request.model"), "scripted");
    assert_eq!(text(first, "gen_ai.response.model"), "scripted-2026");
    assert_eq!(text(first, "gen_ai.response.finish_reasons"), r#"["tool_calls"]"#);
    assert_eq!(text(first, "graphwright.node"), "agent");
    let asked = &model.requests()[0];
    let hash = graphwright::model::prompt_hash("scripted", &asked.messages, &asked.settings);
    assert_eq!(text(first, "graphwright.prompt_hash"), hash);
    assert!(attr(first, "gen_ai.input.messages").is_none(), "no prompt text under the default policy");
    assert!(attr(first, "gen_ai.output.messages").is_none());

    // run → step → node → call
    let node = parent_of(&spans, first);
    assert_eq!((node.name.as_ref(), text(node, "graphwright.node").as_str()), ("agent", "agent"));
    let step = parent_of(&spans, node);
    assert_eq!(step.name, "step 1");
    assert_eq!(parent_of(&spans, step).span_context.span_id(), run.span_context.span_id());

    let lookup = one(&spans, "execute_tool lookup");
    assert_eq!(text(lookup, "gen_ai.tool.name"), "lookup");
    assert_eq!(text(lookup, "gen_ai.tool.call.id"), "c1");
    assert_eq!(text(lookup, "graphwright.tool.outcome"), "ok");
    assert_eq!(lookup.status, Status::Ok);
    assert!(attr(lookup, "gen_ai.tool.call.arguments").is_none(), "no arguments under the default policy");
    assert_eq!(parent_of(&spans, lookup).name, "tools");

    let broken = one(&spans, "execute_tool broken");
    assert_eq!(text(broken, "graphwright.tool.outcome"), "failed");
    assert_eq!(text(broken, "error.type"), "failed");
    let Status::Error { description } = &broken.status else { panic!("{:?}", broken.status) };
    assert!(description.contains("the service is down for Bergen"), "{description}");
    assert_eq!(parent_of(&spans, broken).span_context.span_id(), parent_of(&spans, lookup).span_context.span_id());

    let writes = named(&spans, "checkpoint_write");
    assert!(writes.len() >= out.steps as usize, "a write per step at least: {}", writes.len());
    assert!(writes.iter().all(|w| int(w, "graphwright.checkpoint.bytes") > 0));
    assert!(writes.iter().all(|w| parent_of(&spans, w).span_context.span_id() == run.span_context.span_id()));
}

#[tokio::test(flavor = "current_thread")]
async fn prompts_completions_and_arguments_go_out_only_when_the_policy_allows_them() {
    let app = react_agent(script(), tools![Lookup, Broken]).compile().unwrap();
    let cfg = RunConfig::default().capture(CapturePolicy::messages());
    let question = "How many live in Oslo and Bergen?";
    let (out, spans) =
        spans_of(|| app.invoke(MessagesState::new([Message::system("Be brief."), Message::user(question)]), &cfg))
            .await;
    out.unwrap();
    let chats = named(&spans, "chat scripted");
    let first = chats.iter().find(|s| text(s, "gen_ai.response.id") == "resp-1").unwrap();
    let input: serde_json::Value = serde_json::from_str(&text(first, "gen_ai.input.messages")).unwrap();
    assert_eq!(input, json!([{"role": "user", "parts": [{"type": "text", "content": question}]}]));
    let system: serde_json::Value = serde_json::from_str(&text(first, "gen_ai.system_instructions")).unwrap();
    assert_eq!(system, json!([{"type": "text", "content": "Be brief."}]));
    let output: serde_json::Value = serde_json::from_str(&text(first, "gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["role"], "assistant");
    assert_eq!(output[0]["finish_reason"], "tool_calls");
    assert_eq!(output[0]["parts"][0]["name"], "lookup");
    assert_eq!(output[0]["parts"][0]["arguments"]["api_key"], "[redacted]", "secret keys are redacted");

    let lookup = one(&spans, "execute_tool lookup");
    let arguments: serde_json::Value = serde_json::from_str(&text(lookup, "gen_ai.tool.call.arguments")).unwrap();
    assert_eq!(arguments, json!({"place": "Oslo", "api_key": "[redacted]"}));
    assert_eq!(text(lookup, "gen_ai.tool.call.result"), "Oslo: 717,000 people");
}

#[tokio::test(flavor = "current_thread")]
async fn a_failed_model_call_and_its_run_carry_the_error() {
    let model = ScriptedModel::new([graphwright::model::ModelError::Auth {
        provider: "scripted".into(),
        status: 401,
        message: "the key was revoked".into(),
    }]);
    let app = react_agent(model, tools![Lookup]).compile().unwrap();
    let cfg = RunConfig::default();
    let (out, spans) = spans_of(|| app.invoke(MessagesState::new([Message::user("hi")]), &cfg)).await;
    assert!(out.is_err());
    let chat = one(&spans, "chat scripted");
    assert_eq!(text(chat, "error.type"), "auth");
    let Status::Error { description } = &chat.status else { panic!("{:?}", chat.status) };
    assert!(description.contains("the key was revoked"), "{description}");
    let node = parent_of(&spans, chat);
    assert!(matches!(node.status, Status::Error { .. }), "the node failed too: {:?}", node.status);
    let run = one(&spans, "invoke_agent agent");
    assert_eq!(text(run, "graphwright.run.status"), "error");
    let Status::Error { description } = &run.status else { panic!("{:?}", run.status) };
    assert!(description.contains("the key was revoked"), "{description}");
}

#[graph]
mod approval {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub approved: bool,
    }

    #[node(entry, next = END)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let approved: bool = rt.interrupt(json!({"question": "ship it?"}))?;
        Ok(StateUpdate::new().approved(approved))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn an_interrupt_is_an_event_of_its_node_and_the_run_says_interrupted() {
    let app = approval::graph().compile().unwrap();
    let cfg = RunConfig::thread("t-interrupt").capture(CapturePolicy::messages());
    let (out, spans) = spans_of(|| app.invoke(approval::State::default(), &cfg)).await;
    assert!(out.unwrap().is_interrupted());
    let node = one(&spans, "ask");
    assert_eq!(node.status, Status::Ok, "a pause is not a failure");
    let event = node.events.iter().find(|e| e.name == "interrupt").expect("an interrupt event");
    let value = event.attributes.iter().find(|kv| kv.key.as_str() == "graphwright.interrupt.value").unwrap();
    assert_eq!(value.value.as_str(), r#"{"question":"ship it?"}"#);
    let run = one(&spans, "invoke_agent approval");
    assert_eq!(text(run, "graphwright.run.status"), "interrupted");

    // Resumed, the finished run says so, and the node's second attempt ran to the end.
    let (out, spans) = spans_of(|| app.resume(&cfg, true)).await;
    assert!(out.unwrap().state.approved);
    assert_eq!(text(one(&spans, "invoke_agent approval"), "graphwright.run.status"), "success");
}

#[tokio::test(flavor = "current_thread")]
async fn a_cached_task_has_a_span_that_says_so() {
    use graphwright::cache::InMemoryCache;
    #[graph]
    mod cached {
        use graphwright::prelude::*;

        #[state]
        pub struct State {
            pub n: u32,
        }

        #[node(entry, next = END, cache = CachePolicy::new())]
        fn double(state: &State) -> StateUpdate {
            StateUpdate::new().n(state.n * 2)
        }
    }
    let app = cached::graph().cache(InMemoryCache::new()).compile().unwrap();
    app.invoke(cached::State { n: 2 }, &RunConfig::default()).await.unwrap();
    let cfg = RunConfig::default();
    let (out, spans) = spans_of(|| app.invoke(cached::State { n: 2 }, &cfg)).await;
    assert_eq!(out.unwrap().state.n, 4);
    let node = one(&spans, "double");
    assert_eq!(attr(node, "graphwright.cached"), Some(&Value::Bool(true)));
}

/// Looks a place up through a service, tracing it as a program does with spans of its own.
#[tool]
fn geocode(place: String) -> String {
    let service = tracing::info_span!("geo_service", place = %place);
    let _service = service.enter();
    let cache = tracing::info_span!("geo_cache");
    let _cache = cache.enter();
    format!("{place}: 59.91 N, 10.75 E")
}

/// An agent named `mapper` whose model calls `geocode` once, then answers.
fn mapper() -> CompiledGraph<MessagesState> {
    let model = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![ToolCall::new("g1", "geocode", json!({"place": "Oslo"}))]),
        Message::assistant("Oslo is at 59.91 N."),
    ]);
    react_agent(model, tools![Geocode]).name("mapper").compile().unwrap()
}

/// The program's own spans and the run's are one tree: the run under the span it was started
/// in, and a span a tool opens under that tool call's span, its own children under it.
#[tokio::test(flavor = "current_thread")]
async fn the_programs_own_spans_and_the_runs_are_one_tree() {
    use tracing::Instrument as _;
    let app = mapper();
    let cfg = RunConfig::default();
    let (out, spans) = spans_of(|| {
        let request = tracing::info_span!("handle_request");
        app.invoke(MessagesState::new([Message::user("Where is Oslo?")]), &cfg).instrument(request)
    })
    .await;
    out.unwrap();

    let request = one(&spans, "handle_request");
    let run = one(&spans, "invoke_agent mapper");
    assert_eq!(run.parent_span_id, request.span_context.span_id(), "the run is inside the request");
    let call = one(&spans, "execute_tool geocode");
    let service = one(&spans, "geo_service");
    assert_eq!(service.parent_span_id, call.span_context.span_id(), "the tool's span is inside its call's");
    assert_eq!(text(service, "place"), "Oslo");
    assert_eq!(one(&spans, "geo_cache").parent_span_id, service.span_context.span_id());
    let trace = request.span_context.trace_id();
    assert!(spans.iter().all(|s| s.span_context.trace_id() == trace), "one trace");
    assert_eq!(named(&spans, "step 1").len(), 1, "the run's spans go out once");
}

/// A node that lends its tools nothing of the run: they run with an environment of their own.
#[graph]
mod lonely {
    use super::Geocode;
    use graphwright::prelude::*;
    use graphwright::tool::ToolEnv;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn look_up(state: &State) -> StateUpdate {
        let _ = state;
        let tools = ToolNode::new(tools![Geocode]);
        let call = ToolCall::new("g9", "geocode", json!({"place": "Bergen"}));
        StateUpdate::new().messages(tools.run_calls(&[call], &ToolEnv::new()).await)
    }
}

/// A tool call made in a node that lent it nothing of the run is still in the run's trace,
/// under the node's span.
#[tokio::test(flavor = "current_thread")]
async fn a_call_without_the_runs_runtime_is_still_under_its_node() {
    let app = lonely::graph().compile().unwrap();
    let cfg = RunConfig::default();
    let (out, spans) = spans_of(|| app.invoke(lonely::StateUpdate::new(), &cfg)).await;
    out.unwrap();
    let call = one(&spans, "execute_tool geocode");
    assert_eq!(parent_of(&spans, call).name, "look_up");
    assert_eq!(text(call, "graphwright.tool.outcome"), "ok");
    assert_eq!(parent_of(&spans, one(&spans, "geo_service")).span_context.span_id(), call.span_context.span_id());
}

/// The targets of the `execute_tool` and `chat` spans made while it is set, as a layer beside
/// export's sees them.
#[derive(Clone, Default)]
struct CallTargets(Arc<Mutex<Vec<(String, &'static str)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for CallTargets {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let meta = attrs.metadata();
        if ["execute_tool", "chat"].contains(&meta.name()) {
            self.0.lock().unwrap().push((meta.name().to_owned(), meta.target()));
        }
    }
}

/// A run the sampler leaves out exports nothing, and export builds nothing for it: its model and
/// tool calls' `tracing` spans are left to the record (which keeps nothing of the run), as a
/// recorded run's are, for other layers to take as any span. A span export built for them would
/// only be dropped by the sampler, at more cost than the whole of a recorded run's spans.
#[tokio::test(flavor = "current_thread")]
async fn a_run_the_sampler_leaves_out_has_nothing_built_for_its_calls() {
    use graphwright::otel::Sampler;
    let app = mapper();
    let exporter = InMemorySpanExporter::default();
    let telemetry = Otel::from_env()
        .metrics(false)
        .sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOff)))
        .build_with_exporter(exporter.clone())
        .unwrap();
    let targets = CallTargets::default();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer()).with(targets.clone());
    let out = {
        let _guard = tracing::subscriber::set_default(subscriber);
        app.invoke(MessagesState::new([Message::user("Where is Oslo?")]), &RunConfig::default()).await
    };
    assert_eq!(out.unwrap().state.messages.last().unwrap().content, "Oslo is at 59.91 N.");
    telemetry.flush().unwrap();
    let names: Vec<String> = exporter.get_finished_spans().unwrap().into_iter().map(|s| s.name.into_owned()).collect();
    assert!(names.is_empty(), "nothing of the run, nor of its tool's own spans, is exported: {names:?}");
    let seen = targets.0.lock().unwrap().clone();
    let recorded = "graphwright::recorded";
    assert_eq!(
        seen,
        [("chat".to_owned(), recorded), ("execute_tool".to_owned(), recorded), ("chat".to_owned(), recorded)],
        "the other layer saw each call's span, left to the record"
    );
}
