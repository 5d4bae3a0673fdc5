//! The key a cache entry is stored under for a run's user: kept apart from the backends, which
//! only ever see the finished key.

/// The key an entry is stored under: `key`, within the entries of `user` when the run has one
/// and the policy keeps users apart. The identity's length comes first, so no identity and key
/// can spell another pair's.
pub(crate) fn scoped_key(policy: &crate::CachePolicy, user: Option<&crate::AuthUser>, key: String) -> String {
    match user {
        Some(user) if !policy.across_users => format!("user:{}:{}:{key}", user.identity.len(), user.identity),
        _ => key,
    }
}
