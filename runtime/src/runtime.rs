//! What a node can reach besides the state: its run's context and where it is in the run.

use crate::error::NodeError;
use crate::graph::ParentGotoError;
use crate::interrupt::Interrupt;
use crate::store::{Store, StoreError};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// A node's handle on its run: the typed context, the thread, and the task's place in the run.
///
/// Take it as a parameter (`rt: &Runtime<Ctx>`) in any position. The context holds what the
/// run needs but no model may see (user ids, handles); it never reaches a prompt or a tool
/// schema.
///
/// ```
/// use graphwright::prelude::*;
///
/// pub struct Ctx {
///     pub user_id: String,
/// }
///
/// #[graph(context = Ctx)]
/// mod greet {
///     use super::*;
///
///     #[state]
///     pub struct State {
///         pub greeting: String,
///     }
///
///     #[node(entry, next = END)]
///     fn hello(rt: &Runtime<Ctx>) -> StateUpdate {
///         StateUpdate::new().greeting(format!("hello {} (step {})", rt.context().user_id, rt.step()))
///     }
/// }
///
/// #[tokio::main(flavor = "current_thread")]
/// async fn main() -> Result<(), Report> {
///     let app = greet::graph().compile()?;
///     let cfg = RunConfig::default().context(Ctx { user_id: "u1".into() });
///     let out = app.invoke(greet::State::default(), &cfg).await?;
///     assert_eq!(out.state.greeting, "hello u1 (step 1)");
///     Ok(())
/// }
/// ```
pub struct Runtime<C = ()> {
    pub(crate) run: Arc<RunShared<C>>,
    pub(crate) task: TaskInfo,
    /// Answers to this task's interrupts by call number (from earlier resumes).
    pub(crate) answers: Option<Arc<std::collections::BTreeMap<u32, Value>>>,
    /// The checkpoint the task runs from, for interrupt ids.
    pub(crate) checkpoint: Option<Arc<str>>,
    pub(crate) interrupt_calls: AtomicU32,
    /// The results of the task's finished calls (durable tool calls), kept across its attempts.
    pub(crate) results: Option<Arc<crate::pregel::calls::CallResults>>,
}

/// What every task of one run shares.
pub(crate) struct RunShared<C> {
    pub(crate) context: Arc<C>,
    pub(crate) thread_id: Option<Arc<str>>,
    pub(crate) run_id: u64,
    pub(crate) node_names: Arc<[Arc<str>]>,
    /// The graph's long-term memory, if it was given one.
    pub(crate) store: Option<Arc<dyn Store>>,
    /// The graph's cache, if it was given one (for an entrypoint's cached tasks).
    pub(crate) cache: Option<Arc<dyn crate::cache::Cache>>,
    /// Where `write` and `message_delta` go when the run is streamed.
    pub(crate) writer: Option<crate::stream::SharedWriter>,
    /// The run's event log, if it has one.
    pub(crate) log: Option<crate::log::RunLog>,
    /// What the run's spans may carry beyond names, timings and counts (see
    /// [`RunConfig::capture`](crate::RunConfig::capture)); none: nothing more.
    pub(crate) capture: Option<Arc<crate::log::CapturePolicy>>,
    /// Where the run reports its model and tool calls, if anywhere (shared with the runs of
    /// its subgraphs).
    pub(crate) metrics: Option<Arc<dyn crate::metrics::RunMetrics>>,
    /// What the run's model calls spent, against its budget and deadline (shared with the
    /// runs of its subgraphs).
    pub(crate) meter: Arc<crate::model::Meter>,
    /// Where the run checkpoints, when it has a thread.
    pub(crate) storage: Option<Storage>,
    /// Whether the run is a subgraph's, run by a node of another graph.
    pub(crate) nested: bool,
    /// The node of the parent graph a node of this subgraph run asked to go to
    /// ([`Runtime::goto_parent`]): the run ends after the step that asked.
    pub(crate) parent_goto: std::sync::OnceLock<String>,
    /// Breakpoints given for this run alone ([`RunConfig::interrupt_before`](crate::RunConfig::interrupt_before)).
    pub(crate) breakpoints: Option<crate::config::NodeBreakpoints>,
    /// Who started the run ([`RunConfig::user`](crate::RunConfig::user)).
    pub(crate) user: Option<Arc<crate::AuthUser>>,
    /// Where the run's spans are recorded, when they are exported (shared with the runs of
    /// its subgraphs).
    pub(crate) trace: Option<crate::telemetry::RunTrace>,
}

