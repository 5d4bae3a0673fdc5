//! The functional API: `#[entrypoint]` and `#[task]`. LangGraph's functional tests in intent
//! (`test_imp_task`, `test_imp_nested`, `test_imp_stream_order`, `test_entrypoint_stateful*`,
//! `test_multiple_interrupts_functional*`, `test_no_redundant_put_writes_for_cached_task`),
//! plus: concurrent tasks, interrupts inside tasks, a failed task's finished siblings kept,
//! replay with changed arguments refused, retries, timeouts, cached tasks, tasks outside an
//! entrypoint, and an entrypoint on a SQLite file continued by a second graph value.

// The tasks and entrypoints are private to this test; their items are `pub` the way users
// write them.
#![allow(unreachable_pub)]

use futures::StreamExt;
use graphwright::functional::{Final, FlowState, FlowStateUpdate, TaskError};
use graphwright::prelude::*;
use graphwright::{EventKind, SqliteSaver};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Every call of a counted task, as `name(arg)`, by test.
static CALLS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// How many times the call `call` (as `name(arg)`) was made.
fn called(call: &str) -> usize {
    CALLS.lock().unwrap().iter().filter(|c| *c == call).count()
}

fn note(call: String) {
    CALLS.lock().unwrap().push(call);
}

/// The `updates` events of a run, as `name: value`.
async fn updates(mut events: graphwright::RunStream<FlowState>) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        match event.kind {
            EventKind::SubgraphUpdate { node, update, cached } => {
                seen.push(format!("{node}: {update}{}", if cached { " (cached)" } else { "" }));
            }
            EventKind::Update { node, update, .. } => {
                let output = update.output.as_ref().map(graphwright::Write::value).cloned().unwrap_or_default();
                seen.push(format!("{node} -> {output}"));
            }
            EventKind::Interrupted { interrupts, .. } => seen.push(format!("interrupt {}", interrupts[0].value)),
            EventKind::Failed(error) => seen.push(format!("failed: {error}")),
            _ => {}
        }
    }
    seen
}

#[task]
async fn mapper(input: u64) -> String {
    note(format!("mapper({input})"));
    tokio::time::sleep(Duration::from_millis(20 * input)).await;
    input.to_string().repeat(2)
}

#[entrypoint]
async fn mapped(input: Vec<u64>, rt: &Runtime) -> Result<Vec<String>, NodeError> {
    let mapped = futures::future::try_join_all(input.into_iter().map(mapper)).await?;
    let answer: String = rt.interrupt("question")?;
    Ok(mapped.into_iter().map(|m| m + &answer).collect())
}

/// LangGraph's `test_imp_task`: tasks stream as they finish, an interrupt pauses the run, and
/// the resumed run answers the tasks from their stored results.
#[tokio::test]
async fn tasks_run_concurrently_and_are_not_run_again_on_resume() {
    let app = mapped::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("imp-task");
    let mut seen = updates(app.stream(vec![4, 5], &cfg, StreamMode::Updates).unwrap()).await;
    seen[..2].sort();
    assert_eq!(seen, ["mapper: \"44\"", "mapper: \"55\"", "interrupt \"question\""]);
    assert_eq!((called("mapper(4)"), called("mapper(5)")), (1, 1));

    let out = app.resume(&cfg, "answer").await.unwrap();
    assert_eq!(out.value.unwrap(), ["44answer", "55answer"]);
    assert_eq!((called("mapper(4)"), called("mapper(5)")), (1, 1), "finished tasks return their stored results");
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(state.state.output, json!(["44answer", "55answer"]));
    assert_eq!(state.state.input, json!([4, 5]));
}

/// Three tasks that only finish once all three have started: they run concurrently.
#[task]
async fn meet(n: u32, rt: &Runtime<std::sync::Arc<tokio::sync::Barrier>>) -> u32 {
    rt.context().wait().await;
    n
}

#[entrypoint]
async fn gathering(count: u32, rt: &Runtime<std::sync::Arc<tokio::sync::Barrier>>) -> Result<u32, NodeError> {
    let _ = rt;
    let met = futures::future::try_join_all((0..count).map(meet)).await?;
    Ok(met.into_iter().sum())
}

