//! `wide_state`: 100 fields of four kinds, 10 nodes in a loop, 10 laps (WORKLOADS.md §3).
//!
//! Field `fi` has kind `i % 4`: 0 an `add` counter, 1 a last-value counter, 2 an `append`ed
//! list of strings, 3 a last-value string `"v<n>"`. Node `nk` writes `f{10k}..f{10k+9}`.

use graphwright::prelude::*;
use serde_json::{Value, json};

/// What node writes to a field of kind 0..3, given the field's current value.
fn next_count(v: i64) -> i64 {
    v + 1
}

fn next_item(items: &[String]) -> Vec<String> {
    vec![format!("item-{}", items.len())]
}

fn next_version(v: &str) -> String {
    let n: i64 = v.get(1..).and_then(|d| d.parse().ok()).unwrap_or(-1);
    format!("v{}", n + 1)
}

// The module is the workload's graph, named as the workload.
#[allow(clippy::module_inception)]
#[graph]
pub mod wide {
    use super::{next_count, next_item, next_version};

    /// 100 fields, `f00`..`f99`.
    #[state]
    pub struct State {
        #[reducer(add)]
        pub f00: i64,
        pub f01: i64,
        #[reducer(append)]
        pub f02: Vec<String>,
        pub f03: String,
        #[reducer(add)]
        pub f04: i64,
        pub f05: i64,
        #[reducer(append)]
        pub f06: Vec<String>,
        pub f07: String,
        #[reducer(add)]
        pub f08: i64,
        pub f09: i64,
        #[reducer(append)]
        pub f10: Vec<String>,
        pub f11: String,
        #[reducer(add)]
        pub f12: i64,
        pub f13: i64,
        #[reducer(append)]
        pub f14: Vec<String>,
        pub f15: String,
        #[reducer(add)]
        pub f16: i64,
        pub f17: i64,
        #[reducer(append)]
        pub f18: Vec<String>,
        pub f19: String,
        #[reducer(add)]
        pub f20: i64,
        pub f21: i64,
        #[reducer(append)]
        pub f22: Vec<String>,
        pub f23: String,
        #[reducer(add)]
        pub f24: i64,
        pub f25: i64,
        #[reducer(append)]
        pub f26: Vec<String>,
        pub f27: String,
        #[reducer(add)]
        pub f28: i64,
        pub f29: i64,
        #[reducer(append)]
        pub f30: Vec<String>,
        pub f31: String,
        #[reducer(add)]
        pub f32: i64,
        pub f33: i64,
        #[reducer(append)]
        pub f34: Vec<String>,
        pub f35: String,
        #[reducer(add)]
        pub f36: i64,
        pub f37: i64,
        #[reducer(append)]
        pub f38: Vec<String>,
        pub f39: String,
        #[reducer(add)]
        pub f40: i64,
        pub f41: i64,
        #[reducer(append)]
        pub f42: Vec<String>,
        pub f43: String,
        #[reducer(add)]
        pub f44: i64,
        pub f45: i64,
        #[reducer(append)]
        pub f46: Vec<String>,
        pub f47: String,
        #[reducer(add)]
        pub f48: i64,
        pub f49: i64,
        #[reducer(append)]
        pub f50: Vec<String>,
        pub f51: String,
        #[reducer(add)]
        pub f52: i64,
        pub f53: i64,
        #[reducer(append)]
        pub f54: Vec<String>,
        pub f55: String,
        #[reducer(add)]
        pub f56: i64,
        pub f57: i64,
        #[reducer(append)]
        pub f58: Vec<String>,
        pub f59: String,
        #[reducer(add)]
        pub f60: i64,
        pub f61: i64,
        #[reducer(append)]
        pub f62: Vec<String>,
        pub f63: String,
        #[reducer(add)]
        pub f64: i64,
        pub f65: i64,
        #[reducer(append)]
        pub f66: Vec<String>,
        pub f67: String,
        #[reducer(add)]
        pub f68: i64,
        pub f69: i64,
        #[reducer(append)]
        pub f70: Vec<String>,
        pub f71: String,
        #[reducer(add)]
        pub f72: i64,
        pub f73: i64,
        #[reducer(append)]
        pub f74: Vec<String>,
        pub f75: String,
        #[reducer(add)]
        pub f76: i64,
        pub f77: i64,
        #[reducer(append)]
        pub f78: Vec<String>,
        pub f79: String,
        #[reducer(add)]
        pub f80: i64,
        pub f81: i64,
        #[reducer(append)]
        pub f82: Vec<String>,
        pub f83: String,
        #[reducer(add)]
        pub f84: i64,
        pub f85: i64,
        #[reducer(append)]
        pub f86: Vec<String>,
        pub f87: String,
        #[reducer(add)]
        pub f88: i64,
        pub f89: i64,
        #[reducer(append)]
        pub f90: Vec<String>,
        pub f91: String,
        #[reducer(add)]
        pub f92: i64,
        pub f93: i64,
        #[reducer(append)]
        pub f94: Vec<String>,
        pub f95: String,
        #[reducer(add)]
        pub f96: i64,
        pub f97: i64,
        #[reducer(append)]
        pub f98: Vec<String>,
        pub f99: String,
    }

