//! Checks a model's arguments against a tool's JSON Schema, naming each field that misses it.
//!
//! Covers what `#[tool]` schemas use (types, properties, required, additional properties, enums,
//! consts, items, `anyOf`/`oneOf`/`allOf`, `$ref` into `$defs`, numeric bounds, lengths) and
//! accepts whatever else a hand-written schema says: an unknown keyword never rejects a call.

use super::error::ArgumentProblem;
use serde_json::{Map, Value};

/// Nested schemas deeper than this are not followed (a recursive `$ref` cannot loop forever).
const MAX_DEPTH: usize = 64;

/// Every way `value` misses `schema`; empty when it fits.
pub(crate) fn validate(schema: &Value, value: &Value) -> Vec<ArgumentProblem> {
    let mut checker = Checker { root: schema, problems: Vec::new() };
    checker.check(schema, value, &mut String::new(), 0);
    checker.problems
}

struct Checker<'a> {
    root: &'a Value,
    problems: Vec<ArgumentProblem>,
}

impl<'a> Checker<'a> {
    fn problem(&mut self, path: &str, message: String) {
        self.problems.push(ArgumentProblem { path: path.to_owned(), message });
    }

    fn resolve(&self, schema: &'a Value) -> &'a Value {
        let reference = schema.get("$ref").and_then(Value::as_str);
        match reference.and_then(|r| r.strip_prefix('#')).and_then(|pointer| self.root.pointer(pointer)) {
            Some(target) => target,
            None => schema,
        }
    }

    fn check(&mut self, schema: &'a Value, value: &Value, path: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        let schema = self.resolve(schema);
        let map = match schema {
            Value::Bool(false) => return self.problem(path, "no value is allowed here".to_owned()),
            Value::Object(map) => map,
            _ => return,
        };
        let alternatives = map.get("anyOf").or_else(|| map.get("oneOf"));
        if let Some(alternatives) = alternatives.and_then(Value::as_array)
            && !self.check_alternatives(alternatives, value, path, depth)
        {
            return;
        }
        if let Some(all) = map.get("allOf").and_then(Value::as_array) {
            for part in all {
                self.check(part, value, path, depth + 1);
            }
        }
        if let Some(types) = map.get("type")
            && !type_matches(types, value)
        {
            let message = format!("expected {}, got {}", describe_type(types), describe(value));
            return self.problem(path, message);
        }
        if let Some(expected) = map.get("const")
            && expected != value
        {
            return self.problem(path, format!("expected {expected}, got {}", describe(value)));
        }
        if let Some(allowed) = map.get("enum").and_then(Value::as_array)
            && !allowed.contains(value)
        {
            let message = format!("expected one of {}, got {}", join_values(allowed), describe(value));
            return self.problem(path, message);
        }
        match value {
            Value::Object(object) => self.check_object(map, object, path, depth),
            Value::Array(items) => self.check_array(map, items, path, depth),
            Value::Number(number) => self.check_number(map, number.as_f64(), path),
            Value::String(text) => {
                self.check_length(map, text.chars().count(), "characters", "minLength", "maxLength", path);
            }
            _ => {}
        }
    }

    /// `anyOf`/`oneOf`: fits when one alternative fits (exclusivity is not enforced). Returns
    /// whether checking should go on with the rest of the schema.
    fn check_alternatives(
        &mut self,
        alternatives: &'a [Value],
        value: &Value,
        path: &mut String,
        depth: usize,
    ) -> bool {
        let mut best: Option<Vec<ArgumentProblem>> = None;
        for alternative in alternatives {
            let mut inner = Checker { root: self.root, problems: Vec::new() };
            inner.check(alternative, value, path, depth + 1);
            if inner.problems.is_empty() {
                return true;
            }
            let null_only = self.resolve(alternative).get("type").and_then(Value::as_str) == Some("null");
            let better = best.as_ref().is_none_or(|b| inner.problems.len() < b.len());
            if !null_only && better {
                best = Some(inner.problems);
            }
        }
        let values: Option<Vec<&Value>> = alternatives
            .iter()
            .map(|a| {
                let a = self.resolve(a);
                a.get("const")
                    .map(|c| vec![c])
                    .or_else(|| a.get("enum").and_then(Value::as_array).map(|e| e.iter().collect()))
            })
            .collect::<Option<Vec<_>>>()
            .map(|lists| lists.into_iter().flatten().collect());
        match (values, best) {
            (Some(values), _) => {
                let allowed: Vec<Value> = values.into_iter().cloned().collect();
                self.problem(path, format!("expected one of {}, got {}", join_values(&allowed), describe(value)));
            }
            (None, Some(problems)) => self.problems.extend(problems),
            (None, None) => self.problem(path, format!("expected null, got {}", describe(value))),
        }
        false
    }

    fn check_object(
        &mut self,
        schema: &'a Map<String, Value>,
        object: &Map<String, Value>,
        path: &mut String,
        depth: usize,
    ) {
        let properties = schema.get("properties").and_then(Value::as_object);
        if let Some(required) = schema.get("required").and_then(Value::as_array) {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    let what = properties.and_then(|p| p.get(name)).map(|s| self.summary(s)).unwrap_or_default();
                    self.problem(&join_path(path, name), format!("this required field is missing{what}"));
                }
            }
        }
        let additional = schema.get("additionalProperties");
        for (name, item) in object {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(name);
            match (properties.and_then(|p| p.get(name)), additional) {
                (Some(property), _) => self.check(property, item, path, depth + 1),
                (None, Some(Value::Bool(false))) => {
                    let known = properties.map(|p| p.keys().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", "));
                    let hint = properties
                        .and_then(|p| graphwright_wiring::closest(name, p.keys().map(String::as_str)))
                        .map(|near| format!("did you mean `{near}`? "))
                        .unwrap_or_default();
                    let known = known.filter(|k| !k.is_empty()).unwrap_or_else(|| "none".to_owned());
                    self.problem(path, format!("unknown field; {hint}the fields are: {known}"));
                }
                (None, Some(extra @ Value::Object(_))) => self.check(extra, item, path, depth + 1),
                (None, _) => {}
            }
            path.truncate(len);
        }
    }

    fn check_array(&mut self, schema: &'a Map<String, Value>, items: &[Value], path: &mut String, depth: usize) {
        self.check_length(schema, items.len(), "items", "minItems", "maxItems", path);
        let prefix = schema.get("prefixItems").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for (index, item) in items.iter().enumerate() {
            let item_schema = prefix.get(index).or_else(|| schema.get("items"));
            if let Some(item_schema) = item_schema {
                let len = path.len();
                path.push_str(&index_segment(index));
                self.check(item_schema, item, path, depth + 1);
                path.truncate(len);
            }
        }
    }

    fn check_number(&mut self, schema: &Map<String, Value>, number: Option<f64>, path: &str) {
        let Some(number) = number else { return };
        let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
        if let Some(min) = bound("minimum").filter(|min| number < *min) {
            self.problem(path, format!("must be at least {min}, got {number}"));
        }
        if let Some(max) = bound("maximum").filter(|max| number > *max) {
            self.problem(path, format!("must be at most {max}, got {number}"));
        }
        if let Some(min) = bound("exclusiveMinimum").filter(|min| number <= *min) {
            self.problem(path, format!("must be greater than {min}, got {number}"));
        }
        if let Some(max) = bound("exclusiveMaximum").filter(|max| number >= *max) {
            self.problem(path, format!("must be less than {max}, got {number}"));
        }
    }

    fn check_length(&mut self, schema: &Map<String, Value>, len: usize, unit: &str, min: &str, max: &str, path: &str) {
        let bound =
            |key: &str| schema.get(key).and_then(Value::as_u64).map(|b| usize::try_from(b).unwrap_or(usize::MAX));
        if let Some(min) = bound(min).filter(|min| len < *min) {
            self.problem(path, format!("needs at least {min} {unit}, got {len}"));
        }
        if let Some(max) = bound(max).filter(|max| len > *max) {
            self.problem(path, format!("takes at most {max} {unit}, got {len}"));
        }
    }

    /// ` (a string: The city's name)`: what a missing field should hold.
    fn summary(&self, schema: &'a Value) -> String {
        let schema = self.resolve(schema);
        let kind = schema.get("type").map(describe_type);
        let description = schema.get("description").and_then(Value::as_str).map(|d| d.lines().next().unwrap_or(d));
        match (kind, description) {
            (Some(kind), Some(description)) => format!(" ({kind}: {description})"),
            (Some(kind), None) => format!(" ({kind})"),
            (None, Some(description)) => format!(" ({description})"),
            (None, None) => String::new(),
        }
    }
}

