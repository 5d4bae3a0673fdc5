//! Reading a streamed chunk's text without parsing it again when only its text changed.
//!
//! A streamed reply is one chunk per token, and servers send every text chunk with the same
//! bytes around the text: same id, model, creation time, field order. Once one such chunk has
//! been parsed, the next is known to be the same JSON value with another text when its bytes
//! start and end the same way and what lies between is a JSON string body with no escapes and
//! no quote. Then that middle is the text as it stands, and nothing else in the chunk can mean
//! anything new. Parsing a 200-byte chunk costs a few hundred nanoseconds; this comparison,
//! tens.

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
        self.before.clear();
        self.before.push_str(&data[..start]);
        self.after.clear();
        self.after.push_str(&data[end..]);
    }

    /// The text of `data` when it has the remembered shape; `None` when it has to be parsed.
    pub(crate) fn text_of<'d>(&self, data: &'d str) -> Option<&'d str> {
        // Nothing learned yet: empty bytes around would match any chunk.
        if self.before.is_empty() {
            return None;
        }
        let middle = data.strip_prefix(self.before.as_str())?.strip_suffix(self.after.as_str())?;
        // A quote would end the string early, a backslash would start an escape, and control
        // characters are not allowed in a JSON string: any of them and the chunk is parsed.
        middle.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\').then_some(middle)
    }
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
        assert_eq!(learned().text_of(&next), Some("lo, wörld"));
        assert_eq!(learned().text_of(&FIRST.replace("Hel", "")), Some(""));
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
            assert_eq!(shape.text_of(&other), None, "{other}");
        }
        assert_eq!(ChunkShape::default().text_of(FIRST), None);
    }

    #[test]
    fn text_that_does_not_borrow_from_the_chunk_teaches_nothing() {
        let mut shape = ChunkShape::default();
        shape.learn(FIRST, "Hel");
        assert_eq!(shape.text_of(FIRST), None);
        // Not between quotes: the span of a number, say.
        shape.learn(FIRST, &FIRST[1..3]);
        assert_eq!(shape.text_of(FIRST), None);
    }
}
