//! Runs on a thread: checkpoints per step in every durability mode, history, and resuming
//! after a failure without running finished tasks again.

use graphwright::checkpoint::{
    BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, WriteRecord,
};
use graphwright::prelude::*;
use graphwright::{Durability, MemorySaver};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[graph]
mod chain {
    #[state]
    pub struct State {
        pub counter: i64,
    }

    #[node(entry, next = b)]
    fn a(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = c)]
    fn b(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = END)]
    fn c(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }
}

static FAST_CALLS: AtomicUsize = AtomicUsize::new(0);
static FLAKY_CALLS: AtomicUsize = AtomicUsize::new(0);

#[graph]
mod siblings {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub done: Vec<String>,
    }

    #[node(entry, next = [fast, flaky])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    fn fast(_state: &State) -> StateUpdate {
        FAST_CALLS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().done(vec!["fast".into()])
    }

    #[node(next = END)]
    async fn flaky(_state: &State) -> Result<StateUpdate, NodeError> {
        tokio::task::yield_now().await;
        if FLAKY_CALLS.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(NodeError::msg("the service is down"));
        }
        Ok(StateUpdate::new().done(vec!["flaky".into()]))
    }
}

async fn count(saver: &MemorySaver, thread: &str) -> usize {
    saver.list(thread, &ListFilter::default()).await.unwrap().len()
}

#[tokio::test]
async fn every_durability_mode_checkpoints_as_documented() {
    for (durability, expected) in [(Durability::Sync, 5), (Durability::Async, 5), (Durability::Exit, 1)] {
        let saver = Arc::new(MemorySaver::new());
        let app = chain::graph().shared_checkpointer(saver.clone()).compile().unwrap();
        let cfg = RunConfig::thread("t").durability(durability);
        let out = app.invoke(chain::State { counter: 0 }, &cfg).await.unwrap();
        assert_eq!(out.state.counter, 3);
        assert_eq!(count(&saver, "t").await, expected, "{durability:?}: K + 2 checkpoints (K = 3 steps), or 1 at exit");
        let latest = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(latest.state.counter, 3, "{durability:?}");
        assert!(latest.next.is_empty());
    }
}

#[tokio::test]
async fn history_is_newest_first_with_steps_and_sources() {
    let app = chain::graph().compile().unwrap();
    let cfg = RunConfig::thread("h");
    app.invoke(chain::State { counter: 10 }, &cfg).await.unwrap();
    let history = app.state_history(&cfg).await.unwrap();
    let steps: Vec<i64> = history.iter().map(|s| s.step).collect();
    assert_eq!(steps, [3, 2, 1, 0, -1]);
    let counters: Vec<i64> = history.iter().map(|s| s.state.counter).collect();
    assert_eq!(counters, [13, 12, 11, 10, 0]);
    assert_eq!(history[3].next, ["a"]);
    assert_eq!(history[4].source, graphwright::checkpoint::Source::Input);
    for pair in history.windows(2) {
        assert_eq!(pair[0].parent_id.as_deref(), Some(pair[1].checkpoint_id.as_str()));
    }

    // A second input on the same thread continues from its state.
    let again = app.invoke(chain::StateUpdate::new(), &cfg).await.unwrap();
    assert_eq!(again.state.counter, 16);
}

