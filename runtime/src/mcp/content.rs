//! An MCP tool result as a [`ToolOutput`], and a [`ToolOutput`] as an MCP tool result.
//!
//! Reading a result: `structuredContent`, when the server sends it, is the output (as JSON),
//! since it is the form the server means to be read by programs; otherwise the content blocks
//! become text, one block per line: text as it is, an embedded text resource as its text, and
//! a short bracketed note for what a model cannot read as text (images, audio, blobs, links).

use super::error::McpError;
use crate::tool::ToolOutput;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The output of a finished call, or the tool's own error when the result says `isError`.
pub(crate) fn output(server: &str, tool: &str, result: CallToolResult) -> Result<ToolOutput, McpError> {
    if result.is_error == Some(true) {
        let mut message = text(&result.content);
        if message.is_empty() {
            message = match &result.structured_content {
                Some(value) => value.to_string(),
                None => "(the server gave no details)".to_owned(),
            };
        }
        return Err(McpError::ToolFailed { server: server.to_owned(), tool: tool.to_owned(), message });
    }
    match result.structured_content {
        Some(value) if !value.is_null() => Ok(ToolOutput::Json(value)),
        _ => Ok(ToolOutput::Text(text(&result.content))),
    }
}

/// The blocks as text, one per line.
fn text(blocks: &[ContentBlock]) -> String {
    blocks.iter().map(block_text).collect::<Vec<_>>().join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => format!("[image, {}, {} bytes of base64]", image.mime_type, image.data.len()),
        ContentBlock::Audio(audio) => format!("[audio, {}, {} bytes of base64]", audio.mime_type, audio.data.len()),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => text.clone(),
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}, {} bytes of base64]", blob.len())
            }
            other => format!("[resource {}]", serde_json::to_string(other).unwrap_or_default()),
        },
        ContentBlock::ResourceLink(link) => format!("[resource link {}]", link.uri),
        other => format!("[{}]", serde_json::to_string(other).unwrap_or_default()),
    }
}

/// What one of our tools gives back, as an MCP result: text as one text block; JSON as one
/// text block holding it and, when it is an object, as `structuredContent` too.
pub(crate) fn result(output: ToolOutput) -> CallToolResult {
    match output {
        ToolOutput::Text(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        ToolOutput::Json(value) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
            if let Value::Object(_) = value {
                result.structured_content = Some(value);
            }
            result
        }
    }
}

/// A failure of one of our tools, as an MCP result with `isError`, its text for the model.
pub(crate) fn failure(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}
