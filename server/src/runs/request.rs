//! The body of a run request (`RunCreate`), checked.

use crate::error::ApiError;
use crate::served::Modes;
use crate::wire::names::{node_from_wire, nodes_from_wire};
use serde::Deserialize;
use serde_json::Value;

/// A string or a list of strings (`stream_mode`, `interrupt_before`).
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub(crate) fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(one) => vec![one],
            Self::Many(many) => many,
        }
    }
}

/// `command` of a run request.
#[derive(Clone, Debug, Default, Deserialize)]
pub(crate) struct CommandBody {
    #[serde(default)]
    pub(crate) resume: Option<Value>,
    #[serde(default)]
    pub(crate) update: Option<Value>,
    #[serde(default)]
    pub(crate) goto: Option<Value>,
}

/// A run request, as `langgraph-sdk` sends it. Fields of the API that only LangGraph Platform
/// uses (`webhook`, `feedback_keys`, `langsmith_tracer`, `after_seconds`) are accepted and
/// have no effect.
#[derive(Clone, Debug, Deserialize)]
pub(crate) struct RunCreate {
    pub(crate) assistant_id: String,
    #[serde(default)]
    pub(crate) input: Option<Value>,
    #[serde(default)]
    pub(crate) command: Option<CommandBody>,
    #[serde(default)]
    pub(crate) config: Option<Value>,
    #[serde(default)]
    pub(crate) context: Option<Value>,
    #[serde(default)]
    pub(crate) metadata: Option<Value>,
    #[serde(default)]
    pub(crate) stream_mode: Option<OneOrMany>,
    #[serde(default)]
    pub(crate) stream_subgraphs: Option<bool>,
    #[serde(default)]
    pub(crate) stream_resumable: Option<bool>,
    #[serde(default)]
    pub(crate) interrupt_before: Option<OneOrMany>,
    #[serde(default)]
    pub(crate) interrupt_after: Option<OneOrMany>,
    #[serde(default)]
    pub(crate) checkpoint: Option<Value>,
    #[serde(default)]
    pub(crate) checkpoint_id: Option<String>,
    #[serde(default)]
    pub(crate) multitask_strategy: Option<String>,
    #[serde(default)]
    pub(crate) if_not_exists: Option<String>,
    #[serde(default)]
    pub(crate) on_disconnect: Option<String>,
    #[serde(default)]
    pub(crate) on_completion: Option<String>,
    /// The cron that made this run and the time it fired for, kept in the run's `kwargs`; set
    /// by the server, never read from a request.
    #[serde(skip)]
    pub(crate) cron: Option<Value>,
    /// The authenticated caller, who the run's nodes see as `Runtime::user`; set by the server
    /// from the request's credentials, never read from its body, and not stored.
    #[serde(skip)]
    pub(crate) user: Option<std::sync::Arc<graphwright::AuthUser>>,
    /// What the server's policy granted for `create_run` on the run's thread, when the route
    /// already checked the thread its path names (so it is not read again); set by the
    /// server, never read from a request.
    #[serde(skip)]
    pub(crate) thread_grant: Option<crate::authz::Grant>,
}

/// What happens to a thread's in-flight run when another is created on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Multitask {
    Reject,
    Interrupt,
    Rollback,
    Enqueue,
}

impl Multitask {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Reject => "reject",
            Self::Interrupt => "interrupt",
            Self::Rollback => "rollback",
            Self::Enqueue => "enqueue",
        }
    }
}

fn one_of<'a>(field: &str, value: Option<&'a str>, allowed: &[&'a str], default: &'a str) -> Result<&'a str, ApiError> {
    match value {
        None => Ok(default),
        Some(v) if allowed.contains(&v) => Ok(v),
        Some(v) => Err(ApiError::Invalid(format!("`{field}` must be one of {}, not {v:?}", allowed.join(", ")))),
    }
}

impl RunCreate {
    /// The stream modes asked for (`values` when none).
    pub(crate) fn modes(&self) -> Result<Modes, ApiError> {
        let mut modes = Modes { subgraphs: self.stream_subgraphs.unwrap_or(false), ..Modes::default() };
        let asked = self.stream_mode.clone().map_or_else(|| vec!["values".to_owned()], OneOrMany::into_vec);
        for mode in asked {
            match mode.as_str() {
                "values" => modes.values = true,
                "updates" => modes.updates = true,
                "messages" | "messages-tuple" => modes.messages = true,
                "custom" => modes.custom = true,
                "tasks" => modes.tasks = true,
                "checkpoints" => modes.checkpoints = true,
                "debug" => modes.debug = true,
                "events" => modes.events = true,
                other => {
                    return Err(ApiError::Invalid(format!(
                        "unknown stream mode {other:?}: use values, updates, messages-tuple, custom, tasks, checkpoints, debug or events"
                    )));
                }
            }
        }
        Ok(modes)
    }

