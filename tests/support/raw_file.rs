//! What a SQLite file holds on disk, byte for byte: for tests that look for plain text where
//! none may be.

use std::path::Path;

/// Every byte of the database at `path` and of its write-ahead log, as SQLite left them.
pub fn raw_bytes(path: &Path) -> Vec<u8> {
    let mut bytes = std::fs::read(path).unwrap();
    if let Ok(wal) = std::fs::read(path.with_extension("db-wal")) {
        bytes.extend(wal);
    }
    bytes
}

/// Whether `needle` appears anywhere in `haystack`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}