#[tokio::test]
async fn resume_after_a_sibling_failed_does_not_rerun_the_finished_task() {
    for durability in [Durability::Sync, Durability::Async, Durability::Exit] {
        FAST_CALLS.store(0, Ordering::SeqCst);
        FLAKY_CALLS.store(0, Ordering::SeqCst);
        let app = siblings::graph().compile().unwrap();
        let cfg = RunConfig::thread("s").durability(durability);
        let error = app.invoke(siblings::State::default(), &cfg).await.unwrap_err();
        assert!(matches!(&error, GraphError::Node { node, .. } if node == "flaky"), "{error}");
        let paused = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!(paused.next, ["flaky"], "{durability:?}: the finished sibling is not next");
        assert_eq!(paused.state.done, ["fast"], "{durability:?}: its saved write is shown applied");
        let stored = app.get_state(&cfg.clone().checkpoint(paused.checkpoint_id.clone())).await.unwrap().unwrap();
        assert!(stored.state.done.is_empty(), "{durability:?}: nothing of the failed step is in the checkpoint itself");

        let out = app.resume(&cfg, ()).await.unwrap();
        assert_eq!(out.state.done, ["fast", "flaky"], "{durability:?}");
        assert_eq!(FAST_CALLS.load(Ordering::SeqCst), 1, "{durability:?}: the finished task ran once");
        assert_eq!(FLAKY_CALLS.load(Ordering::SeqCst), 2);
        let again = app.resume(&cfg, ()).await.unwrap();
        assert_eq!((again.steps, again.state.done), (0, out.state.done), "resuming a finished thread is a no-op");
        assert_eq!(FLAKY_CALLS.load(Ordering::SeqCst), 2, "{durability:?}: nothing ran again");
    }
}

#[tokio::test]
async fn a_second_run_on_a_busy_thread_is_rejected() {
    #[graph]
    mod slow {
        #[state]
        pub struct State {
            pub n: u32,
        }

        #[node(entry, next = END)]
        async fn wait(_state: &State) -> StateUpdate {
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            StateUpdate::new().n(1)
        }
    }
    let app = slow::graph().compile().unwrap();
    let cfg = RunConfig::thread("busy");
    let (first, second) = tokio::join!(app.invoke(slow::State::default(), &cfg), async {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        app.invoke(slow::State::default(), &cfg).await
    });
    assert_eq!(first.unwrap().state.n, 1);
    assert!(matches!(second.unwrap_err(), GraphError::ThreadBusy { thread } if thread == "busy"));
    assert!(app.invoke(slow::State::default(), &cfg).await.is_ok(), "the thread is free again");
}

#[tokio::test]
async fn thread_operations_need_a_thread_and_report_corrupt_records() {
    let saver = Arc::new(MemorySaver::new());
    let app = chain::graph().shared_checkpointer(saver.clone()).compile().unwrap();
    let error = app.resume(&RunConfig::default(), ()).await.unwrap_err();
    assert!(matches!(error, GraphError::NoThread { .. }), "{error}");
    assert!(app.get_state(&RunConfig::thread("none")).await.unwrap().is_none());
    let error = app.resume(&RunConfig::thread("none"), ()).await.unwrap_err();
    assert!(matches!(error, GraphError::NothingToResume { .. }), "{error}");

    let cfg = RunConfig::thread("c");
    app.invoke(chain::State::default(), &cfg).await.unwrap();
    let head = saver.get("c", None).await.unwrap().unwrap();
    let mut body = head.body.clone();
    body[0] ^= 0x01;
    let damaged =
        CheckpointRecord { id: format!("{}z", head.id), parent_id: Some(head.id.clone()), body, ..head.clone() };
    let claim = saver.claim("c").await.unwrap();
    saver.put(&claim, damaged.clone(), Some(head.id.clone()), Vec::new()).await.unwrap();
    saver.release(&claim).await.unwrap();
    let error = app.get_state(&cfg).await.unwrap_err();
    let text = error.to_string();
    assert!(text.contains(&damaged.id) && text.contains("thread `c`") && text.contains("integrity check"), "{text}");
}

/// A store that takes 15 ms per call, and counts the checkpoints it has stored.
struct Slow {
    inner: MemorySaver,
    stored: Arc<AtomicUsize>,
}