    pub(crate) fn multitask(&self) -> Result<Multitask, ApiError> {
        let all = ["reject", "interrupt", "rollback", "enqueue"];
        Ok(match one_of("multitask_strategy", self.multitask_strategy.as_deref(), &all, "enqueue")? {
            "reject" => Multitask::Reject,
            "interrupt" => Multitask::Interrupt,
            "rollback" => Multitask::Rollback,
            _ => Multitask::Enqueue,
        })
    }

    /// Whether an unknown thread is created (`if_not_exists: "create"`).
    pub(crate) fn creates_thread(&self) -> Result<bool, ApiError> {
        Ok(one_of("if_not_exists", self.if_not_exists.as_deref(), &["reject", "create"], "reject")? == "create")
    }

    /// Whether the run is cancelled when the client goes away.
    pub(crate) fn cancel_on_disconnect(&self) -> Result<bool, ApiError> {
        Ok(one_of("on_disconnect", self.on_disconnect.as_deref(), &["cancel", "continue"], "continue")? == "cancel")
    }

    /// Whether a stateless run's thread is kept.
    pub(crate) fn keeps_thread(&self) -> Result<bool, ApiError> {
        Ok(one_of("on_completion", self.on_completion.as_deref(), &["delete", "keep"], "delete")? == "keep")
    }

    /// `interrupt_before`, as graphwright names the nodes.
    pub(crate) fn interrupt_before(&self) -> Vec<String> {
        self.interrupt_before.clone().map(|names| nodes_from_wire(names.into_vec())).unwrap_or_default()
    }

    /// `interrupt_after`, as graphwright names the nodes.
    pub(crate) fn interrupt_after(&self) -> Vec<String> {
        self.interrupt_after.clone().map(|names| nodes_from_wire(names.into_vec())).unwrap_or_default()
    }

    /// The checkpoint to start from, if the request names one.
    pub(crate) fn checkpoint_id(&self) -> Option<String> {
        self.checkpoint_id
            .clone()
            .or_else(|| self.checkpoint.as_ref()?.get("checkpoint_id")?.as_str().map(str::to_owned))
    }

    /// `config.recursion_limit`.
    pub(crate) fn recursion_limit(&self) -> Result<Option<u64>, ApiError> {
        match self.config.as_ref().and_then(|c| c.get("recursion_limit")) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().filter(|n| *n > 0).map(Some).ok_or_else(|| {
                ApiError::Invalid(format!("`config.recursion_limit` must be a positive integer, not {v}"))
            }),
        }
    }

    /// The run's context: `context`, or `config.configurable` (both at once is an error, as in
    /// LangGraph).
    pub(crate) fn context(&self) -> Result<Option<Value>, ApiError> {
        let configurable = self
            .config
            .as_ref()
            .and_then(|c| c.get("configurable"))
            .filter(|c| c.as_object().is_some_and(|o| !o.is_empty()));
        let context = self.context.as_ref().filter(|c| !c.is_null() && c.as_object().is_none_or(|o| !o.is_empty()));
        match (context, configurable) {
            (Some(_), Some(_)) => Err(ApiError::BadRequest(
                "give the run's context either as `context` or as `config.configurable`, not both".into(),
            )),
            (Some(c), None) | (None, Some(c)) => Ok(Some(c.clone())),
            (None, None) => Ok(None),
        }
    }

    /// `goto` of the command, as node names.
    pub(crate) fn goto(&self) -> Result<Vec<String>, ApiError> {
        let Some(goto) = self.command.as_ref().and_then(|c| c.goto.clone()) else { return Ok(Vec::new()) };
        let names = match goto {
            Value::Null => Vec::new(),
            Value::String(node) => vec![node_from_wire(&node).to_owned()],
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(node) => Ok(node_from_wire(&node).to_owned()),
                    other => Err(other),
                })
                .collect::<Result<_, _>>()
                .map_err(|other| {
                    ApiError::Invalid(format!("`command.goto` takes node names; a Send ({other}) is not supported"))
                })?,
            other => {
                return Err(ApiError::Invalid(format!(
                    "`command.goto` takes a node name or a list of them; a Send ({other}) is not supported"
                )));
            }
        };
        Ok(names)
    }
}
