//! The assistants as MCP tool descriptions.

use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::served::Served;
use graphwright::AuthUser;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::sync::Arc;

/// The longest tool name MCP allows.
const MAX_NAME: usize = 128;

/// One assistant as a tool.
pub(super) struct Listed {
    pub(super) tool: Tool,
    pub(super) assistant_id: String,
    /// The graph's message fields, which take a plain string as the user's message.
    pub(super) message_fields: &'static [&'static str],
}

/// Every assistant whose graph this server serves and that `user` may see, newest first; of
/// assistants whose names give the same tool name, the newest.
pub(super) async fn list(app: &App, user: Option<&Arc<AuthUser>>) -> Result<Vec<Listed>, ApiError> {
    let grant = Gate::of(app, user).grant(Resource::Assistants, Action::Search, json!({})).await?;
    let mut taken = BTreeSet::new();
    let mut listed = Vec::new();
    for assistant in app.meta.assistants().await? {
        if !grant.filter().admits(&assistant["metadata"]) {
            continue;
        }
        let Some(graph) = assistant["graph_id"].as_str().and_then(|g| app.graphs.get(g)) else { continue };
        let id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
        let title = assistant["name"].as_str().unwrap_or_default();
        let name = tool_name(title).unwrap_or_else(|| id.clone());
        if !taken.insert(name.clone()) {
            tracing::debug!(assistant = %id, %name, "an assistant's tool name is taken by a newer assistant");
            continue;
        }
        let description = match assistant["description"].as_str() {
            Some(text) if !text.trim().is_empty() => text.to_owned(),
            _ => format!(
                "Runs assistant {title:?} (graph `{}`): the arguments are the run's input, the result is its output values.",
                assistant["graph_id"].as_str().unwrap_or_default()
            ),
        };
        let annotations = ToolAnnotations::new().read_only(false).destructive(false).idempotent(false).open_world(true);
        let tool =
            Tool::new(name, description, Arc::new(input_schema(graph))).with_title(title).with_annotations(annotations);
        listed.push(Listed { tool, assistant_id: id, message_fields: graph.message_fields() });
    }
    Ok(listed)
}

/// An assistant's name as an MCP tool name (letters, digits, `_`, `-`, `.`; at most 128):
/// runs of white space become `_`, other characters are dropped. `None` if nothing is left.
pub(super) fn tool_name(name: &str) -> Option<String> {
    let mut out = String::new();
    let mut space = false;
    for c in name.trim().chars() {
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push('_');
            space = false;
        }
        if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
            out.push(c);
        }
    }
    out.truncate(MAX_NAME);
    (!out.is_empty()).then_some(out)
}

/// The graph's input schema for a model to fill: each message field is a string (the user's
/// message). A schema that is not an object (none could be made) becomes an object schema
/// naming only the message fields.
pub(super) fn input_schema(graph: &Arc<dyn Served>) -> JsonObject {
    let mut schema = match graph.schemas().input.clone() {
        Value::Object(schema) => schema,
        _ => JsonObject::new(),
    };
    schema.insert("type".into(), "object".into());
    let properties = schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(properties) = properties {
        for field in graph.message_fields() {
            let title = properties.get(*field).and_then(|p| p.get("title")).cloned();
            let mut simple = json!({
                "type": "string",
                "description": format!("A message to the graph: added to `{field}` as the user's."),
            });
            if let Some(title) = title {
                simple["title"] = title;
            }
            properties.insert((*field).to_owned(), simple);
        }
    }
    drop_unused_definitions(&mut schema);
    schema
}

/// Removes the definitions (`$defs`, `definitions`) no longer referred to, directly or through
/// another definition: those of the message types once their fields are plain strings.
fn drop_unused_definitions(schema: &mut JsonObject) {
    for key in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = schema.remove(key) else { continue };
        let prefix = format!("#/{key}/");
        let mut used = BTreeSet::new();
        let mut pending = Vec::new();
        refs(&Value::Object(schema.clone()), &prefix, &mut pending);
        while let Some(name) = pending.pop() {
            if used.insert(name.clone())
                && let Some(def) = defs.get(&name)
            {
                refs(def, &prefix, &mut pending);
            }
        }
        let kept: JsonObject = defs.into_iter().filter(|(name, _)| used.contains(name)).collect();
        if !kept.is_empty() {
            schema.insert(key.to_owned(), Value::Object(kept));
        }
    }
}

/// The definition names `value` refers to with `$ref: "{prefix}Name"`.
fn refs(value: &Value, prefix: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    ("$ref", Value::String(target)) => {
                        if let Some(name) = target.strip_prefix(prefix) {
                            out.push(name.to_owned());
                        }
                    }
                    _ => refs(inner, prefix, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| refs(item, prefix, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keep_the_characters_mcp_allows() {
        assert_eq!(tool_name("chat").as_deref(), Some("chat"));
        assert_eq!(tool_name("  Weather  bot\tv2 ").as_deref(), Some("Weather_bot_v2"));
        assert_eq!(tool_name("ask: é? (beta)").as_deref(), Some("ask__beta"));
        assert_eq!(tool_name("a.b-c_d").as_deref(), Some("a.b-c_d"));
        assert_eq!(tool_name(" ?! "), None);
        assert_eq!(tool_name(&"x".repeat(200)).map(|n| n.len()), Some(MAX_NAME));
    }

    #[test]
    fn definitions_only_message_fields_used_are_dropped() {
        let mut schema = json!({
            "type": "object",
            "properties": {"messages": {"type": "string"}, "plan": {"$ref": "#/$defs/Plan"}},
            "$defs": {"Message": {"type": "object"}, "Plan": {"properties": {"step": {"$ref": "#/$defs/Step"}}},
                      "Step": {"type": "string"}},
        });
        let Value::Object(map) = &mut schema else { unreachable!() };
        drop_unused_definitions(map);
        let defs: Vec<&String> = map["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(defs, ["Plan", "Step"]);
    }
}
