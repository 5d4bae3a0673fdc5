//! The JSON Schemas `#[tool]` derives, compared with hand-written expected JSON: scalars,
//! optional and defaulted parameters, enums, nested structs, vectors, doc-comment descriptions,
//! the provider formats, strict mode, and the injected runtime left out of every schema.

use graphwright::prelude::*;
use graphwright::tool::{Erased, schema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Add two integers.
#[tool]
fn add(
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
) -> i64 {
    a + b
}

/// Search the catalogue.
#[tool(name = "catalogue_search")]
fn search(
    /// Words to look for.
    query: String,
    /// At most this many hits; 10 if absent.
    limit: Option<u32>,
    /// Skip this many hits first.
    #[default]
    offset: u32,
    /// Only in stock.
    #[default = true]
    in_stock: bool,
    rt: &ToolRuntime,
) -> Vec<String> {
    let _ = rt;
    vec![format!("{query} {limit:?} {offset} {in_stock}")]
}

/// How to sort hits.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// The best match first.
    Relevance,
    /// The newest first.
    Newest,
}

// Without docs on its variants (private, so the missing-docs lint lets it be).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Size {
    Small,
    Large,
}

/// A price range.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Range {
    /// Lowest price, in cents.
    pub min: u32,
    /// Highest price, in cents; no bound if absent.
    pub max: Option<u32>,
}

/// Find products.
///
/// Returns one line per product.
#[tool]
async fn find(
    /// Sort order.
    order: Order,
    size: Option<Size>,
    /// Price range.
    range: Range,
    /// Tags every product must have.
    tags: Vec<String>,
    rt: ToolRuntime<Erased, ()>,
) -> Result<String, String> {
    let _ = (order, size, range, tags, rt);
    tokio::task::yield_now().await;
    Ok(String::new())
}

#[test]
fn plain_scalars() {
    assert_eq!(Add.name(), "add");
    assert_eq!(Add.description(), "Add two integers.");
    assert_eq!(
        Add.parameters(),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer", "format": "int64", "description": "The first term."},
                "b": {"type": "integer", "format": "int64", "description": "The second term."}
            },
            "required": ["a", "b"],
            "additionalProperties": false
        })
    );
}

#[test]
fn optional_and_defaulted_parameters_are_not_required() {
    assert_eq!(Search.name(), "catalogue_search");
    assert_eq!(
        Search.parameters(),
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for."},
                "limit": {
                    "type": ["integer", "null"], "format": "uint32", "minimum": 0,
                    "description": "At most this many hits; 10 if absent."
                },
                "offset": {
                    "type": "integer", "format": "uint32", "minimum": 0,
                    "description": "Skip this many hits first.", "default": 0
                },
                "in_stock": {"type": "boolean", "description": "Only in stock.", "default": true}
            },
            "required": ["query"],
            "additionalProperties": false
        })
    );
}

#[test]
fn enums_nested_structs_vectors_and_multi_line_descriptions() {
    assert_eq!(Find.description(), "Find products.\n\nReturns one line per product.");
    assert_eq!(
        Find.parameters(),
        json!({
            "type": "object",
            "properties": {
                "order": {
                    "description": "Sort order.",
                    "oneOf": [
                        {"type": "string", "const": "relevance", "description": "The best match first."},
                        {"type": "string", "const": "newest", "description": "The newest first."}
                    ]
                },
                "size": {"type": ["string", "null"], "enum": ["small", "large", null]},
                "range": {
                    "type": "object",
                    "description": "Price range.",
                    "properties": {
                        "min": {"type": "integer", "format": "uint32", "minimum": 0, "description": "Lowest price, in cents."},
                        "max": {
                            "type": ["integer", "null"], "format": "uint32", "minimum": 0,
                            "description": "Highest price, in cents; no bound if absent."
                        }
                    },
                    "required": ["min"]
                },
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Tags every product must have."
                }
            },
            "required": ["order", "range", "tags"],
            "additionalProperties": false
        })
    );
}

#[test]
fn the_injected_runtime_is_absent_from_every_schema() {
    for tool in &tools![Add, Search, Find] {
        let parameters = tool.parameters();
        let properties = parameters["properties"].as_object().unwrap();
        assert!(!properties.contains_key("rt"), "{}: {parameters}", tool.name());
        let required = parameters["required"].as_array().unwrap();
        assert!(!required.contains(&json!("rt")));
        let strict = schema::strict(parameters.clone());
        assert!(!strict["properties"].as_object().unwrap().contains_key("rt"));
    }
}

