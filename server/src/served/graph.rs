//! [`Served`] for a [`CompiledGraph`].

use super::erased::Served;
use super::events::Translator;
use super::run::{Emitted, Modes, RunSpec, Start};
use super::schemas::Schemas;
use super::snapshot::{is_entrypoint, thread_state};
use crate::error::ApiError;
use crate::wire::messages::fields_from_wire;
use futures::future::BoxFuture;
use futures::stream::{self, BoxStream, StreamExt};
use graphwright::checkpoint::ListFilter;
use graphwright::{
    Checkpointer, CompiledGraph, Drawing, GraphError, Resume, RunCommand, RunConfig, RunInput, State, Store,
    StreamMode, StreamModes, Subgraph,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::{Arc, OnceLock};

/// Erases a graph's types for the server.
pub(crate) fn erase<S, C>(graph: CompiledGraph<S, C>) -> Arc<dyn Served>
where
    S: State,
    C: DeserializeOwned + JsonSchema + Send + Sync + 'static,
{
    Arc::new(Handle { graph, schemas: Arc::default() })
}

struct Handle<S: State, C> {
    graph: CompiledGraph<S, C>,
    /// Made when a client first asks, then kept (and shared with the graph rebound to the
    /// server's storage): a run never computes them.
    schemas: Arc<OnceLock<Schemas>>,
}

impl<S: State, C: DeserializeOwned + Send + Sync + 'static> Handle<S, C> {
    /// A run's `input`: for an entrypoint, the value its fn takes.
    fn run_input(value: Value) -> Result<S::Update, ApiError> {
        if is_entrypoint::<S>() {
            return Self::parse(serde_json::json!({"input": value, "output": null}));
        }
        Self::parse(value)
    }

    /// An update of the state (a command's, `update_state`'s): for an entrypoint, the value its
    /// next run gets as `previous`, as LangGraph's `update_state` sets it.
    fn update(value: Value) -> Result<S::Update, ApiError> {
        Self::parse(if is_entrypoint::<S>() { serde_json::json!({"saved": value}) } else { value })
    }

    fn parse(value: Value) -> Result<S::Update, ApiError> {
        let mut value = value;
        fields_from_wire(&mut value, S::MESSAGE_FIELDS);
        serde_json::from_value(value)
            .map_err(|e| ApiError::Invalid(format!("the input does not fit the graph's state: {e}")))
    }

    fn config(spec: &RunSpec) -> Result<RunConfig<C>, ApiError> {
        let mut cfg = RunConfig::thread(spec.thread_id.as_str()).metrics(spec.metrics.clone());
        if let Some(context) = spec.context.clone().filter(|c| !is_empty(c)) {
            let context = serde_json::from_value(context)
                .map_err(|e| ApiError::Invalid(format!("the context does not fit the graph's context type: {e}")))?;
            cfg = cfg.context(context);
        }
        if let Some(limit) = spec.recursion_limit {
            cfg = cfg.recursion_limit(limit);
        }
        if let Some(id) = &spec.checkpoint_id {
            cfg = cfg.checkpoint(id.as_str());
        }
        if !spec.interrupt_before.is_empty() {
            cfg = cfg.interrupt_before(&spec.interrupt_before);
        }
        if !spec.interrupt_after.is_empty() {
            cfg = cfg.interrupt_after(&spec.interrupt_after);
        }
        if let Some(user) = &spec.user {
            cfg = cfg.user(Arc::clone(user));
        }
        Ok(cfg)
    }

    /// A resume value: a map from pending interrupt ids to answers when its keys are exactly
    /// such ids (LangGraph's rule for several pending interrupts), the answer itself otherwise.
    async fn answer(&self, cfg: &RunConfig<C>, resume: Value) -> Result<Resume, ApiError> {
        let Value::Object(map) = &resume else { return Ok(Resume::Value(resume)) };
        let snapshot = self.graph.get_state(cfg).await.map_err(graph_error)?;
        let pending: Vec<&str> =
            snapshot.as_ref().map(|s| s.interrupts.iter().map(|i| i.id.as_str()).collect()).unwrap_or_default();
        if !map.is_empty() && map.keys().all(|k| pending.contains(&k.as_str())) {
            Ok(Resume::by_id(map.clone()))
        } else {
            Ok(Resume::Value(resume))
        }
    }

    async fn input(&self, cfg: &RunConfig<C>, start: Start) -> Result<RunInput<S>, ApiError> {
        Ok(match start {
            Start::Input(value) => RunInput::Update(Self::run_input(value)?),
            Start::Command { resume, update, goto } => {
                let mut command = RunCommand::new().goto(goto);
                if let Some(resume) = resume {
                    command = command.answer(self.answer(cfg, resume).await?);
                }
                if let Some(update) = update {
                    command = command.update(Self::update(update)?);
                }
                RunInput::Command(command)
            }
        })
    }
}

fn is_empty(value: &Value) -> bool {
    value.is_null() || value.as_object().is_some_and(serde_json::Map::is_empty)
}

pub(crate) fn graph_error(error: GraphError) -> ApiError {
    match error {
        GraphError::NoThread { .. }
        | GraphError::NothingToResume { .. }
        | GraphError::Resume { .. }
        | GraphError::UpdateState { .. }
        | GraphError::Goto { .. }
        | GraphError::Breakpoint { .. } => ApiError::BadRequest(error.to_string()),
        GraphError::ThreadBusy { .. } => ApiError::Conflict(error.to_string()),
        other => ApiError::Graph(other.to_string()),
    }
}

