//! The `events` stream mode: a run told the way LangChain's `astream_events(version="v2")` tells
//! a LangGraph run, built from graphwright's own events.
//!
//! The run is the root chain (named after the graph, its id the run's id); each node task is a
//! chain under it (a subgraph's tasks under the task that runs the subgraph); a reply streamed
//! by a node is a chat model run under its task; each tool call a `ToolNode` makes is a tool
//! run; each value a node writes is a custom event. Every event carries its run's id, the ids
//! of the runs above it (`parent_ids`, outermost first), tags and metadata. Ids are UUIDs
//! derived from the server run's id and the task's place, so a replay names the same runs.

use super::run::WireEvent;
use crate::wire::messages::{ai_chunk, message_to_wire};
use graphwright::model::Usage;
use graphwright::tool::ToolEvent;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashMap};

/// The name a model run goes by: graphwright's events do not say which model a node called.
const MODEL_NAME: &str = "ChatModel";

/// A UUID derived from `key`, the same every time.
pub(super) fn derived_id(key: &str) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, key.as_bytes()).to_string()
}

/// The id of task `task` of step `step` of the run, as `tasks` and `debug` events show it.
pub(super) fn task_id(run_id: &str, step: u64, task: u32) -> String {
    derived_id(&format!("{run_id}:{step}:{task}"))
}

/// The node a namespace level names, and the index of the task that runs it (`node:..:task`).
fn level_task(level: &str) -> (&str, Option<u32>) {
    let node = level.split(':').next().unwrap_or(level);
    let task = level.rsplit(':').next().and_then(|t| t.parse().ok());
    (node, task)
}

/// Who an event is about: a run's name, its id, the runs above it, its tags and metadata.
struct About<'a> {
    name: &'a str,
    id: &'a str,
    parents: &'a [String],
    tags: &'a [String],
    metadata: &'a Value,
}

impl About<'_> {
    /// Adds this run's `kind` event, carrying `data`.
    fn tell(&self, kind: &str, data: Value, out: &mut Vec<WireEvent>) {
        let mut event = Map::new();
        event.insert("event".into(), kind.into());
        event.insert("name".into(), self.name.into());
        event.insert("run_id".into(), self.id.into());
        event.insert("parent_ids".into(), self.parents.into());
        event.insert("tags".into(), self.tags.into());
        event.insert("metadata".into(), self.metadata.clone());
        event.insert("data".into(), data);
        out.push(WireEvent { name: "events".into(), data: Value::Object(event) });
    }
}

/// `{key: value}`, taking `value` without a copy.
fn one(key: &str, value: Value) -> Value {
    let mut data = Map::new();
    data.insert(key.into(), value);
    Value::Object(data)
}

/// A node task in progress, as a chain run.
struct TaskRun {
    /// The graph it belongs to: empty for the run's own graph, one level per subgraph.
    levels: Vec<String>,
    step: u64,
    task: u32,
    node: String,
    id: String,
    /// The ids of the runs above it, outermost first.
    parents: Vec<String>,
    tags: Vec<String>,
    metadata: Value,
    input: Value,
    /// What it wrote, once its update came (a subgraph task's result comes only that way).
    update: Option<Value>,
}

impl TaskRun {
    fn about(&self) -> About<'_> {
        About { name: &self.node, id: &self.id, parents: &self.parents, tags: &self.tags, metadata: &self.metadata }
    }

    /// `parent_ids` of a run directly under this task.
    fn lineage(&self) -> Vec<String> {
        let mut ids = self.parents.clone();
        ids.push(self.id.clone());
        ids
    }

    /// Metadata of a run inside this task (a model or tool call).
    fn inner_metadata(&self) -> Value {
        let mut metadata = self.metadata.clone();
        if let Value::Object(m) = &mut metadata {
            let ns = m.get("langgraph_checkpoint_ns").cloned().unwrap_or(Value::Null);
            m.insert("checkpoint_ns".into(), ns);
        }
        metadata
    }
}

/// Where a model or tool call sits: the id of its task, its `parent_ids` and its metadata.
struct Owner {
    task: Option<String>,
    parents: Vec<String>,
    metadata: Value,
}

