//! Task calls: what a `#[task]` fn's call does inside an entrypoint run.
//!
//! A call made by the entrypoint is numbered in call order. When an earlier run of the
//! entrypoint on the thread finished that call with the same task and arguments, its stored
//! result is returned and the task does not run; a call that finds a result of another task, or
//! of other arguments, fails (the entrypoint's code or input changed since). Otherwise the task
//! runs under its options (cache, retries, timeout) and its result is stored as it finishes.
//! Tasks called by a task run as part of it: their results are streamed, and stored with the
//! calling task's.

use super::scope::Flow;
use crate::cache::Cache;
use crate::error::{BoxError, NodeError};
use crate::policy::{CachePolicy, RetryPolicy};
use crate::stream::StreamMode;
use crate::stream::nested::Nested;
use futures::FutureExt;
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// What a task returns: stored as JSON as the task finishes, read back when a later run of the
/// entrypoint makes the same call.
#[diagnostic::on_unimplemented(
    message = "a task's result must be a serde type: `{Self}` is not `Serialize + DeserializeOwned + Send`",
    label = "a task's result is stored, and read back when the entrypoint runs again",
    note = "derive `serde::Serialize` and `serde::Deserialize` for it"
)]
pub trait TaskValue: Serialize + DeserializeOwned + Send + 'static {}

impl<T: Serialize + DeserializeOwned + Send + 'static> TaskValue for T {}

/// A task's argument: stored (as a digest) with the task's result, so that a later run of the
/// entrypoint only gets the result back for the very same call.
#[diagnostic::on_unimplemented(
    message = "a task's parameter must be a serde type: `{Self}` is not `Serialize + Send`",
    label = "task arguments are recorded, so that a later run only gets back the result of the same call",
    note = "derive `serde::Serialize` for it"
)]
pub trait TaskArg: Serialize + Send {}

impl<T: Serialize + Send> TaskArg for T {}

/// A task call that did not give the task's result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskError {
    /// The task was called where no entrypoint runs.
    #[error(
        "task `{task}` was called outside an entrypoint run: call it from an `#[entrypoint]` fn (or from a task \
         such a fn calls)"
    )]
    OutsideEntrypoint {
        /// The task.
        task: &'static str,
    },
    /// A later run of the entrypoint made call `call` differently from the run that stored its
    /// result: the entrypoint's code or input changed since.
    #[error(
        "call {call} of entrypoint `{entrypoint}` is to task `{task}` {how}, but the result stored for it on the \
         thread is of {stored}: the entrypoint's code or input changed since that call ran; go on with the code \
         that started the thread, or start a new thread"
    )]
    Replayed {
        /// The entrypoint.
        entrypoint: String,
        /// The call's position among the entrypoint's task calls (0 for the first).
        call: u32,
        /// The task called now.
        task: &'static str,
        /// `with arguments <digest>`.
        how: String,
        /// What the stored result belongs to.
        stored: String,
    },
    /// A stored result that is not a value of the task's result type.
    #[error(
        "the result stored for task `{task}` (call {call}) is not a `{expected}`: {reason}; the task's result type changed since it ran"
    )]
    Unreadable {
        /// The task.
        task: &'static str,
        /// The call's position.
        call: u32,
        /// The task's result type.
        expected: &'static str,
        /// Why it did not decode.
        reason: String,
    },
    /// The task's arguments or result could not be turned into JSON.
    #[error("task `{task}`: {what} cannot be stored as JSON: {reason}")]
    Unstorable {
        /// The task.
        task: &'static str,
        /// "its arguments" or "its result".
        what: &'static str,
        /// Why.
        reason: String,
    },
    /// The task failed, after its retries.
    #[error("task `{task}` failed (attempt {attempts}): {source}")]
    Failed {
        /// The task.
        task: &'static str,
        /// How many attempts ran.
        attempts: u32,
        /// The task's own error.
        #[source]
        source: BoxError,
    },
    /// The task has a cache policy and the entrypoint no cache.
    #[error(
        "task `{task}` has a cache policy but entrypoint `{entrypoint}` has no cache: give it one with \
         `.cache(InMemoryCache::new())` on its builder"
    )]
    NoCache {
        /// The task.
        task: &'static str,
        /// The entrypoint.
        entrypoint: String,
    },
    /// The task's cache policy has a key function of another input than the task's arguments.
    #[error(
        "task `{task}` has a cache key function of `{found}`, but a task's key function is given its arguments \
         as JSON: write it as `CachePolicy::new().key(|args: &serde_json::Value| ..)` (`args` is an array, one \
         element per parameter)"
    )]
    CacheKeyType {
        /// The task.
        task: &'static str,
        /// The type the key function takes.
        found: &'static str,
    },
}

