//! The JSON Schemas `#[tool]` derives, compared with hand-written expected JSON.

use graphwright::prelude::*;
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

#[test]
fn plain_scalars() {
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
