//! One conformance suite, run against every checkpointer: the storage contract itself, then
//! whole runs on a thread in every durability mode. SQLite runs on a real file; PostgreSQL
//! (feature `postgres`) on the server at `GRAPHWRIGHT_TEST_POSTGRES`, a schema per test.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use futures::StreamExt;
use graphwright::StateSnapshot;
use graphwright::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, Claim, FORMAT_VERSION, ListFilter, Source, SqliteSaver,
    WriteRecord,
};
use graphwright::prelude::*;
use graphwright::{Durability, EventKind, MemorySaver};
use std::sync::{Arc, Mutex};

fn record(thread: &str, id: &str, parent: Option<&str>, step: i64, source: Source) -> CheckpointRecord {
    CheckpointRecord {
        thread_id: thread.into(),
        id: id.into(),
        parent_id: parent.map(Into::into),
        step,
        source,
        created_at_ms: 1_700_000_000_000 + step.unsigned_abs(),
        format: FORMAT_VERSION,
        body: format!("{{\"step\":{step}}}").into_bytes(),
    }
}

fn write(thread: &str, checkpoint: &str, task: u32, body: &str) -> WriteRecord {
    WriteRecord {
        thread_id: thread.into(),
        checkpoint_id: checkpoint.into(),
        task,
        index: 0,
        format: FORMAT_VERSION,
        body: body.as_bytes().to_vec(),
    }
}

async fn claim(saver: &dyn Checkpointer, thread: &str) -> Claim {
    saver.claim(thread).await.unwrap()
}

async fn put_get_and_list(saver: &dyn Checkpointer) {
    assert_eq!(saver.get("t", None).await.unwrap(), None);
    let (t, other) = (claim(saver, "t").await, claim(saver, "other").await);
    saver.put(&t, record("t", "a1", None, -1, Source::Input), None, Vec::new()).await.unwrap();
    saver.put(&t, record("t", "a2", Some("a1"), 0, Source::Loop), Some("a1".into()), Vec::new()).await.unwrap();
    saver.put(&t, record("t", "a3", Some("a2"), 1, Source::Loop), Some("a2".into()), Vec::new()).await.unwrap();
    saver.put(&other, record("other", "b1", None, -1, Source::Input), None, Vec::new()).await.unwrap();

    assert_eq!(saver.get("t", None).await.unwrap().unwrap(), record("t", "a3", Some("a2"), 1, Source::Loop));
    assert_eq!(saver.get("t", Some("a1")).await.unwrap().unwrap().step, -1);
    assert_eq!(saver.get("t", Some("b1")).await.unwrap(), None, "ids are per thread");
    let ids = |list: Vec<CheckpointRecord>| list.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(ids(saver.list("t", &ListFilter::default()).await.unwrap()), ["a3", "a2", "a1"]);
    let before = ListFilter { before: Some("a3".into()), limit: Some(1), ..ListFilter::default() };
    assert_eq!(ids(saver.list("t", &before).await.unwrap()), ["a2"]);
    let inputs = ListFilter { source: Some(Source::Input), ..ListFilter::default() };
    assert_eq!(ids(saver.list("t", &inputs).await.unwrap()), ["a1"]);
    assert!(saver.list("nobody", &ListFilter::default()).await.unwrap().is_empty());
}

async fn put_is_a_compare_and_set_on_the_head(saver: &dyn Checkpointer) {
    let c = claim(saver, "c").await;
    saver.put(&c, record("c", "x1", None, -1, Source::Input), None, Vec::new()).await.unwrap();
    let stale =
        saver.put(&c, record("c", "x2", Some("x1"), 0, Source::Loop), None, vec![write("c", "x1", 0, "{}")]).await;
    assert!(
        matches!(stale, Err(CheckpointError::Conflict { ref found, .. }) if found.as_deref() == Some("x1")),
        "{stale:?}"
    );
    assert!(saver.writes("c", "x1").await.unwrap().is_empty(), "a rejected put stores none of its writes");
    saver
        .put(&c, record("c", "x2", Some("x1"), 0, Source::Loop), Some("x1".into()), vec![write("c", "x1", 0, "{}")])
        .await
        .unwrap();
    assert_eq!(
        saver.writes("c", "x1").await.unwrap(),
        [write("c", "x1", 0, "{}")],
        "writes go in with their checkpoint"
    );
}