#[tokio::test]
async fn tasks_awaited_together_run_together() {
    let app = gathering::entrypoint().compile().unwrap();
    let cfg = RunConfig::default().context(std::sync::Arc::new(tokio::sync::Barrier::new(3)));
    let out = tokio::time::timeout(Duration::from_secs(10), app.invoke(3, &cfg)).await;
    assert_eq!(out.expect("the three tasks met").unwrap().value, Some(3));
}

#[task]
fn submapper(input: u64) -> String {
    note(format!("submapper({input})"));
    input.to_string()
}

#[task]
async fn outer(input: u64) -> Result<String, NodeError> {
    tokio::time::sleep(Duration::from_millis(10 * input)).await;
    Ok(submapper(input).await?.repeat(2))
}

#[entrypoint]
async fn nested(input: Vec<u64>, rt: &Runtime) -> Result<Vec<String>, NodeError> {
    let mapped = futures::future::try_join_all(input.into_iter().map(outer)).await?;
    let answer: String = rt.interrupt("question")?;
    Ok(mapped.into_iter().map(|m| m + &answer).collect())
}

/// LangGraph's `test_imp_nested`: a task's own tasks stream before it, and are stored with it.
#[tokio::test]
async fn tasks_called_by_a_task_stream_before_it_and_are_kept_with_it() {
    let app = nested::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("imp-nested");
    let seen = updates(app.stream(vec![6, 7], &cfg, StreamMode::Updates).unwrap()).await;
    assert_eq!(
        seen,
        ["submapper: \"6\"", "outer: \"66\"", "submapper: \"7\"", "outer: \"77\"", "interrupt \"question\""]
    );
    let out = app.resume(&cfg, "a").await.unwrap();
    assert_eq!(out.value.unwrap(), ["66a", "77a"]);
    assert_eq!((called("submapper(6)"), called("submapper(7)")), (1, 1));
}

/// LangGraph's test passes dicts from task to task; here a struct with the same keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Doc {
    /// Grows with each task.
    pub a: String,
    /// Set by `foo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b: Option<String>,
    /// Set by `bar` and `baz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub c: Option<String>,
}

#[task]
fn foo(state: Doc) -> Doc {
    Doc { a: state.a + "foo", b: Some("bar".into()), c: None }
}

#[task]
async fn bar(a: String, b: String) -> Doc {
    Doc { a: a + &b, b: None, c: Some("bark".into()) }
}

#[task]
fn baz(state: Doc) -> Doc {
    Doc { a: state.a + "baz", b: None, c: Some("something else".into()) }
}

#[entrypoint]
async fn chain(state: Doc) -> Result<Doc, NodeError> {
    let first = foo(state).await?;
    let second = bar(first.a, first.b.unwrap_or_default()).await?;
    baz(second).await
}

/// LangGraph's `test_imp_stream_order`: each task's result in call order, then the
/// entrypoint's value.
#[tokio::test]
async fn sync_and_async_tasks_stream_in_call_order_then_the_value() {
    let app = chain::entrypoint().compile().unwrap();
    let input = Doc { a: "0".into(), b: None, c: None };
    let seen = updates(app.stream(input, &RunConfig::thread("order"), StreamMode::Updates).unwrap()).await;
    assert_eq!(
        seen,
        [
            r#"foo: {"a":"0foo","b":"bar"}"#,
            r#"bar: {"a":"0foobar","c":"bark"}"#,
            r#"baz: {"a":"0foobarbaz","c":"something else"}"#,
            r#"chain -> {"a":"0foobarbaz","c":"something else"}"#,
        ]
    );
}

#[entrypoint]
async fn remembering(inputs: Value, previous: Option<Value>) -> Value {
    json!({"previous": previous, "current": inputs})
}

