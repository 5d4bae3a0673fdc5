//! Subgraphs: a compiled graph as a node of another. State mapped both ways, checkpoints under
//! the parent's thread in namespaces, interrupts two levels down resumed where they paused
//! (from a fresh process's view of the same SQLite file), namespaced stream events, Send into a
//! subgraph, and a failing subgraph.

use futures::StreamExt;
use graphwright::prelude::*;
use graphwright::{EventKind, StreamModes, SubgraphError};
use serde_json::json;
use std::sync::Mutex;

/// The topics `gather` ran for, one entry per run of it (tests run in parallel, so each uses
/// a topic of its own).
static GATHERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn gathered(topic: &str) -> usize {
    GATHERED.lock().unwrap().iter().filter(|t| *t == topic).count()
}

#[graph]
mod desk {
    use super::*;

    #[state]
    pub struct State {
        pub topic: String,
        pub report: String,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = research)]
    fn intake(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["intake".into()])
    }

    #[node(subgraph, next = publish)]
    fn research() -> StateGraph<super::research::State> {
        super::research::graph()
    }

    #[node(next = END)]
    fn publish(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["publish".into()])
    }
}

#[graph]
mod research {
    use super::*;

    #[state]
    pub struct State {
        pub topic: String,
        #[reducer(append)]
        pub notes: Vec<String>,
        pub approved: Option<bool>,
    }

    #[node(entry, next = review)]
    fn gather(state: &State, rt: &Runtime) -> StateUpdate {
        GATHERED.lock().unwrap().push(state.topic.clone());
        rt.write("gathering");
        StateUpdate::new().notes(vec![format!("facts about {}", state.topic)])
    }

    #[node(subgraph, next = END)]
    fn review() -> StateGraph<State> {
        super::review::graph()
    }
}

#[graph(state = super::research::State)]
mod review {
    use super::research::{State, StateUpdate};
    use super::*;

    #[node(entry, next = END)]
    fn ask(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let approved: bool = rt.interrupt(json!({ "notes": state.notes }))?;
        Ok(StateUpdate::new().approved(Some(approved)).notes(vec!["reviewed".into()]))
    }
}

impl From<&desk::State> for research::State {
    fn from(desk: &desk::State) -> Self {
        Self { topic: desk.topic.clone(), notes: Vec::new(), approved: None }
    }
}

impl From<research::State> for desk::StateUpdate {
    fn from(research: research::State) -> Self {
        let verdict = if research.approved == Some(true) { "approved" } else { "rejected" };
        desk::StateUpdate::new()
            .report(format!("{} ({verdict})", research.notes.join("; ")))
            .log(vec!["research".into()])
    }
}

fn desk_on(path: &std::path::Path) -> CompiledGraph<desk::State> {
    desk::graph().checkpointer(SqliteSaver::open(path).unwrap()).compile().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn an_interrupt_two_levels_down_pauses_the_run_and_resume_continues_there() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("desk.db");
    let cfg = RunConfig::thread("story-1");

    let paused = desk_on(&path).invoke(desk::StateUpdate::new().topic("dunes".to_owned()), &cfg).await.unwrap();
    assert_eq!(paused.status(), RunStatus::Interrupted);
    let interrupt = &paused.interrupts[0];
    assert_eq!(interrupt.node, "research", "the parent sees the interrupt on the node that ran the subgraph");
    assert_eq!(interrupt.value, json!({ "notes": ["facts about dunes"] }));
    assert_eq!(paused.state.log, ["intake"]);

    // Another process: a new graph on the same file.
    let app = desk_on(&path);
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["research"]);
    assert_eq!(snapshot.interrupts, paused.interrupts);
    assert!(snapshot.tasks[0].subgraph.is_none(), "plain `get_state` does not read subgraphs");
    let nested = app.get_state_with_subgraphs(&cfg).await.unwrap().unwrap();
    let research = nested.tasks[0].subgraph.as_deref().expect("the research subgraph's state");
    assert_eq!(research.next, ["review"]);
    assert_eq!(research.state["notes"], json!(["facts about dunes"]));
    let review = research.tasks[0].subgraph.as_deref().expect("the review subgraph's state");
    assert_eq!(review.next, ["ask"]);
    assert_eq!(review.namespace.len(), 2);
    assert_eq!(review.namespace[0], research.namespace[0]);
    assert!(review.namespace[1].starts_with("review:"));
    assert_eq!(review.interrupts[0].value, json!({ "notes": ["facts about dunes"] }));
    assert_eq!(
        review.interrupts[0].id, paused.interrupts[0].id,
        "the interrupt keeps the id it has where it was raised"
    );

    let done = app.resume(&cfg, true).await.unwrap();
    assert_eq!(done.status(), RunStatus::Finished);
    assert_eq!(done.state.report, "facts about dunes; reviewed (approved)");
    assert_eq!(done.state.log, ["intake", "research", "publish"]);
    assert_eq!(gathered("dunes"), 1, "the subgraph's finished node did not run again");

    // Resuming a finished thread changes nothing.
    let again = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(again.state.log, ["intake", "research", "publish"]);
}

