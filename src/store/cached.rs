//! The caching decorator of the hot paths: a [`Store`] that answers the questions asked on
//! every refresh and every Bearer request — the client record, the user record, whether a
//! grant or an access token was revoked — from memory, kept coherent with every other writer
//! of the same store (other instances, the CLI) by the backend's change feed.
//!
//! | cached | invalidated by | trusted while |
//! |---|---|---|
//! | client records by id | `c:` changes (insert, update, remove, secret rotation) | the feed is current; at most [`RECORD_TTL`] |
//! | user records by id | `u:` changes (insert, update, password, remove) | the feed is current; at most [`RECORD_TTL`] |
//! | "grant not revoked", "access token not revoked" | `g:` and `t:` changes | the feed is current; at most [`REVOCATION_TTL`] |
//! | "revoked" | never: a revocation is permanent (a token's lasts past its expiry) | always |
//! | refresh-token records by digest | never changed; deleted only after their grant is revoked | answered only with a trusted "grant not revoked"; at most [`RECORD_TTL`] |
//!
//! The change feed is the backend's ([`Store::change_feed`]):
//! - Redis: every write of a client, a user or a revocation publishes its change on a
//!   channel (revocations in the same script as the write, so a revocation acknowledged to
//!   its revoker has been published). Each instance subscribes, and publishes a heartbeat
//!   every [`HEARTBEAT_INTERVAL`] that it must see come back: the feed is current as of the
//!   sending of the last heartbeat received, because Redis delivers messages in the order it
//!   executed them. When no heartbeat came back for [`STALENESS_BOUND`], or the subscription
//!   dropped, every question goes to the store as without this cache, until the feed is
//!   current again; answers cached before the loss are not trusted again (a new epoch).
//!   Redis Cluster has no feed: its questions go to the store.
//! - SQLite: writes record their change in a `changes` table in the same transaction, and
//!   before answering from memory the decorator reads `PRAGMA data_version` (a look at the
//!   WAL index in shared memory, microseconds, no blocking-pool hop), at most every
//!   [`super::sqlite::CHANGES_CHECK_INTERVAL`]: only when another connection committed since
//!   does it read the new changes. So a commit of the CLI is seen within that interval.
//!
//! Coherence, then: a change acknowledged to its writer at time T is honoured by every
//! instance from T + [`STALENESS_BOUND`] on Redis (in practice within a millisecond), from
//! T + 10 ms on SQLite, and at once for writes made through this instance. A revoked token is never
//! accepted after that, whatever fails: an answer cached as "not revoked" is only used while
//! the feed is known to be current, and a store read that raced a revocation is not cached.
//! The TTLs bound what a lost Redis message (a writer that died between its write and its
//! publish: clients and users are published after their write) can cost.

use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::sharded::ShardedCache;
use super::{
    ClientRecord, ClientStore, CodeLedger, CodeRedemption, DeviceStore, IdentityProviderRecord,
    IdentityProviderStore, LinkRecord, LinkStore, LoginStateRecord, RedemptionFinish,
    RedemptionStart, RefreshTokenLookup, RefreshTokenRecord, RefreshTokenStore, RevocationStore,
    ServiceAccountRecord, ServiceAccountStore, SessionRecord, SessionStore, SharedStore, Store,
    StoreResult, ThrottleStore, UnlinkEvent, UserRecord, UserStore,
};

/// How long a cached client or user record is used before the store is asked again, even
/// while the feed is current: the bound on a change whose announcement was lost.
pub const RECORD_TTL: Duration = Duration::from_secs(30);
/// How long a cached "not revoked" answer is used before the store is asked again.
pub const REVOCATION_TTL: Duration = Duration::from_secs(60);
/// How often an instance on Redis sends itself a heartbeat through the feed.
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(250);
/// How old the last heartbeat seen may be for the feed to count as current: the longest a
/// change acknowledged to its writer can go unnoticed by an instance on Redis.
pub const STALENESS_BOUND: Duration = Duration::from_secs(1);
/// How long a failed feed waits before it subscribes again.
const RETRY_INTERVAL: Duration = Duration::from_secs(1);

