//! An essay written by the functional API, across processes: an outline, three sections
//! written by tasks that run concurrently, a person's review by interrupt, then a revision.
//!
//! The first process runs until the review and stops, its thread saved in a SQLite file; a
//! second process (this example started again) answers the review. The tasks that had finished
//! return their stored results without running again: the second process writes nothing twice.
//!
//! ```text
//! cargo run --example functional                    # both steps: pause, then resume in a new process
//! cargo run --example functional -- start           # pause only
//! cargo run --example functional -- review "shorter" # resume the paused thread with a review
//! ```

use graphwright::prelude::*;
use graphwright::{Durability, functional::Final};
use serde_json::json;
use std::path::PathBuf;

/// Plans the essay's sections.
#[task]
async fn outline(topic: String) -> Vec<String> {
    println!("[process {}] outlining {topic}", std::process::id());
    ["why it matters", "how it works", "what comes next"].iter().map(|part| format!("{topic}: {part}")).collect()
}

/// Writes one section (a model call, in a real workflow).
#[task]
async fn write_section(heading: String) -> String {
    println!("[process {}] writing \"{heading}\"", std::process::id());
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    format!("{heading}. A paragraph on it.")
}

/// Revises the draft after the review.
#[task]
fn revise(draft: Vec<String>, review: String) -> String {
    println!("[process {}] revising after the review \"{review}\"", std::process::id());
    format!("{} (revised: {review})", draft.join(" "))
}

/// The workflow. `previous` is how many essays this thread has written before.
#[entrypoint]
async fn essay(topic: String, previous: Option<u32>, rt: &Runtime) -> Result<Final<String, u32>, NodeError> {
    let headings = outline(topic).await?;
    // Called together, the three sections are written concurrently.
    let draft = futures::future::try_join_all(headings.into_iter().map(write_section)).await?;
    let review: String = rt.interrupt(json!({"question": "how should the draft change?", "draft": draft}))?;
    let text = revise(draft, review).await?;
    Ok(Final::new(text, previous.unwrap_or(0) + 1))
}

fn database() -> PathBuf {
    std::env::temp_dir().join("graphwright-functional.db")
}

const THREAD: &str = "essay-1";

fn config() -> RunConfig {
    // Each finished task's result is stored before the next one starts.
    RunConfig::thread(THREAD).durability(Durability::Sync)
}

async fn start() -> Result<(), Report> {
    let _ = std::fs::remove_file(database());
    let app = essay::entrypoint().checkpointer(SqliteSaver::open(database())?).compile()?;
    let out = app.invoke("durable workflows".to_owned(), &config()).await?;
    for interrupt in out.interrupts() {
        println!("[process {}] paused for a review: {}", std::process::id(), interrupt.value);
    }
    println!("[process {}] thread {THREAD} saved in {}", std::process::id(), database().display());
    Ok(())
}

async fn review(review: &str) -> Result<(), Report> {
    let app = essay::entrypoint().checkpointer(SqliteSaver::open(database())?).compile()?;
    let out = app.resume(&config(), json!(review)).await?;
    let text = out.value.ok_or("the essay is still waiting")?;
    println!("[process {}] done: {text}", std::process::id());
    let saved = app.get_state(&config()).await?.map(|s| s.state.saved);
    println!("[process {}] essays written on this thread: {}", std::process::id(), saved.unwrap_or_default());
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["start"] => start().await,
        ["review", text] => review(text).await,
        [] => {
            start().await?;
            let status =
                std::process::Command::new(std::env::current_exe()?).args(["review", "make it shorter"]).status()?;
            if !status.success() {
                return Err(format!("the resuming process failed: {status}").into());
            }
            Ok(())
        }
        _ => Err("usage: functional [start | review TEXT]".into()),
    }
}
