//! How the records' rows read back as JSON, the same for both databases: which columns a query
//! selects, in which order, and the JSON each row becomes.

use serde_json::{Value, json};

pub(crate) fn text(value: &Value) -> String {
    value.to_string()
}

/// A JSON column as stored by this server; `null` if it is not JSON (the records are the
/// server's own bookkeeping, shown to clients as they are, never read back into a graph).
pub(crate) fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// A result row of either database, read by position.
pub(crate) trait Columns {
    type Error;
    fn text(&self, at: usize) -> Result<String, Self::Error>;
    fn maybe_text(&self, at: usize) -> Result<Option<String>, Self::Error>;
    fn int(&self, at: usize) -> Result<i64, Self::Error>;
}

impl Columns for rusqlite::Row<'_> {
    type Error = rusqlite::Error;
    fn text(&self, at: usize) -> rusqlite::Result<String> {
        self.get(at)
    }
    fn maybe_text(&self, at: usize) -> rusqlite::Result<Option<String>> {
        self.get(at)
    }
    fn int(&self, at: usize) -> rusqlite::Result<i64> {
        self.get(at)
    }
}

pub(crate) const ASSISTANT_COLUMNS: &str =
    "assistant_id, graph_id, config, context, metadata, name, description, version, created_at, updated_at";

pub(crate) fn assistant_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "assistant_id": row.text(0)?,
        "graph_id": row.text(1)?,
        "config": parse(&row.text(2)?),
        "context": parse(&row.text(3)?),
        "metadata": parse(&row.text(4)?),
        "name": row.text(5)?,
        "description": row.maybe_text(6)?,
        "version": row.int(7)?,
        "created_at": row.text(8)?,
        "updated_at": row.text(9)?,
    }))
}

pub(crate) const THREAD_COLUMNS: &str =
    "thread_id, created_at, updated_at, state_updated_at, metadata, status, config, vals, interrupts, graph_id";

pub(crate) fn thread_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "thread_id": row.text(0)?,
        "created_at": row.text(1)?,
        "updated_at": row.text(2)?,
        "state_updated_at": row.text(3)?,
        "metadata": parse(&row.text(4)?),
        "status": row.text(5)?,
        "config": parse(&row.text(6)?),
        "values": row.maybe_text(7)?.as_deref().map_or(Value::Null, parse),
        "interrupts": parse(&row.text(8)?),
    }))
}

pub(crate) const RUN_COLUMNS: &str =
    "run_id, thread_id, assistant_id, created_at, updated_at, status, metadata, kwargs, multitask_strategy";

pub(crate) fn run_json<R: Columns>(row: &R) -> Result<Value, R::Error> {
    Ok(json!({
        "run_id": row.text(0)?,
        "thread_id": row.text(1)?,
        "assistant_id": row.text(2)?,
        "created_at": row.text(3)?,
        "updated_at": row.text(4)?,
        "status": row.text(5)?,
        "metadata": parse(&row.text(6)?),
        "kwargs": parse(&row.text(7)?),
        "multitask_strategy": row.text(8)?,
    }))
}
