//! Checkpoint ids: unique, and ordered by creation time so the newest sorts last.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

static LAST: AtomicU64 = AtomicU64::new(0);

/// A new checkpoint id: 16 hex digits of microseconds since the epoch (made strictly
/// increasing within the process) and 8 hex digits drawn at random once per process, so ids
/// from several processes writing one thread do not collide.
///
/// ```
/// let a = graphwright::checkpoint::new_checkpoint_id();
/// let b = graphwright::checkpoint::new_checkpoint_id();
/// assert!(a < b);
/// assert_eq!(a.len(), 25);
/// ```
#[must_use]
pub fn new_checkpoint_id() -> String {
    static SALT: OnceLock<u32> = OnceLock::new();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64);
    let mut last = LAST.load(Ordering::Relaxed);
    let stamp = loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(seen) => last = seen,
        }
    };
    let salt = *SALT.get_or_init(|| uuid::Uuid::new_v4().as_u128() as u32);
    // Written digit by digit: `format!` costs more than the rest of a checkpoint's bookkeeping.
    let mut id = String::with_capacity(25);
    hex(&mut id, stamp, 16);
    id.push('-');
    hex(&mut id, u64::from(salt), 8);
    id
}

/// Appends the low `digits` hex digits of `value`, most significant first.
fn hex(out: &mut String, value: u64, digits: u32) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for shift in (0..digits).rev() {
        out.push(char::from(DIGITS[((value >> (shift * 4)) & 0xf) as usize]));
    }
}
