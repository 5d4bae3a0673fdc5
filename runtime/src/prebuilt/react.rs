//! `react_agent`: a model that calls tools until it can answer.

use super::error::AgentError;
use super::handoff::{self, Handoff};
use super::review::{ReviewRequest, ToolReview};
use super::state::{MessagesState, MessagesStateUpdate};
use crate::error::{BuildError, NodeError};
use crate::graph::{CompiledGraph, NodeFuture, NodeSpec, Shape, StateGraph};
use crate::message::{Message, Role, ToolCall, fresh_id};
use crate::model::{CallContext, ChatModel, ModelError, ModelSettings, Structured};
use crate::node::{END, NodeOutput};
use crate::runtime::Runtime;
use crate::tool::{ToolNode, ToolSet};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The node that calls the model.
pub const AGENT_NODE: &str = "agent";
/// The node that runs the model's tool calls.
pub const TOOLS_NODE: &str = "tools";
/// The node that asks for the structured final answer.
pub const STRUCTURE_NODE: &str = "structure";

/// How many times an agent calls its model in one turn by default.
pub const DEFAULT_STEP_LIMIT: u32 = 12;

type PreHook = Arc<dyn Fn(&[Message]) -> Vec<Message> + Send + Sync>;
type PostHook = Arc<dyn Fn(Message) -> Result<Message, String> + Send + Sync>;

/// A model and tools as a `ReAct` loop: the model is called with the conversation; when its reply
/// asks for tools they run (concurrently, through a [`ToolNode`]) and the model is called
/// again with their answers; a reply without tool calls ends the turn (LangGraph's
/// `create_react_agent`).
///
/// The graph is an ordinary one over [`MessagesState`] (nodes [`AGENT_NODE`], [`TOOLS_NODE`]
/// and, with a response format, [`STRUCTURE_NODE`]): on a thread it checkpoints, interrupts and
/// resumes; it streams the model's tokens in `messages` mode; it is a node of a larger graph
/// through [`StateGraph::add_subgraph`].
///
/// ```
/// use graphwright::model::ScriptedModel;
/// use graphwright::prebuilt::{MessagesState, react_agent};
/// use graphwright::prelude::*;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Report> {
/// let model = ScriptedModel::new([
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "add", json!({"a": 40, "b": 2}))]),
///     Message::assistant("It is 42."),
/// ]);
/// let app = react_agent(model.clone(), tools![Add]).prompt("You are a calculator.").compile()?;
/// let out = app.invoke(MessagesState::new([Message::user("40 + 2?")]), &RunConfig::default()).await?;
/// assert_eq!(out.state.last_reply(), Some("It is 42."));
/// assert_eq!(out.state.messages[2].content, "42", "the tool's answer");
/// let sent = &model.requests()[0];
/// assert_eq!(sent.messages[0].content, "You are a calculator.");
/// assert_eq!(sent.settings.tools[0].name, "add", "the tools are offered to the model");
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ReactAgent {
    pub(crate) name: String,
    named: bool,
    pub(crate) about: Option<String>,
    model: Arc<dyn ChatModel>,
    pub(crate) tools: ToolNode,
    prompt: Option<String>,
    response: Option<Arc<dyn Answer>>,
    step_limit: u32,
    pre_model: Option<PreHook>,
    post_model: Option<PostHook>,
    review: Vec<String>,
    /// The agents this one may hand the conversation to, when it is a team member.
    pub(crate) handoffs: Vec<String>,
    /// What each of them does, as the team describes it (for the hand-off tools).
    described: HashMap<String, String>,
}

/// A `ReAct` agent over `model` and `tools`; configure it with the [`ReactAgent`] methods, then
/// [`compile`](ReactAgent::compile) it or add it to a graph as a subgraph.
pub fn react_agent(model: impl IntoChatModel, tools: ToolSet) -> ReactAgent {
    ReactAgent {
        name: AGENT_NODE.to_owned(),
        named: false,
        about: None,
        model: model.into_chat_model(),
        tools: ToolNode::new(tools),
        prompt: None,
        response: None,
        step_limit: DEFAULT_STEP_LIMIT,
        pre_model: None,
        post_model: None,
        review: Vec::new(),
        handoffs: Vec::new(),
        described: HashMap::new(),
    }
}

/// What [`react_agent`] takes as its model: any [`ChatModel`], or a shared `Arc<dyn ChatModel>`
/// (what [`from_spec`](crate::model::from_spec) returns).
pub trait IntoChatModel {
    /// The model, shared.
    fn into_chat_model(self) -> Arc<dyn ChatModel>;
}

impl<M: ChatModel> IntoChatModel for M {
    fn into_chat_model(self) -> Arc<dyn ChatModel> {
        Arc::new(self)
    }
}

