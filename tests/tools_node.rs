//! `ToolNode`: every call of the last assistant message gets exactly one tool message, in call
//! order, whatever the model sent and whatever the tool did.

use graphwright::prelude::*;
use graphwright::tool::{ToolEnv, ToolEvent, ToolPolicy};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static ADDS: AtomicUsize = AtomicUsize::new(0);

/// Add two integers.
#[tool]
fn add(
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
) -> i64 {
    ADDS.fetch_add(1, Ordering::SeqCst);
    a + b
}

/// Divide `a` by `b`.
#[tool]
fn divide(a: i64, b: i64) -> Result<i64, String> {
    a.checked_div(b).ok_or_else(|| "division by zero: pick a `b` other than 0".to_owned())
}

/// Always crashes.
#[tool]
fn crash(reason: String) -> String {
    panic!("{reason}")
}

/// Sleeps, then answers.
#[tool]
async fn slow(millis: u64) -> String {
    tokio::time::sleep(Duration::from_millis(millis)).await;
    format!("slept {millis} ms")
}

fn ask(calls: Vec<ToolCall>) -> Vec<Message> {
    vec![Message::user("go"), Message::assistant("").with_tool_calls(calls)]
}

fn ids(messages: &[Message]) -> Vec<&str> {
    messages.iter().map(|m| m.tool_call_id.as_deref().unwrap_or("")).collect()
}

