//! Verification keys linkd fetches from others — an OpenID provider's JWKS, a hand-off
//! integrator's JWKS — cached per URL, so that a sign-in costs no fetch while the set is fresh.
//!
//! - A set is used for the cache's time to live. After that it is fetched again; while that
//!   fails (the signer is down, or serves something unusable) the last good set goes on being
//!   used for up to [`STALE_GRACE`], and only one fetch is tried per refetch interval, so an
//!   outage costs neither sign-ins nor a fetch per sign-in.
//! - A token signed with a key the cached set lacks makes the caller fetch the set again
//!   ([`KeySetCache::refetch`]), since the signer may have rotated its keys, but at most once
//!   per refetch interval per URL, so that a stream of tokens naming unknown keys cannot make
//!   linkd hammer the signer.
//!
//! Times are monotonic: they decide when to fetch again, never whether a credential is valid.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

/// How long an OpenID provider's key set (or discovery document) is used before it is
/// fetched again.
pub const CACHE_TTL: Duration = Duration::from_secs(3600);

/// The shortest time between two fetches of one key set.
pub const JWKS_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// How long past its time to live a set is still used while fetching it again fails.
pub const STALE_GRACE: Duration = Duration::from_secs(24 * 3600);

/// Key sets of type `K` cached per URL. Clones share the cache.
pub struct KeySetCache<K> {
    entries: Arc<Mutex<HashMap<String, Entry<K>>>>,
    time_to_live: Duration,
    refetch_interval: Duration,
}

impl<K> Clone for KeySetCache<K> {
    fn clone(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
            time_to_live: self.time_to_live,
            refetch_interval: self.refetch_interval,
        }
    }
}

impl<K> std::fmt::Debug for KeySetCache<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySetCache")
            .field("time_to_live", &self.time_to_live)
            .field("refetch_interval", &self.refetch_interval)
            .finish_non_exhaustive()
    }
}

struct Entry<K> {
    /// The last set fetched, and when its fetch began.
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

/// What a [`KeySetCache::get`] does, decided under the lock.
enum Plan<K> {
    Use(Arc<K>),
    Fetch { fallback: Option<Arc<K>> },
}

impl<K> KeySetCache<K> {
    /// An empty cache using a set for `time_to_live` and fetching a set again on an unknown key
    /// at most once per `refetch_interval`.
    pub fn new(time_to_live: Duration, refetch_interval: Duration) -> Self {
        Self {
            entries: Arc::new(Mutex::new(HashMap::new())),
            time_to_live,
            refetch_interval,
        }
    }

    /// The shortest time between two fetches of one set.
    pub fn refetch_interval(&self) -> Duration {
        self.refetch_interval
    }

    /// The set at `url`: from the cache while it is fresh, else from `fetch` — or, while
    /// `fetch` fails, the last good set within [`STALE_GRACE`].
    pub async fn get<E, Fetched>(
        &self,
        url: &str,
        fetch: impl FnOnce() -> Fetched,
    ) -> Result<Arc<K>, E>
    where
        Fetched: Future<Output = Result<K, E>>,
    {
        let began = Instant::now();
        let (time_to_live, interval) = (self.time_to_live, self.refetch_interval);
        let plan = self.entry(url, |entry| {
            let usable = entry
                .keys
                .as_ref()
                .filter(|(_, fetched)| fetched.elapsed() < time_to_live + STALE_GRACE)
                .map(|(keys, fetched)| (Arc::clone(keys), fetched.elapsed() < time_to_live));
            let tried_lately = entry
                .last_fetch
                .is_some_and(|tried| tried.elapsed() < interval);
            match usable {
                Some((keys, true)) => Plan::Use(keys),
                // Stale, and a fetch failed (or is under way) moments ago: no fetch per sign-in.
                Some((keys, false)) if tried_lately => Plan::Use(keys),
                fallback => {
                    entry.last_fetch = Some(began);
                    Plan::Fetch {
                        fallback: fallback.map(|(keys, _)| keys),
                    }
                }
            }
        });
        let fallback = match plan {
            Plan::Use(keys) => return Ok(keys),
            Plan::Fetch { fallback } => fallback,
        };
        match fetch().await {
            Ok(keys) => Ok(self.store(url, keys, began)),
            Err(error) => match fallback {
                Some(keys) => {
                    tracing::warn!(
                        url,
                        "could not fetch a key set again; using the one fetched before"
                    );
                    Ok(keys)
                }
                None => Err(error),
            },
        }
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
        let began = Instant::now();
        let interval = self.refetch_interval;
        // Claimed before the fetch, so that concurrent sign-ins do not all fetch.
        let allowed = self.entry(url, |entry| {
            let allowed = entry
                .last_fetch
                .is_none_or(|fetched| fetched.elapsed() >= interval);
            if allowed {
                entry.last_fetch = Some(began);
            }
            allowed
        });
        if !allowed {
            return Ok(None);
        }
        tracing::info!(
            url,
            "fetching a key set again for a token signed with a key not in it"
        );
        Ok(Some(self.store(url, fetch().await?, began)))
    }

