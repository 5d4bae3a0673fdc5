//! One tool call, from the model's request to the tool message: validate arguments → execute →
//! validate result → redact → emit → return. Every failure becomes an error message.

use super::event::{EventSink, ToolEvent};
use super::output::ToolOutput;
use super::policy::{ToolPolicies, ToolPolicy};
use super::runtime::ToolEnv;
use super::set::ToolSet;
use super::span::ToolSpan;
use super::writer::{CallScope, ToolWriter};
use super::{Tool, ToolError, support, validate};
use crate::error::NodeError;
use crate::message::{Message, ToolCall, fresh_id};
use crate::metrics::ToolCallEnded;
use crate::telemetry::{Ticks, in_trace};
use crate::trace_value::in_span;
use futures::FutureExt;
use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

/// What running calls needs of the node that runs them: its tools, their policies, and where its
/// events go. Plain borrowed data, so the pipeline sits below the node rather than beside it.
pub(crate) struct Calls<'a> {
    pub(crate) tools: &'a ToolSet,
    pub(crate) policies: &'a ToolPolicies,
    pub(crate) sink: Option<&'a EventSink>,
}

/// Runs `calls` concurrently and returns one tool message per call, in call order. A call whose
/// id an earlier call of the list already used is answered with an error and not run.
pub(crate) async fn run_all(node: &Calls<'_>, calls: &[ToolCall], env: &ToolEnv) -> Vec<Message> {
    let mut first_use: HashMap<&str, usize> = HashMap::with_capacity(calls.len());
    let runs: Vec<_> = calls
        .iter()
        .enumerate()
        .map(|(index, call)| {
            let first = *first_use.entry(call.id.as_str()).or_insert(index);
            let duplicate_of = (first != index).then_some(first);
            durable_one(node, index, call, duplicate_of, env)
        })
        .collect();
    futures::future::join_all(runs).await
}

/// One call, inside its span.
async fn durable_one(
    node: &Calls<'_>,
    index: usize,
    call: &ToolCall,
    duplicate_of: Option<usize>,
    env: &ToolEnv,
) -> Message {
    let span = super::span::ToolSpan::open(call, index, env);
    // The span goes down by reference, to say how the call ended: cheaper than finding the
    // current span again.
    let inside = span.inside();
    let message =
        in_span(&span.tracing, in_trace(inside, stored_or_run(node, index, call, duplicate_of, env, &span))).await;
    span.end(call);
    message
}

/// One call inside a graph's task: answered from its stored result when an earlier run of the
/// task finished it, otherwise run, and its answer stored as soon as it is known (see
/// `pregel::calls`). The slot is the call's position in `calls`, the key its id.
async fn stored_or_run(
    node: &Calls<'_>,
    index: usize,
    call: &ToolCall,
    duplicate_of: Option<usize>,
    env: &ToolEnv,
    span: &ToolSpan,
) -> Message {
    let Some(results) = &env.results else { return run_one(node, index, call, duplicate_of, env, span).await };
    let slot = u32::try_from(index).unwrap_or(u32::MAX);
    if let Some(saved) = results.get(slot, &call.id) {
        match serde_json::from_value::<Message>(saved) {
            Ok(message) => {
                tracing::debug!("answered from the call's stored result");
                span.record_stored(&message);
                return message;
            }
            Err(error) => tracing::warn!(%error, "a stored call result is not a message; running the call again"),
        }
    }
    let message = run_one(node, index, call, duplicate_of, env, span).await;
    if duplicate_of.is_none() {
        match serde_json::to_value(&message) {
            Ok(value) => results.put(slot, &call.id, value).await,
            Err(error) => tracing::warn!(%error, "could not keep the call's result"),
        }
    }
    message
}

async fn run_one(
    node: &Calls<'_>,
    index: usize,
    call: &ToolCall,
    duplicate_of: Option<usize>,
    env: &ToolEnv,
    span: &ToolSpan,
) -> Message {
    let policy = node.policies.of(&call.name);
    let scope = CallScope {
        tool_call_id: Arc::from(call.id.as_str()),
        index,
        name: Arc::from(call.name.as_str()),
        sink: node.sink.cloned(),
        redact: policy.redact.clone(),
        stream: env.stream.clone(),
    };
    scope.emit(ToolEvent::Started {
        tool_call_id: call.id.clone(),
        index,
        name: call.name.clone(),
        arguments: scope.redact_value(call.arguments.clone()),
    });
    let mut attempts = 0;
    let started = env.metrics.as_ref().map(|metrics| (metrics, Started::now(span)));
    let outcome = checked_run(node, call, index, duplicate_of, env, &policy, &scope, &mut attempts).await;
    span.record_outcome(env, &outcome, attempts);
    if let Some((metrics, started)) = started {
        let error = outcome.as_ref().err().map(ToolError::kind);
        metrics.tool_call_ended(&ToolCallEnded { tool: &call.name, attempts, duration: started.elapsed(), error });
    }
    let (content, is_error) = match outcome {
        Ok(output) => (output.into_content(), false),
        Err(error) => {
            tracing::debug!(%error, attempts, "tool call failed");
            (error.to_string(), true)
        }
    };
    let content = scope.redact(content);
    scope.emit(ToolEvent::Finished {
        tool_call_id: call.id.clone(),
        index,
        name: call.name.clone(),
        content: content.clone(),
        is_error,
        attempts,
    });
    let message =
        if is_error { Message::tool_error(call.id.clone(), content) } else { Message::tool(call.id.clone(), content) };
    message.with_name(call.name.clone()).with_id(fresh_id())
}

