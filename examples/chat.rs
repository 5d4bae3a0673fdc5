//! A `ReAct` agent with two tools and a real model: `cargo run --example chat`.
//!
//! With `OPENAI_BASE_URL` set (any OpenAI-compatible server: OpenAI, llama.cpp, vLLM, Ollama's
//! `/v1`; `OPENAI_MODEL` names the model, `OPENAI_API_KEY` the key) or `ANTHROPIC_API_KEY` set
//! (`ANTHROPIC_MODEL` names the model), the agent talks to that model; otherwise it follows a
//! script, so the example runs anywhere. It says which it used, and streams the reply as it is
//! written.

use futures::StreamExt;
use graphwright::model::{Anthropic, ChatModel, OpenAi, ScriptedModel};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode, Write};
use std::sync::{Arc, LazyLock};

#[graph(context = Arc<dyn ChatModel>)]
mod agent {
    use super::TOOLS;
    use graphwright::model::ChatModel;
    use graphwright::prelude::*;
    use std::sync::Arc;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Convert an amount between currencies at today's (fixed) rates.
    #[tool]
    pub fn convert(
        /// The amount.
        amount: f64,
        /// The currency it is in, e.g. "EUR".
        from: String,
        /// The currency wanted, e.g. "NOK".
        to: String,
    ) -> Result<String, ToolError> {
        let rate = |c: &str| match c {
            "EUR" => Some(1.0),
            "USD" => Some(1.08),
            "NOK" => Some(11.6),
            _ => None,
        };
        match (rate(&from), rate(&to)) {
            (Some(a), Some(b)) => Ok(format!("{amount} {from} = {:.2} {to}", amount / a * b)),
            _ => Err(ToolError::msg("convert", format!("unknown currency in {from} -> {to}; known: EUR, USD, NOK"))),
        }
    }

    /// Today's weather in a city.
    #[tool]
    pub fn weather(
        /// The city.
        city: String,
    ) -> String {
        format!("{city}: 4 °C, light rain")
    }

    /// The model: answers, or asks for tools.
    #[node(entry, next = tools | END, route = route)]
    async fn model(state: &State, rt: &Runtime<Arc<dyn ChatModel>>) -> Result<StateUpdate, NodeError> {
        let reply = rt.context().invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }

    fn route(state: &State) -> ModelNext {
        tools_condition(&state.messages).pick(ModelNext::Tools, ModelNext::End)
    }

    /// Runs the tool calls of the model's last reply.
    #[node(next = model)]
    async fn tools(state: &State, rt: &Runtime<Arc<dyn ChatModel>>) -> StateUpdate {
        StateUpdate::new().messages(TOOLS.run(&state.messages, state, rt).await)
    }
}

static TOOLS: LazyLock<ToolNode> = LazyLock::new(|| ToolNode::new(tools![agent::Convert, agent::Weather]));

/// The model the environment names, or the script; and a line saying which.
fn pick_model() -> (Arc<dyn ChatModel>, String) {
    let tools = tools![agent::Convert, agent::Weather];
    let set = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if set("OPENAI_BASE_URL").is_some() {
        let name = set("OPENAI_MODEL").unwrap_or_else(|| "gpt-4o-mini".to_owned());
        let model = OpenAi::new(&name).bind_tools(&tools).temperature(0.0);
        let about = format!("OpenAI-compatible server at {}, model {name}", model.endpoint());
        return (Arc::new(model), about);
    }
    if set("ANTHROPIC_API_KEY").is_some() {
        let name = set("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".to_owned());
        let model = Anthropic::new(&name).bind_tools(&tools).max_tokens(1024);
        return (Arc::new(model), format!("Anthropic, model {name}"));
    }
    let script = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("call_1", "weather", json!({"city": "Oslo"})),
            ToolCall::new("call_2", "convert", json!({"amount": 20, "from": "EUR", "to": "NOK"})),
        ]),
        Message::assistant("Oslo has 4 °C and light rain today, so take an umbrella; 20 EUR is about 232 NOK."),
    ])
    .bind_tools(&tools);
    (Arc::new(script), "a scripted model (set OPENAI_BASE_URL or ANTHROPIC_API_KEY to use a real one)".to_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    let (model, about) = pick_model();
    println!("model: {about}\n");
    let app = agent::graph().compile()?;
    let cfg = RunConfig::default().context(model);
    let question = "What's the weather in Oslo today, and how much is 20 EUR in NOK?";
    println!("user: {question}");
    let input = agent::StateUpdate::new().messages(vec![Message::user(question)]);
    let mut stream = app.stream(input, &cfg, StreamMode::Messages | StreamMode::Updates);
    let mut replying = false;
    while let Some(event) = stream.next().await {
        match event.kind {
            EventKind::Message { delta, .. } => {
                if !replying {
                    print!("assistant: ");
                    replying = true;
                }
                print!("{delta}");
            }
            EventKind::Update { node, update, .. } if node == "tools" => {
                for message in update.messages.as_ref().map(Write::value).into_iter().flatten() {
                    println!("tool {}: {}", message.tool_call_id.as_deref().unwrap_or("?"), message.content);
                }
            }
            EventKind::Update { update, .. } => {
                for call in update.messages.as_ref().map(Write::value).into_iter().flatten().flat_map(|m| &m.tool_calls)
                {
                    println!("{}assistant asks: {}({})", if replying { "\n" } else { "" }, call.name, call.arguments);
                    replying = false;
                }
            }
            EventKind::Finished { .. } => println!(),
            EventKind::Failed(error) => return Err(error.into()),
            _ => {}
        }
    }
    Ok(())
}
