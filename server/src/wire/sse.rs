//! Server-sent events as LangGraph's clients read them: `event:` and one line of JSON in
//! `data:`, `id:` only for resumable runs.

use crate::runs::live::Frame;
use axum::body::Bytes;

/// A comment line: it keeps an idle stream's connection busy, and clients skip it. No blank
/// line follows, so no client takes it for an event.
pub(crate) const KEEP_ALIVE: &[u8] = b": keep-alive\n";

/// One frame's bytes.
pub(crate) fn encode(frame: &Frame, with_id: bool) -> Bytes {
    let id = with_id.then(|| frame.id.to_string());
    event(&frame.name, &frame.data, id.as_deref())
}

/// One event's bytes: its name, its JSON text, and its id if it has one.
pub(crate) fn event(name: &str, data: &str, id: Option<&str>) -> Bytes {
    let mut out = String::with_capacity(name.len() + data.len() + 32);
    out.push_str("event: ");
    out.push_str(name);
    out.push_str("\ndata: ");
    // serde_json never writes a raw newline, so the JSON is always one `data:` line.
    out.push_str(data);
    if let Some(id) = id {
        out.push_str("\nid: ");
        out.push_str(id);
    }
    out.push_str("\n\n");
    Bytes::from(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_event_with_one_data_line() {
        let frame = Frame { id: 3, name: "values".into(), data: r#"{"a":"x\ny"}"#.into() };
        assert_eq!(&encode(&frame, false)[..], b"event: values\ndata: {\"a\":\"x\\ny\"}\n\n");
        assert_eq!(&encode(&frame, true)[..], b"event: values\ndata: {\"a\":\"x\\ny\"}\nid: 3\n\n");
        assert_eq!(&event("metadata", "{}", Some("run-1:4"))[..], b"event: metadata\ndata: {}\nid: run-1:4\n\n");
    }
}
