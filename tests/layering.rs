//! Imports run one way between the files of each crate: no file imports another that imports
//! it back, directly or around a loop (docs/decisions.md, "Layering check").
//!
//! The check reads every crate's sources with `syn` (no build, no rust-analyzer), works out
//! which file each `use` and each path written in code reaches, and finds the loops as the
//! strongly connected components of that graph. Loops known today are listed in
//! `tests/layering_allowed.txt`; the test fails on a loop not listed, and on a listed loop that
//! no longer exists, so the list only shrinks.

#[path = "layering/model.rs"]
mod model;
#[path = "layering/report.rs"]
mod report;

use std::collections::BTreeSet;
use std::path::Path;

/// The crates whose files must not import each other around a loop.
const CRATES: &[&str] = &["runtime", "server", "macros", "wiring"];

#[test]
fn no_import_loops_beyond_the_allowlist() {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the runtime crate sits in the workspace");
    let allowed_text = std::fs::read_to_string(workspace.join("tests/layering_allowed.txt")).unwrap_or_default();
    let allowed: BTreeSet<String> = allowed_text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(ToOwned::to_owned)
        .collect();
    let mut found = Vec::new();
    for name in CRATES {
        let graph = model::Graph::load(&workspace.join(name).join("src"), &format!("{name}/src/"))
            .unwrap_or_else(|e| panic!("reading {name}/src: {e}"));
        found.extend(graph.cycles());
    }
    let failure = report::compare(&found, &allowed);
    if std::env::var_os("LAYERING_PRINT").is_some() {
        for cycle in &found {
            println!("{}", cycle.key());
        }
    }
    assert!(failure.is_none(), "{}", failure.unwrap_or_default());
}

#[cfg(test)]
#[path = "layering/resolve_tests.rs"]
mod resolve_tests;
