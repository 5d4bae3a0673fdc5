//! Model calls inside runs: streaming into `messages`, usage, budgets, retries, deadlines, the
//! event log and structured output, with `ScriptedModel` as the model.

use futures::StreamExt;
use graphwright::log::{CapturePolicy, LogEntryKind, MemoryLog};
use graphwright::model::{
    Budget, BudgetLimit, ChatModel, ModelError, ModelReply, ModelRetry, Price, ScriptedModel, Usage,
};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[graph(context = ScriptedModel)]
mod chat {
    use graphwright::model::{ChatModel, ScriptedModel};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        #[reducer(add)]
        pub turns: u32,
    }

    /// Calls the model; a second call follows while the reply asks for tools.
    #[node(entry, next = again | END, route = route)]
    async fn ask(state: &State, rt: &Runtime<ScriptedModel>) -> Result<StateUpdate, NodeError> {
        let reply = rt.context().invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]).turns(1))
    }

    fn route(state: &State) -> AskNext {
        tools_condition(&state.messages).pick(AskNext::Again, AskNext::End)
    }

    #[node(next = ask)]
    fn again(state: &State) -> StateUpdate {
        let answers: Vec<Message> = state
            .messages
            .last()
            .map(|m| m.tool_calls.iter().map(|c| Message::tool(&c.id, "done")).collect())
            .unwrap_or_default();
        StateUpdate::new().messages(answers)
    }
}

fn question() -> chat::StateUpdate {
    chat::StateUpdate::new().messages(vec![Message::user("What is the weather?")])
}

fn calling(id: &str) -> Message {
    Message::assistant("").with_tool_calls(vec![ToolCall::new(id, "weather", json!({"city": "Oslo"}))])
}

fn rate_limited(wait: Duration) -> ModelError {
    ModelError::RateLimited { provider: "scripted".into(), retry_after: Some(wait), message: "slow down".into() }
}

#[tokio::test]
async fn replies_stream_into_messages_under_the_reply_id() {
    let model = ScriptedModel::new([calling("c1"), Message::assistant("Rain in Oslo today.")]);
    let app = chat::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone());
    let mut stream = app.stream(question(), &cfg, StreamMode::Messages | StreamMode::Values);
    let (mut text, mut ids, mut calls) = (String::new(), Vec::new(), Vec::new());
    let mut last = None;
    while let Some(event) = stream.next().await {
        match event.kind {
            EventKind::Message { node, message_id, delta } => {
                assert_eq!(node, "ask");
                ids.push(message_id);
                text.push_str(&delta);
            }
            EventKind::ToolCallDelta { message_id, index, id, name, arguments, .. } => {
                calls.push((message_id, index, id, name, arguments));
            }
            EventKind::Finished { state, .. } => last = Some(state),
            _ => {}
        }
    }
    let state = last.expect("the run finished");
    assert_eq!(text, "Rain in Oslo today.");
    let answer = state.messages.last().unwrap();
    assert!(ids.iter().all(|id| Some(id) == answer.id.as_ref()), "every delta carries the final message's id");
    assert_eq!(calls.len(), 1);
    let (message_id, index, id, name, arguments) = &calls[0];
    assert_eq!(Some(message_id), state.messages[1].id.as_ref());
    assert_eq!((*index, id.as_deref(), name.as_deref()), (0, Some("c1"), Some("weather")));
    assert_eq!(arguments, r#"{"city":"Oslo"}"#);
    assert!(model.requests().iter().all(|r| r.stream), "a run that streams messages streams its replies");
}

#[tokio::test]
async fn replies_are_not_streamed_when_nobody_watches_and_usage_is_summed() {
    let reply = |input, output| ModelReply {
        usage: Usage::tokens(input, output).with_cached(10),
        ..ModelReply::new(calling("c"))
    };
    let model = ScriptedModel::new([
        reply(100, 20),
        ModelReply { usage: Usage::tokens(150, 30), ..ModelReply::new(Message::assistant("ok")) },
    ]);
    let priced = model.clone().price(Price { input: 1.0, cached_input: 0.0, output: 10.0 });
    let app = chat::graph().compile().unwrap();
    let out = app.invoke(question(), &RunConfig::default().context(priced)).await.unwrap();
    assert!(model.requests().iter().all(|r| !r.stream));
    let usage = out.usage();
    // The scripted model adds an estimate of the prompt to the input tokens it was given.
    let prompt: u64 = 5 + 5;
    assert_eq!(usage.calls, 2);
    assert_eq!(usage.output_tokens, 50);
    assert!(usage.input_tokens >= 250 && usage.input_tokens <= 250 + prompt + 10, "{usage:?}");
    assert_eq!(usage.cached_tokens, 10);
    let fresh = f64::from(u32::try_from(usage.input_tokens - 10).unwrap());
    let expected = (fresh + 50.0 * 10.0) / 1e6;
    assert!((usage.cost - expected).abs() < 1e-12, "{usage:?} vs {expected}");
}

#[tokio::test]
async fn a_call_past_the_token_budget_fails_the_step_and_applies_nothing() {
    let model = ScriptedModel::new([
        ModelReply { usage: Usage::tokens(40, 10), ..ModelReply::new(calling("c1")) },
        ModelReply { usage: Usage::tokens(60, 10), ..ModelReply::new(Message::assistant("too late")) },
    ]);
    let app = chat::graph().checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("budget").context(model.clone()).budget(Budget::tokens(100));
    let error = app.invoke(question(), &cfg).await.unwrap_err();
    let GraphError::BudgetExceeded { node, step, limit } = &error else { panic!("{error}") };
    assert_eq!((node.as_str(), *step), ("ask", 3));
    let BudgetLimit::Tokens { spent, limit } = *limit else { panic!("{limit:?}") };
    assert_eq!(limit, 100);
    assert!(spent > 100, "{spent}");
    assert!(error.to_string().contains("RunConfig::budget"), "{error}");
    let snapshot = app.get_state(&cfg).await.unwrap().expect("the thread has checkpoints");
    assert_eq!(snapshot.state.turns, 1, "the refused reply is not in the state");
    assert!(snapshot.state.messages.iter().all(|m| m.content != "too late"));
    assert_eq!(snapshot.next, ["ask"]);
}