const CLIENT_CAPACITY: usize = 10_000;
const USER_CAPACITY: usize = 20_000;
const GRANT_CAPACITY: usize = 50_000;
const TOKEN_CAPACITY: usize = 50_000;
const REFRESH_TOKEN_CAPACITY: usize = 20_000;

/// One change that other holders of a cache must learn of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A client was added, updated (secret rotated) or removed.
    Client(String),
    /// A user was added, updated (password set) or removed.
    User(String),
    /// A grant was revoked.
    GrantRevoked(String),
    /// An access token was revoked.
    TokenRevoked(String),
}

impl Change {
    /// The kind letter and the key, as the feeds carry them.
    pub fn parts(&self) -> (&'static str, &str) {
        match self {
            Self::Client(id) => ("c", id),
            Self::User(id) => ("u", id),
            Self::GrantRevoked(id) => ("g", id),
            Self::TokenRevoked(jti) => ("t", jti),
        }
    }

    /// From its kind letter and key; `None` for a kind this version does not know.
    pub fn from_parts(kind: &str, key: &str) -> Option<Self> {
        let key = key.to_owned();
        match kind {
            "c" => Some(Self::Client(key)),
            "u" => Some(Self::User(key)),
            "g" => Some(Self::GrantRevoked(key)),
            "t" => Some(Self::TokenRevoked(key)),
            _ => None,
        }
    }

    /// `kind:key`, one message of a feed.
    pub fn encode(&self) -> String {
        let (kind, key) = self.parts();
        format!("{kind}:{key}")
    }

    /// The change of a message written by [`Change::encode`].
    pub fn decode(message: &str) -> Option<Self> {
        let (kind, key) = message.split_once(':')?;
        Self::from_parts(kind, key)
    }
}

/// What the cache knows of a grant or an access token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Revocation {
    /// Revoked: true for good.
    Revoked,
    /// The store said "not revoked" while the feed was current in `epoch`.
    Live { epoch: u64 },
}

/// A cached record and the feed epoch it was read in.
#[derive(Debug)]
struct Cached<T> {
    record: T,
    epoch: u64,
}

/// The caches and the feed's state, shared by the decorator and the task following the
/// feed.
#[derive(Debug)]
pub struct Caches {
    origin: Instant,
    /// Milliseconds since `origin` (plus one) as of which every change has been applied;
    /// 0 when the feed is not current.
    current_as_of: AtomicU64,
    /// Bumped whenever the feed may have missed changes: answers cached in an earlier epoch
    /// are not trusted again.
    epoch: AtomicU64,
    client_changes: AtomicU64,
    user_changes: AtomicU64,
    revocations: AtomicU64,
    clients: ShardedCache<String, Arc<Cached<ClientRecord>>>,
    users: ShardedCache<String, Arc<Cached<UserRecord>>>,
    grants: ShardedCache<String, Revocation>,
    tokens: ShardedCache<String, Revocation>,
    /// Refresh-token records by digest. A record never changes, and is deleted only after
    /// its grant is revoked, so a cached one is answered with the grant's revocation state
    /// as the revocation cache knows it: a refresh then costs no store round trip.
    refresh_tokens: ShardedCache<String, Arc<RefreshTokenRecord>>,
}

impl Default for Caches {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            current_as_of: AtomicU64::new(0),
            epoch: AtomicU64::new(1),
            client_changes: AtomicU64::new(0),
            user_changes: AtomicU64::new(0),
            revocations: AtomicU64::new(0),
            clients: ShardedCache::new(CLIENT_CAPACITY),
            users: ShardedCache::new(USER_CAPACITY),
            grants: ShardedCache::new(GRANT_CAPACITY),
            tokens: ShardedCache::new(TOKEN_CAPACITY),
            refresh_tokens: ShardedCache::new(REFRESH_TOKEN_CAPACITY),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Far enough that a revocation mark is only ever dropped to make room.
const FOREVER: u64 = u64::MAX;

impl Caches {
    /// Milliseconds since these caches were made: the clock of their entries and of the
    /// feed's freshness (monotonic; it decides freshness, never a credential's expiry).
    pub fn now_ms(&self) -> u64 {
        millis(self.origin.elapsed())
    }

