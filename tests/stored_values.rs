//! Every value a state can hold reads back equal from a real store (SQLite file, PostgreSQL
//! server): NaN and infinities, `-0.0`, NUL characters, maps with integer keys, a JSON value
//! nested 200 levels deep, `None` written over `Some`. A value nested deeper than a checkpoint
//! stores fails its step with a typed error naming the node and the field, stores nothing of the
//! step, and overflows no stack, in debug builds too.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use graphwright::checkpoint::{Checkpointer, ListFilter, SqliteSaver};
use graphwright::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A JSON value nested `depth` arrays deep, built without recursion.
fn nested(depth: usize) -> Value {
    let mut value = json!("leaf");
    for _ in 0..depth {
        value = Value::Array(vec![value]);
    }
    value
}

#[graph]
mod odd {
    use super::*;

    #[state]
    pub struct State {
        pub reading: f64,
        #[reducer(append)]
        pub readings: Vec<f64>,
        pub note: String,
        pub doc: Value,
        pub by_id: BTreeMap<u32, String>,
        pub maybe: Option<String>,
        #[reducer(add)]
        pub total: f64,
    }

    #[node(entry, next = ask)]
    fn measure(state: &State) -> StateUpdate {
        StateUpdate::new()
            .reading(f64::NAN)
            .readings(vec![f64::INFINITY, f64::NEG_INFINITY, -0.0, f64::NAN])
            .note(format!("{}\u{0}after a NUL", state.note))
            .doc(super::nested(200))
            .by_id(BTreeMap::from([(7, "seven".to_owned()), (u32::MAX, "max".to_owned())]))
            .maybe(None)
            .total(f64::INFINITY)
    }

    #[node(next = END)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answer: f64 = rt.interrupt(json!({"question": "a number?"}))?;
        Ok(StateUpdate::new().readings(vec![answer]).total(-1.0))
    }
}

/// Compares floats by their bits, so NaN equals NaN and -0.0 differs from 0.0.
fn bits(values: &[f64]) -> Vec<u64> {
    values.iter().map(|v| v.to_bits()).collect()
}

fn check_measured(state: &odd::State) {
    assert!(state.reading.is_nan());
    assert_eq!(bits(&state.readings[..4]), bits(&[f64::INFINITY, f64::NEG_INFINITY, -0.0, f64::NAN]));
    assert_eq!(state.note, "start\u{0}after a NUL");
    assert_eq!(state.doc, nested(200));
    assert_eq!(state.by_id, BTreeMap::from([(7, "seven".to_owned()), (u32::MAX, "max".to_owned())]));
    assert_eq!(state.maybe, None, "a write of None over Some stays a write");
    assert_eq!(state.total.to_bits(), f64::INFINITY.to_bits());
}

async fn round_trips(saver: Arc<dyn Checkpointer>) {
    let app = odd::graph().shared_checkpointer(Arc::clone(&saver)).compile().unwrap();
    let cfg = RunConfig::thread("odd").durability(graphwright::Durability::Sync);
    let input = odd::State { note: "start".into(), maybe: Some("was set".into()), ..odd::State::default() };
    let paused = app.invoke(input, &cfg).await.unwrap();
    check_measured(&paused.state);
    check_measured(&app.get_state(&cfg).await.unwrap().unwrap().state);
    for snapshot in app.state_history(&cfg).await.unwrap() {
        if snapshot.next == ["ask"] {
            check_measured(&snapshot.state);
        }
    }
    let done = app.resume(&cfg, f64::MAX).await.unwrap();
    assert_eq!(done.state.readings.last().map(|v| v.to_bits()), Some(f64::MAX.to_bits()));
    assert!(done.state.total.is_infinite(), "inf + -1");
    let latest = app.get_state(&cfg).await.unwrap().unwrap();
    check_measured(&latest.state);
    assert_eq!(latest.state.readings.len(), 5);

    // Deeper than a checkpoint stores: the input is refused, with the field, and nothing stored.
    let before = saver.list("odd", &ListFilter::default()).await.unwrap().len();
    let deep = odd::StateUpdate::new().doc(nested(10_000));
    let error = app.invoke(deep, &cfg).await.unwrap_err();
    let GraphError::Unstorable { what, field, reason } = &error else { panic!("{error:?}") };
    assert_eq!(what, "the run's input");
    assert!(field.starts_with("doc"), "{field}");
    assert!(reason.contains("nested deeper than 256 levels"), "{reason}");
    assert!(error.to_string().contains("stored nothing"), "{error}");
    assert_eq!(saver.list("odd", &ListFilter::default()).await.unwrap().len(), before, "nothing of it was stored");
    check_measured(&app.get_state(&cfg).await.unwrap().unwrap().state);
}

