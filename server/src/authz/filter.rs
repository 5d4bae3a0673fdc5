//! Which records a caller may see, as conditions on their metadata.

use serde_json::Value;

/// Which records a caller may see or act on: conditions on a record's metadata, all of which
/// must hold. A policy returns one in its [`Grant`](super::Grant); the server applies it to
/// every read, search, count, list, history, join, stream, copy, cancel and delete of the
/// resource, and answers a record it does not admit as if the record did not exist.
///
/// A key missing from the metadata reads as `null`, so `Filter::any_of("owner", [me, null])`
/// admits the records of `me` and those of nobody.
///
/// ```
/// use graphwright_server::authz::Filter;
/// use serde_json::json;
///
/// let mine = Filter::eq("owner", "ada").and_contains("tags", "support");
/// assert!(mine.admits(&json!({"owner": "ada", "tags": ["support", "billing"]})));
/// assert!(!mine.admits(&json!({"owner": "bob", "tags": ["support"]})));
/// assert!(!mine.admits(&json!({"owner": "ada"})));
/// assert!(Filter::all().admits(&json!({})));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<(String, Condition)>,
}

/// One condition on a metadata key.
#[derive(Clone, Debug, PartialEq)]
enum Condition {
    /// The value equals this one.
    Eq(Value),
    /// The value is one of these.
    AnyOf(Vec<Value>),
    /// The value is a list holding this one.
    Contains(Value),
}

impl Filter {
    /// A filter that admits every record.
    pub fn all() -> Self {
        Self::default()
    }

    /// Records whose metadata has `key` equal to `value`.
    pub fn eq(key: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::all().and_eq(key, value)
    }

    /// Records whose metadata has `key` equal to one of `values` (a missing key is `null`).
    pub fn any_of<I: IntoIterator<Item = V>, V: Into<Value>>(key: impl Into<String>, values: I) -> Self {
        Self::all().and_any_of(key, values)
    }

    /// Records whose metadata has `key` as a list holding `value`.
    pub fn contains(key: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::all().and_contains(key, value)
    }

    /// This filter, and `key` equal to `value`.
    #[must_use]
    pub fn and_eq(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.conditions.push((key.into(), Condition::Eq(value.into())));
        self
    }

    /// This filter, and `key` equal to one of `values`.
    #[must_use]
    pub fn and_any_of<I: IntoIterator<Item = V>, V: Into<Value>>(mut self, key: impl Into<String>, values: I) -> Self {
        self.conditions.push((key.into(), Condition::AnyOf(values.into_iter().map(Into::into).collect())));
        self
    }

    /// This filter, and `key` a list holding `value`.
    #[must_use]
    pub fn and_contains(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.conditions.push((key.into(), Condition::Contains(value.into())));
        self
    }

    /// Both filters' conditions.
    #[must_use]
    pub fn and(mut self, other: Self) -> Self {
        self.conditions.extend(other.conditions);
        self
    }

    /// Whether the filter admits every record.
    pub fn is_all(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Whether a record with `metadata` passes (a record with no metadata object has none of
    /// the keys).
    pub fn admits(&self, metadata: &Value) -> bool {
        self.conditions.iter().all(|(key, condition)| {
            let found = metadata.get(key).unwrap_or(&Value::Null);
            match condition {
                Condition::Eq(value) => found == value,
                Condition::AnyOf(values) => values.contains(found),
                Condition::Contains(value) => found.as_array().is_some_and(|items| items.contains(value)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_keys_read_as_null_and_non_objects_have_no_keys() {
        let mine_or_nobodys = Filter::any_of("owner", [json!("ada"), Value::Null]);
        assert!(mine_or_nobodys.admits(&json!({})));
        assert!(mine_or_nobodys.admits(&json!({"owner": "ada"})));
        assert!(!mine_or_nobodys.admits(&json!({"owner": "bob"})));
        assert!(!Filter::eq("owner", "ada").admits(&Value::Null));
        assert!(!Filter::contains("tags", "x").admits(&json!({"tags": "x"})));
    }

    #[test]
    fn every_condition_must_hold() {
        let filter = Filter::eq("owner", "ada").and(Filter::eq("team", "red"));
        assert!(filter.admits(&json!({"owner": "ada", "team": "red"})));
        assert!(!filter.admits(&json!({"owner": "ada", "team": "blue"})));
        assert!(!filter.is_all());
    }
}