/// LangGraph's `test_entrypoint_stateful` and `test_entrypoint_stateful_update_state`: each
/// run gets what the last one returned as `previous`; `update_state` sets it.
#[tokio::test]
async fn previous_is_what_the_last_run_on_the_thread_saved() {
    let app = remembering::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("stateful");
    let first = app.invoke(json!({"a": "1"}), &cfg).await.unwrap().value.unwrap();
    assert_eq!(first, json!({"current": {"a": "1"}, "previous": null}));
    let second = app.invoke(json!({"a": "2"}), &cfg).await.unwrap().value.unwrap();
    assert_eq!(second, json!({"current": {"a": "2"}, "previous": first}));

    app.update_state(&cfg, FlowStateUpdate::new().saved(json!({"a": "-1"})), None).await.unwrap();
    let third = app.invoke(json!({"a": "3"}), &cfg).await.unwrap().value.unwrap();
    assert_eq!(third, json!({"current": {"a": "3"}, "previous": {"a": "-1"}}));

    let other = app.invoke(json!({"a": "x"}), &RunConfig::default()).await.unwrap().value.unwrap();
    assert_eq!(other, json!({"current": {"a": "x"}, "previous": null}), "a run without a thread has no previous");
}

#[entrypoint]
async fn totals(add: u64, previous: Option<u64>) -> Final<String, u64> {
    let total = previous.unwrap_or(0) + add;
    Final::new(format!("total {total}"), total)
}

#[tokio::test]
async fn final_returns_one_value_and_saves_another() {
    let app = totals::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("final");
    assert_eq!(app.invoke(2, &cfg).await.unwrap().value.unwrap(), "total 2");
    assert_eq!(app.invoke(3, &cfg).await.unwrap().value.unwrap(), "total 5");
    let state = app.get_state(&cfg).await.unwrap().unwrap().state;
    assert_eq!((state.output, state.saved), (json!("total 5"), json!(5)));
}

static DOUBLES: AtomicUsize = AtomicUsize::new(0);

#[task]
async fn double(x: u64) -> u64 {
    DOUBLES.fetch_add(1, Ordering::SeqCst);
    2 * x
}

#[entrypoint]
async fn interrupted_thrice(_input: Value, rt: &Runtime) -> Result<Vec<Value>, NodeError> {
    let mut values = Vec::new();
    for x in [1, 2, 3] {
        values.push(json!(double(x).await?));
        let answer: Value = rt.interrupt(json!({"a": "boo"}))?;
        values.push(answer);
    }
    Ok(values)
}

/// LangGraph's `test_multiple_interrupts_functional`: each resume answers the next interrupt,
/// and `double` runs once per call in all.
#[tokio::test]
async fn several_interrupts_are_answered_one_resume_at_a_time() {
    let app = interrupted_thrice::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("thrice");
    assert_eq!(app.invoke(json!({}), &cfg).await.unwrap().interrupts().len(), 1);
    for answer in ["a", "b"] {
        let out = app.resume(&cfg, answer).await.unwrap();
        assert_eq!(out.value, None, "still waiting");
    }
    let out = app.resume(&cfg, "c").await.unwrap();
    assert_eq!(out.value.unwrap(), [json!(2), json!("a"), json!(4), json!("b"), json!(6), json!("c")]);
    assert_eq!(DOUBLES.load(Ordering::SeqCst), 3);
}

#[task]
async fn ask(question: String, rt: &Runtime) -> Result<String, NodeError> {
    note(format!("ask({question})"));
    rt.interrupt(question)
}

#[task]
fn setup(x: u64) -> u64 {
    note(format!("setup({x})"));
    x
}

#[entrypoint]
async fn questioned(x: u64) -> Result<String, NodeError> {
    let n = setup(x).await?;
    ask(format!("q{n}")).await
}

/// An interrupt inside a task pauses the run; on resume the task runs again with the answer
/// and the finished `setup` does not (LangGraph's `test_no_redundant_put_writes_for_cached_task`
/// checks the stored writes; here the calls are counted).
#[tokio::test]
async fn an_interrupt_inside_a_task_pauses_the_run_and_the_task_gets_the_answer() {
    let app = questioned::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("questioned");
    let paused = app.invoke(11, &cfg).await.unwrap();
    assert_eq!(paused.interrupts()[0].value, json!("q11"));
    let out = app.resume(&cfg, "ans").await.unwrap();
    assert_eq!(out.value.unwrap(), "ans");
    assert_eq!((called("setup(11)"), called("ask(q11)")), (1, 2), "setup ran once; ask ran again with the answer");
}

static FLAKY: AtomicUsize = AtomicUsize::new(0);

#[task]
async fn steady(n: u32) -> u32 {
    note(format!("steady({n})"));
    n
}