    /// Applies one change.
    pub fn apply(&self, change: &Change) {
        // Counters move before the entry, so that a store read that began before the
        // change cannot cache its answer after it (see `cache_record`).
        match change {
            Change::Client(id) => {
                self.client_changes.fetch_add(1, Ordering::SeqCst);
                self.clients.remove(id.as_str());
            }
            Change::User(id) => {
                self.user_changes.fetch_add(1, Ordering::SeqCst);
                self.users.remove(id.as_str());
            }
            Change::GrantRevoked(id) => {
                self.revocations.fetch_add(1, Ordering::SeqCst);
                self.grants
                    .insert(id.clone(), Revocation::Revoked, FOREVER, self.now_ms());
            }
            Change::TokenRevoked(jti) => {
                self.revocations.fetch_add(1, Ordering::SeqCst);
                self.tokens
                    .insert(jti.clone(), Revocation::Revoked, FOREVER, self.now_ms());
            }
        }
    }

    /// Every change made before `as_of_ms` (by [`Caches::now_ms`]) has been applied.
    pub fn mark_current(&self, as_of_ms: u64) {
        self.current_as_of
            .fetch_max(as_of_ms.saturating_add(1), Ordering::SeqCst);
    }

    /// The feed may have missed changes from now on: nothing cached so far as "not revoked"
    /// or as a record is trusted again, and nothing is until the feed is current again.
    pub fn lost(&self) {
        self.current_as_of.store(0, Ordering::SeqCst);
        self.epoch.fetch_add(1, Ordering::SeqCst);
    }

    /// The epoch whose cached answers may be used now, if the pushed feed is current.
    fn pushed_epoch(&self) -> Option<u64> {
        let as_of = self.current_as_of.load(Ordering::SeqCst);
        let fresh =
            as_of != 0 && self.now_ms().saturating_sub(as_of - 1) <= millis(STALENESS_BOUND);
        fresh.then(|| self.epoch.load(Ordering::SeqCst))
    }

    /// The current epoch, once a pulled feed has caught up.
    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }
}

/// How a backend tells the caches what other writers changed.
#[async_trait]
pub trait ChangeFeed: Send + Sync + std::fmt::Debug {
    /// Pushed feeds: follows the changes, applying each to the caches and marking them
    /// current as it learns they are, until the feed fails (an error) or the caches are
    /// dropped (`Ok`). Pulled feeds return `Ok` at once.
    async fn follow(&self, caches: Weak<Caches>) -> StoreResult<()> {
        drop(caches);
        Ok(())
    }

    /// Pulled feeds: applies every change committed so far, now, and says whether that
    /// worked. Pushed feeds answer `None`: their freshness is what `follow` marked.
    fn catch_up(&self, caches: &Caches) -> Option<bool>;
}

/// Runs a pushed feed for as long as the caches live, subscribing again after a failure.
async fn follow_forever(feed: Arc<dyn ChangeFeed>, caches: Weak<Caches>) {
    loop {
        let result = feed.follow(Weak::clone(&caches)).await;
        let Some(live) = caches.upgrade() else {
            return;
        };
        live.lost();
        drop(live);
        match result {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(%error, "change feed lost; asking the store until it is back");
            }
        }
        tokio::time::sleep(RETRY_INTERVAL).await;
    }
}

/// The caching decorator over a backend; see the module documentation.
pub struct CachedStore {
    inner: SharedStore,
    feed: Option<Arc<dyn ChangeFeed>>,
    caches: Arc<Caches>,
}

impl std::fmt::Debug for CachedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedStore")
            .field("backend", &self.inner.backend_name())
            .field("feed", &self.feed)
            .finish_non_exhaustive()
    }
}

