//! Protocol Buffers' wire format, the part OTLP's trace messages use: varints, fixed-width
//! numbers, strings and bytes, and nested messages whose length is written once their content
//! is (the content moved along by the length's extra bytes, which for most messages of a
//! span, shorter than 128 bytes, is none).

/// A buffer messages are written into.
#[derive(Debug, Default)]
pub(super) struct Writer {
    pub(super) buf: Vec<u8>,
}

/// How many bytes a length-delimited field of `len` bytes takes after its key: the length's
/// varint, and the content.
pub(super) fn delimited_len(len: usize) -> usize {
    varint_bytes(len as u64).1 + len
}

/// `value` as a varint: its bytes, and how many of them there are.
fn varint_bytes(mut value: u64) -> ([u8; 10], usize) {
    let mut bytes = [0; 10];
    let mut n = 0;
    while value >= 0x80 {
        // The low 7 bits, and the continuation bit.
        bytes[n] = (value & 0x7f) as u8 | 0x80;
        value >>= 7;
        n += 1;
    }
    bytes[n] = value as u8;
    (bytes, n + 1)
}

impl Writer {
    /// Writes `value` as a varint.
    // Always inlined, the longer form apart: nearly every key and length of a span is one byte,
    // and a span writes some sixty of them (measured under callgrind: `#[inline]` left it a call
    // in places, about 70 instructions a span more).
    #[allow(clippy::inline_always)]
    #[inline(always)]
    pub(super) fn varint(&mut self, value: u64) {
        if value < 0x80 {
            self.buf.push(value as u8);
        } else {
            self.long_varint(value);
        }
    }

    #[cold]
    #[inline(never)]
    fn long_varint(&mut self, value: u64) {
        let (bytes, n) = varint_bytes(value);
        self.buf.extend_from_slice(&bytes[..n]);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire_type));
    }

    /// The key and length of a length-delimited field whose `len` bytes of content the caller
    /// writes next.
    pub(super) fn delimited(&mut self, field: u32, len: usize) {
        self.key(field, 2);
        self.varint(len as u64);
    }

    /// A length-delimited field: bytes, a string.
    pub(super) fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.key(field, 2);
        self.varint(bytes.len() as u64);
        self.buf.extend_from_slice(bytes);
    }

    /// A string field, made of `parts` one after the other.
    pub(super) fn str_parts(&mut self, field: u32, parts: &[&str]) {
        self.key(field, 2);
        self.varint(parts.iter().map(|p| p.len() as u64).sum());
        for part in parts {
            self.buf.extend_from_slice(part.as_bytes());
        }
    }

    /// A varint field (`uint32`, `uint64`, an enum; `int64` as its two's complement).
    pub(super) fn uint(&mut self, field: u32, value: u64) {
        self.key(field, 0);
        self.varint(value);
    }

    /// A `fixed64` (or `double`, as its bits) field.
    pub(super) fn fixed64(&mut self, field: u32, value: u64) {
        self.key(field, 1);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// A `fixed32` field.
    pub(super) fn fixed32(&mut self, field: u32, value: u32) {
        self.key(field, 5);
        self.buf.extend_from_slice(&value.to_le_bytes());
    }

    /// A message field whose content `content` writes.
    pub(super) fn message(&mut self, field: u32, content: impl FnOnce(&mut Self)) {
        self.key(field, 2);
        let at = self.buf.len();
        // Room for a length under 128, the common case; more is made once the length is known.
        self.buf.push(0);
        content(self);
        let len = self.buf.len() - at - 1;
        if len < 0x80 {
            self.buf[at] = len as u8;
            return;
        }
        let (length, width) = varint_bytes(len as u64);
        let end = self.buf.len();
        self.buf.resize(end + width - 1, 0);
        self.buf.copy_within(at + 1..end, at + width);
        self.buf[at..at + width].copy_from_slice(&length[..width]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads a varint from the front of `buf`.
    fn read_varint(buf: &mut &[u8]) -> u64 {
        let mut value = 0;
        for shift in (0..64).step_by(7) {
            let byte = buf[0];
            *buf = &buf[1..];
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        value
    }

    #[test]
    fn varints_are_little_endian_groups_of_seven_bits() {
        for (value, bytes) in
            [(0_u64, vec![0]), (1, vec![1]), (127, vec![0x7f]), (128, vec![0x80, 1]), (300, vec![0xac, 0x02])]
        {
            let mut w = Writer::default();
            w.varint(value);
            assert_eq!(w.buf, bytes, "{value}");
            assert_eq!(varint_bytes(value).1, bytes.len(), "{value}");
        }
        assert_eq!(varint_bytes(u64::MAX).1, 10);
    }

    #[test]
    fn nested_messages_of_any_length_carry_it() {
        for len in [0, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut w = Writer::default();
            w.fixed32(1, 7);
            w.message(2, |w| w.buf.extend(std::iter::repeat_n(0xab, len)));
            w.fixed32(3, 9);
            let mut rest = &w.buf[5..];
            assert_eq!(read_varint(&mut rest), 2 << 3 | 2, "the key of field 2");
            assert_eq!(read_varint(&mut rest), len as u64);
            assert!(rest[..len].iter().all(|&b| b == 0xab));
            assert_eq!(&rest[len..], [3 << 3 | 5, 9, 0, 0, 0], "what follows is intact ({len})");
        }
    }
}
