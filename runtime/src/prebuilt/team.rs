//! What supervisors and swarms share: checking the members, and routing by hand-offs.

use super::handoff::{self, PREFIX};
use super::react::ReactAgent;
use crate::graph::RouterFn;
use crate::message::Message;
use std::collections::HashSet;
use std::sync::Arc;

/// The problems that keep `agents` (and a lead, for a supervisor) from working as a team.
pub(crate) fn problems(lead: Option<&str>, agents: &[ReactAgent]) -> Vec<String> {
    let mut problems = Vec::new();
    if agents.is_empty() {
        problems.push("a team needs at least one agent".to_owned());
    }
    let mut seen: HashSet<&str> = lead.into_iter().collect();
    for agent in agents {
        let name = agent.agent_name();
        if !seen.insert(name) {
            problems.push(format!("two members are named `{name}`: give each agent its own `.name(..)`"));
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
            problems
                .push(format!("agent name `{name}` cannot be part of a tool name: use letters, digits, `_` and `-`"));
        }
        for tool in agent.tools.tools().names().filter(|t| t.starts_with(PREFIX)) {
            problems.push(format!(
                "agent `{name}` has a tool `{tool}`; names starting with `{PREFIX}` are the team's hand-offs"
            ));
        }
    }
    let names: HashSet<&str> = agents.iter().map(ReactAgent::agent_name).chain(lead).collect();
    for agent in agents {
        for target in agent.handoffs.iter().filter(|t| !names.contains(t.as_str())) {
            problems.push(format!("agent `{}` hands off to `{target}`, which is not in the team", agent.agent_name()));
        }
    }
    problems
}

/// A router over `targets` (END first, then the agents): the agent the last tools step handed
/// the conversation to, or END.
pub(crate) fn route_by_handoff<S: 'static>(agents: Vec<String>, messages: fn(&S) -> &[Message]) -> RouterFn<S> {
    Arc::new(move |state: &S| match handoff::handed_to(messages(state)) {
        Some(to) => agents.iter().position(|a| a == to).map_or(0, |i| i + 1),
        None => 0,
    })
}
