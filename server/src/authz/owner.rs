//! The built-in policy: each user sees only what they made.

use super::{Access, Action, Filter, Forbidden, Grant, Policy, Resource};
use serde_json::Value;

/// The built-in policy, one line to turn on: `Server::new().auth(..).authorize(OwnerIsolation)`.
///
/// - **Threads** and their runs belong to the user who created them (the thread's metadata
///   key [`OwnerIsolation::KEY`] holds their identity, set by the server on create and kept on
///   every update, so a client cannot give a thread away). Another user's thread is answered
///   404, as if it did not exist, on every route; searches and counts leave it out. A stateless
///   run's thread belongs to its caller, and so does a cron's: its firings run as its creator.
/// - **Assistants** a user creates are theirs alone; the graphs' default assistants (no owner)
///   are seen by everyone and changed by nobody.
/// - **Crons** belong to their creator.
/// - **The store**: a user's namespaces start with their identity (`["ada", "memories"]`);
///   any other namespace is refused (403), and a search or namespace listing with no prefix
///   looks under the user's own. An identity that cannot be a namespace label (empty, or
///   holding a `.`) has no store.
///
/// Nodes that keep memories per user build the namespace the same way, from
/// [`Runtime::user`](graphwright::Runtime::user).
///
/// Extend it like any [`Policy`]: `Policy::from(OwnerIsolation).on(Resource::Assistants,
/// Action::Create, admins_only)`.
#[derive(Clone, Copy, Debug, Default)]
pub struct OwnerIsolation;

impl OwnerIsolation {
    /// The metadata key that names a record's owner.
    pub const KEY: &'static str = "owner";
}

impl From<OwnerIsolation> for Policy {
    fn from(_: OwnerIsolation) -> Self {
        Policy::new()
            .on_resource(Resource::Threads, owned)
            .on_resource(Resource::Crons, owned)
            .on_resource(Resource::Assistants, assistants)
            .on_resource(Resource::Store, store)
    }
}

/// The caller's records only; what they create or update stays theirs.
async fn owned(access: Access) -> Result<Grant, Forbidden> {
    let me = access.user().identity.clone();
    Ok(Grant::only(Filter::eq(OwnerIsolation::KEY, me.clone())).with_metadata(OwnerIsolation::KEY, me))
}

/// The caller's assistants and the server's own: seen by all, changed only by their owner.
async fn assistants(access: Access) -> Result<Grant, Forbidden> {
    let me = access.user().identity.clone();
    match access.action() {
        Action::Read | Action::Search | Action::CreateRun => {
            Ok(Grant::only(Filter::any_of(OwnerIsolation::KEY, [Value::from(me), Value::Null])))
        }
        Action::Create => Ok(Grant::allow().with_metadata(OwnerIsolation::KEY, me)),
        Action::Update | Action::Delete => owned(access).await,
    }
}

/// Namespaces under the caller's identity.
async fn store(access: Access) -> Result<Grant, Forbidden> {
    let me = access.user().identity.as_str();
    if me.is_empty() || me.contains('.') {
        return Err(Forbidden::new(format!(
            "user {me:?} has no store: under owner isolation a user's namespaces start with their identity, \
             which must be a namespace label (not empty, no '.')"
        )));
    }
    let namespace = access.namespace().unwrap_or_default();
    match namespace.first() {
        Some(first) if *first == me => Ok(Grant::allow()),
        None if access.action() == Action::Search => Ok(Grant::allow().with_namespace([me])),
        _ => Err(Forbidden::new(format!(
            "namespace {namespace:?} is not user {me:?}'s: their namespaces start with {me:?} (e.g. [{me:?}, \"memories\"])"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphwright::AuthUser;
    use serde_json::json;
    use std::sync::Arc;

    async fn decide(who: &str, resource: Resource, action: Action, value: Value) -> Result<Grant, Forbidden> {
        let access = Access::new(Arc::new(AuthUser::new(who)), resource, action, value);
        Policy::from(OwnerIsolation).decide(access).await
    }

    #[tokio::test]
    async fn threads_are_their_creators_and_stay_theirs() {
        let grant = decide("ada", Resource::Threads, Action::Create, json!({})).await.unwrap();
        assert_eq!(grant.metadata().get("owner"), Some(&json!("ada")));
        let read = decide("bob", Resource::Threads, Action::Read, json!({"thread_id": "t"})).await.unwrap();
        assert!(!read.filter().admits(&json!({"owner": "ada"})));
        assert!(read.filter().admits(&json!({"owner": "bob"})));
        let mut patched = serde_json::Map::new();
        patched.insert("owner".into(), json!("bob"));
        decide("ada", Resource::Threads, Action::Update, json!({})).await.unwrap().stamp(&mut patched);
        assert_eq!(patched["owner"], "ada");
    }

    #[tokio::test]
    async fn default_assistants_are_seen_by_all_and_changed_by_none() {
        let read = decide("bob", Resource::Assistants, Action::Read, json!({})).await.unwrap();
        assert!(read.filter().admits(&json!({"created_by": "system"})));
        assert!(!read.filter().admits(&json!({"owner": "ada"})));
        let update = decide("bob", Resource::Assistants, Action::Update, json!({})).await.unwrap();
        assert!(!update.filter().admits(&json!({})));
    }

    #[tokio::test]
    async fn store_namespaces_start_with_the_identity() {
        let put = |ns: Value| decide("ada", Resource::Store, Action::Update, json!({"namespace": ns}));
        assert!(put(json!(["ada", "notes"])).await.is_ok());
        let refused = put(json!(["bob", "notes"])).await.unwrap_err();
        assert!(refused.0.contains("start with \"ada\""), "{refused}");
        let search = decide("ada", Resource::Store, Action::Search, json!({"namespace": []})).await.unwrap();
        assert_eq!(search.namespace(), Some(&["ada".to_owned()][..]));
        let dotted = decide("a.b", Resource::Store, Action::Search, json!({"namespace": []})).await.unwrap_err();
        assert!(dotted.0.contains("has no store"), "{dotted}");
    }
}