fn join_path(parent: &str, name: &str) -> String {
    if parent.is_empty() { name.to_owned() } else { format!("{parent}.{name}") }
}

fn type_matches(types: &Value, value: &Value) -> bool {
    let one = |t: &str| match t {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    };
    match types {
        Value::String(t) => one(t),
        Value::Array(list) => list.iter().filter_map(Value::as_str).any(one),
        _ => true,
    }
}

fn describe_type(types: &Value) -> String {
    let one = |t: &str| match t {
        "null" => "null".to_owned(),
        "boolean" => "a boolean (true or false)".to_owned(),
        "object" => "an object".to_owned(),
        "array" => "an array".to_owned(),
        "string" => "a string".to_owned(),
        "number" => "a number".to_owned(),
        "integer" => "an integer".to_owned(),
        other => format!("`{other}`"),
    };
    match types {
        Value::String(t) => one(t),
        Value::Array(list) => list.iter().filter_map(Value::as_str).map(one).collect::<Vec<_>>().join(" or "),
        other => other.to_string(),
    }
}

/// `the string "kelvin"`, `the number 3.5`, `an object`: what the model sent.
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => {
            let shown: String = s.chars().take(40).collect();
            let more = if shown.len() < s.len() { "…" } else { "" };
            format!("the string {}{more}", Value::String(shown))
        }
        Value::Array(_) => "an array".to_owned(),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn join_values(values: &[Value]) -> String {
    values.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
}

fn index_segment(index: usize) -> String {
    format!("[{index}]")
}