async fn writes_are_idempotent_and_ordered(saver: &dyn Checkpointer) {
    let w = claim(saver, "w").await;
    saver.put(&w, record("w", "k1", None, 0, Source::Loop), None, Vec::new()).await.unwrap();
    saver.put_writes(&w, vec![write("w", "k1", 2, "two"), write("w", "k1", 0, "zero")]).await.unwrap();
    saver.put_writes(&w, vec![write("w", "k1", 0, "zero again"), write("w", "k1", 1, "one")]).await.unwrap();
    let stored: Vec<(u32, Vec<u8>)> =
        saver.writes("w", "k1").await.unwrap().into_iter().map(|w| (w.task, w.body)).collect();
    assert_eq!(stored, [(0, b"zero".to_vec()), (1, b"one".to_vec()), (2, b"two".to_vec())]);
    assert!(saver.writes("w", "k2").await.unwrap().is_empty());
    // A write comes back whole: its thread and checkpoint too, not only what the saver keys it by.
    assert_eq!(saver.writes("w", "k1").await.unwrap()[0], write("w", "k1", 0, "zero"));
    // Writes of an older checkpoint arriving after a newer one's still land under their own.
    saver.put(&w, record("w", "k3", Some("k1"), 1, Source::Loop), Some("k1".into()), Vec::new()).await.unwrap();
    saver.put_writes(&w, vec![write("w", "k3", 0, "newer")]).await.unwrap();
    saver.put_writes(&w, vec![write("w", "k2", 0, "older")]).await.unwrap();
    assert_eq!(saver.writes("w", "k2").await.unwrap(), [write("w", "k2", 0, "older")]);
    assert_eq!(saver.writes("w", "k3").await.unwrap(), [write("w", "k3", 0, "newer")]);
    assert_eq!(saver.writes("w", "k1").await.unwrap().len(), 3);
}

async fn delete_removes_one_thread_only(saver: &dyn Checkpointer) {
    for thread in ["d1", "d2"] {
        let held = claim(saver, thread).await;
        saver
            .put(&held, record(thread, "z1", None, 0, Source::Loop), None, vec![write(thread, "z1", 0, "{}")])
            .await
            .unwrap();
    }
    saver.delete_thread("d1").await.unwrap();
    assert_eq!(saver.get("d1", None).await.unwrap(), None);
    assert!(saver.writes("d1", "z1").await.unwrap().is_empty());
    assert!(saver.get("d2", None).await.unwrap().is_some());
    assert_eq!(saver.writes("d2", "z1").await.unwrap().len(), 1);
    saver.delete_thread("never-existed").await.unwrap();
}

/// Rolling back removes the thread's newer checkpoints with their writes, and those its
/// subgraphs stored since, and leaves older ones and other threads alone.
async fn delete_after_rolls_a_thread_back(saver: &dyn Checkpointer) {
    let sep = graphwright::checkpoint::NAMESPACE_SEPARATOR;
    let sub = format!("r{sep}inner:r2:0");
    let (r, nested, near) = (claim(saver, "r").await, claim(saver, &sub).await, claim(saver, "r2").await);
    saver.put(&r, record("r", "r1", None, -1, Source::Input), None, vec![]).await.unwrap();
    saver
        .put(&r, record("r", "r2", Some("r1"), 0, Source::Loop), Some("r1".into()), vec![write("r", "r1", 0, "a")])
        .await
        .unwrap();
    saver
        .put(&r, record("r", "r3", Some("r2"), 1, Source::Loop), Some("r2".into()), vec![write("r", "r2", 0, "b")])
        .await
        .unwrap();
    saver.put_writes(&r, vec![write("r", "r3", 0, "c")]).await.unwrap();
    saver.put(&nested, record(&sub, "r1x", None, -1, Source::Input), None, vec![]).await.unwrap();
    saver.put(&nested, record(&sub, "r3x", Some("r1x"), 0, Source::Loop), Some("r1x".into()), vec![]).await.unwrap();
    // "r2" starts with "r" but is another thread, not a subgraph of it.
    saver.put(&near, record("r2", "r9", None, -1, Source::Input), None, vec![]).await.unwrap();

    saver.delete_after("r", Some("r2")).await.unwrap();
    let ids = |list: Vec<CheckpointRecord>| list.into_iter().map(|c| c.id).collect::<Vec<_>>();
    assert_eq!(ids(saver.list("r", &ListFilter::default()).await.unwrap()), ["r2", "r1"]);
    assert_eq!(saver.writes("r", "r1").await.unwrap().len(), 1, "writes of kept checkpoints stay");
    assert!(saver.writes("r", "r3").await.unwrap().is_empty(), "writes of removed checkpoints go");
    assert_eq!(ids(saver.list(&sub, &ListFilter::default()).await.unwrap()), ["r1x"]);
    assert_eq!(ids(saver.list("r2", &ListFilter::default()).await.unwrap()), ["r9"]);
    let fenced = saver.put_writes(&r, vec![write("r", "r2", 1, "late")]).await;
    assert!(matches!(fenced, Err(CheckpointError::Fenced { .. })), "the run writing before is fenced off: {fenced:?}");

    saver.delete_after("r", None).await.unwrap();
    assert_eq!(saver.get("r", None).await.unwrap(), None);
    assert!(saver.writes("r", "r1").await.unwrap().is_empty());
    assert!(saver.list(&sub, &ListFilter::default()).await.unwrap().is_empty());
    assert!(saver.get("r2", None).await.unwrap().is_some());
}

