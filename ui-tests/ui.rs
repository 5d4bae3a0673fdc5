//! The compile-time tests: every `ui-tests/fail/*.rs` must fail to compile with exactly the
//! reviewed `.stderr` beside it, and every `ui-tests/pass/*.rs` must compile and run.
//!
//! Refresh the snapshots with `TRYBUILD=overwrite cargo test -p graphwright-ui-tests --test ui`, then
//! read every changed `.stderr`: the caret must sit under the token the user wrote.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.pass("pass/*.rs");
    t.compile_fail("fail/*.rs");
}
