//! The compile-time tests of graphwright's macros: `ui.rs` runs every program of `pass/` (each
//! must compile and run) and of `fail/` (each must fail to compile with the reviewed `.stderr`
//! beside it). This library is empty; it only gives the tests a crate of their own, with the
//! few dependencies the programs use.
