//! A streamed reply as server-sent events, read straight from the response's bytes.
//!
//! Written here rather than taken from a crate because it sits on the hot path of every
//! streamed token: it reuses one buffer for the bytes, and an event of one `data:` line (what
//! every provider sends) is handed over where it lies in that buffer, neither copied nor checked
//! for UTF-8 until its reader needs text (a 100,000-token reply is 100,000 events).

use super::ModelError;
use std::ops::Range;

/// The events of a `text/event-stream` body, per the WHATWG rules that matter here: lines end
/// in `\n`, `\r\n` or `\r`; `data:` lines of one event are joined with `\n`; one space after
/// the colon is dropped; `:` lines are comments; an empty line ends an event. Event names and
/// ids are skipped: the providers name an event's kind inside its data.
pub(crate) struct Events {
    response: reqwest::Response,
    /// The bytes from `at` on are not read yet.
    buf: Vec<u8>,
    at: usize,
    ended: bool,
    /// Where the current event's data is.
    data: Data,
    /// The data of an event of several lines, joined.
    joined: String,
}

/// Where the current event's data is.
enum Data {
    /// In [`Events::buf`], as it arrived: not checked for UTF-8 yet.
    Buffered(Range<usize>),
    /// In [`Events::joined`], checked.
    Joined,
}

impl Events {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        Self { response, buf: Vec::new(), at: 0, ended: false, data: Data::Joined, joined: String::new() }
    }

    /// The current event's data as it arrived, possibly not UTF-8 (see [`text`](Self::text)).
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.data {
            Data::Buffered(range) => &self.buf[range.clone()],
            Data::Joined => self.joined.as_bytes(),
        }
    }

    /// The current event's data as text; `Err` saying so when it is not UTF-8.
    pub(crate) fn text(&self) -> Result<&str, String> {
        std::str::from_utf8(self.bytes()).map_err(not_utf8)
    }

    /// The bytes that arrived and are not read yet, starting where an event may; more are read
    /// first when none are left. Empty once the body ended. A reader that knows what its events
    /// look like may take whole ones from the front with [`skip`](Self::skip). The current
    /// event is given up: [`bytes`](Self::bytes) is empty until [`next`](Self::next).
    pub(crate) async fn unread(&mut self) -> Result<&[u8], String> {
        self.data = Data::Joined;
        self.joined.clear();
        if self.at == self.buf.len() && !self.ended {
            self.fill().await?;
        }
        Ok(&self.buf[self.at..])
    }

    /// Steps over `len` bytes of [`unread`](Self::unread): whole events the caller read itself.
    pub(crate) fn skip(&mut self, len: usize) {
        self.at = (self.at + len).min(self.buf.len());
    }

    /// Reads the next event (its data is then [`bytes`](Self::bytes)); `Ok(false)` when the body
    /// ended. A broken connection or a line that is not UTF-8 is `Err` with what went wrong.
    pub(crate) async fn next(&mut self) -> Result<bool, String> {
        self.data = Data::Joined;
        self.joined.clear();
        let mut has_data = false;
        loop {
            // Until a `data:` line is read, the event can still be one that lies whole in the
            // buffer (lines before it, comments or names, carry nothing that is kept).
            if !has_data && let Some(range) = self.one_line_event() {
                self.data = Data::Buffered(range);
                return Ok(true);
            }
            let Some((line, next)) = self.line() else {
                if self.ended {
                    // A last event without its blank line still counts: some servers close
                    // right after it.
                    return Ok(has_data);
                }
                self.fill().await?;
                continue;
            };
            let line = std::str::from_utf8(&self.buf[self.at..line]).map_err(not_utf8)?;
            let (field, value) = match line.find(':') {
                Some(0) => ("", ""),
                Some(colon) => (&line[..colon], line[colon + 1..].strip_prefix(' ').unwrap_or(&line[colon + 1..])),
                None => (line, ""),
            };
            let blank = line.is_empty();
            if field == "data" {
                if has_data {
                    self.joined.push('\n');
                }
                self.joined.push_str(value);
                has_data = true;
            }
            self.at = next;
            if blank && has_data {
                return Ok(true);
            }
        }
    }

    /// The data of an event that lies whole at the start of the buffer as one `data:` line and
    /// a blank line, both ending in `\n`, which it then steps over; `None` for anything else,
    /// left to the general reading.
    fn one_line_event(&mut self) -> Option<Range<usize>> {
        let rest = &self.buf[self.at..];
        let value = rest.strip_prefix(b"data:")?;
        let skip = 5 + usize::from(value.first() == Some(&b' '));
        let end = memchr::memchr2(b'\n', b'\r', rest)?;
        if rest[end] != b'\n' || rest.get(end + 1) != Some(&b'\n') {
            return None;
        }
        let range = self.at + skip..self.at + end;
        self.at += end + 2;
        Some(range)
    }

    /// The end of the next whole line in the buffer and where the one after starts.
    fn line(&self) -> Option<(usize, usize)> {
        let rest = &self.buf[self.at..];
        // Most reads find the buffer used up: no search for that.
        if rest.is_empty() {
            return None;
        }
        let end = self.at + memchr::memchr2(b'\n', b'\r', rest)?;
        if self.buf[end] == b'\r' {
            match self.buf.get(end + 1) {
                Some(b'\n') => return Some((end, end + 2)),
                // A `\r` at the end of the buffer may be half of a `\r\n`: wait for more.
                None if !self.ended => return None,
                _ => {}
            }
        }
        Some((end, end + 1))
    }

    async fn fill(&mut self) -> Result<(), String> {
        if self.at == self.buf.len() {
            self.buf.clear();
        } else {
            self.buf.drain(..self.at);
        }
        self.at = 0;
        match self.response.chunk().await {
            Ok(Some(bytes)) => self.buf.extend_from_slice(&bytes),
            Ok(None) => {
                self.ended = true;
                // A last line without its line end is still a line.
                if !self.buf.is_empty() && !self.buf.ends_with(b"\n") {
                    self.buf.push(b'\n');
                }
            }
            Err(e) => return Err(format!("the connection broke: {e}")),
        }
        Ok(())
    }
}

/// What a stream whose bytes are not UTF-8 breaks with.
pub(crate) fn not_utf8(error: std::str::Utf8Error) -> String {
    format!("the stream is not UTF-8: {error}")
}

/// The error of a stream that broke with `message`.
pub(crate) fn broken(provider: &str, after_content: bool, message: impl Into<String>) -> ModelError {
    ModelError::Stream { provider: provider.to_owned(), after_content, message: message.into() }
}
