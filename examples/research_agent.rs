//! A planner–executor–verifier research agent: `cargo run --example research_agent`.
//!
//! ```text
//! ingress → planner → generator | tool_router
//! tool_router → executor → verifier → generator | planner
//! generator → summarizer → END
//! ```
//!
//! The planner asks the model which tools to call (or says it knows enough), the tool router
//! keeps the calls this agent allows, the executor runs them (each call durable), the verifier
//! asks the model for a typed verdict on the findings, the generator writes the answer and the
//! summarizer a one-line summary. With `OPENAI_BASE_URL` set (any OpenAI-compatible server;
//! `OPENAI_MODEL` names the model) it uses that model; otherwise a script, so the example runs
//! anywhere. It says which it used, and prints each step as the run streams it, and the tokens
//! the run's model calls used.
//!
//! Built with `--features otel` and given `OTEL_EXPORTER_OTLP_ENDPOINT` (an OpenTelemetry
//! Collector, Jaeger, Phoenix...), it exports the run's trace: the run, each step, each node,
//! each model call with its tokens and each tool call with its outcome.

use futures::StreamExt;
use graphwright::model::{ChatModel, ModelReply, OpenAi, ScriptedModel, Usage};
use graphwright::prelude::*;
use graphwright::stream::AppEvent;
use std::sync::{Arc, LazyLock};

#[graph(context = Models)]
mod research {
    use super::{Models, TOOLS};
    use graphwright::prelude::*;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use std::sync::Arc;

