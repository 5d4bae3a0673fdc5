//! A tool reaches the graph's long-term memory through its injected `ToolRuntime`.

use graphwright::prelude::*;
use graphwright::store::InMemoryStore;
use graphwright::tool::ToolNode;
use graphwright::{Store, ToolCall, tools};
use std::sync::Arc;

/// Remember a fact about the user.
#[tool]
async fn remember(
    /// The fact.
    fact: String,
    rt: &ToolRuntime,
) -> Result<String, graphwright::StoreError> {
    rt.store()?.put(&["facts"], "latest", serde_json::json!(fact), None).await?;
    Ok("remembered".to_owned())
}

#[graph]
mod memo {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn tools(state: &State, rt: &Runtime) -> StateUpdate {
        let node = ToolNode::new(tools![Remember]);
        StateUpdate::new().messages(node.run(&state.messages, state, rt).await)
    }
}

fn asking() -> memo::State {
    let call =
        ToolCall { id: "c1".into(), name: "remember".into(), arguments: serde_json::json!({"fact": "likes tea"}) };
    memo::State { messages: vec![Message::assistant("").with_tool_calls(vec![call])] }
}

#[tokio::test]
async fn a_tool_writes_to_the_graphs_store() {
    let store = Arc::new(InMemoryStore::new());
    let app = memo::graph().shared_store(store.clone()).compile().unwrap();
    let out = app.invoke(asking(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.messages.last().unwrap().content, "remembered");
    let item = store.get(&["facts"], "latest").await.unwrap().unwrap();
    assert_eq!(item.value, "likes tea");
}

#[tokio::test]
async fn without_a_store_the_model_is_told_so() {
    let app = memo::graph().compile().unwrap();
    let out = app.invoke(asking(), &RunConfig::default()).await.unwrap();
    let answer = out.state.messages.last().unwrap();
    assert!(answer.is_error);
    assert!(answer.content.contains("store"), "{}", answer.content);
}

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[test]
fn a_tool_says_whether_it_reads_the_runtime() {
    use graphwright::Tool;
    assert!(Remember.reads_runtime(), "takes a ToolRuntime");
    assert!(!Add.reads_runtime(), "takes none: a tool node need not copy the state for it");
}
