//! The `ReAct` loop of WORKLOADS.md §4: a scripted model and one tool, `add`.
//!
//! `react_send` is the shape of LangGraph's prebuilt agent (v2): the model node sends each tool
//! call to `tools` as a payload. `react_toolnode` is the hand-built loop: `tools_condition`
//! routes the model to a `ToolNode` that runs the calls of the last message.

use graphwright::prelude::*;
use graphwright::tool::ToolEnv;
use serde_json::{Value, json};
use std::sync::LazyLock;

/// Turns of the loop: tool calls before the model answers.
pub const TURNS: usize = 100;

/// Add two integers.
#[tool]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The one tool node of the program.
pub static TOOLS: LazyLock<ToolNode> = LazyLock::new(|| ToolNode::new(tools![Add]));

/// The scripted model: with `k` tool results so far, calls `add(k, k)` while `k < 100`, then
/// answers "done".
pub fn scripted_model(messages: &[Message]) -> Message {
    let k = messages.iter().filter(|m| m.role == Role::Tool).count();
    if k < TURNS {
        Message::assistant("").with_id(format!("ai-{k}")).with_tool_calls(vec![ToolCall::new(
            format!("call-{k}"),
            "add",
            json!({"a": k, "b": k}),
        )])
    } else {
        Message::assistant("done").with_id(format!("ai-{TURNS}"))
    }
}

/// The prebuilt agent's shape: one Send of each tool call to `tools`.
#[graph]
pub mod react_send {
    use super::{TOOLS, ToolEnv, scripted_model};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Calls the model; sends its tool calls, or ends the run when it makes none. (`next = END`
    /// is needed: the wiring rules do not count an empty Send as a way to END.)
    #[node(entry, next = END, send = tools)]
    fn agent(state: &State) -> (StateUpdate, Vec<ToolCall>) {
        let reply = scripted_model(&state.messages);
        let calls = reply.tool_calls.clone();
        (StateUpdate::new().messages(vec![reply]), calls)
    }

    /// Runs one tool call.
    #[node(next = agent)]
    async fn tools(call: &ToolCall) -> StateUpdate {
        let answers = TOOLS.run_calls(std::slice::from_ref(call), &ToolEnv::new()).await;
        StateUpdate::new().messages(answers)
    }
}

/// The hand-built loop: `tools_condition` and a `ToolNode`.
#[graph]
pub mod react_toolnode {
    use super::{TOOLS, scripted_model};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = tools | END, route = should_continue)]
    fn agent(state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![scripted_model(&state.messages)])
    }

    fn should_continue(state: &State) -> AgentNext {
        tools_condition(&state.messages).pick(AgentNext::Tools, AgentNext::End)
    }

    #[node(next = agent)]
    async fn tools(state: &State, rt: &Runtime) -> StateUpdate {
        StateUpdate::new().messages(TOOLS.run(&state.messages, state, rt).await)
    }
}

/// The input: one human message.
pub fn input() -> Vec<Message> {
    vec![Message::user("hi").with_id("human-0")]
}

/// Checks the 202 messages exactly (WORKLOADS.md §4).
pub fn check(messages: &[Message]) -> Result<Value, String> {
    if messages.len() != 2 * TURNS + 2 {
        return Err(format!("{} messages, expected {}", messages.len(), 2 * TURNS + 2));
    }
    let human = &messages[0];
    if human.role != Role::User || human.content != "hi" || human.id.as_deref() != Some("human-0") {
        return Err(format!("message 0 is {human:?}"));
    }
    for k in 0..TURNS {
        let ai = &messages[1 + 2 * k];
        let call_id = format!("call-{k}");
        let call_ok = ai.tool_calls.len() == 1
            && ai.tool_calls[0].id == call_id
            && ai.tool_calls[0].name == "add"
            && ai.tool_calls[0].arguments == json!({"a": k, "b": k});
        if ai.role != Role::Assistant || ai.id.as_deref() != Some(format!("ai-{k}").as_str()) || !call_ok {
            return Err(format!("message {} is {ai:?}", 1 + 2 * k));
        }
        let tool = &messages[2 + 2 * k];
        let tool_ok = tool.role == Role::Tool
            && tool.tool_call_id.as_deref() == Some(call_id.as_str())
            && tool.content == (2 * k).to_string()
            && tool.name.as_deref() == Some("add")
            && !tool.is_error;
        if !tool_ok {
            return Err(format!("message {} is {tool:?}", 2 + 2 * k));
        }
    }
    let done = &messages[2 * TURNS + 1];
    if done.role != Role::Assistant || done.content != "done" || !done.tool_calls.is_empty() {
        return Err(format!("the last message is {done:?}"));
    }
    Ok(json!({
        "messages_len": messages.len(),
        "first": "human hi",
        "tool_contents": format!("0, 2, .., {}", 2 * (TURNS - 1)),
        "last": "ai done",
    }))
}
