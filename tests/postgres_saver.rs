//! What only PostgreSQL has to prove: savers in separate pools (as separate processes would
//! be) racing on one thread, migrations run by several savers at once, and rows written by
//! something else read back as typed errors. Runs against `GRAPHWRIGHT_TEST_POSTGRES` (default
//! `postgres://postgres@127.0.0.1:5432/test`), each test in a schema of its own.

#[path = "support/postgres.rs"]
mod postgres_server;

use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, Client, NoTls};
use graphwright::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, FORMAT_VERSION, ListFilter, PostgresSaver, Source, WriteRecord,
};
use postgres_server::TestSchema;

/// A schema of its own for one test, with the connections the tests take to it.
struct Schema(TestSchema);

impl Schema {
    fn new() -> Self {
        Self(TestSchema::new("graphwright_pg"))
    }

    /// The server's URL with this schema as the connections' `search_path`.
    fn url(&self) -> String {
        self.0.url()
    }

    /// A saver with a pool of its own, as another process would have.
    async fn saver(&self) -> PostgresSaver {
        PostgresSaver::connect(&self.url()).await.unwrap()
    }

    /// A plain connection in this schema, for SQL the saver would never write.
    async fn raw(&self) -> Client {
        let (client, connection) = tokio_postgres::connect(&self.url(), NoTls).await.unwrap();
        tokio::spawn(connection);
        client
    }
}

fn record(thread: &str, id: &str, parent: Option<&str>, step: i64) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        source: Source::Loop,
        created_at_ms: 1_700_000_000_000,
        format: FORMAT_VERSION,
        body: b"{}".to_vec(),
    }
}