/// Pruning to the head replaces it, deletes the thread's older checkpoints with their writes
/// and the subgraph keys named, in one step; the head's writes, the other subgraph keys and
/// other threads stay. A stale claim, a head that moved and a key of another thread change
/// nothing.
async fn prune_to_head_keeps_the_head_alone(saver: &dyn Checkpointer) {
    let sep = graphwright::checkpoint::NAMESPACE_SEPARATOR;
    let (kept, dropped) = (format!("p{sep}inner:p3:0"), format!("p{sep}inner:p2:0"));
    let p = claim(saver, "p").await;
    saver.put(&p, record("p", "p1", None, -1, Source::Input), None, vec![write("p", "p1", 0, "input")]).await.unwrap();
    saver
        .put(&p, record("p", "p2", Some("p1"), 0, Source::Loop), Some("p1".into()), vec![write("p", "p2", 0, "a")])
        .await
        .unwrap();
    saver.put(&p, record("p", "p3", Some("p2"), 1, Source::Loop), Some("p2".into()), vec![]).await.unwrap();
    saver.put_writes(&p, vec![write("p", "p3", 0, "done"), write("p", "p3", 1, "paused")]).await.unwrap();
    for key in [&kept, &dropped] {
        let held = claim(saver, key).await;
        saver
            .put(&held, record(key, "s1", None, -1, Source::Input), None, vec![write(key, "s1", 0, "x")])
            .await
            .unwrap();
        saver.put(&held, record(key, "s2", Some("s1"), 0, Source::Loop), Some("s1".into()), vec![]).await.unwrap();
        saver.release(&held).await.unwrap();
    }
    // "pp" starts with "p" but is another thread.
    let near = claim(saver, "pp").await;
    saver.put(&near, record("pp", "q1", None, -1, Source::Input), None, vec![write("pp", "q1", 0, "q")]).await.unwrap();
    let ids = |list: Vec<CheckpointRecord>| list.into_iter().map(|c| c.id).collect::<Vec<_>>();
    let standalone =
        CheckpointRecord { parent_id: None, body: b"standalone".to_vec(), ..record("p", "p3", None, 1, Source::Loop) };

    let moved = saver.prune_to_head(&p, record("p", "p2", None, 0, Source::Loop), vec![]).await;
    assert!(
        matches!(&moved, Err(CheckpointError::Conflict { found, .. }) if found.as_deref() == Some("p3")),
        "a head that is not the newest: {moved:?}"
    );
    let foreign = saver.prune_to_head(&p, standalone.clone(), vec!["pp".into()]).await;
    assert!(foreign.as_ref().is_err_and(|e| e.to_string().contains("not the key of a subgraph")), "{foreign:?}");
    let other = saver.prune_to_head(&p, record("pp", "q1", None, -1, Source::Input), vec![]).await;
    assert!(other.as_ref().is_err_and(|e| e.to_string().contains("belongs to thread `pp`")), "{other:?}");
    assert_eq!(ids(saver.list("p", &ListFilter::default()).await.unwrap()), ["p3", "p2", "p1"], "nothing changed");
    assert_eq!(saver.get("p", None).await.unwrap().unwrap().body, record("p", "p3", None, 1, Source::Loop).body);

    assert_eq!(saver.prune_to_head(&p, standalone.clone(), vec![dropped.clone()]).await.unwrap(), 4, "p1, p2, s1, s2");
    assert_eq!(
        saver.list("p", &ListFilter::default()).await.unwrap(),
        std::slice::from_ref(&standalone),
        "the head, rewritten"
    );
    assert_eq!(saver.get("p", None).await.unwrap().unwrap(), standalone);
    let bodies = |w: Vec<WriteRecord>| w.into_iter().map(|w| String::from_utf8(w.body).unwrap()).collect::<Vec<_>>();
    assert_eq!(bodies(saver.writes("p", "p3").await.unwrap()), ["done", "paused"], "the head's writes stay");
    assert!(saver.writes("p", "p2").await.unwrap().is_empty() && saver.writes("p", "p1").await.unwrap().is_empty());
    assert!(
        saver.get(&dropped, None).await.unwrap().is_none() && saver.writes(&dropped, "s1").await.unwrap().is_empty()
    );
    assert_eq!(
        ids(saver.list(&kept, &ListFilter::default()).await.unwrap()),
        ["s2", "s1"],
        "a kept subgraph is untouched"
    );
    assert_eq!(saver.writes(&kept, "s1").await.unwrap().len(), 1);
    let mut keys = saver.thread_keys("p").await.unwrap();
    keys.sort();
    assert_eq!(keys, ["p".to_owned(), kept.clone()]);
    assert_eq!(ids(saver.list("pp", &ListFilter::default()).await.unwrap()), ["q1"], "other threads stay");
    assert_eq!(saver.writes("pp", "q1").await.unwrap().len(), 1);

    assert_eq!(saver.prune_to_head(&p, standalone.clone(), vec![]).await.unwrap(), 0, "pruning again is harmless");
    saver.put(&p, record("p", "p4", Some("p3"), 2, Source::Loop), Some("p3".into()), vec![]).await.unwrap();
    assert_eq!(saver.get("p", None).await.unwrap().unwrap().id, "p4", "the thread goes on from its head");

    saver.release(&p).await.unwrap();
    let again = claim(saver, "p").await;
    let stale = saver.prune_to_head(&p, record("p", "p4", None, 2, Source::Loop), vec![kept.clone()]).await;
    assert!(
        matches!(stale, Err(CheckpointError::Fenced { fence, current, .. }) if fence == p.fence() && current == again.fence()),
        "{stale:?}"
    );
    assert_eq!(
        ids(saver.list("p", &ListFilter::default()).await.unwrap()),
        ["p4", "p3"],
        "a stale claim prunes nothing"
    );
    assert_eq!(saver.list(&kept, &ListFilter::default()).await.unwrap().len(), 2);
}

