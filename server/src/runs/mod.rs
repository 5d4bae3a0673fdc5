//! Runs: accepted, queued per thread, executed, followed, cancelled.

mod exec;
pub(crate) mod feed;
mod frame;
pub(crate) mod live;
mod quota;
mod registry;
mod replay;
pub(crate) mod request;

pub(crate) use live::{Cancel, Live};
pub(crate) use registry::Runs;

use crate::app::App;
use crate::authz::gate::Gate;
use crate::authz::{Action, Resource};
use crate::error::ApiError;
use crate::meta::RunRow;
use crate::metrics::GraphMetrics;
use crate::served::{RunSpec, Served, Start};
use request::{Multitask, RunCreate};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// A run accepted: its record and its progress.
pub(crate) struct Accepted {
    pub(crate) run: Value,
    pub(crate) live: Arc<Live>,
}

/// A run request checked against its assistant and graph, not yet recorded: nothing of it is
/// stored until [`Prepared::start`].
pub(crate) struct Prepared {
    graph: Arc<dyn Served>,
    spec: RunSpec,
    row: RunRow,
    creates: bool,
    multitask: Multitask,
    resumable: bool,
    /// A stateless run's thread, deleted when the run ends.
    temporary: bool,
}

/// Who is there when a run ends: a client waiting on it or streaming it, or nobody.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Attached {
    /// A client waits on the run or streams it (`/runs/wait`, `/runs/stream`).
    Client,
    /// Nobody: the run goes on in the background (`POST /runs`, a batch, a cron's firing).
    Background,
}

/// Creates a run on `thread` (a temporary thread when `None`: a stateless run) and starts it
/// once the thread is free.
pub(crate) async fn create(
    app: &Arc<App>,
    thread: Option<String>,
    body: RunCreate,
    attached: Attached,
) -> Result<Accepted, ApiError> {
    prepare(app, thread, &body).await?.start(app, attached).await
}

/// Checks a run request: its assistant, graph, input, context and options.
pub(crate) async fn prepare(app: &App, thread: Option<String>, body: &RunCreate) -> Result<Prepared, ApiError> {
    let assistant = app.assistant(&body.assistant_id).await?;
    let thread_metadata = authorize(app, thread.as_deref(), body, &assistant).await?;
    let graph_id = assistant["graph_id"].as_str().unwrap_or_default().to_owned();
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default().to_owned();
    let graph = Arc::clone(app.graph(&graph_id)?);
    let modes = body.modes()?;
    let multitask = body.multitask()?;
    let stateless = thread.is_none();
    if stateless && body.command.is_some() {
        return Err(ApiError::BadRequest("You must provide a thread_id when resuming.".into()));
    }
    let keep = body.keeps_thread()?;
    let thread_id = thread.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let run_id = uuid::Uuid::new_v4().to_string();
    let start = match (&body.command, &body.input) {
        (Some(command), _) => {
            Start::Command { resume: command.resume.clone(), update: command.update.clone(), goto: body.goto()? }
        }
        (None, Some(input)) if !input.is_null() => Start::Input(input.clone()),
        // No input: continue the thread (from a breakpoint, say), or start from the defaults.
        (None, _) if !stateless => Start::Command { resume: None, update: None, goto: Vec::new() },
        (None, _) => Start::Input(json!({})),
    };
    let context = match body.context()? {
        Some(context) => Some(context),
        None => Some(assistant["context"].clone()).filter(|c| c.as_object().is_some_and(|o| !o.is_empty())),
    };
    let spec = RunSpec {
        thread_id: thread_id.clone(),
        run_id: run_id.clone(),
        graph_id: graph_id.clone(),
        assistant_id: assistant_id.clone(),
        start,
        modes,
        checkpoint_id: body.checkpoint_id(),
        context,
        recursion_limit: body.recursion_limit()?,
        interrupt_before: body.interrupt_before(),
        interrupt_after: body.interrupt_after(),
        user: body.user.clone(),
        metrics: Arc::new(GraphMetrics::new(Arc::clone(&app.metrics), &graph_id)),
    };
    graph.validate(&spec)?;
    let metadata = body.metadata.clone().unwrap_or_else(|| json!({}));
    let creates = stateless || body.creates_thread()?;
    let mut kwargs = kwargs_of(body);
    if stateless {
        // Kept so that a run taken up again after its process died knows what to do with its thread.
        kwargs["on_completion"] = json!(if keep { "keep" } else { "delete" });
    }
    let caller = body.user.as_deref().map_or(Value::Null, |user| json!(user));
    let row = RunRow { run_id, thread_id, graph_id, assistant_id, metadata, kwargs, thread_metadata, caller };
    let resumable = body.stream_resumable.unwrap_or(false);
    Ok(Prepared { graph, spec, row, creates, multitask, resumable, temporary: stateless && !keep })
}

