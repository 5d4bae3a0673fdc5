//! `ToolNode`: runs the tool calls of the model's last message.

use super::event::{EventSink, ToolEvent};
use super::finished_calls::FinishedCalls;
use super::pipeline::Calls;
use super::policy::{ToolPolicies, ToolPolicy};
use super::runtime::ToolEnv;
use super::set::ToolSet;
use crate::graph::{NodeFuture, NodeSpec, Shape};
use crate::message::{Message, ToolCall};
use crate::node::NodeOutput;
use crate::pregel::calls::CallResults;
use crate::runtime::Runtime;
use crate::state::State;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Runs every tool call of the last assistant message, concurrently, and answers each with
/// exactly one tool message, in call order (LangGraph's `ToolNode`).
///
/// Nothing a model sends can crash the run: invalid JSON, arguments that miss the schema (the
/// message names the field and what was expected), an unknown tool (the message lists the
/// known ones), a tool error, a panic inside a tool and a timeout each become a tool message
/// with `is_error = true` that tells the model what to fix, and the sibling calls still run.
///
/// Two calls that share one id each get one answer too: the first runs, and every later one is
/// answered, under the same id, with an error that tells the model to give each call its own id
/// (it is not run: a repeated id usually means a repeated request, and running a side effect
/// twice is worse than asking again). Every message the node returns has a fresh message id,
/// so a provider that reuses call ids across turns never makes one turn's answers replace
/// another's.
///
/// Inside a graph's task, every call is durable: its tool message is stored as a write of the
/// task as soon as the call finishes, so when the task runs again (the process died between two
/// calls, the node paused after them, a retry) a finished call is answered from storage and
/// never runs twice.
///
/// In a `#[graph]` module, call it from the tools node and write its messages back:
///
/// ```
/// use graphwright::prelude::*;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// #[graph]
/// mod calc {
///     use super::*;
///
///     #[state]
///     pub struct State {
///         #[reducer(messages)]
///         pub messages: Vec<Message>,
///     }
///
///     #[node(entry, next = END)]
///     async fn tools(state: &State, rt: &Runtime) -> StateUpdate {
///         let node = ToolNode::new(tools![Add]);
///         StateUpdate::new().messages(node.run(&state.messages, state, rt).await)
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let ask = Message::assistant("")
///     .with_tool_calls(vec![ToolCall::new("c1", "add", serde_json::json!({"a": 40, "b": 2}))]);
/// let out = calc::graph().compile()?.invoke(calc::StateUpdate::new().messages(vec![ask]), &RunConfig::default()).await?;
/// assert_eq!(out.state.messages[1].content, "42");
/// assert_eq!(out.state.messages[1].tool_call_id.as_deref(), Some("c1"));
/// # Ok(()) }
/// ```
///
/// Building it costs a few allocations; a graph that wants one shared instance keeps it in a
/// `static` `LazyLock` or in its context. For the dynamic builder, [`ToolNode::into_spec`] makes
/// it a node directly.
#[derive(Clone, Default)]
pub struct ToolNode {
    pub(crate) tools: ToolSet,
    policies: ToolPolicies,
    pub(crate) sink: Option<EventSink>,
}

impl ToolNode {
    /// A node running `tools` with no timeout, retry, check or redaction.
    #[must_use]
    pub fn new(tools: ToolSet) -> Self {
        Self { tools, ..Self::default() }
    }

    /// The tools the node runs (the ones to offer the model).
    #[must_use]
    pub fn tools(&self) -> &ToolSet {
        &self.tools
    }

    /// Sets the policy of the tool named `tool`; what it leaves unset comes from the default.
    #[must_use]
    pub fn policy(mut self, tool: &str, policy: ToolPolicy) -> Self {
        if self.tools.get(tool).is_none() {
            tracing::warn!(tool, known = ?self.tools, "policy for a tool this node does not have");
        }
        self.policies.by_tool.insert(tool.to_owned(), policy);
        self
    }

    /// Sets the policy of every tool without its own.
    #[must_use]
    pub fn default_policy(mut self, policy: ToolPolicy) -> Self {
        self.policies.default = policy;
        self
    }

