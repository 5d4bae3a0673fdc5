//! Each thread's runs in the order they started, and the changes made to its state outside
//! runs, for clients following the thread as one stream (`GET /threads/{id}/stream`).
//!
//! A thread's runs execute one at a time, so the order they start in is the order they run in.
//! Entries are numbered across threads, in the order this process learned of them; a follower
//! remembers the number of the last entry it took. The most recent [`REMEMBERED`] entries of
//! all threads are kept: that is how far back a reconnecting follower can be taken.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// How many entries (over every thread) are remembered.
pub(crate) const REMEMBERED: usize = 4096;

/// Something that happened on a thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// A run started: its id.
    Run(Arc<str>),
    /// The thread's state was changed outside a run (`POST /threads/{id}/state`).
    State,
}

/// One thread's entries, and the signal that wakes its followers.
#[derive(Debug)]
pub(crate) struct ThreadFeed {
    entries: Mutex<VecDeque<(u64, Entry)>>,
    tick: watch::Sender<u64>,
}

impl ThreadFeed {
    fn entries(&self) -> MutexGuard<'_, VecDeque<(u64, Entry)>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The first entry after entry number `after` (the first entry of all for `None`).
    pub(crate) fn after(&self, after: Option<u64>) -> Option<(u64, Entry)> {
        self.entries().iter().find(|(n, _)| after.is_none_or(|a| *n > a)).cloned()
    }

    /// The latest entry.
    pub(crate) fn last(&self) -> Option<(u64, Entry)> {
        self.entries().back().cloned()
    }

    /// The number of the entry of run `run`, if it is remembered.
    pub(crate) fn run_entry(&self, run: &str) -> Option<u64> {
        self.entries().iter().find(|(_, e)| matches!(e, Entry::Run(r) if &**r == run)).map(|(n, _)| *n)
    }

    /// Whether entry number `n` is remembered.
    pub(crate) fn has(&self, n: u64) -> bool {
        self.entries().iter().any(|(at, _)| *at == n)
    }

    /// A receiver that changes whenever an entry is added.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.tick.subscribe()
    }
}

#[derive(Default)]
struct Feeds {
    threads: HashMap<String, Arc<ThreadFeed>>,
    /// Every remembered entry, oldest first: `(thread, number)`.
    order: VecDeque<(String, u64)>,
    next: u64,
    /// The map's size at which feeds left empty by followers that went away are dropped.
    sweep_at: usize,
}

/// How many of a thread's latest entries a run learned of a second time can be among.
const SEEN_AGAIN_WITHIN: usize = 64;

/// The smallest map size a sweep of abandoned feeds waits for.
const FIRST_SWEEP: usize = 64;

/// Every thread's feed in this process.
#[derive(Default)]
pub(crate) struct ThreadFeeds {
    inner: Mutex<Feeds>,
}

impl ThreadFeeds {
    fn inner(&self) -> MutexGuard<'_, Feeds> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `thread`'s feed, for a follower (which keeps it while it follows).
    pub(crate) fn thread(&self, thread: &str) -> Arc<ThreadFeed> {
        let mut feeds = self.inner();
        // Feeds nobody follows any more and with nothing remembered are dropped whenever the
        // map has doubled since the last sweep: the map stays about as small as what is
        // remembered plus what is followed, at a constant cost per call.
        if feeds.threads.len() >= feeds.sweep_at.max(FIRST_SWEEP) {
            feeds.threads.retain(|_, feed| Arc::strong_count(feed) > 1 || !feed.entries().is_empty());
            feeds.sweep_at = 2 * feeds.threads.len();
        }
        Arc::clone(
            feeds
                .threads
                .entry(thread.to_owned())
                .or_insert_with(|| Arc::new(ThreadFeed { entries: Mutex::default(), tick: watch::Sender::new(0) })),
        )
    }

    /// Run `run` started on `thread` (a run already there is not added again: it can be
    /// learned of twice, from its start and from a follower that found it open).
    pub(crate) fn started(&self, thread: &str, run: &str) {
        let feed = self.thread(thread);
        self.add(thread, &feed, Entry::Run(run.into()));
    }

    /// `thread`'s state was changed outside a run.
    pub(crate) fn state_changed(&self, thread: &str) {
        let feed = self.thread(thread);
        self.add(thread, &feed, Entry::State);
    }

    fn add(&self, thread: &str, feed: &Arc<ThreadFeed>, entry: Entry) {
        let mut feeds = self.inner();
        // Checked under the lock every addition takes, so a run added twice at once is added
        // once. Only the latest entries are looked at: a run is learned of again (from its start
        // and from a follower that found it open) before the runs after it start.
        if let Entry::Run(run) = &entry
            && feed.entries().iter().rev().take(SEEN_AGAIN_WITHIN).any(|(_, e)| matches!(e, Entry::Run(r) if r == run))
        {
            return;
        }
        let n = feeds.next;
        feeds.next += 1;
        feed.entries().push_back((n, entry));
        feeds.order.push_back((thread.to_owned(), n));
        while feeds.order.len() > REMEMBERED {
            let Some((old_thread, old)) = feeds.order.pop_front() else { break };
            let Some(old_feed) = feeds.threads.get(&old_thread) else { continue };
            let mut entries = old_feed.entries();
            // A thread's entries are in order: its oldest is the one forgotten.
            if entries.front().is_some_and(|(at, _)| *at == old) {
                entries.pop_front();
            }
            let unused = entries.is_empty() && Arc::strong_count(old_feed) == 1;
            drop(entries);
            if unused {
                feeds.threads.remove(&old_thread);
            }
        }
        drop(feeds);
        feed.tick.send_modify(|t| *t = n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_kept_in_the_order_they_started_once_each() {
        let feeds = ThreadFeeds::default();
        feeds.started("t", "a");
        feeds.started("u", "x");
        feeds.state_changed("t");
        feeds.started("t", "b");
        feeds.started("t", "a");
        let t = feeds.thread("t");
        let (first, entry) = t.after(None).unwrap();
        assert_eq!(entry, Entry::Run("a".into()));
        let (second, entry) = t.after(Some(first)).unwrap();
        assert_eq!(entry, Entry::State);
        let (third, entry) = t.after(Some(second)).unwrap();
        assert_eq!(entry, Entry::Run("b".into()));
        assert_eq!(t.after(Some(third)), None, "a run learned of twice is there once");
        assert_eq!(t.run_entry("b"), Some(third));
        assert_eq!(feeds.thread("u").last().map(|(_, e)| e), Some(Entry::Run("x".into())));
    }

    #[test]
    fn the_oldest_entries_are_forgotten_beyond_the_limit() {
        let feeds = ThreadFeeds::default();
        feeds.started("old", "first");
        for i in 0..REMEMBERED {
            feeds.started("busy", &i.to_string());
        }
        assert_eq!(feeds.thread("old").last(), None, "the oldest entry is forgotten");
        let busy = feeds.thread("busy");
        assert_eq!(busy.run_entry("0").map(|n| busy.has(n)), Some(true));
        feeds.started("busy", "one more");
        assert_eq!(busy.run_entry("0"), None);
    }

    #[tokio::test]
    async fn a_follower_is_woken_by_a_new_entry() {
        let feeds = Arc::new(ThreadFeeds::default());
        let feed = feeds.thread("t");
        let mut woken = feed.subscribe();
        let adder = Arc::clone(&feeds);
        tokio::spawn(async move { adder.started("t", "r") });
        woken.changed().await.unwrap();
        assert_eq!(feed.after(None).map(|(_, e)| e), Some(Entry::Run("r".into())));
    }
}