impl IntoChatModel for Arc<dyn ChatModel> {
    fn into_chat_model(self) -> Arc<dyn ChatModel> {
        self
    }
}

impl ReactAgent {
    /// Names the agent: its graph's name, the `name` on its replies, and the name teams hand
    /// the conversation to it by (`transfer_to_<name>`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self.named = true;
        self
    }

    /// What the agent does, for the other agents of a team (in their hand-off tools).
    #[must_use]
    pub fn description(mut self, about: impl Into<String>) -> Self {
        self.about = Some(about.into());
        self
    }

    /// A system prompt put before the conversation on every model call (it is not stored in
    /// the state).
    #[must_use]
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// After the loop ends, asks the model once more for the answer as a `T` (by the provider's
    /// structured-output mode, see [`Structured`]) and stores it in
    /// [`MessagesState::structured_response`]; a reply that does not parse fails the run with
    /// [`ModelError::InvalidOutput`].
    #[must_use]
    pub fn response_format<T>(mut self) -> Self
    where
        T: JsonSchema + DeserializeOwned + Serialize + Send + Sync + 'static,
    {
        self.response = Some(Arc::new(Structured::<T>::new(Arc::clone(&self.model))));
        self
    }

    /// The most model calls one turn (the messages after the last user message) may take; the
    /// next one fails the run with [`AgentError::StepLimit`]. Default [`DEFAULT_STEP_LIMIT`].
    #[must_use]
    pub fn step_limit(mut self, limit: u32) -> Self {
        self.step_limit = limit.max(1);
        self
    }

    /// Shapes what the model is sent, without changing the stored conversation: trim old
    /// messages, summarise, add retrieved context. Runs before every model call.
    #[must_use]
    pub fn pre_model(mut self, hook: impl Fn(&[Message]) -> Vec<Message> + Send + Sync + 'static) -> Self {
        self.pre_model = Some(Arc::new(hook));
        self
    }

    /// Checks (or rewrites) every reply before it is stored: a guardrail. `Err(reason)` fails
    /// the run with [`AgentError::Refused`], and nothing of the reply is stored.
    #[must_use]
    pub fn post_model(mut self, hook: impl Fn(Message) -> Result<Message, String> + Send + Sync + 'static) -> Self {
        self.post_model = Some(Arc::new(hook));
        self
    }

    /// Pauses before running any call of these tools, with a [`ReviewRequest`] per call as the
    /// interrupt's value; `resume` with a [`ToolReview`] approves, edits or rejects it. The
    /// step's other calls run once every call has been reviewed, so none runs twice.
    #[must_use]
    pub fn review_before<N: Into<String>>(mut self, tools: impl IntoIterator<Item = N>) -> Self {
        self.review.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Lets the agent hand the conversation to `agents` (team members): each gets a
    /// `transfer_to_<agent>` tool, and calling one ends this agent's turn.
    #[must_use]
    pub fn handoffs<N: Into<String>>(mut self, agents: impl IntoIterator<Item = N>) -> Self {
        self.handoffs.extend(agents.into_iter().map(Into::into));
        self
    }

    /// The tool node the agent runs its tools with, to set timeouts, retries and redaction.
    #[must_use]
    pub fn tool_node(mut self, configure: impl FnOnce(ToolNode) -> ToolNode) -> Self {
        self.tools = configure(self.tools);
        self
    }

    /// The agent's name.
    #[must_use]
    pub fn agent_name(&self) -> &str {
        &self.name
    }

    /// The agent's graph, to compile or to extend.
    #[must_use]
    pub fn graph(&self) -> StateGraph<MessagesState> {
        self.build(StateGraph::new())
    }

    /// The agent's graph for runs whose context is a `C` (to add it to such a graph).
    #[must_use]
    pub fn graph_with_context<C: Send + Sync + 'static>(&self) -> StateGraph<MessagesState, C> {
        self.build(StateGraph::with_context())
    }

    /// The agent, compiled.
    ///
    /// # Errors
    /// [`BuildError`] when a reviewed tool is not among its tools.
    pub fn compile(&self) -> Result<CompiledGraph<MessagesState>, BuildError> {
        self.graph().compile()
    }

    /// The parts the nodes share: the agent with its hand-off tools, and its model settings.
    fn parts(&self) -> Arc<Parts> {
        let mut agent = self.clone();
        for target in &self.handoffs {
            let about = self.described.get(target).map(String::as_str);
            agent.tools.tools.insert(Arc::new(Handoff::to(target, about)));
        }
        let mut settings = self.model.settings().clone();
        settings.set_tools(&agent.tools.tools);
        Arc::new(Parts { agent, settings })
    }

    /// The team version of the agent: its hand-offs described by the members they lead to.
    pub(crate) fn described_by(mut self, members: &[&ReactAgent]) -> Self {
        for member in members.iter().filter(|m| self.handoffs.contains(&m.name)) {
            if let Some(about) = &member.about {
                self.described.insert(member.name.clone(), about.clone());
            }
        }
        self
    }

    fn build<C: Send + Sync + 'static>(&self, graph: StateGraph<MessagesState, C>) -> StateGraph<MessagesState, C> {
        let parts = self.parts();
        let has_tools = !parts.agent.tools.tools().is_empty();
        let mut graph = graph
            .name(self.name.clone())
            .recursion_limit(2 * u64::from(self.step_limit) + 4)
            .add_spec(AGENT_NODE, node(Arc::clone(&parts), Step::Model))
            .add_edge(crate::START, AGENT_NODE);
        let done = if parts.agent.response.is_some() { STRUCTURE_NODE } else { END };
        if parts.agent.response.is_some() {
            graph =
                graph.add_spec(STRUCTURE_NODE, node(Arc::clone(&parts), Step::Structure)).add_edge(STRUCTURE_NODE, END);
        }
        if !has_tools {
            return graph.add_edge(AGENT_NODE, done);
        }
        for name in parts.agent.review.iter().filter(|n| parts.agent.tools.tools().get(n).is_none()) {
            let known: Vec<&str> = parts.agent.tools.tools().names().collect();
            graph = graph.invalid(format!(
                "agent `{}` reviews calls of `{name}`, which is not one of its tools ({})",
                self.name,
                known.join(", ")
            ));
        }
        let asks = Arc::new(|state: &MessagesState| usize::from(!ends_turn(&state.messages)));
        graph = graph.add_spec(TOOLS_NODE, node(Arc::clone(&parts), Step::Tools)).add_router_among(
            AGENT_NODE,
            vec![done.to_owned(), TOOLS_NODE.to_owned()],
            asks,
        );
        if parts.agent.handoffs.is_empty() {
            return graph.add_edge(TOOLS_NODE, AGENT_NODE);
        }
        let handoffs = parts.agent.handoffs.clone();
        let back = Arc::new(move |state: &MessagesState| usize::from(!handoff::hands_off(&state.messages, &handoffs)));
        graph.add_router_among(TOOLS_NODE, vec![END.to_owned(), AGENT_NODE.to_owned()], back)
    }
}

