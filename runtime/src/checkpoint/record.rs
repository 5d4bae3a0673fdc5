//! The records a checkpointer stores and the arguments it is handed: what every backend and
//! the executor agree on, kept apart from the trait so backends can share them without
//! reaching the module's facade.

use serde::{Deserialize, Serialize};

/// The version of the stored record layout; bumped on any incompatible change. Version 2:
/// `MessagePack` bodies sealed with an integrity check.
pub const FORMAT_VERSION: u16 = 2;

/// A run's hold on a thread, from [`Checkpointer::claim`](super::Checkpointer::claim): every write of the run carries it,
/// and a backend refuses writes whose claim is no longer the thread's current one.
///
/// The fence is a number that grows with every claim of the thread; a run that lost its claim
/// (its process was thought dead, and another took the thread over) holds a smaller fence than
/// the thread's, so its late writes are refused instead of mixing with the new holder's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    thread: std::sync::Arc<str>,
    fence: u64,
}

impl Claim {
    /// A claim of `thread` with fence `fence` (backends create these).
    pub fn new(thread: impl Into<std::sync::Arc<str>>, fence: u64) -> Self {
        Self { thread: thread.into(), fence }
    }

    /// The thread held.
    pub fn thread(&self) -> &str {
        &self.thread
    }

    /// The fencing token: larger than that of any earlier claim of the thread.
    pub fn fence(&self) -> u64 {
        self.fence
    }
}

/// Why a checkpoint was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The run's input, before any step (step -1).
    Input,
    /// After a super-step of the run (step 0 applies the input).
    Loop,
    /// Written by `update_state`.
    Update,
    /// The first checkpoint of a branch started from an older checkpoint.
    Fork,
}

impl Source {
    /// The name stored for this source.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Input => "input",
            Self::Loop => "loop",
            Self::Update => "update",
            Self::Fork => "fork",
        }
    }

    /// The source with the stored name `name`.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "input" => Some(Self::Input),
            "loop" => Some(Self::Loop),
            "update" => Some(Self::Update),
            "fork" => Some(Self::Fork),
            _ => None,
        }
    }
}

/// One stored checkpoint, as a backend sees it: metadata in columns, the body as bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// The thread it belongs to.
    pub thread_id: String,
    /// Its id: unique, and ordered by creation time within a thread.
    pub id: String,
    /// The checkpoint it follows; `None` for the first of a thread.
    pub parent_id: Option<String>,
    /// The super-step it was taken after (-1 for the input).
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// Milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The layout version of `body`.
    pub format: u16,
    /// The encoded body (state snapshot or none, next tasks, pending interrupts).
    pub body: Vec<u8>,
}

/// One write a finished task saved, keyed so that saving it twice changes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteRecord {
    /// The thread.
    pub thread_id: String,
    /// The checkpoint whose next tasks the task belongs to.
    pub checkpoint_id: String,
    /// The task's index among that checkpoint's next tasks.
    pub task: u32,
    /// The write's index within the task (a task may save more than one write).
    pub index: u32,
    /// The layout version of `body`.
    pub format: u16,
    /// The encoded write.
    pub body: Vec<u8>,
}

/// Which checkpoints of a thread `list` returns, newest first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Only checkpoints older than this id.
    pub before: Option<String>,
    /// At most this many.
    pub limit: Option<usize>,
    /// Only checkpoints with this source.
    pub source: Option<Source>,
}

/// One operation of [`Checkpointer::put_batch`](super::Checkpointer::put_batch).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BatchOp {
    /// As [`Checkpointer::put_writes`](super::Checkpointer::put_writes).
    Writes(Vec<WriteRecord>),
    /// As [`Checkpointer::put`](super::Checkpointer::put).
    Put {
        /// The checkpoint.
        record: CheckpointRecord,
        /// The head it must find.
        expected_head: Option<String>,
        /// Writes stored with it.
        writes: Vec<WriteRecord>,
    },
}

/// What separates a thread id from a subgraph's namespace in the keys subgraphs store their
/// checkpoints under (`thread`, then this, then the namespace).
pub const NAMESPACE_SEPARATOR: char = '\u{1f}';
