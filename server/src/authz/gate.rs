//! Where the policy meets requests: the caller's [`Gate`], and the middleware that checks the
//! record a route's path names before its handler runs.

use super::routes::{Rule, rule};
use super::{Access, Action, Grant, Policy, Resource};
use crate::app::App;
use crate::auth::Caller;
use crate::error::ApiError;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::HeaderValue;
use axum::http::header::CONNECTION;
use axum::http::request::Parts;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use graphwright::AuthUser;
use serde_json::{Value, json};
use std::sync::Arc;

/// The policy as it applies to one caller; open (everything allowed) when the server has no
/// policy, or for work no caller asked for (a cron made before authentication was on).
#[derive(Clone, Default)]
pub(crate) struct Gate(Option<(Arc<Policy>, Arc<AuthUser>)>);

impl Gate {
    /// `user`'s gate on `app`.
    pub(crate) fn of(app: &App, user: Option<&Arc<AuthUser>>) -> Self {
        Self(app.policy.clone().zip(user.cloned()))
    }

    /// Whether everything is allowed (no policy, or no caller).
    pub(crate) fn is_open(&self) -> bool {
        self.0.is_none()
    }

    /// What `resource`/`action` with `value` may do; 403 if the policy refuses.
    pub(crate) async fn grant(&self, resource: Resource, action: Action, value: Value) -> Result<Grant, ApiError> {
        let Some((policy, user)) = &self.0 else { return Ok(Grant::allow()) };
        let access = Access::new(Arc::clone(user), resource, action, value);
        policy.decide(access).await.map_err(|refused| {
            tracing::info!(user = %user.identity, resource = resource.name(), action = action.name(), reason = %refused, "request forbidden");
            ApiError::Forbidden(refused.0)
        })
    }

    /// Lets `action` on the record `id` of `resource`, whose metadata is `metadata`, through
    /// `grant`; a record the grant's filter does not admit is answered as missing (404), or,
    /// when the caller may read it but not do this, 403.
    pub(crate) async fn admit(
        &self,
        resource: Resource,
        action: Action,
        id: &str,
        metadata: &Value,
        grant: &Grant,
    ) -> Result<(), ApiError> {
        if grant.filter().admits(metadata) {
            return Ok(());
        }
        if action != Action::Read {
            let read = self.grant(resource, Action::Read, json!({ key_of(resource): id })).await;
            if read.is_ok_and(|read| read.filter().admits(metadata)) {
                return Err(ApiError::Forbidden(format!(
                    "you may not {} {} {id}: the server's policy keeps it to others",
                    action.name(),
                    singular(resource)
                )));
            }
        }
        Err(missing(resource, id))
    }

    /// The record `id` of `resource` checked for `action`: the grant, once the record (if it
    /// exists) passes it.
    pub(crate) async fn record(
        &self,
        app: &App,
        resource: Resource,
        action: Action,
        id: &str,
    ) -> Result<Grant, ApiError> {
        let grant = self.grant(resource, action, json!({ key_of(resource): id })).await?;
        if grant.filter().is_all() {
            return Ok(grant);
        }
        let metadata = match resource {
            Resource::Threads => app.meta.thread_metadata(id).await?,
            Resource::Assistants => match app.assistant(id).await {
                Ok(assistant) => Some(assistant["metadata"].clone()),
                Err(ApiError::NotFound(_)) => None,
                Err(other) => return Err(other),
            },
            Resource::Crons => app.meta.cron(id).await?.map(|cron| cron.metadata),
            Resource::Store => None,
        };
        // A record that does not exist is the handler's to answer (or to create).
        if let Some(metadata) = metadata {
            self.admit(resource, action, id, &metadata, &grant).await?;
        }
        Ok(grant)
    }
}

impl FromRequestParts<Arc<App>> for Gate {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let caller = parts.extensions.get::<Caller>().cloned().unwrap_or_default();
        Ok(Self::of(app, caller.0.as_ref()))
    }
}

/// The grant the middleware got for the record a route's path names; everything when the
/// server has no policy.
#[derive(Clone, Debug, Default)]
pub(crate) struct Granted(pub(crate) Grant);

impl<S: Send + Sync> FromRequestParts<S> for Granted {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned().unwrap_or_default())
    }
}

/// The field a record's id is in.
fn key_of(resource: Resource) -> &'static str {
    match resource {
        Resource::Assistants => "assistant_id",
        Resource::Threads => "thread_id",
        Resource::Crons => "cron_id",
        Resource::Store => "namespace",
    }
}

fn singular(resource: Resource) -> &'static str {
    match resource {
        Resource::Assistants => "assistant",
        Resource::Threads => "thread",
        Resource::Crons => "cron",
        Resource::Store => "store item",
    }
}

/// The answer a record the caller may not see gets: the one a missing record gets.
fn missing(resource: Resource, id: &str) -> ApiError {
    match resource {
        Resource::Threads => ApiError::thread_not_found(id),
        Resource::Assistants => ApiError::NotFound(format!("No assistant found for {id:?}")),
        Resource::Crons => ApiError::NotFound(format!("Cron {id} not found")),
        Resource::Store => ApiError::NotFound("Item not found".into()),
    }
}

/// The middleware, on a server with a policy: checks the record a route's path names against
/// the policy before the handler runs, and refuses a route that has no rule (so a route added
/// without one is closed, not open).
pub(crate) async fn guard(State(app): State<Arc<App>>, gate: Gate, request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let route = parts.extensions.get::<MatchedPath>().map(|p| p.as_str().to_owned()).unwrap_or_default();
    let outcome = match rule(&parts.method, &route) {
        None => Err(ApiError::Forbidden(format!(
            "{} {route} has no authorization rule, so it is refused: report this as a bug of the server",
            parts.method
        ))),
        Some(Rule::Open | Rule::InHandler) => Ok(None),
        Some(Rule::Record { resource, action, param }) => {
            match RawPathParams::from_request_parts(&mut parts, &app).await {
                Ok(params) => match params.iter().find(|(name, _)| *name == param) {
                    Some((_, id)) => gate.record(&app, resource, action, id).await.map(Some),
                    None => Err(ApiError::Forbidden(format!("{route} names no {param}: refused"))),
                },
                Err(rejection) => return rejection.into_response(),
            }
        }
    };
    match outcome {
        Ok(grant) => {
            if let Some(grant) = grant {
                parts.extensions.insert(Granted(grant));
            }
            next.run(Request::from_parts(parts, body)).await
        }
        Err(error) => {
            // Read what the client sent before answering, so that the connection stays usable
            // for its next request; one that sends too much is told the connection closes.
            let drained = axum::body::to_bytes(body, app.body_limit).await.is_ok();
            let mut response = error.into_response();
            if !drained {
                response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}
