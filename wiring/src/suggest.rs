//! "Did you mean" suggestions for misspelt names.

/// Names a node may not take: they stand for the virtual start and end of every graph.
pub const RESERVED: &[&str] = &["START", "END", "__start__", "__end__"];

/// The candidate closest to `name`, when one is close enough to be a likely misspelling.
///
/// Closeness is the optimal-string-alignment distance (a transposition counts once), allowed
/// to grow with the length of the name: one edit for short names, a third of the length for
/// long ones. Case differences alone always count as close.
///
/// ```
/// assert_eq!(graphwright_wiring::closest("planer", ["planner", "tools"]), Some("planner"));
/// assert_eq!(graphwright_wiring::closest("xyz", ["planner", "tools"]), None);
/// ```
pub fn closest<'c>(name: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    let length = name.chars().count();
    // A suggestion that rewrites every character is no suggestion.
    let budget = (length / 3).max(1).min(length.saturating_sub(1));
    candidates
        .into_iter()
        .filter(|candidate| *candidate != name)
        // The distance is at least the difference in length: skip the work when that is over
        // budget (a megabyte-long name from a model costs nothing then).
        .filter(|candidate| candidate.chars().count().abs_diff(length) <= budget)
        .map(|candidate| {
            let distance = if candidate.eq_ignore_ascii_case(name) { 0 } else { strsim::osa_distance(name, candidate) };
            (distance, candidate)
        })
        .filter(|(distance, _)| *distance <= budget)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggests_transpositions_and_missing_letters() {
        let nodes = ["planner", "worker", "generator"];
        assert_eq!(closest("planer", nodes), Some("planner"));
        assert_eq!(closest("wrker", nodes), Some("worker"));
        assert_eq!(closest("genrator", nodes), Some("generator"));
        assert_eq!(closest("Planner", nodes), Some("planner"));
    }

    #[test]
    fn stays_silent_when_nothing_is_close() {
        assert_eq!(closest("summarizer", ["planner", "worker"]), None);
        assert_eq!(closest("a", ["planner"]), None);
        assert_eq!(closest("b", ["a"]), None);
    }
}