/// A claim excludes every other claim of the thread until it is released; each claim's fence
/// is larger than the one before, and a write under a stale claim is refused.
async fn claims_exclude_and_fence(saver: &dyn Checkpointer) {
    let first = claim(saver, "f").await;
    let busy = saver.claim("f").await;
    assert!(matches!(busy, Err(CheckpointError::Busy { ref thread, .. }) if thread == "f"), "{busy:?}");
    saver.put(&first, record("f", "f1", None, -1, Source::Input), None, Vec::new()).await.unwrap();
    saver.release(&first).await.unwrap();

    let second = claim(saver, "f").await;
    assert!(second.fence() > first.fence(), "{} after {}", second.fence(), first.fence());
    let stale = saver.put_writes(&first, vec![write("f", "f1", 0, "late")]).await;
    assert!(
        matches!(stale, Err(CheckpointError::Fenced { fence, current, .. }) if fence == first.fence() && current == second.fence()),
        "{stale:?}"
    );
    let stale = saver.put(&first, record("f", "f2", Some("f1"), 0, Source::Loop), Some("f1".into()), Vec::new()).await;
    assert!(matches!(stale, Err(CheckpointError::Fenced { .. })), "{stale:?}");
    assert!(saver.writes("f", "f1").await.unwrap().is_empty(), "nothing of the stale claim was stored");
    saver.put_writes(&second, vec![write("f", "f1", 0, "current")]).await.unwrap();
    assert!(matches!(saver.claim("g").await, Ok(c) if c.thread() == "g"), "other threads are free");

    saver.delete_thread("f").await.unwrap();
    let fenced = saver.put_writes(&second, vec![write("f", "f1", 1, "after delete")]).await;
    assert!(matches!(fenced, Err(CheckpointError::Fenced { .. })), "a deleted thread fences its old claim: {fenced:?}");
    let third = claim(saver, "f").await;
    assert!(third.fence() > second.fence(), "fences keep growing across a delete");
}

