//! Access tokens whose signature has already been verified, so that a token presented again
//! (the platform's and integrators' backends call with the same token until it expires)
//! skips the signature check, the costliest step of an access-token check.
//!
//! Entries are keyed by the SHA-256 of the whole token, so only the exact bytes that were
//! verified hit. Each loaded keyring has its own cache: a reload that retires a key starts
//! from an empty one, and tokens of the retired key are refused at once. A hit still goes
//! through every time, issuer and audience check; revocation is the caller's, as on a miss.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most tokens kept: about a kilobyte each, a few megabytes in all.
pub const CAPACITY: usize = 10_000;

/// SHA-256 of a token.
pub type TokenDigest = [u8; 32];

/// The digest a token is cached under.
pub fn digest(token: &str) -> TokenDigest {
    let mut out = [0u8; 32];
    out.copy_from_slice(
        aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, token.as_bytes()).as_ref(),
    );
    out
}

/// Verified claims by token digest, bounded by [`CAPACITY`].
#[derive(Debug, Default)]
pub struct VerifiedTokens {
    entries: Mutex<HashMap<TokenDigest, Arc<serde_json::Value>>>,
}

impl VerifiedTokens {
    /// The claims of a token verified before.
    pub fn get(&self, digest: &TokenDigest) -> Option<Arc<serde_json::Value>> {
        self.lock().get(digest).cloned()
    }

    /// Remembers the claims of a verified token. When full, tokens expired by `oldest_exp`
    /// go first; if that frees nothing, everything does, which costs one signature check per
    /// live token and keeps memory bounded whatever the traffic.
    pub fn insert(&self, digest: TokenDigest, claims: serde_json::Value, oldest_exp: i64) {
        let mut entries = self.lock();
        if entries.len() >= CAPACITY {
            entries.retain(|_, claims| claims["exp"].as_i64().is_some_and(|exp| exp >= oldest_exp));
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(digest, Arc::new(claims));
    }

    /// How many tokens are kept.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no token is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<TokenDigest, Arc<serde_json::Value>>> {
        // The map holds no invariant a panicking holder could break half-way.
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_bounded_and_drops_expired_tokens_first() {
        let cache = VerifiedTokens::default();
        for index in 0..CAPACITY {
            let exp = if index == 0 { 100 } else { 10_000 };
            cache.insert(
                digest(&index.to_string()),
                serde_json::json!({"exp": exp}),
                0,
            );
        }
        assert_eq!(cache.len(), CAPACITY);
        // Full: the one token expired at 100 makes room.
        cache.insert(digest("new"), serde_json::json!({"exp": 10_000}), 5_000);
        assert_eq!(cache.len(), CAPACITY);
        assert!(cache.get(&digest("0")).is_none());
        assert!(cache.get(&digest("new")).is_some());
        // Full of live tokens: it starts over rather than grow.
        cache.insert(digest("newer"), serde_json::json!({"exp": 10_000}), 5_000);
        assert_eq!(cache.len(), 1);
        assert!(cache.get(&digest("newer")).is_some());
    }
}
