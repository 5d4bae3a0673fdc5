//! Checkpoints and store values encrypted at rest, on a real SQLite file (and PostgreSQL with
//! the `postgres` feature): the file holds none of a run's plain text; a wrong key, a flipped
//! byte and a body moved to another row are typed errors naming what failed; what was stored in
//! plain text reads after encryption is turned on; keys rotate.

#[path = "support/raw_file.rs"]
mod raw_file;

use graphwright::checkpoint::{CheckpointError, Checkpointer, SqliteSaver};
use graphwright::encryption::Keys;
use graphwright::prelude::*;
use graphwright::store::{SearchQuery, SqliteStore, Store, StoreError};
use raw_file::{contains, raw_bytes};
use rusqlite::Connection;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Words that appear only in the run's state and writes, never in a column a backend searches by.
const SECRET: &str = "the-patient-is-allergic-to-penicillin";

#[graph]
mod notes {
    use super::*;

    #[state]
    pub struct State {
        pub question: String,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = [left, right])]
    fn open(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("asked: {}", state.question)])
    }

    #[node(next = close)]
    fn left(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("left saw {SECRET}")])
    }

    #[node(next = close)]
    async fn right(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().log(vec!["right".into()])
    }

    #[node(next = END)]
    fn close(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("closed after {}", state.log.len())])
    }
}

fn key(byte: u8) -> Keys {
    Keys::new(&[byte; 32]).unwrap()
}

fn plain(path: &Path) -> CompiledGraph<notes::State> {
    notes::graph().checkpointer(SqliteSaver::open(path).unwrap()).compile().unwrap()
}

fn sealed(path: &Path, keys: Keys) -> CompiledGraph<notes::State> {
    notes::graph().checkpointer(SqliteSaver::open(path).unwrap().encrypted(keys)).compile().unwrap()
}

async fn run(app: &CompiledGraph<notes::State>, thread: &str) -> notes::State {
    let cfg = RunConfig::thread(thread).durability(graphwright::Durability::Sync);
    let input = notes::StateUpdate::new().question(format!("what about {SECRET}?"));
    app.invoke(input, &cfg).await.unwrap().state
}

async fn read(app: &CompiledGraph<notes::State>, thread: &str) -> Result<Vec<String>, GraphError> {
    let cfg = RunConfig::thread(thread);
    let mut seen = vec![format!("{:?}", app.get_state(&cfg).await?.map(|s| s.state.log))];
    for snapshot in app.state_history(&cfg).await? {
        seen.push(format!("{} {:?}", snapshot.checkpoint_id, snapshot.state.log));
    }
    Ok(seen)
}

