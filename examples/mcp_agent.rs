//! An agent with tools from an MCP server: `cargo run --example mcp_agent --features mcp`.
//!
//! Starts `@modelcontextprotocol/server-everything` as a child process (with
//! `GRAPHWRIGHT_MCP_EVERYTHING` naming its `dist/index.js`, through node; otherwise through
//! `npx -y`, which fetches it), adds its tools to a local one under the prefix `ev_`, and runs a
//! react agent over them. With `OPENAI_BASE_URL` set (any OpenAI-compatible server;
//! `OPENAI_MODEL` names the model) the agent talks to that model; otherwise it follows a script,
//! so the example runs without one. It prints the tools, each call with its result, and the answer.

use graphwright::mcp::McpClient;
use graphwright::model::{ChatModel, OpenAi, ScriptedModel};
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use std::sync::Arc;
use std::time::Duration;

/// Today's date, as the agent's own tool beside the server's.
#[tool]
fn today() -> &'static str {
    "2026-11-30"
}

/// The command that starts server-everything over stdio.
fn everything() -> tokio::process::Command {
    let mut command = if let Some(script) = std::env::var("GRAPHWRIGHT_MCP_EVERYTHING").ok().filter(|v| !v.is_empty()) {
        let mut node = tokio::process::Command::new("node");
        node.arg(script);
        node
    } else {
        let mut npx = tokio::process::Command::new("npx");
        npx.args(["-y", "@modelcontextprotocol/server-everything"]);
        npx
    };
    command.arg("stdio");
    command
}

/// The model the environment names, or a script that uses two of the server's tools.
fn model() -> (Arc<dyn ChatModel>, String) {
    if let Some(base) = std::env::var("OPENAI_BASE_URL").ok().filter(|v| !v.is_empty()) {
        let name = std::env::var("OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
        return (Arc::new(OpenAi::new(&name).temperature(0.0)), format!("{name} at {base}"));
    }
    let script = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![
            ToolCall::new("c1", "ev_get-sum", json!({"a": 1200, "b": 34})),
            ToolCall::new("c2", "today", json!({})),
        ]),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "c3",
            "ev_echo",
            json!({"message": "1234 on 2026-11-30"}),
        )]),
        Message::assistant("On 2026-11-30, 1200 + 34 is 1234."),
    ]);
    (Arc::new(script), "a script (set OPENAI_BASE_URL to use a real model)".to_owned())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    let server = McpClient::stdio(everything())
        .prefix("ev_")
        .stderr(std::process::Stdio::null()) // its startup banner
        .timeout(Duration::from_secs(30))
        .connect_timeout(Duration::from_mins(2)) // npx may have to fetch the package first
        .await?;
    let mut tools = tools![Today];
    let added = server.add_to(&mut tools).await?;
    println!(
        "{added} tools from {}: {}",
        server.server_name().unwrap_or("the server"),
        tools.names().collect::<Vec<_>>().join(", ")
    );

    let (model, about) = model();
    println!("model: {about}\n");
    let app = react_agent(model, tools)
        .prompt("Use the tools to answer; echo the result before you answer.")
        .tool_node(|node| node.timeout(Duration::from_secs(20)))
        .compile()?;
    let question = "What is 1200 + 34, and what is the date today?";
    println!("user: {question}");
    let out = app.invoke(MessagesState::new([Message::user(question)]), &RunConfig::default()).await?;
    for message in &out.state.messages[1..] {
        match message.role {
            Role::Assistant if message.has_tool_calls() => {
                for call in &message.tool_calls {
                    println!("  call {}({})", call.name, call.arguments);
                }
            }
            Role::Tool => println!("    -> {}{}", if message.is_error { "error: " } else { "" }, message.content),
            _ => println!("assistant: {}", message.content),
        }
    }
    server.close().await;
    Ok(())
}
