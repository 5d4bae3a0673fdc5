//! Namespaces and keys as the stores keep them: checked, joined into one string and split
//! back, and the key ranges that hold a namespace prefix.

use super::error::StoreError;
use super::item::SEPARATOR;
use std::collections::BTreeSet;
use std::ops::Bound;
/// Checks the labels of a namespace or prefix; `whole` requires at least one.
fn check_labels(labels: &[&str], whole: bool) -> Result<(), StoreError> {
    let invalid = |reason: String| StoreError::InvalidNamespace {
        namespace: labels.iter().map(|l| (*l).to_owned()).collect(),
        reason,
    };
    if whole && labels.is_empty() {
        return Err(invalid(
            "it has no labels; an item needs a namespace of at least one label, such as [\"users\", user_id]".into(),
        ));
    }
    for (index, label) in labels.iter().enumerate() {
        if label.is_empty() {
            return Err(invalid(format!("label {index} is empty; every label needs at least one character")));
        }
        if label.contains(SEPARATOR) {
            return Err(invalid(format!(
                "label {index} contains U+001F, the separator the store joins labels with; remove it from the label"
            )));
        }
    }
    Ok(())
}

/// The stored form of a namespace: its labels joined by [`SEPARATOR`].
pub(crate) fn encode_namespace(namespace: &[&str]) -> Result<String, StoreError> {
    check_labels(namespace, true)?;
    Ok(namespace.join(&SEPARATOR.to_string()))
}

/// The stored form of a prefix; empty for the empty prefix (which matches everything).
pub(crate) fn encode_prefix(prefix: &[&str]) -> Result<String, StoreError> {
    check_labels(prefix, false)?;
    Ok(prefix.join(&SEPARATOR.to_string()))
}

/// Checks a key: non-empty and without [`SEPARATOR`].
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    let invalid = |reason: &str| Err(StoreError::InvalidKey { key: key.to_owned(), reason: reason.to_owned() });
    if key.is_empty() {
        return invalid("it is empty; every key needs at least one character");
    }
    if key.contains(SEPARATOR) {
        return invalid("it contains U+001F, the separator the store reserves; remove it from the key");
    }
    Ok(())
}

/// The labels of a stored namespace; `None` when it is not a valid namespace.
pub(crate) fn decode_namespace(encoded: &str) -> Option<Vec<String>> {
    let labels: Vec<String> = encoded.split(SEPARATOR).map(str::to_owned).collect();
    labels.iter().all(|l| !l.is_empty()).then_some(labels)
}

/// Whether the stored namespace `encoded` lies under the stored prefix `prefix`.
pub(crate) fn under(encoded: &str, prefix: &str) -> bool {
    prefix.is_empty() || encoded.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(SEPARATOR))
}

/// An item's place: its stored namespace and its key.
pub(crate) type Address = (String, String);

/// A range of [`Address`]es.
pub(crate) type AddressRange = (Bound<Address>, Bound<Address>);

/// The ranges of (stored namespace, key) pairs whose namespace lies under the stored prefix
/// `prefix`, in a map ordered by them: the namespace itself, then those starting with it and
/// [`SEPARATOR`]. Walking the ranges finds them without reading each namespace's text.
pub(crate) fn prefix_ranges(prefix: &str) -> Vec<AddressRange> {
    if prefix.is_empty() {
        return vec![(Bound::Unbounded, Bound::Unbounded)];
    }
    let from = |namespace: String| Bound::Included((namespace, String::new()));
    let to = |namespace: String| Bound::Excluded((namespace, String::new()));
    vec![
        // Keys are never empty, so (namespace + U+0000, "") comes after every key of the namespace.
        (from(prefix.to_owned()), to(format!("{prefix}\u{0}"))),
        (from(format!("{prefix}{SEPARATOR}")), to(format!("{prefix}\u{20}"))),
    ]
}

/// Checks `max_depth` for `list_namespaces`.
pub(crate) fn check_depth(max_depth: Option<usize>) -> Result<(), StoreError> {
    if max_depth == Some(0) {
        return Err(StoreError::InvalidQuery {
            reason: "max_depth is 0, which would cut every namespace to nothing; pass Some(1) or more, or None".into(),
        });
    }
    Ok(())
}

/// The distinct namespaces of `encoded`, each cut to `max_depth` labels, sorted.
pub(crate) fn cut_namespaces<'a>(
    encoded: impl IntoIterator<Item = &'a str>,
    max_depth: Option<usize>,
) -> Vec<Vec<String>> {
    let mut seen = BTreeSet::new();
    for namespace in encoded {
        let cut = match max_depth {
            Some(depth) => namespace.split(SEPARATOR).take(depth).collect::<Vec<_>>().join(&SEPARATOR.to_string()),
            None => namespace.to_owned(),
        };
        seen.insert(cut);
    }
    seen.into_iter().map(|n| n.split(SEPARATOR).map(str::to_owned).collect()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn prefix_ranges_hold_the_namespace_and_those_under_it_only() {
        let namespaces = ["a", "a\u{1f}b", "a\u{1f}b\u{1f}c", "a\u{5}", "a\u{0}", "ab", "b", "\u{1f}a"];
        let map: BTreeMap<Address, u8> = namespaces.iter().map(|n| (((*n).to_owned(), "k".to_owned()), 0)).collect();
        let found = |prefix: &str| -> Vec<&str> {
            prefix_ranges(prefix).into_iter().flat_map(|range| map.range(range)).map(|((n, _), _)| n.as_str()).collect()
        };
        assert_eq!(found("a"), ["a", "a\u{1f}b", "a\u{1f}b\u{1f}c"]);
        assert_eq!(found("a\u{1f}b"), ["a\u{1f}b", "a\u{1f}b\u{1f}c"]);
        assert_eq!(found("").len(), namespaces.len());
        for prefix in ["a", "a\u{1f}b", "b", "ab"] {
            let by_text: Vec<&str> = map.keys().map(|(n, _)| n.as_str()).filter(|n| under(n, prefix)).collect();
            assert_eq!(found(prefix), by_text, "{prefix:?}");
        }
    }
}
