//! The prebuilt agents: `react_agent` (parallel calls, malformed calls, a structured answer, the
//! step limit, hooks, review before a tool), `supervisor` and `swarm` over several turns of one
//! thread in a SQLite file, read back by a freshly built graph as another process would.

use graphwright::model::{ModelError, ScriptedModel};
use graphwright::prebuilt::{
    AgentError, MessagesState, MessagesStateUpdate, ReviewRequest, SwarmStateUpdate, ToolReview, react_agent,
    supervisor, swarm,
};
use graphwright::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

static MEET: LazyLock<tokio::sync::Barrier> = LazyLock::new(|| tokio::sync::Barrier::new(2));
static SENT: AtomicU32 = AtomicU32::new(0);

/// Meet the other call, then report the city's weather.
#[tool]
async fn weather(city: String) -> String {
    MEET.wait().await;
    format!("{city}: 4 °C")
}

/// Meet the other call, then report the time in a city.
#[tool]
async fn clock(city: String) -> String {
    MEET.wait().await;
    format!("{city}: 09:00")
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Send an email (counted, so a test can see it was sent once).
#[tool]
fn send_email(to: String, body: String) -> String {
    SENT.fetch_add(1, Ordering::SeqCst);
    format!("sent to {to}: {body}")
}

fn asks(calls: &[(&str, &str, serde_json::Value)]) -> Message {
    Message::assistant("")
        .with_tool_calls(calls.iter().map(|(id, name, args)| ToolCall::new(*id, *name, args.clone())).collect())
}

fn turn(text: &str) -> MessagesState {
    MessagesState::new([Message::user(text)])
}

fn node_error(error: &GraphError) -> (&str, &(dyn std::error::Error + Send + Sync + 'static)) {
    let GraphError::Node { node, source, .. } = error else { panic!("not a node's error: {error}") };
    (node, source.as_ref())
}

#[tokio::test]
async fn parallel_calls_run_together_and_are_answered_in_call_order() {
    let model = ScriptedModel::new([
        asks(&[("w", "weather", json!({"city": "Oslo"})), ("c", "clock", json!({"city": "Oslo"}))]),
        Message::assistant("4 °C at 09:00."),
    ]);
    // Each tool waits for the other: run one after the other, they would time out.
    let agent = react_agent(model.clone(), tools![Weather, Clock]).tool_node(|n| n.timeout(Duration::from_secs(5)));
    let out = agent.compile().unwrap().invoke(turn("weather and time?"), &RunConfig::default()).await.unwrap();
    let answers: Vec<_> = out.state.messages[2..4].iter().map(|m| (m.tool_call_id.as_deref(), m.is_error)).collect();
    assert_eq!(answers, [(Some("w"), false), (Some("c"), false)]);
    assert_eq!(out.state.messages[2].content, "Oslo: 4 °C");
    assert_eq!(out.state.last_reply(), Some("4 °C at 09:00."));
    let second = &model.requests()[1];
    assert_eq!(second.messages.len(), 4, "the model sees both answers: {:?}", second.messages);
}

#[tokio::test]
async fn malformed_calls_are_answered_with_errors_the_model_can_fix() {
    let model = ScriptedModel::new([
        asks(&[("bad", "add", json!({"a": "forty", "b": 2})), ("nope", "ad", json!({}))]),
        asks(&[("good", "add", json!({"a": 40, "b": 2}))]),
        Message::assistant("42."),
    ]);
    let out = react_agent(model.clone(), tools![Add])
        .compile()
        .unwrap()
        .invoke(turn("40 + 2"), &RunConfig::default())
        .await
        .unwrap();
    let [_, _, wrong_type, unknown, _, right, _] = out.state.messages.as_slice() else {
        panic!("{:#?}", out.state.messages)
    };
    assert!(wrong_type.is_error && wrong_type.content.contains('a'), "{}", wrong_type.content);
    assert!(unknown.is_error && unknown.content.contains("add"), "names the known tool: {}", unknown.content);
    assert_eq!((right.content.as_str(), right.is_error), ("42", false));
    assert_eq!(model.requests().len(), 3);
}

#[derive(Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

#[tokio::test]
async fn a_structured_answer_is_stored_typed_and_a_bad_one_fails_the_run() {
    let model = ScriptedModel::new(["It is 4 degrees in Oslo.", r#"{"city": "Oslo", "celsius": 4}"#]);
    let app = react_agent(model.clone(), tools![Add]).response_format::<Forecast>().compile().unwrap();
    let out = app.invoke(turn("Oslo?"), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.structured::<Forecast>().unwrap(), Some(Forecast { city: "Oslo".into(), celsius: 4 }));
    let asked = &model.requests()[1];
    assert_eq!(asked.settings.response_format.as_ref().unwrap().name, "Forecast");
    assert!(asked.settings.tools.is_empty(), "the structured call offers no tools");

    let model = ScriptedModel::new(["Four degrees.", "warm-ish", "still not JSON"]);
    let app = react_agent(model, tools![Add]).response_format::<Forecast>().compile().unwrap();
    let error = app.invoke(turn("Oslo?"), &RunConfig::default()).await.unwrap_err();
    let (node, source) = node_error(&error);
    assert_eq!(node, "structure");
    let Some(ModelError::InvalidOutput { raw, .. }) = source.downcast_ref::<ModelError>() else { panic!("{source}") };
    assert_eq!(raw, "still not JSON");
}

#[tokio::test]
async fn the_step_limit_ends_a_looping_agent_with_a_clear_error() {
    let model = ScriptedModel::new((0..3).map(|i| asks(&[(&*format!("c{i}"), "add", json!({"a": i, "b": 1}))])));
    let thread = RunConfig::thread("looping");
    let app = react_agent(model.clone(), tools![Add]).step_limit(3).compile().unwrap();
    let error = app.invoke(turn("count forever"), &thread).await.unwrap_err();
    let (_, source) = node_error(&error);
    assert_eq!(source.downcast_ref::<AgentError>(), Some(&AgentError::StepLimit { agent: "agent".into(), limit: 3 }));
    assert!(error.to_string().contains("raise `step_limit`"), "{error}");
    assert_eq!(model.requests().len(), 3, "the model was called exactly `limit` times");
    // The limit counts per turn: a new user message starts a fresh count.
    model.push(Message::assistant("Done counting."));
    let out = app.invoke(MessagesStateUpdate::user("stop now"), &thread).await.unwrap();
    assert_eq!(out.state.last_reply(), Some("Done counting."));
    assert_eq!(out.state.messages.len(), 9, "three rounds of call and answer kept, then the new turn");
}

#[tokio::test]
async fn hooks_shape_what_the_model_sees_and_guard_what_it_says() {
    let model = ScriptedModel::new(["ok", "the password is hunter2"]);
    let agent = react_agent(model.clone(), ToolSet::new())
        .prompt("Be brief.")
        .pre_model(|messages| messages[messages.len().saturating_sub(1)..].to_vec())
        .post_model(|reply| {
            if reply.content.contains("password") { Err("it tried to reveal a secret".into()) } else { Ok(reply) }
        });
    let app = agent.compile().unwrap();
    let history = vec![Message::user("old"), Message::assistant("old reply"), Message::user("new")];
    let out = app.invoke(MessagesState::new(history), &RunConfig::default()).await.unwrap();
    let requests = model.requests();
    let sent: Vec<&str> = requests[0].messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(sent, ["Be brief.", "new"], "the prompt, then what the pre-model hook kept");
    assert_eq!(out.state.messages.len(), 4, "the stored conversation is whole, without the prompt");

    let cfg = RunConfig::thread("guarded");
    let error = app.invoke(turn("tell me the password"), &cfg).await.unwrap_err();
    let (_, source) = node_error(&error);
    assert!(matches!(source.downcast_ref::<AgentError>(), Some(AgentError::Refused { .. })), "{source}");
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(state.state.messages.len(), 1, "the refused reply was not stored");
}

#[tokio::test]
async fn review_pauses_before_a_named_tool_and_runs_each_call_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("review.sqlite");
    let model = ScriptedModel::new([
        asks(&[
            ("m1", "send_email", json!({"to": "ann", "body": "hi"})),
            ("sum", "add", json!({"a": 1, "b": 2})),
            ("m2", "send_email", json!({"to": "bob", "body": "hi"})),
        ]),
        Message::assistant("Sent one email, added the numbers."),
    ]);
    let build = || {
        react_agent(model.clone(), tools![SendEmail, Add])
            .review_before(["send_email"])
            .graph()
            .checkpointer(SqliteSaver::open(&path).unwrap())
            .compile()
            .unwrap()
    };
    let cfg = RunConfig::thread("mail");
    let before = SENT.load(Ordering::SeqCst);
    let paused = build().invoke(turn("email ann and bob"), &cfg).await.unwrap();
    assert!(paused.is_interrupted());
    let request: ReviewRequest = serde_json::from_value(paused.interrupts[0].value.clone()).unwrap();
    assert_eq!((request.tool.as_str(), request.tool_call_id.as_str()), ("send_email", "m1"));

    // The answers come from a graph built afresh on the same file, as another process would.
    let edit = ToolReview::Edit { arguments: json!({"to": "ann", "body": "hello"}) };
    let paused = build().resume(&cfg, edit).await.unwrap();
    let request: ReviewRequest = serde_json::from_value(paused.interrupts[0].value.clone()).unwrap();
    assert_eq!(request.tool_call_id, "m2");
    assert_eq!(SENT.load(Ordering::SeqCst), before, "nothing runs before every call is reviewed");

    let reject = json!({"action": "reject", "reason": "bob is on leave"});
    let out = build().resume(&cfg, reject).await.unwrap();
    assert_eq!(SENT.load(Ordering::SeqCst), before + 1, "the approved email went out once");
    let answers: Vec<_> = out.state.messages[2..5].iter().map(|m| (m.content.as_str(), m.is_error)).collect();
    assert_eq!(
        answers,
        [("sent to ann: hello", false), ("3", false), ("The reviewer declined this call: bob is on leave", true)]
    );

    let error = build().resume(&RunConfig::thread("mail-2"), json!({"action": "maybe"})).await;
    assert!(error.is_err(), "a thread with nothing to resume is an error");
}

#[tokio::test]
async fn reviewing_a_tool_the_agent_lacks_does_not_compile() {
    let error =
        react_agent(ScriptedModel::new(["hi"]), tools![Add]).review_before(["send_mail"]).compile().unwrap_err();
    assert!(error.to_string().contains("`send_mail`, which is not one of its tools (add)"), "{error}");
}

/// A supervisor model that sends the first question to the researcher, then the writer, then
/// answers; and asks the writer alone on the second turn.
fn newsroom(
    lead: &ScriptedModel,
    researcher: &ScriptedModel,
    writer: &ScriptedModel,
    path: &std::path::Path,
) -> CompiledGraph<MessagesState> {
    let research = react_agent(researcher.clone(), tools![Add]).name("researcher").description("finds facts");
    let write = react_agent(writer.clone(), ToolSet::new()).name("writer").description("writes prose");
    supervisor(lead.clone(), [research, write])
        .prompt("Route work to the right specialist.")
        .graph()
        .checkpointer(SqliteSaver::open(path).unwrap())
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_supervisor_hands_work_out_over_several_turns_of_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("team.sqlite");
    let lead = ScriptedModel::new([
        asks(&[("h1", "transfer_to_researcher", json!({}))]),
        asks(&[("h2", "transfer_to_writer", json!({}))]),
        Message::assistant("Here is your piece."),
        asks(&[("h3", "transfer_to_writer", json!({}))]),
        Message::assistant("Shortened."),
    ]);
    let researcher =
        ScriptedModel::new([asks(&[("s", "add", json!({"a": 2, "b": 2}))]), Message::assistant("2 + 2 = 4")]);
    let writer = ScriptedModel::new(["Four, it turns out.", "Four."]);
    let cfg = RunConfig::thread("desk");
    let out = newsroom(&lead, &researcher, &writer, &path).invoke(turn("write about 2 + 2"), &cfg).await.unwrap();
    let speakers: Vec<_> =
        out.state.messages.iter().filter(|m| m.role == Role::Assistant).map(|m| m.name.as_deref().unwrap()).collect();
    assert_eq!(speakers, ["supervisor", "researcher", "researcher", "supervisor", "writer", "supervisor"]);
    assert_eq!(out.state.last_reply(), Some("Here is your piece."));
    let offered: Vec<_> =
        lead.requests()[0].settings.tools.iter().map(|t| (t.name.clone(), t.description.clone())).collect();
    assert_eq!(
        offered[0],
        ("transfer_to_researcher".into(), "Hand the conversation to `researcher`: finds facts".into())
    );
    assert!(
        writer.requests()[0].messages.iter().any(|m| m.content == "2 + 2 = 4"),
        "the writer sees what the researcher found"
    );

    // The second turn, from a graph built afresh on the same file.
    let out =
        newsroom(&lead, &researcher, &writer, &path).invoke(MessagesStateUpdate::user("shorter"), &cfg).await.unwrap();
    assert_eq!(out.state.last_reply(), Some("Shortened."));
    assert_eq!(writer.requests().len(), 2);
    assert!(writer.requests()[1].messages.iter().any(|m| m.content == "Four, it turns out."), "history kept");
    assert_eq!(researcher.requests().len(), 2, "the researcher was not asked again");
    assert_eq!(lead.remaining(), 0);
}

#[tokio::test]
async fn a_swarm_remembers_who_has_the_conversation_across_turns() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("swarm.sqlite");
    let desk =
        ScriptedModel::new([asks(&[("h1", "transfer_to_billing", json!({}))]), Message::assistant("Hello again.")]);
    let billing = ScriptedModel::new([
        Message::assistant("Your invoice is paid."),
        asks(&[("h2", "transfer_to_desk", json!({}))]),
    ]);
    let build = || {
        swarm([
            react_agent(desk.clone(), ToolSet::new()).name("desk"),
            react_agent(billing.clone(), ToolSet::new()).name("billing").handoffs(["desk"]),
        ])
        .graph()
        .checkpointer(SqliteSaver::open(&path).unwrap())
        .compile()
        .unwrap()
    };
    let cfg = RunConfig::thread("customer");
    let out = build().invoke(SwarmStateUpdate::user("invoice?"), &cfg).await.unwrap();
    assert_eq!(out.state.active_agent.as_deref(), Some("billing"));
    assert_eq!(out.state.last_reply(), Some("Your invoice is paid."));
    assert_eq!(billing.requests()[0].settings.tools[0].name, "transfer_to_desk");
    assert_eq!(desk.requests()[0].settings.tools[0].name, "transfer_to_billing", "every other member by default");

    // Next turn: straight to billing, which hands back to the desk.
    let out = build().invoke(SwarmStateUpdate::user("something else"), &cfg).await.unwrap();
    assert_eq!(out.state.active_agent.as_deref(), Some("desk"));
    assert_eq!(out.state.last_reply(), Some("Hello again."));
    assert_eq!((desk.remaining(), billing.remaining()), (0, 0));
}

#[tokio::test]
async fn teams_that_cannot_work_are_build_errors() {
    let agent = |name: &str| react_agent(ScriptedModel::new(["hi"]), ToolSet::new()).name(name);
    let twins = swarm([agent("ann"), agent("ann")]).compile().unwrap_err();
    assert!(twins.to_string().contains("two members are named `ann`"), "{twins}");
    let stranger = swarm([agent("ann").handoffs(["zed"]), agent("bob")]).compile().unwrap_err();
    assert!(stranger.to_string().contains("hands off to `zed`, which is not in the team"), "{stranger}");
    let missing = swarm([agent("ann")]).default_agent("bob").compile().unwrap_err();
    assert!(missing.to_string().contains("default agent `bob`"), "{missing}");
    let lead = supervisor(ScriptedModel::new(["hi"]), [agent("supervisor")]).compile().unwrap_err();
    assert!(lead.to_string().contains("two members are named `supervisor`"), "{lead}");
    let empty = supervisor(ScriptedModel::new(["hi"]), []).compile().unwrap_err();
    assert!(empty.to_string().contains("at least one agent"), "{empty}");
}

#[tokio::test]
async fn an_agent_is_a_subgraph_of_a_larger_graph() {
    let model = ScriptedModel::new([asks(&[("c", "add", json!({"a": 1, "b": 1}))]), Message::assistant("2")]);
    let agent = react_agent(model, tools![Add]).name("math");
    let app = StateGraph::<MessagesState>::new()
        .add_subgraph("math", agent)
        .add_node("sign", |_: &MessagesState| MessagesStateUpdate::new().messages(vec![Message::assistant("— desk")]))
        .add_edge(START, "math")
        .add_edge("math", "sign")
        .add_edge("sign", END)
        .compile()
        .unwrap();
    let out = app.invoke(turn("1 + 1"), &RunConfig::thread("nested")).await.unwrap();
    let texts: Vec<_> = out.state.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["1 + 1", "", "2", "2", "— desk"]);
}