#[tokio::test]
async fn malformed_calls_each_get_one_error_and_valid_siblings_still_run() {
    let node = ToolNode::new(tools![Add, Divide]);
    let before = ADDS.load(Ordering::SeqCst);
    let calls = vec![
        ToolCall::new("ok", "add", json!({"a": 1, "b": 2})),
        ToolCall::from_text("json", "add", r#"{"a": 1, "b": "#),
        ToolCall::new("missing", "add", json!({"a": 1})),
        ToolCall::new("type", "add", json!({"a": 1, "b": "two"})),
        ToolCall::new("extra", "add", json!({"a": 1, "b": 2, "c": 3})),
        ToolCall::new("unknown", "ad", json!({"a": 1, "b": 2})),
        ToolCall::new("twice", "add", json!({"a": 10, "b": 20})),
        ToolCall::new("twice", "add", json!({"a": 30, "b": 40})),
        ToolCall::new("text", "add", Value::String(r#"{"a": 5, "b": 6}"#.to_owned())),
    ];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;

    assert_eq!(ids(&out), ["ok", "json", "missing", "type", "extra", "unknown", "twice", "twice", "text"]);
    let errors: Vec<bool> = out.iter().map(|m| m.is_error).collect();
    assert_eq!(errors, [false, true, true, true, true, true, false, true, false]);
    assert!(out.iter().all(|m| m.role == Role::Tool && m.id.is_some()));
    let message_ids: std::collections::HashSet<_> = out.iter().map(|m| m.id.clone()).collect();
    assert_eq!(message_ids.len(), out.len(), "every tool message has its own id");

    assert_eq!(out[0].content, "3");
    assert!(out[1].content.contains("not valid JSON"), "{}", out[1].content);
    assert_eq!(
        out[2].content,
        "invalid arguments for tool `add`: field `b`: this required field is missing \
         (an integer: The second term.); fix them and call the tool again"
    );
    assert_eq!(
        out[3].content,
        "invalid arguments for tool `add`: field `b`: expected an integer, got the string \"two\"; \
         fix them and call the tool again"
    );
    assert!(out[4].content.contains("field `c`: unknown field"), "{}", out[4].content);
    assert_eq!(
        out[5].content,
        "there is no tool named `ad` (did you mean `add`?); the tools you can call are: `add`, `divide`"
    );
    assert_eq!(out[6].content, "30");
    assert!(out[7].content.contains("already used by call 7"), "{}", out[7].content);
    assert_eq!(out[8].content, "11");
    assert_eq!(ADDS.load(Ordering::SeqCst) - before, 3, "only the three valid calls ran");
}

#[tokio::test]
async fn a_tool_error_a_panic_and_a_bad_name_do_not_stop_the_others() {
    let node = ToolNode::new(tools![Divide, Crash]);
    let calls = vec![
        ToolCall::new("c1", "divide", json!({"a": 1, "b": 0})),
        ToolCall::new("c2", "crash", json!({"reason": "boom"})),
        ToolCall::new("c3", "divide", json!({"a": 9, "b": 3})),
    ];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!(ids(&out), ["c1", "c2", "c3"]);
    assert_eq!(out[0].content, "tool `divide` failed: division by zero: pick a `b` other than 0");
    assert!(out[0].is_error);
    assert_eq!(out[1].content, "tool `crash` crashed (boom); this is a bug in the tool, not in your arguments");
    assert!(out[1].is_error);
    assert_eq!((out[2].content.as_str(), out[2].is_error), ("3", false));
    assert_eq!(out[1].name.as_deref(), Some("crash"));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_becomes_an_error_message() {
    let node = ToolNode::new(tools![Slow]).policy("slow", ToolPolicy::new().timeout(Duration::from_millis(100)));
    let calls = vec![
        ToolCall::new("fast", "slow", json!({"millis": 10})),
        ToolCall::new("late", "slow", json!({"millis": 60_000})),
    ];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!(out[0].content, "slept 10 ms");
    assert_eq!(
        out[1].content,
        "tool `slow` did not finish within 100ms and was stopped; try a smaller request or another tool"
    );
    assert!(out[1].is_error);
}

static FLAKY_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Fails twice, then works.
#[tool]
fn flaky() -> Result<String, std::io::Error> {
    match FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) {
        0 | 1 => Err(std::io::Error::other("the backend is busy")),
        n => Ok(format!("worked on attempt {}", n + 1)),
    }
}

fn recorder() -> (Arc<Mutex<Vec<ToolEvent>>>, impl Fn(ToolEvent) + Send + Sync + 'static) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    (events, move |event| sink.lock().unwrap().push(event))
}

#[tokio::test(start_paused = true)]
async fn failures_are_retried_under_the_policy_and_bad_arguments_never() {
    let (events, sink) = recorder();
    let retry = RetryPolicy::new(3).initial_backoff(Duration::from_millis(5));
    let node = ToolNode::new(tools![Flaky, Add]).default_policy(ToolPolicy::new().retry(retry)).on_event(sink);
    let calls = vec![ToolCall::new("f", "flaky", json!({})), ToolCall::new("bad", "add", json!({"a": "x", "b": 1}))];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!((out[0].content.as_str(), out[0].is_error), ("worked on attempt 3", false));
    assert!(out[1].is_error);
    let attempts: Vec<(String, u32)> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            ToolEvent::Finished { tool_call_id, attempts, .. } => Some((tool_call_id.clone(), *attempts)),
            _ => None,
        })
        .collect();
    assert!(attempts.contains(&("f".to_owned(), 3)), "{attempts:?}");
    assert!(attempts.contains(&("bad".to_owned(), 0)), "{attempts:?}");
}

/// Looks up an account, and reports progress.
#[tool]
fn account(id: String, rt: &ToolRuntime) -> String {
    rt.writer().write(json!({"step": format!("fetching {id} with key sk-live-123")}));
    format!("account {id}: balance 10, api key sk-live-123")
}

#[tokio::test]
async fn redaction_keeps_secrets_out_of_events_and_messages() {
    let (events, sink) = recorder();
    let node = ToolNode::new(tools![Account])
        .policy("account", ToolPolicy::new().redact(|text| text.replace("sk-live-123", "[key]")))
        .on_event(sink);
    let calls = vec![ToolCall::new("a1", "account", json!({"id": "sk-live-123"}))];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!(out[0].content, "account [key]: balance 10, api key [key]");
    let events = events.lock().unwrap();
    let text = serde_json::to_string(&*events).unwrap();
    assert!(!text.contains("sk-live"), "{text}");
    assert_eq!(events.len(), 3);
    assert!(matches!(&events[0], ToolEvent::Started { arguments, .. } if arguments == &json!({"id": "[key]"})));
    assert!(
        matches!(&events[1], ToolEvent::Progress { data, .. } if data == &json!({"step": "fetching [key] with key [key]"}))
    );
    assert!(matches!(&events[2], ToolEvent::Finished { is_error: false, .. }));
    assert!(events.iter().all(|e| e.tool_call_id() == "a1"));
}

#[tokio::test]
async fn a_result_check_rejects_a_result() {
    let check = ToolPolicy::new().check_result(|out| {
        if out.clone().into_content().parse::<i64>().is_ok_and(|n| n < 100) {
            Ok(())
        } else {
            Err("results must stay below 100".into())
        }
    });
    let node = ToolNode::new(tools![Add]).policy("add", check);
    let calls =
        vec![ToolCall::new("s", "add", json!({"a": 1, "b": 2})), ToolCall::new("l", "add", json!({"a": 100, "b": 2}))];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!(out[0].content, "3");
    assert_eq!(out[1].content, "tool `add` returned a result that failed its check: results must stay below 100");
}

#[tokio::test(start_paused = true)]
async fn fifty_calls_finish_in_any_order_and_are_answered_in_call_order() {
    let (events, sink) = recorder();
    let node = ToolNode::new(tools![Slow]).on_event(sink);
    // A fixed shuffle of delays, so that calls finish in an order unrelated to their own.
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let calls: Vec<ToolCall> = (0..50)
        .map(|i| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ToolCall::new(format!("call_{i}"), "slow", json!({"millis": seed % 1000}))
        })
        .collect();
    let out = node.run_in(&ask(calls.clone()), &ToolEnv::new()).await;

    assert_eq!(out.len(), 50);
    for (call, message) in calls.iter().zip(&out) {
        assert_eq!(message.tool_call_id.as_deref(), Some(call.id.as_str()));
        assert_eq!(message.content, format!("slept {} ms", call.arguments["millis"]));
        assert!(!message.is_error);
    }
    let finished: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(e, ToolEvent::Finished { .. }))
        .map(|e| e.tool_call_id().to_owned())
        .collect();
    let call_order: Vec<String> = calls.iter().map(|c| c.id.clone()).collect();
    assert_eq!(finished.len(), 50);
    assert_ne!(finished, call_order, "the calls ran concurrently and finished out of order");
    let mut sorted = finished.clone();
    sorted.sort();
    let mut expected = call_order.clone();
    expected.sort();
    assert_eq!(sorted, expected, "one result per id");
}

