//! The fixed parts of stored records, written and read field by field.
//!
//! A record is a short sequence of `MessagePack` values in a fixed order (numbers, names,
//! arrays), followed by the typed value it carries (a state, an update, an interrupt) decoded
//! with serde. Reading is strict: each field must be present with its type, in its place, and a
//! reader error names the field.

use super::DecodeError;
use rmp::encode as put;

/// The largest scratch buffer a thread keeps between records.
const MAX_KEPT_SCRATCH: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Writes the fields of a record. Writing to a `Vec` cannot fail, so the results of the
/// encoding calls carry nothing to handle.
pub(crate) struct Out {
    pub(crate) bytes: Vec<u8>,
}

impl Out {
    /// Writes into this thread's scratch buffer, which has grown to the records written before,
    /// so encoding a record never regrows a buffer; [`Out::into_exact`] copies the bytes out.
    pub(crate) fn scratch() -> Self {
        let mut bytes = SCRATCH.with(std::cell::Cell::take);
        bytes.clear();
        Self { bytes }
    }

    /// The bytes written, in a buffer of exactly their length plus room for the integrity
    /// check; the scratch buffer goes back for the next record.
    pub(crate) fn into_exact(self) -> Vec<u8> {
        let mut exact = Vec::with_capacity(self.bytes.len() + super::checksum::LEN);
        exact.extend_from_slice(&self.bytes);
        // A rare huge record does not pin its buffer to the thread for good.
        if self.bytes.capacity() <= MAX_KEPT_SCRATCH {
            SCRATCH.with(|scratch| scratch.set(self.bytes));
        }
        exact
    }

    /// Room for `capacity` bytes, and for the integrity check sealed on after them.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        Self { bytes: Vec::with_capacity(capacity + super::checksum::LEN) }
    }

    pub(crate) fn uint(&mut self, value: u64) {
        let _ = put::write_uint(&mut self.bytes, value);
    }

    pub(crate) fn text(&mut self, value: &str) {
        let _ = put::write_str(&mut self.bytes, value);
    }

    pub(crate) fn nil(&mut self) {
        let _ = put::write_nil(&mut self.bytes);
    }

    pub(crate) fn flag(&mut self, value: bool) {
        let _ = put::write_bool(&mut self.bytes, value);
    }

    pub(crate) fn array(&mut self, len: usize) {
        let _ = put::write_array_len(&mut self.bytes, len as u32);
    }

    #[cfg(test)]
    pub(crate) fn blob(&mut self, value: &[u8]) {
        let _ = put::write_bin(&mut self.bytes, value);
    }
}

/// Reads the fields of a record in order.
pub(crate) struct In<'a> {
    rest: &'a [u8],
}

const NIL: u8 = 0xc0;

impl<'a> In<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }

    fn fail(field: &str, error: impl std::fmt::Display) -> DecodeError {
        DecodeError { path: field.to_owned(), reason: error.to_string() }
    }

    pub(crate) fn uint(&mut self, field: &str) -> Result<u64, DecodeError> {
        rmp::decode::read_int(&mut self.rest).map_err(|e| Self::fail(field, e))
    }

    pub(crate) fn u32(&mut self, field: &str) -> Result<u32, DecodeError> {
        rmp::decode::read_int(&mut self.rest).map_err(|e| Self::fail(field, e))
    }

    pub(crate) fn text(&mut self, field: &str) -> Result<&'a str, DecodeError> {
        let (text, rest) = rmp::decode::read_str_from_slice(self.rest).map_err(|e| Self::fail(field, e))?;
        self.rest = rest;
        Ok(text)
    }

    pub(crate) fn flag(&mut self, field: &str) -> Result<bool, DecodeError> {
        rmp::decode::read_bool(&mut self.rest).map_err(|e| Self::fail(field, e))
    }

    /// Whether the next value is nil; consumes it if so.
    pub(crate) fn nil(&mut self) -> bool {
        if self.rest.first() == Some(&NIL) {
            self.rest = &self.rest[1..];
            true
        } else {
            false
        }
    }

    /// Whether the next value is a string.
    pub(crate) fn is_text(&self) -> bool {
        matches!(self.rest.first(), Some(0xa0..=0xbf | 0xd9..=0xdb))
    }

    pub(crate) fn array(&mut self, field: &str) -> Result<usize, DecodeError> {
        let len = rmp::decode::read_array_len(&mut self.rest).map_err(|e| Self::fail(field, e))? as usize;
        // Every element takes at least one byte: a length beyond what is left is damage, and
        // must not size an allocation.
        if len > self.rest.len() {
            return Err(Self::fail(field, format!("an array of {len} elements in {} byte(s)", self.rest.len())));
        }
        Ok(len)
    }

    pub(crate) fn blob(&mut self, field: &str) -> Result<&'a [u8], DecodeError> {
        let len = rmp::decode::read_bin_len(&mut self.rest).map_err(|e| Self::fail(field, e))? as usize;
        if len > self.rest.len() {
            return Err(Self::fail(field, format!("{len} byte(s) announced, {} left", self.rest.len())));
        }
        let (blob, rest) = self.rest.split_at(len);
        self.rest = rest;
        Ok(blob)
    }

    /// How many bytes are left to read.
    pub(crate) fn remaining(&self) -> usize {
        self.rest.len()
    }

    /// What is left: the typed value at the end of a record.
    pub(crate) fn rest(self) -> &'a [u8] {
        self.rest
    }

    /// Fails unless every byte was read.
    pub(crate) fn end(self, field: &str) -> Result<(), DecodeError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(Self::fail(field, format!("{} unexpected byte(s) at the end", self.rest.len())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_in_order_and_damage_is_named() {
        let mut out = Out::with_capacity(16);
        out.uint(7);
        out.text("node");
        out.nil();
        out.array(2);
        out.flag(true);
        out.blob(b"xy");
        let mut input = In::new(&out.bytes);
        assert_eq!(input.uint("a").unwrap(), 7);
        assert_eq!(input.text("b").unwrap(), "node");
        assert!(input.nil());
        assert!(!input.nil());
        assert_eq!(input.array("c").unwrap(), 2);
        assert!(input.flag("d").unwrap());
        assert_eq!(input.blob("e").unwrap(), b"xy");
        input.end("end").unwrap();

        let mut input = In::new(&out.bytes);
        let error = input.text("name").unwrap_err();
        assert_eq!(error.path, "name");
        // An array header that claims more elements than there are bytes.
        let error = In::new(&[0xdd, 0xff, 0xff, 0xff, 0xff]).array("next").unwrap_err();
        assert!(error.reason.contains("elements"), "{error:?}");
    }
}