impl Checkpointer for Slow {
    fn claim<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.inner.claim(thread)
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.put_batch(claim, vec![BatchOp::Put { record, expected_head: expected, writes }])
    }

    fn put_batch<'a>(
        &'a self,
        claim: &'a Claim,
        ops: Vec<BatchOp>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            let checkpoints = ops.iter().filter(|op| matches!(op, BatchOp::Put { .. })).count();
            for op in ops {
                match op {
                    BatchOp::Writes(writes) => self.inner.put_writes(claim, writes).await?,
                    BatchOp::Put { record, expected_head, writes } => {
                        self.inner.put(claim, record, expected_head, writes).await?;
                    }
                }
            }
            self.stored.fetch_add(checkpoints, Ordering::SeqCst);
            Ok(())
        })
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.put_batch(claim, vec![BatchOp::Writes(writes)])
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        self.inner.get(thread, id)
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> futures::future::BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        self.inner.list(thread, filter)
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        self.inner.writes(thread, checkpoint)
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_durability_stays_within_its_bound_of_a_slow_store() {
    #[graphwright::state]
    struct Count {
        #[reducer(add)]
        n: u64,
    }
    let stored = Arc::new(AtomicUsize::new(0));
    let ahead = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut graph = StateGraph::<Count>::new().add_edge(START, "n0");
    // More steps than the bound, so a run that ignored it would be seen going past it.
    let steps = graphwright::MAX_STEPS_AHEAD * 2 + 10;
    for i in 0..steps {
        let (stored, ahead) = (Arc::clone(&stored), Arc::clone(&ahead));
        // Checkpoints made before step k starts: the input's, step 0's, and one per earlier step.
        let node = move |_s: &Count, rt: &Runtime| {
            let made = rt.step() as usize + 1;
            ahead.lock().unwrap().push(made - stored.load(Ordering::SeqCst));
            CountUpdate::new().n(1)
        };
        let next = if i == steps - 1 { END.to_owned() } else { format!("n{}", i + 1) };
        graph = graph.add_node(format!("n{i}"), node).add_edge(format!("n{i}"), next);
    }
    let saver = Slow { inner: MemorySaver::new(), stored: Arc::clone(&stored) };
    let app = graph.checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread("slow").durability(Durability::Async);
    let out = app.invoke(Count::default(), &cfg).await.unwrap();
    assert_eq!(out.state.n, steps as u64);
    let ahead = ahead.lock().unwrap();
    let most = *ahead.iter().max().unwrap();
    assert!(
        most <= graphwright::MAX_STEPS_AHEAD,
        "at most {} checkpoints waited for the store; {most} did",
        graphwright::MAX_STEPS_AHEAD
    );
    assert!(most > 2, "the run did go ahead of the store ({ahead:?})");
    assert_eq!(stored.load(Ordering::SeqCst), steps + 2, "everything was stored before the run returned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_durability_bound_counts_the_checkpoints_of_subgraphs_too() {
    #[graphwright::state]
    struct Count {
        #[reducer(add)]
        n: u64,
    }
    let bound = graphwright::MAX_STEPS_AHEAD;
    let stored = Arc::new(AtomicUsize::new(0));
    let ahead = Arc::new(std::sync::Mutex::new(Vec::new()));
    // The subgraph has as many steps as the bound, so if its checkpoints did not count against
    // the run's bound, it could queue that many more while the parent's still wait.
    let mut child = StateGraph::<Count>::new().add_edge(START, "c0");
    for i in 0..bound {
        let (stored, ahead) = (Arc::clone(&stored), Arc::clone(&ahead));
        // The parent's checkpoints made before the subgraph node runs (`bound`, see below), and
        // the subgraph's own before its step k: its input's, its step 0's, one per earlier step.
        let node = move |_s: &Count, rt: &Runtime| {
            let made = bound + rt.step() as usize + 1;
            ahead.lock().unwrap().push(made.saturating_sub(stored.load(Ordering::SeqCst)));
            CountUpdate::new().n(1)
        };
        let next = if i == bound - 1 { END.to_owned() } else { format!("c{}", i + 1) };
        child = child.add_node(format!("c{i}"), node).add_edge(format!("c{i}"), next);
    }
    // Enough parent steps before the subgraph node that the parent alone is at the bound when it
    // runs: its input's checkpoint, step 0's, and one per step before.
    let before = bound - 2;
    let mut graph = StateGraph::<Count>::new().add_edge(START, "p0");
    for i in 0..before {
        let (stored, ahead) = (Arc::clone(&stored), Arc::clone(&ahead));
        let node = move |_s: &Count, rt: &Runtime| {
            let made = rt.step() as usize + 1;
            ahead.lock().unwrap().push(made.saturating_sub(stored.load(Ordering::SeqCst)));
            CountUpdate::new().n(1)
        };
        let next = if i == before - 1 { "sub".to_owned() } else { format!("p{}", i + 1) };
        graph = graph.add_node(format!("p{i}"), node).add_edge(format!("p{i}"), next);
    }
    let graph = graph.add_subgraph("sub", child.compile().unwrap()).add_edge("sub", END);
    let saver = Slow { inner: MemorySaver::new(), stored: Arc::clone(&stored) };
    let app = graph.checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread("slow-sub").durability(Durability::Async);
    app.invoke(Count::default(), &cfg).await.unwrap();
    let ahead = ahead.lock().unwrap();
    let most = *ahead.iter().max().unwrap();
    assert!(most <= bound, "at most {bound} checkpoints of the run and its subgraph waited for the store; {most} did");
    assert!(most > 2, "the run did go ahead of the store ({ahead:?})");
    // The parent's: input, step 0, one per node; the subgraph's: input, step 0, one per node.
    assert_eq!(stored.load(Ordering::SeqCst), (before + 2 + 1) + (bound + 2), "everything was stored");
}

/// A saver whose next `lag` reads of a thread's head see it as it was before its newest
/// checkpoint was committed: a read of the head made just before a run committed its next step.
struct Behind {
    inner: MemorySaver,
    lag: AtomicUsize,
}

impl Behind {
    fn lagging(&self) -> bool {
        self.lag.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |lag| lag.checked_sub(1)).is_ok()
    }
}