/// A reply a node is streaming.
struct ModelRun {
    message_id: String,
    id: String,
    /// The task it ends with, at the latest.
    task: Option<String>,
    parents: Vec<String>,
    metadata: Value,
    /// Whether its start went out (a reply that did not stream starts when its task ends).
    started: bool,
    text: String,
    /// Tool call pieces by index: the call's id, the tool's name, the arguments' text so far.
    calls: BTreeMap<u32, (Option<String>, Option<String>, String)>,
    usage: Option<Usage>,
}

impl ModelRun {
    fn about(&self) -> About<'_> {
        About { name: MODEL_NAME, id: &self.id, parents: &self.parents, tags: &[], metadata: &self.metadata }
    }

    /// The reply as LangChain's `AIMessage`: as the task wrote it if it did, else assembled
    /// from the pieces streamed.
    fn reply(&self, written: Option<&Value>) -> Value {
        let mut message = written.cloned().unwrap_or_else(|| self.assembled());
        if let (Some(usage), Value::Object(m)) = (self.usage, &mut message) {
            m.insert(
                "usage_metadata".into(),
                json!({
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens(),
                    "input_token_details": {"cache_read": usage.cached_tokens},
                }),
            );
        }
        message
    }

    fn assembled(&self) -> Value {
        let mut calls = Vec::new();
        let mut invalid = Vec::new();
        for (id, name, arguments) in self.calls.values() {
            match serde_json::from_str::<Value>(if arguments.is_empty() { "{}" } else { arguments }) {
                Ok(parsed) => calls.push(json!({"id": id, "name": name, "arguments": parsed})),
                Err(error) => invalid.push(json!({"id": id, "name": name, "args": arguments,
                    "error": error.to_string(), "type": "invalid_tool_call"})),
            }
        }
        let mut message =
            json!({"role": "assistant", "id": self.message_id, "content": self.text, "tool_calls": calls});
        message_to_wire(&mut message);
        if let Value::Object(m) = &mut message {
            m.insert("invalid_tool_calls".into(), Value::Array(invalid));
        }
        message
    }
}

/// A tool call a `ToolNode` is running.
struct ToolRun {
    key: String,
    id: String,
    name: String,
    parents: Vec<String>,
    metadata: Value,
    input: Value,
}

impl ToolRun {
    fn about(&self) -> About<'_> {
        About { name: &self.name, id: &self.id, parents: &self.parents, tags: &[], metadata: &self.metadata }
    }
}

/// One run's `events` frames, built as its graphwright events come.
pub(super) struct Chains {
    run_id: String,
    graph: String,
    /// Metadata every event of the run carries.
    base: Map<String, Value>,
    /// Each graph's state when its current step started (its tasks' input), by namespace.
    values: HashMap<Vec<String>, Value>,
    tasks: Vec<TaskRun>,
    models: Vec<ModelRun>,
    tools: Vec<ToolRun>,
}

impl Chains {
    /// The events of the run `run_id` of graph `graph` on `thread_id`, started by `assistant_id`.
    pub(super) fn new(run_id: &str, thread_id: &str, graph: &str, assistant_id: &str) -> Self {
        let mut base = Map::new();
        base.insert("graph_id".into(), graph.into());
        base.insert("assistant_id".into(), assistant_id.into());
        base.insert("thread_id".into(), thread_id.into());
        base.insert("run_id".into(), run_id.into());
        base.insert("run_attempt".into(), 1.into());
        Self {
            run_id: run_id.to_owned(),
            graph: graph.to_owned(),
            base,
            values: HashMap::new(),
            tasks: Vec::new(),
            models: Vec::new(),
            tools: Vec::new(),
        }
    }

    /// Tells an event of the root chain.
    fn tell_root(&self, kind: &str, data: Value, out: &mut Vec<WireEvent>) {
        let metadata = Value::Object(self.base.clone());
        let root = About { name: &self.graph, id: &self.run_id, parents: &[], tags: &[], metadata: &metadata };
        root.tell(kind, data, out);
    }

    /// The root chain starts, with the run's input.
    pub(super) fn begin(&self, input: Value, out: &mut Vec<WireEvent>) {
        self.tell_root("on_chain_start", one("input", input), out);
    }

    /// The root chain ends, with the graph's final values.
    pub(super) fn end(&mut self, values: Value, out: &mut Vec<WireEvent>) {
        self.tell_root("on_chain_end", one("output", values), out);
        self.tasks.clear();
        self.models.clear();
        self.tools.clear();
    }

    /// The state of the graph at `levels` after a step: the input of its next tasks.
    pub(super) fn values(&mut self, levels: &[String], values: &Value) {
        self.values.insert(levels.to_vec(), values.clone());
    }

