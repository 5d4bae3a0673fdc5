//! Stored data is data: damaged, truncated or foreign rows in a real SQLite file give a typed
//! error naming the thread, the checkpoint and the field; never a default value, never a panic.

use graphwright::checkpoint::{CheckpointError, Checkpointer, SqliteSaver};
use graphwright::prelude::*;
use rusqlite::Connection;

#[graph]
mod steps {
    #[state]
    pub struct State {
        pub counter: i64,
    }

    #[node(entry, next = two)]
    fn one(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = END)]
    fn two(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }
}

/// A thread with a finished run in a fresh file, and the id of its newest checkpoint.
async fn stored_thread() -> (tempfile::TempDir, std::path::PathBuf, CompiledGraph<steps::State>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let app = steps::graph().checkpointer(saver.clone()).compile().unwrap();
    app.invoke(steps::State::default(), &RunConfig::thread("t")).await.unwrap();
    let head = saver.get("t", None).await.unwrap().unwrap().id;
    (dir, path, app, head)
}

fn corrupt(error: GraphError) -> (String, String, String) {
    match error {
        GraphError::Checkpoint(CheckpointError::Corrupt { thread, checkpoint, field, .. }) => {
            (thread, checkpoint, field)
        }
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
}

async fn damage_and_read(sql: &str, expected_field: &str) {
    let (_dir, path, app, head) = stored_thread().await;
    Connection::open(&path).unwrap().execute(sql, [&head]).unwrap();
    let error = app.get_state(&RunConfig::thread("t")).await.unwrap_err();
    let text = error.to_string();
    let (thread, checkpoint, field) = corrupt(error);
    assert_eq!((thread.as_str(), checkpoint.as_str()), ("t", head.as_str()), "{text}");
    assert!(field.starts_with(expected_field), "field `{field}` for `{sql}`: {text}");
    assert!(text.contains("was not used"), "{text}");
}

#[tokio::test]
async fn flipped_bytes_in_a_body() {
    damage_and_read("UPDATE checkpoints SET body = X'7B226E657874223A5B7B' WHERE id = ?1", "body").await;
}

#[tokio::test]
async fn a_truncated_body() {
    damage_and_read("UPDATE checkpoints SET body = substr(body, 1, 5) WHERE id = ?1", "body").await;
}

#[tokio::test]
async fn a_state_of_the_wrong_shape() {
    damage_and_read(
        r#"UPDATE checkpoints SET body = CAST('{"state":{"counter":"seven"},"next":[]}' AS BLOB) WHERE id = ?1"#,
        "state",
    )
    .await;
}

#[tokio::test]
async fn a_task_of_a_node_the_graph_does_not_have() {
    damage_and_read(r#"UPDATE checkpoints SET body = CAST('{"state":{"counter":1},"next":[{"node":"three"}]}' AS BLOB) WHERE id = ?1"#, "next[0].node").await;
}

#[tokio::test]
async fn an_unknown_source() {
    damage_and_read("UPDATE checkpoints SET source = 'teleport' WHERE id = ?1", "source").await;
}

#[tokio::test]
async fn a_format_from_the_future() {
    damage_and_read("UPDATE checkpoints SET format = 99 WHERE id = ?1", "format").await;
}

#[tokio::test]
async fn a_body_of_the_wrong_column_type() {
    damage_and_read("UPDATE checkpoints SET body = 42 WHERE id = ?1", "body").await;
}

#[tokio::test]
async fn a_missing_parent_of_a_checkpoint_without_snapshot() {
    let (_dir, path, app, head) = stored_thread().await;
    let db = Connection::open(&path).unwrap();
    db.execute(r#"UPDATE checkpoints SET body = CAST('{"next":[]}' AS BLOB) WHERE id = ?1"#, [&head]).unwrap();
    db.execute("DELETE FROM checkpoints WHERE id = (SELECT parent_id FROM checkpoints WHERE id = ?1)", [&head])
        .unwrap();
    let (_, checkpoint, field) = corrupt(app.get_state(&RunConfig::thread("t")).await.unwrap_err());
    assert_eq!((checkpoint.as_str(), field.as_str()), (head.as_str(), "parent"));
}

#[tokio::test]
async fn a_damaged_task_write_fails_the_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("writes.db");
    let app =
        steps::graph().checkpointer(SqliteSaver::open(&path).unwrap()).interrupt_before(["two"]).compile().unwrap();
    let cfg = RunConfig::thread("w");
    assert!(app.invoke(steps::State::default(), &cfg).await.unwrap().is_interrupted());
    let db = Connection::open(&path).unwrap();
    db.execute("UPDATE writes SET body = CAST('{\"node\":\"one\",\"update\":{\"counter\":[]}}' AS BLOB)", []).unwrap();
    db.execute(r#"UPDATE checkpoints SET body = CAST('{"next":[{"node":"two"}]}' AS BLOB) WHERE step = 1"#, [])
        .unwrap();
    let (thread, _, field) = corrupt(app.resume(&cfg, ()).await.unwrap_err());
    assert_eq!(thread, "w");
    assert!(field.starts_with("writes[0]"), "{field}");
}
