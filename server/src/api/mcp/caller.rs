//! Who is calling an MCP tool: both listing and calling tools act for the authenticated caller.

use rmcp::service::{RequestContext, RoleServer};
use std::sync::Arc;

/// The caller the server authenticated, kept with the HTTP request rmcp hands over.
pub(super) fn caller(context: &RequestContext<RoleServer>) -> Option<Arc<graphwright::AuthUser>> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<crate::auth::Caller>().and_then(|caller| caller.0.clone())
}