#[test]
fn strict_mode_requires_everything_and_makes_optional_fields_nullable() {
    assert_eq!(
        schema::openai_strict_function(&Search),
        json!({
            "type": "function",
            "function": {
                "name": "catalogue_search",
                "description": "Search the catalogue.",
                "strict": true,
                "parameters": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Words to look for."},
                        "limit": {
                            "type": ["integer", "null"], "minimum": 0,
                            "description": "At most this many hits; 10 if absent."
                        },
                        "offset": {
                            "type": ["integer", "null"], "minimum": 0,
                            "description": "Skip this many hits first."
                        },
                        "in_stock": {"type": ["boolean", "null"], "description": "Only in stock."}
                    },
                    "required": ["query", "in_stock", "limit", "offset"],
                    "additionalProperties": false
                }
            }
        })
    );
    let strict = schema::strict(Find.parameters());
    assert_eq!(
        strict["properties"]["order"],
        json!({
            "description": "Sort order.",
            "anyOf": [
                {"type": "string", "const": "relevance", "description": "The best match first."},
                {"type": "string", "const": "newest", "description": "The newest first."}
            ]
        })
    );
    assert_eq!(
        strict["properties"]["range"],
        json!({
            "type": "object",
            "description": "Price range.",
            "properties": {
                "min": {"type": "integer", "minimum": 0, "description": "Lowest price, in cents."},
                "max": {
                    "type": ["integer", "null"], "minimum": 0,
                    "description": "Highest price, in cents; no bound if absent."
                }
            },
            "required": ["min", "max"],
            "additionalProperties": false
        })
    );
    assert_eq!(strict["required"], json!(["order", "range", "tags", "size"]));
}

#[test]
fn a_nullable_enum_without_type_gains_a_null_alternative() {
    let optional = json!({
        "type": "object",
        "properties": {"order": {"description": "Sort order.", "oneOf": [{"const": "a"}, {"const": "b"}]}},
        "required": []
    });
    assert_eq!(
        schema::strict(optional)["properties"]["order"],
        json!({"description": "Sort order.", "anyOf": [{"const": "a"}, {"const": "b"}, {"type": "null"}]})
    );
    let referenced = json!({
        "type": "object",
        "properties": {"range": {"$ref": "#/$defs/Range", "description": "Price range."}},
        "$defs": {"Range": {"type": "object", "properties": {"min": {"type": "integer"}}, "required": ["min"]}}
    });
    let strict = schema::strict(referenced);
    assert_eq!(
        strict["properties"]["range"],
        json!({"description": "Price range.", "anyOf": [{"$ref": "#/$defs/Range"}, {"type": "null"}]})
    );
    assert_eq!(strict["$defs"]["Range"]["additionalProperties"], json!(false));
}

#[test]
fn provider_formats() {
    assert_eq!(
        schema::openai_function(&Add),
        json!({
            "type": "function",
            "function": {"name": "add", "description": "Add two integers.", "parameters": Add.parameters()}
        })
    );
    assert_eq!(
        schema::anthropic_tool(&Add),
        json!({"name": "add", "description": "Add two integers.", "input_schema": Add.parameters()})
    );
    let set = tools![Add, Search];
    assert_eq!(set.openai_functions(true)[1], schema::openai_strict_function(&Search));
    assert_eq!(set.anthropic_tools()[0], schema::anthropic_tool(&Add));
}

#[test]
fn schema_for_serves_hand_written_tools() {
    assert_eq!(
        schema::schema_for::<Range>(),
        json!({
            "type": "object",
            "description": "A price range.",
            "properties": {
                "min": {"type": "integer", "format": "uint32", "minimum": 0, "description": "Lowest price, in cents."},
                "max": {
                    "type": ["integer", "null"], "format": "uint32", "minimum": 0,
                    "description": "Highest price, in cents; no bound if absent."
                }
            },
            "required": ["min"]
        })
    );
}

#[tokio::test]
async fn the_fn_stays_plain_rust_and_the_tool_reads_defaults() {
    assert_eq!(add(2, 3), 5);
    let rt = ToolRuntime::detached("c1");
    assert_eq!(search("tea".into(), None, 0, true, &rt), ["tea None 0 true"]);
    let out = Search.call(json!({"query": "tea", "limit": 3}), &rt).await.unwrap();
    assert_eq!(out.into_content(), r#"["tea Some(3) 0 true"]"#);
    let out = Search.call(json!({"query": "tea", "in_stock": null, "offset": 5}), &rt).await.unwrap();
    assert_eq!(out.into_content(), r#"["tea None 5 true"]"#);
}

/// A module that shadows the prelude names generated code must not rely on.
mod hygiene {
    #![allow(dead_code)]
    use graphwright::tool;

    struct Result;
    struct Ok;
    struct Err;
    struct Option;
    struct Some;
    struct None;
    struct Vec;
    struct String;
    struct Box;
    struct Default;

    /// Echo a number.
    // The fully qualified `Result` is the point of this hygiene test.
    #[allow(clippy::unnecessary_wraps)]
    #[tool]
    pub(super) fn echo(
        n: u32,
        maybe: ::core::option::Option<u32>,
        #[default] times: u32,
    ) -> ::core::result::Result<u32, ::std::string::String> {
        ::core::result::Result::Ok(n + maybe.unwrap_or(0) + times)
    }
}

#[tokio::test]
async fn generated_code_names_everything_by_absolute_path() {
    let out = hygiene::Echo.call(json!({"n": 1, "maybe": 2}), &ToolRuntime::detached("h")).await;
    assert_eq!(out.unwrap().into_content(), "3");
    assert_eq!(hygiene::Echo.parameters()["required"], json!(["n"]));
}
