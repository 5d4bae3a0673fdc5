//! `#[state]` on its own, outside any `#[graph]`: the update type, reducers and `Overwrite`.

use graphwright::prelude::*;

/// A counter with a log.
#[state]
#[derive(PartialEq)]
pub struct Counter {
    #[reducer(add)]
    pub count: u64,
    #[reducer(append)]
    pub log: Vec<String>,
    pub label: String,
}

/// A state whose fields are private.
#[state]
struct Hidden {
    value: u8,
}

fn main() {
    let mut counter = Counter::default();
    counter.apply(CounterUpdate::new().count(2).log(vec!["a".into()]).label("first".to_owned()));
    counter.apply(CounterUpdate::new().count(3).log(vec!["b".into()]));
    assert_eq!(counter, Counter { count: 5, log: vec!["a".into(), "b".into()], label: "first".into() });
    counter.apply(CounterUpdate::new().count(Overwrite(1)));
    assert_eq!(counter.count, 1);
    assert_eq!(Counter::FIELDS, ["count", "log", "label"]);
    assert!(CounterUpdate::new().is_empty());

    let update: CounterUpdate = counter.clone().into();
    assert!(!update.is_empty());

    let mut hidden = Hidden::default();
    hidden.apply(HiddenUpdate::new().value(7));
    assert_eq!(hidden.value, 7);

    let json = serde_json::to_string(&counter).unwrap();
    let back: Counter = serde_json::from_str(&json).unwrap();
    assert_eq!(back, counter);
}