/// Checks a run request against the server's policy, as its caller: the assistant must be one
/// they may read, the thread (when it exists) one they may run on. What the policy sets in the
/// metadata of the run's thread, should the run create it.
async fn authorize(
    app: &App,
    thread: Option<&str>,
    body: &RunCreate,
    assistant: &Value,
) -> Result<Map<String, Value>, ApiError> {
    let gate = Gate::of(app, body.user.as_ref());
    if gate.is_open() {
        return Ok(Map::new());
    }
    let assistant_id = assistant["assistant_id"].as_str().unwrap_or_default();
    let readable = gate.grant(Resource::Assistants, Action::Read, json!({"assistant_id": assistant_id})).await?;
    gate.admit(Resource::Assistants, Action::Read, assistant_id, &assistant["metadata"], &readable).await?;
    if let Some(grant) = &body.thread_grant {
        return Ok(grant.metadata().clone());
    }
    let asked = json!({"thread_id": thread, "assistant_id": assistant_id, "metadata": body.metadata});
    let grant = gate.grant(Resource::Threads, Action::CreateRun, asked).await?;
    if let Some(thread) = thread.filter(|t| !t.is_empty())
        && !grant.filter().is_all()
        && let Some(metadata) = app.meta.thread_metadata(thread).await?
    {
        gate.admit(Resource::Threads, Action::CreateRun, thread, &metadata, &grant).await?;
    }
    Ok(grant.metadata().clone())
}

impl Prepared {
    /// Records the run, cancels the runs it supersedes, and starts it once its thread is free.
    ///
    /// A stateless run a client is attached to, whose thread goes when it ends, is not recorded
    /// and runs on the graph's in-memory twin ([`Scratch`](crate::app::Scratch)): nothing of it
    /// could be read back once it ended, and the client that follows it is connected to this
    /// process. Its answer's `run` is null.
    pub(crate) async fn start(self, app: &Arc<App>, attached: Attached) -> Result<Accepted, ApiError> {
        let (accepted, mut job) = self.launch(app, attached, None).await?;
        job.queue_up();
        tokio::spawn(job.run());
        Ok(accepted)
    }

    /// The run accepted and the job that executes it: recorded now, or, for a run an earlier
    /// process recorded ([`Resumed`]), as it is.
    async fn launch(
        self,
        app: &Arc<App>,
        attached: Attached,
        resumed: Option<Resumed>,
    ) -> Result<(Accepted, exec::Job), ApiError> {
        let Self { graph, spec, row, creates, multitask, resumable, temporary } = self;
        let (run_id, thread_id, graph_id) = (row.run_id.clone(), row.thread_id.clone(), row.graph_id.clone());
        let traceparent = row.kwargs["traceparent"].as_str().map(str::to_owned);
        if resumed.is_none() && app.is_draining() {
            return Err(ApiError::Unavailable(
                "this server process is shutting down and takes no new runs: send the run again (to another \
                 process, or to this one once it is restarted)"
                    .into(),
            ));
        }
        // Before anything is recorded: a run refused for its user's cap leaves no trace. (A run
        // taken up again was accepted already: it is not refused now.)
        let slot = match (&spec.user, app.max_runs_per_user) {
            (Some(user), Some(cap)) if resumed.is_none() => Some(app.runs.in_flight.take(&user.identity, cap)?),
            _ => None,
        };
        let scratch = temporary && attached == Attached::Client && resumed.is_none();
        let scratch_metadata = scratch.then(|| Value::Object(row.thread_metadata.clone()));
        let attempt = resumed.as_ref().map_or(1, |r| r.attempt);
        let taken_up = resumed.is_some();
        let mut published = Vec::new();
        let (run, graph, saver) = if let Some(resumed) = resumed {
            published = resumed.published;
            (resumed.run, graph, Arc::clone(&app.saver))
        } else if scratch {
            let graph = Arc::clone(app.scratch.graphs.get(&graph_id).unwrap_or(&graph));
            (Value::Null, graph, Arc::clone(&app.scratch.saver))
        } else {
            let (run, superseded) = app.meta.register(row, creates, multitask).await?;
            let how = if multitask == Multitask::Rollback { Cancel::Rollback } else { Cancel::Interrupt };
            for id in superseded {
                app.cancel_run(&id, how).await?;
            }
            (run, graph, Arc::clone(&app.saver))
        };
        let live = Live::new(run_id.clone(), thread_id, resumable);
        // A run taken over goes on under the next event ids, after what its followers saw.
        for (name, data) in published {
            live.push_encoded(name, data);
        }
        if let Some(metadata) = scratch_metadata {
            live.keep_thread_metadata(metadata);
        }
        live.push(&crate::served::WireEvent {
            name: "metadata".into(),
            data: json!({"run_id": run_id, "attempt": attempt}),
        });
        if taken_up {
            live.replaying();
        }
        app.runs.add(&live);
        let job = exec::Job {
            traceparent,
            app: Arc::clone(app),
            graph_id: graph_id.clone(),
            graph,
            saver,
            spec,
            live: Arc::clone(&live),
            temporary,
            recorded: !scratch,
            slot,
            place: None,
        };
        Ok((Accepted { run, live }, job))
    }
}