    /// The most planning rounds before the agent answers with what it has.
    const MAX_ROUNDS: u32 = 3;
    /// The most tool calls one round may make.
    const MAX_CALLS: usize = 4;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        pub question: String,
        pub rounds: u32,
        pub gaps: String,
        pub answer: String,
        pub summary: String,
    }

    /// What the verifier decides about the findings so far.
    #[derive(Debug, Deserialize, JsonSchema)]
    pub struct Verdict {
        /// Whether the findings answer the question.
        pub sufficient: bool,
        /// What is still missing, if anything.
        pub missing: String,
    }

    /// Search a small encyclopedia.
    #[tool]
    pub fn search(
        /// What to look up.
        query: String,
    ) -> String {
        let corpus = [
            ("oslo", "Oslo is the capital of Norway; about 717,000 people live in the municipality (2024)."),
            ("bergen", "Bergen is Norway's second city; about 291,000 people live in the municipality (2024)."),
            ("fjord", "A fjord is a long, narrow sea inlet carved by a glacier."),
        ];
        let hits: Vec<&str> =
            corpus.iter().filter(|(key, _)| query.to_lowercase().contains(key)).map(|(_, text)| *text).collect();
        if hits.is_empty() { format!("no entry matches {query:?}") } else { hits.join(" ") }
    }

    /// Evaluate `a op b` for op one of + - * /.
    #[tool]
    pub fn calculate(a: f64, op: String, b: f64) -> Result<String, ToolError> {
        let value = match op.as_str() {
            "+" => a + b,
            "-" => a - b,
            "*" => a * b,
            "/" if b != 0.0 => a / b,
            _ => return Err(ToolError::msg("calculate", format!("cannot do {a} {op} {b}; use + - * / and b != 0"))),
        };
        Ok(value.to_string())
    }

    /// Takes the user's question from the conversation.
    #[node(entry, next = planner)]
    fn ingress(state: &State) -> StateUpdate {
        let question = state.messages.iter().rev().find(|m| m.role == Role::User).map(|m| m.content.clone());
        StateUpdate::new().question(question.unwrap_or_default()).rounds(0)
    }

    /// Asks the model which tools to call next, or whether it can answer.
    #[node(next = generator | tool_router, route = after_planning)]
    async fn planner(state: &State, rt: &Runtime<Models>) -> Result<StateUpdate, NodeError> {
        let mut prompt = vec![Message::system(
            "Plan the research: call the tools you need to answer the question, or reply in plain \
             text when the findings in the conversation already answer it.",
        )];
        prompt.extend(state.messages.iter().cloned());
        if !state.gaps.is_empty() {
            prompt.push(Message::user(format!("The verifier says this is missing: {}", state.gaps)));
        }
        let reply = rt.context().planner.invoke(&prompt, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]).rounds(state.rounds + 1))
    }

    fn after_planning(state: &State) -> PlannerNext {
        tools_condition(&state.messages).pick(PlannerNext::ToolRouter, PlannerNext::Generator)
    }

    /// Keeps the calls this agent allows: known tools, at most `MAX_CALLS` a round. The others
    /// are answered here, so the model hears why they did not run.
    #[node(next = executor)]
    fn tool_router(state: &State) -> StateUpdate {
        let Some(asked) = state.messages.last() else { return StateUpdate::new() };
        let mut kept = asked.clone();
        let mut refused = Vec::new();
        kept.tool_calls.clear();
        for call in &asked.tool_calls {
            let known = TOOLS.tools().get(&call.name).is_some();
            if known && kept.tool_calls.len() < MAX_CALLS {
                kept.tool_calls.push(call.clone());
            } else {
                let why = if known { "too many calls this round" } else { "no such tool" };
                refused.push(Message::tool_error(call.id.clone(), format!("not run: {why}")));
            }
        }
        // The kept message replaces the planner's (same id); refusals are answered now.
        let mut messages = vec![kept];
        messages.extend(refused);
        StateUpdate::new().messages(messages)
    }

    /// Runs the kept calls, each durable: a crash between two never runs a finished one again.
    #[node(next = verifier)]
    async fn executor(state: &State, rt: &Runtime<Models>) -> StateUpdate {
        let asked = state.messages.iter().rev().find(|m| m.has_tool_calls());
        let calls = asked.map_or(&[][..], |m| m.tool_calls.as_slice());
        let answered: Vec<&str> = state.messages.iter().filter_map(|m| m.tool_call_id.as_deref()).collect();
        let pending: Vec<ToolCall> = calls.iter().filter(|c| !answered.contains(&c.id.as_str())).cloned().collect();
        let asking = Message::assistant("").with_tool_calls(pending);
        StateUpdate::new().messages(TOOLS.run(&[asking], state, rt).await)
    }

    /// Asks the model whether the findings answer the question.
    #[node(next = generator | planner, route = after_verifying)]
    async fn verifier(state: &State, rt: &Runtime<Models>) -> Result<StateUpdate, NodeError> {
        let mut prompt =
            vec![Message::system("Judge whether the tool results in this conversation answer the user's question.")];
        prompt.extend(state.messages.iter().cloned());
        let verdict: Verdict = graphwright::model::Structured::<Verdict>::new(Arc::clone(&rt.context().writer))
            .invoke(&prompt, rt)
            .await?;
        let gaps = if verdict.sufficient { String::new() } else { verdict.missing };
        Ok(StateUpdate::new().gaps(gaps))
    }

    fn after_verifying(state: &State) -> VerifierNext {
        if state.gaps.is_empty() || state.rounds >= MAX_ROUNDS {
            VerifierNext::Generator
        } else {
            VerifierNext::Planner
        }
    }

    /// Writes the answer from the findings.
    #[node(next = summarizer)]
    async fn generator(state: &State, rt: &Runtime<Models>) -> Result<StateUpdate, NodeError> {
        let mut prompt = vec![Message::system("Answer the user's question from the tool results, briefly.")];
        prompt.extend(state.messages.iter().filter(|m| !m.has_tool_calls() || !m.content.is_empty()).cloned());
        let answer = rt.context().writer.invoke(&prompt, rt).await?;
        Ok(StateUpdate::new().answer(answer.content.clone()).messages(vec![answer]))
    }

    /// Sums the answer up in one line.
    #[node(next = END)]
    async fn summarizer(state: &State, rt: &Runtime<Models>) -> Result<StateUpdate, NodeError> {
        let prompt = [Message::system("Sum this answer up in one short line."), Message::user(state.answer.clone())];
        let summary = rt.context().writer.invoke(&prompt, rt).await?;
        Ok(StateUpdate::new().summary(summary.content))
    }
}

/// The executor's tools (the tool router checks calls against them).
static TOOLS: LazyLock<ToolNode> = LazyLock::new(|| ToolNode::new(tools![research::Search, research::Calculate]));

/// The run's models: the planner's, offered the tools, and the one that judges and writes.
pub struct Models {
    planner: Arc<dyn ChatModel>,
    writer: Arc<dyn ChatModel>,
}