    /// The task a subgraph at `levels` runs under.
    fn enclosing(&self, levels: &[String]) -> Option<&TaskRun> {
        let (last, outer) = levels.split_last()?;
        let (node, task) = level_task(last);
        self.tasks.iter().rev().find(|t| t.levels == outer && t.node == node && task.is_none_or(|i| t.task == i))
    }

    /// A node task starts: its chain, under the root or under the task running its subgraph.
    pub(super) fn task_started(
        &mut self,
        levels: &[String],
        ns: &str,
        step: u64,
        node: &str,
        task: u32,
        out: &mut Vec<WireEvent>,
    ) {
        let (id, parents) = match self.enclosing(levels) {
            Some(outer) => (derived_id(&format!("{}:{ns}:{step}:{task}", self.run_id)), outer.lineage()),
            None => (task_id(&self.run_id, step, task), vec![self.run_id.clone()]),
        };
        let own_ns = if ns.is_empty() { format!("{node}:{id}") } else { format!("{ns}|{node}:{id}") };
        let mut metadata = self.base.clone();
        metadata.insert("langgraph_step".into(), step.into());
        metadata.insert("langgraph_node".into(), node.into());
        metadata.insert("langgraph_path".into(), json!(["__pregel_pull", node]));
        metadata.insert("langgraph_checkpoint_ns".into(), own_ns.into());
        let run = TaskRun {
            levels: levels.to_vec(),
            step,
            task,
            node: node.to_owned(),
            id,
            parents,
            tags: vec![format!("graph:step:{step}")],
            metadata: Value::Object(metadata),
            input: self.values.get(levels).cloned().unwrap_or_else(|| json!({})),
            update: None,
        };
        run.about().tell("on_chain_start", one("input", run.input.clone()), out);
        self.tasks.push(run);
    }

    /// What a task of the graph at `levels` wrote (kept for its end).
    pub(super) fn task_updated(&mut self, levels: &[String], node: &str, update: &Value) {
        if let Some(run) = self.tasks.iter_mut().find(|t| t.levels == levels && t.node == node && t.update.is_none()) {
            run.update = Some(update.clone());
        }
    }

    /// A task ended: the calls inside it end, then (unless it failed or paused, which LangChain
    /// reports with no end either) its chain streams its update and ends.
    #[allow(clippy::too_many_arguments)] // one task's identity and its outcome
    pub(super) fn task_finished(
        &mut self,
        levels: &[String],
        step: u64,
        node: &str,
        task: u32,
        result: Option<Value>,
        stopped: bool,
        out: &mut Vec<WireEvent>,
    ) {
        let Some(at) =
            self.tasks.iter().position(|t| t.levels == levels && t.step == step && t.task == task && t.node == node)
        else {
            return;
        };
        let run = self.tasks.remove(at);
        let update = result.or(run.update.clone());
        let open: Vec<ModelRun> = {
            let (mine, rest) =
                std::mem::take(&mut self.models).into_iter().partition(|m| m.task.as_deref() == Some(&run.id));
            self.models = rest;
            mine
        };
        self.tools.retain(|t| t.parents.last() != Some(&run.id));
        if stopped {
            return;
        }
        for model in &open {
            let written = update.as_ref().and_then(|u| find_message(u, &model.message_id));
            end_model(model, written.as_ref(), out);
        }
        let Some(update) = update else { return };
        run.about().tell("on_chain_stream", one("chunk", update.clone()), out);
        let mut data = one("output", update);
        data["input"] = run.input.clone();
        run.about().tell("on_chain_end", data, out);
    }

    /// The task a call made by `node` in step `step` of the graph at `levels` belongs to; the
    /// root when no such task is open.
    fn owner(&self, levels: &[String], step: u64, node: &str) -> Owner {
        if let Some(run) = self.tasks.iter().find(|t| t.levels == levels && t.step == step && t.node == node) {
            return Owner { task: Some(run.id.clone()), parents: run.lineage(), metadata: run.inner_metadata() };
        }
        let mut metadata = self.base.clone();
        metadata.insert("langgraph_step".into(), step.into());
        metadata.insert("langgraph_node".into(), node.into());
        Owner { task: None, parents: vec![self.run_id.clone()], metadata: Value::Object(metadata) }
    }

