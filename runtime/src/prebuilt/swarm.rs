//! `swarm`: agents that hand the conversation to each other.

use super::react::ReactAgent;
use super::state::SwarmState;
use super::team;
use crate::error::BuildError;
use crate::graph::{CompiledGraph, StateGraph};
use crate::node::{END, START};
use std::sync::Arc;

/// A team without a lead: whichever agent has the conversation answers, or hands it to another
/// with a `transfer_to_<agent>` tool; the one that last took over answers the thread's next
/// turn too ([`SwarmState::active_agent`]), so a user keeps talking to the specialist they
/// were passed to (`langgraph-swarm`'s `create_swarm`).
///
/// Each agent may hand off to the members named with [`ReactAgent::handoffs`], or, when it
/// names none, to every other member.
///
/// ```
/// use graphwright::model::ScriptedModel;
/// use graphwright::prebuilt::{SwarmState, SwarmStateUpdate, react_agent, swarm};
/// use graphwright::prelude::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Report> {
/// let desk = ScriptedModel::new([Message::assistant("").with_tool_calls(vec![ToolCall::new("h1", "transfer_to_billing", json!({}))])]);
/// let billing = ScriptedModel::new(["Your invoice is paid.", "Yes, the refund left today."]);
/// let app = swarm([
///     react_agent(desk, ToolSet::new()).name("desk"),
///     react_agent(billing.clone(), ToolSet::new()).name("billing"),
/// ])
/// .compile()?;
/// let cfg = RunConfig::thread("customer-9");
/// let out = app.invoke(SwarmStateUpdate::user("is my invoice paid?"), &cfg).await?;
/// assert_eq!(out.state.active_agent.as_deref(), Some("billing"));
/// assert_eq!(out.state.last_reply(), Some("Your invoice is paid."));
/// // The next turn goes straight to billing.
/// let out = app.invoke(SwarmStateUpdate::user("and my refund?"), &cfg).await?;
/// assert_eq!(out.state.last_reply(), Some("Yes, the refund left today."));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Swarm {
    agents: Vec<ReactAgent>,
    default: Option<String>,
}

/// A swarm of `agents` (each given its own [`name`](ReactAgent::name)); the first one has the
/// conversation until someone hands it on.
pub fn swarm(agents: impl IntoIterator<Item = ReactAgent>) -> Swarm {
    Swarm { agents: agents.into_iter().collect(), default: None }
}

impl Swarm {
    /// The agent that takes a thread's first turn (default: the first agent).
    #[must_use]
    pub fn default_agent(mut self, name: impl Into<String>) -> Self {
        self.default = Some(name.into());
        self
    }

    /// The swarm's graph.
    #[must_use]
    pub fn graph(&self) -> StateGraph<SwarmState> {
        self.build(StateGraph::new())
    }

    /// The swarm's graph for runs whose context is a `C`.
    #[must_use]
    pub fn graph_with_context<C: Send + Sync + 'static>(&self) -> StateGraph<SwarmState, C> {
        self.build(StateGraph::with_context())
    }

    /// The swarm, compiled.
    ///
    /// # Errors
    /// [`BuildError`] naming what keeps the agents from working as a team.
    pub fn compile(&self) -> Result<CompiledGraph<SwarmState>, BuildError> {
        self.graph().compile()
    }

    fn build<C: Send + Sync + 'static>(&self, graph: StateGraph<SwarmState, C>) -> StateGraph<SwarmState, C> {
        let mut graph = graph.name("swarm");
        for problem in team::problems(None, &self.agents) {
            graph = graph.invalid(problem);
        }
        let names: Vec<String> = self.agents.iter().map(|a| a.agent_name().to_owned()).collect();
        let default = match &self.default {
            Some(name) => match names.iter().position(|n| n == name) {
                Some(at) => at,
                None => return graph.invalid(format!("the default agent `{name}` is not in the swarm")),
            },
            None => 0,
        };
        let members: Vec<&ReactAgent> = self.agents.iter().collect();
        for agent in &self.agents {
            let member = if agent.handoffs.is_empty() {
                let others = names.iter().filter(|n| *n != agent.agent_name()).cloned();
                agent.clone().handoffs(others)
            } else {
                agent.clone()
            };
            let member = member.described_by(&members);
            let name = agent.agent_name().to_owned();
            let targets = std::iter::once(END.to_owned()).chain(names.iter().cloned()).collect();
            let route = team::route_by_handoff(names.clone(), |s: &SwarmState| &s.messages);
            graph = graph.add_subgraph(name.clone(), member).add_router_among(name, targets, route);
        }
        let active = names.clone();
        let start = Arc::new(move |state: &SwarmState| {
            state.active_agent.as_ref().and_then(|a| active.iter().position(|n| n == a)).unwrap_or(default)
        });
        graph.add_router_among(START, names, start)
    }
}
