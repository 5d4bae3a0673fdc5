//! How values become the bytes of stored records, and come back.
//!
//! Values are `MessagePack` (`rmp-serde`), with structs as maps so field names are kept. It is
//! self-describing like JSON, so state types may use any serde feature (untagged enums,
//! flattening), a record names the field that failed to decode, and a struct of another shape
//! is an error rather than a default; unlike JSON it stores `f64` NaN and ±infinity, map keys of
//! any type, and bytes exactly. Nesting is bounded on both sides ([`MAX_DEPTH`]), so no value
//! can overflow the stack while it is stored or read. On failure, the value is walked a second
//! time with `serde_path_to_error` to name the field: the common, successful path pays nothing
//! for that.

mod bounded;
pub(crate) mod checksum;
pub(crate) mod envelope;

use crate::state::{Update, Write};
use bounded::{Bounded, MAX_DEPTH};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::cell::Cell;

/// A value that could not be encoded: where in it, and why.
#[derive(Debug)]
pub(crate) struct EncodeError {
    /// The path of the value that failed (`messages[3].content`), or empty for the root.
    pub(crate) path: String,
    pub(crate) reason: String,
}

/// Bytes that did not decode: where, and why.
#[derive(Debug)]
pub(crate) struct DecodeError {
    pub(crate) path: String,
    pub(crate) reason: String,
}

impl DecodeError {
    pub(crate) fn new(reason: impl Into<String>) -> Self {
        Self { path: String::new(), reason: reason.into() }
    }
}

/// Appends the `MessagePack` form of `value` to `out`. On failure `out` is left as it was.
pub(crate) fn encode<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), EncodeError> {
    let start = out.len();
    let left = Cell::new(MAX_DEPTH);
    let mut serializer = rmp_serde::Serializer::new(&mut *out).with_struct_map();
    if value.serialize(Bounded { inner: &mut serializer, left: &left }).is_ok() {
        return Ok(());
    }
    out.truncate(start);
    // Rare: walk it again, tracking the path, to say where it failed.
    let left = Cell::new(MAX_DEPTH);
    let mut scratch = Vec::new();
    let mut serializer = rmp_serde::Serializer::new(&mut scratch).with_struct_map();
    let error = match serde_path_to_error::serialize(value, Bounded { inner: &mut serializer, left: &left }) {
        Ok(()) => return Err(EncodeError { path: String::new(), reason: "it could not be encoded".to_owned() }),
        Err(error) => error,
    };
    Err(EncodeError { path: path_of(error.path()), reason: error.into_inner().to_string() })
}

/// How many levels above a field's value its update's stored form puts: the update (a map),
/// the field's `Option` and the pair `[tag, value]`, as [`Bounded`] counts them.
const WRITE_VALUE_DEPTH: u32 = 3;

/// Appends the stored form of `update`: the bytes of [`encode`], written by the update's own
/// field-by-field encoder when it has one (see [`Update::encode_stored`]), through serde
/// otherwise, or when that encoder fails (serde then finds and names the value that failed).
pub(crate) fn encode_update<U: Update>(out: &mut Vec<u8>, update: &U) -> Result<(), EncodeError> {
    let start = out.len();
    if update.encode_stored(out) {
        return Ok(());
    }
    out.truncate(start);
    encode(out, update)
}

/// Inserts at `start` the header of an update's stored form: a map of the `fields` entries
/// written after it.
pub(crate) fn encode_update_header(out: &mut Vec<u8>, start: usize, fields: usize) {
    let mut header = [0_u8; 5];
    let mut room = &mut header[..];
    let _ = rmp::encode::write_map_len(&mut room, fields as u32);
    let len = 5 - room.len();
    out.splice(start..start, header[..len].iter().copied());
}

/// Appends one field's write as the pair `[tag, value]` that serde writes for it inside an
/// update, with the value nested as deep (so the same values are refused); `false` if the value
/// could not be encoded.
pub(crate) fn encode_write<T: Serialize>(out: &mut Vec<u8>, write: &Write<T>) -> bool {
    /// `MessagePack`'s marker of a two-element array.
    const PAIR: u8 = 0x92;
    let (tag, value) = write.stored_parts();
    // The tags are 0 and 1: a positive fixint is the byte itself, as `write_uint` writes it.
    out.extend_from_slice(&[PAIR, tag]);
    let left = Cell::new(MAX_DEPTH - WRITE_VALUE_DEPTH);
    let mut serializer = rmp_serde::Serializer::new(&mut *out).with_struct_map();
    value.serialize(Bounded { inner: &mut serializer, left: &left }).is_ok()
}

/// `value` as JSON, with nesting bounded as in [`encode`] (for values that leave a run as JSON:
/// interrupts, custom stream events, the event log).
pub(crate) fn to_json<T: Serialize + ?Sized>(value: &T) -> Result<serde_json::Value, String> {
    let left = Cell::new(MAX_DEPTH);
    value.serialize(Bounded { inner: serde_json::value::Serializer, left: &left }).map_err(|e| e.to_string())
}

