//! The orchestration graph of a support agent, with deterministic nodes standing in for the
//! model: ingress → planner → tool router → executor → verifier → generator → summarizer,
//! where the verifier sends the run back to the planner when a lookup found nothing.
//!
//! Run it with `cargo run --example support_graph`.

use graphwright::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the run knows but no model may see.
pub struct Ctx {
    /// The customer, from the authenticated session.
    pub user_id: String,
}

/// What the planner decided to look up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The words to search for.
    pub query: String,
    /// Which attempt produced this plan.
    pub attempt: u32,
}

/// The lookup the tool router picked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Lookup {
    /// Search the help-centre articles.
    Articles,
    /// Look up the customer's orders.
    Orders,
}

/// The support agent's graph.
#[graph(context = Ctx)]
pub mod support {
    use super::{Ctx, Lookup, Plan};
    use graphwright::prelude::*;

    /// The conversation and the agent's working notes.
    #[state]
    pub struct State {
        /// The conversation.
        #[reducer(messages)]
        pub messages: Vec<Message>,
        /// The current plan.
        pub plan: Option<Plan>,
        /// The lookup the tool router picked.
        pub lookup: Option<Lookup>,
        /// What the last lookup found.
        pub results: Vec<String>,
        /// Planning attempts so far.
        #[reducer(add)]
        pub attempts: u32,
        /// The reply.
        pub answer: Option<String>,
        /// A note for the ticket.
        pub summary: Option<String>,
    }

    /// Checks the request and records who asked.
    #[node(entry, next = planner)]
    fn ingress(state: &State, rt: &Runtime<Ctx>) -> Result<StateUpdate, NodeError> {
        let question = last_user_text(state).ok_or_else(|| NodeError::msg("the conversation has no user message"))?;
        trace(rt, format!("user {} asks {question:?}", rt.context().user_id));
        Ok(StateUpdate::new())
    }

    /// Turns the question into a query; a retry drops the least useful word.
    #[node(next = tool_router)]
    fn planner(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let question = last_user_text(state).unwrap_or_default().to_lowercase();
        let mut words: Vec<&str> = question.split(|c: char| !c.is_alphanumeric()).filter(|w| w.len() > 3).collect();
        let attempt = state.attempts + 1;
        if attempt > 1 {
            words.retain(|w| *w != "parcel");
        }
        let plan = Plan { query: words.join(" "), attempt };
        trace(rt, format!("attempt {attempt}: query {:?}", plan.query));
        StateUpdate::new().plan(Some(plan)).attempts(1)
    }

    /// Picks the lookup that fits the query.
    #[node(next = executor)]
    fn tool_router(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let query = state.plan.as_ref().map_or("", |p| p.query.as_str());
        let lookup = if query.contains("order") { Lookup::Orders } else { Lookup::Articles };
        trace(rt, format!("using {lookup:?}"));
        StateUpdate::new().lookup(Some(lookup))
    }

    /// Runs the lookup against the (in-memory) help centre.
    #[node(next = verifier)]
    async fn executor(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let query = state.plan.as_ref().map_or("", |p| p.query.as_str());
        // A real lookup awaits a search service here.
        tokio::task::yield_now().await;
        let results: Vec<String> = match state.lookup {
            Some(Lookup::Orders) => vec![format!("order 1042 for {} shipped on Monday", rt.context().user_id)],
            _ => ARTICLES
                .iter()
                .filter(|(keywords, _)| query.split(' ').all(|w| keywords.contains(w)))
                .map(|(_, text)| (*text).to_owned())
                .collect(),
        };
        trace(rt, format!("{} result(s)", results.len()));
        StateUpdate::new().results(results)
    }

    /// Sends the run back to the planner when the lookup found nothing (three tries at most).
    #[node(next = planner | generator, route = check_results)]
    fn verifier(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        trace(rt, format!("{} result(s) to check", state.results.len()));
        StateUpdate::new()
    }

    /// The verifier's router, run on the state after its step.
    fn check_results(state: &State) -> VerifierNext {
        if state.results.is_empty() && state.attempts < 3 { VerifierNext::Planner } else { VerifierNext::Generator }
    }

    /// Writes the reply from what was found.
    #[node(next = summarizer)]
    fn generator(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let answer = match state.results.first() {
            Some(found) => format!("Here is what I found: {found}"),
            None => "I could not find an answer; a person will follow up.".to_owned(),
        };
        trace(rt, answer.clone());
        StateUpdate::new().messages(vec![Message::assistant(answer.clone())]).answer(Some(answer))
    }

    /// Leaves a one-line note for the ticket.
    #[node(next = END)]
    fn summarizer(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let summary = format!(
            "{} attempt(s), {} message(s), answered: {}",
            state.attempts,
            state.messages.len(),
            state.answer.is_some()
        );
        trace(rt, summary.clone());
        StateUpdate::new().summary(Some(summary))
    }

    const ARTICLES: &[(&str, &str)] = &[
        ("track delivery", "Track a delivery from Orders > Track, with the number in your e-mail."),
        ("refund policy", "Refunds reach your card within 5 working days of the return arriving."),
    ];

    fn last_user_text(state: &State) -> Option<String> {
        state.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.clone())
    }

    fn trace(rt: &Runtime<Ctx>, what: impl std::fmt::Display) {
        println!("step {:>2}  {:<12} {what}", rt.step(), rt.node());
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    println!("{}", support::MERMAID);
    let app = support::graph().recursion_limit(50).compile()?;
    let cfg = RunConfig::thread("ticket-42").context(Ctx { user_id: "u-7".into() });
    let input = support::StateUpdate::new().messages(vec![Message::user("How do I track delivery of my parcel?")]);
    let out = app.invoke(input, &cfg).await?;
    println!("\nfinished after {} steps", out.steps);
    println!("answer:  {}", out.state.answer.as_deref().unwrap_or("-"));
    println!("summary: {}", out.state.summary.as_deref().unwrap_or("-"));
    Ok(())
}