#[tokio::test]
async fn every_call_has_a_start_then_a_finish_under_its_id() {
    let (events, sink) = recorder();
    let node = ToolNode::new(tools![Add]).on_event(sink);
    let calls = vec![
        ToolCall::new("x", "add", json!({"a": 1, "b": 1})),
        ToolCall::new("y", "nope", json!({})),
        ToolCall::new("x", "add", json!({"a": 2, "b": 2})),
    ];
    node.run_in(&ask(calls), &ToolEnv::new()).await;
    let events = events.lock().unwrap();
    for index in 0..3 {
        let mine: Vec<&ToolEvent> = events
            .iter()
            .filter(|e| match e {
                ToolEvent::Started { index: i, .. } | ToolEvent::Finished { index: i, .. } => *i == index,
                _ => false,
            })
            .collect();
        assert_eq!(mine.len(), 2, "call {index}: {mine:?}");
        assert!(matches!(mine[0], ToolEvent::Started { .. }));
        assert!(matches!(mine[1], ToolEvent::Finished { .. }));
        assert_eq!(mine[0].tool_call_id(), mine[1].tool_call_id());
    }
}

#[tokio::test]
async fn only_the_last_message_is_read() {
    let node = ToolNode::new(tools![Add]);
    let mut history = ask(vec![ToolCall::new("c", "add", json!({"a": 1, "b": 1}))]);
    history.push(Message::tool("c", "2"));
    assert!(node.run_in(&history, &ToolEnv::new()).await.is_empty());
    assert!(node.run_in(&[], &ToolEnv::new()).await.is_empty());
    assert!(node.run_in(&[Message::assistant("no tools")], &ToolEnv::new()).await.is_empty());
}

#[test]
fn tools_condition_routes_on_the_last_message() {
    let call = ToolCall::new("c", "add", json!({}));
    assert_eq!(tools_condition(&ask(vec![call.clone()])), graphwright::tool::ToolRoute::Tools);
    assert_eq!(tools_condition(&[Message::assistant("done")]), graphwright::tool::ToolRoute::End);
    assert_eq!(tools_condition(&[]), graphwright::tool::ToolRoute::End);
    let mut answered = ask(vec![call]);
    answered.push(Message::tool("c", "ok"));
    assert_eq!(tools_condition(&answered).pick("tools", "end"), "end");
}

#[tokio::test]
async fn what_a_model_sent_is_echoed_in_errors_only_in_part() {
    let node = ToolNode::new(tools![Add]);
    let huge = "x".repeat(1 << 20);
    let many_fields: serde_json::Map<String, Value> = (0..500).map(|i| (format!("f{i}"), json!(i))).collect();
    let calls = vec![
        ToolCall::new("name", huge.clone(), json!({})),
        ToolCall::new(huge.clone(), "add", json!({"a": 1, "b": 2})),
        ToolCall::new(huge.clone(), "add", json!({"a": 1, "b": 2})),
        ToolCall::new("field", "add", json!({"a": 1, "b": 2, huge.clone(): 3})),
        ToolCall::new("fields", "add", Value::Object(many_fields)),
        ToolCall::new("value", "add", json!({"a": 1, "b": huge})),
    ];
    let out = node.run_in(&ask(calls), &ToolEnv::new()).await;
    assert_eq!(out.len(), 6);
    for message in &out {
        assert!(
            message.content.len() < 2_000,
            "an error repeats at most a little of what the model sent: {} bytes",
            message.content.len()
        );
    }
    assert!(out[0].content.starts_with("there is no tool named `xxxx"), "{}", out[0].content);
    assert!(out[0].content.contains("(1048576 bytes in all)"), "{}", out[0].content);
    assert!(out[2].content.contains("bytes in all"), "the duplicate id is clipped: {}", out[2].content);
    assert!(out[3].content.contains("bytes in all"), "{}", out[3].content);
    assert!(out[4].content.contains("and 492 more"), "{}", out[4].content);
    assert!(out[5].content.contains('…'), "a long value is shown in part: {}", out[5].content);
}
