//! Tools in an agent loop, with a `ScriptedModel` instead of a network: `cargo run --example tools`.
//!
//! Prints the schemas the model would be offered, then runs `model → tools → model` until the
//! model answers without calling a tool. The script makes one malformed call on purpose: the
//! tool node answers it with an error message, and the model calls again.

use graphwright::model::{ChatModel, ScriptedModel};
use graphwright::prelude::*;
use graphwright::tool::{ToolEvent, ToolPolicy, schema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::sync::LazyLock;
use std::time::Duration;

/// The run's context: who is asking, and the model. Tools read it; the model never sees it.
pub struct Ctx {
    /// The signed-in user.
    pub user_id: String,
    /// The model the agent talks to.
    pub model: ScriptedModel,
}

/// Temperature units.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Units {
    /// Degrees Celsius.
    Celsius,
    /// Degrees Fahrenheit.
    Fahrenheit,
}

/// One of the user's orders.
#[derive(Debug, Serialize)]
pub struct Order {
    /// The order's number.
    pub id: u32,
    /// What was ordered.
    pub item: String,
}

#[graph(context = Ctx)]
mod agent {
    use super::{Ctx, Order, TOOLS, Units};
    use graphwright::model::ChatModel;
    use graphwright::prelude::*;
    use std::time::Duration;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Get the weather forecast for a city.
    #[tool]
    pub async fn weather(
        /// The city, e.g. "Oslo".
        city: String,
        /// Days from today; today if absent.
        days: Option<u8>,
        /// The units of temperatures.
        #[default = Units::Celsius]
        units: Units,
        rt: &ToolRuntime,
    ) -> String {
        rt.writer().write(json!({"looking_up": city}));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let degrees = match units {
            Units::Celsius => "4 °C",
            Units::Fahrenheit => "39 °F",
        };
        format!("{city}, in {} days: {degrees}, light rain", days.unwrap_or(0))
    }

    /// List the signed-in user's open orders.
    #[tool]
    pub fn open_orders(
        /// At most this many orders.
        limit: Option<usize>,
        rt: &ToolRuntime<State, Ctx>,
    ) -> Vec<Order> {
        let user = &rt.context().user_id;
        let orders = vec![
            Order { id: 1, item: format!("umbrella for {user}") },
            Order { id: 2, item: format!("raincoat for {user}") },
        ];
        orders.into_iter().take(limit.unwrap_or(usize::MAX)).collect()
    }

    /// The model: asks for tools, reads their results, answers.
    #[node(entry, next = tools | END, route = should_continue)]
    async fn model(state: &State, rt: &Runtime<Ctx>) -> Result<StateUpdate, NodeError> {
        let reply = rt.context().model.invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }

    fn should_continue(state: &State) -> ModelNext {
        tools_condition(&state.messages).pick(ModelNext::Tools, ModelNext::End)
    }

    /// Runs every tool call of the model's last message.
    #[node(next = model)]
    async fn tools(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        StateUpdate::new().messages(TOOLS.run(&state.messages, state, rt).await)
    }
}

/// One tool node for the whole program, with a timeout and an event printer.
static TOOLS: LazyLock<ToolNode> = LazyLock::new(|| {
    ToolNode::new(tools![agent::Weather, agent::OpenOrders])
        .default_policy(ToolPolicy::new().timeout(Duration::from_secs(5)))
        .on_event(|event| match event {
            ToolEvent::Started { tool_call_id, name, .. } => println!("  [event] {tool_call_id}: {name} started"),
            ToolEvent::Progress { tool_call_id, data, .. } => println!("  [event] {tool_call_id}: progress {data}"),
            ToolEvent::Finished { tool_call_id, is_error, .. } => {
                println!("  [event] {tool_call_id}: finished{}", if is_error { " with an error" } else { "" });
            }
            _ => {}
        })
});

/// The model's script: two tool calls (the first with a misspelt argument, which the tool node
/// answers with an error), a corrected call, then the answer.
fn script() -> ScriptedModel {
    ScriptedModel::new([
        Message::assistant("Let me check the weather and your orders.").with_tool_calls(vec![
            ToolCall::new("call_1", "weather", json!({"town": "Oslo"})),
            ToolCall::new("call_2", "open_orders", json!({"limit": 2})),
        ]),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "call_3",
            "weather",
            json!({"city": "Oslo", "days": 1}),
        )]),
        Message::assistant("Tomorrow in Oslo: 4 °C and light rain. Your umbrella is on its way."),
    ])
    .bind_tools(&tools![agent::Weather, agent::OpenOrders])
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    println!("== the tools, as an OpenAI strict function and an Anthropic tool ==");
    println!("{}", serde_json::to_string_pretty(&schema::openai_strict_function(&agent::Weather))?);
    println!("{}", serde_json::to_string_pretty(&schema::anthropic_tool(&agent::OpenOrders))?);

    println!("\n== the agent loop ==");
    let app = agent::graph().compile()?;
    let cfg = RunConfig::default().context(Ctx { user_id: "u-42".into(), model: script() });
    let input = agent::StateUpdate::new().messages(vec![Message::user("Do I need my umbrella in Oslo tomorrow?")]);
    let out = app.invoke(input, &cfg).await?;

    println!("\n== the conversation ==");
    for message in &out.state.messages {
        let calls: Vec<String> = message.tool_calls.iter().map(|c| format!("{}({})", c.name, c.arguments)).collect();
        let about = message.tool_call_id.as_deref().map(|id| format!(" [{id}]")).unwrap_or_default();
        let error = if message.is_error { " (error)" } else { "" };
        println!("{:?}{about}{error}: {} {}", message.role, message.content, calls.join(", "));
    }
    println!("\nmodel calls: {}, tokens: {}", out.usage().calls, out.usage().total_tokens());
    Ok(())
}