/// The options of a task: `#[task(retry = .., timeout = .., cache = ..)]`.
#[derive(Clone, Debug, Default)]
pub struct TaskOptions {
    retry: Vec<RetryPolicy>,
    timeout: Option<Duration>,
    cache: Option<CachePolicy>,
}

impl TaskOptions {
    /// No retries, no timeout, no cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Retry failures under `policy` (several may be given; the first whose `retry_on` accepts
    /// an error applies, as for nodes).
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry.push(policy);
        self
    }

    /// Fail an attempt that runs longer than `limit` (an async task's; a sync task cannot be
    /// stopped mid-way and is not timed).
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Cache the task's results under `policy` in the entrypoint's cache, keyed by its
    /// arguments (a key function's input is the arguments as JSON, an array).
    #[must_use]
    pub fn cache(mut self, policy: CachePolicy) -> Self {
        self.cache = Some(policy);
        self
    }
}

/// What a task body is given: the entrypoint run it belongs to, for a task that takes a
/// `&Runtime<C>`.
#[doc(hidden)]
pub struct TaskRuntime {
    flow: Arc<Flow>,
    task: &'static str,
}

impl TaskRuntime {
    /// The entrypoint run's `Runtime<C>`.
    ///
    /// # Errors
    /// When the entrypoint runs with another context type than `C`.
    pub fn get<C: Send + Sync + 'static>(&self) -> Result<&crate::Runtime<C>, NodeError> {
        self.flow.runtime::<C>(self.task)
    }
}

/// One attempt of a task's body.
#[doc(hidden)]
pub type TaskBody<T> = Box<dyn FnMut(TaskRuntime) -> BoxFuture<'static, Result<T, NodeError>> + Send>;

/// What a `#[task]` fn's call returns: the task's result, once awaited.
///
/// The call itself decides which of the entrypoint's calls it is, so calls made one after the
/// other and awaited together (`futures::join!`, `try_join_all`) run concurrently and are still
/// matched in the order they were made. A task runs only while its future is polled.
#[must_use = "a task runs only when its future is awaited"]
pub struct TaskFuture<T> {
    inner: BoxFuture<'static, Result<T, NodeError>>,
}

impl<T> Future for TaskFuture<T> {
    type Output = Result<T, NodeError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.inner.as_mut().poll(cx)
    }
}

impl<T> std::fmt::Debug for TaskFuture<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskFuture")
    }
}

impl<T: TaskValue> TaskFuture<T> {
    /// Calls task `task` with `args` (its arguments, as JSON) under `options`; `body` runs one
    /// attempt. What `#[task]` fns expand to.
    #[doc(hidden)]
    pub fn call(
        task: &'static str,
        options: TaskOptions,
        args: Result<Value, serde_json::Error>,
        body: TaskBody<T>,
    ) -> Self {
        let Some(flow) = Flow::current() else { return Self::failed(TaskError::OutsideEntrypoint { task }) };
        let args = match args {
            Ok(args) => args,
            Err(error) => {
                return Self::failed(TaskError::Unstorable { task, what: "its arguments", reason: error.to_string() });
            }
        };
        let digest = digest(&args);
        if flow.inside_task {
            // Part of the calling task: streamed, stored with its result.
            return Self::running(async move {
                let (value, cached) = attempts(&flow, task, None, &options, body, &args, &digest).await?;
                emit(&flow, task, shown(&flow, &value), cached).await;
                Ok(value)
            });
        }
        let call = flow.next_call();
        let key = format!("{task}:{digest}");
        if let Some((stored, value)) = flow.results.as_ref().and_then(|r| r.stored(call)) {
            return if stored == key {
                Self::ready(serde_json::from_value(value).map_err(|error| {
                    TaskError::Unreadable {
                        task,
                        call,
                        expected: std::any::type_name::<T>(),
                        reason: error.to_string(),
                    }
                    .into()
                }))
            } else {
                Self::failed(replayed(&flow, call, task, &digest, &stored))
            };
        }
        Self::running(async move {
            let (value, cached) = attempts(&flow, task, Some(call), &options, body, &args, &digest).await?;
            let update = shown(&flow, &value);
            if let Some(results) = &flow.results {
                let json = to_json(task, &value)?;
                results.put(call, &key, json).await;
            }
            emit(&flow, task, update, cached).await;
            Ok(value)
        })
    }