/// Threads whose `slow` task fails once, and how often `fast` ran per thread: keyed by thread
/// so the backends' tests can run side by side.
static FAIL_ONCE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static FAST_RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn fast_runs(thread: &str) -> usize {
    FAST_RUNS.lock().unwrap().iter().filter(|t| *t == thread).count()
}

#[graph]
mod work {
    use super::*;

    #[state]
    pub struct State {
        pub counter: i64,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = [fast, slow])]
    fn split(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = merge)]
    fn fast(_state: &State, rt: &Runtime) -> StateUpdate {
        FAST_RUNS.lock().unwrap().push(rt.thread_id().unwrap_or_default().to_owned());
        StateUpdate::new().log(vec!["fast".into()])
    }

    #[node(next = merge)]
    async fn slow(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        tokio::task::yield_now().await;
        let thread = rt.thread_id().unwrap_or_default().to_owned();
        let fail = {
            let mut failing = FAIL_ONCE.lock().unwrap();
            let found = failing.iter().position(|t| *t == thread);
            found.map(|i| failing.remove(i)).is_some()
        };
        if fail {
            return Err(NodeError::msg("the downstream service is not ready"));
        }
        Ok(StateUpdate::new().log(vec!["slow".into()]))
    }

    #[node(next = END)]
    fn merge(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter * 10)
    }
}

/// A copy of a thread reads as the original did (history, pending writes of a failed step),
/// continues on its own, and leaves the original as it was; damage in the original is an error
/// that copies nothing, and a copy never lands on a thread that has checkpoints.
async fn copy_thread_copies_history_and_pending_work(saver: Arc<dyn Checkpointer>, backend: &str) {
    let app = work::graph().shared_checkpointer(Arc::clone(&saver)).compile().unwrap();
    let original = format!("{backend}-copied");
    FAIL_ONCE.lock().unwrap().push(original.clone());
    let cfg = RunConfig::thread(original.clone());
    app.invoke(work::State::default(), &cfg).await.unwrap_err();
    let copy = format!("{backend}-copy");
    let copied = saver.copy_thread(&original, &copy).await.unwrap();
    assert_eq!(copied, saver.list(&original, &ListFilter::default()).await.unwrap().len());
    let copy_cfg = RunConfig::thread(copy.clone());
    let (before, after) =
        (app.get_state(&cfg).await.unwrap().unwrap(), app.get_state(&copy_cfg).await.unwrap().unwrap());
    assert_eq!((&after.next, &after.state.log), (&before.next, &before.state.log), "the copy reads as the original");
    assert_eq!(after.checkpoint_id, before.checkpoint_id, "with the same checkpoint ids");
    let history = |cfg: RunConfig| {
        let app = &app;
        async move { app.state_history(&cfg).await.unwrap().into_iter().map(|s| s.checkpoint_id).collect::<Vec<_>>() }
    };
    assert_eq!(history(copy_cfg.clone()).await, history(cfg.clone()).await);

    let out = app.resume(&copy_cfg, ()).await.unwrap();
    assert_eq!(out.state.log, ["fast", "slow"]);
    assert_eq!(fast_runs(&copy), 0, "the finished sibling's write was copied: `fast` did not run again");
    let original_now = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(original_now.next, ["slow"], "the original is left as it was");

    let taken = saver.copy_thread(&original, &copy).await.unwrap_err();
    assert!(taken.to_string().contains("already has checkpoints"), "{taken}");

    let damaged = claim(&*saver, "damaged").await;
    saver.put(&damaged, record("damaged", "d1", None, -1, Source::Input), None, vec![]).await.unwrap();
    let error = saver.copy_thread("damaged", "damaged-copy").await.unwrap_err();
    assert!(matches!(&error, CheckpointError::Corrupt { field, .. } if field == "body"), "{error}");
    assert!(saver.get("damaged-copy", None).await.unwrap().is_none(), "nothing of a damaged thread is copied");
}

