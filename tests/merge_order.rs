//! A step's updates are folded in task order (pulled nodes in declaration order, then Send
//! tasks in send order), never in the order the tasks happened to finish.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

use graphwright::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;
use std::time::Duration;
use tokio::time::Instant;

/// The order in which nodes finished, per test (each test has its own graph and list).
fn finished(list: &Mutex<Vec<String>>, name: impl Into<String>) {
    list.lock().unwrap().push(name.into());
}

/// `a`, `b`, `c` run in one step and finish in reverse order: `c` first, `a` last.
#[graph]
mod fan_out {
    use super::*;

    pub static FINISHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    #[state]
    pub struct State {
        #[reducer(append)]
        pub names: Vec<String>,
    }

    #[node(entry, next = [a, b, c])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    async fn a(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(30)).await;
        finished(&FINISHED, "a");
        StateUpdate::new().names(vec!["a".to_owned()])
    }

    #[node(next = END)]
    async fn b(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(20)).await;
        finished(&FINISHED, "b");
        StateUpdate::new().names(vec!["b".to_owned()])
    }

    #[node(next = END)]
    async fn c(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(10)).await;
        finished(&FINISHED, "c");
        StateUpdate::new().names(vec!["c".to_owned()])
    }
}

#[tokio::test(start_paused = true)]
async fn parallel_nodes_merge_in_declaration_order_not_completion_order() {
    let app = fan_out::graph().compile().unwrap();
    let started = Instant::now();
    let out = app.invoke(fan_out::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(*fan_out::FINISHED.lock().unwrap(), ["c", "b", "a"], "the nodes finished in reverse order");
    assert_eq!(out.state.names, ["a", "b", "c"], "merged in declaration order");
    assert_eq!(started.elapsed(), Duration::from_millis(30), "the three nodes ran concurrently");
    assert_eq!(out.steps, 2);
}

/// One payload of a Send.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    /// Which job, in send order.
    pub id: u64,
    /// How long the job takes.
    pub delay_ms: u64,
}

/// Five Send tasks of one step; the first sent finishes last.
#[graph]
mod sends {
    use super::*;

    pub static FINISHED: Mutex<Vec<String>> = Mutex::new(Vec::new());

    #[state]
    pub struct State {
        #[reducer(append)]
        pub ids: Vec<u64>,
        #[reducer(append)]
        pub positions: Vec<u32>,
    }

    #[node(entry, send = work)]
    fn split(_state: &State) -> Vec<Job> {
        (0..5).map(|id| Job { id, delay_ms: 50 - 10 * id }).collect()
    }

    #[node(next = END)]
    async fn work(job: &Job, rt: &Runtime) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
        finished(&FINISHED, job.id.to_string());
        StateUpdate::new().ids(vec![job.id]).positions(vec![rt.task_index()])
    }
}

#[tokio::test(start_paused = true)]
async fn send_tasks_merge_in_send_order_not_completion_order() {
    let app = sends::graph().compile().unwrap();
    let started = Instant::now();
    let out = app.invoke(sends::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(*sends::FINISHED.lock().unwrap(), ["4", "3", "2", "1", "0"], "the tasks finished in reverse order");
    assert_eq!(out.state.ids, [0, 1, 2, 3, 4], "merged in send order");
    assert_eq!(out.state.positions, [0, 1, 2, 3, 4], "each task's index is its place in the send order");
    assert_eq!(started.elapsed(), Duration::from_millis(50), "the Send tasks ran concurrently");
}

/// A step with pulled tasks and Send tasks: `later` is pulled (declared after the Send target
/// `early`, which finishes first), the Send tasks come after every pulled task.
#[graph]
mod mixed {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub names: Vec<String>,
    }

    #[node(entry, next = later, send = early)]
    fn split(_state: &State) -> (StateUpdate, Vec<Job>) {
        let jobs = vec![Job { id: 1, delay_ms: 5 }, Job { id: 2, delay_ms: 1 }];
        (StateUpdate::new().names(vec!["split".to_owned()]), jobs)
    }

    #[node(next = END)]
    async fn early(job: &Job) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(job.delay_ms)).await;
        StateUpdate::new().names(vec![format!("early {}", job.id)])
    }

    #[node(next = END)]
    async fn later(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(20)).await;
        StateUpdate::new().names(vec!["later".to_owned()])
    }
}

#[tokio::test(start_paused = true)]
async fn pulled_tasks_merge_before_send_tasks() {
    let app = mixed::graph().compile().unwrap();
    let out = app.invoke(mixed::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.names, ["split", "later", "early 1", "early 2"]);
    assert_eq!(out.steps, 2, "the pulled node and the Send tasks share one step");
}

/// Sync and async nodes in one step: the sync ones run in place, the async ones are polled
/// together, and the merge still follows declaration order.
#[graph]
mod sync_and_async {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub names: Vec<String>,
    }

    #[node(entry, next = [slow, quick, sync_one])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    async fn slow(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(10)).await;
        StateUpdate::new().names(vec!["slow".to_owned()])
    }

    #[node(next = END)]
    async fn quick(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().names(vec!["quick".to_owned()])
    }

    #[node(next = END)]
    fn sync_one(_state: &State) -> StateUpdate {
        StateUpdate::new().names(vec!["sync_one".to_owned()])
    }
}

#[tokio::test(start_paused = true)]
async fn sync_and_async_nodes_merge_in_declaration_order() {
    let app = sync_and_async::graph().compile().unwrap();
    let out = app.invoke(sync_and_async::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.names, ["slow", "quick", "sync_one"]);
}
