//! The stream modes a run can be watched in, alone or combined.

use std::ops::BitOr;

/// What a stream reports, as LangGraph's stream modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum StreamMode {
    /// The whole state after each step.
    Values = 1,
    /// Each task's update, as soon as the task finishes (so in the order tasks finish; the
    /// merge into the state stays in task order).
    Updates = 2,
    /// Token deltas written with [`Runtime::message_delta`](crate::Runtime::message_delta).
    Messages = 4,
    /// Anything nodes write with [`Runtime::write`](crate::Runtime::write).
    Custom = 8,
    /// Task start and finish, with each task's update, error or interrupt.
    Tasks = 16,
    /// Each stored checkpoint.
    Checkpoints = 32,
    /// Tasks and checkpoints together.
    Debug = 48,
    /// Also the `values`, `updates`, `tasks` and `checkpoints` events of subgraphs (LangGraph's
    /// `subgraphs=True`), as [`EventKind::SubgraphValues`](super::EventKind::SubgraphValues), [`EventKind::SubgraphUpdate`](super::EventKind::SubgraphUpdate) and
    /// the task and checkpoint kinds, each with its [`Event::namespace`](super::Event::namespace). `custom` and
    /// `messages` events from inside subgraphs come without it: they are what a node chose to
    /// show.
    Subgraphs = 64,
}

/// A set of [`StreamMode`]s: `StreamMode::Updates | StreamMode::Messages`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct StreamModes(pub(super) u8);

impl StreamModes {
    /// Whether `mode` (every part of it, for `Debug`) is in the set.
    #[must_use]
    pub fn contains(self, mode: StreamMode) -> bool {
        self.0 & mode as u8 == mode as u8
    }

    /// The set holding `mode` (usable in constants).
    #[must_use]
    pub const fn of(mode: StreamMode) -> Self {
        Self(mode as u8)
    }

    /// The set with `mode` added (usable in constants).
    #[must_use]
    pub const fn with(self, mode: StreamMode) -> Self {
        Self(self.0 | mode as u8)
    }
}

impl From<StreamMode> for StreamModes {
    fn from(mode: StreamMode) -> Self {
        Self(mode as u8)
    }
}

impl BitOr for StreamMode {
    type Output = StreamModes;
    fn bitor(self, other: Self) -> StreamModes {
        StreamModes(self as u8 | other as u8)
    }
}

impl BitOr<StreamMode> for StreamModes {
    type Output = StreamModes;
    fn bitor(self, other: StreamMode) -> StreamModes {
        StreamModes(self.0 | other as u8)
    }
}
