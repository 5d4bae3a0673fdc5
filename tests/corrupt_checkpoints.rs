//! Stored data is data: damage to the rows of a real SQLite file is reported as a typed error
//! naming the thread, the checkpoint and the field, or leaves what is read unchanged; it never
//! reads back as a different state, and never panics.
//!
//! The sweeps damage a thread with a rich history (an input, a parallel step, a node that asked
//! twice, a sibling that finished beside it): every byte of every stored body flipped in turn,
//! every column of every row edited, every row deleted, bodies swapped and rows moved, and after
//! each the whole thread is read back (its state, its pending interrupts, its history).

use graphwright::checkpoint::{CheckpointError, SqliteSaver};
use graphwright::prelude::*;
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};

#[graph]
mod story {
    use super::*;

    #[state]
    pub struct State {
        pub title: String,
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(add)]
        pub score: f64,
        pub extra: serde_json::Value,
    }

    #[node(entry, next = [left, right])]
    fn open(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("open {}", state.title)]).score(1.5)
    }

    #[node(next = gather)]
    fn left(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["left".into()]).score(f64::INFINITY)
    }

    #[node(next = gather)]
    async fn right(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().log(vec!["right".into()]).extra(json!({"nested": [1, {"deep": true}]}))
    }

    #[node(next = [ask, note])]
    fn gather(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("gather {}", state.log.len())])
    }

    #[node(next = END)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let first: String = rt.interrupt("first?")?;
        let second: String = rt.interrupt(json!({"second": first}))?;
        Ok(StateUpdate::new().log(vec![format!("ask {first} {second}")]))
    }

    #[node(next = END)]
    fn note(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["note".into()])
    }
}

const THREAD: &str = "story";

fn app(path: &Path) -> CompiledGraph<story::State> {
    story::graph().checkpointer(SqliteSaver::open(path).unwrap()).compile().unwrap()
}

/// A thread paused at the node's second question, with a finished sibling beside it.
async fn stored_thread() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("story.db");
    let app = app(&path);
    let cfg = RunConfig::thread(THREAD).durability(graphwright::Durability::Sync);
    let input = story::StateUpdate::new().title("t".to_owned());
    assert!(app.invoke(input, &cfg).await.unwrap().is_interrupted());
    let paused = app.resume(&cfg, json!("yes")).await.unwrap();
    assert_eq!(paused.interrupts[0].value, json!({"second": "yes"}));
    (dir, path)
}

/// Everything a reader sees of the thread, or the first error.
async fn observe(path: &Path) -> Result<String, String> {
    let app = app(path);
    let cfg = RunConfig::thread(THREAD);
    let run = async {
        let head = app.get_state(&cfg).await?.ok_or_else(|| GraphError::NoThread { graph: "gone".into() })?;
        let mut seen = vec![format!(
            "head {} {:?} next {:?} interrupts {:?}",
            head.checkpoint_id,
            serde_json::to_string(&head.state),
            head.next,
            head.interrupts
        )];
        for snapshot in app.state_history(&cfg).await? {
            seen.push(format!(
                "{} {} {:?} {:?} next {:?}",
                snapshot.checkpoint_id,
                snapshot.step,
                snapshot.source,
                serde_json::to_string(&snapshot.state),
                snapshot.next
            ));
        }
        Ok::<_, GraphError>(seen.join("\n"))
    };
    run.await.map_err(|e| {
        assert!(
            matches!(e, GraphError::Checkpoint(CheckpointError::Corrupt { .. })),
            "damage is a Corrupt error, not: {e:?}"
        );
        e.to_string()
    })
}