/// How a snapshot reads, but for its parent (which pruning drops).
fn reading<S: graphwright::State + std::fmt::Debug>(snapshot: &StateSnapshot<S>) -> String
where
    S::Update: std::fmt::Debug,
{
    let mut snapshot = snapshot.clone();
    snapshot.parent_id = None;
    format!("{snapshot:?}")
}

/// A pruned thread reads as before, and its failed step resumes without running the finished
/// task again; a damaged record the state is not rebuilt from is deleted like the rest, while a
/// damaged head stops the prune before anything is deleted; a thread another run holds is busy.
async fn prune_history_keeps_the_latest_state(saver: Arc<dyn Checkpointer>, backend: &str) {
    let app = work::graph().shared_checkpointer(Arc::clone(&saver)).compile().unwrap();
    let thread = format!("{backend}-pruned");
    let cfg = RunConfig::thread(thread.clone());
    app.invoke(work::State::default(), &cfg).await.unwrap();
    FAIL_ONCE.lock().unwrap().push(thread.clone());
    app.invoke(work::StateUpdate::new(), &cfg).await.unwrap_err();
    // A damaged record older than any other: nothing reads it.
    let writer = claim(&*saver, &thread).await;
    let newest = saver.get(&thread, None).await.unwrap().map(|h| h.id);
    saver.put(&writer, record(&thread, "0", None, -1, Source::Input), newest, vec![]).await.unwrap();
    saver.release(&writer).await.unwrap();
    let before = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!((before.next.as_slice(), before.state.log.len()), (&["slow".to_owned()][..], 3), "{before:?}");
    let stored = saver.list(&thread, &ListFilter::default()).await.unwrap().len();

    let other_run = claim(&*saver, &thread).await;
    let busy = app.prune_history(&cfg).await.unwrap_err();
    assert!(matches!(&busy, GraphError::ThreadBusy { thread: t } if *t == thread), "{busy}");
    saver.release(&other_run).await.unwrap();
    assert_eq!(saver.list(&thread, &ListFilter::default()).await.unwrap().len(), stored, "a busy thread is untouched");

    assert_eq!(app.prune_history(&cfg).await.unwrap(), stored - 1);
    let after = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(reading(&after), reading(&before), "the thread reads as it did");
    assert_eq!(after.parent_id, None);
    assert_eq!(app.state_history(&cfg).await.unwrap().len(), 1);
    assert_eq!(app.prune_history(&cfg).await.unwrap(), 0, "pruning again deletes nothing");
    let out = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(
        (out.state.counter, out.state.log),
        (110, vec!["fast".into(), "slow".into(), "fast".into(), "slow".into()])
    );
    assert_eq!(fast_runs(&thread), 2, "`fast` finished before the failure and did not run again");

    let damaged = format!("{backend}-damaged-head");
    let damaged_cfg = RunConfig::thread(damaged.clone());
    app.invoke(work::State::default(), &damaged_cfg).await.unwrap();
    let writer = claim(&*saver, &damaged).await;
    let newest = saver.get(&damaged, None).await.unwrap().map(|h| h.id);
    let junk = graphwright::checkpoint::new_checkpoint_id();
    saver
        .put(&writer, record(&damaged, &junk, newest.as_deref(), 9, Source::Loop), newest.clone(), vec![])
        .await
        .unwrap();
    saver.release(&writer).await.unwrap();
    let stored = saver.list(&damaged, &ListFilter::default()).await.unwrap().len();
    let error = app.prune_history(&damaged_cfg).await.unwrap_err();
    assert!(
        matches!(&error, GraphError::Checkpoint(CheckpointError::Corrupt { checkpoint, field, .. }) if *checkpoint == junk && field == "body"),
        "{error}"
    );
    assert_eq!(saver.list(&damaged, &ListFilter::default()).await.unwrap().len(), stored, "nothing was deleted");
}