impl CachedStore {
    /// Wraps `inner`, starting its change feed on the current tokio runtime. A backend
    /// without a feed is passed through: nothing is cached.
    pub fn wrap(inner: SharedStore) -> SharedStore {
        let feed = inner.change_feed();
        let caches = Arc::new(Caches::default());
        if let Some(feed) = &feed
            && feed.catch_up(&caches).is_none()
        {
            tokio::spawn(follow_forever(Arc::clone(feed), Arc::downgrade(&caches)));
        }
        Arc::new(Self {
            inner,
            feed,
            caches,
        })
    }

    /// The epoch whose cached answers may be used now, if any may.
    fn trusted_epoch(&self) -> Option<u64> {
        let feed = self.feed.as_ref()?;
        match feed.catch_up(&self.caches) {
            None => self.caches.pushed_epoch(),
            Some(true) => Some(self.caches.epoch()),
            Some(false) => None,
        }
    }

    /// A record cached in a trusted epoch.
    fn cached_record<T: Clone>(
        &self,
        cache: &ShardedCache<String, Arc<Cached<T>>>,
        id: &str,
        epoch: Option<u64>,
    ) -> Option<T> {
        let epoch = epoch?;
        let cached = cache.get(id, self.caches.now_ms())?;
        (cached.epoch == epoch).then(|| cached.record.clone())
    }

    /// Caches what the store answered, unless a change of that kind was applied since
    /// `changes_before` was read (the answer may predate it).
    fn cache_record<T>(
        &self,
        cache: &ShardedCache<String, Arc<Cached<T>>>,
        changes: &AtomicU64,
        changes_before: u64,
        epoch: Option<u64>,
        id: &str,
        record: T,
    ) {
        let Some(epoch) = epoch else {
            return;
        };
        let now = self.caches.now_ms();
        cache.insert_if(
            id.to_owned(),
            Arc::new(Cached { record, epoch }),
            now + millis(RECORD_TTL),
            now,
            |_| changes.load(Ordering::SeqCst) == changes_before,
        );
    }

    /// Caches "not revoked" for `key`, unless a revocation was applied since
    /// `revocations_before` was read or the key is known revoked.
    fn cache_live<K: Hash + Eq>(
        &self,
        cache: &ShardedCache<K, Revocation>,
        key: K,
        revocations_before: u64,
        epoch: u64,
    ) {
        let now = self.caches.now_ms();
        cache.insert_if(
            key,
            Revocation::Live { epoch },
            now + millis(REVOCATION_TTL),
            now,
            |current| {
                current != Some(&Revocation::Revoked)
                    && self.caches.revocations.load(Ordering::SeqCst) == revocations_before
            },
        );
    }

    /// What the cache says of `key`: `Some(true)` revoked, `Some(false)` live in `epoch`.
    fn known_revocation(
        &self,
        cache: &ShardedCache<String, Revocation>,
        key: &str,
        epoch: Option<u64>,
    ) -> Option<bool> {
        match cache.get(key, self.caches.now_ms())? {
            Revocation::Revoked => Some(true),
            Revocation::Live { epoch: cached } => (Some(cached) == epoch).then_some(false),
        }
    }
}

#[async_trait]
impl ClientStore for CachedStore {
    async fn insert_client(&self, client: &ClientRecord) -> StoreResult<()> {
        let result = self.inner.insert_client(client).await;
        self.caches.apply(&Change::Client(client.id.clone()));
        result
    }

    async fn update_client(&self, client: &ClientRecord) -> StoreResult<bool> {
        let result = self.inner.update_client(client).await;
        self.caches.apply(&Change::Client(client.id.clone()));
        result
    }

    async fn get_client(&self, id: &str) -> StoreResult<Option<ClientRecord>> {
        let epoch = self.trusted_epoch();
        if let Some(client) = self.cached_record(&self.caches.clients, id, epoch) {
            return Ok(Some(client));
        }
        let before = self.caches.client_changes.load(Ordering::SeqCst);
        let found = self.inner.get_client(id).await?;
        if let Some(client) = &found {
            self.cache_record(
                &self.caches.clients,
                &self.caches.client_changes,
                before,
                epoch,
                id,
                client.clone(),
            );
        }
        Ok(found)
    }