/// Every `(table, key columns, body)` row of the file.
fn rows(db: &Connection) -> Vec<(&'static str, String, Vec<u8>)> {
    let mut rows = Vec::new();
    let mut select = db.prepare("SELECT id, body FROM checkpoints").unwrap();
    for row in select.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))).unwrap() {
        let (id, body) = row.unwrap();
        rows.push(("checkpoints", format!("id = '{id}'"), body));
    }
    let mut select = db.prepare("SELECT checkpoint_id, task, idx, body FROM writes").unwrap();
    let found = select
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?, r.get::<_, Vec<u8>>(3)?))
        })
        .unwrap();
    for row in found {
        let (checkpoint, task, index, body) = row.unwrap();
        rows.push(("writes", format!("checkpoint_id = '{checkpoint}' AND task = {task} AND idx = {index}"), body));
    }
    rows
}

/// Applies `damage` (a damage the schema's constraints forbid changes nothing: `OR IGNORE`),
/// reads the thread, undoes the damage (from a copy of the file).
async fn damaged(path: &Path, pristine: &Path, damage: &str) -> Result<String, String> {
    let db = Connection::open(path).unwrap();
    db.execute_batch(damage).unwrap_or_else(|e| panic!("{damage}: {e}"));
    drop(db);
    let seen = observe(path).await;
    std::fs::copy(pristine, path).unwrap();
    let _ = std::fs::remove_file(path.with_extension("db-wal"));
    let _ = std::fs::remove_file(path.with_extension("db-shm"));
    seen
}

