//! A panicking node fails its run with an error naming it; it never unwinds into the caller.

use graphwright::prelude::*;

#[graph]
mod fragile {
    #[state]
    pub struct State {
        pub mode: u8,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = [calm, shaky])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["start".into()])
    }

    #[node(next = END)]
    fn calm(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["calm".into()])
    }

    #[node(next = END)]
    async fn shaky(state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        match state.mode {
            1 => panic!("index out of range in shaky"),
            2 => std::panic::panic_any(42_u32),
            _ => StateUpdate::new().trail(vec!["shaky".into()]),
        }
    }
}

#[graph]
mod fragile_sync {
    #[state]
    pub struct State {
        pub divisor: i64,
    }

    #[node(entry, next = END)]
    fn divide(state: &State) -> StateUpdate {
        StateUpdate::new().divisor(100 / state.divisor)
    }
}

#[tokio::test]
async fn an_async_panic_fails_the_node_and_applies_nothing_of_its_step() {
    let app = fragile::graph().compile().unwrap();
    let error = app.invoke(fragile::StateUpdate::new().mode(1), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { node, step, source, .. } = &error else { panic!("expected a node error, got {error:?}") };
    assert_eq!((node.as_str(), *step), ("shaky", 2));
    assert_eq!(source.to_string(), "the node panicked: index out of range in shaky");
    assert!(source.downcast_ref::<graphwright::PanicError>().is_some());

    let error = app.invoke(fragile::StateUpdate::new().mode(2), &RunConfig::default()).await.unwrap_err();
    assert!(error.to_string().contains("the node panicked: a panic without a message"), "{error}");

    let out = app.invoke(fragile::StateUpdate::new().mode(0), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["start", "calm", "shaky"]);
}

#[tokio::test]
async fn a_sync_panic_fails_the_node() {
    let app = fragile_sync::graph().compile().unwrap();
    let error = app.invoke(fragile_sync::State { divisor: 0 }, &RunConfig::default()).await.unwrap_err();
    assert!(matches!(&error, GraphError::Node { node, .. } if node == "divide"), "{error:?}");
    assert!(error.to_string().contains("attempt to divide by zero"), "{error}");
}
