//! What the runtime injects into tools (state, context, call id), tools inside a `#[graph]`
//! module, the builder form of a tool node, and the message set's JSON form.

use graphwright::prelude::*;
use graphwright::tool::ToolEnv;
use serde_json::json;

/// The run's context: what the model must never see.
pub struct Ctx {
    /// The signed-in user.
    pub user_id: String,
}

#[graph(context = Ctx)]
mod shop {
    use super::Ctx;
    use graphwright::prelude::*;
    use graphwright::tool::Erased;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        pub region: String,
    }

    /// List the user's orders in the current region.
    #[tool]
    pub fn orders(
        /// At most this many orders.
        limit: u32,
        rt: &ToolRuntime<State, Ctx>,
    ) -> String {
        format!("{limit} orders of {} in {} (call {})", rt.context().user_id, rt.state().region, rt.tool_call_id())
    }

    /// Say who is asking.
    #[tool]
    pub fn whoami(rt: ToolRuntime<Erased, Ctx>) -> String {
        rt.context().user_id.clone()
    }

    #[node(entry, next = END)]
    async fn tools(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        let node = ToolNode::new(tools![Orders, Whoami]);
        StateUpdate::new().messages(node.run(&state.messages, state, rt).await)
    }
}

#[tokio::test]
async fn tools_read_the_graph_state_the_context_and_their_call_id() {
    let app = shop::graph().compile().unwrap();
    let ask = Message::assistant("").with_tool_calls(vec![
        ToolCall::new("o1", "orders", json!({"limit": 3})),
        ToolCall::new("w1", "whoami", json!({})),
    ]);
    let input = shop::StateUpdate::new().messages(vec![ask]).region("EU".to_owned());
    let cfg = RunConfig::default().context(Ctx { user_id: "u-42".into() });
    let out = app.invoke(input, &cfg).await.unwrap();
    let results: Vec<&str> = out.state.messages[1..].iter().map(|m| m.content.as_str()).collect();
    assert_eq!(results, ["3 orders of u-42 in EU (call o1)", "u-42"]);
    assert!(!shop::Orders.parameters().to_string().contains("u-42"));
    assert_eq!(shop::Orders.parameters()["required"], json!(["limit"]));
    assert_eq!(shop::Whoami.parameters()["properties"], json!({}));
}

#[tokio::test]
async fn a_typed_tool_without_its_state_tells_the_model_it_is_unusable() {
    let node = ToolNode::new(tools![shop::Orders, shop::Whoami]);
    let ask = Message::assistant("").with_tool_calls(vec![
        ToolCall::new("o1", "orders", json!({"limit": 3})),
        ToolCall::new("w1", "whoami", json!({})),
    ]);
    let env = ToolEnv::new().context(Ctx { user_id: "u-7".into() });
    let out = node.run_in(&[ask], &env).await;
    assert!(out[0].is_error);
    assert!(out[0].content.starts_with("tool `orders` reads a state of type"), "{}", out[0].content);
    assert_eq!((out[1].content.as_str(), out[1].is_error), ("u-7", false));
}

#[tokio::test]
async fn a_tool_called_by_hand_gets_a_detached_runtime() {
    let out = shop::Whoami.call(json!({}), &ToolRuntime::detached("c1")).await;
    let error = out.unwrap_err();
    assert!(matches!(error, graphwright::tool::ToolError::Injection { what: "context", .. }), "{error}");
}

#[state]
struct Chat {
    #[reducer(messages)]
    messages: Vec<Message>,
}

/// Shout the text back.
#[tool]
fn shout(text: String) -> String {
    text.to_uppercase()
}

#[tokio::test]
async fn the_builder_form_runs_as_a_node() {
    let tools = ToolNode::new(tools![Shout]).into_spec(|s: &Chat| &s.messages, |m| ChatUpdate::new().messages(m));
    let app = StateGraph::<Chat>::new()
        .add_spec("tools", tools)
        .add_edge(START, "tools")
        .add_edge("tools", END)
        .compile()
        .unwrap();
    let ask = Message::assistant("").with_tool_calls(vec![ToolCall::new("s1", "shout", json!({"text": "hi"}))]);
    let out = app.invoke(ChatUpdate::new().messages(vec![ask]), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.messages[1].content, "HI");
    assert_eq!(out.state.messages[1].tool_call_id.as_deref(), Some("s1"));
}

#[test]
fn every_kind_of_message_round_trips_through_json() {
    let messages = vec![
        Message::system("Be brief.").with_id("s"),
        Message::user("Weather in Oslo?").with_id("u"),
        Message::assistant("Let me look.").with_id("a").with_tool_calls(vec![ToolCall::new(
            "c1",
            "weather",
            json!({"city": "Oslo", "days": [1, 2]}),
        )]),
        Message::tool("c1", "4 °C").with_id("t").with_name("weather"),
        Message::tool_error("c2", "no such city").with_id("e"),
    ];
    let text = serde_json::to_string(&messages).unwrap();
    assert_eq!(serde_json::from_str::<Vec<Message>>(&text).unwrap(), messages);
    let value = serde_json::to_value(&messages).unwrap();
    assert_eq!(value[0], json!({"id": "s", "role": "system", "content": "Be brief."}));
    assert_eq!(
        value[2]["tool_calls"],
        json!([{"id": "c1", "name": "weather", "arguments": {"city": "Oslo", "days": [1, 2]}}])
    );
    assert_eq!(
        value[3],
        json!({"id": "t", "role": "tool", "content": "4 °C", "tool_call_id": "c1", "name": "weather"})
    );
    assert_eq!(value[4]["is_error"], json!(true));
    let old_form: Message = serde_json::from_str(r#"{"role": "user", "content": "hi"}"#).unwrap();
    assert_eq!(old_form, Message::user("hi"));
}