    fn running(future: impl Future<Output = Result<T, NodeError>> + Send + 'static) -> Self {
        Self { inner: Box::pin(future) }
    }

    fn ready(result: Result<T, NodeError>) -> Self {
        Self { inner: Box::pin(std::future::ready(result)) }
    }

    fn failed(error: TaskError) -> Self {
        Self::ready(Err(error.into()))
    }
}

/// Runs the task's attempts (after its cache, if it has one): its value, and whether the
/// cache gave it.
async fn attempts<T: TaskValue>(
    flow: &Arc<Flow>,
    task: &'static str,
    call: Option<u32>,
    options: &TaskOptions,
    mut body: TaskBody<T>,
    args: &Value,
    digest: &str,
) -> Result<(T, bool), NodeError> {
    let cached = match &options.cache {
        Some(policy) => {
            let cache = flow
                .cache
                .clone()
                .ok_or_else(|| TaskError::NoCache { task, entrypoint: flow.entrypoint.to_string() })?;
            let key = crate::cache::scoped_key(policy, flow.user.as_deref(), cache_key(task, policy, args, digest)?);
            Some((policy, cache, key))
        }
        None => None,
    };
    let namespace = format!("{}:{task}", flow.entrypoint);
    if let Some((_, cache, key)) = &cached
        && let Some(value) = cache_get::<T>(&**cache, &namespace, key).await
    {
        return Ok((value, true));
    }
    let inner = Arc::new(flow.for_task(task, call));
    let mut attempt = 1;
    loop {
        if call.is_some() {
            inner.restart_interrupts();
        }
        let rt = TaskRuntime { flow: Arc::clone(&inner), task };
        let run = AssertUnwindSafe(Arc::clone(&inner).scope(body(rt))).catch_unwind();
        let outcome = match options.timeout {
            Some(limit) => match tokio::time::timeout(limit, run).await {
                Ok(outcome) => outcome,
                Err(_) => Ok(Err(NodeError::timeout(limit))),
            },
            None => run.await,
        };
        let error = match outcome.unwrap_or_else(|payload| Err(NodeError::panicked(&*payload))) {
            Ok(value) => {
                if let Some((policy, cache, key)) = &cached {
                    let bytes = serde_json::to_vec(&value).map_err(|e| e.to_string());
                    cache_set(&**cache, &namespace, key, bytes, policy.ttl).await;
                }
                return Ok((value, false));
            }
            Err(error) => error,
        };
        let error = match error.take_interrupt() {
            Ok(interrupt) => return Err(NodeError::interrupted(interrupt)),
            Err(error) => error,
        };
        match crate::policy::retry_after(&options.retry, &error, attempt) {
            Some(policy) => {
                tracing::debug!(task, attempt, %error, "task failed; retrying");
                tokio::time::sleep(policy.backoff(attempt)).await;
                attempt += 1;
            }
            None => return Err(TaskError::Failed { task, attempts: attempt, source: error.into_box() }.into()),
        }
    }
}

/// The SHA-256 of the arguments' JSON, in hex.
fn digest(args: &Value) -> String {
    let mut out = String::with_capacity(64);
    crate::model::hash::push_hex(&mut out, &Sha256::digest(args.to_string().as_bytes()));
    out
}