impl<C: Send + Sync + 'static> crate::IntoSubgraph<MessagesState, C> for ReactAgent {
    fn into_subgraph(self) -> Result<CompiledGraph<MessagesState, C>, BuildError> {
        self.graph_with_context().compile()
    }
}

impl fmt::Debug for ReactAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactAgent")
            .field("name", &self.name)
            .field("model", &self.model)
            .field("tools", self.tools.tools())
            .field("prompt", &self.prompt)
            .field("structured", &self.response.is_some())
            .field("step_limit", &self.step_limit)
            .field("review", &self.review)
            .field("handoffs", &self.handoffs)
            .finish_non_exhaustive()
    }
}

/// Whether the last message ends the turn: anything but an assistant message asking for tools.
fn ends_turn(messages: &[Message]) -> bool {
    !messages.last().is_some_and(|m| m.role == Role::Assistant && m.has_tool_calls())
}

/// What the agent's nodes share: the agent (its hand-off tools added) and the settings its
/// model is called with (those tools offered).
struct Parts {
    agent: ReactAgent,
    settings: ModelSettings,
}

impl Parts {
    /// What the model is sent: the prompt, then the conversation as the pre-model hook shapes it.
    fn model_input<'a>(&self, messages: &'a [Message]) -> Cow<'a, [Message]> {
        let shaped = match &self.agent.pre_model {
            Some(hook) => Cow::Owned(hook(messages)),
            None => Cow::Borrowed(messages),
        };
        match &self.agent.prompt {
            None => shaped,
            Some(prompt) => {
                let mut input = Vec::with_capacity(shaped.len() + 1);
                input.push(Message::system(prompt.clone()));
                input.extend(shaped.iter().cloned());
                Cow::Owned(input)
            }
        }
    }

    /// How many replies this agent has given since the last user message.
    fn replies_this_turn(&self, messages: &[Message]) -> u32 {
        let turn = messages.iter().rposition(|m| m.role == Role::User).map_or(0, |at| at + 1);
        let mine = |m: &&Message| {
            m.role == Role::Assistant && (!self.agent.named || m.name.as_deref() == Some(&self.agent.name))
        };
        messages[turn..].iter().filter(mine).count() as u32
    }

    async fn call_model(&self, state: &MessagesState, rt: &dyn CallContext) -> Result<MessagesStateUpdate, NodeError> {
        if self.replies_this_turn(&state.messages) >= self.agent.step_limit {
            return Err(AgentError::StepLimit { agent: self.agent.name.clone(), limit: self.agent.step_limit }.into());
        }
        let input = self.model_input(&state.messages);
        let reply = crate::model::respond_with(&*self.agent.model, &input, &self.settings, rt).await?.message;
        let mut reply = match &self.agent.post_model {
            Some(hook) => {
                hook(reply).map_err(|reason| AgentError::Refused { agent: self.agent.name.clone(), reason })?
            }
            None => reply,
        };
        if self.agent.named {
            reply.name = Some(self.agent.name.clone());
        }
        if reply.id.is_none() {
            reply.id = Some(fresh_id());
        }
        Ok(MessagesStateUpdate::new().messages(vec![reply]))
    }

    async fn run_tools<C: Send + Sync + 'static>(
        &self,
        state: &MessagesState,
        rt: &Runtime<C>,
    ) -> Result<MessagesStateUpdate, NodeError> {
        let Some(asked) = state.messages.last().filter(|m| m.role == Role::Assistant && m.has_tool_calls()) else {
            return Ok(MessagesStateUpdate::new());
        };
        let mut calls = asked.tool_calls.clone();
        let mut rejected: Vec<Option<String>> = vec![None; calls.len()];
        for (call, rejection) in calls.iter_mut().zip(&mut rejected) {
            if !self.agent.review.contains(&call.name) {
                continue;
            }
            let request = ReviewRequest {
                agent: self.agent.name.clone(),
                tool_call_id: call.id.clone(),
                tool: call.name.clone(),
                arguments: call.arguments.clone(),
            };
            match rt.interrupt::<_, ToolReview>(request)? {
                ToolReview::Approve => {}
                ToolReview::Edit { arguments } => call.arguments = arguments,
                ToolReview::Reject { reason } => *rejection = Some(reason),
            }
        }
        let run: Vec<ToolCall> =
            calls.iter().zip(&rejected).filter(|(_, r)| r.is_none()).map(|(c, _)| c.clone()).collect();
        let env = self.agent.tools.env_for(&run, state, rt);
        let mut answers = self.agent.tools.run_calls(&run, &env).await.into_iter();
        let messages: Vec<Message> = calls
            .iter()
            .zip(rejected)
            .filter_map(|(call, rejection)| match rejection {
                None => answers.next(),
                Some(reason) => Some(
                    Message::tool_error(call.id.clone(), format!("The reviewer declined this call: {reason}"))
                        .with_name(call.name.clone())
                        .with_id(fresh_id()),
                ),
            })
            .collect();
        Ok(MessagesStateUpdate::new().messages(messages))
    }

    async fn structure(&self, state: &MessagesState, rt: &dyn CallContext) -> Result<MessagesStateUpdate, NodeError> {
        let Some(response) = &self.agent.response else { return Ok(MessagesStateUpdate::new()) };
        let input = self.model_input(&state.messages);
        let answer = response.answer(&input, rt).await?;
        Ok(MessagesStateUpdate::new().structured_response(Some(answer)))
    }
}

