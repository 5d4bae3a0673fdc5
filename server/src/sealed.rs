//! The server's own records encrypted at rest: a thread's last values and interrupts, a run's
//! request and outcome, a cron's run request, a run's events (PostgreSQL), each a JSON value
//! sealed into a JSON string, bound to its row and column.

use crate::error::ApiError;
use base64::Engine as _;
use graphwright::encryption::Keys;
use serde_json::Value;
use std::borrow::Cow;
use std::fmt::Display;
use std::sync::Arc;

/// What starts a sealed value's string: no value the server writes starts so, and a value
/// stored before encryption was turned on (any other JSON) is read as it is.
const MARK: &str = "$graphwright_encrypted:";

/// Seals and opens the records' sensitive values; does nothing without keys, and then costs
/// nothing either: values pass through untouched and no row label is made.
#[derive(Clone, Default)]
pub(crate) struct Sealer {
    keys: Option<Arc<Keys>>,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealer").field("key", &self.keys.as_ref().map(|k| k.id())).finish()
    }
}

/// The record a sealed value belongs to (`thread <id>`, `run <id>`, `cron <id>`), written out
/// only when a value is sealed or opened.
#[derive(Clone, Copy)]
pub(crate) struct Row<'a> {
    kind: &'static str,
    id: &'a str,
}

impl<'a> Row<'a> {
    pub(crate) fn thread(id: &'a str) -> Self {
        Self { kind: "thread", id }
    }

    pub(crate) fn run(id: &'a str) -> Self {
        Self { kind: "run", id }
    }

    pub(crate) fn cron(id: &'a str) -> Self {
        Self { kind: "cron", id }
    }
}

impl Display for Row<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.id)
    }
}

impl Sealer {
    pub(crate) fn new(keys: Option<Keys>) -> Self {
        Self { keys: keys.map(Arc::new) }
    }

    /// `value` as it is to be stored in `row`'s `column`: sealed when there are keys.
    pub(crate) fn seal(&self, value: Value, row: Row<'_>, column: impl Display) -> Result<Value, ApiError> {
        let Some(keys) = &self.keys else { return Ok(value) };
        let plain = serde_json::to_vec(&value).map_err(|e| ApiError::Storage(e.to_string()))?;
        let sealed = keys
            .encrypt(&plain, &context(row, &column))
            .map_err(|e| ApiError::Storage(format!("could not encrypt the {column} of {row}: {e}")))?;
        Ok(Value::String(format!("{MARK}{}", base64::engine::general_purpose::STANDARD.encode(sealed))))
    }

    /// A value as read from `row`'s `column`: opened if it was sealed, as it is otherwise.
    pub(crate) fn open(&self, value: Value, row: Row<'_>, column: impl Display) -> Result<Value, ApiError> {
        let Some(text) = value.as_str().and_then(|s| s.strip_prefix(MARK)) else { return Ok(value) };
        let Some(keys) = &self.keys else {
            return Err(ApiError::Storage(format!(
                "the {column} of {row} is encrypted and this server has no key: start it with its key \
                 (`Server::encryption`, GRAPHWRIGHT_AES_KEY)"
            )));
        };
        let damaged = |reason: String| ApiError::Storage(format!("the {column} of {row} cannot be read: {reason}"));
        let sealed = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| damaged(format!("the encrypted value is not base64: {e}")))?;
        let plain = keys.decrypt(&sealed, &context(row, &column)).map_err(|e| damaged(e.to_string()))?;
        serde_json::from_slice(&plain).map_err(|e| damaged(format!("the decrypted value is not JSON: {e}")))
    }

    /// A text column's text (JSON already) as it is to be stored: sealed when there are keys,
    /// borrowed as it is otherwise.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // run events are stored by PostgreSQL only
    pub(crate) fn seal_text<'t>(
        &self,
        text: &'t str,
        row: Row<'_>,
        column: impl Display,
    ) -> Result<Cow<'t, str>, ApiError> {
        if self.keys.is_none() {
            return Ok(Cow::Borrowed(text));
        }
        match self.seal(Value::String(text.to_owned()), row, column)? {
            Value::String(sealed) => Ok(Cow::Owned(sealed)),
            other => Ok(Cow::Owned(other.to_string())),
        }
    }

    /// A text column's text as read: opened if it was sealed, as it is otherwise.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))] // run events are stored by PostgreSQL only
    pub(crate) fn open_text(&self, text: String, row: Row<'_>, column: impl Display) -> Result<String, ApiError> {
        if !text.starts_with(MARK) {
            return Ok(text);
        }
        match self.open(Value::String(text), row, column)? {
            Value::String(plain) => Ok(plain),
            other => Ok(other.to_string()),
        }
    }

    /// Opens `record[field]` in place, naming the record by its `id_field`.
    fn open_field(&self, record: &mut Value, field: &str, kind: &'static str, id_field: &str) -> Result<(), ApiError> {
        let Some(value) = record.get_mut(field).map(Value::take) else { return Ok(()) };
        let opened = self.open(value, Row { kind, id: record[id_field].as_str().unwrap_or_default() }, field)?;
        record[field] = opened;
        Ok(())
    }
}