#[task]
async fn flaky(n: u32) -> Result<u32, NodeError> {
    if FLAKY.fetch_add(1, Ordering::SeqCst) == 0 {
        return Err(NodeError::msg("the service is down"));
    }
    Ok(n * 10)
}

#[entrypoint]
async fn fragile(n: u32) -> Result<u32, NodeError> {
    let (a, b) = futures::future::try_join(steady(n), flaky(n)).await?;
    Ok(a + b)
}

/// A failed task fails the run and names itself; resuming runs it again, and not the task
/// that had finished beside it.
#[tokio::test]
async fn a_failed_task_fails_the_run_and_its_finished_sibling_is_kept() {
    let app = fragile::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("fragile");
    let error = app.invoke(7, &cfg).await.unwrap_err();
    let GraphError::Node { node, source, .. } = &error else { panic!("{error}") };
    assert_eq!(node, "fragile");
    let task = source.downcast_ref::<TaskError>().expect("a task's error");
    assert!(matches!(task, TaskError::Failed { task: "flaky", attempts: 1, .. }), "{task}");
    assert_eq!(task.to_string(), "task `flaky` failed (attempt 1): the service is down");
    let out = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(out.value, Some(77));
    assert_eq!(called("steady(7)"), 1, "the sibling that had finished did not run again");
}

#[task]
async fn labelled(label: String) -> String {
    note(format!("labelled({label})"));
    format!("<{label}>")
}

#[entrypoint]
async fn relabel(label: String, rt: &Runtime) -> Result<String, NodeError> {
    let first = labelled(label).await?;
    let _: String = rt.interrupt("go on?")?;
    Ok(first)
}

/// A run that makes a stored call with other arguments (its input was changed under it) fails,
/// naming the task, instead of getting another call's result.
#[tokio::test]
async fn a_call_with_other_arguments_than_the_stored_one_is_refused() {
    let app = relabel::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("relabel");
    app.invoke("one".to_owned(), &cfg).await.unwrap();
    let changed = app.update_state(&cfg, FlowStateUpdate::new().input(json!("two")), None).await;
    assert!(changed.is_ok(), "{changed:?}");
    let error = app.resume(&cfg, "yes").await.unwrap_err();
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    let task = source.downcast_ref::<TaskError>().expect("a task's error");
    let TaskError::Replayed { task: "labelled", call: 0, stored, .. } = task else { panic!("{task}") };
    assert!(stored.starts_with("the same task with arguments"), "{stored}");
    assert!(task.to_string().contains("the entrypoint's code or input changed since that call ran"), "{task}");
    assert_eq!(called("labelled(two)"), 0, "the task did not run with the new arguments");
}

#[tokio::test]
async fn a_task_called_outside_an_entrypoint_says_where_to_call_it() {
    let error = double(2).await.unwrap_err().to_string();
    assert_eq!(
        error,
        "task `double` was called outside an entrypoint run: call it from an `#[entrypoint]` fn (or from a task \
         such a fn calls)"
    );
}

static RETRIED: AtomicUsize = AtomicUsize::new(0);

#[task(retry = RetryPolicy::new(3).initial_backoff(Duration::from_millis(1)), timeout = Duration::from_millis(200))]
async fn unreliable(name: String) -> Result<String, NodeError> {
    match RETRIED.fetch_add(1, Ordering::SeqCst) {
        0 => Err(NodeError::msg("first attempt fails")),
        1 => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok("too late".into())
        }
        _ => Ok(format!("hello {name}")),
    }
}

#[entrypoint]
async fn retrying(name: String) -> Result<String, NodeError> {
    unreliable(name).await
}