impl<C> RunShared<C> {
    /// Whether the run pauses before (`after` false) or after node `node` on its own account.
    pub(crate) fn breaks_at(&self, node: usize, after: bool) -> bool {
        self.breakpoints.as_ref().is_some_and(|b| if after { b.after[node] } else { b.before[node] })
    }
}

/// Where a run on a thread keeps its checkpoints: a subgraph run by one of its nodes keeps its
/// own in the same place, under a key made from this one.
#[derive(Clone)]
pub(crate) struct Storage {
    pub(crate) saver: Arc<dyn crate::checkpoint::Checkpointer>,
    /// The key the run's checkpoints are stored under: the thread id, followed by the
    /// namespace for a subgraph's run.
    pub(crate) key: Arc<str>,
    pub(crate) durability: crate::config::Durability,
    /// Under `Durability::Async`, the room for checkpoints waiting for the store, shared by the
    /// run and every subgraph run under it: [`MAX_STEPS_AHEAD`](crate::MAX_STEPS_AHEAD) bounds
    /// what a crash of the whole run can lose, not what each of its graphs can.
    pub(crate) ahead: Option<Arc<tokio::sync::Semaphore>>,
}

/// Where a task sits in its run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TaskInfo {
    pub(crate) step: u64,
    pub(crate) node: u32,
    pub(crate) index: u32,
    pub(crate) attempt: u32,
}

impl Runtime<()> {
    /// A runtime outside any graph, for calling a model (or a tool) from plain code:
    /// `model.invoke(&messages, &Runtime::detached())`. Its calls are retried and traced like
    /// a node's (and, with the `otel` feature, counted); they stream nowhere, and
    /// [`usage`](Runtime::usage) sums them.
    #[must_use]
    pub fn detached() -> Self {
        static NAMES: std::sync::OnceLock<Arc<[Arc<str>]>> = std::sync::OnceLock::new();
        let node_names = NAMES.get_or_init(|| Arc::from([Arc::from("detached")])).clone();
        let run = RunShared {
            context: Arc::new(()),
            thread_id: None,
            run_id: 0,
            node_names,
            store: None,
            cache: None,
            writer: None,
            log: None,
            capture: None,
            metrics: crate::config::default_metrics(),
            meter: Arc::default(),
            storage: None,
            nested: false,
            parent_goto: std::sync::OnceLock::new(),
            breakpoints: None,
            user: None,
            trace: None,
        };
        Self {
            run: Arc::new(run),
            task: TaskInfo { step: 0, node: 0, index: 0, attempt: 1 },
            answers: None,
            checkpoint: None,
            interrupt_calls: AtomicU32::new(0),
            results: None,
        }
    }
}

impl<C> Runtime<C> {
    /// A runtime of the same task that code running beside the task can hold (an
    /// entrypoint's tasks): it goes on counting this one's interrupt calls from where it is.
    pub(crate) fn share(&self) -> Self {
        Self {
            run: Arc::clone(&self.run),
            task: self.task,
            answers: self.answers.clone(),
            checkpoint: self.checkpoint.clone(),
            interrupt_calls: AtomicU32::new(self.interrupt_calls.load(Ordering::Relaxed)),
            results: self.results.clone(),
        }
    }

    /// What the run's model calls have used so far (all tasks of the run together).
    pub fn usage(&self) -> crate::model::Usage {
        self.run.meter.usage()
    }

    /// The run's context, as passed with [`RunConfig::context`](crate::RunConfig::context).
    pub fn context(&self) -> &C {
        &self.run.context
    }

    /// The super-step this task runs in; the first node step is 1.
    pub fn step(&self) -> u64 {
        self.task.step
    }

    /// The name of the node this task runs.
    pub fn node(&self) -> &str {
        &self.run.node_names[self.task.node as usize]
    }

    /// The task's position in its step: pull tasks in node declaration order, then Send tasks
    /// in the order they were sent.
    pub fn task_index(&self) -> u32 {
        self.task.index
    }