#[tokio::test(flavor = "current_thread")]
async fn a_copied_thread_resumes_inside_its_copied_subgraphs() {
    let dir = tempfile::tempdir().unwrap();
    let saver: std::sync::Arc<dyn graphwright::Checkpointer> =
        std::sync::Arc::new(SqliteSaver::open(dir.path().join("desk.db")).unwrap());
    let app = desk::graph().shared_checkpointer(std::sync::Arc::clone(&saver)).compile().unwrap();
    let (original, copy) = (RunConfig::thread("story-a"), RunConfig::thread("story-b"));
    app.invoke(desk::StateUpdate::new().topic("reefs".to_owned()), &original).await.unwrap();
    let keys = saver.thread_keys("story-a").await.unwrap();
    assert_eq!(keys.len(), 3, "the thread and its two nested subgraphs: {keys:?}");

    saver.copy_thread("story-a", "story-b").await.unwrap();
    let mut copied = saver.thread_keys("story-b").await.unwrap();
    let mut expected: Vec<String> = keys.iter().map(|k| k.replacen("story-a", "story-b", 1)).collect();
    copied.sort();
    expected.sort();
    assert_eq!(copied, expected, "every subgraph key is copied under the new thread");
    let nested = app.get_state_with_subgraphs(&copy).await.unwrap().unwrap();
    let review =
        nested.tasks[0].subgraph.as_deref().and_then(|r| r.tasks[0].subgraph.as_deref()).expect("nested state");
    assert_eq!(review.next, ["ask"], "the copy is paused where the original is, two levels down");

    let done = app.resume(&copy, true).await.unwrap();
    assert_eq!(done.state.report, "facts about reefs; reviewed (approved)");
    assert_eq!(gathered("reefs"), 1, "the copied subgraph's finished node did not run again");
    let still = app.get_state(&original).await.unwrap().unwrap();
    assert_eq!(still.next, ["research"], "the original still waits for its answer");
}

#[graph(state = super::research::State)]
mod twice {
    use super::research::{State, StateUpdate};
    use super::*;

