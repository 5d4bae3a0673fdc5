//! A newsroom graph whose fact-check is a graph of its own, with an editor's sign-off inside it,
//! resumed by another process.
//!
//! The `desk` graph runs `fact_check` (a subgraph with its own state type, mapped both ways by
//! `From`). Inside it, `sign_off` asks an editor: the whole run pauses and is saved in a SQLite
//! file, the subgraph's checkpoints under the same thread in a namespace of their own. A second
//! process (this example started again) reads where the run paused, down in the subgraph, and
//! resumes it with the editor's answer; the subgraph's finished `verify` does not run again.
//!
//! ```text
//! cargo run --example subgraph                  # both steps: pause, then resume in a new process
//! cargo run --example subgraph -- start         # pause only
//! cargo run --example subgraph -- answer yes    # resume the paused thread (yes or no)
//! ```

use graphwright::prelude::*;
use std::path::PathBuf;

/// The newsroom: drafts a story, has it fact-checked, publishes or spikes it.
#[graph]
pub mod desk {
    use graphwright::prelude::*;

    /// A story on its way to print.
    #[state]
    pub struct State {
        /// What the story is about.
        pub topic: String,
        /// The text.
        pub draft: String,
        /// The fact-check's verdict.
        pub cleared: Option<bool>,
        /// What was done.
        #[reducer(append)]
        pub log: Vec<String>,
    }

    /// Writes the draft.
    #[node(entry, next = fact_check)]
    fn draft(state: &State) -> StateUpdate {
        StateUpdate::new()
            .draft(format!("Spring tides reach {} this week.", state.topic))
            .log(vec!["drafted".to_owned()])
    }

    /// The fact-check graph, run as this node.
    #[node(subgraph, next = publish | spike, route = verdict)]
    fn fact_check() -> StateGraph<super::fact_check::State> {
        super::fact_check::graph()
    }

    fn verdict(state: &State) -> FactCheckNext {
        if state.cleared == Some(true) { FactCheckNext::Publish } else { FactCheckNext::Spike }
    }

    /// Prints it.
    #[node(next = END)]
    fn publish(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["published".to_owned()])
    }

    /// Drops it.
    #[node(next = END)]
    fn spike(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["spiked".to_owned()])
    }
}

/// The fact-check: verifies the claims, then asks an editor to sign off.
#[graph]
pub mod fact_check {
    use graphwright::prelude::*;

    /// What the fact-check works on.
    #[state]
    pub struct State {
        /// The text under review.
        pub text: String,
        /// The checker's notes.
        #[reducer(append)]
        pub notes: Vec<String>,
        /// The editor's sign-off.
        pub signed_off: Option<bool>,
    }

    /// Checks the claims (the expensive part, which must not run twice).
    #[node(entry, next = sign_off)]
    fn verify(state: &State) -> StateUpdate {
        println!("[process {}] verifying {:?}", std::process::id(), state.text);
        StateUpdate::new().notes(vec!["tide tables agree".to_owned()])
    }

    /// Pauses the whole run for the editor.
    #[node(next = END)]
    fn sign_off(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let yes: bool = rt.interrupt(json!({ "question": "sign off?", "text": state.text, "notes": state.notes }))?;
        Ok(StateUpdate::new().signed_off(Some(yes)))
    }
}

impl From<&desk::State> for fact_check::State {
    fn from(story: &desk::State) -> Self {
        Self { text: story.draft.clone(), notes: Vec::new(), signed_off: None }
    }
}

impl From<fact_check::State> for desk::StateUpdate {
    fn from(check: fact_check::State) -> Self {
        desk::StateUpdate::new()
            .cleared(check.signed_off)
            .log(vec![format!("fact-checked: {}", check.notes.join(", "))])
    }
}

fn database() -> PathBuf {
    std::env::temp_dir().join("graphwright-subgraph.db")
}

const THREAD: &str = "story-88";

fn app() -> Result<CompiledGraph<desk::State>, Report> {
    Ok(desk::graph().checkpointer(SqliteSaver::open(database())?).compile()?)
}

async fn start() -> Result<(), Report> {
    let _ = std::fs::remove_file(database());
    let out =
        app()?.invoke(desk::StateUpdate::new().topic("the harbour".to_owned()), &RunConfig::thread(THREAD)).await?;
    for interrupt in &out.interrupts {
        println!("[process {}] paused in `{}`: {}", std::process::id(), interrupt.node, interrupt.value);
    }
    println!("[process {}] thread {THREAD} saved in {}", std::process::id(), database().display());
    Ok(())
}

async fn answer(yes: bool) -> Result<(), Report> {
    let app = app()?;
    let cfg = RunConfig::thread(THREAD);
    if let Some(snapshot) = app.get_state_with_subgraphs(&cfg).await? {
        for task in &snapshot.tasks {
            if let Some(inside) = &task.subgraph {
                println!(
                    "[process {}] `{}` is paused at {:?} with notes {}",
                    std::process::id(),
                    task.node,
                    inside.next,
                    inside.state["notes"]
                );
            }
        }
    }
    let out = app.resume(&cfg, yes).await?;
    println!("[process {}] resumed; log:", std::process::id());
    for line in &out.state.log {
        println!("    {line}");
    }
    Ok(())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Report> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["start"] => start().await,
        ["answer", yes_or_no] => answer(*yes_or_no == "yes").await,
        [] => {
            start().await?;
            let status = std::process::Command::new(std::env::current_exe()?).args(["answer", "yes"]).status()?;
            if !status.success() {
                return Err(format!("the resuming process failed: {status}").into());
            }
            Ok(())
        }
        _ => Err("usage: subgraph [start | answer yes|no]".into()),
    }
}
