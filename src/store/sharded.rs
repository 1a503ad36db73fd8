//! A bounded map split into shards, each behind its own lock, whose entries carry their own
//! expiry: what the in-memory caches of the hot paths (verified access tokens, clients,
//! users, revocation answers) are built on.
//!
//! One lock for a whole cache makes every request of every core queue on it; shards keyed by
//! the key's hash spread that contention. Times are plain numbers in a unit the owner chooses
//! (Unix seconds for tokens, milliseconds of a monotonic clock for store answers), passed in
//! by the caller, so that expiry is tested without sleeping.
//!
//! A full shard first forgets its expired entries, then, if that freed nothing, an eighth of
//! its entries chosen by the hash map's own order: losing an entry only costs the next caller
//! the slow path, and memory stays bounded whatever the traffic.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, RandomState};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// How many shards a cache has; a power of two. Enough that the cores of one instance rarely
/// meet on one lock.
const SHARDS: usize = 16;

struct Entry<V> {
    value: V,
    expires_at: u64,
}

/// One shard: a plain map behind its own lock.
type Shard<K, V> = Mutex<HashMap<K, Entry<V>>>;

/// A bounded map from `K` to `V` whose entries lapse at their own time.
pub struct ShardedCache<K, V> {
    shards: Box<[Shard<K, V>]>,
    hasher: RandomState,
    capacity_per_shard: usize,
}