    #[node(entry, next = END)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let first: String = rt.interrupt("first?")?;
        let second: String = rt.interrupt("second?")?;
        Ok(StateUpdate::new().notes(vec![first, second]))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_second_interrupt_in_the_subgraph_gets_the_second_answer() {
    let app = StateGraph::<research::State>::new()
        .add_subgraph("inner", twice::graph())
        .add_edge(START, "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("twice");
    let first = app.invoke(research::StateUpdate::new().topic("t".to_owned()), &cfg).await.unwrap();
    assert_eq!(first.interrupts[0].value, json!("first?"));
    let second = app.resume(&cfg, "a").await.unwrap();
    assert_eq!(second.interrupts[0].value, json!("second?"));
    assert_ne!(second.interrupts[0].id, first.interrupts[0].id);
    let done = app.resume(&cfg, "b").await.unwrap();
    assert_eq!(done.status(), RunStatus::Finished);
    assert_eq!(done.state.notes, ["a", "b"]);
}

#[graph]
mod tally {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub items: Vec<u32>,
        #[reducer(add)]
        pub total: u32,
    }

    #[node(entry, next = END)]
    fn add_one(_state: &State) -> StateUpdate {
        StateUpdate::new().items(vec![1]).total(1)
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_subgraph_of_the_same_state_writes_back_what_it_ended_with_once() {
    let app = StateGraph::<tally::State>::new()
        .add_subgraph("inner", tally::graph())
        .add_edge(START, "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap();
    let input = tally::State { items: vec![7], total: 7 };
    let out = app.invoke(input.clone(), &RunConfig::default()).await.unwrap();
    assert_eq!((out.state.items, out.state.total), (vec![7, 1], 8), "reducers applied once, not twice");
    let on_thread = app.invoke(input, &RunConfig::thread("tally")).await.unwrap();
    assert_eq!((on_thread.state.items, on_thread.state.total), (vec![7, 1], 8));
}

#[tokio::test(flavor = "current_thread")]
async fn subgraph_events_carry_their_namespace_in_order() {
    let app = desk::graph().compile().unwrap();
    let modes = StreamMode::Updates | StreamMode::Custom | StreamMode::Subgraphs;
    let mut events = app.stream(desk::StateUpdate::new().topic("tides".to_owned()), &RunConfig::thread("s1"), modes);
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        let depth = event.namespace.len();
        assert!(event.namespace.iter().all(|segment| segment.contains(':')), "{:?}", event.namespace);
        seen.push(match event.kind {
            EventKind::Update { node, .. } => format!("{depth} update {node}"),
            EventKind::SubgraphUpdate { node, update, .. } => format!("{depth} subgraph update {node} {update}"),
            EventKind::Custom { node, value } => format!("{depth} custom {node} {value}"),
            EventKind::Interrupted { .. } => "interrupted".to_owned(),
            other => format!("{depth} {other:?}"),
        });
    }
    assert_eq!(
        seen,
        [
            "0 update intake",
            "1 custom gather \"gathering\"",
            r#"1 subgraph update gather {"notes":["facts about tides"]}"#,
            "interrupted",
        ]
    );

    // Without `Subgraphs`, only what nodes wrote comes up from inside.
    let modes: StreamModes = StreamMode::Updates | StreamMode::Custom;
    let mut events = app.stream(desk::StateUpdate::new().topic("tides".to_owned()), &RunConfig::thread("s2"), modes);
    let mut kinds = Vec::new();
    while let Some(event) = events.next().await {
        if let EventKind::Custom { .. } = event.kind {
            assert_eq!(event.namespace.len(), 1);
            assert!(event.namespace[0].starts_with("research:"));
        }
        kinds.push(matches!(event.kind, EventKind::SubgraphUpdate { .. } | EventKind::SubgraphValues(_)));
    }
    assert_eq!(kinds, [false, false, false]);
}

/// The state of the Send test's parent.
#[state]
pub struct Words {
    /// The words to measure.
    pub words: Vec<String>,
    /// Their lengths, in send order.
    #[reducer(append)]
    pub lengths: Vec<usize>,
}

#[graph]
mod measure {
    use super::*;

    #[state]
    pub struct State {
        pub word: String,
        pub length: usize,
    }

    #[node(entry, next = END)]
    fn count(state: &State) -> StateUpdate {
        StateUpdate::new().length(state.word.chars().count())
    }
}

impl From<&String> for measure::State {
    fn from(word: &String) -> Self {
        Self { word: word.clone(), length: 0 }
    }
}

impl From<measure::State> for WordsUpdate {
    fn from(done: measure::State) -> Self {
        WordsUpdate::new().lengths(vec![done.length])
    }
}

#[tokio::test(flavor = "current_thread")]
async fn send_runs_the_subgraph_once_per_payload() {
    fn split(state: &Words) -> Vec<String> {
        state.words.clone()
    }
    let app = StateGraph::<Words>::new()
        .add_node("split", split)
        .add_payload_subgraph::<String, _, _>("measure", measure::graph())
        .add_edge(START, "split")
        .add_send("split", "measure")
        .add_edge("measure", END)
        .compile()
        .unwrap();
    let input = Words { words: vec!["a".into(), "abc".into(), "ab".into()], lengths: Vec::new() };
    let out = app.invoke(input.clone(), &RunConfig::thread("words")).await.unwrap();
    assert_eq!(out.state.lengths, [1, 3, 2], "one subgraph run per payload, merged in send order");
    let plain = app.invoke(input, &RunConfig::default()).await.unwrap();
    assert_eq!(plain.state.lengths, [1, 3, 2]);
}

#[graph]
mod broken {
    use super::*;

    #[state]
    pub struct State {
        pub n: u32,
    }

    #[node(entry, next = END)]
    fn fail(state: &State) -> Result<StateUpdate, NodeError> {
        Err(NodeError::msg(format!("cannot handle {}", state.n)))
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_failing_subgraph_fails_its_node_with_the_inner_error() {
    let app = StateGraph::<broken::State>::new()
        .add_subgraph("inner", broken::graph())
        .add_edge(START, "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap();
    let out = app.run(broken::StateUpdate::new().n(3), &RunConfig::thread("broken")).await.unwrap();
    assert_eq!(out.status(), RunStatus::Failed);
    let failure = out.failure.unwrap();
    assert_eq!(failure.node.as_deref(), Some("inner"));
    assert!(failure.message.contains("subgraph `broken` failed"), "{}", failure.message);
    assert!(failure.message.contains("cannot handle 3"), "{}", failure.message);

    let error = app.invoke(broken::StateUpdate::new().n(4), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { node, source, .. } = &error else { panic!("{error}") };
    assert_eq!(node, "inner");
    assert!(source.downcast_ref::<SubgraphError>().is_some(), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn a_subgraph_that_does_not_compile_fails_the_parent_compile() {
    let miswired = StateGraph::<broken::State>::new().add_edge(START, "nowhere");
    let error = StateGraph::<broken::State>::new()
        .add_subgraph("inner", miswired)
        .add_edge(START, "inner")
        .add_edge("inner", END)
        .compile()
        .unwrap_err();
    assert!(error.to_string().contains("subgraph `inner` does not compile"), "{error}");
    assert!(error.to_string().contains("nowhere"), "{error}");
}

#[tokio::test(flavor = "current_thread")]
async fn an_interrupt_in_a_subgraph_without_a_thread_is_an_error_naming_the_node() {
    let error =
        desk::graph().compile().unwrap().invoke(desk::State::default(), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { node, .. } = &error else { panic!("{error}") };
    assert_eq!(node, "research");
    let text = format!("{error:#}");
    assert!(text.contains("subgraph `research` failed"), "{text}");
    let inner = std::error::Error::source(&error).map(ToString::to_string).unwrap_or_default();
    assert!(inner.contains("ask"), "the innermost node is named: {inner}");
}

#[graph]
mod fragile {
    use super::*;

    #[state]
    pub struct State {
        pub n: u32,
        #[reducer(append)]
        pub seen: Vec<u32>,
    }

    #[node(entry, next = END)]
    fn check(state: &State) -> StateUpdate {
        assert!(state.n < 10, "too big: {}", state.n);
        StateUpdate::new().seen(vec![state.n])
    }
}

/// The error and every error under it, one per line.
fn chain(error: &GraphError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text.push('\n');
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

#[tokio::test(flavor = "current_thread")]
async fn subgraphs_of_sync_nodes_end_the_same_run_in_place_as_run_as_tasks() {
    let middle = StateGraph::<fragile::State>::new()
        .name("middle")
        .add_subgraph("inner", fragile::graph())
        .add_edge(START, "inner")
        .add_edge("inner", END);
    let app = StateGraph::<fragile::State>::new()
        .add_subgraph("outer", middle)
        .add_edge(START, "outer")
        .add_edge("outer", END)
        .compile()
        .unwrap();
    // Without a thread nothing can make these subgraphs wait, so they run in place; on a
    // thread each is a task of its own that checkpoints in its namespace.
    let plain = app.invoke(fragile::StateUpdate::new().n(3), &RunConfig::default()).await.unwrap();
    let stored = app.invoke(fragile::StateUpdate::new().n(3), &RunConfig::thread("fragile-ok")).await.unwrap();
    assert_eq!((plain.state.n, &plain.state.seen), (3, &vec![3]));
    assert_eq!((stored.state.n, &stored.state.seen), (3, &vec![3]));

    let in_place = app.invoke(fragile::StateUpdate::new().n(12), &RunConfig::default()).await.unwrap_err();
    let as_task = app.invoke(fragile::StateUpdate::new().n(12), &RunConfig::thread("fragile-panic")).await.unwrap_err();
    for error in [&in_place, &as_task] {
        let GraphError::Node { node, .. } = error else { panic!("{error}") };
        assert_eq!(node, "outer");
        let text = chain(error);
        for part in ["subgraph `middle` failed", "subgraph `fragile` failed", "`check`", "too big: 12"] {
            assert!(text.contains(part), "{part} in {text}");
        }
    }
    assert_eq!(chain(&in_place), chain(&as_task));
}

#[graph]
mod talk {
    use super::*;

    /// A conversation.
    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    fn reply(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::assistant("hi")])
    }
}

/// The names of a schema's properties.
fn properties(schema: &serde_json::Value) -> Vec<&str> {
    schema["properties"].as_object().map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default()
}

#[test]
fn subgraphs_describe_what_their_nodes_run_two_levels_down() {
    let app = desk::graph().compile().unwrap();
    let subgraphs = app.subgraphs();
    let nodes: Vec<&str> = subgraphs.iter().map(graphwright::Subgraph::node).collect();
    assert_eq!(nodes, ["research"]);
    assert_eq!(nodes, app.drawing().subgraphs, "the drawing's subgraph nodes, described");

    let research = &subgraphs[0];
    assert_eq!(research.name(), "research");
    let schema = research.state_schema().to_value();
    assert_eq!(properties(&schema), ["approved", "notes", "topic"], "the child's state, not the parent's");
    assert_eq!(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", "as `schema_for!` makes it");
    assert!(research.message_fields().is_empty());

    let inner = research.subgraphs();
    assert_eq!(inner.len(), 1, "the child's own subgraph node");
    assert_eq!((inner[0].node(), inner[0].name()), ("review", "review"));
    assert_eq!(inner[0].state_schema(), research.state_schema(), "`review` runs over research's state");
    assert!(inner[0].subgraphs().is_empty(), "the bottom");

    assert!(research::graph().compile().unwrap().subgraphs()[0].subgraphs().is_empty());
    assert!(fragile::graph().compile().unwrap().subgraphs().is_empty(), "a graph without subgraph nodes");
}

#[test]
fn a_subgraph_schema_is_made_by_the_callers_generator_with_its_message_fields() {
    let app = StateGraph::<talk::State>::new()
        .add_subgraph("talk", talk::graph())
        .add_edge(START, "talk")
        .add_edge("talk", END)
        .compile()
        .unwrap();
    let talk = &app.subgraphs()[0];
    assert_eq!(talk.message_fields(), ["messages"]);
    assert_eq!(talk.state_schema().to_value()["description"], "A conversation.");

    let mut generator = schemars::generate::SchemaSettings::draft07().into_generator();
    let schema = talk.state_schema_in(&mut generator).to_value();
    assert_eq!(schema["properties"]["messages"]["items"]["$ref"], "#/definitions/Message", "draft 7's references");
    let message = generator.subschema_for::<Message>().to_value();
    assert_eq!(message["$ref"], "#/definitions/Message", "the same generator: one definition, one reference");
}

#[test]
fn a_send_target_that_runs_a_subgraph_is_described_too() {
    fn split(state: &Words) -> Vec<String> {
        state.words.clone()
    }
    let app = StateGraph::<Words>::new()
        .add_node("split", split)
        .add_payload_subgraph::<String, _, _>("measure", measure::graph())
        .add_edge(START, "split")
        .add_send("split", "measure")
        .add_edge("measure", END)
        .compile()
        .unwrap();
    let subgraphs = app.subgraphs();
    assert_eq!(subgraphs.len(), 1);
    assert_eq!(subgraphs[0].node(), "measure");
    assert_eq!(properties(&subgraphs[0].state_schema().to_value()), ["length", "word"]);
}

/// Who started the run, as a node of the parent and one of its subgraph see it.
#[graph]
mod signed {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    fn who(rt: &Runtime) -> String {
        rt.user().map_or_else(|| "nobody".to_owned(), |u| format!("{} ({})", u.identity, u.permissions.join(",")))
    }

    #[node(entry, next = inner)]
    fn outer(rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![format!("outer: {}", who(rt))])
    }

    #[node(subgraph, next = END)]
    fn inner() -> StateGraph<State> {
        super::signed_inner::graph()
    }
}

#[graph(state = super::signed::State)]
mod signed_inner {
    use super::signed::StateUpdate;
    use super::*;

    #[node(entry, next = END)]
    fn mark(rt: &Runtime) -> StateUpdate {
        let who = rt.user().map_or_else(|| "nobody".to_owned(), |u| u.identity.clone());
        StateUpdate::new().seen(vec![format!("inner: {who}")])
    }
}

#[tokio::test]
async fn a_subgraph_sees_the_user_of_the_run_that_runs_it() {
    let app = signed::graph().compile().unwrap();
    let user = graphwright::AuthUser::new("ada").with_permissions(["read", "write"]);
    let out = app.invoke(signed::State::default(), &RunConfig::default().user(user)).await.unwrap();
    assert_eq!(out.state.seen, ["outer: ada (read,write)", "inner: ada"]);
    let out = app.invoke(signed::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.seen, ["outer: nobody", "inner: nobody"], "no user outside a server");
}