    /// Which attempt this is, starting at 1; above 1 only under a retry policy.
    pub fn attempt(&self) -> u32 {
        self.task.attempt
    }

    /// Who started the run: the caller a server authenticated, as given with
    /// [`RunConfig::user`](crate::RunConfig::user); `None` outside a server or without
    /// authentication. A subgraph's nodes see the user of the run that runs it.
    pub fn user(&self) -> Option<&crate::AuthUser> {
        self.run.user.as_deref()
    }

    /// The thread the run belongs to, if it has one.
    pub fn thread_id(&self) -> Option<&str> {
        self.run.thread_id.as_deref()
    }

    /// A number that identifies this run among the runs of this process.
    pub fn run_id(&self) -> u64 {
        self.run.run_id
    }

    /// The graph's long-term memory, shared by every thread (see [`crate::store`]).
    ///
    /// Returns [`StoreError::NoStore`] when the graph was compiled without
    /// [`StateGraph::store`](crate::StateGraph::store), so a node can write `rt.store()?` and a
    /// missing store fails the node with a message that says how to add one.
    pub fn store(&self) -> Result<&dyn Store, StoreError> {
        self.run.store.as_deref().ok_or(StoreError::NoStore)
    }

    /// Sends `value` to the run's stream as a `custom` event (nothing happens when the run is
    /// not streamed with [`StreamMode::Custom`](crate::StreamMode::Custom)). Progress reports,
    /// partial results, anything a watcher wants to see before the step ends.
    pub fn write(&self, value: impl Serialize) {
        if let Some(writer) = &self.run.writer {
            let value = crate::record::codec::to_json_shown(&value);
            writer.write(self.node(), self.step(), crate::stream::Written::Custom(value));
        }
    }

    /// Sends a piece of a message being generated to the run's stream as a `messages` event,
    /// under `message_id` (model clients call this for every token delta).
    pub fn message_delta(&self, message_id: &str, delta: &str) {
        if let Some(writer) = &self.run.writer {
            let written =
                crate::stream::Written::Message { message_id: message_id.to_owned(), delta: delta.to_owned() };
            writer.write(self.node(), self.step(), written);
        }
    }

