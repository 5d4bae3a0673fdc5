//! Where a task call finds the entrypoint run it belongs to: the run's handle, the results of
//! the calls an earlier run of it finished, and the stream, carried through the entrypoint's
//! future (and its tasks' futures) as a task-local value.

use crate::error::NodeError;
use crate::pregel::calls::CallResults;
use crate::stream::SharedWriter;
use std::any::Any;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

tokio::task_local! {
    /// The entrypoint run the code being polled belongs to.
    static FLOW: Arc<Flow>;
}

/// One entrypoint run, as its task calls see it.
pub(crate) struct Flow {
    /// The run's `Runtime<C>`, shared by the entrypoint and its tasks (one interrupt count).
    pub(crate) runtime: Arc<dyn Any + Send + Sync>,
    /// `C`'s name, for a task that asks for another context.
    pub(crate) context: &'static str,
    /// The entrypoint's name.
    pub(crate) entrypoint: Arc<str>,
    /// The results of the task calls finished by this run or an earlier run of it (none when
    /// the run stores nothing: no thread, or `Durability::Exit`).
    pub(crate) results: Option<Arc<CallResults>>,
    /// The entrypoint's cache, for tasks with a cache policy.
    pub(crate) cache: Option<Arc<dyn crate::cache::Cache>>,
    /// Who started the run, whose cache entries are kept apart from other users'.
    pub(crate) user: Option<Arc<crate::AuthUser>>,
    /// Where task results are streamed, when the run is.
    pub(crate) writer: Option<SharedWriter>,
    pub(crate) step: u64,
    /// The next call's position among the entrypoint's task calls.
    pub(super) next_call: AtomicU32,
    /// Whether the code being polled is a task's (whose own task calls are not stored).
    pub(crate) inside_task: bool,
    /// The task being polled, if the code is a task's: what its model calls stream under.
    pub(super) task: Option<&'static str>,
    /// The interrupt numbers of the entrypoint's task call the code belongs to, if it is a
    /// task's (shared with the tasks that task calls).
    pub(super) interrupts: Option<Arc<TaskInterrupts>>,
}

/// Where the interrupts raised inside one of the entrypoint's task calls are numbered: from
/// `TASK_INTERRUPTS`, `TASK_INTERRUPT_SLOTS` numbers per call, apart from the entrypoint's own
/// (counted from 0) and from every other call's. A task replayed from its stored result asks
/// nothing; with one count for the whole run, the answers of the tasks after it would shift to
/// the wrong questions.
pub(crate) struct TaskInterrupts {
    call: u32,
    next: AtomicU32,
}

/// The first interrupt number of task calls (below it, the entrypoint's own). Interrupt numbers
/// stay under 2^30, where the write records of results begin.
const TASK_INTERRUPTS: u32 = 1 << 29;
/// Interrupts one task call may raise (each answered on a resume of its own).
const TASK_INTERRUPT_SLOTS: u32 = 1 << 9;
/// Task calls whose interrupts can be numbered.
const NUMBERED_CALLS: u32 = (1 << 29) / TASK_INTERRUPT_SLOTS;

impl Flow {
    /// The same run as the body of task `task` sees it: the entrypoint's call `call` of it, or
    /// (`None`) a call made inside the task being polled, whose interrupts count as that task's.
    pub(crate) fn for_task(&self, task: &'static str, call: Option<u32>) -> Self {
        Self {
            runtime: Arc::clone(&self.runtime),
            context: self.context,
            entrypoint: Arc::clone(&self.entrypoint),
            results: self.results.clone(),
            cache: self.cache.clone(),
            user: self.user.clone(),
            writer: self.writer.clone(),
            step: self.step,
            next_call: AtomicU32::new(0),
            inside_task: true,
            task: Some(task),
            interrupts: match call {
                Some(call) => Some(Arc::new(TaskInterrupts { call, next: AtomicU32::new(0) })),
                None => self.interrupts.clone(),
            },
        }
    }

    /// The position of the next task call made by the entrypoint itself. Calls are numbered as
    /// they are made, in the entrypoint's own order, which its code fixes: a run of it again
    /// makes the same calls in the same order.
    pub(crate) fn next_call(&self) -> u32 {
        self.next_call.fetch_add(1, Ordering::Relaxed)
    }

    /// The entrypoint run the caller is polled in, if any.
    pub(crate) fn current() -> Option<Arc<Self>> {
        FLOW.try_with(Arc::clone).ok()
    }

    /// The task whose body is being polled, if any: a model called inside it streams its
    /// tokens under the task's name, as LangGraph shows a task's model calls.
    pub(crate) fn current_task() -> Option<&'static str> {
        FLOW.try_with(|flow| flow.task).ok().flatten()
    }

    /// Starts the task call's interrupt count again, for a new attempt of it (which asks its
    /// questions again, from the first).
    pub(crate) fn restart_interrupts(&self) {
        if let Some(interrupts) = &self.interrupts {
            interrupts.next.store(0, Ordering::Relaxed);
        }
    }

    /// The number of an interrupt raised now, if the code being polled is a task's: in its
    /// call's range (see [`TaskInterrupts`]).
    pub(crate) fn task_interrupt_call() -> Option<Result<u32, NodeError>> {
        let interrupts = FLOW.try_with(|flow| flow.interrupts.clone()).ok().flatten()?;
        let nth = interrupts.next.fetch_add(1, Ordering::Relaxed);
        Some(if interrupts.call < NUMBERED_CALLS && nth < TASK_INTERRUPT_SLOTS {
            Ok(TASK_INTERRUPTS + interrupts.call * TASK_INTERRUPT_SLOTS + nth)
        } else {
            Err(NodeError::msg(format!(
                "task call {} of the entrypoint raised interrupt {nth}: an entrypoint's first {NUMBERED_CALLS} task calls may \
                 each raise up to {TASK_INTERRUPT_SLOTS} interrupts; ask fewer questions per task, or gather them in one",
                interrupts.call
            )))
        })
    }

    /// Polls `future` as part of this run.
    pub(crate) async fn scope<T>(self: Arc<Self>, future: impl Future<Output = T>) -> T {
        FLOW.scope(self, future).await
    }
}