    async fn list_clients(&self) -> StoreResult<Vec<ClientRecord>> {
        self.inner.list_clients().await
    }

    async fn remove_client(&self, id: &str) -> StoreResult<bool> {
        let result = self.inner.remove_client(id).await;
        self.caches.apply(&Change::Client(id.to_owned()));
        result
    }
}

#[async_trait]
impl UserStore for CachedStore {
    async fn insert_user(&self, user: &UserRecord) -> StoreResult<()> {
        let result = self.inner.insert_user(user).await;
        self.caches.apply(&Change::User(user.id.clone()));
        result
    }

    async fn update_user(&self, user: &UserRecord) -> StoreResult<bool> {
        let result = self.inner.update_user(user).await;
        self.caches.apply(&Change::User(user.id.clone()));
        result
    }

    async fn get_user(&self, id: &str) -> StoreResult<Option<UserRecord>> {
        let epoch = self.trusted_epoch();
        if let Some(user) = self.cached_record(&self.caches.users, id, epoch) {
            return Ok(Some(user));
        }
        let before = self.caches.user_changes.load(Ordering::SeqCst);
        let found = self.inner.get_user(id).await?;
        if let Some(user) = &found {
            self.cache_record(
                &self.caches.users,
                &self.caches.user_changes,
                before,
                epoch,
                id,
                user.clone(),
            );
        }
        Ok(found)
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<UserRecord>> {
        self.inner.get_user_by_email(email).await
    }

    async fn list_users(&self) -> StoreResult<Vec<UserRecord>> {
        self.inner.list_users().await
    }

    async fn remove_user(&self, id: &str) -> StoreResult<bool> {
        let result = self.inner.remove_user(id).await;
        self.caches.apply(&Change::User(id.to_owned()));
        result
    }
}

#[async_trait]
impl RevocationStore for CachedStore {
    async fn revoke_grant(&self, grant_id: &str) -> StoreResult<()> {
        self.inner.revoke_grant(grant_id).await?;
        self.caches
            .apply(&Change::GrantRevoked(grant_id.to_owned()));
        Ok(())
    }

    async fn is_grant_revoked(&self, grant_id: &str) -> StoreResult<bool> {
        let epoch = self.trusted_epoch();
        if let Some(known) = self.known_revocation(&self.caches.grants, grant_id, epoch) {
            return Ok(known);
        }
        let before = self.caches.revocations.load(Ordering::SeqCst);
        let revoked = self.inner.is_grant_revoked(grant_id).await?;
        if revoked {
            self.caches
                .apply(&Change::GrantRevoked(grant_id.to_owned()));
        } else if let Some(epoch) = epoch {
            self.cache_live(&self.caches.grants, grant_id.to_owned(), before, epoch);
        }
        Ok(revoked)
    }

    async fn revoke_token(&self, jti: &str, expires_at: i64, now: i64) -> StoreResult<()> {
        self.inner.revoke_token(jti, expires_at, now).await?;
        self.caches.apply(&Change::TokenRevoked(jti.to_owned()));
        Ok(())
    }

    async fn is_token_revoked(&self, jti: &str) -> StoreResult<bool> {
        self.inner.is_token_revoked(jti).await
    }

    async fn is_access_revoked(&self, grant_id: &str, jti: &str) -> StoreResult<bool> {
        let epoch = self.trusted_epoch();
        let grant = self.known_revocation(&self.caches.grants, grant_id, epoch);
        let token = self.known_revocation(&self.caches.tokens, jti, epoch);
        match (grant, token) {
            (Some(true), _) | (_, Some(true)) => return Ok(true),
            (Some(false), Some(false)) => return Ok(false),
            _ => {}
        }
        let before = self.caches.revocations.load(Ordering::SeqCst);
        let revoked = self.inner.is_access_revoked(grant_id, jti).await?;
        if let (false, Some(epoch)) = (revoked, epoch) {
            self.cache_live(&self.caches.grants, grant_id.to_owned(), before, epoch);
            self.cache_live(&self.caches.tokens, jti.to_owned(), before, epoch);
        }
        Ok(revoked)
    }
}

#[async_trait]
impl LinkStore for CachedStore {
    async fn unlink_grant(&self, event: &UnlinkEvent) -> StoreResult<bool> {
        let removed = self.inner.unlink_grant(event).await?;
        self.caches
            .apply(&Change::GrantRevoked(event.grant_id.clone()));
        Ok(removed)
    }

