//! The run-level event log: what is captured under each policy, and what is never captured.

use graphwright::log::{CapturePolicy, LogEntryKind, MemoryLog};
use graphwright::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;

#[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
struct Account {
    name: String,
    password: String,
    notes: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Job {
    id: u32,
    session_token: String,
}

#[graph]
mod signup {
    use super::{Account, Job};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub account: Account,
        #[reducer(append)]
        pub done: Vec<u32>,
        pub fail: bool,
    }

    #[node(entry, send = work)]
    fn split(_state: &State) -> Vec<Job> {
        vec![Job { id: 1, session_token: "tok-1".into() }]
    }

    #[node(next = finish)]
    fn work(job: &Job) -> StateUpdate {
        StateUpdate::new().done(vec![job.id])
    }

    #[node(next = END)]
    fn finish(state: &State) -> Result<StateUpdate, NodeError> {
        if state.fail {
            return Err(NodeError::msg("mailer down"));
        }
        Ok(StateUpdate::new())
    }
}

fn input(fail: bool) -> signup::State {
    let account = Account { name: "ada".into(), password: "hunter2".into(), notes: "vip".into() };
    signup::State { account, fail, ..signup::State::default() }
}

#[tokio::test]
async fn the_default_policy_records_which_nodes_ran_and_no_values() {
    let log = Arc::new(MemoryLog::new());
    let cfg = RunConfig::default().log(log.clone(), CapturePolicy::default());
    signup::graph().compile().unwrap().invoke(input(false), &cfg).await.unwrap();
    let kinds: Vec<String> = log
        .entries()
        .iter()
        .map(|e| match &e.kind {
            LogEntryKind::NodeStarted { node, input: None, .. } => format!("start {node}"),
            LogEntryKind::NodeFinished { node, output: None, error: None, .. } => format!("end {node}"),
            other => format!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(kinds, ["start split", "end split", "start work", "end work", "start finish", "end finish"]);
}

#[tokio::test]
async fn everything_is_captured_except_secrets() {
    let log = Arc::new(MemoryLog::new());
    let cfg = RunConfig::default().log(log.clone(), CapturePolicy::everything().redact("notes"));
    signup::graph().compile().unwrap().invoke(input(false), &cfg).await.unwrap();
    let entries = log.entries();
    let text = serde_json::to_string(&entries).unwrap();
    for secret in ["hunter2", "tok-1", "vip"] {
        assert!(!text.contains(secret), "`{secret}` reached the log: {text}");
    }
    let LogEntryKind::NodeStarted { input: Some(state), .. } = &entries[0].kind else { panic!("{:?}", entries[0]) };
    assert_eq!(state["account"], json!({"name": "ada", "password": "[redacted]", "notes": "[redacted]"}));
    let work_input = entries.iter().find_map(|e| match &e.kind {
        LogEntryKind::NodeStarted { node, input, .. } if node == "work" => input.clone(),
        _ => None,
    });
    assert_eq!(work_input, Some(json!({"id": 1, "session_token": "[redacted]"})), "a Send task's input is its payload");
    let states = entries.iter().filter(|e| matches!(e.kind, LogEntryKind::State { .. })).count();
    assert_eq!(states, 3, "one state per step");
    assert!(entries.iter().all(|e| e.run_id == entries[0].run_id));
}

#[tokio::test]
async fn a_failure_is_logged_with_its_error() {
    let log = Arc::new(MemoryLog::new());
    let cfg = RunConfig::default().log(log.clone(), CapturePolicy::default());
    let error = signup::graph().compile().unwrap().invoke(input(true), &cfg).await.unwrap_err();
    assert!(error.to_string().contains("mailer down"));
    let last = log.entries().pop().unwrap();
    assert!(
        matches!(&last.kind, LogEntryKind::NodeFinished { node, error: Some(e), .. } if node == "finish" && e == "mailer down"),
        "{last:?}"
    );
}
