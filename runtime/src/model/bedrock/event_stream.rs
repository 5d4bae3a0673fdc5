//! AWS's binary event stream (`application/vnd.amazon.eventstream`), as `ConverseStream` sends
//! it: frames read from the response's bytes and decoded by AWS's own decoder
//! (`aws-smithy-eventstream`), which checks each frame's lengths, headers and two CRC32s.
//!
//! A frame is `[total length: u32][headers length: u32][prelude CRC: u32][headers][payload]
//! [message CRC: u32]`, big-endian. Before waiting for a frame's body, its prelude is checked
//! here (its CRC, and a length of at most 16 MiB, the format's limit), so that bytes which are
//! not a frame are an error at once rather than a wait for gigabytes that never come.

use aws_smithy_eventstream::frame::read_message_from;

/// The prelude: the two lengths and their CRC.
const PRELUDE: usize = 12;
/// The smallest frame: a prelude and the message CRC.
const MIN_FRAME: usize = PRELUDE + 4;
/// The largest frame the format allows.
const MAX_FRAME: usize = 16 * 1024 * 1024;

/// One decoded frame.
#[derive(Debug)]
pub(super) struct Frame {
    /// `:message-type`: `event`, `exception` or `error`.
    pub(super) message_type: String,
    /// What it is: `:event-type` of an event, `:exception-type` of an exception, `:error-code`
    /// of an error.
    pub(super) kind: String,
    /// `:error-message` of an error.
    pub(super) error_message: Option<String>,
    /// The payload (JSON for Bedrock).
    pub(super) payload: Vec<u8>,
}

/// The frames of a response body, one at a time.
pub(super) struct Frames {
    response: reqwest::Response,
    buf: Vec<u8>,
    /// The bytes before `at` are read.
    at: usize,
    ended: bool,
}

impl Frames {
    pub(super) fn new(response: reqwest::Response) -> Self {
        Self { response, buf: Vec::new(), at: 0, ended: false }
    }

    /// The next frame; `Ok(None)` when the body ended between frames. A frame that does not
    /// decode (a wrong CRC, a bad length or header), a body that ends inside a frame, or a
    /// broken connection is `Err` saying which.
    pub(super) async fn next(&mut self) -> Result<Option<Frame>, String> {
        loop {
            if let Some(frame) = take_frame(&self.buf[self.at..])? {
                let (len, frame) = frame;
                self.at += len;
                return Ok(Some(frame));
            }
            if self.ended {
                let left = self.buf.len() - self.at;
                return if left == 0 {
                    Ok(None)
                } else {
                    Err(format!("the stream ended inside a frame ({left} bytes of it arrived)"))
                };
            }
            self.fill().await?;
        }
    }

    async fn fill(&mut self) -> Result<(), String> {
        self.buf.drain(..self.at);
        self.at = 0;
        match self.response.chunk().await {
            Ok(Some(bytes)) => self.buf.extend_from_slice(&bytes),
            Ok(None) => self.ended = true,
            Err(e) => return Err(format!("the connection broke: {e}")),
        }
        Ok(())
    }
}

/// The frame at the start of `bytes` and its length, if it is all there; `Ok(None)` when more
/// bytes are needed.
fn take_frame(bytes: &[u8]) -> Result<Option<(usize, Frame)>, String> {
    let Some(prelude) = bytes.get(..PRELUDE) else { return Ok(None) };
    let word = |at: usize| u32::from_be_bytes([prelude[at], prelude[at + 1], prelude[at + 2], prelude[at + 3]]);
    let (total, crc) = (word(0) as usize, word(8));
    let computed = crc32fast::hash(&prelude[..8]);
    if computed != crc {
        return Err(format!(
            "a frame's prelude checksum is wrong (CRC32 {computed:#010x}, the frame says {crc:#010x}): the stream is damaged or not an AWS event stream"
        ));
    }
    if !(MIN_FRAME..=MAX_FRAME).contains(&total) {
        return Err(format!("a frame says it is {total} bytes long, outside the format's {MIN_FRAME} to {MAX_FRAME}"));
    }
    let Some(whole) = bytes.get(..total) else { return Ok(None) };
    let message = read_message_from(whole).map_err(|e| format!("a frame does not decode: {e}"))?;
    let header = |name: &str| {
        message
            .headers()
            .iter()
            .find(|h| h.name().as_str() == name)
            .and_then(|h| h.value().as_string().ok())
            .map(|v| v.as_str().to_owned())
    };
    let message_type = header(":message-type").unwrap_or_else(|| "event".to_owned());
    let kind = match message_type.as_str() {
        "exception" => header(":exception-type"),
        "error" => header(":error-code"),
        _ => header(":event-type"),
    }
    .unwrap_or_default();
    let frame =
        Frame { kind, error_message: header(":error-message"), message_type, payload: message.payload().to_vec() };
    Ok(Some((total, frame)))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A frame of `headers` (string values) and `payload`, encoded as the format says.
    pub(in crate::model::bedrock) fn frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
        let mut head = Vec::new();
        for (name, value) in headers {
            head.push(name.len() as u8);
            head.extend_from_slice(name.as_bytes());
            head.push(7);
            head.extend_from_slice(&(value.len() as u16).to_be_bytes());
            head.extend_from_slice(value.as_bytes());
        }
        let total = (PRELUDE + head.len() + payload.len() + 4) as u32;
        let mut out = Vec::new();
        out.extend_from_slice(&total.to_be_bytes());
        out.extend_from_slice(&(head.len() as u32).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out.extend_from_slice(&head);
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out
    }

    #[test]
    fn frames_decode_whole_wait_when_cut_and_refuse_damage() {
        let event =
            frame(&[(":event-type", "messageStop"), (":message-type", "event")], br#"{"stopReason":"end_turn"}"#);
        let (len, decoded) = take_frame(&event).unwrap().unwrap();
        assert_eq!((len, decoded.kind.as_str(), decoded.message_type.as_str()), (event.len(), "messageStop", "event"));
        assert_eq!(decoded.payload, br#"{"stopReason":"end_turn"}"#);
        for cut in [0, 5, PRELUDE, event.len() - 1] {
            assert!(take_frame(&event[..cut]).unwrap().is_none(), "cut at {cut}: more bytes are needed");
        }
        let mut payload_damaged = event.clone();
        payload_damaged[PRELUDE + 20] ^= 1;
        assert!(take_frame(&payload_damaged).unwrap_err().contains("does not decode"));
        let mut prelude_damaged = event.clone();
        prelude_damaged[2] ^= 0x40;
        assert!(take_frame(&prelude_damaged).unwrap_err().contains("prelude checksum"));
        let exception =
            frame(&[(":exception-type", "throttlingException"), (":message-type", "exception")], br#"{"message":"x"}"#);
        assert_eq!(take_frame(&exception).unwrap().unwrap().1.kind, "throttlingException");
        assert!(take_frame(b"HTTP/1.1 200 OK\r\n\r\n").unwrap_err().contains("prelude checksum"));
    }
}
