//! Authorization policies: handlers per resource and action, and what they decide.

use super::Filter;
use futures::future::BoxFuture;
use graphwright::AuthUser;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// What a request acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Resource {
    /// Assistants, and what is read through one (its graph, schemas, versions, agent card).
    Assistants,
    /// Threads, their state and history, and their runs (a run belongs to its thread; a
    /// stateless run to the thread made for it).
    Threads,
    /// Crons.
    Crons,
    /// The long-term memory store, by namespace.
    Store,
}

/// What a request does to its resource.
///
/// On the store: `Read` is getting an item, `Update` putting one, `Delete` deleting one,
/// `Search` searching items and listing namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Action {
    /// Making a record (a thread, an assistant, a cron).
    Create,
    /// Reading one record or what hangs off it (a thread's state, history, runs and streams).
    Read,
    /// Changing one (a thread's metadata or state, cancelling a run).
    Update,
    /// Deleting one (a thread, a run, a cron), or pruning threads.
    Delete,
    /// Searching or counting records.
    Search,
    /// Starting a run on a thread (a stateless run: on a thread made for it).
    CreateRun,
}

impl Resource {
    /// The name as the API's paths spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Assistants => "assistants",
            Self::Threads => "threads",
            Self::Crons => "crons",
            Self::Store => "store",
        }
    }
}

impl Action {
    /// The name as LangGraph's handlers spell it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Create => "create",
            Self::Read => "read",
            Self::Update => "update",
            Self::Delete => "delete",
            Self::Search => "search",
            Self::CreateRun => "create_run",
        }
    }
}

/// A request to authorize: who, on what resource, doing what, and with which values.
///
/// `value` is the request as a handler needs it, in the API's field names: the id of the
/// record a path names (`thread_id`, `assistant_id`, `cron_id`); the body of a create, search
/// or run request (`metadata`, `assistant_id`, `graph_id`, ..); a store request's `namespace`
/// (a list of labels) and `key`.
#[derive(Clone, Debug)]
pub struct Access {
    user: Arc<AuthUser>,
    resource: Resource,
    action: Action,
    value: Value,
}

impl Access {
    /// A request to authorize; the server makes these, tests of a policy may too.
    pub fn new(user: Arc<AuthUser>, resource: Resource, action: Action, value: Value) -> Self {
        Self { user, resource, action, value }
    }

    /// The caller, as the server's authenticator established it.
    pub fn user(&self) -> &AuthUser {
        &self.user
    }

    /// What the request acts on.
    pub fn resource(&self) -> Resource {
        self.resource
    }

    /// What it does.
    pub fn action(&self) -> Action {
        self.action
    }

    /// The request's values (see the type's documentation).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// A store request's namespace (a search's prefix), when the request has one.
    pub fn namespace(&self) -> Option<Vec<&str>> {
        self.value.get("namespace")?.as_array()?.iter().map(Value::as_str).collect()
    }
}

/// What a handler lets a request do.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Grant {
    filter: Filter,
    metadata: Map<String, Value>,
    namespace: Option<Vec<String>>,
}

impl Grant {
    /// Everything the request asks.
    pub fn allow() -> Self {
        Self::default()
    }

    /// Only records `filter` admits: a record it does not admit is answered as missing
    /// (404), and left out of searches and counts.
    pub fn only(filter: Filter) -> Self {
        Self { filter, ..Self::default() }
    }

    /// The same grant, with `key` set to `value` in the metadata of the record the request
    /// creates or updates (set after the client's own metadata, so a client cannot change it).
    #[must_use]
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// The same grant, for a store request: acting on `labels` instead of the namespace asked
    /// (a search: under `labels`).
    #[must_use]
    pub fn with_namespace<I: IntoIterator<Item = S>, S: Into<String>>(mut self, labels: I) -> Self {
        self.namespace = Some(labels.into_iter().map(Into::into).collect());
        self
    }

    /// Which records the request may see.
    pub fn filter(&self) -> &Filter {
        &self.filter
    }

    /// What is set in the metadata of the record the request creates or updates.
    pub fn metadata(&self) -> &Map<String, Value> {
        &self.metadata
    }

    /// The namespace a store request acts on instead of its own, if any.
    pub fn namespace(&self) -> Option<&[String]> {
        self.namespace.as_deref()
    }