/// A value as JSON for someone to look at (a stream event, a snapshot of a subgraph): one that
/// cannot be encoded shows why instead.
pub(crate) fn to_json_shown<T: Serialize + ?Sized>(value: &T) -> serde_json::Value {
    to_json(value).unwrap_or_else(|e| serde_json::Value::String(format!("unserializable value: {e}")))
}

/// Decodes a value from exactly `bytes` (trailing bytes are an error).
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    let mut rest = bytes;
    let mut deserializer = rmp_serde::Deserializer::new(&mut rest);
    deserializer.set_max_depth(MAX_DEPTH as usize);
    if let Ok(value) = T::deserialize(&mut deserializer) {
        drop(deserializer);
        return if rest.is_empty() {
            Ok(value)
        } else {
            Err(DecodeError::new(format!("{} unexpected byte(s) follow the value", rest.len())))
        };
    }
    // Rare: read it again, tracking the path, to say where it failed.
    let mut rest = bytes;
    let mut deserializer = rmp_serde::Deserializer::new(&mut rest);
    deserializer.set_max_depth(MAX_DEPTH as usize);
    match serde_path_to_error::deserialize::<_, T>(&mut deserializer) {
        Ok(_) => Err(DecodeError::new("it does not decode")),
        Err(error) => Err(DecodeError { path: path_of(error.path()), reason: reason_of(&error.into_inner()) }),
    }
}

/// A decoding error in words: what was found where the type expects something else, rather
/// than the `MessagePack` marker's name.
fn reason_of(error: &rmp_serde::decode::Error) -> String {
    use rmp::Marker;
    match error {
        rmp_serde::decode::Error::TypeMismatch(marker) => {
            let found = match marker {
                Marker::FixPos(_)
                | Marker::FixNeg(_)
                | Marker::U8
                | Marker::U16
                | Marker::U32
                | Marker::U64
                | Marker::I8
                | Marker::I16
                | Marker::I32
                | Marker::I64 => "an integer",
                Marker::F32 | Marker::F64 => "a float",
                Marker::Null => "nothing (nil)",
                Marker::True | Marker::False => "a boolean",
                Marker::FixStr(_) | Marker::Str8 | Marker::Str16 | Marker::Str32 => "a string",
                Marker::Bin8 | Marker::Bin16 | Marker::Bin32 => "bytes",
                Marker::FixArray(_) | Marker::Array16 | Marker::Array32 => "a list",
                Marker::FixMap(_) | Marker::Map16 | Marker::Map32 => "a map",
                _ => "a value of another type",
            };
            format!("invalid type: found {found} where the stored type expects something else")
        }
        other => other.to_string(),
    }
}

/// Drops a value a step could not store, on a thread with a large stack.
///
/// A value refused for nesting too deeply may be nested far deeper than the limit, and dropping
/// it recurses once per level: on a tokio worker's 2 MiB stack a `serde_json::Value` nested a
/// few thousand levels overflows in a debug build. The refused value is dropped where that
/// cannot happen; if no thread can be started it is leaked rather than crash the process.
pub(crate) fn drop_deep<T: Send + 'static>(value: T) {
    const STACK: usize = 256 << 20;
    let spawned =
        std::thread::Builder::new().name("graphwright-drop".into()).stack_size(STACK).spawn(move || drop(value));
    if let Ok(thread) = spawned {
        let _ = thread.join();
    } else {
        tracing::warn!("could not start a thread to drop a deeply nested value; it was leaked");
    }
}