/// Makes a closed copy of the file to restore from.
fn pristine_copy(path: &Path) -> PathBuf {
    let db = Connection::open(path).unwrap();
    db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    drop(db);
    let copy = path.with_extension("pristine");
    std::fs::copy(path, &copy).unwrap();
    copy
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

struct Tally {
    errors: usize,
    unchanged: usize,
}

impl Tally {
    fn count(&mut self, what: &str, seen: &Result<String, String>, baseline: &str) {
        match seen {
            Err(_) => self.errors += 1,
            Ok(seen) if seen == baseline => self.unchanged += 1,
            Ok(seen) => panic!("{what} silently changed what is read:\n--- before\n{baseline}\n--- after\n{seen}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_flipped_byte_of_every_record_is_an_error_or_changes_nothing() {
    let (_dir, path) = stored_thread().await;
    let baseline = observe(&path).await.unwrap();
    let pristine = pristine_copy(&path);
    let rows = rows(&Connection::open(&path).unwrap());
    assert!(rows.len() >= 15, "a rich history: {} rows", rows.len());
    let mut tally = Tally { errors: 0, unchanged: 0 };
    for (table, key, body) in &rows {
        for at in 0..body.len() {
            let mut flipped = body.clone();
            flipped[at] ^= 0x20;
            let hex = hex(&flipped);
            let damage = format!("UPDATE {table} SET body = X'{hex}' WHERE {key}");
            let seen = damaged(&path, &pristine, &damage).await;
            tally.count(&format!("byte {at} of {table} {key}"), &seen, &baseline);
        }
    }
    assert!(tally.errors > 0);
    eprintln!("byte flips: {} errors, {} unchanged, 0 silent changes", tally.errors, tally.unchanged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edited_columns_deleted_moved_and_swapped_rows_never_read_as_another_state() {
    let (_dir, path) = stored_thread().await;
    let baseline = observe(&path).await.unwrap();
    let pristine = pristine_copy(&path);
    let rows = rows(&Connection::open(&path).unwrap());
    let mut damages = Vec::new();
    for (table, key, _) in &rows {
        damages.push(format!("DELETE FROM {table} WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET format = format + 1 WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET format = 1 WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET thread_id = 'elsewhere' WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET body = substr(body, 1, length(body) - 1) WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET body = body || X'00' WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET body = X'' WHERE {key}"));
        damages.push(format!("UPDATE OR IGNORE {table} SET body = 42 WHERE {key}"));
        for (other_table, other_key, other_body) in &rows {
            if other_key != key {
                let hex = hex(other_body);
                damages.push(format!("UPDATE OR IGNORE {table} SET body = X'{hex}' WHERE {key}"));
                let _ = other_table;
            }
        }
        if *table == "checkpoints" {
            damages.push(format!("UPDATE OR IGNORE checkpoints SET step = step + 1 WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET step = -7 WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET source = 'fork' WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET source = 'teleport' WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET created_at_ms = created_at_ms + 1 WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET parent_id = NULL WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET parent_id = 'nobody' WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE checkpoints SET id = id || 'x' WHERE {key}"));
        } else {
            damages.push(format!("UPDATE OR IGNORE writes SET task = task + 1 WHERE {key}"));
            damages.push(format!("UPDATE OR IGNORE writes SET idx = idx + 2 WHERE {key}"));
            damages.push(format!(
                "UPDATE OR IGNORE writes SET checkpoint_id = (SELECT max(id) FROM checkpoints) WHERE {key} \
                 AND NOT EXISTS (SELECT 1 FROM writes w WHERE w.checkpoint_id = (SELECT max(id) FROM checkpoints) \
                 AND w.task = writes.task AND w.idx = writes.idx)"
            ));
            damages.push(format!(
                "INSERT OR IGNORE INTO writes SELECT thread_id, checkpoint_id, task + 5, idx, format, body FROM writes WHERE {key}"
            ));
        }
    }
    let mut tally = Tally { errors: 0, unchanged: 0 };
    for damage in &damages {
        let seen = damaged(&path, &pristine, damage).await;
        tally.count(damage, &seen, &baseline);
    }
    assert!(tally.errors > damages.len() / 2, "{} errors of {}", tally.errors, damages.len());
    eprintln!(
        "{} kinds of damage: {} errors, {} unchanged, 0 silent changes",
        damages.len(),
        tally.errors,
        tally.unchanged
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_record_names_thread_checkpoint_and_field() {
    let (_dir, path) = stored_thread().await;
    let db = Connection::open(&path).unwrap();
    let head: String = db.query_row("SELECT max(id) FROM checkpoints", [], |r| r.get(0)).unwrap();
    db.execute("UPDATE checkpoints SET step = step + 1 WHERE id = ?1", [&head]).unwrap();
    let error = app(&path).get_state(&RunConfig::thread(THREAD)).await.unwrap_err();
    let GraphError::Checkpoint(CheckpointError::Corrupt { thread, checkpoint, field, reason }) = &error else {
        panic!("{error:?}")
    };
    assert_eq!((thread.as_str(), checkpoint.as_str(), field.as_str()), (THREAD, head.as_str(), "body"));
    assert!(reason.contains("integrity check"), "{reason}");
    assert!(error.to_string().contains("was not used"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_interrupt_is_noticed_and_resume_stores_nothing() {
    let (_dir, path) = stored_thread().await;
    let db = Connection::open(&path).unwrap();
    let deleted = db.execute("DELETE FROM writes WHERE idx = 3", []).unwrap();
    assert_eq!(deleted, 1, "the second interrupt's row");
    let before: i64 = db.query_row("SELECT count(*) FROM writes", [], |r| r.get(0)).unwrap();
    let app = app(&path);
    let cfg = RunConfig::thread(THREAD);
    let error = app.get_state(&cfg).await.unwrap_err();
    assert!(error.to_string().contains("outcome"), "{error}");
    let error = app.resume(&cfg, json!("no")).await.unwrap_err();
    assert!(matches!(error, GraphError::Checkpoint(CheckpointError::Corrupt { .. })), "{error}");
    let after: i64 = db.query_row("SELECT count(*) FROM writes", [], |r| r.get(0)).unwrap();
    assert_eq!(before, after, "a resume that found damage stored nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_format_1_file_is_refused_by_record_not_misread() {
    let (_dir, path) = stored_thread().await;
    Connection::open(&path).unwrap().execute("UPDATE checkpoints SET format = 1", []).unwrap();
    let error = app(&path).get_state(&RunConfig::thread(THREAD)).await.unwrap_err();
    assert!(error.to_string().contains("format 1 is not the supported format 2"), "{error}");
}