    fn model_run(&mut self, levels: &[String], step: u64, node: &str, message_id: &str) -> usize {
        if let Some(at) = self.models.iter().position(|m| m.message_id == message_id) {
            return at;
        }
        let owner = self.owner(levels, step, node);
        let mut metadata = owner.metadata;
        if let Value::Object(m) = &mut metadata {
            m.insert("ls_model_type".into(), "chat".into());
        }
        self.models.push(ModelRun {
            message_id: message_id.to_owned(),
            id: derived_id(&format!("{}:model:{message_id}", self.run_id)),
            task: owner.task,
            parents: owner.parents,
            metadata,
            started: false,
            text: String::new(),
            calls: BTreeMap::new(),
            usage: None,
        });
        self.models.len() - 1
    }

    /// A piece of a reply a node streams: text, or a piece of a tool call (`call`: index, id,
    /// name, arguments text).
    #[allow(clippy::too_many_arguments)] // where the piece comes from, and the piece
    pub(super) fn reply_piece(
        &mut self,
        levels: &[String],
        step: u64,
        node: &str,
        message_id: &str,
        text: &str,
        call: Option<(u32, Option<&str>, Option<&str>, &str)>,
        out: &mut Vec<WireEvent>,
    ) {
        let at = self.model_run(levels, step, node, message_id);
        if !self.models[at].started {
            start_model(&self.models[at], out);
            self.models[at].started = true;
        }
        let model = &mut self.models[at];
        model.text.push_str(text);
        let mut pieces = Vec::new();
        if let Some((index, id, name, arguments)) = call {
            let slot = model.calls.entry(index).or_insert((None, None, String::new()));
            if slot.0.is_none() {
                slot.0 = id.map(str::to_owned);
            }
            if slot.1.is_none() {
                slot.1 = name.map(str::to_owned);
            }
            slot.2.push_str(arguments);
            pieces.push(json!({"index": index, "id": id, "name": name, "args": arguments, "type": "tool_call_chunk"}));
        }
        self.models[at].about().tell("on_chat_model_stream", one("chunk", ai_chunk(message_id, text, &pieces)), out);
    }

    /// A model call finished and used `usage`: a reply that streamed ends now; one that did
    /// not ends with its task, whose update holds it.
    pub(super) fn usage(
        &mut self,
        levels: &[String],
        step: u64,
        node: &str,
        message_id: &str,
        usage: Usage,
        out: &mut Vec<WireEvent>,
    ) {
        let at = self.model_run(levels, step, node, message_id);
        self.models[at].usage = Some(usage);
        if self.models[at].started {
            let model = self.models.remove(at);
            end_model(&model, None, out);
        }
    }

    /// A value a node wrote: a custom event of its task.
    pub(super) fn custom(&self, levels: &[String], step: u64, node: &str, value: Value, out: &mut Vec<WireEvent>) {
        let owner = self.owner(levels, step, node);
        let (run_id, parents) = match &owner.task {
            Some(task) => (task.clone(), owner.parents[..owner.parents.len() - 1].to_vec()),
            None => (self.run_id.clone(), Vec::new()),
        };
        let about = About { name: "custom", id: &run_id, parents: &parents, tags: &[], metadata: &owner.metadata };
        about.tell("on_custom_event", value, out);
    }