#[tokio::test]
async fn a_spent_call_budget_refuses_the_next_call_before_it_is_sent() {
    let model = ScriptedModel::new([calling("c1"), Message::assistant("never sent")]);
    let app = chat::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone()).budget(Budget::calls(1));
    let error = app.invoke(question(), &cfg).await.unwrap_err();
    assert!(
        matches!(error, GraphError::BudgetExceeded { limit: BudgetLimit::Calls { spent: 2, limit: 1 }, .. }),
        "{error}"
    );
    assert_eq!(model.requests().len(), 1);
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn rate_limits_and_overload_are_retried_after_the_asked_wait() {
    let overloaded = ModelError::Overloaded { provider: "scripted".into(), retry_after: None, message: "busy".into() };
    let model = ScriptedModel::new::<graphwright::model::ScriptedReply>([
        rate_limited(Duration::from_millis(150)).into(),
        overloaded.into(),
        Message::assistant("finally").into(),
    ])
    .retry(ModelRetry::default().initial_wait(Duration::from_millis(10)));
    let app = chat::graph().compile().unwrap();
    let started = Instant::now();
    let out = app.invoke(question(), &RunConfig::default().context(model.clone())).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150), "the asked wait is honoured");
    assert_eq!(out.state.messages.last().unwrap().content, "finally");
    assert_eq!(model.requests().len(), 3);
    assert_eq!(out.usage().calls, 1, "retries of one call count once");
}

#[tokio::test]
async fn quota_and_auth_errors_are_not_retried_and_keep_their_class() {
    let quota = ModelError::QuotaExhausted { provider: "scripted".into(), message: "no credit".into() };
    let model = ScriptedModel::new([quota]);
    let app = chat::graph().compile().unwrap();
    let error = app.invoke(question(), &RunConfig::default().context(model.clone())).await.unwrap_err();
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    let source = source.downcast_ref::<ModelError>().expect("the model's error is the node's source");
    assert!(matches!(source, ModelError::QuotaExhausted { .. }));
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn retries_stop_at_the_deadline_instead_of_sleeping_past_it() {
    let model = ScriptedModel::new::<graphwright::model::ScriptedReply>([
        rate_limited(Duration::from_secs(20)).into(),
        Message::assistant("late").into(),
    ]);
    let app = chat::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone()).deadline(Duration::from_secs(5));
    let started = Instant::now();
    let error = app.invoke(question(), &cfg).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2), "no 20 s sleep");
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    let source = source.downcast_ref::<ModelError>().unwrap();
    let ModelError::DeadlineExceeded { last: Some(last), .. } = source else { panic!("{source}") };
    assert!(matches!(**last, ModelError::RateLimited { .. }));
}

#[tokio::test]
async fn every_call_is_logged_with_its_prompt_hash_attempts_and_usage() {
    let model = ScriptedModel::new::<graphwright::model::ScriptedReply>([
        rate_limited(Duration::from_millis(1)).into(),
        calling("c1").into(),
        Message::assistant("done").into(),
    ]);
    let log = Arc::new(MemoryLog::new());
    let app = chat::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone()).log(log.clone(), CapturePolicy::default());
    app.invoke(question(), &cfg).await.unwrap();
    let calls: Vec<_> = log
        .entries()
        .into_iter()
        .filter_map(|e| match e.kind {
            LogEntryKind::ModelCall { node, provider, prompt_hash, attempts, usage, error, .. } => {
                Some((e.step, node, provider, prompt_hash, attempts, usage, error))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0, calls[0].1.as_str(), calls[0].2.as_str(), calls[0].4), (1, "ask", "scripted", 2));
    assert_eq!(calls[1].4, 1);
    assert!(calls.iter().all(|c| c.3.starts_with("v1:") && c.5.is_some() && c.6.is_none()));
    assert_ne!(calls[0].3, calls[1].3, "different prompts, different hashes");
    let requests = model.requests();
    let expected = graphwright::model::prompt_hash("scripted", &requests[0].messages, &requests[0].settings);
    assert_eq!(calls[0].3, expected);
}

#[tokio::test]
async fn structured_output_that_never_parses_is_invalid_output_with_the_raw_reply() {
    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    struct Verdict {
        #[allow(dead_code)]
        approve: bool,
    }
    let model = ScriptedModel::new(["maybe", "{\"approve\": \"yes\"}"]);
    let error =
        model.structured::<Verdict>().invoke(&[Message::user("approve?")], &Runtime::detached()).await.unwrap_err();
    let ModelError::InvalidOutput { raw, reason } = &error else { panic!("{error}") };
    assert_eq!(raw, "{\"approve\": \"yes\"}");
    assert!(reason.contains("Verdict") && reason.contains("invalid type"), "{reason}");
    assert_eq!(model.requests().len(), 2, "one repair attempt by default");
    let requests = model.requests();
    let schema = &requests[0].settings.response_format.as_ref().unwrap().schema;
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
}

#[tokio::test]
async fn a_detached_runtime_sums_its_calls() {
    let model = ScriptedModel::new(["one", "two"]);
    let rt = Runtime::detached();
    model.invoke(&[Message::user("a")], &rt).await.unwrap();
    model.invoke(&[Message::user("b")], &rt).await.unwrap();
    assert_eq!(rt.usage().calls, 2);
}