/// `.` (the root) as empty, other paths as written.
fn path_of(path: &serde_path_to_error::Path) -> String {
    let text = path.to_string();
    if text == "." { String::new() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};
    use serde_json::{Value, json};

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Reading {
        value: f64,
        tags: Vec<String>,
    }

    fn round_trip<T: Serialize + DeserializeOwned>(value: &T) -> T {
        let mut bytes = Vec::new();
        encode(&mut bytes, value).unwrap();
        decode(&bytes).unwrap()
    }

    #[test]
    fn floats_that_json_cannot_hold_round_trip() {
        for value in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, f64::MIN_POSITIVE] {
            let back = round_trip(&Reading { value, tags: Vec::new() });
            assert_eq!(back.value.to_bits(), value.to_bits());
        }
    }

    fn nested(depth: usize) -> Value {
        let mut value = json!("leaf");
        for _ in 0..depth {
            value = json!([value]);
        }
        value
    }

    #[test]
    fn nesting_is_bounded_on_both_sides() {
        let deep = nested(200);
        assert_eq!(round_trip(&deep), deep);
        let mut bytes = Vec::new();
        let error = encode(&mut bytes, &nested(MAX_DEPTH as usize + 10)).unwrap_err();
        assert!(error.reason.contains("nested deeper than"), "{error:?}");
        assert!(error.path.starts_with("[0][0]"), "{error:?}");
        assert!(bytes.is_empty(), "a failed encode leaves nothing behind");

        // Bytes nested deeper than the limit (written by hand) are refused, not recursed into.
        let mut hostile = vec![0x91; 100_000];
        hostile.push(0xc0);
        let error = decode::<Value>(&hostile).unwrap_err();
        assert!(error.reason.contains("depth"), "{error:?}");
    }

    #[crate::state]
    struct Wide {
        #[reducer(add)]
        count: i64,
        name: String,
        #[reducer(append)]
        items: Vec<String>,
        maybe: Option<i64>,
        doc: Value,
        reading: Option<Reading>,
        r#type: u8,
        a_field_name_longer_than_thirty_one_bytes: bool,
    }

    /// The update's own encoder, alone.
    fn direct(update: &WideUpdate) -> Option<Vec<u8>> {
        use crate::state::Update;
        let mut bytes = Vec::new();
        update.encode_stored(&mut bytes).then_some(bytes)
    }

    #[test]
    fn an_update_encodes_to_the_bytes_serde_writes() {
        use crate::Overwrite;
        let updates = [
            WideUpdate::new(),
            WideUpdate::new().count(3),
            WideUpdate::new().count(Overwrite(-7)).items(vec!["a".into(), String::new()]),
            WideUpdate::new().name(String::from("n")).maybe(None).doc(json!({"k": [1, 2.5, null, "x"]})).r#type(200),
            WideUpdate::new()
                .reading(Some(Reading { value: f64::NAN, tags: vec!["t".into()] }))
                .a_field_name_longer_than_thirty_one_bytes(true)
                .items(Overwrite(Vec::new())),
            WideUpdate::from(Wide::default()),
        ];
        for update in &updates {
            let mut through_serde = Vec::new();
            encode(&mut through_serde, update).unwrap();
            assert_eq!(direct(update).as_deref(), Some(&through_serde[..]), "{update:?}");
            let mut stored = vec![0xc0];
            encode_update(&mut stored, update).unwrap();
            assert_eq!(stored[1..], through_serde[..]);
            let back: WideUpdate = decode(&through_serde).unwrap();
            assert_eq!(format!("{back:?}"), format!("{update:?}"));
        }
    }

    #[test]
    fn an_update_header_is_the_one_rmp_writes() {
        for fields in [0, 1, 15, 16, 255, 65_535, 65_536] {
            let mut expected = b"ab".to_vec();
            rmp::encode::write_map_len(&mut expected, fields as u32).unwrap();
            expected.extend_from_slice(b"fields");
            let mut out = b"abfields".to_vec();
            encode_update_header(&mut out, 2, fields);
            assert_eq!(out, expected, "{fields} fields");
        }
    }

    #[test]
    fn an_update_refuses_the_values_serde_refuses_and_names_them() {
        // Around the deepest value a field can hold, both ways agree on what is stored.
        for depth in MAX_DEPTH as usize - 6..MAX_DEPTH as usize {
            let update = WideUpdate::new().count(1).doc(nested(depth));
            let mut through_serde = Vec::new();
            let serde_result = encode(&mut through_serde, &update).map_err(|e| (e.path, e.reason));
            let mut stored = vec![0xc0];
            let result = encode_update(&mut stored, &update).map_err(|e| (e.path, e.reason));
            assert_eq!(result, serde_result, "depth {depth}");
            assert_eq!(direct(&update).is_some(), serde_result.is_ok(), "depth {depth}");
            if serde_result.is_ok() {
                assert_eq!(stored[1..], through_serde[..], "depth {depth}");
            } else {
                assert_eq!(stored, [0xc0], "a refused update leaves nothing behind");
                assert!(result.unwrap_err().0.starts_with("doc"), "the error names the field");
            }
        }
    }

    #[test]
    fn decoding_is_strict_and_names_the_field() {
        let mut bytes = Vec::new();
        encode(&mut bytes, &json!({"value": 1.5, "tags": ["a", 7]})).unwrap();
        let error = decode::<Reading>(&bytes).unwrap_err();
        assert_eq!(error.path, "tags[1]", "{error:?}");

        bytes.clear();
        encode(&mut bytes, &json!({"value": 1.5, "tags": [], "extra": true})).unwrap();
        assert!(decode::<Reading>(&bytes).unwrap_err().reason.contains("unknown field `extra`"));

        bytes.clear();
        encode(&mut bytes, &json!({"value": 1.5})).unwrap();
        assert!(decode::<Reading>(&bytes).unwrap_err().reason.contains("missing field `tags`"));

        bytes.clear();
        encode(&mut bytes, &Reading { value: 1.0, tags: Vec::new() }).unwrap();
        bytes.push(0xc0);
        assert!(decode::<Reading>(&bytes).unwrap_err().reason.contains("unexpected byte"));
    }
}
