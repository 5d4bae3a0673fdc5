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
    /// Where task results are streamed, when the run is.
    pub(crate) writer: Option<SharedWriter>,
    pub(crate) step: u64,
    /// The next call's position among the entrypoint's task calls.
    next_call: AtomicU32,
    /// Whether the code being polled is a task's (whose own task calls are not stored).
    pub(crate) inside_task: bool,
}

impl Flow {
    /// The run of the task `rt` belongs to (the entrypoint's node), for entrypoint `entrypoint`.
    pub(crate) fn new<C: Send + Sync + 'static>(rt: crate::Runtime<C>, entrypoint: Arc<str>) -> Self {
        Self {
            context: std::any::type_name::<C>(),
            entrypoint,
            results: rt.results.clone(),
            cache: rt.run.cache.clone(),
            writer: rt.run.writer.clone(),
            step: rt.step(),
            runtime: Arc::new(rt),
            next_call: AtomicU32::new(0),
            inside_task: false,
        }
    }

    /// The same run as a task's body sees it.
    pub(crate) fn for_task(&self) -> Self {
        Self {
            runtime: Arc::clone(&self.runtime),
            context: self.context,
            entrypoint: Arc::clone(&self.entrypoint),
            results: self.results.clone(),
            cache: self.cache.clone(),
            writer: self.writer.clone(),
            step: self.step,
            next_call: AtomicU32::new(0),
            inside_task: true,
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

    /// Polls `future` as part of this run.
    pub(crate) async fn scope<T>(self: Arc<Self>, future: impl Future<Output = T>) -> T {
        FLOW.scope(self, future).await
    }

    /// The run's `Runtime<C>`, for a task that takes one.
    pub(crate) fn runtime<C: Send + Sync + 'static>(&self, task: &str) -> Result<&crate::Runtime<C>, NodeError> {
        self.runtime.downcast_ref::<crate::Runtime<C>>().ok_or_else(|| {
            NodeError::msg(format!(
                "task `{task}` takes a `Runtime<{}>`, but entrypoint `{}` runs with a `Runtime<{}>`: give the task \
                 the entrypoint's context type",
                std::any::type_name::<C>(),
                self.entrypoint,
                self.context
            ))
        })
    }
}
