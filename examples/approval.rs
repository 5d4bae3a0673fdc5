//! A refund that waits for a person's approval, across processes.
//!
//! The first run stops at `approve` and saves the thread in a SQLite file; a second process
//! (this example started again) resumes the thread with the answer, and prints its history.
//!
//! ```text
//! cargo run --example approval                 # both steps: pause, then resume in a new process
//! cargo run --example approval -- start        # pause only
//! cargo run --example approval -- answer yes   # resume the paused thread (yes or no)
//! ```

use graphwright::prelude::*;
use std::path::PathBuf;

/// The refund graph.
#[graph]
pub mod refund {
    use graphwright::prelude::*;

    /// A refund request and what happened to it.
    #[state]
    pub struct State {
        /// The order.
        pub order: String,
        /// The amount asked for, in cents.
        pub cents: u64,
        /// The approver's answer.
        pub approved: Option<bool>,
        /// What was done.
        #[reducer(append)]
        pub log: Vec<String>,
    }

    /// Checks the request.
    #[node(entry, next = approve)]
    fn check(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("checked order {} for {} cents", state.order, state.cents)])
    }

    /// Pauses for a person to approve; runs again from its start when resumed.
    #[node(next = pay | decline, route = decide)]
    fn approve(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let approved: bool =
            rt.interrupt(json!({"question": "refund this order?", "order": state.order, "cents": state.cents}))?;
        Ok(StateUpdate::new().approved(Some(approved)).log(vec![format!("approver said {approved}")]))
    }

    fn decide(state: &State) -> ApproveNext {
        if state.approved == Some(true) { ApproveNext::Pay } else { ApproveNext::Decline }
    }

    /// Pays the refund.
    #[node(next = END)]
    fn pay(state: &State) -> StateUpdate {
        StateUpdate::new().log(vec![format!("paid {} cents", state.cents)])
    }

    /// Tells the customer no.
    #[node(next = END)]
    fn decline(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["declined".to_owned()])
    }
}

fn database() -> PathBuf {
    std::env::temp_dir().join("graphwright-approval.db")
}

const THREAD: &str = "refund-1042";

async fn start() -> Result<(), Report> {
    let _ = std::fs::remove_file(database());
    let app = refund::graph().checkpointer(SqliteSaver::open(database())?).compile()?;
    let cfg = RunConfig::thread(THREAD);
    let input = refund::State { order: "1042".into(), cents: 4_000, ..refund::State::default() };
    let out = app.invoke(input, &cfg).await?;
    for interrupt in &out.interrupts {
        println!("[process {}] paused at `{}`: {}", std::process::id(), interrupt.node, interrupt.value);
    }
    println!("[process {}] thread {THREAD} saved in {}", std::process::id(), database().display());
    Ok(())
}

async fn answer(approved: bool) -> Result<(), Report> {
    let app = refund::graph().checkpointer(SqliteSaver::open(database())?).compile()?;
    let cfg = RunConfig::thread(THREAD);
    let out = app.resume(&cfg, json!(approved)).await?;
    println!("[process {}] resumed; log:", std::process::id());
    for line in &out.state.log {
        println!("    {line}");
    }
    println!("history (newest first):");
    for snapshot in app.state_history(&cfg).await? {
        println!("    step {:>2}  {:<6}  next {:?}", snapshot.step, snapshot.source.as_str(), snapshot.next);
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
        _ => Err("usage: approval [start | answer yes|no]".into()),
    }
}
