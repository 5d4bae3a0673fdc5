//! The caller of a run: who started it, as an authenticating server established it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who started a run, as the server's authentication established it: reachable from nodes
/// through [`Runtime::user`](crate::Runtime::user), and `None` for runs started outside a
/// server (or by a server without authentication).
///
/// ```
/// use graphwright::AuthUser;
///
/// let user = AuthUser::new("user-42").with_display_name("Ada").with_permissions(["threads:write"]);
/// assert_eq!(user.identity, "user-42");
/// assert!(user.has_permission("threads:write"));
/// assert!(!user.has_permission("admin"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AuthUser {
    /// A stable id of the user (a JWT's `sub`, the owner of an API key).
    pub identity: String,
    /// A name to show; the identity unless given.
    pub display_name: String,
    /// What the user may do, as the authenticator read it (a token's `permissions` or `scope`).
    pub permissions: Vec<String>,
    /// Anything else the authenticator knows of the user (a JWT's whole claims object).
    pub extra: Map<String, Value>,
}

impl AuthUser {
    /// A user known by `identity`, shown under the same name, with no permissions.
    pub fn new(identity: impl Into<String>) -> Self {
        let identity = identity.into();
        Self { display_name: identity.clone(), identity, permissions: Vec::new(), extra: Map::new() }
    }

    /// The name to show for the user.
    #[must_use]
    pub fn with_display_name(mut self, name: impl Into<String>) -> Self {
        self.display_name = name.into();
        self
    }

    /// What the user may do.
    #[must_use]
    pub fn with_permissions<I: IntoIterator<Item = S>, S: Into<String>>(mut self, permissions: I) -> Self {
        self.permissions = permissions.into_iter().map(Into::into).collect();
        self
    }

    /// More about the user, for nodes to read.
    #[must_use]
    pub fn with_extra(mut self, extra: Map<String, Value>) -> Self {
        self.extra = extra;
        self
    }

    /// Whether `permission` is among the user's permissions.
    pub fn has_permission(&self, permission: &str) -> bool {
        self.permissions.iter().any(|p| p == permission)
    }
}