    /// Keeps `keys`, whose fetch began at `began`, unless a fetch that began later has already
    /// stored its set; the set kept. Sets past any use are dropped on the way.
    fn store(&self, url: &str, keys: K, began: Instant) -> Arc<K> {
        let keys = Arc::new(keys);
        let horizon = self.time_to_live + STALE_GRACE;
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.retain(|_, entry| {
            let latest = entry
                .last_fetch
                .max(entry.keys.as_ref().map(|(_, began)| *began));
            latest.is_some_and(|at| at.elapsed() < horizon)
        });
        let entry = entries.entry(url.to_owned()).or_default();
        match &entry.keys {
            Some((newer, stored)) if *stored > began => Arc::clone(newer),
            _ => {
                entry.keys = Some((Arc::clone(&keys), began));
                keys
            }
        }
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
        let cache = KeySetCache::<usize>::new(CACHE_TTL, Duration::from_secs(30));
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
        let cache = KeySetCache::<usize>::new(CACHE_TTL, Duration::from_secs(30));
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
    async fn while_the_signer_is_down_the_last_set_serves_and_one_fetch_is_tried_per_interval() {
        const URL: &str = "https://a/jwks";
        let cache = KeySetCache::<usize>::new(Duration::from_secs(300), Duration::from_secs(30));
        let fetches = AtomicUsize::new(0);
        cache.get(URL, || counted(&fetches)).await.unwrap();
        tokio::time::advance(Duration::from_secs(300)).await;
        let failures = AtomicUsize::new(0);
        let down = || async {
            failures.fetch_add(1, Ordering::SeqCst);
            Err::<usize, &str>("down")
        };
        for _ in 0..3 {
            assert_eq!(cache.get(URL, down).await.as_deref(), Ok(&1));
        }
        assert_eq!(failures.load(Ordering::SeqCst), 1);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(cache.get(URL, down).await.as_deref(), Ok(&1));
        assert_eq!(failures.load(Ordering::SeqCst), 2);
        // Past the grace the failure shows; once the signer is back, its set is used.
        tokio::time::advance(STALE_GRACE).await;
        assert_eq!(cache.get(URL, down).await, Err("down"));
        assert_eq!(
            cache.get(URL, || counted(&fetches)).await.as_deref(),
            Ok(&2)
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_fetch_does_not_put_back_an_older_set() {
        let cache = KeySetCache::<usize>::new(CACHE_TTL, Duration::from_secs(30));
        let earlier = Instant::now();
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(*cache.store("https://a/jwks", 2, Instant::now()), 2);
        assert_eq!(*cache.store("https://a/jwks", 1, earlier), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_fetch_counts_against_the_interval_and_caches_nothing() {
        let cache = KeySetCache::<usize>::new(CACHE_TTL, Duration::from_secs(30));
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