/// What a sealed value is bound to: its row and column.
fn context(row: Row<'_>, column: &impl Display) -> Vec<u8> {
    format!("graphwright server record\0{row}\0{column}").into_bytes()
}

/// Opens the sealed fields of a thread's record.
pub(crate) fn open_thread(sealer: &Sealer, mut thread: Value) -> Result<Value, ApiError> {
    sealer.open_field(&mut thread, "values", "thread", "thread_id")?;
    sealer.open_field(&mut thread, "interrupts", "thread", "thread_id")?;
    Ok(thread)
}

/// Opens the sealed fields of a run's record.
pub(crate) fn open_run(sealer: &Sealer, mut run: Value) -> Result<Value, ApiError> {
    sealer.open_field(&mut run, "kwargs", "run", "run_id")?;
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::{Row, Sealer, open_thread};
    use graphwright::encryption::Keys;
    use serde_json::json;

    #[test]
    fn a_sealed_value_opens_only_in_its_row_and_with_its_key() {
        let sealer = Sealer::new(Some(Keys::new(&[3; 32]).unwrap()));
        let value = json!({"messages": [{"content": "secret"}]});
        let stored = sealer.seal(value.clone(), Row::thread("t"), "values").unwrap();
        assert!(!stored.to_string().contains("secret"));
        assert_eq!(sealer.open(stored.clone(), Row::thread("t"), "values").unwrap(), value);
        assert!(sealer.open(stored.clone(), Row::thread("u"), "values").is_err());
        assert!(sealer.open(stored.clone(), Row::thread("t"), "interrupts").is_err());
        let other = Sealer::new(Some(Keys::new(&[4; 32]).unwrap()));
        assert!(other.open(stored.clone(), Row::thread("t"), "values").is_err());
        let none = Sealer::new(None);
        let error = none.open(stored, Row::thread("t"), "values").unwrap_err().to_string();
        assert!(error.contains("GRAPHWRIGHT_AES_KEY"), "{error}");
        // What was stored in plain text reads as it is.
        assert_eq!(sealer.open(json!({"a": 1}), Row::thread("t"), "values").unwrap(), json!({"a": 1}));
        assert_eq!(none.seal(json!(1), Row::thread("t"), "values").unwrap(), json!(1));
    }

    #[test]
    fn a_threads_record_opens_its_values_and_interrupts() {
        let sealer = Sealer::new(Some(Keys::new(&[3; 32]).unwrap()));
        let record = json!({
            "thread_id": "t",
            "values": sealer.seal(json!({"x": 1}), Row::thread("t"), "values").unwrap(),
            "interrupts": sealer.seal(json!({}), Row::thread("t"), "interrupts").unwrap(),
        });
        let opened = open_thread(&sealer, record).unwrap();
        assert_eq!((opened["values"].clone(), opened["interrupts"].clone()), (json!({"x": 1}), json!({})));
    }
}
