//! The integrity check of stored records.
//!
//! Every record's body ends with a CRC-32 over the body and every column that locates or
//! describes the record (thread, ids, step, source, time, format; task and index for writes).
//! A flipped byte anywhere, a body moved to another row, or a column edited by hand no longer
//! matches, so damage is reported instead of being read as a different value. CRC-32 detects
//! every error confined to 32 consecutive bits, so every single damaged byte. It is a guard
//! against accidents (disks, bugs, hand edits), not against someone forging records.

use crate::checkpoint::Source;

/// Bytes the check takes at the end of a body.
pub(crate) const LEN: usize = 4;

/// Feeds the parts of a record to the checksum, each with its length so that no two different
/// records feed the same bytes. The parts are gathered in a buffer and checked in one pass
/// (CRC-32 of many small pieces costs more than of one larger one); the buffer is kept per
/// thread, so a check allocates nothing once it has grown.
pub(crate) struct Check {
    bytes: Vec<u8>,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Check {
    pub(crate) fn new() -> Self {
        let mut bytes = SCRATCH.with(std::cell::Cell::take);
        bytes.clear();
        Self { bytes }
    }

    pub(crate) fn text(mut self, text: &str) -> Self {
        self.bytes.extend_from_slice(&(text.len() as u64).to_le_bytes());
        self.bytes.extend_from_slice(text.as_bytes());
        self
    }

    pub(crate) fn number(mut self, number: u64) -> Self {
        self.bytes.extend_from_slice(&number.to_le_bytes());
        self
    }

    /// The check of the parts so far followed by `payload` (its length first).
    pub(crate) fn finish(mut self, payload: &[u8]) -> u32 {
        self.bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&self.bytes);
        hasher.update(payload);
        let check = hasher.finalize();
        SCRATCH.with(|scratch| scratch.set(std::mem::take(&mut self.bytes)));
        check
    }
}

/// What locates a checkpoint record, for its check.
pub(crate) struct CheckpointKey<'a> {
    pub(crate) thread: &'a str,
    pub(crate) id: &'a str,
    pub(crate) parent: Option<&'a str>,
    pub(crate) step: i64,
    pub(crate) source: Source,
    pub(crate) created_at_ms: u64,
    pub(crate) format: u16,
}

impl CheckpointKey<'_> {
    pub(crate) fn check(&self, payload: &[u8]) -> u32 {
        Check::new()
            .text("checkpoint")
            .text(self.thread)
            .text(self.id)
            .text(self.parent.unwrap_or("\u{0}none"))
            .number(self.step.cast_unsigned())
            .text(self.source.as_str())
            .number(self.created_at_ms)
            .number(u64::from(self.format))
            .finish(payload)
    }
}

/// What locates a write record, for its check.
pub(crate) struct WriteKey<'a> {
    pub(crate) thread: &'a str,
    pub(crate) checkpoint: &'a str,
    pub(crate) task: u32,
    pub(crate) index: u32,
    pub(crate) format: u16,
}

impl WriteKey<'_> {
    pub(crate) fn check(&self, payload: &[u8]) -> u32 {
        Check::new()
            .text("write")
            .text(self.thread)
            .text(self.checkpoint)
            .number(u64::from(self.task))
            .number(u64::from(self.index))
            .number(u64::from(self.format))
            .finish(payload)
    }
}

/// Appends the check to a payload, making it a stored body.
pub(crate) fn seal(mut payload: Vec<u8>, check: u32) -> Vec<u8> {
    payload.extend_from_slice(&check.to_le_bytes());
    payload
}

/// The payload of a stored body, if its check matches `expected(payload)`.
pub(crate) fn open(body: &[u8], expected: impl FnOnce(&[u8]) -> u32) -> Result<&[u8], String> {
    let Some(split) = body.len().checked_sub(LEN) else {
        return Err(format!("the body is {} byte(s) long, too short to hold its integrity check", body.len()));
    };
    let (payload, stored) = body.split_at(split);
    let stored = u32::from_le_bytes([stored[0], stored[1], stored[2], stored[3]]);
    let computed = expected(payload);
    if stored == computed {
        Ok(payload)
    } else {
        Err(format!(
            "the integrity check fails (stored {stored:08x}, computed {computed:08x}): the record or one of its columns was changed after it was written"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> WriteKey<'static> {
        WriteKey { thread: "t", checkpoint: "c", task: 1, index: 0, format: 2 }
    }

    #[test]
    fn every_flipped_byte_and_every_moved_body_is_caught() {
        let body = seal(b"some payload".to_vec(), key().check(b"some payload"));
        assert_eq!(open(&body, |p| key().check(p)).unwrap(), b"some payload");
        for at in 0..body.len() {
            for bit in 0..8 {
                let mut damaged = body.clone();
                damaged[at] ^= 1 << bit;
                assert!(open(&damaged, |p| key().check(p)).is_err(), "byte {at} bit {bit}");
            }
        }
        let other = WriteKey { task: 2, ..key() };
        assert!(open(&body, |p| other.check(p)).is_err(), "a body moved to another task");
        assert!(open(&body[..3], |p| key().check(p)).is_err());
    }
}
