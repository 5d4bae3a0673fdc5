//! Which parts of a stored value an index embeds: paths into JSON, in LangGraph's syntax.

use serde_json::Value;
use std::fmt;

/// A path into a JSON value naming the texts to embed.
///
/// The syntax is LangGraph's: `$` (or an empty path) for the whole value; `a.b` for fields;
/// `items[0]`, `items[-1]` and `items[*]` for array elements; `*` for every field of an object
/// or element of an array; `{title,body.text}` for several fields at once. A string is embedded
/// as it is, a number or boolean as its text, an object or array as its JSON (keys sorted), and
/// `null` or a missing part not at all.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldPath {
    text: String,
    steps: Vec<Step>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Field(String),
    Index(i64),
    EachElement,
    EachValue,
    AnyOf(Vec<FieldPath>),
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FieldPath {
    /// Parses `text`; the reason it is not a path otherwise.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let mut steps = Vec::new();
        if trimmed.is_empty() || trimmed == "$" {
            return Ok(Self { text: "$".to_owned(), steps });
        }
        let body = trimmed.strip_prefix("$.").unwrap_or(trimmed);
        let mut rest = body;
        let mut field = String::new();
        let end_field = |field: &mut String, steps: &mut Vec<Step>| {
            if !field.is_empty() {
                let name = std::mem::take(field);
                steps.push(if name == "*" { Step::EachValue } else { Step::Field(name) });
            }
        };
        while let Some(c) = rest.chars().next() {
            match c {
                '.' => {
                    if field.is_empty()
                        && !matches!(steps.last(), Some(Step::Index(_) | Step::EachElement | Step::AnyOf(_)))
                    {
                        return Err(format!("`{text}` has an empty field name before a `.`"));
                    }
                    end_field(&mut field, &mut steps);
                    rest = &rest[1..];
                    if rest.is_empty() {
                        return Err(format!("`{text}` ends with a `.`"));
                    }
                }
                '[' => {
                    end_field(&mut field, &mut steps);
                    let close = rest.find(']').ok_or_else(|| format!("`{text}` has a `[` that is never closed"))?;
                    let inside = rest[1..close].trim();
                    steps.push(if inside == "*" {
                        Step::EachElement
                    } else {
                        Step::Index(inside.parse().map_err(|_| {
                            format!("`{text}` has `[{inside}]`: write a whole number (`[0]`, `[-1]`) or `[*]`")
                        })?)
                    });
                    rest = &rest[close + 1..];
                }
                '{' => {
                    if !field.is_empty() {
                        return Err(format!("`{text}` has `{{` right after a field name: put a `.` before it"));
                    }
                    let close = rest.find('}').ok_or_else(|| format!("`{text}` has a `{{` that is never closed"))?;
                    let alternatives = rest[1..close]
                        .split(',')
                        .map(|one| {
                            let one = one.trim();
                            if one.is_empty() || one == "$" {
                                return Err(format!("`{text}` has an empty field in `{{..}}`"));
                            }
                            Self::parse(one)
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    steps.push(Step::AnyOf(alternatives));
                    rest = &rest[close + 1..];
                }
                ']' | '}' => return Err(format!("`{text}` has a `{c}` that closes nothing")),
                c => {
                    field.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        end_field(&mut field, &mut steps);
        Ok(Self { text: trimmed.to_owned(), steps })
    }

    /// The path as written.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// The texts at this path in `value`, in document order.
    pub(crate) fn texts(&self, value: &Value) -> Vec<String> {
        let mut found = Vec::new();
        values_at(value, &self.steps, &mut found);
        found.into_iter().filter_map(text_of).collect()
    }
}

/// The values at `steps` under `value`, in document order.
fn values_at<'v>(value: &'v Value, steps: &[Step], out: &mut Vec<&'v Value>) {
    let Some((step, rest)) = steps.split_first() else {
        out.push(value);
        return;
    };
    match (step, value) {
        (Step::Field(name), Value::Object(object)) => {
            if let Some(inner) = object.get(name) {
                values_at(inner, rest, out);
            }
        }
        (Step::Index(index), Value::Array(array)) => {
            let at = if *index < 0 { i64::try_from(array.len()).ok().map(|len| len + index) } else { Some(*index) };
            if let Some(inner) = at.and_then(|at| usize::try_from(at).ok()).and_then(|at| array.get(at)) {
                values_at(inner, rest, out);
            }
        }
        (Step::EachElement | Step::EachValue, Value::Array(array)) => {
            for inner in array {
                values_at(inner, rest, out);
            }
        }
        (Step::EachValue, Value::Object(object)) => {
            for inner in object.values() {
                values_at(inner, rest, out);
            }
        }
        (Step::AnyOf(paths), Value::Object(_)) => {
            for path in paths {
                let mut found = Vec::new();
                values_at(value, &path.steps, &mut found);
                for inner in found {
                    values_at(inner, rest, out);
                }
            }
        }
        _ => {}
    }
}

/// What of a JSON value is embedded: strings as they are, scalars as text, containers as JSON.
fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        Value::Bool(_) | Value::Number(_) => Some(value.to_string()),
        Value::Array(_) | Value::Object(_) => Some(sorted_json(value)),
    }
}

/// JSON text with object keys sorted, so the same value always gives the same text.
fn sorted_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(object) => {
                let mut keys: Vec<&String> = object.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&object[k]))).collect())
            }
            Value::Array(array) => Value::Array(array.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(path: &str, value: &Value) -> Vec<String> {
        FieldPath::parse(path).unwrap().texts(value)
    }

    #[test]
    fn paths_select_fields_elements_and_alternatives() {
        let value = json!({
            "title": "Tea",
            "body": {"text": "green, no sugar", "words": 3},
            "tags": ["drink", "morning", null],
            "notes": [{"text": "a"}, {"text": "b"}, {"other": 1}],
        });
        assert_eq!(texts("title", &value), ["Tea"]);
        assert_eq!(texts("$.body.text", &value), ["green, no sugar"]);
        assert_eq!(texts("body.words", &value), ["3"]);
        assert_eq!(texts("tags[0]", &value), ["drink"]);
        assert_eq!(texts("tags[-2]", &value), ["morning"]);
        assert_eq!(texts("tags[*]", &value), ["drink", "morning"], "null is not embedded");
        assert_eq!(texts("notes[*].text", &value), ["a", "b"]);
        assert_eq!(texts("{title,body.text}", &value), ["Tea", "green, no sugar"]);
        assert_eq!(texts("body.*", &value), ["green, no sugar", "3"]);
        assert_eq!(texts("notes[*].{text,other}", &value), ["a", "b", "1"]);
        assert!(texts("missing.deeper", &value).is_empty());
        assert!(texts("tags[7]", &value).is_empty());
        assert!(texts("title[0]", &value).is_empty(), "indexing a string finds nothing");
    }

    #[test]
    fn the_whole_value_is_its_json_with_sorted_keys() {
        let value = json!({"b": 1, "a": {"d": 2, "c": 3}});
        assert_eq!(texts("$", &value), [r#"{"a":{"c":3,"d":2},"b":1}"#]);
        assert_eq!(texts("", &value), texts("$", &value));
        assert_eq!(texts("$", &json!("just text")), ["just text"]);
    }

    #[test]
    fn malformed_paths_say_what_is_wrong() {
        for (path, says) in [
            ("tags[", "never closed"),
            ("tags[x]", "whole number"),
            ("a..b", "empty field name"),
            ("a.", "ends with"),
            ("a]", "closes nothing"),
            ("{a,}", "empty field"),
            ("a{b}", "put a `.`"),
        ] {
            let error = FieldPath::parse(path).unwrap_err();
            assert!(error.contains(says), "{path}: {error}");
        }
    }
}
