//! `#[task]` and `#[entrypoint]` in their shapes: sync and async, with and without a runtime,
//! `previous` and `Final`, options, and a context type.

use graphwright::functional::Final;
use graphwright::prelude::*;
use std::time::Duration;

pub struct Ctx {
    pub greeting: String,
}

#[task]
fn plain(n: u32) -> u32 {
    n + 1
}

#[task(retry = [RetryPolicy::new(2), RetryPolicy::new(3)], timeout = Duration::from_secs(1))]
async fn greet(name: String, rt: &Runtime<Ctx>) -> Result<String, NodeError> {
    Ok(format!("{} {name}", rt.context().greeting))
}

#[task]
async fn nothing() {}

#[entrypoint]
async fn welcome(name: String, previous: Option<u32>, rt: &Runtime<Ctx>) -> Result<Final<String, u32>, NodeError> {
    let _ = rt;
    nothing().await?;
    let count = plain(previous.unwrap_or(0)).await?;
    Ok(Final::new(greet(name).await?, count))
}

#[entrypoint]
fn sync_entry(n: u32) -> u32 {
    n
}

fn main() {
    let app = welcome::entrypoint().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let cfg = RunConfig::thread("t").context(Ctx { greeting: "hello".into() });
    let out = rt.block_on(app.invoke("ada".to_owned(), &cfg)).unwrap();
    assert_eq!(out.value.as_deref(), Some("hello ada"));
    rt.block_on(app.invoke("bo".to_owned(), &cfg)).unwrap();
    let state = rt.block_on(app.get_state(&cfg)).unwrap().unwrap().state;
    assert_eq!(state.saved, graphwright::json!(2), "the second run saved one more than the first");
    let sync = sync_entry::entrypoint().compile().unwrap();
    assert_eq!(rt.block_on(sync.invoke(4, &RunConfig::default())).unwrap().value, Some(4));
}