    /// What happened to a tool call a `ToolNode` in the task runs.
    pub(super) fn tool(
        &mut self,
        levels: &[String],
        step: u64,
        node: &str,
        event: &ToolEvent,
        out: &mut Vec<WireEvent>,
    ) {
        let owner = self.owner(levels, step, node);
        let (ToolEvent::Started { tool_call_id: call, index, .. }
        | ToolEvent::Progress { tool_call_id: call, index, .. }
        | ToolEvent::Finished { tool_call_id: call, index, .. }) = event
        else {
            return;
        };
        let key = format!("{}:{call}:{index}", owner.task.as_deref().unwrap_or(&self.run_id));
        match event {
            ToolEvent::Started { name, arguments, .. } => {
                let run = ToolRun {
                    id: derived_id(&format!("{}:tool:{key}", self.run_id)),
                    key,
                    name: name.clone(),
                    parents: owner.parents,
                    metadata: owner.metadata,
                    input: arguments.clone(),
                };
                run.about().tell("on_tool_start", one("input", run.input.clone()), out);
                self.tools.push(run);
            }
            ToolEvent::Progress { name, data, .. } => {
                let id = self.tools.iter().find(|t| t.key == key).map(|t| t.id.clone());
                let (run_id, parents) = match id {
                    Some(id) => (id, owner.parents),
                    None => (derived_id(&format!("{}:tool:{key}", self.run_id)), owner.parents),
                };
                let about = About {
                    name: "tool_progress",
                    id: &run_id,
                    parents: &parents,
                    tags: &[],
                    metadata: &owner.metadata,
                };
                about.tell("on_custom_event", json!({"tool": name, "tool_call_id": call, "data": data}), out);
            }
            ToolEvent::Finished { name, content, is_error, .. } => {
                let run = match self.tools.iter().position(|t| t.key == key) {
                    Some(at) => self.tools.remove(at),
                    None => ToolRun {
                        id: derived_id(&format!("{}:tool:{key}", self.run_id)),
                        key,
                        name: name.clone(),
                        parents: owner.parents,
                        metadata: owner.metadata,
                        input: Value::Null,
                    },
                };
                if *is_error {
                    let data = json!({"error": content, "input": run.input, "tool_call_id": call});
                    run.about().tell("on_tool_error", data, out);
                } else {
                    let mut message =
                        json!({"role": "tool", "content": content, "tool_call_id": call, "name": run.name});
                    message_to_wire(&mut message);
                    if let Value::Object(m) = &mut message {
                        m.insert("artifact".into(), Value::Null);
                    }
                    run.about().tell("on_tool_end", json!({"output": message, "input": run.input}), out);
                }
            }
            _ => {}
        }
    }
}

/// A model run starts. graphwright's events do not carry a call's prompt: the start says only
/// that it began.
fn start_model(model: &ModelRun, out: &mut Vec<WireEvent>) {
    model.about().tell("on_chat_model_start", json!({}), out);
}

/// A model run ends with its reply (as its task wrote it, if it did).
fn end_model(model: &ModelRun, written: Option<&Value>, out: &mut Vec<WireEvent>) {
    if !model.started {
        start_model(model, out);
    }
    model.about().tell("on_chat_model_end", one("output", model.reply(written)), out);
}