/// What one of the agent's nodes does.
#[derive(Clone, Copy)]
enum Step {
    Model,
    Tools,
    Structure,
}

fn node<C: Send + Sync + 'static>(parts: Arc<Parts>, step: Step) -> NodeSpec<MessagesState, C> {
    NodeSpec::asynchronous(
        Shape::Update,
        None,
        move |state: &MessagesState, rt: &Runtime<C>, _| -> NodeFuture<'_, MessagesState> {
            let parts = Arc::clone(&parts);
            Box::pin(async move {
                let update = match step {
                    Step::Model => parts.call_model(state, rt).await?,
                    Step::Tools => parts.run_tools(state, rt).await?,
                    Step::Structure => parts.structure(state, rt).await?,
                };
                Ok(NodeOutput::update(update))
            })
        },
    )
}

/// The structured answer, with its type erased.
trait Answer: Send + Sync {
    fn answer<'a>(
        &'a self,
        messages: &'a [Message],
        rt: &'a dyn CallContext,
    ) -> BoxFuture<'a, Result<serde_json::Value, ModelError>>;
}

impl<T> Answer for Structured<T>
where
    T: JsonSchema + DeserializeOwned + Serialize + Send + Sync + 'static,
{
    fn answer<'a>(
        &'a self,
        messages: &'a [Message],
        rt: &'a dyn CallContext,
    ) -> BoxFuture<'a, Result<serde_json::Value, ModelError>> {
        Box::pin(async move {
            let value = self.invoke(messages, rt).await?;
            serde_json::to_value(value).map_err(|e| ModelError::InvalidOutput {
                raw: String::new(),
                reason: format!("the answer parsed but could not be stored as JSON: {e}"),
            })
        })
    }
}