fn corrupt(error: GraphError) -> (String, String) {
    match error {
        GraphError::Checkpoint(CheckpointError::Corrupt { field, reason, .. }) => (field, reason),
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("notes.db")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_file_holds_none_of_a_runs_plain_text() {
    // The same run stored in plain text does show it: the scan can find what it looks for.
    let dir = tempfile::tempdir().unwrap();
    run(&plain(&db(&dir)), "t").await;
    assert!(contains(&raw_bytes(&db(&dir)), SECRET), "a plain file holds the state");

    let dir = tempfile::tempdir().unwrap();
    let app = sealed(&db(&dir), key(1));
    let state = run(&app, "t").await;
    assert!(state.log.iter().any(|l| l.contains(SECRET)), "the run itself sees its state: {:?}", state.log);
    assert!(!contains(&raw_bytes(&db(&dir)), SECRET), "the encrypted file holds no plain text");
    let history = read(&app, "t").await.unwrap();
    assert!(history.len() > 3 && history[0].contains(SECRET), "{history:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_or_no_key_is_an_error_that_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    run(&sealed(&db(&dir), key(1)), "t").await;

    let (field, reason) = corrupt(read(&sealed(&db(&dir), key(2)), "t").await.unwrap_err());
    assert_eq!(field, "body");
    assert!(reason.contains(&key(1).id().to_string()) && reason.contains("Keys::with_old"), "{reason}");

    let (_, reason) = corrupt(read(&plain(&db(&dir)), "t").await.unwrap_err());
    assert!(reason.contains("encrypted") && reason.contains(".encrypted(keys)"), "{reason}");

    // The message does not suspect damage when a key is what is missing; it does for damage.
    let missing = read(&sealed(&db(&dir), key(2)), "t").await.unwrap_err().to_string();
    assert!(missing.ends_with("it was not used") && !missing.contains("damaged"), "{missing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_or_a_moved_body_never_reads_as_another_value() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed(&db(&dir), key(1));
    run(&app, "t").await;
    run(&app, "u").await;
    let baseline = read(&app, "t").await.unwrap();

    let file = Connection::open(db(&dir)).unwrap();
    let bodies: Vec<(String, Vec<u8>)> = file
        .prepare("SELECT id, body FROM checkpoints WHERE thread_id = 't' ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    // Every byte, flipped one at a time in the newest checkpoint: the layout's version and the
    // key's id (the first 5 bytes) are refused as such, the nonce and the ciphertext as altered.
    let (id, body) = bodies.last().unwrap();
    for at in 0..body.len() {
        let mut flipped = body.clone();
        flipped[at] ^= 0x01;
        file.execute("UPDATE checkpoints SET body = ?1 WHERE thread_id = 't' AND id = ?2", (&flipped, id)).unwrap();
        let (field, reason) = corrupt(read(&app, "t").await.unwrap_err());
        assert_eq!(field, "body", "byte {at}");
        assert!(at < 5 || reason.contains("altered or moved"), "byte {at}: {reason}");
    }
    file.execute("UPDATE checkpoints SET body = ?1 WHERE thread_id = 't' AND id = ?2", (body, id)).unwrap();
    assert_eq!(read(&app, "t").await.unwrap(), baseline, "restored, it reads as before");

    // The same body, moved to another checkpoint of the thread, and to the other thread.
    let (first, _) = &bodies[0];
    file.execute("UPDATE checkpoints SET body = ?1 WHERE thread_id = 't' AND id = ?2", (body, first)).unwrap();
    corrupt(read(&app, "t").await.unwrap_err());
    file.execute("UPDATE checkpoints SET body = ?1 WHERE thread_id = 't' AND id = ?2", (&bodies[0].1, first)).unwrap();
    file.execute("UPDATE checkpoints SET body = ?1 WHERE thread_id = 'u' AND id = (SELECT max(id) FROM checkpoints WHERE thread_id = 'u')", [body])
        .unwrap();
    corrupt(read(&app, "u").await.unwrap_err());
    assert_eq!(read(&app, "t").await.unwrap(), baseline);

    // A task's write moved onto another task's row.
    let writes: Vec<(String, i64, Vec<u8>)> = file
        .prepare("SELECT checkpoint_id, task, body FROM writes WHERE thread_id = 't' ORDER BY checkpoint_id, task")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let (checkpoint, _, left) =
        writes.iter().find(|(c, t, _)| *t == 0 && writes.iter().any(|(d, u, _)| d == c && *u == 1)).unwrap();
    let saver = SqliteSaver::open(db(&dir)).unwrap().encrypted(key(1));
    assert_eq!(Checkpointer::writes(&saver, "t", checkpoint).await.unwrap().len(), 2, "both writes read");
    file.execute(
        "UPDATE writes SET body = ?1 WHERE thread_id = 't' AND checkpoint_id = ?2 AND task = 1",
        (left, checkpoint),
    )
    .unwrap();
    match Checkpointer::writes(&saver, "t", checkpoint).await.unwrap_err() {
        CheckpointError::Corrupt { field, checkpoint: at, .. } => {
            assert_eq!((field.as_str(), &at), ("writes[1.0].body", checkpoint));
        }
        other => panic!("expected a Corrupt error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_thread_reads_after_encryption_is_turned_on_and_keys_rotate() {
    let dir = tempfile::tempdir().unwrap();
    run(&plain(&db(&dir)), "old").await;
    let before = read(&plain(&db(&dir)), "old").await.unwrap();

    let first = sealed(&db(&dir), key(1));
    assert_eq!(read(&first, "old").await.unwrap(), before, "plain records read as they were");
    // The plain thread goes on, its new checkpoints encrypted.
    run(&first, "old").await;
    run(&first, "new").await;
    let old = read(&first, "old").await.unwrap();
    let new = read(&first, "new").await.unwrap();
    corrupt(read(&plain(&db(&dir)), "new").await.unwrap_err());

    // Rotation: a new current key, the first one kept for reading.
    let rotated = sealed(&db(&dir), key(2).with_old(&[1; 32]).unwrap());
    assert_eq!(read(&rotated, "old").await.unwrap(), old);
    assert_eq!(read(&rotated, "new").await.unwrap(), new);
    run(&rotated, "new").await;
    assert!(read(&rotated, "new").await.unwrap().len() > new.len());
    // Without the first key, what it wrote is refused and the key it needs is named.
    let (_, reason) = corrupt(read(&sealed(&db(&dir), key(2)), "new").await.unwrap_err());
    assert!(reason.contains(&key(1).id().to_string()), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_copied_thread_is_encrypted_for_its_new_id() {
    let dir = tempfile::tempdir().unwrap();
    let app = sealed(&db(&dir), key(1));
    run(&app, "from").await;
    let saver = SqliteSaver::open(db(&dir)).unwrap().encrypted(key(1));
    let copied = Checkpointer::copy_thread(&saver, "from", "to").await.unwrap();
    assert!(copied > 3);
    let (from, to) = (read(&app, "from").await.unwrap(), read(&app, "to").await.unwrap());
    assert_eq!(from, to);
    assert!(!contains(&raw_bytes(&db(&dir)), SECRET));
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

/// The bodies of a thread's rows in PostgreSQL, checkpoints and writes, as stored.
#[cfg(feature = "postgres")]
async fn postgres_bodies(url: &str, thread: &str) -> Vec<u8> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let rows = client
        .query(
            "SELECT body FROM graphwright_checkpoints WHERE thread_id = $1 \
             UNION ALL SELECT body FROM graphwright_writes WHERE thread_id = $1",
            &[&thread],
        )
        .await
        .unwrap();
    assert!(rows.len() > 3, "the thread has rows: {}", rows.len());
    rows.iter().flat_map(|r| r.get::<_, Vec<u8>>(0)).collect()
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rows_hold_none_of_a_runs_plain_text() {
    let schema = postgres_server::TestSchema::new("graphwright_encrypted");
    let url = schema.url();
    let connect = || graphwright::PostgresSaver::connect(&url);
    let plain_app = notes::graph().checkpointer(connect().await.unwrap()).compile().unwrap();
    run(&plain_app, "plain").await;
    assert!(contains(&postgres_bodies(&url, "plain").await, SECRET), "plain rows hold the state");

    let app = notes::graph().checkpointer(connect().await.unwrap().encrypted(key(1))).compile().unwrap();
    run(&app, "sealed").await;
    assert!(!contains(&postgres_bodies(&url, "sealed").await, SECRET));
    assert!(read(&app, "sealed").await.unwrap()[0].contains(SECRET));
    let wrong = notes::graph().checkpointer(connect().await.unwrap().encrypted(key(2))).compile().unwrap();
    corrupt(read(&wrong, "sealed").await.unwrap_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_values_are_encrypted_and_bound_to_their_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("memory.db");
    let plain_store = SqliteStore::open(&path).unwrap();
    plain_store.put(&["users", "ada"], "before", json!({"note": "stored in plain text"}), None).await.unwrap();
    assert!(contains(&raw_bytes(&path), "stored in plain text"), "a plain value is in the file");

    let store = SqliteStore::open(&path).unwrap().encrypted(key(1));
    store.put(&["users", "ada"], "allergy", json!({"note": SECRET, "severity": 3}), None).await.unwrap();
    store.put(&["users", "ada"], "other", json!({"note": "mild", "severity": 1}), None).await.unwrap();
    assert!(!contains(&raw_bytes(&path), SECRET), "the encrypted value is not in the file");
    let item = store.get(&["users", "ada"], "allergy").await.unwrap().unwrap();
    assert_eq!(item.value["note"], SECRET);
    assert_eq!(store.get(&["users", "ada"], "before").await.unwrap().unwrap().value["note"], "stored in plain text");
    // A filter sees the decrypted values.
    let severe = graphwright::store::Filter::new().gte("severity", 2);
    let found = store.search(&["users"], SearchQuery::new().filter(severe)).await.unwrap();
    assert_eq!(found.iter().map(|i| i.key.as_str()).collect::<Vec<_>>(), ["allergy"]);

    let store_error = |error: StoreError| match error {
        StoreError::Corrupt { key, field, reason, .. } => (key, field, reason),
        other => panic!("expected a Corrupt error, got {other:?}"),
    };
    let wrong = SqliteStore::open(&path).unwrap().encrypted(key(2));
    let (at, field, reason) = store_error(wrong.get(&["users", "ada"], "allergy").await.unwrap_err());
    assert_eq!((at.as_str(), field.as_str()), ("allergy", "value"));
    assert!(reason.contains(&key(1).id().to_string()), "{reason}");

    // The ciphertext of one key moved onto another key's row does not decrypt there.
    let file = Connection::open(&path).unwrap();
    file.execute(
        "UPDATE store_items SET value = (SELECT value FROM store_items WHERE key = 'allergy') WHERE key = 'other'",
        [],
    )
    .unwrap();
    let (at, _, reason) = store_error(store.get(&["users", "ada"], "other").await.unwrap_err());
    assert_eq!(at, "other");
    assert!(reason.contains("altered or moved"), "{reason}");
}