#[tokio::test]
async fn a_task_is_retried_under_its_policy_and_timed_per_attempt() {
    let app = retrying::entrypoint().compile().unwrap();
    let out = app.invoke("ada".to_owned(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.value.unwrap(), "hello ada");
    assert_eq!(RETRIED.load(Ordering::SeqCst), 3, "a failure, a timeout, then the answer");
}

static CACHED_DOUBLES: AtomicUsize = AtomicUsize::new(0);

#[task(cache = CachePolicy::new().ttl(Duration::from_millis(1500)))]
fn cached_double(x: u64) -> u64 {
    CACHED_DOUBLES.fetch_add(1, Ordering::SeqCst);
    2 * x
}

#[entrypoint]
async fn doubling(xs: Vec<u64>) -> Result<Vec<u64>, NodeError> {
    let mut out = Vec::new();
    for x in xs {
        out.push(cached_double(x).await?);
    }
    Ok(out)
}

/// LangGraph's `test_multiple_interrupts_functional_cache` in intent: a cached task runs once
/// per argument across calls and runs, is streamed as cached, and runs again once its entry
/// expired.
#[tokio::test]
async fn a_cached_task_runs_once_per_argument_until_its_entry_expires() {
    let app = doubling::entrypoint().cache(InMemoryCache::new()).compile().unwrap();
    let out = app.invoke(vec![1, 1, 2, 2, 3, 3], &RunConfig::default()).await.unwrap();
    assert_eq!(out.value.unwrap(), [2, 2, 4, 4, 6, 6]);
    assert_eq!(CACHED_DOUBLES.load(Ordering::SeqCst), 3);
    let seen = updates(app.stream(vec![1], &RunConfig::default(), StreamMode::Updates).unwrap()).await;
    assert_eq!(seen, ["cached_double: 2 (cached)", "doubling -> [2]"]);
    tokio::time::sleep(Duration::from_millis(1600)).await;
    app.invoke(vec![1], &RunConfig::default()).await.unwrap();
    assert_eq!(CACHED_DOUBLES.load(Ordering::SeqCst), 4, "the entry had expired");

    let uncached = doubling::entrypoint().compile().unwrap();
    let error = uncached.invoke(vec![1], &RunConfig::default()).await.unwrap_err().to_string();
    assert!(
        error.contains("task `cached_double` has a cache policy but entrypoint `doubling` has no cache"),
        "{error}"
    );
}

#[task]
async fn numbered(n: u32) -> u32 {
    note(format!("numbered({n})"));
    n
}

#[entrypoint]
async fn fifty(count: u32, rt: &Runtime) -> Result<u32, NodeError> {
    let mut sum = 0;
    for n in 0..count {
        sum += numbered(n).await?;
        if n == count / 2 {
            let _: Value = rt.interrupt("halfway")?;
        }
    }
    Ok(sum)
}

/// An entrypoint on a SQLite file is continued by another graph value on the file (as by
/// another process): the tasks finished before the pause are not run again.
#[tokio::test]
async fn a_thread_on_a_sqlite_file_is_continued_by_another_entrypoint_value() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flow.db");
    let cfg = RunConfig::thread("fifty");
    let first = fifty::entrypoint().checkpointer(SqliteSaver::open(&path).unwrap()).compile().unwrap();
    assert_eq!(first.invoke(50, &cfg).await.unwrap().interrupts().len(), 1);
    drop(first);
    let second = fifty::entrypoint().checkpointer(SqliteSaver::open(&path).unwrap()).compile().unwrap();
    assert_eq!(second.resume(&cfg, json!("go")).await.unwrap().value, Some((0..50).sum()));
    for n in 0..50 {
        assert_eq!(called(&format!("numbered({n})")), 1, "task call {n} ran once");
    }
}

/// Appends "a" to every item: a plain graph the entrypoint below calls.
#[graph]
mod add_a {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub items: Vec<String>,
    }

    #[node(entry, next = END)]
    fn append(state: &State) -> StateUpdate {
        StateUpdate::new().items(state.items.iter().map(|i| format!("{i}a")).collect::<Vec<_>>())
    }
}

#[entrypoint]
async fn through_a_graph(items: Vec<String>) -> Result<Vec<String>, NodeError> {
    let app = add_a::graph().compile()?;
    let upper = futures::future::try_join_all(items.into_iter().map(|i| labelled(i.to_uppercase()))).await?;
    Ok(app.invoke(add_a::State { items: upper }, &RunConfig::default()).await?.state.items)
}

/// LangGraph's `test_imp_nested` ends by invoking a compiled graph from the entrypoint.
#[tokio::test]
async fn an_entrypoint_calls_a_compiled_graph() {
    let app = through_a_graph::entrypoint().compile().unwrap();
    let out = app.invoke(vec!["x".into(), "y".into()], &RunConfig::default()).await.unwrap();
    assert_eq!(out.value.unwrap(), ["<X>a", "<Y>a"]);
}

