//! Compares the loops found with the allowlist, and says what to do about each difference.

use super::model::Cycle;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The failure message, or `None` when the loops found are exactly the listed ones.
pub fn compare(found: &[Cycle], allowed: &BTreeSet<String>) -> Option<String> {
    let found_keys: BTreeSet<String> = found.iter().map(Cycle::key).collect();
    let mut out = String::new();
    for cycle in found.iter().filter(|c| !allowed.contains(&c.key())) {
        let _ = writeln!(out, "import loop between {} files:", cycle.files.len());
        for (from, to, names) in cycle.shortest_loop() {
            let _ = writeln!(out, "    {from} -> {to}: {names}");
        }
        if cycle.files.len() > 2 {
            let _ = writeln!(out, "  every import inside this loop:");
            for (from, to, names) in &cycle.edges {
                let _ = writeln!(out, "    {from} -> {to}: {names}");
            }
        }
        let _ = writeln!(
            out,
            "  break it: move what the lower file takes from the upper one into a leaf module both import,\n  \
             or hand the lower file a trait or a value instead of importing the upper one\n  \
             (a loop that is known and being worked on goes in tests/layering_allowed.txt as the line:\n  {})\n",
            cycle.key()
        );
    }
    for gone in allowed.iter().filter(|key| !found_keys.contains(*key)) {
        let _ = writeln!(
            out,
            "tests/layering_allowed.txt lists a loop that no longer exists:\n    {gone}\n  \
             remove the line (and add the smaller loops that remain, if any are reported above)\n"
        );
    }
    (!out.is_empty()).then_some(out)
}
