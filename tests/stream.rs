//! Streaming: typed events per mode, one terminal event per run, back-pressure, cancellation.

use futures::StreamExt;
use graphwright::prelude::*;
use graphwright::stream::{Event, EventKind, RunStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

#[state]
struct Count {
    counter: i64,
}

fn bump(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

fn chain(n: usize) -> CompiledGraph<Count> {
    let mut graph = StateGraph::<Count>::new().add_edge(START, "node_0");
    for i in 0..n {
        graph = graph.add_node(format!("node_{i}"), bump);
        let next = if i + 1 == n { END.to_owned() } else { format!("node_{}", i + 1) };
        graph = graph.add_edge(format!("node_{i}"), next);
    }
    graph.compile().unwrap()
}

async fn collect<S: State>(mut events: RunStream<S>) -> Vec<Event<S>> {
    let mut all = Vec::new();
    while let Some(event) = events.next().await {
        all.push(event);
    }
    all
}

fn terminals<S: State>(events: &[Event<S>]) -> usize {
    events.iter().filter(|e| e.kind.is_terminal()).count()
}

#[tokio::test]
async fn updates_and_values_of_a_chain_come_in_order_then_one_terminal() {
    let app = chain(1000);
    let events = collect(app.stream(Count::default(), &RunConfig::default(), StreamMode::Updates)).await;
    assert_eq!(events.len(), 1001);
    for (i, event) in events[..1000].iter().enumerate() {
        let EventKind::Update { node, update, cached } = &event.kind else { panic!("{event:?}") };
        assert_eq!(node, &format!("node_{i}"));
        assert!(!cached, "a node without a cache policy always runs");
        assert_eq!(update.counter, Some(graphwright::Write::Reduce(i64::try_from(i).unwrap() + 1)));
        assert_eq!(event.step, i as u64 + 1);
    }
    assert!(matches!(events[1000].kind, EventKind::Finished { ref state, steps: 1000 } if state.counter == 1000));

    let events = collect(app.stream(Count::default(), &RunConfig::default(), StreamMode::Values)).await;
    let values: Vec<i64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Values(s) => Some(s.counter),
            _ => None,
        })
        .collect();
    assert_eq!(values, (0..=1000).collect::<Vec<_>>(), "the input after START, then every step");
    assert_eq!(terminals(&events), 1);
}

#[graph]
mod talker {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub fail: bool,
        pub ask: bool,
        #[reducer(append)]
        pub said: Vec<String>,
    }

    #[node(entry, next = speak)]
    async fn think(_state: &State, rt: &Runtime) -> StateUpdate {
        rt.write(serde_json::json!({"progress": 50}));
        for piece in ["Hel", "lo"] {
            rt.message_delta("m1", piece);
            tokio::task::yield_now().await;
        }
        StateUpdate::new().said(vec!["Hello".into()])
    }

    #[node(next = END)]
    fn speak(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        if state.fail {
            return Err(NodeError::msg("speaker unplugged"));
        }
        if state.ask {
            let _: bool = rt.interrupt("go on?")?;
        }
        Ok(StateUpdate::new().said(vec!["done".into()]))
    }
}