impl Checkpointer for Behind {
    fn claim<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.inner.claim(thread)
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.put(claim, record, expected, writes)
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.put_writes(claim, writes)
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> futures::future::BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        Box::pin(async move {
            if id.is_none() && self.lagging() {
                let all = self.inner.list(thread, &ListFilter::default()).await?;
                return Ok(all.into_iter().nth(1));
            }
            self.inner.get(thread, id).await
        })
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> futures::future::BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        Box::pin(async move {
            let mut all = self.inner.list(thread, filter).await?;
            if *filter == ListFilter::default() && self.lagging() {
                all.remove(0);
            }
            Ok(all)
        })
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        self.inner.writes(thread, checkpoint)
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> futures::future::BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread)
    }
}

#[tokio::test]
async fn a_read_of_the_head_made_while_a_step_commits_is_made_again() {
    let saver = Arc::new(Behind { inner: MemorySaver::new(), lag: AtomicUsize::new(0) });
    let app = chain::graph().shared_checkpointer(Arc::clone(&saver) as Arc<dyn Checkpointer>).compile().unwrap();
    let cfg = RunConfig::thread("t");
    app.invoke(chain::State::default(), &cfg).await.unwrap();
    let history = app.state_history(&cfg).await.unwrap();

    // The head read first is the checkpoint before the last step, whose only task's write is
    // stored: alone, that reads as a lost checkpoint. The head has moved since, so the read is
    // made again and gives the thread as it is.
    saver.lag.store(1, Ordering::SeqCst);
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!((state.state.counter, state.next.len()), (3, 0));
    saver.lag.store(1, Ordering::SeqCst);
    let again = app.state_history(&cfg).await.unwrap();
    assert_eq!(again.len(), history.len());
    assert_eq!(again[0].checkpoint_id, history[0].checkpoint_id);

    // A head that stays behind is not a read made mid-commit: the damage is reported.
    saver.lag.store(usize::MAX, Ordering::SeqCst);
    let error = app.get_state(&cfg).await.unwrap_err();
    assert!(matches!(error, GraphError::Checkpoint(CheckpointError::Corrupt { .. })), "{error}");
    assert!(error.to_string().contains("the checkpoint stored with it is missing"), "{error}");
    let error = app.state_history(&cfg).await.unwrap_err();
    assert!(error.to_string().contains("the checkpoint stored with it is missing"), "{error}");
}
