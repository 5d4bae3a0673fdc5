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
    new_checkpoint_id_at(now_micros())
}

/// Microseconds since the Unix epoch (0 if the clock is set before it).
pub(crate) fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// [`new_checkpoint_id`] at `now` (from [`now_micros`]): a caller that also stamps the record
/// with the time reads the clock once.
pub(crate) fn new_checkpoint_id_at(now: u64) -> String {
    static SALT: OnceLock<u32> = OnceLock::new();
    let mut last = LAST.load(Ordering::Relaxed);
    let stamp = loop {
        let next = now.max(last + 1);
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => break next,
            Err(seen) => last = seen,
        }
    };
    let salt = *SALT.get_or_init(|| uuid::Uuid::new_v4().as_u128() as u32);
    // Written digit by digit into an array: `format!`, or pushing chars one by one, costs more
    // than the rest of a checkpoint's bookkeeping.
    let mut id = [b'-'; 25];
    hex(&mut id[..16], stamp);
    hex(&mut id[17..], u64::from(salt));
    // Hex digits and '-' are ASCII, so this never falls back to the empty string.
    String::from(std::str::from_utf8(&id).unwrap_or_default())
}

/// Fills `out` with the low hex digits of `value`, most significant first.
fn hex(out: &mut [u8], mut value: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for digit in out.iter_mut().rev() {
        *digit = DIGITS[(value & 0xf) as usize];
        value >>= 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_the_time_then_the_salt_in_hex() {
        // A little ahead of the clock (ids of other tests may be taken meanwhile).
        let at = now_micros() + 1_000;
        let id = new_checkpoint_id_at(at);
        let (stamp, salt) = id.split_once('-').unwrap();
        assert!(*stamp >= *format!("{at:016x}"), "{id}");
        assert_eq!(stamp.len(), 16);
        assert_eq!(salt.len(), 8);
        assert!(salt.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{id}");
        assert!(new_checkpoint_id_at(0) > id, "ids keep growing when the clock goes back");
    }
}