/// The cache key of a call: the key function's, given the arguments, or their digest.
fn cache_key(task: &'static str, policy: &CachePolicy, args: &Value, digest: &str) -> Result<String, TaskError> {
    match &policy.key {
        None => Ok(digest.to_owned()),
        Some(key) => (key.key)(args).ok_or(TaskError::CacheKeyType { task, found: key.input_name }),
    }
}

async fn cache_get<T: TaskValue>(cache: &dyn Cache, namespace: &str, key: &str) -> Option<T> {
    match cache.get(namespace, key).await {
        Ok(Some(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(value) => Some(value),
            Err(error) => {
                tracing::warn!(%namespace, %key, %error, "a cache entry is unreadable; the task runs, and its result replaces the entry");
                None
            }
        },
        Ok(None) => None,
        Err(error) => {
            tracing::warn!(%error, "could not read the cache; the task runs");
            None
        }
    }
}

async fn cache_set(
    cache: &dyn Cache,
    namespace: &str,
    key: &str,
    value: Result<Vec<u8>, String>,
    ttl: Option<Duration>,
) {
    let stored = match value {
        Ok(bytes) => cache.set(namespace, key, bytes, ttl).await.map_err(|e| e.to_string()),
        Err(error) => Err(error),
    };
    if let Err(error) = stored {
        tracing::warn!(%namespace, %error, "could not store the task's result in the cache");
    }
}

fn to_json<T: TaskValue>(task: &'static str, value: &T) -> Result<Value, NodeError> {
    serde_json::to_value(value)
        .map_err(|error| TaskError::Unstorable { task, what: "its result", reason: error.to_string() }.into())
}

/// A task's result as the stream shows it, when the run streams updates.
fn shown<T: TaskValue>(flow: &Flow, value: &T) -> Option<Value> {
    streams_updates(flow).then(|| crate::record::codec::to_json_shown(value))
}

fn streams_updates(flow: &Flow) -> bool {
    flow.writer.as_ref().is_some_and(|w| w.modes().contains(StreamMode::Updates))
}

/// Streams a finished task's result (as [`shown`]) as an `updates` event under the task's name.
async fn emit(flow: &Flow, task: &'static str, update: Option<Value>, cached: bool) {
    let (Some(writer), Some(update)) = (&flow.writer, update) else { return };
    let event = Nested::Update { node: task.to_owned(), update, cached };
    if let Err(error) = writer.forward(&[], flow.step, event).await {
        tracing::debug!(%error, "the stream is gone; the task's result was not streamed");
    }
}

/// The error of call `call` to `task`, whose stored result has key `stored`.
fn replayed(flow: &Flow, call: u32, task: &'static str, digest: &str, stored: &str) -> TaskError {
    let (stored_task, stored_digest) = stored.split_once(':').unwrap_or((stored, ""));
    let stored = if stored_task == task {
        format!("the same task with arguments {}", short(stored_digest))
    } else {
        format!("task `{stored_task}`")
    };
    TaskError::Replayed {
        entrypoint: flow.entrypoint.to_string(),
        call,
        task,
        how: format!("with arguments {}", short(digest)),
        stored,
    }
}

/// The first characters of a digest, enough to tell two apart in a message.
fn short(digest: &str) -> &str {
    &digest[..digest.len().min(12)]
}

/// The run's handle, for a task that takes one.
impl Flow {
    /// The run's `Runtime<C>`, for a task that takes one.
    pub(crate) fn runtime<C: Send + Sync + 'static>(&self, task: &str) -> Result<&crate::Runtime<C>, NodeError> {
        self.runtime.downcast_ref::<crate::Runtime<C>>().ok_or_else(|| {
            NodeError::msg(format!(
                "task `{task}` takes a `Runtime<{}>`, but entrypoint `{}` runs with a `Runtime<{}>`: give the task \
                 the entrypoint's context type",
                std::any::type_name::<C>(),
                self.entrypoint,
                self.context
            ))
        })
    }
}
