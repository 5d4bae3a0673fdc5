//! Reading a streamed chunk's text without parsing it again when only its text changed.
//!
//! A streamed reply is one chunk per token, and servers send every text chunk with the same
//! bytes around the text: same id, model, creation time, field order. Once one such chunk has
//! been parsed, the next is known to be the same JSON value with another text when its bytes
//! start and end the same way and what lies between is a JSON string body with no escapes and
//! no quote. Then that middle is the text as it stands, and nothing else in the chunk can mean
//! anything new. Parsing a 200-byte chunk costs a few hundred nanoseconds; this comparison,
//! tens.
//!
//! The same comparison reads a whole server-sent event, `data: ` and the chunk and a blank
//! line, straight from the bytes that arrived, before the event reader looks for its lines:
//! bytes around the text that hold no line break and a text that holds none make exactly one
//! event of one line.

/// The bytes before and after the text of the last chunk that held nothing but text.
#[derive(Default)]
pub(crate) struct ChunkShape {
    before: String,
    after: String,
}

impl ChunkShape {
    /// Remembers the bytes around `text` in `data` (the chunk's JSON text). `text` must be the
    /// chunk's only meaningful content and borrow from `data` (so it had no escapes); a text
    /// that lies elsewhere leaves the shape as it was.
    pub(crate) fn learn(&mut self, data: &str, text: &str) {
        let Some(start) = (text.as_ptr() as usize).checked_sub(data.as_ptr() as usize) else { return };
        let end = start + text.len();
        if end > data.len() || !data[..start].ends_with('"') || !data[end..].starts_with('"') {
            return;
        }
        // Bytes around the text that break a line could not be read as one event's line; no
        // server sends them, but such a chunk teaches nothing.
        if data.contains(['\n', '\r']) {
            return;
        }
        self.before.clear();
        self.before.push_str(&data[..start]);
        self.after.clear();
        self.after.push_str(&data[end..]);
    }

    /// The text of `data` (a chunk's bytes as they arrived) when it has the remembered shape;
    /// `None` when it has to be parsed. Only the text is checked for UTF-8: the bytes around it
    /// are those of a chunk that was.
    pub(crate) fn text_of<'d>(&self, data: &'d [u8]) -> Option<&'d str> {
        // Nothing learned yet: empty bytes around would match any chunk.
        if self.before.is_empty() {
            return None;
        }
        let middle = data.strip_prefix(self.before.as_bytes())?.strip_suffix(self.after.as_bytes())?;
        text(middle)
    }

    /// The text of the server-sent event at the start of `unread` (bytes of an event stream,
    /// starting where an event may) and how many bytes the event takes, when it is
    /// `data: {chunk}\n\n` with a chunk of the remembered shape; `None` otherwise (a partial
    /// event, another shape, other line ends), left to the event reader.
    pub(crate) fn text_of_event<'d>(&self, unread: &'d [u8]) -> Option<(&'d str, usize)> {
        if self.before.is_empty() {
            return None;
        }
        let rest = unread.strip_prefix(b"data: ")?.strip_prefix(self.before.as_bytes())?;
        // The text holds no quote, so the first one ends it.
        let (middle, after) = rest.split_at(memchr::memchr(b'"', rest)?);
        let end = after.strip_prefix(self.after.as_bytes())?.strip_prefix(b"\n\n")?;
        Some((text(middle)?, unread.len() - end.len()))
    }
}

