//! Verification keys linkd fetches from others — an OpenID provider's JWKS, a hand-off
//! integrator's JWKS — cached per URL, so that a sign-in costs no fetch while the set is fresh.
//!
//! A set is used for [`CACHE_TTL`]. A token signed with a key the cached set lacks makes the
//! caller fetch the set again ([`KeySetCache::refetch`]), since the signer may have rotated its
//! keys, but at most once per refetch interval per URL, so that a stream of tokens naming
//! unknown keys cannot make linkd hammer the signer. Times are monotonic: they decide when to
//! fetch again, never whether a credential is valid.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long a fetched key set (or discovery document) is used before it is fetched again.
pub const CACHE_TTL: Duration = Duration::from_secs(3600);

/// The shortest time between two fetches of one key set.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// Key sets of type `K` cached per URL. Clones share the cache.
pub struct KeySetCache<K> {
    entries: Arc<Mutex<HashMap<String, Entry<K>>>>,
    refetch_interval: Duration,
}

impl<K> Clone for KeySetCache<K> {
    fn clone(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
            refetch_interval: self.refetch_interval,
        }
    }
}

impl<K> std::fmt::Debug for KeySetCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySetCache")
            .field("refetch_interval", &self.refetch_interval)
            .finish_non_exhaustive()
    }
}

impl<K> Default for KeySetCache<K> {
    fn default() -> Self {
        Self::new(JWKS_REFETCH_INTERVAL)
    }
}

struct Entry<K> {
    keys: Option<(Arc<K>, Instant)>,
    /// When the set was last requested, successfully or not.
    last_fetch: Option<Instant>,
}

impl<K> Default for Entry<K> {
    fn default() -> Self {
        Self {
            keys: None,
            last_fetch: None,
        }
    }
}

impl<K> KeySetCache<K> {
    /// An empty cache fetching a set again on an unknown key at most once per
    /// `refetch_interval`.
    pub fn new(refetch_interval: Duration) -> Self {
        Self {
            entries: Arc::new(Mutex::new(HashMap::new())),
            refetch_interval,
        }
    }

    /// The shortest time between two fetches of one set.
    pub fn refetch_interval(&self) -> Duration {
        self.refetch_interval
    }

    /// The set at `url`: from the cache while it is fresh, else from `fetch`.
    pub async fn get<E, Fetched>(
        &self,
        url: &str,
        fetch: impl FnOnce() -> Fetched,
    ) -> Result<Arc<K>, E>
    where
        Fetched: Future<Output = Result<K, E>>,
    {
        let cached = self.entry(url, |entry| {
            entry
                .keys
                .as_ref()
                .filter(|(_, fetched)| fetched.elapsed() < CACHE_TTL)
                .map(|(keys, _)| Arc::clone(keys))
        });
        if let Some(keys) = cached {
            return Ok(keys);
        }
        self.entry(url, |entry| entry.last_fetch = Some(Instant::now()));
        self.store(url, fetch().await?)
    }

    /// The set at `url` fetched again for a token naming a key the cached set lacks; `None`
    /// when the set was fetched less than the refetch interval ago.
    pub async fn refetch<E, Fetched>(
        &self,
        url: &str,
        fetch: impl FnOnce() -> Fetched,
    ) -> Result<Option<Arc<K>>, E>
    where
        Fetched: Future<Output = Result<K, E>>,
    {
        let interval = self.refetch_interval;
        // Claimed before the fetch, so that concurrent sign-ins do not all fetch.
        let allowed = self.entry(url, |entry| {
            let allowed = entry
                .last_fetch
                .is_none_or(|fetched| fetched.elapsed() >= interval);
            if allowed {
                entry.last_fetch = Some(Instant::now());
            }
            allowed
        });
        if !allowed {
            return Ok(None);
        }
        self.store(url, fetch().await?).map(Some)
    }

    fn store<E>(&self, url: &str, keys: K) -> Result<Arc<K>, E> {
        let keys = Arc::new(keys);
        self.entry(url, |entry| {
            entry.keys = Some((Arc::clone(&keys), Instant::now()));
        });
        Ok(keys)
    }

    /// Runs `change` on the entry of `url`, made if absent.
    fn entry<T>(&self, url: &str, change: impl FnOnce(&mut Entry<K>) -> T) -> T {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        change(entries.entry(url.to_owned()).or_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    async fn counted(fetches: &AtomicUsize) -> Result<usize, ()> {
        Ok(fetches.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[tokio::test(start_paused = true)]
    async fn a_fresh_set_is_not_fetched_again() {
        let cache = KeySetCache::<usize>::new(Duration::from_secs(30));
        let fetches = AtomicUsize::new(0);
        for _ in 0..3 {
            let keys = cache.get("https://a/jwks", || counted(&fetches)).await;
            assert_eq!(*keys.unwrap(), 1);
        }
        // Another URL is another set.
        assert_eq!(
            *cache
                .get("https://b/jwks", || counted(&fetches))
                .await
                .unwrap(),
            2
        );
        tokio::time::advance(CACHE_TTL).await;
        assert_eq!(
            *cache
                .get("https://a/jwks", || counted(&fetches))
                .await
                .unwrap(),
            3
        );
    }

    #[tokio::test(start_paused = true)]
    async fn refetches_are_spaced_by_the_interval() {
        let cache = KeySetCache::<usize>::new(Duration::from_secs(30));
        let fetches = AtomicUsize::new(0);
        cache
            .get("https://a/jwks", || counted(&fetches))
            .await
            .unwrap();
        let refetched = cache.refetch("https://a/jwks", || counted(&fetches)).await;
        assert_eq!(refetched, Ok(None));
        tokio::time::advance(Duration::from_secs(30)).await;
        let refetched = cache.refetch("https://a/jwks", || counted(&fetches)).await;
        assert_eq!(refetched.unwrap().as_deref(), Some(&2));
        // The refetched set is the cached one now.
        assert_eq!(
            *cache
                .get("https://a/jwks", || counted(&fetches))
                .await
                .unwrap(),
            2
        );
        assert_eq!(
            cache.refetch("https://a/jwks", || counted(&fetches)).await,
            Ok(None)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_fetch_counts_against_the_interval_and_caches_nothing() {
        let cache = KeySetCache::<usize>::new(Duration::from_secs(30));
        let failed: Result<Arc<usize>, &str> =
            cache.get("https://a/jwks", || async { Err("down") }).await;
        assert_eq!(failed, Err("down"));
        let fetches = AtomicUsize::new(0);
        assert_eq!(
            cache.refetch("https://a/jwks", || counted(&fetches)).await,
            Ok(None)
        );
        assert_eq!(
            *cache
                .get("https://a/jwks", || counted(&fetches))
                .await
                .unwrap(),
            1
        );
    }
}