/// The model the environment names (for the planner with the tools bound), or the script.
fn pick_models() -> (Models, String) {
    let tools = tools![research::Search, research::Calculate];
    if let Some(base) = std::env::var("OPENAI_BASE_URL").ok().filter(|v| !v.is_empty()) {
        let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
        let plain = OpenAi::new(&name).temperature(0.0);
        let with_tools = plain.clone().bind_tools(&tools);
        let models = Models { planner: Arc::new(with_tools), writer: Arc::new(plain) };
        return (models, format!("{name} at {base}"));
    }
    let call = |id: &str, name: &str, args: serde_json::Value| ToolCall::new(id, name, args);
    // Each reply reports tokens, as a provider's would.
    let used = |message: Message, input: u64, output: u64| {
        let mut reply = ModelReply::new(message);
        reply.usage = Usage::tokens(input, output);
        reply
    };
    let script = ScriptedModel::new([
        // Round 1: the planner looks both cities up; the verifier wants the difference.
        used(
            Message::assistant("").with_tool_calls(vec![
                call("s1", "search", json!({"query": "Oslo population"})),
                call("s2", "search", json!({"query": "Bergen population"})),
            ]),
            142,
            38,
        ),
        used(Message::assistant(r#"{"sufficient": false, "missing": "how many more people live in Oslo"}"#), 231, 19),
        // Round 2: the planner computes it; now the findings suffice.
        used(
            Message::assistant("").with_tool_calls(vec![call(
                "c1",
                "calculate",
                json!({"a": 717_000, "op": "-", "b": 291_000}),
            )]),
            268,
            27,
        ),
        used(Message::assistant(r#"{"sufficient": true, "missing": ""}"#), 297, 11),
        used(
            Message::assistant(
                "Oslo has about 717,000 people and Bergen about 291,000, so Oslo has about 426,000 more.",
            ),
            310,
            24,
        ),
        used(Message::assistant("Oslo is larger than Bergen by about 426,000 people."), 58, 13),
    ])
    .bind_tools(&tools);
    let about = "a scripted model (set OPENAI_BASE_URL to use a real one)".to_owned();
    // One script serves both roles, so its replies stay in the order the run asks for them.
    let shared: Arc<dyn ChatModel> = Arc::new(script);
    (Models { planner: Arc::clone(&shared), writer: shared }, about)
}

#[tokio::main]
async fn main() -> Result<(), Report> {
    // Export only when a receiver is named: without one the example stays quiet.
    #[cfg(feature = "otel")]
    let telemetry = std::env::var_os("OTEL_EXPORTER_OTLP_ENDPOINT")
        .map(|_| graphwright::otel::Otel::from_env().service_name("research_agent").init())
        .transpose()
        .map_err(|e| Report::msg(e.to_string()))?;
    let (models, about) = pick_models();
    println!("model: {about}\n");
    let app = research::graph().compile()?;
    let question = "How many more people live in Oslo than in Bergen?";
    println!("user: {question}");
    let input = research::StateUpdate::new().messages(vec![Message::user(question)]);
    let cfg = RunConfig::thread("research-1").context(models);
    let mut events = app.app_events(input, &cfg);
    let mut used = graphwright::model::Usage::default();
    while let Some(event) = events.next().await {
        match event {
            AppEvent::UsageReport { usage } => used += usage,
            AppEvent::ToolCallStart { name, args, .. } => println!("  tool {name}({args})"),
            AppEvent::ToolCallResult { result, is_error, .. } => {
                println!("    -> {}{result}", if is_error { "error: " } else { "" });
            }
            AppEvent::Done { .. } => println!("done"),
            AppEvent::Error { message } => return Err(Report::msg(message)),
            _ => {}
        }
    }
    let state = app.get_state(&cfg).await?.expect("the thread is stored").state;
    println!("\nanswer: {}\nsummary: {}\nplanning rounds: {}", state.answer, state.summary, state.rounds);
    println!("tokens: {} in, {} out, {} model calls", used.input_tokens, used.output_tokens, used.calls);
    #[cfg(feature = "otel")]
    if let Some(telemetry) = telemetry {
        // Sent before the program ends: the batch would otherwise wait for its timer.
        telemetry.shutdown().map_err(|e| Report::msg(e.to_string()))?;
    }
    Ok(())
}
