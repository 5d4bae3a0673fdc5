//! Map-reduce with Send: one node fans a list of documents out to a worker, one task per
//! document, all in one super-step; a reduce node joins their results once.
//!
//! Workers finish in a different order from the one they were sent in; the merged list still
//! follows the send order, because a step's updates are folded in task order.
//!
//! Run it with `cargo run --example map_reduce`.

use graphwright::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// One document to count the words of.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Doc {
    /// Where the document came from.
    pub title: String,
    /// Its text.
    pub text: String,
}

/// The word-count graph.
#[graph]
pub mod word_count {
    use super::Doc;
    use std::time::Duration;

    /// The documents and what was counted.
    #[state]
    pub struct State {
        /// The documents to count.
        pub docs: Vec<Doc>,
        /// (title, words) per document, in send order.
        #[reducer(append)]
        pub counts: Vec<(String, usize)>,
        /// Words in all documents.
        #[reducer(add)]
        pub total: usize,
        /// The final report.
        pub report: String,
    }

    /// Sends each document to `count`.
    #[node(entry, send = count)]
    fn split(state: &State) -> Vec<Doc> {
        state.docs.clone()
    }

    /// Counts one document's words; the longer the title, the sooner it finishes.
    #[node(next = reduce)]
    async fn count(doc: &Doc) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(60 - 10 * doc.title.len().min(5) as u64)).await;
        println!("counted {:<10} (finished)", doc.title);
        let words = doc.text.split_whitespace().count();
        StateUpdate::new().counts(vec![(doc.title.clone(), words)]).total(words)
    }

    /// Runs once, after every `count` task of the step.
    #[node(next = END)]
    fn reduce(state: &State) -> StateUpdate {
        let lines: Vec<String> = state.counts.iter().map(|(t, n)| format!("{t}: {n}")).collect();
        StateUpdate::new().report(format!("{} ({} words in all)", lines.join(", "), state.total))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    println!("{}", word_count::MERMAID);
    let docs = [("a", "one two"), ("bb", "one two three"), ("ccc", "one"), ("dddd", "one two three four")]
        .map(|(title, text)| Doc { title: title.into(), text: text.into() });
    let app = word_count::graph().compile()?;
    let started = std::time::Instant::now();
    let out = app.invoke(word_count::StateUpdate::new().docs(docs.to_vec()), &RunConfig::default()).await?;
    println!("\n{}", out.state.report);
    println!("{} super-steps in {:?} (the workers ran concurrently)", out.steps, started.elapsed());
    assert!(started.elapsed() < Duration::from_millis(150));
    Ok(())
}