/// A run an earlier process recorded and did not finish, as it is taken up again.
struct Resumed {
    /// Its record.
    run: Value,
    /// The attempt about to be made.
    attempt: u32,
    /// The events it published for followers in other processes (PostgreSQL), as name and data.
    published: Vec<(String, String)>,
}

/// Takes up again the runs an earlier process of this server accepted and did not finish
/// (oldest first): each thread's in order, one after the other. A run that had started
/// continues from its thread's last checkpoint, with the writes of the tasks that had finished
/// (they do not run again), if it had written one; otherwise, and for a run that had not
/// started, it starts as it was asked. A run that cannot be taken up (its graph is no longer
/// served, its request no longer fits) is marked `error`.
pub(crate) async fn resume(app: &Arc<App>, unfinished: Vec<crate::meta::Unfinished>) {
    let mut threads: Vec<(String, Vec<exec::Job>)> = Vec::new();
    for run in unfinished {
        let thread = run.run["thread_id"].as_str().unwrap_or_default().to_owned();
        let id = run.run["run_id"].as_str().unwrap_or_default().to_owned();
        match taken_up(app, run).await {
            Ok(job) => match threads.iter_mut().find(|(t, _)| *t == thread) {
                Some((_, jobs)) => jobs.push(job),
                None => threads.push((thread, vec![job])),
            },
            Err(error) => {
                tracing::error!(run = %id, %error, "a run left unfinished cannot be taken up again: it is marked `error`");
                let outcome = crate::served::Outcome::Failed {
                    error: "WorkerLostError".into(),
                    message: format!("the run could not be taken up again after its server process stopped: {error}"),
                };
                if let Err(error) = app.meta.give_up(&thread, &id, &outcome).await {
                    tracing::error!(run = %id, %error, "could not mark a run that cannot be taken up again `error`");
                }
                ended_without_running(app, id, thread, outcome);
            }
        }
    }
    for (thread, jobs) in threads {
        // The thread's turn is taken now, before this process takes new runs, and handed from
        // one run to the next: runs that arrive meanwhile wait behind them all. (On PostgreSQL
        // the shared queue keeps the order: each run is claimed in its turn there.)
        #[cfg(feature = "postgres")]
        let shared_queue = app.cluster.is_some();
        #[cfg(not(feature = "postgres"))]
        let shared_queue = false;
        let mut held = if shared_queue { None } else { app.runs.lock_for(&thread).try_lock_owned().ok() };
        tokio::spawn(async move {
            for job in jobs {
                held = job.run_in_turn(held).await;
            }
        });
    }
}

/// Keeps how a run an earlier process left unfinished ended without being taken up again, for
/// the clients who join it here (with PostgreSQL every process reads it from the run's record).
pub(crate) fn ended_without_running(app: &App, run: String, thread: String, outcome: crate::served::Outcome) {
    let live = Live::new(run, thread, false);
    if let crate::served::Outcome::Failed { error, message } = &outcome {
        live.push(&crate::served::WireEvent {
            name: "error".into(),
            data: json!({"error": error, "message": message}),
        });
    }
    live.finish(outcome);
    app.runs.add(&live);
    app.runs.ended(&live.run_id);
}