    #[node(entry, next = n1)]
    fn n0(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f00(1)
            .f01(next_count(s.f01))
            .f02(next_item(&s.f02))
            .f03(next_version(&s.f03))
            .f04(1)
            .f05(next_count(s.f05))
            .f06(next_item(&s.f06))
            .f07(next_version(&s.f07))
            .f08(1)
            .f09(next_count(s.f09))
    }

    #[node(next = n2)]
    fn n1(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f10(next_item(&s.f10))
            .f11(next_version(&s.f11))
            .f12(1)
            .f13(next_count(s.f13))
            .f14(next_item(&s.f14))
            .f15(next_version(&s.f15))
            .f16(1)
            .f17(next_count(s.f17))
            .f18(next_item(&s.f18))
            .f19(next_version(&s.f19))
    }

    #[node(next = n3)]
    fn n2(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f20(1)
            .f21(next_count(s.f21))
            .f22(next_item(&s.f22))
            .f23(next_version(&s.f23))
            .f24(1)
            .f25(next_count(s.f25))
            .f26(next_item(&s.f26))
            .f27(next_version(&s.f27))
            .f28(1)
            .f29(next_count(s.f29))
    }

    #[node(next = n4)]
    fn n3(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f30(next_item(&s.f30))
            .f31(next_version(&s.f31))
            .f32(1)
            .f33(next_count(s.f33))
            .f34(next_item(&s.f34))
            .f35(next_version(&s.f35))
            .f36(1)
            .f37(next_count(s.f37))
            .f38(next_item(&s.f38))
            .f39(next_version(&s.f39))
    }

    #[node(next = n5)]
    fn n4(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f40(1)
            .f41(next_count(s.f41))
            .f42(next_item(&s.f42))
            .f43(next_version(&s.f43))
            .f44(1)
            .f45(next_count(s.f45))
            .f46(next_item(&s.f46))
            .f47(next_version(&s.f47))
            .f48(1)
            .f49(next_count(s.f49))
    }

    #[node(next = n6)]
    fn n5(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f50(next_item(&s.f50))
            .f51(next_version(&s.f51))
            .f52(1)
            .f53(next_count(s.f53))
            .f54(next_item(&s.f54))
            .f55(next_version(&s.f55))
            .f56(1)
            .f57(next_count(s.f57))
            .f58(next_item(&s.f58))
            .f59(next_version(&s.f59))
    }

    #[node(next = n7)]
    fn n6(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f60(1)
            .f61(next_count(s.f61))
            .f62(next_item(&s.f62))
            .f63(next_version(&s.f63))
            .f64(1)
            .f65(next_count(s.f65))
            .f66(next_item(&s.f66))
            .f67(next_version(&s.f67))
            .f68(1)
            .f69(next_count(s.f69))
    }

    #[node(next = n8)]
    fn n7(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f70(next_item(&s.f70))
            .f71(next_version(&s.f71))
            .f72(1)
            .f73(next_count(s.f73))
            .f74(next_item(&s.f74))
            .f75(next_version(&s.f75))
            .f76(1)
            .f77(next_count(s.f77))
            .f78(next_item(&s.f78))
            .f79(next_version(&s.f79))
    }

    #[node(next = n9)]
    fn n8(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f80(1)
            .f81(next_count(s.f81))
            .f82(next_item(&s.f82))
            .f83(next_version(&s.f83))
            .f84(1)
            .f85(next_count(s.f85))
            .f86(next_item(&s.f86))
            .f87(next_version(&s.f87))
            .f88(1)
            .f89(next_count(s.f89))
    }

    #[node(next = n0 | END, route = lap_done)]
    fn n9(s: &State) -> StateUpdate {
        StateUpdate::new()
            .f90(next_item(&s.f90))
            .f91(next_version(&s.f91))
            .f92(1)
            .f93(next_count(s.f93))
            .f94(next_item(&s.f94))
            .f95(next_version(&s.f95))
            .f96(1)
            .f97(next_count(s.f97))
            .f98(next_item(&s.f98))
            .f99(next_version(&s.f99))
    }

    /// Ten laps: `f00` grows by one per lap.
    fn lap_done(s: &State) -> N9Next {
        if s.f00 >= 10 { N9Next::End } else { N9Next::N0 }
    }
}