#[entrypoint]
async fn summarizer(topic: String) -> Result<String, NodeError> {
    Ok(format!("summary of {}", labelled(topic).await?))
}

/// An entrypoint as a node of a `#[graph]`: the parent's state maps to its input, its value
/// back to the parent's update.
#[graph]
mod desk {
    use graphwright::functional::FlowState;
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub topic: String,
        pub summary: String,
    }

    impl From<&State> for FlowState {
        fn from(desk: &State) -> Self {
            FlowState { input: serde_json::json!(desk.topic), ..FlowState::default() }
        }
    }

    impl From<FlowState> for StateUpdate {
        fn from(done: FlowState) -> Self {
            StateUpdate::new().summary(done.output.as_str().unwrap_or_default().to_owned())
        }
    }

    #[node(entry, subgraph, next = END)]
    fn summarize() -> StateGraph<FlowState> {
        super::summarizer::entrypoint().into_graph()
    }
}

#[tokio::test]
async fn an_entrypoint_is_a_subgraph_node_of_a_graph() {
    let app = desk::graph().compile().unwrap();
    let input = desk::State { topic: "tides".into(), summary: String::new() };
    let out = app.invoke(input, &RunConfig::thread("desk")).await.unwrap();
    assert_eq!(out.state.summary, "summary of <tides>");
}

#[task]
async fn approve(item: String, rt: &Runtime) -> Result<String, NodeError> {
    let verdict: String = rt.interrupt(format!("approve {item}?"))?;
    Ok(format!("{item}: {verdict}"))
}

#[entrypoint]
async fn approvals(items: Vec<String>) -> Result<Vec<String>, NodeError> {
    futures::future::try_join_all(items.into_iter().map(approve)).await
}

/// Tasks awaited together that each ask: a task runs while its future is polled, and
/// `try_join_all` stops polling at the first interrupt, so the questions come one resume at a
/// time, each answered by its id (an id that is not pending is refused, naming it); the task
/// answered first is not asked again.
#[tokio::test]
async fn interrupts_of_concurrent_tasks_are_answered_by_id() {
    let app = approvals::entrypoint().compile().unwrap();
    let cfg = RunConfig::thread("approvals");
    let pending = |out: &graphwright::functional::Returned<Vec<String>>| {
        let [one] = out.interrupts() else { panic!("{:?}", out.interrupts()) };
        (one.value.as_str().unwrap().to_owned(), one.id.clone())
    };
    let (question, tea) = pending(&app.invoke(vec!["tea".into(), "cake".into()], &cfg).await.unwrap());
    assert_eq!(question, "approve tea?");

    let error = app.resume(&cfg, Resume::by_id([("nope", json!("yes"))])).await.unwrap_err();
    assert!(error.to_string().contains("no pending interrupt has the id `nope`"), "{error}");
    let (question, cake) = pending(&app.resume(&cfg, Resume::by_id([(tea.clone(), json!("yes"))])).await.unwrap());
    assert_eq!(question, "approve cake?");
    assert_ne!(cake, tea);
    let out = app.resume(&cfg, Resume::by_id([(cake, json!("no"))])).await.unwrap();
    assert_eq!(out.value.unwrap(), ["tea: yes", "cake: no"]);
}

#[task]
async fn draft(topic: String, rt: &Runtime<graphwright::model::ScriptedModel>) -> Result<String, NodeError> {
    use graphwright::model::ChatModel;
    let reply = rt.context().invoke(&[Message::user(topic)], rt).await?;
    Ok(reply.content)
}

#[entrypoint]
async fn drafting(topic: String, rt: &Runtime<graphwright::model::ScriptedModel>) -> Result<String, NodeError> {
    let _ = rt;
    draft(topic).await
}

