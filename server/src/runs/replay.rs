//! Holding back what a run taken over sends a second time.
//!
//! A run whose process died goes on, in its next attempt, from its thread's last checkpoint:
//! the graph first sends again what it sent from that checkpoint on (the checkpoint's values,
//! the updates of the tasks whose writes were kept, the events of a task that is run again),
//! then goes on with what is new. Its followers saw the first part already, under the ids the
//! dead process gave them. The new attempt's events are matched against what they saw: while
//! each one is among the events sent since the earliest of them that matched, it is held back;
//! the first event that is not ends the matching, and it and every later one are sent. A task
//! that does something else when it runs again (a model that answers otherwise) is shown as it
//! now runs.

use super::frame::Frame;
use std::sync::Arc;

/// Whether a run's new events are matched against what its followers saw.
#[derive(Debug, Default)]
pub(super) enum Replay {
    /// Every event is sent: a first attempt, or one that has sent something new.
    #[default]
    Off,
    /// A new attempt that has sent nothing yet; its followers saw the frames before `seen`.
    Waiting { seen: usize },
    /// A new attempt sending again what its followers saw: the frames (by position) it has not
    /// sent again yet.
    Matching { left: Vec<usize> },
}

/// Whether a frame is of the attempt's own (its `metadata` names the attempt): never matched.
fn own(frame: &Frame) -> bool {
    frame.name == "metadata"
}

impl Replay {
    /// Whether the event `name`/`data` is to be sent, its followers having seen `frames`
    /// (held back: it is one of them, sent again).
    pub(super) fn admits(&mut self, frames: &[Arc<Frame>], name: &str, data: &str) -> bool {
        let same = |frame: &Frame| !own(frame) && frame.name == name && frame.data == data;
        let (admitted, next) = match self {
            Self::Off => return true,
            Self::Waiting { seen } => {
                let seen = (*seen).min(frames.len());
                // The latest match: the graph sends again from its last checkpoint on.
                match frames[..seen].iter().rposition(|frame| same(frame)) {
                    None => (true, Self::Off),
                    Some(at) => {
                        let left: Vec<usize> = (at + 1..seen).filter(|&i| !own(&frames[i])).collect();
                        (false, if left.is_empty() { Self::Off } else { Self::Matching { left } })
                    }
                }
            }
            Self::Matching { left } => match left.iter().position(|&i| same(&frames[i])) {
                // Tasks of one step may finish in another order than they did: any order matches.
                Some(found) => {
                    left.remove(found);
                    if !left.is_empty() {
                        return false;
                    }
                    (false, Self::Off)
                }
                None => (true, Self::Off),
            },
        };
        *self = next;
        admitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(events: &[(&str, &str)]) -> Vec<Arc<Frame>> {
        events
            .iter()
            .enumerate()
            .map(|(id, (name, data))| Arc::new(Frame { id, name: (*name).into(), data: (*data).into() }))
            .collect()
    }

    /// The events of `sent` that `replay` lets through, in order.
    fn through(mut replay: Replay, seen: &[Arc<Frame>], sent: &[(&str, &str)]) -> Vec<String> {
        sent.iter().filter(|(name, data)| replay.admits(seen, name, data)).map(|(_, data)| (*data).to_owned()).collect()
    }

    #[test]
    fn what_followers_saw_since_the_last_checkpoint_is_not_sent_again() {
        let seen = frames(&[("metadata", "1"), ("values", "a"), ("values", "b"), ("updates", "x")]);
        let replay = Replay::Waiting { seen: seen.len() };
        let sent = [("values", "b"), ("updates", "x"), ("values", "c"), ("values", "b")];
        // Once something new was sent, an event like an earlier one is new too.
        assert_eq!(through(replay, &seen, &sent), ["c", "b"]);
    }

    #[test]
    fn the_tasks_of_a_step_may_come_again_in_another_order() {
        let seen = frames(&[("values", "a"), ("updates", "x"), ("updates", "y")]);
        let sent = [("values", "a"), ("updates", "y"), ("updates", "x"), ("values", "b")];
        assert_eq!(through(Replay::Waiting { seen: seen.len() }, &seen, &sent), ["b"]);
    }

    #[test]
    fn a_task_that_does_otherwise_when_run_again_is_shown_from_where_it_differs() {
        let seen = frames(&[("values", "a"), ("messages", "Hel"), ("messages", "lo")]);
        let sent = [("values", "a"), ("messages", "Hel"), ("messages", "p!"), ("messages", "lo")];
        assert_eq!(through(Replay::Waiting { seen: seen.len() }, &seen, &sent), ["p!", "lo"]);
    }

    #[test]
    fn a_first_event_followers_never_saw_ends_the_matching() {
        let seen = frames(&[("values", "a")]);
        let sent = [("values", "z"), ("values", "a")];
        assert_eq!(through(Replay::Waiting { seen: seen.len() }, &seen, &sent), ["z", "a"]);
    }

    #[test]
    fn the_attempts_own_events_are_never_matched_and_off_lets_everything_through() {
        let seen = frames(&[("metadata", "m"), ("values", "a")]);
        assert_eq!(through(Replay::Waiting { seen: seen.len() }, &seen, &[("metadata", "m")]), ["m"]);
        assert!(through(Replay::Waiting { seen: seen.len() }, &seen, &[("values", "a")]).is_empty());
        assert_eq!(through(Replay::Off, &seen, &[("values", "a")]), ["a"]);
    }
}
