//! A streamed Chat Completions reply: its chunks, read by their shape, assembled into a reply
//! while their pieces go to the sink.

use super::completion::{WireUsage, finish_reason, tool_call};
use crate::message::Message;
use crate::model::chunk_shape::ChunkShape;
use crate::model::http::{self, ErrorBody};
use crate::model::reply::{ModelReply, ReplySink, ToolCallDelta};
use crate::model::sse;
use crate::model::{ModelError, Usage};
use serde::Deserialize;
use serde_json::Value;
use std::borrow::Cow;

// Chunks borrow their strings from the event's text: a streamed reply is one chunk per
// token, and a chunk read this way allocates only its list of choices.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// The chunk's text when that is all it says, borrowed from the chunk's JSON (so it had
    /// no escapes): no error, usage, finish reason, refusal or tool call, and one choice.
    fn only_text(&self) -> Option<&'a str> {
        let ([choice], None, None) = (self.choices.as_slice(), &self.usage, &self.error) else { return None };
        let delta = choice.delta.as_ref().filter(|d| d.refusal.is_none() && d.tool_calls.is_none())?;
        match (&delta.content.0, choice.index, &choice.finish_reason) {
            (Cow::Borrowed(text), 0, None) => Some(*text),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Text<'a>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    index: Option<u32>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
}

/// A piece of text as servers send it: a string (borrowed when it has no escapes), `null`, a
/// list of content parts whose `text`s are joined, or (tool arguments from some servers) an
/// object, kept as its JSON text.
#[derive(Default)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("text, null, a list of content parts, or an object")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }

            fn visit_unit<E>(self) -> Result<Text<'de>, E> {
                Ok(Text::default())
            }

            fn visit_none<E>(self) -> Result<Text<'de>, E> {
                Ok(Text::default())
            }

            fn visit_some<D: serde::Deserializer<'de>>(self, inner: D) -> Result<Text<'de>, D::Error> {
                Text::deserialize(inner)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut parts: A) -> Result<Text<'de>, A::Error> {
                let mut text = String::new();
                while let Some(part) = parts.next_element::<Value>()? {
                    text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default());
                }
                Ok(Text(Cow::Owned(text)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Text<'de>, A::Error> {
                let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Text(Cow::Owned(value.to_string())))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// A tool call being assembled from its pieces.
struct Partial {
    wire_index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// A streamed reply being assembled.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<Partial>,
    finish: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
    model: Option<String>,
    delivered: bool,
    /// The shape of the last text-only chunk, to read the next ones by.
    shape: ChunkShape,
    /// The service, as its errors name it.
    provider: &'static str,
}

impl Assembly {
    /// The slot a tool-call piece belongs to. Pieces are keyed by `index`; a piece without one
    /// (old Ollama) continues the last call unless it brings a new id; a new id at a used index
    /// (Ollama sends each call whole, all at index 0) starts a new call.
    fn slot(&mut self, piece: &CallDelta<'_>) -> usize {
        let new_id = piece.id.as_deref().filter(|i| !i.is_empty());
        let found = match piece.index {
            Some(index) => self.calls.iter().rposition(|c| c.wire_index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        match found {
            Some(at) if new_id.is_none_or(|id| self.calls[at].id.is_empty() || self.calls[at].id == id) => at,
            _ => {
                self.calls.push(Partial {
                    wire_index: piece.index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        }
    }

    fn take(&mut self, chunk: Chunk<'_>, sink: &mut dyn ReplySink) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            let body = ErrorBody::of(&error);
            let error = http::classify_event(self.provider, &body);
            return Err(if self.delivered { sse::broken(self.provider, true, error.to_string()) } else { error });
        }
        if self.id.is_none() {
            self.id = chunk.id.map(Cow::into_owned);
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.usage());
        }
        // Only the first choice is read: requests never ask for more than one.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason.into_owned());
            }
            let Some(delta) = choice.delta else { continue };
            let text = match (delta.content.0, delta.refusal) {
                (text, Some(refusal)) if text.is_empty() => refusal,
                (text, _) => text,
            };
            self.text(&text, sink);
            for piece in delta.tool_calls.unwrap_or_default() {
                let at = self.slot(&piece);
                let call = &mut self.calls[at];
                let (name, arguments) = match piece.function {
                    Some(f) => (f.name, f.arguments.0),
                    None => (None, Cow::Borrowed("")),
                };
                let id = piece.id.filter(|i| !i.is_empty() && call.id.is_empty());
                if let Some(id) = &id {
                    call.id.push_str(id);
                }
                let name = name.filter(|n| !n.is_empty() && call.name.is_empty());
                if let Some(name) = &name {
                    call.name.push_str(name);
                }
                call.arguments.push_str(&arguments);
                self.delivered = true;
                sink.tool_call(ToolCallDelta {
                    index: at as u32,
                    id: id.as_deref(),
                    name: name.as_deref(),
                    arguments: &arguments,
                });
            }
        }
        Ok(())
    }

    fn text(&mut self, text: &str, sink: &mut dyn ReplySink) {
        if !text.is_empty() {
            self.delivered = true;
            sink.text(text);
            self.text.push_str(text);
        }
    }

    fn finish(self) -> Result<ModelReply, ModelError> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::InvalidOutput {
                    raw: call.arguments,
                    reason: format!("streamed tool call {index} never got a name"),
                });
            }
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            calls.push(tool_call(id, call.name, &call.arguments));
        }
        Ok(ModelReply {
            message: Message::assistant(self.text).with_tool_calls(calls),
            usage: self.usage.unwrap_or_default(),
            finish_reason: finish_reason(self.finish.as_deref()),
            model: self.model.unwrap_or_default(),
            response_id: self.id,
        })
    }
}