fn stream_modes(m: Modes) -> StreamModes {
    let mut modes = StreamModes::default();
    let mut add = |on: bool, mode: StreamMode| {
        if on {
            modes = modes | mode;
        }
    };
    add(m.values || m.checkpoints, StreamMode::Values);
    add(m.updates || m.messages, StreamMode::Updates);
    add(m.messages, StreamMode::Messages);
    add(m.custom, StreamMode::Custom);
    add(m.tasks || m.debug, StreamMode::Tasks);
    add(m.checkpoints || m.debug, StreamMode::Checkpoints);
    add(m.subgraphs, StreamMode::Subgraphs);
    // `events` tells every task, reply, tool call and write, subgraphs' included.
    if m.events {
        modes = modes
            | StreamMode::Values
            | StreamMode::Updates
            | StreamMode::Messages
            | StreamMode::Custom
            | StreamMode::Tasks
            | StreamMode::Subgraphs;
    }
    modes
}

impl<S: State, C: DeserializeOwned + JsonSchema + Send + Sync + 'static> Served for Handle<S, C> {
    fn drawing(&self) -> Drawing {
        self.graph.drawing()
    }

    fn schemas(&self) -> &Schemas {
        self.schemas.get_or_init(Schemas::of::<S, C>)
    }

    fn subgraphs(&self) -> Vec<Subgraph> {
        self.graph.subgraphs()
    }

    fn subgraph_schemas(&self, subgraph: &Subgraph) -> Schemas {
        Schemas::of_subgraph::<C>(subgraph)
    }

    fn message_fields(&self) -> &'static [&'static str] {
        S::MESSAGE_FIELDS
    }

    fn validate(&self, spec: &RunSpec) -> Result<(), ApiError> {
        Self::config(spec)?;
        let nodes = self.graph.drawing().nodes;
        for (field, names) in [("interrupt_before", &spec.interrupt_before), ("interrupt_after", &spec.interrupt_after)]
        {
            if let Some(unknown) = names.iter().find(|n| *n != "*" && !nodes.contains(n)) {
                return Err(ApiError::Invalid(format!(
                    "`{field}` names {unknown:?}, which graph `{}` does not have; its nodes are: {} (or \"*\" for all)",
                    self.graph.name(),
                    nodes.join(", ")
                )));
            }
        }
        match &spec.start {
            Start::Input(value) => Self::run_input(value.clone()).map(drop),
            Start::Command { update: Some(update), .. } => Self::update(update.clone()).map(drop),
            Start::Command { .. } => Ok(()),
        }
    }

    fn start(&self, spec: RunSpec) -> BoxFuture<'_, Result<BoxStream<'static, Emitted>, ApiError>> {
        Box::pin(async move {
            let cfg = Self::config(&spec)?;
            let mut translator = Translator::new(&spec, S::MESSAGE_FIELDS);
            let opening = translator.begin(|| spec.start.shown());
            let input = self.input(&cfg, spec.start).await?;
            let events = self.graph.stream(input, &cfg, stream_modes(spec.modes));
            let emitted = events.flat_map(move |event| {
                let mut out = Vec::new();
                let done = translator.translate(event, &mut out);
                stream::iter(out.into_iter().map(Emitted::Event).chain(done.map(Emitted::Done)))
            });
            Ok(stream::iter(opening.into_iter().map(Emitted::Event)).chain(emitted).boxed())
        })
    }

    fn state<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Value>, ApiError>> {
        Box::pin(async move {
            let mut cfg = RunConfig::<C>::thread(thread);
            if let Some(id) = checkpoint {
                cfg = cfg.checkpoint(id);
            }
            let snapshot = self.graph.get_state(&cfg).await.map_err(|e| match e {
                GraphError::NothingToResume { .. } => {
                    ApiError::NotFound(format!("Thread {thread} has no checkpoint {}", checkpoint.unwrap_or_default()))
                }
                other => graph_error(other),
            })?;
            Ok(snapshot.map(|s| thread_state(thread, &s)))
        })
    }

    fn history<'a>(
        &'a self,
        thread: &'a str,
        limit: usize,
        before: Option<String>,
    ) -> BoxFuture<'a, Result<Vec<Value>, ApiError>> {
        Box::pin(async move {
            let filter = ListFilter { before, limit: Some(limit), ..ListFilter::default() };
            let cfg = RunConfig::<C>::thread(thread);
            let history = self.graph.state_history_filtered(&cfg, &filter).await.map_err(graph_error)?;
            Ok(history.iter().map(|s| thread_state(thread, s)).collect())
        })
    }

    fn update_state<'a>(
        &'a self,
        thread: &'a str,
        values: Value,
        as_node: Option<String>,
        checkpoint: Option<String>,
    ) -> BoxFuture<'a, Result<String, ApiError>> {
        Box::pin(async move {
            let update = Self::update(values)?;
            let mut cfg = RunConfig::<C>::thread(thread);
            if let Some(id) = checkpoint {
                cfg = cfg.checkpoint(id);
            }
            self.graph.update_state(&cfg, update, as_node.as_deref()).await.map_err(graph_error)
        })
    }

    fn prune_history<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<usize, ApiError>> {
        Box::pin(async move { self.graph.prune_history(&RunConfig::<C>::thread(thread)).await.map_err(graph_error) })
    }

    fn rebind(&self, saver: Arc<dyn Checkpointer>, store: Arc<dyn Store>) -> Arc<dyn Served> {
        let graph = self.graph.with_checkpointer(saver).with_store(store);
        Arc::new(Handle { graph, schemas: Arc::clone(&self.schemas) })
    }
}
