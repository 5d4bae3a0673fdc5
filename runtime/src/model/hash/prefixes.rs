//! The conversations this thread hashed last, each with the hash's state after its messages: a
//! prompt that goes on from one of them (the same messages, then more) is hashed from there.
//!
//! The messages are kept as copies and compared whole (a comparison costs a small part of
//! writing them as JSON into SHA-256), so a prompt hashes the same whether it was picked up or
//! hashed from its start.

use super::payload::{Hashing, Prompted};
use crate::message::Message;
use std::cell::RefCell;

/// How many conversations a thread keeps: a few runs' worth going on at once on one thread of
/// a runtime.
const KEPT: usize = 4;

/// The most of a conversation kept, in bytes as hashed: one longer is hashed from its start
/// every time (and its copy is not held).
pub(super) const KEPT_BYTES: usize = 1 << 20;

/// A conversation hashed up to its last message.
struct Prefix {
    max_tokens: Option<u32>,
    messages: Vec<Message>,
    /// The hash after `messages`, before what follows them.
    hashing: Hashing,
    /// When it was last picked up (this thread's count of prompts hashed).
    used: u64,
}

/// A thread's kept conversations, at most [`KEPT`], the one picked up least lately replaced first.
#[derive(Default)]
struct Prefixes {
    kept: Vec<Prefix>,
    /// How many prompts this thread has hashed.
    hashed: u64,
}

thread_local! {
    static PREFIXES: RefCell<Prefixes> = RefCell::default();
}

/// The hash of a prompt of `messages` under `max_tokens`, up to the end of its messages: taken
/// on from the longest kept conversation that `messages` begins with, and kept in turn.
pub(super) fn through(max_tokens: Option<u32>, messages: &[Message]) -> Hashing {
    PREFIXES.with_borrow_mut(|prefixes| prefixes.through(max_tokens, messages))
}

impl Prefixes {
    fn through(&mut self, max_tokens: Option<u32>, messages: &[Message]) -> Hashing {
        self.hashed += 1;
        let picked = self
            .kept
            .iter()
            .enumerate()
            .filter(|(_, p)| p.max_tokens == max_tokens && p.messages.len() <= messages.len())
            .filter(|(_, p)| p.messages.iter().zip(messages).all(|(a, b)| Prompted::same(a, b)))
            .max_by_key(|(_, p)| p.messages.len())
            .map(|(at, _)| at);
        let mut hashing = picked.map_or_else(|| Hashing::head(max_tokens), |at| self.kept[at].hashing.clone());
        for message in &messages[hashing.messages..] {
            hashing.message(message);
        }
        if hashing.bytes > KEPT_BYTES || messages.is_empty() {
            if let Some(at) = picked {
                self.kept.swap_remove(at);
            }
            return hashing;
        }
        let used = self.hashed;
        if let Some(at) = picked {
            let prefix = &mut self.kept[at];
            let from = prefix.messages.len();
            prefix.messages.extend_from_slice(&messages[from..]);
            prefix.hashing = hashing.clone();
            prefix.used = used;
        } else {
            let prefix = Prefix { max_tokens, messages: messages.to_vec(), hashing: hashing.clone(), used };
            if self.kept.len() < KEPT {
                self.kept.push(prefix);
            } else if let Some(oldest) = self.kept.iter_mut().min_by_key(|p| p.used) {
                *oldest = prefix;
            }
        }
        hashing
    }
}
