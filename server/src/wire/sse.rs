//! Server-sent events as LangGraph's clients read them: `event:` and one line of JSON in
//! `data:`, `id:` only for resumable runs.

use crate::runs::live::Frame;
use axum::body::Bytes;

/// One frame's bytes.
pub(crate) fn encode(frame: &Frame, with_id: bool) -> Bytes {
    let mut out = String::with_capacity(frame.name.len() + frame.data.len() + 32);
    out.push_str("event: ");
    out.push_str(&frame.name);
    out.push_str("\ndata: ");
    // serde_json never writes a raw newline, so the JSON is always one `data:` line.
    out.push_str(&frame.data);
    if with_id {
        out.push_str("\nid: ");
        out.push_str(&frame.id.to_string());
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
    }
}