    async fn put_link(&self, link: &LinkRecord) -> StoreResult<()> {
        self.inner.put_link(link).await
    }

    async fn list_links(&self, user_id: &str) -> StoreResult<Vec<LinkRecord>> {
        self.inner.list_links(user_id).await
    }

    async fn remove_link(&self, user_id: &str, grant_id: &str) -> StoreResult<Option<LinkRecord>> {
        self.inner.remove_link(user_id, grant_id).await
    }

    async fn put_consent(&self, user_id: &str, client_id: &str, scope: &str) -> StoreResult<()> {
        self.inner.put_consent(user_id, client_id, scope).await
    }

    async fn get_consent(&self, user_id: &str, client_id: &str) -> StoreResult<Option<String>> {
        self.inner.get_consent(user_id, client_id).await
    }

    async fn delete_consent(&self, user_id: &str, client_id: &str) -> StoreResult<bool> {
        self.inner.delete_consent(user_id, client_id).await
    }

    async fn push_unlink_event(&self, event: &UnlinkEvent) -> StoreResult<()> {
        self.inner.push_unlink_event(event).await
    }

    async fn pending_unlink_events(&self, limit: usize) -> StoreResult<Vec<UnlinkEvent>> {
        self.inner.pending_unlink_events(limit).await
    }