    /// Sets the default timeout of one attempt of any tool.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.policies.default.timeout = Some(limit);
        self
    }

    /// Sends every [`ToolEvent`] to `sink` (called in place: keep it quick).
    #[must_use]
    pub fn on_event(mut self, sink: impl Fn(ToolEvent) + Send + Sync + 'static) -> Self {
        self.sink = Some(Arc::new(sink));
        self
    }

    /// Sends every [`ToolEvent`] down `sender`; events are dropped once the receiver is gone.
    #[must_use]
    pub fn events(self, sender: tokio::sync::mpsc::UnboundedSender<ToolEvent>) -> Self {
        self.on_event(move |event| {
            let _ = sender.send(event);
        })
    }

    /// Runs the tool calls of the last message (when it is an assistant message with tool
    /// calls; otherwise returns nothing), with the graph's state and the run's context
    /// available to tools that take a [`ToolRuntime`](super::ToolRuntime). The tools see a
    /// copy of `state` taken now.
    pub async fn run<S, C>(&self, messages: &[Message], state: &S, rt: &Runtime<C>) -> Vec<Message>
    where
        S: Clone + Send + Sync + 'static,
        C: Send + Sync + 'static,
    {
        match messages.last() {
            Some(last) if last.has_tool_calls() => {
                let env = self.env_for(&last.tool_calls, state, rt);
                self.run_calls(&last.tool_calls, &env).await
            }
            _ => Vec::new(),
        }
    }

    /// What tools running `calls` inside a graph see: the state (copied only when a called tool
    /// can read it), the run's context and store.
    pub(crate) fn env_for<S, C>(&self, calls: &[ToolCall], state: &S, rt: &Runtime<C>) -> ToolEnv
    where
        S: Clone + Send + Sync + 'static,
        C: Send + Sync + 'static,
    {
        let reads = calls.iter().any(|call| self.tools.get(&call.name).is_none_or(|tool| tool.reads_runtime()));
        let env = if reads { ToolEnv::new().state(state.clone()) } else { ToolEnv::new() };
        let mut env = env.shared_context(Arc::clone(&rt.run.context));
        env.results = rt.results.clone().map(|results| results as Arc<dyn FinishedCalls>);
        env.capture.clone_from(&rt.run.capture);
        env.metrics.clone_from(&rt.run.metrics);
        env.trace.clone_from(&rt.run.trace);
        env.stream = rt.run.writer.as_ref().filter(|w| w.modes().contains(crate::StreamMode::Custom)).map(|writer| {
            super::writer::StreamTap { writer: Arc::clone(writer), node: Arc::from(rt.node()), step: rt.step() }
        });
        match &rt.run.store {
            Some(store) => env.store(Arc::clone(store)),
            None => env,
        }
    }

    /// [`ToolNode::run`] outside a graph: the tools see `env`'s state and context.
    pub async fn run_in(&self, messages: &[Message], env: &ToolEnv) -> Vec<Message> {
        match messages.last() {
            Some(last) if last.has_tool_calls() => self.run_calls(&last.tool_calls, env).await,
            _ => Vec::new(),
        }
    }

    /// Runs `calls` concurrently; one tool message per call, in call order.
    pub async fn run_calls(&self, calls: &[ToolCall], env: &ToolEnv) -> Vec<Message> {
        let node = Calls { tools: &self.tools, policies: &self.policies, sink: self.sink.as_ref() };
        super::pipeline::run_all(&node, calls, env).await
    }

    /// The node as a node of the dynamic builder: it reads the messages with `read` and writes
    /// the results with `write`.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[state]
    /// struct Chat {
    ///     #[reducer(messages)]
    ///     messages: Vec<Message>,
    /// }
    ///
    /// /// Shout the text back.
    /// #[tool]
    /// fn shout(text: String) -> String {
    ///     text.to_uppercase()
    /// }
    ///
    /// let tools = ToolNode::new(tools![Shout]).into_spec(|s: &Chat| &s.messages, |m| ChatUpdate::new().messages(m));
    /// let graph = StateGraph::<Chat>::new().add_spec("tools", tools).add_edge(START, "tools").add_edge("tools", END);
    /// assert!(graph.compile().is_ok());
    /// ```
    pub fn into_spec<S: State, C: Send + Sync + 'static>(
        self,
        read: fn(&S) -> &[Message],
        write: fn(Vec<Message>) -> S::Update,
    ) -> NodeSpec<S, C> {
        let node = Arc::new(self);
        NodeSpec::asynchronous(Shape::Update, None, move |state: &S, rt: &Runtime<C>, _| -> NodeFuture<'_, S> {
            let node = Arc::clone(&node);
            Box::pin(async move {
                let messages = node.run(read(state), state, rt).await;
                Ok(NodeOutput::update(write(messages)))
            })
        })
    }
}

impl fmt::Debug for ToolNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolNode")
            .field("tools", &self.tools)
            .field("default", &self.policies.default)
            .field("policies", &self.policies.by_tool)
            .field("sink", &self.sink.is_some())
            .finish()
    }
}

/// The executor's memory of a task's calls, as the tools see it.
impl FinishedCalls for CallResults {
    fn get(&self, slot: u32, key: &str) -> Option<serde_json::Value> {
        CallResults::get(self, slot, key)
    }

    fn put<'a>(&'a self, slot: u32, key: &'a str, value: serde_json::Value) -> futures::future::BoxFuture<'a, ()> {
        Box::pin(CallResults::put(self, slot, key, value))
    }
}