/// The job that takes up `unfinished` again.
async fn taken_up(app: &Arc<App>, unfinished: crate::meta::Unfinished) -> Result<exec::Job, ApiError> {
    let crate::meta::Unfinished { run, caller, started_at, attempt } = unfinished;
    let (kwargs, thread) = (&run["kwargs"], run["thread_id"].as_str().unwrap_or_default().to_owned());
    let mut request = json!({
        "assistant_id": run["assistant_id"],
        "input": kwargs["input"],
        "command": kwargs["command"],
        "config": kwargs["config"],
        "context": kwargs["context"],
        "metadata": run["metadata"],
        "stream_mode": kwargs["stream_mode"],
        "stream_subgraphs": kwargs["subgraphs"],
        "stream_resumable": kwargs["resumable"],
        "checkpoint_id": kwargs["checkpoint_id"],
        "interrupt_before": kwargs["interrupt_before"],
        "interrupt_after": kwargs["interrupt_after"],
    });
    if let Some(started_at) = started_at.as_deref()
        && wrote_since(app, &thread, started_at).await?
    {
        // Its input (or command) is in the thread's checkpoints already: it continues from them.
        for key in ["input", "command", "checkpoint_id"] {
            request[key] = Value::Null;
        }
    }
    let mut body: RunCreate = serde_json::from_value(request)
        .map_err(|e| ApiError::Invalid(format!("the run's stored request no longer reads as one: {e}")))?;
    body.user = serde_json::from_value::<Option<graphwright::AuthUser>>(caller)
        .map_err(|e| ApiError::Invalid(format!("the run's stored caller no longer reads as a user: {e}")))?
        .map(Arc::new);
    let mut prepared = prepare(app, Some(thread), &body).await?;
    let id = run["run_id"].as_str().unwrap_or_default().to_owned();
    prepared.row.run_id.clone_from(&id);
    prepared.spec.run_id = id;
    prepared.temporary = kwargs["on_completion"] == "delete";
    // The trace of the request that made the run, not of the sweep that took it up.
    prepared.row.kwargs["traceparent"] = kwargs["traceparent"].clone();
    app.metrics.run_resumed(&prepared.row.graph_id);
    #[cfg(feature = "postgres")]
    let published = match &app.cluster {
        Some(cluster) => cluster.published(&prepared.row.run_id).await?,
        None => Vec::new(),
    };
    #[cfg(not(feature = "postgres"))]
    let published = Vec::new();
    let resumed = Resumed { run, attempt, published };
    let (_, job) = prepared.launch(app, Attached::Background, Some(resumed)).await?;
    Ok(job)
}

/// Whether `thread` has a checkpoint written since `started_at` (RFC 3339): the run that
/// first started then wrote its input, at least.
async fn wrote_since(app: &App, thread: &str, started_at: &str) -> Result<bool, ApiError> {
    let Some(graph) = app.thread_graph(thread).await? else { return Ok(false) };
    let Some(state) = graph.state(thread, None).await? else { return Ok(false) };
    let time = |text: Option<&str>| text.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
    Ok(
        matches!((time(state["created_at"].as_str()), time(Some(started_at))), (Some(written), Some(started)) if written >= started),
    )
}

/// The request as stored in the run's `kwargs`.
fn kwargs_of(body: &RunCreate) -> Value {
    let command = body.command.as_ref().map(|c| json!({"resume": c.resume, "update": c.update, "goto": c.goto}));
    let mut kwargs = json!({
        "input": body.input,
        "command": command,
        "config": body.config,
        "context": body.context,
        "stream_mode": body.stream_mode.clone().map(request::OneOrMany::into_vec),
        "subgraphs": body.stream_subgraphs.unwrap_or(false),
        "resumable": body.stream_resumable.unwrap_or(false),
        "checkpoint_id": body.checkpoint_id(),
        "interrupt_before": body.interrupt_before.clone().map(request::OneOrMany::into_vec),
        "interrupt_after": body.interrupt_after.clone().map(request::OneOrMany::into_vec),
    });
    if let Some(cron) = &body.cron {
        kwargs["cron"] = cron.clone();
    }
    if let Some(traceparent) = exec::traceparent_here() {
        // Kept with the run, so that its span continues the request's trace wherever it runs.
        kwargs["traceparent"] = json!(traceparent);
    }
    kwargs
}