fn write(thread: &str, checkpoint: &str, body: &str) -> WriteRecord {
    WriteRecord {
        thread_id: thread.into(),
        checkpoint_id: checkpoint.into(),
        task: 0,
        index: 0,
        format: FORMAT_VERSION,
        body: body.into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_savers_racing_on_one_thread_one_wins_the_other_conflicts() {
    let schema = Schema::new();
    let (left, right) = (schema.saver().await, schema.saver().await);
    left.put(record("race", "s000", None, -1), None, Vec::new()).await.unwrap();
    let mut head = "s000".to_owned();
    for step in 1..=20 {
        // Both extend the same head, each with its own checkpoint and a write for the head's task.
        let (a, b) = (format!("s{step:03}a"), format!("s{step:03}b"));
        let (left_result, right_result) = tokio::join!(
            left.put(record("race", &a, Some(&head), step), Some(head.clone()), vec![write("race", &head, &a)]),
            right.put(record("race", &b, Some(&head), step), Some(head.clone()), vec![write("race", &head, &b)]),
        );
        let winner = match (left_result, right_result) {
            (Ok(()), Err(CheckpointError::Conflict { found, .. })) => {
                assert_eq!(found.as_deref(), Some(a.as_str()), "the loser sees the winner's checkpoint as the head");
                a
            }
            (Err(CheckpointError::Conflict { found, .. }), Ok(())) => {
                assert_eq!(found.as_deref(), Some(b.as_str()));
                b
            }
            other => panic!("step {step}: exactly one put must win, got {other:?}"),
        };
        let writes = right.writes("race", &head).await.unwrap();
        assert_eq!(writes.len(), 1, "the loser's write went nowhere");
        assert_eq!(writes[0].body, winner.as_bytes(), "the write stored is the winner's");
        head = winner;
    }
    let stored = left.list("race", &ListFilter::default()).await.unwrap();
    assert_eq!(stored.len(), 21, "one checkpoint per step, and the first");
    assert!(
        stored.windows(2).all(|pair| pair[0].parent_id.as_deref() == Some(pair[1].id.as_str())),
        "one unbroken chain"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_once_when_savers_start_at_once() {
    let schema = Schema::new();
    let url = schema.url();
    let savers = futures::future::join_all((0..4).map(|_| PostgresSaver::connect(&url))).await;
    assert!(savers.iter().all(Result::is_ok), "{savers:?}");
    let again = schema.saver().await;
    again.put(record("m", "m1", None, 0), None, Vec::new()).await.unwrap();

    let raw = schema.raw().await;
    let versions: Vec<i32> = raw
        .query("SELECT version FROM graphwright_migrations ORDER BY version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1], "each migration recorded once");

    raw.batch_execute("INSERT INTO graphwright_migrations (version) VALUES (99)").await.unwrap();
    let newer = PostgresSaver::connect(&schema.url()).await.unwrap_err();
    assert!(
        matches!(&newer, CheckpointError::Backend { operation, .. } if operation == "checked the schema version"),
        "{newer}"
    );
    assert!(newer.to_string().contains("schema version 99"), "{newer}");
}

/// The thread, checkpoint, field and reason of a corrupt-record error.
fn field_of<T: std::fmt::Debug>(result: Result<T, CheckpointError>) -> (String, String, String, String) {
    match result {
        Err(CheckpointError::Corrupt { thread, checkpoint, field, reason }) => (thread, checkpoint, field, reason),
        other => panic!("expected a corrupt-record error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_rows_are_typed_errors_naming_the_field() {
    let schema = Schema::new();
    let saver = schema.saver().await;
    let raw = schema.raw().await;
    raw.batch_execute(
        "ALTER TABLE graphwright_checkpoints ALTER COLUMN body DROP NOT NULL;
         INSERT INTO graphwright_checkpoints (thread_id, id, parent_id, step, source, created_at_ms, format, body) VALUES
             ('source', 'c1', NULL, 0, 'telepathy', 0, 1, '\\x7b7d'),
             ('format', 'c1', NULL, 0, 'loop', 0, -1, '\\x7b7d'),
             ('clock', 'c1', NULL, 0, 'loop', -5, 1, '\\x7b7d'),
             ('body', 'c1', NULL, 0, 'loop', 0, 1, NULL),
             ('later', 'c1', NULL, 0, 'loop', 0, 1, '\\x7b7d'),
             ('later', 'c2', 'c1', 1, 'loop', 0, 70000, '\\x7b7d');
         INSERT INTO graphwright_writes (thread_id, checkpoint_id, task, idx, format, body) VALUES
             ('writes', 'c1', -1, 0, 1, '\\x7b7d'),
             ('writes', 'c2', 3, 0, 99999, '\\x7b7d');",
    )
    .await
    .unwrap();

    for (thread, field, reason) in [
        ("source", "source", "unknown source \"telepathy\""),
        ("format", "format", "-1 is out of range"),
        ("clock", "created_at_ms", "-5 is out of range"),
        ("body", "body", "is NULL"),
    ] {
        let error = field_of(saver.get(thread, Some("c1")).await);
        assert_eq!(error, (thread.to_owned(), "c1".to_owned(), field.to_owned(), reason.to_owned()));
    }
    let (_, checkpoint, field, _) = field_of(saver.get("later", None).await);
    assert_eq!(
        (checkpoint.as_str(), field.as_str()),
        ("c2", "format"),
        "the newest checkpoint is read, and is unreadable"
    );
    let (_, checkpoint, field, _) = field_of(saver.list("later", &ListFilter::default()).await);
    assert_eq!((checkpoint.as_str(), field.as_str()), ("c2", "format"), "list does not skip what it cannot read");
    assert!(saver.get("later", Some("c1")).await.unwrap().is_some(), "the sound checkpoint still reads");

    let (_, _, field, _) = field_of(saver.writes("writes", "c1").await);
    assert_eq!(field, "writes[-1].task");
    let (_, checkpoint, field, _) = field_of(saver.writes("writes", "c2").await);
    assert_eq!((checkpoint.as_str(), field.as_str()), ("c2", "writes[3].format"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_server_is_a_backend_error_naming_the_step() {
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    let error = PostgresSaver::connect("postgres://postgres@127.0.0.1:1/test").await.unwrap_err();
    assert!(
        matches!(&error, CheckpointError::Backend { operation, .. } if operation == "migrated the checkpoint tables"),
        "{error}"
    );
    let error = PostgresSaver::connect("postgres://postgres@127.0.0.1:notaport/test").await.unwrap_err();
    assert!(
        matches!(&error, CheckpointError::Backend { operation, .. } if operation.contains("connection string")),
        "{error}"
    );
}
