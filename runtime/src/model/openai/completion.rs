//! The Chat Completions wire format: messages as the API takes them, and a whole completion
//! read back as a reply.

use crate::message::{Message, Role, ToolCall};
use crate::model::http::{self, ErrorBody, invalid};
use crate::model::reply::{FinishReason, ModelReply};
use crate::model::{ModelError, Usage};
use serde::Deserialize;
use serde_json::{Value, json};

/// A message in the Chat Completions form; `None` for what is not sent (remove markers).
pub(super) fn wire_message(message: &Message) -> Option<Value> {
    Some(match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Assistant if message.tool_calls.is_empty() => json!({"role": "assistant", "content": message.content}),
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| {
                    let arguments = match &c.arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = if message.content.is_empty() { Value::Null } else { json!(message.content) };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Remove => return None,
    })
}

#[derive(Deserialize)]
struct Completion {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<Value>,
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
pub(super) struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    cached_tokens: Option<u64>,
}

impl WireUsage {
    pub(super) fn usage(&self) -> Usage {
        let cached = self.prompt_tokens_details.as_ref().and_then(|d| d.cached_tokens).unwrap_or(0);
        Usage::tokens(self.prompt_tokens, self.completion_tokens).with_cached(cached)
    }
}

pub(super) fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None => FinishReason::Unknown,
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The text of `content`: a string, or an array of parts whose text parts are joined.
fn content_text(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            Ok(parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().concat())
        }
        Some(other) => Err(format!("`content` is neither text nor a list of parts: {other}")),
    }
}

/// Tool-call arguments as sent: a JSON string normally, an object from some servers.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// A tool call whose arguments arrived as text; an empty text is no arguments.
pub(super) fn tool_call(id: String, name: String, arguments: &str) -> ToolCall {
    if arguments.trim().is_empty() {
        ToolCall::new(id, name, json!({}))
    } else {
        ToolCall::from_text(id, name, arguments)
    }
}

/// A non-streamed completion from `provider`.
pub(super) fn parse_completion(raw: &[u8], provider: &'static str) -> Result<ModelReply, ModelError> {
    let completion: Completion =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("the response is not a chat completion: {e}")))?;
    if let Some(error) = completion.error {
        return Err(http::classify_event(provider, &ErrorBody::of(&error)));
    }
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(invalid(raw, "the response has no choices"));
    };
    let Some(wire) = choice.message else {
        return Err(invalid(raw, "the response's choice has no message"));
    };
    let mut content = content_text(wire.content.as_ref()).map_err(|reason| invalid(raw, reason))?;
    if content.is_empty()
        && let Some(refusal) = wire.refusal
    {
        content = refusal;
    }
    let mut calls = Vec::new();
    for (index, call) in wire.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let Some(function) = call.function else {
            return Err(invalid(raw, format!("tool call {index} has no `function`")));
        };
        let Some(name) = function.name.filter(|n| !n.is_empty()) else {
            return Err(invalid(raw, format!("tool call {index} has no name")));
        };
        let id = call.id.filter(|i| !i.is_empty()).unwrap_or_else(|| format!("call_{index}"));
        calls.push(tool_call(id, name, &arguments_text(function.arguments.as_ref())));
    }
    Ok(ModelReply {
        message: Message::assistant(content).with_tool_calls(calls),
        usage: completion.usage.map(|u| u.usage()).unwrap_or_default(),
        finish_reason: finish_reason(choice.finish_reason.as_deref()),
        model: completion.model.unwrap_or_default(),
        response_id: completion.id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::openai::client::PROVIDER;

    #[test]
    fn completions_of_odd_shapes_are_typed_errors() {
        let parse = |body: &str| parse_completion(body.as_bytes(), PROVIDER);
        assert!(
            matches!(parse(r#"{"choices": []}"#), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("no choices"))
        );
        assert!(matches!(parse("not json"), Err(ModelError::InvalidOutput { .. })));
        assert!(
            matches!(parse(r#"{"choices": [{}]}"#), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("no message"))
        );
        assert!(matches!(
            parse(r#"{"choices": [{"message": {"content": 7}}]}"#),
            Err(ModelError::InvalidOutput { .. })
        ));
        let broken = parse(r#"{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}]}, "finish_reason": "tool_calls"}]}"#).unwrap();
        assert_eq!(
            broken.message.tool_calls[0].arguments,
            json!("{\"a\":"),
            "malformed arguments reach the tool node as text"
        );
        let parts = parse(r#"{"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}}"#).unwrap();
        assert_eq!(parts.message.content, "ab");
        assert_eq!(parts.usage, Usage::tokens(3, 2).with_cached(1));
    }
}