/// Validate arguments → execute → validate result.
#[allow(clippy::too_many_arguments)] // one call's whole context; bundling it would only rename it
async fn checked_run(
    node: &Calls<'_>,
    call: &ToolCall,
    index: usize,
    duplicate_of: Option<usize>,
    env: &ToolEnv,
    policy: &ToolPolicy,
    scope: &CallScope,
    attempts: &mut u32,
) -> Result<ToolOutput, ToolError> {
    if let Some(first) = duplicate_of {
        return Err(ToolError::DuplicateCallId {
            id: call.id.clone(),
            tool: call.name.clone(),
            first: first + 1,
            index: index + 1,
        });
    }
    let Some(tool) = node.tools.get(&call.name) else {
        let known: Vec<String> = node.tools.names().map(str::to_owned).collect();
        let suggestion = graphwright_wiring::closest(&call.name, known.iter().map(String::as_str)).map(str::to_owned);
        return Err(ToolError::UnknownTool { name: call.name.clone(), suggestion, known });
    };
    let args = support::normalize(&call.name, call.arguments.clone())?;
    let problems = validate::validate(&tool.parameters(), &args);
    if !problems.is_empty() {
        return Err(ToolError::InvalidArguments { tool: call.name.clone(), problems });
    }
    let output = execute(tool.as_ref(), &args, env, policy, scope, attempts).await?;
    if let Some(check) = &policy.check {
        check(&output).map_err(|reason| ToolError::InvalidResult { tool: call.name.clone(), reason })?;
    }
    Ok(output)
}

/// Runs the tool under its timeout, retrying failures and timeouts as its policy allows.
async fn execute(
    tool: &dyn Tool,
    args: &serde_json::Value,
    env: &ToolEnv,
    policy: &ToolPolicy,
    scope: &CallScope,
    attempts: &mut u32,
) -> Result<ToolOutput, ToolError> {
    loop {
        *attempts += 1;
        let rt = env.runtime(Arc::clone(&scope.tool_call_id), ToolWriter { scope: Some(scope.clone()) });
        let error = match attempt(tool, args.clone(), &rt, policy.timeout).await {
            Ok(output) => return Ok(output),
            Err(error) => error,
        };
        let retryable = matches!(error, ToolError::Failed { .. } | ToolError::Timeout { .. });
        let retry = policy
            .retry
            .as_ref()
            .filter(|p| retryable && *attempts < p.max_attempts && (p.retry_on)(&NodeError::from(error.clone())));
        match retry {
            Some(retry) => {
                tracing::debug!(%error, attempt = *attempts, "tool failed; retrying");
                tokio::time::sleep(retry.backoff(*attempts)).await;
            }
            None => return Err(error),
        }
    }
}

/// One attempt: the tool's future, with panics caught and the timeout applied.
async fn attempt(
    tool: &dyn Tool,
    args: serde_json::Value,
    rt: &super::ToolRuntime,
    timeout: Option<Duration>,
) -> Result<ToolOutput, ToolError> {
    // The call itself sits inside the guarded future, so a tool that panics before returning
    // its future is caught too.
    let guarded = AssertUnwindSafe(async move { tool.call(args, rt).await }).catch_unwind();
    let caught = match timeout {
        Some(limit) => match tokio::time::timeout(limit, guarded).await {
            Ok(caught) => caught,
            Err(_) => {
                return Err(ToolError::Timeout { tool: tool.name().to_owned(), limit });
            }
        },
        None => guarded.await,
    };
    caught.unwrap_or_else(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Err(ToolError::Panicked { tool: tool.name().to_owned(), message })
    })
}

/// When a call began, for its metrics: its recorded span's start when it has one (the time-stamp
/// counter, read already: a call then reads the clock once for its metrics, where two readings
/// of the system clock took about 1 % of a `ReAct` turn), else the runtime's clock.
enum Started {
    Recorded(Ticks),
    Now(tokio::time::Instant),
}

impl Started {
    fn now(span: &ToolSpan) -> Self {
        span.start().map_or_else(|| Self::Now(tokio::time::Instant::now()), Self::Recorded)
    }

    fn elapsed(&self) -> Duration {
        match self {
            Self::Recorded(start) => start.elapsed(),
            Self::Now(start) => start.elapsed(),
        }
    }
}
