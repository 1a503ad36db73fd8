//! Access tokens whose signature has already been verified, so that a token presented again
//! (the platform's and integrators' backends call with the same token until it expires)
//! skips the signature check, the costliest step of an access-token check.
//!
//! Entries are keyed by the SHA-256 of the whole token, so only the exact bytes that were
//! verified hit. Each loaded keyring has its own cache: a reload that retires a key starts
//! from an empty one, and tokens of the retired key are refused at once. A hit still goes
//! through every time, issuer and audience check; revocation is the caller's, as on a miss.
//!
//! The cache is sharded ([`crate::store::sharded`]), so concurrent checks rarely wait on one
//! another, and each entry lapses when its token expires (beyond the leeway), so a full cache
//! makes room from expired tokens first and never has to start over.

use std::sync::Arc;

use crate::store::sharded::ShardedCache;

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
#[derive(Debug)]
pub struct VerifiedTokens {
    entries: ShardedCache<TokenDigest, Arc<serde_json::Value>>,
}

impl Default for VerifiedTokens {
    fn default() -> Self {
        Self {
            entries: ShardedCache::new(CAPACITY),
        }
    }
}

/// A Unix time as the cache's clock; times before 1970 are the epoch.
fn cache_time(unix_secs: i64) -> u64 {
    u64::try_from(unix_secs).unwrap_or(0)
}

impl VerifiedTokens {
    /// The claims of a token verified before and not expired by `now` beyond `leeway`.
    pub fn get(&self, digest: &TokenDigest, now: i64) -> Option<Arc<serde_json::Value>> {
        self.entries.get(digest, cache_time(now))
    }

    /// Remembers the claims of a verified token until its `exp` plus `leeway` has passed
    /// (claims without a numeric `exp` are not remembered).
    pub fn insert(&self, digest: TokenDigest, claims: serde_json::Value, now: i64, leeway: i64) {
        let Some(exp) = claims["exp"].as_i64() else {
            return;
        };
        let lapses = cache_time(exp.saturating_add(leeway).saturating_add(1));
        self.entries
            .insert(digest, Arc::new(claims), lapses, cache_time(now));
    }

    /// How many tokens are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no token is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_stays_bounded_and_drops_expired_tokens_first() {
        let cache = VerifiedTokens::default();
        for index in 0..CAPACITY {
            let exp = if index % 2 == 0 { 100 } else { 10_000 };
            cache.insert(
                digest(&index.to_string()),
                serde_json::json!({"exp": exp}),
                0,
                0,
            );
        }
        assert!(cache.len() <= CAPACITY);
        // A token is forgotten once it expired beyond the leeway. Asked of a cache of its
        // own: in the full one, which entries a shard drops depends on the shards' random
        // hashing.
        let alone = VerifiedTokens::default();
        alone.insert(digest("0"), serde_json::json!({"exp": 100}), 0, 0);
        assert!(alone.get(&digest("0"), 100).is_some());
        assert!(alone.get(&digest("0"), 101).is_none());
        // Full: expired tokens make room, live ones stay.
        let live_before: Vec<usize> = (0..CAPACITY)
            .filter(|index| index % 2 == 1)
            .filter(|index| cache.get(&digest(&index.to_string()), 5_000).is_some())
            .collect();
        assert!(live_before.len() > CAPACITY / 2 * 3 / 4);
        for index in 0..CAPACITY / 4 {
            cache.insert(
                digest(&format!("new {index}")),
                serde_json::json!({"exp": 10_000}),
                5_000,
                0,
            );
        }
        assert!(cache.len() <= CAPACITY);
        for index in live_before {
            assert!(cache.get(&digest(&index.to_string()), 5_000).is_some());
        }
    }
}
