//! Serves two `#[tool]`s over MCP's stdio transport, for any MCP client:
//! `cargo run --example mcp_serve --features mcp`.
//!
//! An MCP client starts this program and speaks JSON-RPC on its stdin and stdout (so nothing
//! else may be printed there; logs go to stderr). In a client's configuration, the command is
//! the built binary, e.g. `target/debug/examples/mcp_serve`. The tools keep the names,
//! descriptions and JSON schemas `#[tool]` derives from their doc comments and arguments.

use graphwright::prelude::*;

/// Counts the words of a text.
#[tool]
fn word_count(
    /// The text.
    text: String,
) -> usize {
    text.split_whitespace().count()
}

/// Converts a temperature from degrees Celsius to degrees Fahrenheit.
#[tool]
fn to_fahrenheit(
    /// Degrees Celsius.
    celsius: f64,
) -> f64 {
    celsius * 9.0 / 5.0 + 32.0
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    eprintln!("mcp_serve: serving word_count and to_fahrenheit over stdio");
    tools![WordCount, ToFahrenheit].serve_mcp_stdio().await?;
    Ok(())
}