/// The message with id `id` in an update (as the wire shows it), in whichever field holds it.
fn find_message(update: &Value, id: &str) -> Option<Value> {
    let Value::Object(fields) = update else { return None };
    fields.values().find_map(|written| {
        let written = written.get("$overwrite").unwrap_or(written);
        let items = match written {
            Value::Array(items) => items.as_slice(),
            single => std::slice::from_ref(single),
        };
        items.iter().find(|m| m.get("id").and_then(Value::as_str) == Some(id) && m.get("type").is_some()).cloned()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(out: &[WireEvent]) -> Vec<(String, String)> {
        out.iter()
            .map(|e| (e.data["event"].as_str().unwrap().to_owned(), e.data["name"].as_str().unwrap().to_owned()))
            .collect()
    }

    #[test]
    fn a_task_with_a_streamed_reply_nests_under_the_root() {
        let mut chains = Chains::new("run", "thread", "chat", "assistant");
        let mut out = Vec::new();
        chains.begin(json!({"messages": ["hi"]}), &mut out);
        chains.values(&[], &json!({"messages": []}));
        chains.task_started(&[], "", 1, "agent", 0, &mut out);
        chains.reply_piece(&[], 1, "agent", "m1", "Hel", None, &mut out);
        chains.reply_piece(&[], 1, "agent", "m1", "lo", None, &mut out);
        chains.usage(&[], 1, "agent", "m1", Usage::tokens(3, 2), &mut out);
        let update = json!({"messages": [{"type": "ai", "id": "m1", "content": "Hello"}]});
        chains.task_finished(&[], 1, "agent", 0, Some(update.clone()), false, &mut out);
        chains.end(json!({"messages": ["done"]}), &mut out);
        assert_eq!(
            kinds(&out),
            [
                ("on_chain_start", "chat"),
                ("on_chain_start", "agent"),
                ("on_chat_model_start", MODEL_NAME),
                ("on_chat_model_stream", MODEL_NAME),
                ("on_chat_model_stream", MODEL_NAME),
                ("on_chat_model_end", MODEL_NAME),
                ("on_chain_stream", "agent"),
                ("on_chain_end", "agent"),
                ("on_chain_end", "chat"),
            ]
            .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        let task = task_id("run", 1, 0);
        assert_eq!(out[1].data["run_id"], task.as_str(), "a top-level task's chain is its task id");
        assert_eq!(out[1].data["parent_ids"], json!(["run"]));
        assert_eq!(out[1].data["data"]["input"], json!({"messages": []}));
        assert_eq!(out[3].data["parent_ids"], json!(["run", task]));
        let reply = &out[5].data["data"]["output"];
        assert_eq!((reply["content"].as_str(), reply["type"].as_str()), (Some("Hello"), Some("ai")));
        assert_eq!(reply["usage_metadata"]["total_tokens"], 5);
        assert_eq!(out[7].data["data"], json!({"output": update, "input": {"messages": []}}));
        assert!(out.iter().all(|e| e.name == "events" && e.data["metadata"]["thread_id"] == "thread"));
    }

    #[test]
    fn a_failed_or_paused_task_has_no_end_and_a_reply_that_did_not_stream_ends_with_its_task() {
        let mut chains = Chains::new("run", "thread", "chat", "assistant");
        let mut out = Vec::new();
        chains.task_started(&[], "", 1, "ask", 0, &mut out);
        chains.task_finished(&[], 1, "ask", 0, None, true, &mut out);
        assert_eq!(kinds(&out), [("on_chain_start".to_owned(), "ask".to_owned())]);

        out.clear();
        chains.task_started(&[], "", 2, "agent", 0, &mut out);
        chains.usage(&[], 2, "agent", "m2", Usage::tokens(1, 1), &mut out);
        assert_eq!(out.len(), 1, "no model run is told before its reply is known");
        let update = json!({"messages": {"$overwrite": [{"type": "ai", "id": "m2", "content": "whole"}]}});
        chains.task_finished(&[], 2, "agent", 0, Some(update), false, &mut out);
        let names: Vec<_> = kinds(&out).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            names,
            ["on_chain_start", "on_chat_model_start", "on_chat_model_end", "on_chain_stream", "on_chain_end"]
        );
        assert_eq!(out[2].data["data"]["output"]["content"], "whole", "the reply as the task wrote it");
    }

    #[test]
    fn tool_call_pieces_assemble_into_calls_and_bad_arguments_into_invalid_calls() {
        let mut chains = Chains::new("run", "thread", "chat", "assistant");
        let mut out = Vec::new();
        chains.task_started(&[], "", 1, "agent", 0, &mut out);
        for (index, id, arguments) in [(0, Some("c1"), "{\"city\""), (0, None, ": \"Oslo\"}"), (1, Some("c2"), "{oops")]
        {
            let call = (index, id, id.map(|_| "weather"), arguments);
            chains.reply_piece(&[], 1, "agent", "m", "", Some(call), &mut out);
        }
        chains.usage(&[], 1, "agent", "m", Usage::tokens(1, 1), &mut out);
        let reply = &out.last().unwrap().data["data"]["output"];
        assert_eq!(
            reply["tool_calls"],
            json!([{"id": "c1", "name": "weather", "args": {"city": "Oslo"}, "type": "tool_call"}])
        );
        assert_eq!(reply["invalid_tool_calls"][0]["args"], "{oops");
        assert_eq!(out[2].data["data"]["chunk"]["tool_call_chunks"][0]["id"], "c1", "after the start, the first piece");
    }

    #[test]
    fn a_subgraphs_tasks_nest_under_the_task_that_runs_it() {
        let mut chains = Chains::new("run", "thread", "parent", "assistant");
        let mut out = Vec::new();
        chains.task_started(&[], "", 2, "inner", 1, &mut out);
        let levels = ["inner:0001-abc:1".to_owned()];
        chains.task_started(&levels, "inner:ns", 1, "work", 0, &mut out);
        chains.custom(&levels, 1, "work", json!({"step": "x"}), &mut out);
        let outer = task_id("run", 2, 1);
        let inner = out[1].data["run_id"].as_str().unwrap().to_owned();
        assert_eq!(out[1].data["parent_ids"], json!(["run", outer]));
        assert_ne!(inner, task_id("run", 1, 0), "ids inside a subgraph differ from the run's own tasks'");
        assert_eq!(out[1].data["metadata"]["langgraph_checkpoint_ns"], format!("inner:ns|work:{inner}"));
        assert_eq!(
            (out[2].data["event"].as_str(), out[2].data["run_id"].as_str()),
            (Some("on_custom_event"), Some(inner.as_str()))
        );
        assert_eq!(out[2].data["data"], json!({"step": "x"}));
    }
}