impl Assembly {
    /// Reads one event's data; `Ok(true)` when it ends the stream (`[DONE]`). A chunk of the
    /// shape of the last text-only chunk is read without parsing it (see [`ChunkShape`]).
    fn event(&mut self, data: &[u8], sink: &mut dyn ReplySink) -> Result<bool, ModelError> {
        if let Some(text) = self.shape.text_of(data) {
            self.text(text, sink);
            return Ok(false);
        }
        let data =
            std::str::from_utf8(data).map_err(|e| sse::broken(self.provider, self.delivered, sse::not_utf8(e)))?;
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.trim().is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            sse::broken(self.provider, self.delivered, format!("a chunk is not a chat completion chunk ({e}): {data}"))
        })?;
        if let Some(text) = chunk.only_text() {
            self.shape.learn(data, text);
        }
        self.take(chunk, sink)?;
        Ok(false)
    }
}

/// A streamed completion from `provider`: chunks until `data: [DONE]`.
pub(super) async fn read_stream(
    response: reqwest::Response,
    sink: &mut dyn ReplySink,
    provider: &'static str,
) -> Result<ModelReply, ModelError> {
    let mut events = sse::Events::new(response);
    let mut reply = Assembly { provider, ..Assembly::default() };
    loop {
        // A text chunk of the last one's shape, read whole from the bytes as they came.
        let unread = events.unread().await.map_err(|message| sse::broken(provider, reply.delivered, message))?;
        if let Some((text, len)) = reply.shape.text_of_event(unread) {
            reply.text(text, sink);
            events.skip(len);
            continue;
        }
        if !events.next().await.map_err(|message| sse::broken(provider, reply.delivered, message))? {
            break;
        }
        if reply.event(events.bytes(), sink)? {
            return reply.finish();
        }
    }
    // Some servers close without `[DONE]`; a reply that said why it finished is whole.
    if reply.finish.is_some() {
        return reply.finish();
    }
    Err(sse::broken(provider, reply.delivered, "the stream ended before the reply finished"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::FinishReason;
    use crate::model::openai::client::PROVIDER;
    use serde_json::json;

    struct Pieces(Vec<String>);

    impl ReplySink for Pieces {
        fn text(&mut self, delta: &str) {
            self.0.push(format!("text:{delta}"));
        }
        fn tool_call(&mut self, delta: ToolCallDelta<'_>) {
            self.0.push(format!("call{}:{:?}:{:?}:{}", delta.index, delta.id, delta.name, delta.arguments));
        }
    }

    fn assemble(chunks: &[Value]) -> (Result<ModelReply, ModelError>, Vec<String>) {
        let mut sink = Pieces(Vec::new());
        let mut reply = Assembly { provider: PROVIDER, ..Assembly::default() };
        for chunk in chunks {
            if let Err(e) = reply.event(chunk.to_string().as_bytes(), &mut sink) {
                return (Err(e), sink.0);
            }
        }
        (reply.finish(), sink.0)
    }

    fn text_chunk(text: &str, finish: Option<&str>) -> Value {
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})
    }

    #[test]
    fn text_chunks_read_by_their_shape_assemble_as_parsed_ones() {
        let mut chunks: Vec<Value> =
            ["Hel", "lo", " \"q\"", "\n", "", "wörld"].iter().map(|t| text_chunk(t, None)).collect();
        chunks.push(text_chunk("!", Some("stop")));
        chunks.push(json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}));
        let (reply, pieces) = assemble(&chunks);
        let reply = reply.unwrap();
        assert_eq!(reply.message.content, "Hello \"q\"\nwörld!");
        assert_eq!(pieces, ["text:Hel", "text:lo", "text: \"q\"", "text:\n", "text:wörld", "text:!"]);
        assert_eq!((reply.finish_reason, reply.usage.output_tokens), (FinishReason::Stop, 7));
    }

    #[test]
    fn ollama_calls_whole_at_index_zero_stay_apart() {
        let call = |id: &str, name: &str, args: &str| json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "function": {"name": name, "arguments": args}}]}}]});
        let (reply, _) = assemble(&[
            call("a", "one", "{\"x\":1}"),
            call("b", "two", "{}"),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let reply = reply.unwrap();
        let names: Vec<_> = reply.message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
        assert_eq!(names, [("a", "one"), ("b", "two")]);
        assert_eq!(reply.message.tool_calls[0].arguments, json!({"x": 1}));
    }

    #[test]
    fn pieces_without_index_continue_the_last_call() {
        let (reply, pieces) = assemble(&[
            json!({"choices": [{"delta": {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{\"a\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "2}"}}]}, "finish_reason": "weird_new_reason"}]}),
        ]);
        let reply = reply.unwrap();
        assert_eq!(reply.message.tool_calls[0].arguments, json!({"a": 2}));
        assert_eq!(reply.finish_reason, FinishReason::Other("weird_new_reason".into()));
        assert_eq!(pieces, ["call0:Some(\"c1\"):Some(\"f\"):{\"a\":", "call0:None:None:2}"]);
    }

    #[test]
    fn an_error_chunk_after_text_is_a_stream_error_after_content() {
        let (reply, _) = assemble(&[
            json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
            json!({"error": {"message": "overloaded", "type": "overloaded_error", "code": 529}}),
        ]);
        assert!(matches!(reply, Err(ModelError::Stream { after_content: true, .. })), "{reply:?}");
        let (reply, _) = assemble(&[json!({"error": {"message": "slow down", "type": "rate_limit_error"}})]);
        assert!(matches!(reply, Err(ModelError::RateLimited { .. })), "{reply:?}");
    }

    #[test]
    fn a_nameless_call_is_invalid_output() {
        let (reply, _) = assemble(&[
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        assert!(matches!(reply, Err(ModelError::InvalidOutput { .. })), "{reply:?}");
    }
}