    async fn ack_unlink_event(&self, id: &str) -> StoreResult<()> {
        self.inner.ack_unlink_event(id).await
    }
}

#[async_trait]
impl RefreshTokenStore for CachedStore {
    async fn put_refresh_token(
        &self,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<bool> {
        self.inner.put_refresh_token(digest, record).await
    }

    async fn get_refresh_token(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> StoreResult<Option<RefreshTokenLookup>> {
        let epoch = self.trusted_epoch();
        let now = self.caches.now_ms();
        if let Some(record) = self.caches.refresh_tokens.get(digest, now)
            && record.grant_id == grant_id
            && let Some(grant_revoked) = self.known_revocation(&self.caches.grants, grant_id, epoch)
        {
            return Ok(Some(RefreshTokenLookup {
                record: (*record).clone(),
                grant_revoked,
            }));
        }
        let before = self.caches.revocations.load(Ordering::SeqCst);
        let found = self.inner.get_refresh_token(grant_id, digest).await?;
        match &found {
            Some(lookup) if lookup.grant_revoked => {
                self.caches
                    .apply(&Change::GrantRevoked(grant_id.to_owned()));
            }
            Some(lookup) => {
                if let Some(epoch) = epoch {
                    self.cache_live(&self.caches.grants, grant_id.to_owned(), before, epoch);
                    self.caches.refresh_tokens.insert(
                        digest.to_owned(),
                        Arc::new(lookup.record.clone()),
                        now + millis(RECORD_TTL),
                        now,
                    );
                }
            }
            None => {}
        }
        Ok(found)
    }

    async fn delete_grant_refresh_tokens(&self, grant_id: &str) -> StoreResult<u64> {
        self.inner.delete_grant_refresh_tokens(grant_id).await
    }
}

#[async_trait]
impl CodeLedger for CachedStore {
    async fn begin_redemption(&self, attempt: &CodeRedemption) -> StoreResult<RedemptionStart> {
        self.inner.begin_redemption(attempt).await
    }

    async fn finish_redemption(
        &self,
        attempt: &CodeRedemption,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<RedemptionFinish> {
        self.inner.finish_redemption(attempt, digest, record).await
    }
}

#[async_trait]
impl SessionStore for CachedStore {
    async fn put_session(
        &self,
        digest: &str,
        session: &SessionRecord,
        now: i64,
    ) -> StoreResult<()> {
        self.inner.put_session(digest, session, now).await
    }

    async fn get_session(&self, digest: &str, now: i64) -> StoreResult<Option<SessionRecord>> {
        self.inner.get_session(digest, now).await
    }

    async fn delete_session(&self, digest: &str) -> StoreResult<bool> {
        self.inner.delete_session(digest).await
    }
}

#[async_trait]
impl ThrottleStore for CachedStore {
    async fn hit(&self, key: &str, window_secs: u64, now: i64) -> StoreResult<u64> {
        self.inner.hit(key, window_secs, now).await
    }

    async fn current(&self, key: &str, now: i64) -> StoreResult<u64> {
        self.inner.current(key, now).await
    }

    async fn reset(&self, key: &str) -> StoreResult<()> {
        self.inner.reset(key).await
    }
}

#[async_trait]
impl DeviceStore for CachedStore {
    async fn put_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
        devices: &[serde_json::Value],
    ) -> StoreResult<()> {
        self.inner
            .put_devices(project_id, agent_user_id, devices)
            .await
    }

    async fn get_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<Vec<serde_json::Value>>> {
        self.inner.get_devices(project_id, agent_user_id).await
    }

    async fn delete_agent_user(&self, project_id: &str, agent_user_id: &str) -> StoreResult<bool> {
        self.inner
            .delete_agent_user(project_id, agent_user_id)
            .await
    }

    async fn put_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        self.inner
            .put_agent_user(project_id, agent_user_id, user_id)
            .await
    }

    async fn user_of_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<String>> {
        self.inner
            .user_of_agent_user(project_id, agent_user_id)
            .await
    }

    async fn agent_user_of_user(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<String>> {
        self.inner.agent_user_of_user(project_id, user_id).await
    }

    async fn put_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
        states: &[(String, serde_json::Value)],
    ) -> StoreResult<()> {
        self.inner
            .put_device_states(project_id, agent_user_id, states)
            .await
    }

    async fn get_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<std::collections::BTreeMap<String, serde_json::Value>> {
        self.inner
            .get_device_states(project_id, agent_user_id)
            .await
    }
}

#[async_trait]
impl ServiceAccountStore for CachedStore {
    async fn put_service_account(&self, account: &ServiceAccountRecord) -> StoreResult<()> {
        self.inner.put_service_account(account).await
    }

    async fn get_service_account(&self, email: &str) -> StoreResult<Option<ServiceAccountRecord>> {
        self.inner.get_service_account(email).await
    }

    async fn service_account_by_key(
        &self,
        key_id: &str,
    ) -> StoreResult<Option<ServiceAccountRecord>> {
        self.inner.service_account_by_key(key_id).await
    }

    async fn list_service_accounts(&self) -> StoreResult<Vec<ServiceAccountRecord>> {
        self.inner.list_service_accounts().await
    }

    async fn remove_service_account(&self, email: &str) -> StoreResult<bool> {
        self.inner.remove_service_account(email).await
    }
}

#[async_trait]
impl IdentityProviderStore for CachedStore {
    async fn insert_identity_provider(&self, provider: &IdentityProviderRecord) -> StoreResult<()> {
        self.inner.insert_identity_provider(provider).await
    }

    async fn update_identity_provider(
        &self,
        provider: &IdentityProviderRecord,
    ) -> StoreResult<bool> {
        self.inner.update_identity_provider(provider).await
    }

    async fn get_identity_provider(&self, id: &str) -> StoreResult<Option<IdentityProviderRecord>> {
        self.inner.get_identity_provider(id).await
    }

    async fn list_identity_providers(&self) -> StoreResult<Vec<IdentityProviderRecord>> {
        self.inner.list_identity_providers().await
    }

    async fn remove_identity_provider(&self, id: &str) -> StoreResult<bool> {
        self.inner.remove_identity_provider(id).await
    }

