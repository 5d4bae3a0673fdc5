//! A streamed reply as server-sent events, read straight from the response's bytes.
//!
//! Written here rather than taken from a crate because it sits on the hot path of every
//! streamed token: it reuses one buffer for the bytes and one string for an event's data, so
//! reading an event allocates nothing (a 100,000-token reply is 100,000 events).

use super::ModelError;

/// The events of a `text/event-stream` body, per the WHATWG rules that matter here: lines end
/// in `\n`, `\r\n` or `\r`; `data:` lines of one event are joined with `\n`; one space after
/// the colon is dropped; `:` lines are comments; an empty line ends an event.
pub(crate) struct Events {
    response: reqwest::Response,
    buf: Vec<u8>,
    at: usize,
    ended: bool,
    /// The current event's name (`event:`), empty when it has none.
    pub(crate) name: String,
    /// The current event's data.
    pub(crate) data: String,
}

impl Events {
    pub(crate) fn new(response: reqwest::Response) -> Self {
        Self { response, buf: Vec::new(), at: 0, ended: false, name: String::new(), data: String::new() }
    }

    /// Reads the next event into [`name`](Self::name) and [`data`](Self::data); `Ok(false)`
    /// when the body ended. A broken connection or bytes that are not UTF-8 are `Err` with
    /// what went wrong.
    pub(crate) async fn next(&mut self) -> Result<bool, String> {
        self.name.clear();
        self.data.clear();
        let mut has_data = false;
        loop {
            let Some((line, next)) = self.line() else {
                if self.ended {
                    // A last event without its blank line still counts: some servers close
                    // right after it.
                    return Ok(has_data);
                }
                self.fill().await?;
                continue;
            };
            let line =
                std::str::from_utf8(&self.buf[self.at..line]).map_err(|e| format!("the stream is not UTF-8: {e}"))?;
            let (field, value) = match line.find(':') {
                Some(0) => ("", ""),
                Some(colon) => (&line[..colon], line[colon + 1..].strip_prefix(' ').unwrap_or(&line[colon + 1..])),
                None => (line, ""),
            };
            let blank = line.is_empty();
            match field {
                "data" => {
                    if has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    has_data = true;
                }
                "event" => {
                    self.name.clear();
                    self.name.push_str(value);
                }
                _ => {}
            }
            self.at = next;
            if blank && has_data {
                return Ok(true);
            }
        }
    }

    /// The end of the next whole line in the buffer and where the one after starts.
    fn line(&self) -> Option<(usize, usize)> {
        let rest = &self.buf[self.at..];
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
        self.buf.drain(..self.at);
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

/// The error of a stream that broke with `message`.
pub(crate) fn broken(provider: &str, after_content: bool, message: impl Into<String>) -> ModelError {
    ModelError::Stream { provider: provider.to_owned(), after_content, message: message.into() }
}
