//! The records' fields as the server writes them, and the checks both databases make the same way
//! before writing them.

use crate::error::ApiError;
use crate::runs::request::Multitask;
use serde_json::{Map, Value, json};

/// An assistant record's fields.
pub(crate) struct AssistantRow {
    pub(crate) assistant_id: String,
    pub(crate) graph_id: String,
    pub(crate) config: Value,
    pub(crate) context: Value,
    pub(crate) metadata: Value,
    pub(crate) name: String,
    pub(crate) description: Option<String>,
}

/// A new run's record.
pub(crate) struct RunRow {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) graph_id: String,
    pub(crate) assistant_id: String,
    pub(crate) metadata: Value,
    pub(crate) kwargs: Value,
    /// What the server's policy sets in the metadata of the thread the run is on (its owner).
    pub(crate) thread_metadata: Map<String, Value>,
    /// Who started the run (`null`: nobody authenticated), kept so that the run can be taken
    /// up again as them when the process dies before it ends.
    pub(crate) caller: Value,
}

/// A run an earlier process accepted and did not finish, to be taken up again.
pub(crate) struct Unfinished {
    /// Its record (its request opened once [`Meta::prepare`] returns it).
    pub(crate) run: Value,
    /// Who started it, as stored (`null`: nobody authenticated).
    pub(crate) caller: Value,
    /// When it first started executing (RFC 3339): it continues from its thread's checkpoints
    /// if one was written since. `None`: it was still waiting for its turn (it starts as asked).
    pub(crate) started_at: Option<String>,
    /// The attempt about to be made (1 for a run that never started).
    pub(crate) attempt: u32,
}

/// A run an earlier process left unfinished that is not taken up again: it was started
/// `attempts` times, its process stopping each time before it ended.
pub(crate) struct GivenUp {
    pub(crate) run_id: String,
    pub(crate) thread_id: String,
    pub(crate) attempts: u32,
}

/// How a run given up after `attempts` starts ended, as its followers and joiners are told.
pub(crate) fn attempts_exhausted(attempts: impl std::fmt::Display) -> crate::served::Outcome {
    crate::served::Outcome::Failed {
        error: "WorkerLostError".into(),
        message: format!(
            "the run was started {attempts} times and its server process stopped each time before it ended: \
             it is not started again"
        ),
    }
}

/// How a run ended, as its record and its thread's record keep it.
pub(crate) struct RunEnd {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    /// The run's status; `None`: the run is deleted (rolled back).
    pub(crate) run_status: Option<&'static str>,
    /// The thread's status unless another run is queued on it (then it stays `busy`).
    pub(crate) thread_status: &'static str,
    pub(crate) values: Value,
    pub(crate) interrupts: Value,
}

/// What registering a run does to its thread, given the thread's graph as found (`None`: no
/// such thread).
pub(crate) enum ThreadCheck {
    Create,
    SetGraph,
}

#[allow(clippy::option_option)] // the two cases differ: no thread, or a thread with no graph yet
pub(crate) fn check_thread(found: Option<Option<&str>>, row: &RunRow, creates: bool) -> Result<ThreadCheck, ApiError> {
    match found {
        None if creates => Ok(ThreadCheck::Create),
        None => Err(ApiError::thread_not_found(&row.thread_id)),
        Some(Some(other)) if other != row.graph_id => Err(ApiError::Conflict(format!(
            "Thread {} holds a run of graph {other:?}; graph {:?} cannot continue it: use a new thread",
            row.thread_id, row.graph_id
        ))),
        Some(_) => Ok(ThreadCheck::SetGraph),
    }
}

/// What a run adds to its thread's metadata (the whole metadata of a thread the run creates).
pub(crate) fn run_thread_metadata(row: &RunRow) -> Value {
    let mut metadata = row.thread_metadata.clone();
    metadata.insert("graph_id".into(), json!(row.graph_id));
    metadata.insert("assistant_id".into(), json!(row.assistant_id));
    Value::Object(metadata)
}

/// Refuses a run on a thread that has runs in flight under the `reject` strategy; otherwise the
/// runs the new one supersedes (cancelled by `interrupt` and `rollback`).
pub(crate) fn check_multitask(open: Vec<String>, multitask: Multitask, thread: &str) -> Result<Vec<String>, ApiError> {
    if !open.is_empty() && multitask == Multitask::Reject {
        return Err(ApiError::Conflict(format!(
            "Thread {thread} is already running a task (run {}): wait for it to finish, or pass multitask_strategy \"enqueue\" or \"interrupt\"",
            open[0]
        )));
    }
    Ok(if matches!(multitask, Multitask::Interrupt | Multitask::Rollback) { open } else { Vec::new() })
}

/// A thread's status after its state changed outside a run.
pub(crate) fn refreshed_status(busy: bool, interrupted: bool) -> &'static str {
    if busy {
        "busy"
    } else if interrupted {
        "interrupted"
    } else {
        "idle"
    }
}

/// Whether every key of `filter` is in `value` with an equal value (metadata search).
pub(crate) fn contains(value: &Value, filter: &Map<String, Value>) -> bool {
    filter.iter().all(|(k, v)| value.get(k) == Some(v))
}
