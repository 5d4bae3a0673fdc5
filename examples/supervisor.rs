//! A supervisor and two specialists: `cargo run --example supervisor`.
//!
//! The supervisor hands a travel question to a researcher (who looks up the weather and the
//! exchange rate with tools) and then to a writer (who turns the findings into two sentences),
//! and answers when both are done. With `OPENAI_BASE_URL` set (any OpenAI-compatible server;
//! `OPENAI_MODEL` names the model) all three agents talk to that model; otherwise each follows a
//! script, so the example runs anywhere. It prints who spoke, in order, and the hand-offs.

use graphwright::model::{ChatModel, OpenAi, ScriptedModel};
use graphwright::prebuilt::{MessagesState, react_agent, supervisor};
use graphwright::prelude::*;
use std::sync::Arc;

/// Today's weather in a city.
#[tool]
fn weather(
    /// The city.
    city: String,
) -> String {
    format!("{city}: 4 °C, light rain")
}

/// Convert an amount between currencies at today's (fixed) rates.
#[tool]
fn convert(
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

/// The three agents' models: a real one for all when the environment names one, else scripts.
fn models() -> ([Arc<dyn ChatModel>; 3], String) {
    if let Some(base) = std::env::var("OPENAI_BASE_URL").ok().filter(|v| !v.is_empty()) {
        let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
        let model: Arc<dyn ChatModel> = Arc::new(OpenAi::new(&name).temperature(0.0));
        return ([Arc::clone(&model), Arc::clone(&model), model], format!("{name} at {base}"));
    }
    let handoff = |id: &str, to: &str| {
        Message::assistant("").with_tool_calls(vec![ToolCall::new(id, format!("transfer_to_{to}"), json!({}))])
    };
    let lead = ScriptedModel::new([
        handoff("h1", "researcher"),
        handoff("h2", "writer"),
        Message::assistant("Your trip note is ready above."),
    ]);
    let researcher = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("w1", "weather", json!({"city": "Oslo"})),
            ToolCall::new("c1", "convert", json!({"amount": 200, "from": "EUR", "to": "NOK"})),
        ]),
        Message::assistant("Oslo: 4 °C and light rain. 200 EUR is 2320 NOK."),
    ]);
    let writer = ScriptedModel::new([
        "Pack a raincoat: Oslo is 4 °C with light rain today. Your 200 EUR comes to about 2320 NOK.",
    ]);
    let scripted = "scripts (set OPENAI_BASE_URL to use a real model)".to_owned();
    ([Arc::new(lead), Arc::new(researcher), Arc::new(writer)], scripted)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    let ([lead, researcher, writer], about) = models();
    println!("models: {about}\n");
    let researcher = react_agent(researcher, tools![Weather, Convert])
        .name("researcher")
        .description("looks up weather and exchange rates")
        .prompt("Find the facts the user needs with your tools, then state them briefly.");
    let writer = react_agent(writer, ToolSet::new())
        .name("writer")
        .description("writes the final note for the user")
        .prompt("Write the user a two-sentence note from the facts in the conversation.");
    let app = supervisor(lead, [researcher, writer])
        .prompt("Hand research to `researcher`, then writing to `writer`; answer when the note is written.")
        .compile()?;

    let question = "I'm going to Oslo today with 200 EUR. What should I know?";
    println!("user: {question}");
    let out = app.invoke(MessagesState::new([Message::user(question)]), &RunConfig::thread("trip")).await?;
    for message in &out.state.messages[1..] {
        let who = message.name.as_deref().unwrap_or("?");
        match message.role {
            Role::Assistant if message.has_tool_calls() => {
                let calls: Vec<_> = message.tool_calls.iter().map(|c| format!("{}({})", c.name, c.arguments)).collect();
                println!("{who} calls {}", calls.join(", "));
            }
            Role::Assistant => println!("{who}: {}", message.content),
            _ => println!("  -> {}", message.content),
        }
    }
    println!("\n{} model calls", out.usage().calls);
    Ok(())
}