impl<K, V> std::fmt::Debug for ShardedCache<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedCache")
            .field("capacity", &(self.capacity_per_shard * SHARDS))
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V: Clone> ShardedCache<K, V> {
    /// A cache holding at most about `capacity` entries (rounded up to a multiple of the
    /// number of shards).
    pub fn new(capacity: usize) -> Self {
        Self {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            hasher: RandomState::new(),
            capacity_per_shard: capacity.div_ceil(SHARDS).max(1),
        }
    }

    fn shard<Q: Hash + ?Sized>(&self, key: &Q) -> MutexGuard<'_, HashMap<K, Entry<V>>> {
        // The low bits of the hash pick the shard; truncation is the point.
        #[allow(clippy::cast_possible_truncation)]
        let index = (self.hasher.hash_one(key) as usize) & (SHARDS - 1);
        // A shard holds no invariant that a panicking holder could break half-way.
        self.shards[index]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`, unless it lapsed by `now`.
    pub fn get<Q>(&self, key: &Q, now: u64) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let mut shard = self.shard(key);
        match shard.get(key) {
            Some(entry) if entry.expires_at > now => Some(entry.value.clone()),
            Some(_) => {
                shard.remove(key);
                None
            }
            None => None,
        }
    }

    /// Keeps `value` under `key` until `expires_at`, replacing what was there.
    pub fn insert(&self, key: K, value: V, expires_at: u64, now: u64) {
        let mut shard = self.shard(&key);
        self.make_room(&mut shard, &key, now);
        shard.insert(key, Entry { value, expires_at });
    }

    /// Keeps `value` under `key` until `expires_at` only if `allowed(current value)` says so,
    /// decided under the shard's lock, so that no other writer of that key comes between the
    /// decision and the write.
    pub fn insert_if(
        &self,
        key: K,
        value: V,
        expires_at: u64,
        now: u64,
        allowed: impl FnOnce(Option<&V>) -> bool,
    ) -> bool {
        let mut shard = self.shard(&key);
        let current = shard
            .get(&key)
            .filter(|entry| entry.expires_at > now)
            .map(|entry| &entry.value);
        if !allowed(current) {
            return false;
        }
        self.make_room(&mut shard, &key, now);
        shard.insert(key, Entry { value, expires_at });
        true
    }

    /// Forgets `key`.
    pub fn remove<Q>(&self, key: &Q)
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.shard(key).remove(key);
    }

    /// Forgets everything.
    pub fn clear(&self) {
        for shard in &*self.shards {
            shard.lock().unwrap_or_else(PoisonError::into_inner).clear();
        }
    }

    /// How many entries are kept, lapsed ones included until they are dropped.
    pub fn len(&self) -> usize {
        self.shards
            .iter()
            .map(|shard| shard.lock().unwrap_or_else(PoisonError::into_inner).len())
            .sum()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn make_room(&self, shard: &mut HashMap<K, Entry<V>>, key: &K, now: u64) {
        if shard.len() < self.capacity_per_shard || shard.contains_key(key) {
            return;
        }
        shard.retain(|_, entry| entry.expires_at > now);
        if shard.len() < self.capacity_per_shard {
            return;
        }
        let mut excess = (self.capacity_per_shard / 8).max(1);
        shard.retain(|_, _| {
            if excess == 0 {
                return true;
            }
            excess -= 1;
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_lapse_at_their_own_time() {
        let cache = ShardedCache::new(100);
        cache.insert("short", 1, 10, 0);
        cache.insert("long", 2, 100, 0);
        assert_eq!(cache.get("short", 9), Some(1));
        assert_eq!(cache.get("short", 10), None);
        assert_eq!(cache.get("long", 10), Some(2));
        cache.remove("long");
        assert_eq!(cache.get("long", 10), None);
    }

    #[test]
    fn a_full_cache_stays_bounded_and_drops_lapsed_entries_first() {
        let capacity = 64 * SHARDS;
        let cache = ShardedCache::new(capacity);
        for index in 0..capacity {
            cache.insert(index, index, if index % 2 == 0 { 5 } else { 1000 }, 0);
        }
        assert!(cache.len() <= capacity);
        // Past time 5 the even entries have lapsed: new ones take their place, and every odd
        // one still there stays.
        let odd_before: Vec<usize> = (0..capacity)
            .filter(|index| index % 2 == 1 && cache.get(index, 6).is_some())
            .collect();
        assert!(odd_before.len() > capacity / 2 * 3 / 4);
        // Keys land in shards by a random hash: each shard is given only as many new keys as
        // it has free slots and lapsed entries, the room it can make without losing a live one.
        #[allow(clippy::cast_possible_truncation)]
        let shard_of = |key: &usize| (cache.hasher.hash_one(key) as usize) & (SHARDS - 1);
        let mut room: Vec<usize> = cache
            .shards
            .iter()
            .map(|shard| {
                let shard = shard.lock().unwrap();
                let lapsed = shard.values().filter(|entry| entry.expires_at <= 6).count();
                cache.capacity_per_shard - shard.len() + lapsed
            })
            .collect();
        let newcomers: Vec<usize> = (capacity..capacity * 2)
            .filter(|index| {
                let room = &mut room[shard_of(index)];
                if *room == 0 {
                    return false;
                }
                *room -= 1;
                true
            })
            .take(capacity / 4)
            .collect();
        assert_eq!(newcomers.len(), capacity / 4);
        for index in newcomers {
            cache.insert(index, index, 1000, 6);
        }
        assert!(cache.len() <= capacity);
        for index in &odd_before {
            assert!(cache.get(index, 6).is_some(), "{index}");
        }
        // Full of live entries: it still accepts new ones, within its bound.
        for index in capacity * 2..capacity * 4 {
            cache.insert(index, index, 1000, 6);
            assert!(cache.get(&index, 6).is_some());
        }
        assert!(cache.len() <= capacity);
    }

    #[test]
    fn a_conditional_insert_decides_under_the_lock() {
        let cache = ShardedCache::new(10);
        assert!(cache.insert_if("k", 1, 10, 0, |current| current.is_none()));
        assert!(!cache.insert_if("k", 2, 10, 0, |current| current.is_none()));
        assert_eq!(cache.get("k", 0), Some(1));
        // A lapsed entry counts as absent.
        assert!(cache.insert_if("k", 3, 20, 10, |current| current.is_none()));
        assert_eq!(cache.get("k", 10), Some(3));
    }
}