/// A model called inside a task streams its tokens in `messages` under the task's name, and the
/// reply is the task's result.
#[tokio::test]
async fn a_model_called_in_a_task_streams_its_tokens() {
    let model = graphwright::model::ScriptedModel::new([Message::assistant("Tides follow the moon.")]);
    let app = drafting::entrypoint().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone());
    let mut events = app.stream("tides".to_owned(), &cfg, StreamMode::Messages | StreamMode::Updates).unwrap();
    let (mut text, mut nodes, mut value) = (String::new(), Vec::new(), None);
    while let Some(event) = events.next().await {
        match event.kind {
            EventKind::Message { node, delta, .. } => {
                nodes.push(node);
                text.push_str(&delta);
            }
            EventKind::Update { update, .. } => value = update.output.as_ref().map(|w| w.value().clone()),
            _ => {}
        }
    }
    assert_eq!(text, "Tides follow the moon.");
    assert!(!nodes.is_empty() && nodes.iter().all(|n| n == "draft"), "{nodes:?}");
    assert_eq!(value, Some(json!("Tides follow the moon.")));
    assert!(model.requests().iter().all(|r| r.stream), "a run that streams messages streams its replies");
}

/// `tasks` and `checkpoints` (together, `debug`) on an entrypoint: the entrypoint's task starts
/// and finishes with its update, and the checkpoint after its step is reported (as for a
/// graph: the steps' checkpoints, not the input's).
#[tokio::test]
async fn an_entrypoint_streams_tasks_and_checkpoints() {
    let app = sequence_of_two::entrypoint().checkpointer(MemorySaver::new()).compile().unwrap();
    let cfg = RunConfig::thread("debugged");
    let mut events = app.stream(3, &cfg, StreamMode::Debug).unwrap();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        match event.kind {
            EventKind::TaskStarted { node, .. } => seen.push(format!("start {node}")),
            EventKind::TaskFinished { node, error, interrupted, result, .. } => {
                let output = result.and_then(|u| u.output.as_ref().map(|w| w.value().clone()));
                seen.push(format!("finish {node} {error:?} {interrupted} {output:?}"));
            }
            EventKind::Checkpoint { step, .. } => seen.push(format!("checkpoint {step}")),
            _ => {}
        }
    }
    assert_eq!(seen, ["start sequence_of_two", "finish sequence_of_two None false Some(Number(5))", "checkpoint 1"]);
    let head = app.graph().get_state(&cfg).await.unwrap().expect("the thread is stored");
    assert_eq!(head.step, 1, "the reported checkpoint is the thread's head");
}

#[entrypoint]
async fn sequence_of_two(x: u64) -> Result<u64, NodeError> {
    let once = setup(x + 1).await?;
    setup(once + 1).await
}

static GREETINGS: AtomicUsize = AtomicUsize::new(0);

/// Keyed by the name alone: the greeting's punctuation does not make a new entry.
#[task(cache = CachePolicy::new().key(|args: &Value| args[0].to_string()))]
fn greet(name: String, mark: String) -> String {
    GREETINGS.fetch_add(1, Ordering::SeqCst);
    format!("hello {name}{mark}")
}

#[task(cache = CachePolicy::new().key(|n: &u64| n.to_string()))]
fn miskeyed(n: u64) -> u64 {
    n
}

#[entrypoint]
async fn greeting(names: Vec<(String, String)>) -> Result<Vec<String>, NodeError> {
    let mut out = Vec::new();
    for (name, mark) in names {
        out.push(greet(name, mark).await?);
    }
    Ok(out)
}

#[entrypoint]
async fn miskeying(n: u64) -> Result<u64, NodeError> {
    miskeyed(n).await
}

/// A task's key function is given its arguments as a JSON array; one of another input type is
/// an error naming the task, never a key quietly replaced by the arguments' digest.
#[tokio::test]
async fn a_task_key_function_takes_the_arguments_as_json() {
    let app = greeting::entrypoint().cache(InMemoryCache::new()).compile().unwrap();
    let input = vec![("ada".into(), "!".into()), ("ada".into(), "?".into()), ("bo".into(), ".".into())];
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();
    assert_eq!(out.value.unwrap(), ["hello ada!", "hello ada!", "hello bo."]);
    assert_eq!(GREETINGS.load(Ordering::SeqCst), 2);

    let app = miskeying::entrypoint().cache(InMemoryCache::new()).compile().unwrap();
    let error = app.invoke(1, &RunConfig::default()).await.unwrap_err().to_string();
    assert!(error.contains("task `miskeyed` has a cache key function of `u64`"), "{error}");
}
