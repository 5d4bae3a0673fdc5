//! The functional API: an ordinary function is the workflow.
//!
//! `#[entrypoint]` on a fn makes it a workflow that runs on threads like a graph (it compiles
//! to a graph of one node, so checkpointers, durability modes, streaming, interrupts, the run's
//! limits and serving all apply), and `#[task]` on a fn makes each of its calls inside an
//! entrypoint a step that is stored as it finishes: when the entrypoint runs again on the
//! thread (after an interrupt, a crash or a failure), every task call that had finished returns
//! its stored result without running, and the code after it goes on from there.
//!
//! ```
//! use graphwright::functional::Final;
//! use graphwright::prelude::*;
//!
//! #[task]
//! async fn outline(topic: String) -> Vec<String> {
//!     vec![format!("{topic}: why"), format!("{topic}: how")]
//! }
//!
//! #[task]
//! async fn write(section: String) -> String {
//!     format!("{section} (written)")
//! }
//!
//! /// Writes an essay; asks a person to approve it; remembers how many it wrote on the thread.
//! #[entrypoint]
//! async fn essay(topic: String, previous: Option<u32>, rt: &Runtime) -> Result<Final<String, u32>, NodeError> {
//!     let sections = outline(topic).await?;
//!     // Called together, the tasks run concurrently.
//!     let written = futures::future::try_join_all(sections.into_iter().map(write)).await?;
//!     let verdict: String = rt.interrupt(written.join("\n"))?;
//!     let count = previous.unwrap_or(0) + 1;
//!     Ok(Final::new(format!("{} [{verdict}]", written.join(" / ")), count))
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Report> {
//! let app = essay::entrypoint().compile()?;
//! let cfg = RunConfig::thread("essay-1");
//! let paused = app.invoke("rust".to_owned(), &cfg).await?;
//! assert_eq!(paused.value, None, "it waits for the approval");
//! let done = app.resume(&cfg, "approved").await?;
//! assert_eq!(done.value.unwrap(), "rust: why (written) / rust: how (written) [approved]");
//! # Ok(()) }
//! ```
//!
//! Task calls are matched to stored results by their position among the entrypoint's calls and
//! by their arguments: a call that finds the result of another task, or of other arguments,
//! fails with [`TaskError::Replayed`] instead of returning a result that is not its own.
//! Tasks called by a task run as part of it (their results are stored with its result).

mod entrypoint;
pub(crate) mod scope;
mod state;
mod task;

pub use entrypoint::{Entrypoint, EntrypointBuilder, EntrypointFn, Final, Returned};
pub use state::{FlowState, FlowStateUpdate};

pub use task::{TaskArg, TaskBody, TaskError, TaskFuture, TaskOptions, TaskRuntime, TaskValue};

/// What `#[entrypoint]` and `#[task]` expand to call.
#[doc(hidden)]
pub mod __private {
    use crate::error::NodeError;
    use serde::Serialize;
    use serde::de::DeserializeOwned;
    use serde_json::Value;

    /// One argument of a task call, as JSON (called where the parameter's type is written, so a
    /// type that cannot be recorded is reported there).
    pub fn task_arg<T: super::TaskArg>(value: &T) -> Result<Value, serde_json::Error> {
        serde_json::to_value(value)
    }

    /// A task call's arguments, as the JSON array they are recorded as.
    pub fn task_args<const N: usize>(args: [Result<Value, serde_json::Error>; N]) -> Result<Value, serde_json::Error> {
        args.into_iter().collect::<Result<Vec<_>, _>>().map(Value::Array)
    }

    /// A task body asked to run a second time without retries (its arguments were moved into
    /// the first attempt).
    pub fn called_twice(task: &str) -> NodeError {
        NodeError::msg(format!("task `{task}` has no retry policy, and its body was asked to run twice"))
    }

    /// What an entrypoint takes as its input.
    #[diagnostic::on_unimplemented(
        message = "an entrypoint's input must be a serde type: `{Self}` is not `Serialize + DeserializeOwned`",
        label = "the input is stored on the thread, and read back when the entrypoint runs again",
        note = "derive `serde::Serialize` and `serde::Deserialize` for it"
    )]
    pub trait EntrypointInput: Serialize + DeserializeOwned {}

    impl<T: Serialize + DeserializeOwned> EntrypointInput for T {}

    /// Checks, where the input's type is written, that it can be stored.
    pub fn entrypoint_input<T: EntrypointInput>() {}

    /// What an entrypoint returns.
    #[diagnostic::on_unimplemented(
        message = "an entrypoint's value must be a serde type: `{Self}` is not `Serialize + DeserializeOwned`",
        label = "the value is stored on the thread, and read back by the caller",
        note = "derive `serde::Serialize` and `serde::Deserialize` for it"
    )]
    pub trait EntrypointValue: Serialize + DeserializeOwned {}

    impl<T: Serialize + DeserializeOwned> EntrypointValue for T {}

    /// Checks, where the value's type is written, that it can be stored.
    pub fn entrypoint_value<T: EntrypointValue>() {}

    /// A value an entrypoint saves, read back as `previous: Option<P>`.
    #[diagnostic::on_unimplemented(
        message = "`previous` is an `Option<{P}>`, but the entrypoint saves a `{Self}`",
        label = "`previous` is what the thread's last run saved",
        note = "declare `previous: Option<{Self}>`, or save a `{P}`: return `Final::new(value, save)`"
    )]
    pub trait Saves<P> {}

    impl<T> Saves<T> for T {}

    /// Checks, where `previous` is declared, that it is what the entrypoint saves.
    pub fn saves<P, S: Saves<P>>() {}

    /// The run's input, as the entrypoint's fn takes it.
    pub fn input<I: DeserializeOwned>(entrypoint: &str, input: Value) -> Result<I, NodeError> {
        serde_json::from_value(input).map_err(|e| {
            NodeError::msg(format!("entrypoint `{entrypoint}` takes a `{}`: {e}", std::any::type_name::<I>()))
        })
    }

    /// What the thread's last run saved, as the entrypoint's `previous`.
    pub fn previous<P: DeserializeOwned>(entrypoint: &str, saved: Value) -> Result<Option<P>, NodeError> {
        if saved.is_null() {
            return Ok(None);
        }
        serde_json::from_value(saved).map(Some).map_err(|e| {
            NodeError::msg(format!(
                "entrypoint `{entrypoint}`: the value the thread's last run saved is not a `{}`: {e}",
                std::any::type_name::<P>()
            ))
        })
    }

    /// What a run returned and saved, as JSON.
    #[allow(clippy::needless_pass_by_value)] // the expansion hands the fn's value over
    pub fn finished<O: Serialize, P: Serialize>(
        entrypoint: &str,
        done: super::Final<O, P>,
    ) -> Result<(Value, Value), NodeError> {
        Ok((json(entrypoint, &done.value, "its value")?, json(entrypoint, &done.save, "what it saves")?))
    }

    /// What a run returned, saved as it is.
    pub fn returned<O: Serialize>(entrypoint: &str, value: O) -> Result<(Value, Value), NodeError> {
        let value = json(entrypoint, &value, "its value")?;
        Ok((value.clone(), value))
    }

    fn json<T: Serialize>(entrypoint: &str, value: &T, what: &str) -> Result<Value, NodeError> {
        serde_json::to_value(value)
            .map_err(|e| NodeError::msg(format!("entrypoint `{entrypoint}`: {what} cannot be stored: {e}")))
    }
}