    /// Ends this subgraph's run after the current step and sends the parent graph to its node
    /// `node` (LangGraph's `Command(goto=.., graph=Command.PARENT)`).
    ///
    /// The subgraph's state, with this step's writes, goes back to the parent as usual; the
    /// parent then runs `node` next instead of following the subgraph node's edges. The
    /// subgraph node must name its possible targets (`#[node(subgraph, next = a | b)]`, or
    /// [`StateGraph::add_routed_subgraph`](crate::StateGraph::add_routed_subgraph)), and `node`
    /// must be one of them; [`END`](crate::END) ends the parent's branch. When several tasks
    /// of the step ask, the first to ask wins. A graph run on its own has no parent: the call
    /// fails the node.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[graph]
    /// mod triage {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub ticket: String,
    ///     }
    ///
    ///     #[node(entry, next = END)]
    ///     fn classify(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
    ///         rt.goto_parent(if state.ticket.contains("refund") { "billing" } else { "support" })?;
    ///         Ok(StateUpdate::new())
    ///     }
    /// }
    ///
    /// #[graph]
    /// mod desk {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub ticket: String,
    ///         pub handled_by: String,
    ///     }
    ///
    ///     impl From<&State> for super::triage::State {
    ///         fn from(desk: &State) -> Self {
    ///             Self { ticket: desk.ticket.clone() }
    ///         }
    ///     }
    ///
    ///     impl From<super::triage::State> for StateUpdate {
    ///         fn from(_: super::triage::State) -> Self {
    ///             StateUpdate::new()
    ///         }
    ///     }
    ///
    ///     #[node(entry, subgraph, next = billing | support)]
    ///     fn triage() -> StateGraph<super::triage::State> {
    ///         super::triage::graph()
    ///     }
    ///
    ///     #[node(next = END)]
    ///     fn billing(_state: &State) -> StateUpdate {
    ///         StateUpdate::new().handled_by("billing".to_owned())
    ///     }
    ///
    ///     #[node(next = END)]
    ///     fn support(_state: &State) -> StateUpdate {
    ///         StateUpdate::new().handled_by("support".to_owned())
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Report> {
    /// let app = desk::graph().compile()?;
    /// let input = desk::State { ticket: "refund for order 7".into(), handled_by: String::new() };
    /// let out = app.invoke(input, &RunConfig::default()).await?;
    /// assert_eq!(out.state.handled_by, "billing");
    /// # Ok(()) }
    /// ```
    pub fn goto_parent(&self, node: impl Into<String>) -> Result<(), NodeError> {
        let node = node.into();
        if !self.run.nested {
            return Err(ParentGotoError::NoParent { node: self.node().to_owned(), target: node }.into());
        }
        let _ = self.run.parent_goto.set(node);
        Ok(())
    }

    /// Pauses the run to ask a person (or another system) for `value`'s answer.
    ///
    /// The first time, this returns an error that the node passes on with `?`: the run stops
    /// with the interrupt in [`RunOutput::interrupts`](crate::RunOutput::interrupts), the other
    /// tasks of the step finish, and their writes are kept. `resume(&cfg, answer)` runs the
    /// node again from its start, and this call then returns the answer, decoded as `R`. A
    /// node may interrupt several times; answers are matched by call order. Needs a thread.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[graph]
    /// mod approval {
    ///     use super::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub amount: u32,
    ///         pub approved: Option<bool>,
    ///     }
    ///
    ///     #[node(entry, next = END)]
    ///     fn ask(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
    ///         let approved: bool = rt.interrupt(json!({"question": "refund?", "amount": state.amount}))?;
    ///         Ok(StateUpdate::new().approved(Some(approved)))
    ///     }
    /// }
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Report> {
    ///     let app = approval::graph().compile()?;
    ///     let cfg = RunConfig::thread("refund-7");
    ///     let paused = app.invoke(approval::State { amount: 40, approved: None }, &cfg).await?;
    ///     assert!(paused.is_interrupted());
    ///     assert_eq!(paused.interrupts[0].value["amount"], 40);
    ///     let done = app.resume(&cfg, json!(true)).await?;
    ///     assert_eq!(done.state.approved, Some(true));
    ///     Ok(())
    /// }
    /// ```
    pub fn interrupt<V: Serialize, R: DeserializeOwned>(&self, value: V) -> Result<R, NodeError> {
        // A task of an entrypoint numbers its interrupts in a range of its own call's, so a
        // replayed task before it (whose interrupts are not asked again) shifts nothing.
        let call = match crate::functional::scope::Flow::task_interrupt_call() {
            Some(call) => call?,
            None => self.interrupt_calls.fetch_add(1, Ordering::Relaxed),
        };
        if let Some(answer) = self.answers.as_ref().and_then(|a| a.get(&call)) {
            return serde_json::from_value(answer.clone()).map_err(|e| {
                NodeError::msg(format!(
                    "the answer to interrupt {call} of `{}` does not fit the type the node expects: {e}",
                    self.node()
                ))
            });
        }
        let value = crate::record::codec::to_json(&value)
            .map_err(|e| NodeError::msg(format!("the interrupt value could not be encoded: {e}")))?;
        let place = self.checkpoint.as_deref().map_or_else(|| format!("step{}", self.step()), str::to_owned);
        Err(NodeError::interrupted(Interrupt {
            id: format!("{place}:{}:{call}", self.task.index),
            node: self.node().to_owned(),
            value,
            task: self.task.index,
            call,
        }))
    }
}

impl<C> crate::model::context::sealed::Sealed for Runtime<C> {}

impl<C: Send + Sync> crate::model::CallContext for Runtime<C> {
    fn model_scope(&self) -> crate::model::Scope<'_> {
        crate::model::Scope {
            meter: &self.run.meter,
            writer: self.run.writer.as_deref().map(|writer| writer as &dyn crate::model::reporting::DeltaSink),
            node: crate::functional::scope::Flow::current_task().unwrap_or_else(|| self.node()),
            step: self.step(),
            run_id: self.run.run_id,
            thread: self.thread_id(),
            log: self.run.log.as_ref().map(|log| log as &dyn crate::model::reporting::CallLog),
            capture: self.run.capture.as_deref(),
            metrics: self.run.metrics.as_deref(),
            trace: self.run.trace.as_ref(),
        }
    }
}