async fn runs_on_a_thread(saver: Arc<dyn Checkpointer>, backend: &str) {
    for (durability, checkpoints) in [(Durability::Sync, 5), (Durability::Async, 5), (Durability::Exit, 1)] {
        let app = work::graph().shared_checkpointer(Arc::clone(&saver)).compile().unwrap();
        let thread = format!("{backend}-{durability:?}");
        let cfg = RunConfig::thread(thread.clone()).durability(durability);
        let out = app.invoke(work::State::default(), &cfg).await.unwrap();
        assert_eq!((out.state.counter, out.state.log.clone()), (10, vec!["fast".to_owned(), "slow".to_owned()]));
        let stored = saver.list(&thread, &ListFilter::default()).await.unwrap();
        assert_eq!(stored.len(), checkpoints, "{durability:?}: K + 2 checkpoints (K = 3), or one at exit");
        let latest = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(
            (latest.state.counter, latest.state.log),
            (10, out.state.log),
            "{durability:?}: the latest checkpoint holds the final state"
        );

        let failing = format!("{thread}-fails");
        FAIL_ONCE.lock().unwrap().push(failing.clone());
        let failing_cfg = RunConfig::thread(failing.clone()).durability(durability);
        let error = app.invoke(work::State::default(), &failing_cfg).await.unwrap_err();
        assert!(matches!(&error, GraphError::Node { node, .. } if node == "slow"), "{error}");
        let failed = app.get_state(&failing_cfg).await.unwrap().unwrap();
        assert_eq!(failed.next, ["slow"], "{durability:?}: only the unfinished task is next");
        assert_eq!(failed.state.log, ["fast"], "{durability:?}: the finished sibling's saved write is shown applied");
        assert!(failed.tasks[1].error.as_deref().is_some_and(|e| e.contains("not ready")), "{:?}", failed.tasks);
        let pinned =
            app.get_state(&failing_cfg.clone().checkpoint(failed.checkpoint_id.clone())).await.unwrap().unwrap();
        assert_eq!(
            (pinned.next, pinned.state.log),
            (vec!["fast".to_owned(), "slow".to_owned()], Vec::new()),
            "a pinned checkpoint is shown as stored"
        );
        let out = app.resume(&failing_cfg, ()).await.unwrap();
        assert_eq!(out.state.log, ["fast", "slow"], "{durability:?}");
        assert_eq!(out.state.counter, 10);
        assert_eq!(fast_runs(&failing), 1, "{durability:?}: `fast` finished before the failure and did not run again");

        saver.delete_thread(&thread).await.unwrap();
        assert!(app.get_state(&cfg).await.unwrap().is_none());
    }
}

#[graph]
mod held {
    use super::*;

    #[state]
    pub struct State {
        /// The node waits forever: the run holds its thread until it is dropped.
        pub wait: bool,
        pub done: bool,
    }

    #[node(entry, next = END)]
    async fn work(state: &State) -> StateUpdate {
        if state.wait {
            std::future::pending::<()>().await;
        }
        StateUpdate::new().done(true)
    }
}