#[tokio::test]
async fn custom_and_message_events_come_from_nodes() {
    let app = talker::graph().compile().unwrap();
    let events =
        collect(app.stream(talker::State::default(), &RunConfig::default(), StreamMode::Custom | StreamMode::Messages))
            .await;
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match &e.kind {
            EventKind::Custom { node, value } => format!("custom {node} {value}"),
            EventKind::Message { node, message_id, delta } => format!("message {node} {message_id} {delta}"),
            EventKind::Finished { .. } => "finished".to_owned(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(kinds, [r#"custom think {"progress":50}"#, "message think m1 Hel", "message think m1 lo", "finished"]);
    let joined: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Message { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(joined, "Hello", "the deltas add up to the message");
}

#[tokio::test]
async fn tasks_and_checkpoints_are_reported_on_a_thread() {
    let app = talker::graph().compile().unwrap();
    let cfg = RunConfig::thread("t").durability(graphwright::Durability::Sync);
    let events = collect(app.stream(talker::State::default(), &cfg, StreamMode::Debug)).await;
    let tasks: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TaskStarted { node, .. } => Some(format!("start {node}")),
            EventKind::TaskFinished { node, error: None, interrupted: false, .. } => Some(format!("end {node}")),
            _ => None,
        })
        .collect();
    assert_eq!(tasks, ["start think", "end think", "start speak", "end speak"]);
    let checkpoints: Vec<i64> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Checkpoint { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(checkpoints, [1, 2]);
    let stored: Vec<String> = app.state_history(&cfg).await.unwrap().iter().map(|s| s.checkpoint_id.clone()).collect();
    for event in &events {
        if let EventKind::Checkpoint { id, .. } = &event.kind {
            assert!(stored.contains(id), "checkpoint events name stored checkpoints");
        }
    }
}

#[tokio::test]
async fn failed_and_interrupted_runs_end_with_one_terminal_event() {
    let app = talker::graph().compile().unwrap();
    let input = talker::State { fail: true, ..talker::State::default() };
    let events = collect(app.stream(input, &RunConfig::default(), StreamMode::Tasks)).await;
    assert_eq!(terminals(&events), 1);
    let EventKind::Failed(error) = &events.last().unwrap().kind else { panic!("{:?}", events.last()) };
    assert!(error.to_string().contains("speaker unplugged"), "{error}");
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::TaskFinished { node, error: Some(_), .. } if node == "speak"))
    );

    let input = talker::State { ask: true, ..talker::State::default() };
    let events = collect(app.stream(input, &RunConfig::thread("ask"), StreamMode::Tasks)).await;
    assert_eq!(terminals(&events), 1);
    let EventKind::Interrupted { interrupts, state } = &events.last().unwrap().kind else {
        panic!("{:?}", events.last())
    };
    assert_eq!((interrupts[0].node.as_str(), state.said.clone()), ("speak", vec!["Hello".to_owned()]));
}

static STEPS_RUN: AtomicUsize = AtomicUsize::new(0);

fn counted(state: &Count) -> CountUpdate {
    STEPS_RUN.fetch_add(1, Ordering::SeqCst);
    bump(state)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_holds_the_run_back() {
    let mut graph = StateGraph::<Count>::new().add_edge(START, "node_0");
    for i in 0..2000 {
        graph = graph.add_node(format!("node_{i}"), counted);
        let next = if i + 1 == 2000 { END.to_owned() } else { format!("node_{}", i + 1) };
        graph = graph.add_edge(format!("node_{i}"), next);
    }
    let app = graph.compile().unwrap();
    let mut events = app.stream(Count::default(), &RunConfig::default(), StreamMode::Updates);
    let first = events.next().await.unwrap();
    assert!(matches!(first.kind, EventKind::Update { .. }));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let ran = STEPS_RUN.load(Ordering::SeqCst);
    assert!(ran < 600, "the run waits for its reader instead of buffering 2000 events: {ran} steps ran");
    let rest = collect(events).await;
    assert_eq!(rest.len(), 2000, "1999 more updates and the terminal event");
    assert_eq!(STEPS_RUN.load(Ordering::SeqCst), 2000);
}

struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[graph(context = Arc<AtomicBool>)]
mod forever {
    use super::DropFlag;
    use graphwright::prelude::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[state]
    pub struct State {
        pub n: u32,
    }

    #[node(entry, next = END)]
    async fn wait(_state: &State, rt: &Runtime<Arc<AtomicBool>>) -> StateUpdate {
        let _flag = DropFlag(Arc::clone(rt.context()));
        std::future::pending::<()>().await;
        StateUpdate::new()
    }
}

/// The first event of a run streamed in `tasks` mode: its node has started.
async fn started(events: &mut RunStream<forever::State>) {
    let first = events.next().await.unwrap();
    assert!(matches!(first.kind, EventKind::TaskStarted { .. }), "{first:?}");
}

#[tokio::test]
async fn dropping_or_cancelling_the_stream_cancels_the_run() {
    let app = forever::graph().compile().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let cfg = RunConfig::default().context(Arc::clone(&dropped));
    let mut events = app.stream(forever::State::default(), &cfg, StreamMode::Tasks);
    started(&mut events).await;
    drop(events);
    assert!(dropped.load(Ordering::SeqCst), "the node in flight was dropped");

    let cancelled = Arc::new(AtomicBool::new(false));
    let cfg = RunConfig::default().context(Arc::clone(&cancelled));
    let mut events = app.stream(forever::State::default(), &cfg, StreamMode::Tasks);
    started(&mut events).await;
    events.cancel();
    assert!(cancelled.load(Ordering::SeqCst), "cancel dropped the node at once");
    let all = collect(events).await;
    assert_eq!(terminals(&all), 1);
    assert!(matches!(all.last().unwrap().kind, EventKind::Cancelled));
}

#[tokio::test]
async fn a_stream_runs_nothing_until_it_is_polled() {
    let app = forever::graph().compile().unwrap();
    let dropped = Arc::new(AtomicBool::new(false));
    let cfg = RunConfig::default().context(Arc::clone(&dropped));
    let events = app.stream(forever::State::default(), &cfg, StreamMode::Tasks);
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(events);
    assert!(!dropped.load(Ordering::SeqCst), "the node never started, so there was nothing to drop");
}

/// A door a node waits at, counting how often it was asked whether it is open.
#[derive(Default)]
struct Door {
    asked: AtomicUsize,
    open: AtomicBool,
    waiting: std::sync::Mutex<Option<std::task::Waker>>,
}

impl Door {
    fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
        if let Some(waker) = self.waiting.lock().unwrap().take() {
            waker.wake();
        }
    }

    async fn pass(&self) {
        std::future::poll_fn(|cx| {
            self.asked.fetch_add(1, Ordering::SeqCst);
            *self.waiting.lock().unwrap() = Some(cx.waker().clone());
            if self.open.load(Ordering::SeqCst) { std::task::Poll::Ready(()) } else { std::task::Poll::Pending }
        })
        .await;
    }
}

#[graph(context = Arc<super::Door>)]
mod doorway {
    use graphwright::prelude::*;
    use std::sync::Arc;

    #[state]
    pub struct State {
        pub n: u32,
    }

    #[node(entry, next = END)]
    async fn walk(_state: &State, rt: &Runtime<Arc<super::Door>>) -> StateUpdate {
        rt.write("at the door");
        rt.context().pass().await;
        rt.write("through");
        StateUpdate::new()
    }
}

#[tokio::test]
async fn a_waiting_run_is_polled_again_only_once_woken() {
    let app = doorway::graph().compile().unwrap();
    let door = Arc::new(Door::default());
    let cfg = RunConfig::default().context(Arc::clone(&door));
    let mut events = app.stream(doorway::State::default(), &cfg, StreamMode::Custom);
    let first = events.next().await.unwrap();
    assert!(matches!(&first.kind, EventKind::Custom { value, .. } if value == "at the door"), "{first:?}");
    assert_eq!(door.asked.load(Ordering::SeqCst), 1);
    // The event was handed over from a run that then waited: asking for more polls nothing
    // until the door wakes it.
    for _ in 0..3 {
        assert!(futures::poll!(events.next()).is_pending());
    }
    assert_eq!(door.asked.load(Ordering::SeqCst), 1, "the run was polled again without being woken");
    door.open();
    let next = events.next().await.unwrap();
    assert!(matches!(&next.kind, EventKind::Custom { value, .. } if value == "through"), "{next:?}");
    assert_eq!(door.asked.load(Ordering::SeqCst), 2);
    assert!(matches!(events.next().await.unwrap().kind, EventKind::Finished { .. }));
    assert!(events.next().await.is_none());
}