    async fn get_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
    ) -> StoreResult<Option<String>> {
        self.inner.get_external_identity(provider_id, subject).await
    }

    async fn put_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        self.inner
            .put_external_identity(provider_id, subject, user_id)
            .await
    }

    async fn put_login_state(
        &self,
        key: &str,
        state: &LoginStateRecord,
        now: i64,
    ) -> StoreResult<()> {
        self.inner.put_login_state(key, state, now).await
    }

    async fn take_login_state(&self, key: &str, now: i64) -> StoreResult<Option<LoginStateRecord>> {
        self.inner.take_login_state(key, now).await
    }
}

#[async_trait]
impl Store for CachedStore {
    async fn ping(&self) -> StoreResult<()> {
        self.inner.ping().await
    }

    fn backend_name(&self) -> &'static str {
        self.inner.backend_name()
    }

    fn change_feed(&self) -> Option<Arc<dyn ChangeFeed>> {
        // Wrapping twice would only cache twice.
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_travel_as_kind_and_key() {
        for change in [
            Change::Client("acme".into()),
            Change::User("u:1".into()),
            Change::GrantRevoked("g1".into()),
            Change::TokenRevoked("jti-1".into()),
        ] {
            assert_eq!(Change::decode(&change.encode()), Some(change));
        }
        assert_eq!(Change::decode("h:instance:12"), None);
        assert_eq!(Change::decode("no kind"), None);
    }

    #[test]
    fn a_pushed_feed_is_trusted_only_while_its_heartbeat_is_fresh() {
        let caches = Caches::default();
        assert_eq!(caches.pushed_epoch(), None, "never current yet");
        caches.mark_current(caches.now_ms());
        let epoch = caches.pushed_epoch().unwrap();
        caches.lost();
        assert_eq!(caches.pushed_epoch(), None, "lost");
        caches.mark_current(caches.now_ms());
        assert_ne!(
            caches.pushed_epoch(),
            Some(epoch),
            "a new epoch after a loss"
        );
        // A heartbeat older than the bound does not make the feed current.
        let caches = Caches {
            origin: Instant::now() - STALENESS_BOUND * 3,
            ..Caches::default()
        };
        caches.mark_current(0);
        assert_eq!(caches.pushed_epoch(), None);
    }

    /// The SQLite feed: answers cached from one connection follow what another connection
    /// (the CLI) commits, within the check interval; "revoked" is kept even without a feed.
    #[tokio::test]
    async fn sqlite_writes_of_another_connection_are_seen_within_the_check_interval() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("linkd.db");
        let open = || {
            Arc::new(super::super::sqlite::SqliteStore::open(&path, Default::default()).unwrap())
        };
        let cached = CachedStore::wrap(open());
        let other = open();
        let client = ClientRecord {
            id: "acme".into(),
            project_id: "p".into(),
            name: "Acme".into(),
            secret_digest: "old".into(),
            created_at: 0,
            settings: Default::default(),
        };
        other.insert_client(&client).await.unwrap();
        assert!(!cached.is_access_revoked("g1", "t1").await.unwrap());
        assert_eq!(
            cached.get_client("acme").await.unwrap(),
            Some(client.clone())
        );

        let rotated = ClientRecord {
            secret_digest: "new".into(),
            ..client
        };
        other.update_client(&rotated).await.unwrap();
        other.revoke_grant("g1").await.unwrap();
        let interval = super::super::sqlite::CHANGES_CHECK_INTERVAL;
        tokio::time::sleep(interval).await;
        assert_eq!(cached.get_client("acme").await.unwrap(), Some(rotated));
        assert!(cached.is_access_revoked("g1", "t1").await.unwrap());
        other.revoke_token("t2", i64::MAX, 0).await.unwrap();
        tokio::time::sleep(interval).await;
        assert!(cached.is_access_revoked("g2", "t2").await.unwrap());
        other.remove_client("acme").await.unwrap();
        tokio::time::sleep(interval).await;
        assert_eq!(cached.get_client("acme").await.unwrap(), None);
    }
}
