//! `supervisor`: a lead agent that hands the work to specialists.

use super::react::{IntoChatModel, ReactAgent, react_agent};
use super::state::MessagesState;
use super::team;
use crate::error::BuildError;
use crate::graph::{CompiledGraph, StateGraph};
use crate::node::{END, START};
use crate::tool::ToolSet;

/// A team led by a supervisor: the supervisor (a [`ReactAgent`] with a `transfer_to_<agent>`
/// tool per member) reads the conversation and hands it to one member; the member works (its
/// own tools, its own loop) and the conversation comes back to the supervisor, until the
/// supervisor answers without handing off (`langgraph-supervisor`'s `create_supervisor`).
///
/// Every member is a subgraph node named after the agent, the supervisor one named
/// `supervisor`; replies carry the name of the agent that wrote them. It is an ordinary graph
/// over [`MessagesState`]: on a thread the conversation goes on across turns.
///
/// ```
/// use graphwright::model::ScriptedModel;
/// use graphwright::prebuilt::{MessagesState, react_agent, supervisor};
/// use graphwright::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Report> {
/// let lead = ScriptedModel::new([
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("h1", "transfer_to_poet", json!({}))]),
///     Message::assistant("The poet wrote you a haiku."),
/// ]);
/// let poet = react_agent(ScriptedModel::new(["Rain on the fjord"]), ToolSet::new()).name("poet");
/// let app = supervisor(lead, [poet]).compile()?;
/// let out = app.invoke(MessagesState::new([Message::user("a haiku, please")]), &RunConfig::default()).await?;
/// let speakers: Vec<_> = out.state.messages.iter().filter_map(|m| m.name.as_deref()).collect();
/// assert_eq!(speakers, ["supervisor", "transfer_to_poet", "poet", "supervisor"]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Supervisor {
    lead: ReactAgent,
    agents: Vec<ReactAgent>,
}

/// A supervisor over `model` that hands work to `agents` (each given its own
/// [`name`](ReactAgent::name)).
pub fn supervisor(model: impl IntoChatModel, agents: impl IntoIterator<Item = ReactAgent>) -> Supervisor {
    Supervisor { lead: react_agent(model, ToolSet::new()).name("supervisor"), agents: agents.into_iter().collect() }
}

impl Supervisor {
    /// The supervisor's system prompt.
    #[must_use]
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.lead = self.lead.prompt(prompt);
        self
    }

    /// Names the supervisor (default `supervisor`).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.lead = self.lead.name(name);
        self
    }

    /// Tools the supervisor runs itself, beside the hand-offs.
    #[must_use]
    pub fn tools(mut self, tools: ToolSet) -> Self {
        self.lead = self.lead.tool_node(|_| crate::ToolNode::new(tools));
        self
    }

    /// Configures the supervisor's own agent (step limit, hooks, review of its tools).
    #[must_use]
    pub fn lead(mut self, configure: impl FnOnce(ReactAgent) -> ReactAgent) -> Self {
        self.lead = configure(self.lead);
        self
    }

    /// The team's graph.
    #[must_use]
    pub fn graph(&self) -> StateGraph<MessagesState> {
        self.build(StateGraph::new())
    }

    /// The team's graph for runs whose context is a `C`.
    #[must_use]
    pub fn graph_with_context<C: Send + Sync + 'static>(&self) -> StateGraph<MessagesState, C> {
        self.build(StateGraph::with_context())
    }

    /// The team, compiled.
    ///
    /// # Errors
    /// [`BuildError`] naming what keeps the agents from working as a team (two with one name,
    /// a tool named like a hand-off, ...).
    pub fn compile(&self) -> Result<CompiledGraph<MessagesState>, BuildError> {
        self.graph().compile()
    }

    fn build<C: Send + Sync + 'static>(&self, graph: StateGraph<MessagesState, C>) -> StateGraph<MessagesState, C> {
        let lead_name = self.lead.agent_name().to_owned();
        let mut graph = graph.name(lead_name.clone());
        for problem in team::problems(Some(&lead_name), &self.agents) {
            graph = graph.invalid(problem);
        }
        let names: Vec<String> = self.agents.iter().map(|a| a.agent_name().to_owned()).collect();
        let members: Vec<&ReactAgent> = self.agents.iter().collect();
        let lead = self.lead.clone().handoffs(names.iter().cloned()).described_by(&members);
        graph = graph.add_subgraph(lead_name.clone(), lead).add_edge(START, lead_name.clone());
        for agent in &self.agents {
            graph = graph
                .add_subgraph(agent.agent_name().to_owned(), agent.clone())
                .add_edge(agent.agent_name(), &*lead_name);
        }
        let targets = std::iter::once(END.to_owned()).chain(names.iter().cloned()).collect();
        graph.add_router_among(lead_name, targets, team::route_by_handoff(names, |s: &MessagesState| &s.messages))
    }
}