/// A run dropped mid-step (a cancelled run) gives its thread back before the drop returns: the
/// next run on it in this process starts at once instead of being refused as busy. (Tested on a
/// single-threaded runtime, where a release left to a background task could not have run yet.)
async fn a_dropped_run_frees_its_thread_at_once(saver: Arc<dyn Checkpointer>, backend: &str) {
    let app = held::graph().shared_checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread(format!("{backend}-dropped"));
    let mut run = app.stream(held::State { wait: true, done: false }, &cfg, StreamMode::Values);
    let first = run.next().await.expect("the input's values come first");
    assert!(matches!(&first.kind, EventKind::Values(state) if state.wait), "{:?}", first.kind);
    drop(run);
    let out = app.invoke(held::StateUpdate::new().wait(false), &cfg).await.unwrap();
    assert!(out.state.done && !out.state.wait, "{:?}", out.state);
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn put_get_and_list() {
                let (saver, _keep) = $make;
                super::put_get_and_list(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn put_is_a_compare_and_set_on_the_head() {
                let (saver, _keep) = $make;
                super::put_is_a_compare_and_set_on_the_head(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn writes_are_idempotent_and_ordered() {
                let (saver, _keep) = $make;
                super::writes_are_idempotent_and_ordered(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn delete_removes_one_thread_only() {
                let (saver, _keep) = $make;
                super::delete_removes_one_thread_only(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn delete_after_rolls_a_thread_back() {
                let (saver, _keep) = $make;
                super::delete_after_rolls_a_thread_back(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn claims_exclude_and_fence() {
                let (saver, _keep) = $make;
                super::claims_exclude_and_fence(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn copy_thread_copies_history_and_pending_work() {
                let (saver, _keep) = $make;
                super::copy_thread_copies_history_and_pending_work(saver, stringify!($backend)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn prune_to_head_keeps_the_head_alone() {
                let (saver, _keep) = $make;
                super::prune_to_head_keeps_the_head_alone(&*saver).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn prune_history_keeps_the_latest_state() {
                let (saver, _keep) = $make;
                super::prune_history_keeps_the_latest_state(saver, stringify!($backend)).await;
            }

            #[tokio::test]
            async fn a_dropped_run_frees_its_thread_at_once() {
                let (saver, _keep) = $make;
                super::a_dropped_run_frees_its_thread_at_once(saver, stringify!($backend)).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn runs_on_a_thread() {
                let (saver, _keep) = $make;
                super::runs_on_a_thread(saver, stringify!($backend)).await;
            }
        }
    };
}

/// A checkpointer written before `prune_to_head` existed: the required methods, and claims.
struct Bare(MemorySaver);

impl Checkpointer for Bare {
    fn claim<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.0.claim(thread)
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.0.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.0.put(claim, record, expected_head, writes)
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.0.put_writes(claim, writes)
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        self.0.get(thread, id)
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> futures::future::BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        self.0.list(thread, filter)
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        self.0.writes(thread, checkpoint)
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.0.delete_thread(thread)
    }
}

/// The provided `prune_to_head` refuses, saying what is missing, and pruning through it deletes
/// nothing.
#[tokio::test]
async fn a_checkpointer_without_prune_to_head_refuses_it() {
    let bare = Bare(MemorySaver::new());
    let held = bare.claim("t").await.unwrap();
    let refused = bare.prune_to_head(&held, record("t", "c1", None, -1, Source::Input), vec![]).await.unwrap_err();
    assert!(refused.to_string().contains("does not implement `Checkpointer::prune_to_head`"), "{refused}");
    bare.release(&held).await.unwrap();

    let app = work::graph().checkpointer(Bare(MemorySaver::new())).compile().unwrap();
    let cfg = RunConfig::thread("bare");
    app.invoke(work::State::default(), &cfg).await.unwrap();
    let before = app.state_history(&cfg).await.unwrap().len();
    let error = app.prune_history(&cfg).await.unwrap_err();
    assert!(error.to_string().contains("pruned the history of thread `bare`"), "{error}");
    assert_eq!(app.state_history(&cfg).await.unwrap().len(), before, "nothing was deleted");
}

fn memory() -> (Arc<dyn Checkpointer>, ()) {
    (Arc::new(MemorySaver::new()), ())
}

fn sqlite() -> (Arc<dyn Checkpointer>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("checkpoints.db")).unwrap();
    (Arc::new(saver), dir)
}

/// A schema of its own per test, made the saver's through `search_path` in its connection
/// URL; dropped when the test ends.
#[cfg(feature = "postgres")]
async fn postgres() -> (Arc<dyn Checkpointer>, postgres_server::TestSchema) {
    let schema = postgres_server::TestSchema::new("graphwright_conformance");
    (Arc::new(graphwright::PostgresSaver::connect(&schema.url()).await.unwrap()), schema)
}

fn keys() -> graphwright::encryption::Keys {
    graphwright::encryption::Keys::new(&[42; 32]).unwrap()
}

fn encrypted_sqlite() -> (Arc<dyn Checkpointer>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let saver = SqliteSaver::open(dir.path().join("checkpoints.db")).unwrap().encrypted(keys());
    (Arc::new(saver), dir)
}

#[cfg(feature = "postgres")]
async fn encrypted_postgres() -> (Arc<dyn Checkpointer>, postgres_server::TestSchema) {
    let schema = postgres_server::TestSchema::new("graphwright_conformance");
    (Arc::new(graphwright::PostgresSaver::connect(&schema.url()).await.unwrap().encrypted(keys())), schema)
}

conformance!(memory_saver, memory());
conformance!(sqlite_saver, sqlite());
#[cfg(feature = "postgres")]
conformance!(postgres_saver, postgres().await);
// Encryption keeps the whole contract, on both stores that write to disk.
conformance!(encrypted_sqlite_saver, encrypted_sqlite());
#[cfg(feature = "postgres")]
conformance!(encrypted_postgres_saver, encrypted_postgres().await);
