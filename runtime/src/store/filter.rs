//! Conditions on the top-level fields of stored values.

use super::StoreError;
use serde_json::{Map, Number, Value};
use std::cmp::Ordering;

/// How a [`Condition`] compares a field with its operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FilterOp {
    /// Equal (`$eq`).
    Eq,
    /// Not equal, or the field is missing (`$ne`).
    Ne,
    /// Greater than (`$gt`).
    Gt,
    /// Greater than or equal (`$gte`).
    Gte,
    /// Less than (`$lt`).
    Lt,
    /// Less than or equal (`$lte`).
    Lte,
}

impl FilterOp {
    /// The operator's name in LangGraph's filter syntax (`$eq`, `$gte`...).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Eq => "$eq",
            Self::Ne => "$ne",
            Self::Gt => "$gt",
            Self::Gte => "$gte",
            Self::Lt => "$lt",
            Self::Lte => "$lte",
        }
    }

    /// The operator named `name` in LangGraph's filter syntax.
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "$eq" => Some(Self::Eq),
            "$ne" => Some(Self::Ne),
            "$gt" => Some(Self::Gt),
            "$gte" => Some(Self::Gte),
            "$lt" => Some(Self::Lt),
            "$lte" => Some(Self::Lte),
            _ => None,
        }
    }
}

/// One condition: the value's top-level `field`, compared by `op` with `value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    /// The top-level field of the stored value.
    pub field: String,
    /// The comparison.
    pub op: FilterOp,
    /// The operand.
    pub value: Value,
}

impl Condition {
    /// Whether `item` (a stored value) satisfies the condition.
    #[must_use]
    pub fn matches(&self, item: &Value) -> bool {
        let Some(field) = item.as_object().and_then(|o| o.get(&self.field)) else {
            return self.op == FilterOp::Ne;
        };
        match self.op {
            FilterOp::Eq => equal(field, &self.value),
            FilterOp::Ne => !equal(field, &self.value),
            FilterOp::Gt => order(field, &self.value) == Some(Ordering::Greater),
            FilterOp::Gte => matches!(order(field, &self.value), Some(Ordering::Greater | Ordering::Equal)),
            FilterOp::Lt => order(field, &self.value) == Some(Ordering::Less),
            FilterOp::Lte => matches!(order(field, &self.value), Some(Ordering::Less | Ordering::Equal)),
        }
    }
}

/// Conditions on the top-level fields of stored values; an item matches when all hold.
///
/// The rules, the same in every backend:
///
/// - A condition reads one top-level field of the value; values that are not JSON objects have
///   no fields. Nested paths are not supported.
/// - Numbers compare by value, whatever their JSON form (`1` equals `1.0`; integers beyond 2^53
///   compare exactly with integers, approximately with fractions). Strings compare by Unicode
///   code point (byte order of UTF-8; no locale, no case folding).
/// - `eq` on other values (booleans, null, arrays, objects) is JSON equality; `ne` is exactly
///   "not `eq`", so it also matches items where the field is missing.
/// - `gt`, `gte`, `lt`, `lte` hold only between two numbers or two strings; a number never
///   compares with a string, and a missing field, a boolean, null, an array or an object never
///   satisfies them.
///
/// ```
/// use graphwright::store::Filter;
/// use serde_json::json;
///
/// let filter = Filter::new().eq("kind", "preference").gte("score", 3).ne("archived", true);
/// assert!(filter.matches(&json!({"kind": "preference", "score": 4.5})));
/// assert!(!filter.matches(&json!({"kind": "preference", "score": "4"})), "a string is not a number");
/// assert!(!filter.matches(&json!({"kind": "preference", "score": 5, "archived": true})));
///
/// // LangGraph's syntax: a plain value means `$eq`.
/// let same = Filter::from_json(&json!({"kind": "preference", "score": {"$gte": 3}, "archived": {"$ne": true}}))?;
/// assert_eq!(same.conditions().len(), 3);
/// # Ok::<(), graphwright::store::StoreError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Filter {
    conditions: Vec<Condition>,
}

impl Filter {
    /// The filter every item matches.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the condition `field op value`.
    #[must_use]
    pub fn condition(mut self, field: impl Into<String>, op: FilterOp, value: impl Into<Value>) -> Self {
        self.conditions.push(Condition { field: field.into(), op, value: value.into() });
        self
    }

    /// `field` equals `value`.
    #[must_use]
    pub fn eq(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Eq, value)
    }

    /// `field` does not equal `value`, or is missing.
    #[must_use]
    pub fn ne(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Ne, value)
    }

    /// `field` is greater than `value`.
    #[must_use]
    pub fn gt(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Gt, value)
    }

    /// `field` is greater than or equal to `value`.
    #[must_use]
    pub fn gte(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Gte, value)
    }

    /// `field` is less than `value`.
    #[must_use]
    pub fn lt(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Lt, value)
    }

    /// `field` is less than or equal to `value`.
    #[must_use]
    pub fn lte(self, field: impl Into<String>, value: impl Into<Value>) -> Self {
        self.condition(field, FilterOp::Lte, value)
    }

    /// The conditions, in the order they were added.
    #[must_use]
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// Whether the filter has no conditions (and so matches everything).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Whether `item` (a stored value) satisfies every condition.
    #[must_use]
    pub fn matches(&self, item: &Value) -> bool {
        self.conditions.iter().all(|c| c.matches(item))
    }

    /// Reads LangGraph's filter syntax: an object whose entries are `field: value` (equality)
    /// or `field: {"$op": operand, ...}` with the operators `$eq $ne $gt $gte $lt $lte`.
    ///
    /// An object operand whose keys do not all start with `$` is compared for equality as a
    /// whole; an unknown `$` operator is an error.
    pub fn from_json(filter: &Value) -> Result<Self, StoreError> {
        let Some(fields) = filter.as_object() else {
            return Err(StoreError::InvalidQuery {
                reason: format!("a filter must be a JSON object of fields, not {filter}"),
            });
        };
        let mut out = Self::new();
        for (field, operand) in fields {
            match operand.as_object().filter(|ops| is_operator_object(ops)) {
                None => out = out.eq(field.clone(), operand.clone()),
                Some(ops) => {
                    for (name, value) in ops {
                        let op = FilterOp::parse(name).ok_or_else(|| StoreError::InvalidQuery {
                            reason: format!(
                                "unknown operator `{name}` on field `{field}`; use one of $eq $ne $gt $gte $lt $lte"
                            ),
                        })?;
                        out = out.condition(field.clone(), op, value.clone());
                    }
                }
            }
        }
        Ok(out)
    }
}

fn is_operator_object(ops: &Map<String, Value>) -> bool {
    !ops.is_empty() && ops.keys().all(|k| k.starts_with('$'))
}

/// The order of two numbers or two strings; `None` for anything else.
fn order(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(a), Value::Number(b)) => compare_numbers(a, b),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> bool {
    match order(a, b) {
        Some(ordering) => ordering == Ordering::Equal,
        None => a == b,
    }
}

fn compare_numbers(a: &Number, b: &Number) -> Option<Ordering> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        return Some(a.cmp(&b));
    }
    if let (Some(a), Some(b)) = (a.as_u64(), b.as_u64()) {
        return Some(a.cmp(&b));
    }
    a.as_f64()?.partial_cmp(&b.as_f64()?)
}
