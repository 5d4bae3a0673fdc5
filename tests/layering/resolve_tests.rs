//! The resolver on small crates, so that a mistake in it cannot make the check pass unseen.

use super::model::Graph;

fn names(graph: &Graph, from: &str, to: &str) -> Vec<String> {
    graph.edge(from, to).unwrap_or_default()
}

#[test]
fn a_grouped_use_tree_is_an_edge_per_name() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "use crate::{b::{Thing, other}, a as _};"),
        ("b.rs", "pub struct Thing; pub fn other() {}"),
    ]);
    assert_eq!(names(&graph, "a.rs", "b.rs"), ["Thing", "other"]);
}

#[test]
fn a_path_written_in_code_is_an_edge() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; mod b;"),
        ("a.rs", "fn f() -> u32 { let x: crate::b::Usage = crate::b::Usage::new(); super::b::count(&x) }"),
        ("b.rs", "pub struct Usage; pub fn count(_: &Usage) -> u32 { 0 }"),
    ]);
    assert_eq!(names(&graph, "a.rs", "b.rs"), ["Usage", "count"]);
}

#[test]
fn super_in_a_mod_rs_is_the_parent_and_in_a_child_file_is_the_mod_rs() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod m; pub struct Top;"),
        ("m/mod.rs", "mod child; use super::Top; pub struct Middle;"),
        ("m/child.rs", "use super::Middle;"),
    ]);
    assert_eq!(names(&graph, "m/mod.rs", "lib.rs"), ["Top"]);
    assert_eq!(names(&graph, "m/child.rs", "m/mod.rs"), ["Middle"]);
    assert!(graph.edge("m/child.rs", "lib.rs").is_none());
}

#[test]
fn a_re_export_leads_to_the_file_that_defines_the_name() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod m; mod user; pub use m::Thing;"),
        ("m/mod.rs", "mod inner; pub(crate) use inner::Thing;"),
        ("m/inner.rs", "pub struct Thing;"),
        ("user.rs", "use crate::m::Thing; fn f(_: crate::Thing) {}"),
    ]);
    assert_eq!(names(&graph, "user.rs", "m/inner.rs"), ["Thing"]);
    assert!(graph.edge("user.rs", "m/mod.rs").is_none());
    assert!(graph.edge("user.rs", "lib.rs").is_none());
    assert_eq!(names(&graph, "m/mod.rs", "m/inner.rs"), ["Thing"]);
}

#[test]
fn test_modules_doc_comments_and_strings_are_not_read() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; mod b;"),
        (
            "a.rs",
            "/// Uses [`crate::b::Thing`].\nfn f() -> &'static str { \"crate::b::Thing\" }\n\
             #[cfg(test)] mod tests { use crate::b::Thing; }\n#[cfg(all(test, unix))] use crate::b::Thing;",
        ),
        ("b.rs", "pub struct Thing;"),
    ]);
    assert!(graph.edge("a.rs", "b.rs").is_none());
}

#[test]
fn macro_arguments_path_attributes_and_macro_rules_are_read() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; #[path = \"elsewhere/b.rs\"] mod b; mod c;"),
        ("a.rs", "fn f() { println!(\"{}\", crate::b::NAME); quote::quote!(#x crate::c::Other); make!(); }"),
        ("elsewhere/b.rs", "pub const NAME: &str = \"\"; macro_rules! make { () => {} }"),
        ("c.rs", "pub struct Other;"),
    ]);
    assert_eq!(names(&graph, "a.rs", "elsewhere/b.rs"), ["NAME", "make!"]);
    assert_eq!(names(&graph, "a.rs", "c.rs"), ["Other"]);
}

#[test]
fn a_module_import_is_no_edge_until_a_path_goes_through_it() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; mod state; pub fn state() {}"),
        ("a.rs", "use crate::state; fn f(state: u8) { state::expand(state); }"),
        ("state.rs", "pub fn expand(_: u8) {}"),
    ]);
    assert_eq!(names(&graph, "a.rs", "state.rs"), ["expand"]);
    assert!(graph.edge("a.rs", "lib.rs").is_none());
}

#[test]
fn files_that_import_each_other_around_a_loop_are_one_cycle() {
    let graph = Graph::from_sources(&[
        ("lib.rs", "mod a; mod b; mod c; mod leaf;"),
        ("a.rs", "use crate::b::B; pub struct A;"),
        ("b.rs", "use crate::c::C; use crate::leaf::L; pub struct B;"),
        ("c.rs", "use crate::a::A; pub struct C;"),
        ("leaf.rs", "pub struct L;"),
    ]);
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].key(), "a.rs b.rs c.rs");
    let around: Vec<String> =
        cycles[0].shortest_loop().into_iter().map(|(f, t, n)| format!("{f} -> {t}: {n}")).collect();
    assert_eq!(around, ["a.rs -> b.rs: B", "b.rs -> c.rs: C", "c.rs -> a.rs: A"]);
}