#[graph]
mod deep_node {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
        pub doc: Value,
    }

    #[node(entry, next = [deepen, note])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["start".into()])
    }

    #[node(next = END)]
    fn note(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["note".into()])
    }

    #[node(next = END)]
    fn deepen(_state: &State) -> StateUpdate {
        StateUpdate::new().doc(super::nested(10_000))
    }
}

#[tokio::test]
async fn a_node_output_too_deep_to_store_fails_its_node_and_keeps_the_sibling() {
    let dir = tempfile::tempdir().unwrap();
    let saver: Arc<dyn Checkpointer> = Arc::new(SqliteSaver::open(dir.path().join("deep.db")).unwrap());
    let app = deep_node::graph().shared_checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread("deep");
    let error = app.invoke(deep_node::State::default(), &cfg).await.unwrap_err();
    let GraphError::Unstorable { what, field, .. } = &error else { panic!("{error:?}") };
    assert_eq!((what.as_str(), field.starts_with("doc")), ("the update of node `deepen`", true), "{error}");
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(state.next, ["deepen"], "the node that produced it is still pending");
    assert_eq!(state.state.log, ["start", "note"], "its sibling's write was kept");
    assert!(state.tasks[1].error.as_deref().is_some_and(|e| e.contains("nested deeper")), "{:?}", state.tasks);
}

#[tokio::test]
async fn odd_values_round_trip_through_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    round_trips(Arc::new(SqliteSaver::open(dir.path().join("odd.db")).unwrap())).await;
}

#[tokio::test]
async fn odd_values_round_trip_through_memory() {
    round_trips(Arc::new(graphwright::MemorySaver::new())).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_values_round_trip_through_postgres() {
    let schema = postgres_server::TestSchema::new("graphwright_values");
    let saver = graphwright::checkpoint::PostgresSaver::connect(&schema.url()).await.unwrap();
    round_trips(Arc::new(saver)).await;
}

/// A conversation whose messages are written without ids: the reducer gives them ids.
#[graph]
mod talk {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        #[reducer(add)]
        pub turns: u32,
    }

    #[node(entry, next = second)]
    fn first(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::assistant("one")]).turns(1)
    }

    #[node(next = END)]
    fn second(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::assistant("two")]).turns(1)
    }
}

/// Checkpoints between snapshots are rebuilt by folding stored writes; a message the run gave
/// an id must keep that id on every read, or a later update (a removal, a replacement by id)
/// would miss it.
#[tokio::test]
async fn message_ids_given_by_the_reducer_survive_a_rebuild_from_stored_writes() {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("talk.db")).unwrap();
    let app = talk::graph().checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread("ids");
    let out = app.invoke(talk::StateUpdate::new().messages(vec![Message::user("hi")]), &cfg).await.unwrap();
    let ids = |messages: &[Message]| messages.iter().map(|m| m.id.clone().unwrap()).collect::<Vec<_>>();
    let ran = ids(&out.state.messages);
    assert_eq!(ran.len(), 3);
    for _ in 0..2 {
        let read = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(ids(&read.state.messages), ran);
    }
    let history = app.state_history(&cfg).await.unwrap();
    let after_first = history.iter().find(|s| s.state.turns == 1).unwrap();
    assert_eq!(ids(&after_first.state.messages), ran[..2]);
    // A removal by the id the run saw reaches the stored message.
    app.update_state(&cfg, talk::StateUpdate::new().messages(vec![Message::remove(ran[1].clone())]), None)
        .await
        .unwrap();
    let after = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(ids(&after.state.messages), [ran[0].clone(), ran[2].clone()]);
}