    /// `metadata` with the grant's metadata set over it.
    pub(crate) fn stamp(&self, metadata: &mut Map<String, Value>) {
        metadata.extend(self.metadata.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
}

/// Why a request was refused: answered 403 with `{"detail": reason}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Forbidden(pub String);

impl Forbidden {
    /// A refusal saying `reason` (shown to the client).
    pub fn new(reason: impl Into<String>) -> Self {
        Self(reason.into())
    }
}

/// Decides one kind of request, for a [`Policy`].
///
/// Any async function (or closure) taking an [`Access`] and returning
/// `Result<Grant, Forbidden>` is one.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot authorize requests",
    note = "give `Policy::on` an async fn taking `Access` and returning `Result<Grant, Forbidden>`"
)]
pub trait Handler: Send + Sync + 'static {
    /// What `access` may do, or why it may not.
    fn decide(&self, access: Access) -> BoxFuture<'static, Result<Grant, Forbidden>>;
}

impl<F, Fut> Handler for F
where
    F: Fn(Access) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Grant, Forbidden>> + Send + 'static,
{
    fn decide(&self, access: Access) -> BoxFuture<'static, Result<Grant, Forbidden>> {
        Box::pin(self(access))
    }
}

/// Who may do what, for [`Server::authorize`](crate::Server::authorize): a handler per
/// resource and action, per resource, or for every request. The most specific handler
/// decides; a request no handler covers is allowed, unless [`deny_unlisted`](Self::deny_unlisted)
/// says otherwise.
///
/// ```
/// use graphwright_server::authz::{Access, Action, Filter, Forbidden, Grant, Policy, Resource};
///
/// async fn own_threads(access: Access) -> Result<Grant, Forbidden> {
///     let me = access.user().identity.clone();
///     Ok(Grant::only(Filter::eq("owner", me.clone())).with_metadata("owner", me))
/// }
/// async fn admins_only(access: Access) -> Result<Grant, Forbidden> {
///     if access.user().has_permission("admin") {
///         Ok(Grant::allow())
///     } else {
///         Err(Forbidden::new("only administrators change assistants"))
///     }
/// }
///
/// let policy = Policy::new()
///     .on_resource(Resource::Threads, own_threads)
///     .on(Resource::Assistants, Action::Create, admins_only)
///     .on(Resource::Assistants, Action::Update, admins_only)
///     .on(Resource::Assistants, Action::Delete, admins_only);
/// ```
#[derive(Clone, Default)]
pub struct Policy {
    specific: HashMap<(Resource, Action), Arc<dyn Handler>>,
    per_resource: HashMap<Resource, Arc<dyn Handler>>,
    every: Option<Arc<dyn Handler>>,
    deny_unlisted: bool,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy")
            .field("specific", &self.specific.keys().collect::<Vec<_>>())
            .field("per_resource", &self.per_resource.keys().collect::<Vec<_>>())
            .field("every", &self.every.is_some())
            .field("deny_unlisted", &self.deny_unlisted)
            .finish()
    }
}

impl Policy {
    /// A policy with no handlers: everything is allowed until handlers are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// `handler` decides `action` on `resource` (replacing an earlier one for the same pair).
    #[must_use]
    pub fn on(mut self, resource: Resource, action: Action, handler: impl Handler) -> Self {
        self.specific.insert((resource, action), Arc::new(handler));
        self
    }

    /// `handler` decides every action on `resource` that has no handler of its own.
    #[must_use]
    pub fn on_resource(mut self, resource: Resource, handler: impl Handler) -> Self {
        self.per_resource.insert(resource, Arc::new(handler));
        self
    }

    /// `handler` decides every request no more specific handler covers.
    #[must_use]
    pub fn on_every(mut self, handler: impl Handler) -> Self {
        self.every = Some(Arc::new(handler));
        self
    }

    /// Refuses (403) every request no handler covers, instead of allowing it.
    #[must_use]
    pub fn deny_unlisted(mut self) -> Self {
        self.deny_unlisted = true;
        self
    }

    /// What `access` may do: the most specific handler's decision.
    pub async fn decide(&self, access: Access) -> Result<Grant, Forbidden> {
        let (resource, action) = (access.resource, access.action);
        let handler =
            self.specific.get(&(resource, action)).or_else(|| self.per_resource.get(&resource)).or(self.every.as_ref());
        match handler {
            Some(handler) => handler.decide(access).await,
            None if self.deny_unlisted => Err(Forbidden(format!(
                "{} on {} is not allowed: the server's policy has no handler for it",
                action.name(),
                resource.name()
            ))),
            None => Ok(Grant::allow()),
        }
    }
}