/// The input: every field at its initial value (0, 0, `[]`, `"v0"` by kind).
pub fn input() -> wide::State {
    wide::State {
        f03: "v0".to_owned(),
        f07: "v0".to_owned(),
        f11: "v0".to_owned(),
        f15: "v0".to_owned(),
        f19: "v0".to_owned(),
        f23: "v0".to_owned(),
        f27: "v0".to_owned(),
        f31: "v0".to_owned(),
        f35: "v0".to_owned(),
        f39: "v0".to_owned(),
        f43: "v0".to_owned(),
        f47: "v0".to_owned(),
        f51: "v0".to_owned(),
        f55: "v0".to_owned(),
        f59: "v0".to_owned(),
        f63: "v0".to_owned(),
        f67: "v0".to_owned(),
        f71: "v0".to_owned(),
        f75: "v0".to_owned(),
        f79: "v0".to_owned(),
        f83: "v0".to_owned(),
        f87: "v0".to_owned(),
        f91: "v0".to_owned(),
        f95: "v0".to_owned(),
        f99: "v0".to_owned(),
        ..wide::State::default()
    }
}

/// Checks the final state of WORKLOADS.md §3; returns it as JSON (abridged per kind).
// One check per field kind over 100 fields, written out so a mismatch names the field.
#[allow(clippy::too_many_lines)]
pub fn check(s: &wide::State) -> Result<Value, String> {
    let items: Vec<String> = (0..10).map(|i| format!("item-{i}")).collect();
    let ints = [
        ("f00", s.f00),
        ("f01", s.f01),
        ("f04", s.f04),
        ("f05", s.f05),
        ("f08", s.f08),
        ("f09", s.f09),
        ("f12", s.f12),
        ("f13", s.f13),
        ("f16", s.f16),
        ("f17", s.f17),
        ("f20", s.f20),
        ("f21", s.f21),
        ("f24", s.f24),
        ("f25", s.f25),
        ("f28", s.f28),
        ("f29", s.f29),
        ("f32", s.f32),
        ("f33", s.f33),
        ("f36", s.f36),
        ("f37", s.f37),
        ("f40", s.f40),
        ("f41", s.f41),
        ("f44", s.f44),
        ("f45", s.f45),
        ("f48", s.f48),
        ("f49", s.f49),
        ("f52", s.f52),
        ("f53", s.f53),
        ("f56", s.f56),
        ("f57", s.f57),
        ("f60", s.f60),
        ("f61", s.f61),
        ("f64", s.f64),
        ("f65", s.f65),
        ("f68", s.f68),
        ("f69", s.f69),
        ("f72", s.f72),
        ("f73", s.f73),
        ("f76", s.f76),
        ("f77", s.f77),
        ("f80", s.f80),
        ("f81", s.f81),
        ("f84", s.f84),
        ("f85", s.f85),
        ("f88", s.f88),
        ("f89", s.f89),
        ("f92", s.f92),
        ("f93", s.f93),
        ("f96", s.f96),
        ("f97", s.f97),
    ];
    let lists = [
        ("f02", &s.f02),
        ("f06", &s.f06),
        ("f10", &s.f10),
        ("f14", &s.f14),
        ("f18", &s.f18),
        ("f22", &s.f22),
        ("f26", &s.f26),
        ("f30", &s.f30),
        ("f34", &s.f34),
        ("f38", &s.f38),
        ("f42", &s.f42),
        ("f46", &s.f46),
        ("f50", &s.f50),
        ("f54", &s.f54),
        ("f58", &s.f58),
        ("f62", &s.f62),
        ("f66", &s.f66),
        ("f70", &s.f70),
        ("f74", &s.f74),
        ("f78", &s.f78),
        ("f82", &s.f82),
        ("f86", &s.f86),
        ("f90", &s.f90),
        ("f94", &s.f94),
        ("f98", &s.f98),
    ];
    let strings = [
        ("f03", s.f03.as_str()),
        ("f07", s.f07.as_str()),
        ("f11", s.f11.as_str()),
        ("f15", s.f15.as_str()),
        ("f19", s.f19.as_str()),
        ("f23", s.f23.as_str()),
        ("f27", s.f27.as_str()),
        ("f31", s.f31.as_str()),
        ("f35", s.f35.as_str()),
        ("f39", s.f39.as_str()),
        ("f43", s.f43.as_str()),
        ("f47", s.f47.as_str()),
        ("f51", s.f51.as_str()),
        ("f55", s.f55.as_str()),
        ("f59", s.f59.as_str()),
        ("f63", s.f63.as_str()),
        ("f67", s.f67.as_str()),
        ("f71", s.f71.as_str()),
        ("f75", s.f75.as_str()),
        ("f79", s.f79.as_str()),
        ("f83", s.f83.as_str()),
        ("f87", s.f87.as_str()),
        ("f91", s.f91.as_str()),
        ("f95", s.f95.as_str()),
        ("f99", s.f99.as_str()),
    ];
    for (name, v) in ints {
        if v != 10 {
            return Err(format!("{name} = {v}, expected 10"));
        }
    }
    for (name, v) in lists {
        if *v != items {
            return Err(format!("{name} = {v:?}, expected item-0..item-9"));
        }
    }
    for (name, v) in strings {
        if v != "v10" {
            return Err(format!("{name} = {v:?}, expected \"v10\""));
        }
    }
    Ok(json!({"f00": s.f00, "f01": s.f01, "f02": s.f02, "f03": s.f03, "f99": s.f99, "fields_checked": 100}))
}
