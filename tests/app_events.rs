//! The application event stream: text deltas, tool calls from start to result under stable ids
//! (redacted, with progress between), a usage report per model call, and exactly one `Done` or
//! `Error` at the end; tool events also reach a plain run stream in `custom` mode.

use futures::StreamExt;
use graphwright::model::ScriptedModel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use graphwright::stream::AppEvent;
use graphwright::tool::ToolPolicy;
use graphwright::{EventKind, StreamMode};

/// Look a customer up by card number.
#[tool]
fn lookup(card: String, rt: &ToolRuntime) -> String {
    rt.writer().write(json!({"searching": card}));
    format!("customer with card {card}: Ann")
}

/// The weather in a city.
#[tool]
fn weather(city: String) -> String {
    format!("{city}: sunny")
}

fn two_calls() -> Message {
    Message::assistant("").with_tool_calls(vec![
        ToolCall::new("call_a", "lookup", json!({"card": "4111-1111"})),
        ToolCall::new("call_b", "weather", json!({"city": "Oslo"})),
    ])
}

fn agent(model: ScriptedModel) -> graphwright::prebuilt::ReactAgent {
    react_agent(model, tools![Lookup, Weather])
        .tool_node(|node| node.policy("lookup", ToolPolicy::new().redact(|text| text.replace("4111-1111", "[card]"))))
}

fn is_terminal(event: &AppEvent) -> bool {
    matches!(event, AppEvent::Done { .. } | AppEvent::Error { .. })
}

#[tokio::test]
async fn a_turn_with_tools_reads_as_a_chat_front_end_needs_it() {
    let model = ScriptedModel::new([two_calls(), Message::assistant("Ann's weather: sunny.")]);
    let app = agent(model).compile().unwrap();
    let input = MessagesState::new([Message::user("who is 4111-1111, and the weather?")]);
    let events: Vec<AppEvent> = app.app_events(input, &RunConfig::default()).collect().await;

    let terminal: Vec<_> = events.iter().filter(|e| is_terminal(e)).collect();
    assert_eq!(terminal, [&AppEvent::Done { interrupts: vec![] }]);
    assert!(is_terminal(events.last().unwrap()), "the end comes last");
    let usage = events.iter().filter(|e| matches!(e, AppEvent::UsageReport { .. })).count();
    assert_eq!(usage, 2, "one report per model call");

    // Each call: a start, (progress,) a result, under the model's id, redacted.
    for id in ["call_a", "call_b"] {
        let mine: Vec<&AppEvent> = events
            .iter()
            .filter(|e| match e {
                AppEvent::ToolCallStart { id: i, .. }
                | AppEvent::ToolProgress { id: i, .. }
                | AppEvent::ToolCallResult { id: i, .. } => i == id,
                _ => false,
            })
            .collect();
        assert!(matches!(mine.first(), Some(AppEvent::ToolCallStart { .. })), "{id}: {mine:?}");
        assert!(matches!(mine.last(), Some(AppEvent::ToolCallResult { is_error: false, .. })), "{id}: {mine:?}");
    }
    let start = events.iter().find_map(|e| match e {
        AppEvent::ToolCallStart { id, name, args } if id == "call_a" => Some((name.clone(), args.clone())),
        _ => None,
    });
    assert_eq!(start, Some(("lookup".to_owned(), json!({"card": "[card]"}))));
    assert!(events.contains(&AppEvent::ToolProgress { id: "call_a".into(), data: json!({"searching": "[card]"}) }));
    assert!(events.contains(&AppEvent::ToolCallResult {
        id: "call_a".into(),
        result: "customer with card [card]: Ann".into(),
        is_error: false
    }));
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AppEvent::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Ann's weather: sunny.");
    let wire = serde_json::to_value(&events[0]).unwrap();
    assert!(wire["type"].is_string(), "tagged for the browser: {wire}");
}

#[tokio::test]
async fn a_pause_ends_with_its_interrupts_and_a_failure_with_one_error() {
    let model = ScriptedModel::new([two_calls()]);
    let app = agent(model).review_before(["weather"]).compile().unwrap();
    let input = MessagesState::new([Message::user("weather?")]);
    let events: Vec<AppEvent> = app.app_events(input, &RunConfig::thread("paused")).collect().await;
    let Some(AppEvent::Done { interrupts }) = events.last() else { panic!("{events:?}") };
    assert_eq!(interrupts[0].value["tool"], "weather");
    assert!(!events.iter().any(|e| matches!(e, AppEvent::ToolCallStart { .. })), "nothing ran before review");

    let looping = ScriptedModel::new([two_calls(), two_calls()]);
    let app = agent(looping).step_limit(1).compile().unwrap();
    let input = MessagesState::new([Message::user("loop")]);
    let events: Vec<AppEvent> = app.app_events(input, &RunConfig::default()).collect().await;
    assert_eq!(events.iter().filter(|e| is_terminal(e)).count(), 1);
    let Some(AppEvent::Error { message }) = events.last() else { panic!("{events:?}") };
    assert!(message.contains("step_limit"), "{message}");
}

#[tokio::test]
async fn a_cancelled_run_ends_with_one_error() {
    let model = ScriptedModel::new([two_calls(), Message::assistant("done")]);
    let app = agent(model).compile().unwrap();
    let events = app.app_events(MessagesState::new([Message::user("hi")]), &RunConfig::default());
    events.cancel();
    let rest: Vec<AppEvent> = events.collect().await;
    assert_eq!(rest.iter().filter(|e| is_terminal(e)).count(), 1, "{rest:?}");
    assert!(matches!(rest.last(), Some(AppEvent::Error { .. } | AppEvent::Done { .. })), "{rest:?}");
}

#[tokio::test]
async fn tool_events_reach_a_plain_stream_in_custom_mode_only() {
    let model = ScriptedModel::new([two_calls(), Message::assistant("ok")]);
    let app = agent(model.clone()).compile().unwrap();
    let input = || MessagesState::new([Message::user("hi")]);
    let custom: Vec<_> = app.stream(input(), &RunConfig::default(), StreamMode::Custom).collect().await;
    let tool_events: Vec<_> = custom
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Tool { node, event } => Some((node.as_str(), event.tool_call_id().to_owned())),
            _ => None,
        })
        .collect();
    assert_eq!(tool_events.len(), 5, "two starts, one progress, two results: {tool_events:?}");
    assert!(tool_events.iter().all(|(node, _)| *node == "tools"));

    model.push(two_calls());
    model.push(Message::assistant("ok"));
    let updates: Vec<_> = app.stream(input(), &RunConfig::default(), StreamMode::Updates).collect().await;
    assert!(!updates.iter().any(|e| matches!(e.kind, EventKind::Tool { .. } | EventKind::Usage { .. })));
}
