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
async fn two_savers_racing_for_one_thread_one_claims_it_and_the_other_is_refused() {
    let schema = Schema::new();
    let (left, right) = (schema.saver().await, schema.saver().await);
    let mut head: Option<String> = None;
    let mut fences = Vec::new();
    for step in 0..20 {
        let (a, b) = tokio::join!(left.claim("race"), right.claim("race"));
        let (winner, loser, claim) = match (a, b) {
            (Ok(claim), Err(CheckpointError::Busy { .. })) => (&left, &right, claim),
            (Err(CheckpointError::Busy { .. }), Ok(claim)) => (&right, &left, claim),
            other => panic!("round {step}: exactly one saver must hold the thread, got {other:?}"),
        };
        let id = format!("s{step:03}");
        let refused = loser.put(&claim, record("race", &id, head.as_deref(), step), head.clone(), Vec::new()).await;
        assert!(matches!(refused, Err(CheckpointError::Fenced { .. })), "a claim is its owner's alone: {refused:?}");
        winner.put(&claim, record("race", &id, head.as_deref(), step), head.clone(), Vec::new()).await.unwrap();
        fences.push(claim.fence());
        winner.release(&claim).await.unwrap();
        head = Some(id);
    }
    assert!(fences.windows(2).all(|f| f[0] < f[1]), "fences grow with every claim: {fences:?}");
    let stored = left.list("race", &ListFilter::default()).await.unwrap();
    assert_eq!(stored.len(), 20);
    assert!(
        stored.windows(2).all(|pair| pair[0].parent_id.as_deref() == Some(pair[1].id.as_str())),
        "one unbroken chain"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_racing_under_one_claim_are_a_compare_and_set() {
    let schema = Schema::new();
    let saver = schema.saver().await;
    let claim = saver.claim("cas").await.unwrap();
    saver.put(&claim, record("cas", "s000", None, -1), None, Vec::new()).await.unwrap();
    let mut head = "s000".to_owned();
    for step in 1..=20 {
        let (a, b) = (format!("s{step:03}a"), format!("s{step:03}b"));
        let (left, right) = tokio::join!(
            saver.put(&claim, record("cas", &a, Some(&head), step), Some(head.clone()), vec![write("cas", &head, &a)]),
            saver.put(&claim, record("cas", &b, Some(&head), step), Some(head.clone()), vec![write("cas", &head, &b)]),
        );
        let winner = match (left, right) {
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
        let writes = saver.writes("cas", &head).await.unwrap();
        assert_eq!(writes.len(), 1, "the loser's write went nowhere");
        assert_eq!(writes[0].body, winner.as_bytes(), "the write stored is the winner's");
        head = winner;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_of_a_saver_that_went_away_is_taken_over() {
    let schema = Schema::new();
    let (first, second) = (schema.saver().await, schema.saver().await);
    let held = first.claim("gone").await.unwrap();
    assert!(matches!(second.claim("gone").await, Err(CheckpointError::Busy { .. })), "its owner is alive");
    drop(first);
    // The server frees the owner's lock when its connection closes; that takes a moment.
    let mut taken = None;
    for _ in 0..100 {
        match second.claim("gone").await {
            Ok(claim) => {
                taken = Some(claim);
                break;
            }
            Err(CheckpointError::Busy { .. }) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            Err(other) => panic!("{other}"),
        }
    }
    let taken = taken.expect("the claim of a saver that is gone can be taken over");
    assert!(taken.fence() > held.fence());
}

/// The threads of a saver that went away, claimed at the same moment by savers of the processes
/// that take them over: each claim is granted (none sees another's look at the same owner as the
/// owner being alive).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_threads_of_a_saver_that_went_away_are_taken_over_at_once() {
    let schema = Schema::new();
    let first = schema.saver().await;
    let threads: Vec<String> = (0..12).map(|n| format!("t{n}")).collect();
    for thread in &threads {
        first.claim(thread).await.unwrap();
    }
    first.claim("probe").await.unwrap();
    drop(first);
    let takers = [schema.saver().await, schema.saver().await, schema.saver().await];
    // Once the owner is seen gone (its connection's end takes a moment to reach the server)...
    let mut gone = false;
    for _ in 0..100 {
        if takers[0].claim("probe").await.is_ok() {
            gone = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(gone, "the saver that went away is never seen gone");
    // ...every other thread is claimed at once, by the three takers in turn.
    let claims = futures::future::join_all(threads.iter().enumerate().map(|(n, t)| takers[n % 3].claim(t))).await;
    let refused: Vec<_> = claims.iter().filter(|c| c.is_err()).collect();
    assert!(refused.is_empty(), "claims of a gone owner's threads refused: {refused:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_run_once_when_savers_start_at_once() {
    let schema = Schema::new();
    let url = schema.url();
    let savers = futures::future::join_all((0..4).map(|_| PostgresSaver::connect(&url))).await;
    assert!(savers.iter().all(Result::is_ok), "{savers:?}");
    let again = schema.saver().await;
    let claim = again.claim("m").await.unwrap();
    again.put(&claim, record("m", "m1", None, 0), None, Vec::new()).await.unwrap();

    let raw = schema.raw().await;
    let versions: Vec<i32> = raw
        .query("SELECT version FROM graphwright_migrations ORDER BY version", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(versions, [1, 2], "each migration recorded once");

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
         ALTER TABLE graphwright_checkpoints ALTER COLUMN format DROP NOT NULL;
         ALTER TABLE graphwright_writes ALTER COLUMN format DROP NOT NULL;
         INSERT INTO graphwright_checkpoints (thread_id, id, parent_id, step, source, created_at_ms, format, body) VALUES
             ('source', 'c1', NULL, 0, 'telepathy', 0, 1, '\\x7b7d'),
             ('format', 'c1', NULL, 0, 'loop', 0, -1, '\\x7b7d'),
             ('clock', 'c1', NULL, 0, 'loop', -5, 1, '\\x7b7d'),
             ('body', 'c1', NULL, 0, 'loop', 0, 1, NULL),
             ('later', 'c1', NULL, 0, 'loop', 0, 1, '\\x7b7d'),
             ('later', 'c2', 'c1', 1, 'loop', 0, 70000, '\\x7b7d'),
             ('nullformat', 'c1', NULL, 0, 'loop', 0, NULL, '\\x7b7d');
         INSERT INTO graphwright_writes (thread_id, checkpoint_id, task, idx, format, body) VALUES
             ('writes', 'c1', -1, 0, 1, '\\x7b7d'),
             ('writes', 'c2', 3, 0, 99999, '\\x7b7d'),
             ('writes', 'c3', 1, 0, NULL, '\\x7b7d');",
    )
    .await
    .unwrap();

    for (thread, field, reason) in [
        ("source", "source", "unknown source \"telepathy\""),
        ("format", "format", "-1 is out of range"),
        ("clock", "created_at_ms", "-5 is out of range"),
        ("body", "body", "is NULL"),
        ("nullformat", "format", "is NULL"),
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
    let (_, checkpoint, field, reason) = field_of(saver.writes("writes", "c3").await);
    assert_eq!((checkpoint.as_str(), field.as_str(), reason.as_str()), ("c3", "writes[1].format", "is NULL"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_say_what_the_server_said() {
    let schema = Schema::new();
    let saver = schema.saver().await;
    let error = saver.claim("nul\u{0}byte").await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains("invalid byte sequence for encoding \"UTF8\": 0x00"), "{text}");
    assert!(text.contains("22021"), "the SQLSTATE is shown: {text}");
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