/// `middle` as text, when it can stand between two quotes of JSON as it is: a quote would end
/// the string early, a backslash would start an escape, and control characters (line breaks
/// among them) are not allowed; `None` if any is there, or if it is not UTF-8.
fn text(middle: &[u8]) -> Option<&str> {
    if !middle.iter().all(|&b| b >= 0x20 && b != b'"' && b != b'\\') {
        return None;
    }
    std::str::from_utf8(middle).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIRST: &str = r#"{"id":"c1","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#;

    fn learned() -> ChunkShape {
        let mut shape = ChunkShape::default();
        let at = FIRST.find("Hel").unwrap();
        shape.learn(FIRST, &FIRST[at..at + 3]);
        shape
    }

    #[test]
    fn a_chunk_of_the_same_shape_gives_its_text() {
        let next = FIRST.replace("Hel", "lo, wörld");
        assert_eq!(learned().text_of(next.as_bytes()), Some("lo, wörld"));
        assert_eq!(learned().text_of(FIRST.replace("Hel", "").as_bytes()), Some(""));
    }

    #[test]
    fn anything_else_is_left_to_the_parser() {
        let shape = learned();
        for other in [
            FIRST.replace("Hel", r#"a\"b"#),
            FIRST.replace("Hel", r"a\nb"),
            FIRST.replace("Hel", "a\u{1}b"),
            FIRST.replace("Hel", r#"a","x":"b"#),
            FIRST.replace("null", r#""stop""#),
            FIRST.replace("c1", "c2"),
            FIRST[..FIRST.len() - 1].to_owned(),
            String::new(),
        ] {
            assert_eq!(shape.text_of(other.as_bytes()), None, "{other}");
        }
        // Bytes that are not UTF-8 in the text: left to the parser, which says so.
        let mut broken = FIRST.as_bytes().to_vec();
        let at = FIRST.find("Hel").unwrap();
        broken[at + 1] = 0xff;
        assert_eq!(shape.text_of(&broken), None);
        assert_eq!(ChunkShape::default().text_of(FIRST.as_bytes()), None);
    }

    #[test]
    fn a_whole_event_of_the_same_shape_gives_its_text_and_length() {
        let shape = learned();
        let event = format!("data: {}\n\n", FIRST.replace("Hel", "lo, wörld"));
        let next = format!("data: {}\n\n", FIRST.replace("Hel", "!"));
        let both = format!("{event}{next}");
        assert_eq!(shape.text_of_event(both.as_bytes()), Some(("lo, wörld", event.len())));
        assert_eq!(shape.text_of_event(&both.as_bytes()[event.len()..]), Some(("!", next.len())));
        for other in [
            // Cut short, before its blank line or inside it.
            event[..event.len() - 1].to_owned(),
            event[..event.len() - 2].to_owned(),
            event[..40].to_owned(),
            // Other spellings of the same event, left to the event reader.
            event.replacen("data: ", "data:", 1),
            event.replace("\n\n", "\r\n\r\n"),
            format!(": ping\n{event}"),
            // Text that is not as it stands, or not the text of this shape.
            format!("data: {}\n\n", FIRST.replace("Hel", r#"a\"b"#)),
            format!("data: {}\n\n", FIRST.replace("Hel", "a\nb")),
            format!("data: {}\n\n", FIRST.replace("null", r#""stop""#)),
            String::new(),
        ] {
            assert_eq!(shape.text_of_event(other.as_bytes()), None, "{other:?}");
        }
        assert_eq!(ChunkShape::default().text_of_event(event.as_bytes()), None);
    }

    #[test]
    fn a_chunk_whose_bytes_break_a_line_teaches_nothing() {
        let mut shape = ChunkShape::default();
        let split = FIRST.replace(",\"choices\"", ",\n\"choices\"");
        let at = split.find("Hel").unwrap();
        shape.learn(&split, &split[at..at + 3]);
        assert_eq!(shape.text_of(split.as_bytes()), None);
    }

    #[test]
    fn text_that_does_not_borrow_from_the_chunk_teaches_nothing() {
        let mut shape = ChunkShape::default();
        shape.learn(FIRST, "Hel");
        assert_eq!(shape.text_of(FIRST.as_bytes()), None);
        // Not between quotes: the span of a number, say.
        shape.learn(FIRST, &FIRST[1..3]);
        assert_eq!(shape.text_of(FIRST.as_bytes()), None);
    }
}
