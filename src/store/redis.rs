//! The Redis backend, for one Redis or a Redis Cluster shared by every linkd instance.
//!
//! Key layout (prefix `linkd:`; the part in braces is the hash tag that decides the cluster
//! slot, so every key one atomic operation touches shares it):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `linkd:{clients}` | hash | client id → client JSON |
//! | `linkd:{users}:by-id`, `linkd:{users}:by-email` | hashes | user id → user JSON; email → user id |
//! | `linkd:rt:{g:<grant>}` | hash | refresh-token digest → record JSON |
//! | `linkd:revoked-grant:{g:<grant>}` | string, permanent | present once the grant is revoked |
//! | `linkd:revoked-token:{t:<jti>}` | string, expiring | present while the access token is revoked; holds its `expires_at` |
//! | `linkd:code:{g:<grant>}:<jti>` | string, expiring | `p:<lease until>:<attempt>` while a redemption is pending, `r:<attempt>` once redeemed |
//! | `linkd:code-lease:{g:<grant>}:<jti>` | string, expiring | the attempt holding the code, for the length of its lease by Redis's own clock |
//! | `linkd:session:{s:<digest>}` | string, expiring | session JSON |
//! | `linkd:counter:{k:<key>}` | integer, expiring | throttling counter |
//! | `linkd:devices:{p:<project>}:<agent user>` | string | devices JSON |
//! | `linkd:links:{u:<user>}`, `linkd:consents:{u:<user>}` | hashes | grant id → link JSON; client id → consented scope |
//! | `linkd:{unlink-events}` | hash | event id → unlink event JSON |
//! | `linkd:{service-accounts}:by-email`, `…:by-key` | hashes | email → account JSON; key id → email |
//! | `linkd:{identity-providers}` | hash | provider id → provider JSON |
//! | `linkd:external-ids:{x:<provider>}` | hash | the provider's subject → user id |
//! | `linkd:login-state:{l:<key>}` | string, expiring | login state JSON of a sign-in through a provider, taken once |
//!
//! The identity-provider keys were added without a new layout version: they are new keys an
//! older linkd never reads, and no existing key changed.
//!
//! A refresh token, its grant's revocation mark and the code that starts the grant share the
//! `{g:<grant>}` tag, so the hot refresh lookup is one script on one slot, finishing a code
//! redemption (spend the code, store the refresh token unless revoked) is one script, and deleting a grant's tokens is one `DEL` of
//! its hash. A digest is therefore unique within its grant only; digests of random tokens
//! do not collide, so that is no weaker in practice than the SQLite primary key.
//!
//! Ending a grant ([`LinkStore::unlink_grant`]) touches three slots — the grant's, the
//! user's and the unlink events' — so it runs as steps in a fixed order: the grant dies
//! first (its revocation mark), then the event is queued (under an id that makes a repeat a
//! no-op), then consent and link go (one script), and the grant's dead refresh tokens last.
//! A failure part-way leaves the link listed beside a dead grant, never the reverse, and a
//! repeat — from the account page, or from a refresh token, whose record still names the
//! user — completes it.
//!
//! Clients and users each live in one slot: uniqueness of ids and emails is then one atomic
//! script, at the price of concentrating them on one node; they are read-mostly and small
//! next to tokens and sessions.
//!
//! Expiring keys get the lifetime that is left by the caller's `now` (`EX`, never an
//! absolute `EXAT`), and Redis ends them by its own clock. A throttle window is the lifetime
//! of its counter key from the first hit, so on Redis it follows Redis's clock: moving the
//! caller's clock does not end it.
//!
//! The key layout has a version, kept in `linkd:schema` and checked before the first
//! command: see [`schema`].
//!
//! Every call is bounded by the response timeout; any Redis error (connection refused,
//! timeout, `LOADING`, `READONLY`, `CLUSTERDOWN`, `TRYAGAIN`, `OOM`, …) is
//! [`StoreError::Unavailable`], so callers answer 503 and never "invalid".

use std::sync::{Arc, Weak};

use async_trait::async_trait;
use redis::cluster_async::ClusterConnection;
use redis::{FromRedisValue, Script};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub mod schema;

use super::cached::{Caches, Change, ChangeFeed, HEARTBEAT_INTERVAL};
use super::location::{RedisLocation, RedisTopology};
use super::redis_connect::{PrimaryConnection, RedisConnectSettings};
use super::{
    ClientRecord, ClientStore, CodeLedger, CodeRedemption, DeviceStore, IdentityProviderRecord,
    IdentityProviderStore, LinkRecord, LinkStore, LoginStateRecord, RedemptionFinish,
    RedemptionStart, RefreshTokenLookup, RefreshTokenRecord, RefreshTokenStore, RevocationStore,
    ServiceAccountRecord, ServiceAccountStore, SessionRecord, SessionStore, Store, StoreError,
    StoreResult, StoreTimeouts, ThrottleStore, UnlinkEvent, UserRecord, UserStore,
};

const CLIENTS: &str = "linkd:{clients}";
const USERS_BY_ID: &str = "linkd:{users}:by-id";
const USERS_BY_EMAIL: &str = "linkd:{users}:by-email";

fn refresh_tokens_key(grant_id: &str) -> String {
    format!("linkd:rt:{{g:{grant_id}}}")
}
fn revoked_grant_key(grant_id: &str) -> String {
    format!("linkd:revoked-grant:{{g:{grant_id}}}")
}
fn revoked_token_key(jti: &str) -> String {
    format!("linkd:revoked-token:{{t:{jti}}}")
}
fn code_key(grant_id: &str, jti: &str) -> String {
    format!("linkd:code:{{g:{grant_id}}}:{jti}")
}
fn code_lease_key(grant_id: &str, jti: &str) -> String {
    format!("linkd:code-lease:{{g:{grant_id}}}:{jti}")
}
fn session_key(digest: &str) -> String {
    format!("linkd:session:{{s:{digest}}}")
}
fn counter_key(key: &str) -> String {
    format!("linkd:counter:{{k:{key}}}")
}
fn links_key(user_id: &str) -> String {
    format!("linkd:links:{{u:{user_id}}}")
}
fn consents_key(user_id: &str) -> String {
    format!("linkd:consents:{{u:{user_id}}}")
}
const UNLINK_EVENTS: &str = "linkd:{unlink-events}";
const IDENTITY_PROVIDERS: &str = "linkd:{identity-providers}";
fn external_identities_key(provider_id: &str) -> String {
    format!("linkd:external-ids:{{x:{provider_id}}}")
}
fn login_state_key(key: &str) -> String {
    format!("linkd:login-state:{{l:{key}}}")
}

/// Take a key's value and delete it in one step (`GETDEL` needs Redis 6.2).
const TAKE_KEY: &str = r"
local value = redis.call('GET', KEYS[1])
if value then redis.call('DEL', KEYS[1]) end
return value";
const SERVICE_ACCOUNTS: &str = "linkd:{service-accounts}:by-email";
const SERVICE_ACCOUNT_KEYS: &str = "linkd:{service-accounts}:by-key";

/// Store an account and re-point its key ids, refusing a key id owned by another account.
const PUT_SERVICE_ACCOUNT: &str = r"
for i = 3, #ARGV do
  local owner = redis.call('HGET', KEYS[2], ARGV[i])
  if owner and owner ~= ARGV[1] then return 0 end
end
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  for key_id, _ in pairs(cjson.decode(old)['keys']) do
    redis.call('HDEL', KEYS[2], key_id)
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
for i = 3, #ARGV do redis.call('HSET', KEYS[2], ARGV[i], ARGV[1]) end
return 1";

/// Look an account up by key id in one round trip.
const SERVICE_ACCOUNT_BY_KEY: &str = r"
local email = redis.call('HGET', KEYS[2], ARGV[1])
if not email then return false end
return redis.call('HGET', KEYS[1], email)";

/// Remove an account and its key index entries.
const REMOVE_SERVICE_ACCOUNT: &str = r"
local old = redis.call('HGET', KEYS[1], ARGV[1])
if not old then return 0 end
for key_id, _ in pairs(cjson.decode(old)['keys']) do
  redis.call('HDEL', KEYS[2], key_id)
end
redis.call('HDEL', KEYS[1], ARGV[1])
return 1";

/// Remove and return one hash field.
const TAKE_FIELD: &str = r"
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then redis.call('HDEL', KEYS[1], ARGV[1]) end
return value";

/// Forget an agent user: its devices, their states and the user it stands for, atomically;
/// 1 when devices existed. KEYS: devices, states, owners, ids; ARGV: agent user id.
const DELETE_AGENT_USER: &str = r"
local existed = redis.call('DEL', KEYS[1])
redis.call('DEL', KEYS[2])
local user = redis.call('HGET', KEYS[3], ARGV[1])
if user then
  redis.call('HDEL', KEYS[3], ARGV[1])
  if redis.call('HGET', KEYS[4], user) == ARGV[1] then redis.call('HDEL', KEYS[4], user) end
end
return existed";

/// Record agent user id ↔ user, dropping either side's previous partner so that the two
/// hashes stay each other's inverse. KEYS: owners, ids; ARGV: agent user id, user id.
const PUT_AGENT_USER: &str = r"
local previous_agent = redis.call('HGET', KEYS[2], ARGV[2])
if previous_agent then redis.call('HDEL', KEYS[1], previous_agent) end
local previous_user = redis.call('HGET', KEYS[1], ARGV[1])
if previous_user then redis.call('HDEL', KEYS[2], previous_user) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
return 1";

/// A hash of agent user id → linkd user id, per project. Same hash tag as [`devices_key`],
/// so that forgetting an agent user stays one script on a cluster.
fn agent_user_owners_key(project_id: &str) -> String {
    format!("linkd:agent-user-owners:{{p:{project_id}}}")
}

/// The inverse of [`agent_user_owners_key`]: linkd user id → agent user id.
fn agent_user_ids_key(project_id: &str) -> String {
    format!("linkd:agent-user-ids:{{p:{project_id}}}")
}

fn devices_key(project_id: &str, agent_user_id: &str) -> String {
    format!("linkd:devices:{{p:{project_id}}}:{agent_user_id}")
}

/// A hash of device id → reported state. Same hash tag as [`devices_key`], so that one
/// `DEL` forgets both on a cluster.
fn device_states_key(project_id: &str, agent_user_id: &str) -> String {
    format!("linkd:states:{{p:{project_id}}}:{agent_user_id}")
}

/// Update only an existing field: `HSET` if `HEXISTS`.
const UPDATE_IF_PRESENT: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  return 1
end
return 0";

/// Insert a user when neither its id nor its email is taken.
const INSERT_USER: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 or redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
return 1";

/// Replace a user whose id exists and whose email index still points at it.
const UPDATE_USER: &str = r"
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 and redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
  return 1
end
return 0";

/// Look a user up by email in one round trip.
const USER_BY_EMAIL: &str = r"
local id = redis.call('HGET', KEYS[2], ARGV[1])
if not id then return false end
return redis.call('HGET', KEYS[1], id)";

/// Remove a user and its email index entry.
const REMOVE_USER: &str = r"
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return 0 end
local email = cjson.decode(record)['email']
redis.call('HDEL', KEYS[1], ARGV[1])
if email and redis.call('HGET', KEYS[2], email) == ARGV[1] then
  redis.call('HDEL', KEYS[2], email)
end
return 1";

/// A refresh token's record and its grant's revocation mark, together.
const GET_REFRESH_TOKEN: &str = r"
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
return {record, redis.call('EXISTS', KEYS[2])}";

/// Store a refresh token unless its grant is revoked: 1 stored, 0 revoked, -1 duplicate.
/// KEYS: the grant's refresh tokens, its revocation mark (one slot); ARGV: digest, record.
const PUT_REFRESH_TOKEN: &str = r"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return -1 end
return 1";

/// Take a code for an attempt: `{0}` taken (new, or an earlier attempt's lease has passed),
/// `{1, lease}` another attempt holds it until `lease`, `{2}` already redeemed.
/// The lease is also set as a key that lapses after the lease's length by Redis's clock, so
/// that a finishing write landing after the lease (linkd gave up on it) cannot spend the code.
/// KEYS: the code, its lease; ARGV: attempt, its lease end, now, seconds until the code may
/// be forgotten, the lease's length in milliseconds.
const BEGIN_REDEMPTION: &str = r"
local state = redis.call('GET', KEYS[1])
if state == 'r' or (state and string.sub(state, 1, 2) == 'r:') then return {2} end
if state then
  local lease = tonumber(string.match(state, '^p:(%-?%d+):'))
  if lease and lease >= tonumber(ARGV[3]) then return {1, lease} end
end
redis.call('SET', KEYS[1], 'p:' .. ARGV[2] .. ':' .. ARGV[1], 'EX', ARGV[4])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[5])
return {0}";

/// Finish an attempt that still holds its code within its lease: spend the code and store
/// the refresh token unless the grant is revoked. 0 stored, 1 grant revoked (code spent), 2
/// superseded. Asking again with the same digest for an attempt that spent the code answers
/// the same, so that an attempt whose answer was lost (the call timed out) can learn it. KEYS: the code, the grant's refresh tokens,
/// its revocation mark, the code's lease (one slot); ARGV: attempt, digest, record.
const FINISH_REDEMPTION: &str = r"
local state = redis.call('GET', KEYS[1])
if state == 'r:' .. ARGV[1] then
  if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 1 then return 0 end
  if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end
  return 2
end
if not state or string.match(state, '^p:%-?%d+:(.*)$') ~= ARGV[1] then return 2 end
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return 2 end
redis.call('SET', KEYS[1], 'r:' .. ARGV[1], 'KEEPTTL')
redis.call('DEL', KEYS[4])
if redis.call('EXISTS', KEYS[3]) == 1 then return 1 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 0";

/// Delete a grant's refresh tokens, returning how many there were.
const DELETE_GRANT_TOKENS: &str = r"
local count = redis.call('HLEN', KEYS[1])
redis.call('DEL', KEYS[1])
return count";

/// A fixed-window counter: the first hit sets the window, later hits do not extend it. The
/// expiry is checked rather than tied to `count == 1`, so a counter that somehow lost its
/// expiry cannot lock a key out for good.
const HIT_COUNTER: &str = r"
local count = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[1]) end
return count";

/// Forgets the consent, then removes the link; 1 when the link was there. KEYS: consents,
/// links (one user's slot); ARGV: client id, grant id.
const FORGET_LINK: &str = r"
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('HDEL', KEYS[2], ARGV[2])";

/// Marks a revocation until `ARGV[1]` (Unix seconds, also the stored value) with the key
/// expiring in `ARGV[2]` seconds; an existing mark that lasts longer is kept, never
/// shortened.
const REVOKE_UNTIL: &str = r"
local current = tonumber(redis.call('GET', KEYS[1]))
if current and current >= tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if ARGV[3] then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
return 1";

/// Marks a grant revoked for good and announces it on the change feed, in one step: a
/// revocation acknowledged to its revoker has been published. KEYS: the mark; ARGV: channel,
/// message.
const REVOKE_GRANT: &str = r"
redis.call('SET', KEYS[1], 'revoked')
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1";

/// The channel of the change feed ([`super::cached`]): `c:`, `u:`, `g:` and `t:` changes,
/// and instances' heartbeats `h:<instance>:<sent>`.
const CHANGES_CHANNEL: &str = "linkd:changes";

#[derive(Clone)]
enum Connection {
    Single(PrimaryConnection),
    Cluster(ClusterConnection),
}

/// The Redis store.
#[derive(Clone)]
pub struct RedisStore {
    connection: Connection,
    timeouts: StoreTimeouts,
    cluster: bool,
    /// Where the change feed subscribes: the one server, or the primary the Sentinels name
    /// when the feed (re)subscribes; `None` on a cluster.
    feed_source: Option<(RedisLocation, RedisConnectSettings)>,
    /// Whether the key layout's marker has been checked; no command goes out before.
    schema: Arc<schema::SchemaCheck>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

fn unavailable(error: &redis::RedisError) -> StoreError {
    StoreError::Unavailable(format!("redis: {}", error.kind_description()))
}

trait KindDescription {
    fn kind_description(&self) -> String;
}

impl KindDescription for redis::RedisError {
    // Only the category: a Redis error message may echo arguments, which can hold digests.
    fn kind_description(&self) -> String {
        if self.is_timeout() {
            "timed out".to_owned()
        } else if self.is_connection_refusal() || self.is_connection_dropped() || self.is_io_error()
        {
            "connection failed".to_owned()
        } else {
            format!("{:?}", self.kind())
        }
    }
}

fn encode<T: Serialize>(record: &T) -> StoreResult<String> {
    serde_json::to_string(record).map_err(|error| StoreError::Corrupt(error.to_string()))
}

fn decode<T: DeserializeOwned>(text: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|error| StoreError::Corrupt(error.to_string()))
}

impl RedisStore {
    /// Connects to `location` (one server, a cluster or the primary Sentinel names) with the
    /// TLS roots and credentials of `settings` (see [`super::redis_connect`]), and checks the
    /// key layout's marker ([`schema`]). Fails with [`StoreError::Unavailable`] when Redis
    /// cannot be reached now, and with [`StoreError::Incompatible`] when it holds a layout
    /// this linkd does not know; once connected, the store reconnects by itself after Redis
    /// restarts or, under Sentinel, fails over.
    pub async fn connect(
        location: &RedisLocation,
        settings: &RedisConnectSettings,
    ) -> StoreResult<Self> {
        let cluster = matches!(location.topology, RedisTopology::Cluster { .. });
        let connection = if cluster {
            Connection::Cluster(super::redis_connect::connect_cluster(location, settings).await?)
        } else {
            Connection::Single(super::redis_connect::connect_primary(location, settings).await?)
        };
        let store = Self {
            connection,
            timeouts: settings.timeouts,
            cluster,
            feed_source: (!cluster).then(|| (location.clone(), settings.clone())),
            schema: Arc::default(),
        };
        store.ensure_schema().await?;
        Ok(store)
    }

    /// As [`RedisStore::connect`], without connecting now: a one-server or Sentinel store
    /// whose calls fail as [`StoreError::Unavailable`] until Redis answers, for a server that
    /// starts before Redis does; the first command that reaches Redis checks the layout's
    /// marker, and every command fails as [`StoreError::Incompatible`] while it is one this
    /// linkd does not know. A cluster must be reachable: its client learns the slots from a
    /// node when it is made.
    pub fn connect_later(
        location: &RedisLocation,
        settings: &RedisConnectSettings,
    ) -> StoreResult<Self> {
        Ok(Self {
            connection: Connection::Single(super::redis_connect::primary_later(
                location, settings,
            )?),
            timeouts: settings.timeouts,
            cluster: false,
            feed_source: Some((location.clone(), settings.clone())),
            schema: Arc::default(),
        })
    }

    async fn command<T: FromRedisValue>(&self, command: redis::Cmd) -> StoreResult<T> {
        self.ensure_schema().await?;
        self.send_command(command).await
    }

    /// [`RedisStore::command`] without the layout check, for the check itself.
    async fn send_command<T: FromRedisValue>(&self, command: redis::Cmd) -> StoreResult<T> {
        let call = async {
            match &self.connection {
                Connection::Single(manager) => command.query_async(&mut manager.clone()).await,
                Connection::Cluster(cluster) => command.query_async(&mut cluster.clone()).await,
            }
        };
        tokio::time::timeout(self.timeouts.response, call)
            .await
            .map_err(|_| StoreError::Unavailable("redis: timed out".to_owned()))?
            .map_err(|error| unavailable(&error))
    }

    async fn script<T: FromRedisValue>(
        &self,
        source: &str,
        keys: &[&str],
        args: &[&str],
    ) -> StoreResult<T> {
        self.ensure_schema().await?;
        let script = Script::new(source);
        let mut invocation = script.prepare_invoke();
        for key in keys {
            invocation.key(*key);
        }
        for arg in args {
            invocation.arg(*arg);
        }
        let call = async {
            match &self.connection {
                Connection::Single(manager) => invocation.invoke_async(&mut manager.clone()).await,
                Connection::Cluster(cluster) => invocation.invoke_async(&mut cluster.clone()).await,
            }
        };
        tokio::time::timeout(self.timeouts.response, call)
            .await
            .map_err(|_| StoreError::Unavailable("redis: timed out".to_owned()))?
            .map_err(|error| unavailable(&error))
    }
}

fn cmd(name: &str) -> redis::Cmd {
    redis::cmd(name)
}

#[async_trait]
impl ClientStore for RedisStore {
    async fn insert_client(&self, client: &ClientRecord) -> StoreResult<()> {
        let mut command = cmd("HSETNX");
        command.arg(CLIENTS).arg(&client.id).arg(encode(client)?);
        let inserted: bool = self.command(command).await?;
        if inserted {
            self.announce(&Change::Client(client.id.clone())).await;
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(format!("client {}", client.id)))
        }
    }

    async fn update_client(&self, client: &ClientRecord) -> StoreResult<bool> {
        let record = encode(client)?;
        let result = self
            .script(UPDATE_IF_PRESENT, &[CLIENTS], &[&client.id, &record])
            .await;
        self.announce(&Change::Client(client.id.clone())).await;
        result
    }

    async fn get_client(&self, id: &str) -> StoreResult<Option<ClientRecord>> {
        let mut command = cmd("HGET");
        command.arg(CLIENTS).arg(id);
        let text: Option<String> = self.command(command).await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn list_clients(&self) -> StoreResult<Vec<ClientRecord>> {
        let mut command = cmd("HVALS");
        command.arg(CLIENTS);
        let texts: Vec<String> = self.command(command).await?;
        let mut clients = texts
            .iter()
            .map(|text| decode::<ClientRecord>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        clients.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(clients)
    }

    async fn remove_client(&self, id: &str) -> StoreResult<bool> {
        let mut command = cmd("HDEL");
        command.arg(CLIENTS).arg(id);
        let result = self.command(command).await;
        self.announce(&Change::Client(id.to_owned())).await;
        result
    }
}

#[async_trait]
impl UserStore for RedisStore {
    async fn insert_user(&self, user: &UserRecord) -> StoreResult<()> {
        let record = encode(user)?;
        let inserted: bool = self
            .script(
                INSERT_USER,
                &[USERS_BY_ID, USERS_BY_EMAIL],
                &[&user.id, &user.email, &record],
            )
            .await?;
        if inserted {
            self.announce(&Change::User(user.id.clone())).await;
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(format!("user {}", user.email)))
        }
    }

    async fn update_user(&self, user: &UserRecord) -> StoreResult<bool> {
        let record = encode(user)?;
        let result = self
            .script(
                UPDATE_USER,
                &[USERS_BY_ID, USERS_BY_EMAIL],
                &[&user.id, &user.email, &record],
            )
            .await;
        self.announce(&Change::User(user.id.clone())).await;
        result
    }

    async fn get_user(&self, id: &str) -> StoreResult<Option<UserRecord>> {
        let mut command = cmd("HGET");
        command.arg(USERS_BY_ID).arg(id);
        let text: Option<String> = self.command(command).await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<UserRecord>> {
        let text: Option<String> = self
            .script(USER_BY_EMAIL, &[USERS_BY_ID, USERS_BY_EMAIL], &[email])
            .await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn list_users(&self) -> StoreResult<Vec<UserRecord>> {
        let mut command = cmd("HVALS");
        command.arg(USERS_BY_ID);
        let texts: Vec<String> = self.command(command).await?;
        let mut users = texts
            .iter()
            .map(|text| decode::<UserRecord>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        users.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(users)
    }

    async fn remove_user(&self, id: &str) -> StoreResult<bool> {
        let result = self
            .script(REMOVE_USER, &[USERS_BY_ID, USERS_BY_EMAIL], &[id])
            .await;
        self.announce(&Change::User(id.to_owned())).await;
        result
    }
}

#[async_trait]
impl RefreshTokenStore for RedisStore {
    async fn put_refresh_token(
        &self,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<bool> {
        let outcome: i64 = self
            .script(
                PUT_REFRESH_TOKEN,
                &[
                    &refresh_tokens_key(&record.grant_id),
                    &revoked_grant_key(&record.grant_id),
                ],
                &[digest, &encode(record)?],
            )
            .await?;
        match outcome {
            1 => Ok(true),
            0 => Ok(false),
            _ => Err(StoreError::AlreadyExists("refresh token".to_owned())),
        }
    }

    async fn get_refresh_token(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> StoreResult<Option<RefreshTokenLookup>> {
        let found: Option<(String, bool)> = self
            .script(
                GET_REFRESH_TOKEN,
                &[&refresh_tokens_key(grant_id), &revoked_grant_key(grant_id)],
                &[digest],
            )
            .await?;
        found
            .map(|(text, grant_revoked)| {
                Ok(RefreshTokenLookup {
                    record: decode(&text)?,
                    grant_revoked,
                })
            })
            .transpose()
    }

    async fn delete_grant_refresh_tokens(&self, grant_id: &str) -> StoreResult<u64> {
        self.script(DELETE_GRANT_TOKENS, &[&refresh_tokens_key(grant_id)], &[])
            .await
    }
}

/// The lifetime (`EX` seconds) of a key that may be forgotten at `expires_at`, by the
/// caller's clock standing at `now`. Redis expires keys by its own clock, so a key is given
/// the time that is left rather than an absolute `EXAT`, which would be off by however far
/// the two clocks disagree. Redis refuses a lifetime of zero or less, so an expiry already
/// past keeps the key for a second: the mark is kept briefly rather than refused.
fn lifetime(expires_at: i64, now: i64) -> i64 {
    expires_at.saturating_sub(now).max(1)
}

/// `SET key value EX lifetime`.
fn set_until(key: &str, value: &str, expires_at: i64, now: i64) -> redis::Cmd {
    let mut command = cmd("SET");
    command
        .arg(key)
        .arg(value)
        .arg("EX")
        .arg(lifetime(expires_at, now));
    command
}

impl RedisStore {
    async fn revoke_until(
        &self,
        key: &str,
        expires_at: i64,
        now: i64,
        announce: Option<&Change>,
    ) -> StoreResult<()> {
        let (expires_at, lifetime) = (
            expires_at.to_string(),
            lifetime(expires_at, now).to_string(),
        );
        let message = announce.map(Change::encode);
        let mut args = vec![expires_at.as_str(), lifetime.as_str()];
        if let Some(message) = &message {
            args.extend([CHANGES_CHANNEL, message.as_str()]);
        }
        let _: bool = self.script(REVOKE_UNTIL, &[key], &args).await?;
        Ok(())
    }

    /// Tells the other instances' caches of a change already written. Best effort: a lost
    /// announcement costs at most the caches' record lifetime ([`super::cached::RECORD_TTL`]),
    /// and failing a write that happened would only invite a retry.
    async fn announce(&self, change: &Change) {
        let mut command = cmd("PUBLISH");
        command.arg(CHANGES_CHANNEL).arg(change.encode());
        if let Err(error) = self.command::<i64>(command).await {
            tracing::warn!(%error, "could not announce a change to the other instances");
        }
    }
}

#[async_trait]
impl CodeLedger for RedisStore {
    async fn begin_redemption(&self, attempt: &CodeRedemption) -> StoreResult<RedemptionStart> {
        let lease_millis = attempt
            .lease_until
            .saturating_sub(attempt.now)
            .max(1)
            .saturating_mul(1000);
        let answer: Vec<i64> = self
            .script(
                BEGIN_REDEMPTION,
                &[
                    &code_key(&attempt.grant_id, &attempt.jti),
                    &code_lease_key(&attempt.grant_id, &attempt.jti),
                ],
                &[
                    &attempt.attempt,
                    &attempt.lease_until.to_string(),
                    &attempt.now.to_string(),
                    &lifetime(attempt.expires_at, attempt.now).to_string(),
                    &lease_millis.to_string(),
                ],
            )
            .await?;
        match answer.as_slice() {
            [0] => Ok(RedemptionStart::Started),
            [1, lease_until] => Ok(RedemptionStart::InFlight {
                lease_until: *lease_until,
            }),
            [2] => Ok(RedemptionStart::Redeemed),
            other => Err(StoreError::Corrupt(format!(
                "unexpected redemption state {other:?}"
            ))),
        }
    }

    async fn finish_redemption(
        &self,
        attempt: &CodeRedemption,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<RedemptionFinish> {
        let text = encode(record)?;
        let answer: i64 = self
            .script(
                FINISH_REDEMPTION,
                &[
                    &code_key(&attempt.grant_id, &attempt.jti),
                    &refresh_tokens_key(&attempt.grant_id),
                    &revoked_grant_key(&attempt.grant_id),
                    &code_lease_key(&attempt.grant_id, &attempt.jti),
                ],
                &[&attempt.attempt, digest, &text],
            )
            .await?;
        match answer {
            0 => Ok(RedemptionFinish::Issued),
            1 => Ok(RedemptionFinish::GrantRevoked),
            _ => Ok(RedemptionFinish::Superseded),
        }
    }
}

#[async_trait]
impl RevocationStore for RedisStore {
    async fn revoke_grant(&self, grant_id: &str) -> StoreResult<()> {
        let message = Change::GrantRevoked(grant_id.to_owned()).encode();
        let _: i64 = self
            .script(
                REVOKE_GRANT,
                &[&revoked_grant_key(grant_id)],
                &[CHANGES_CHANNEL, &message],
            )
            .await?;
        Ok(())
    }

    async fn is_grant_revoked(&self, grant_id: &str) -> StoreResult<bool> {
        let mut command = cmd("EXISTS");
        command.arg(revoked_grant_key(grant_id));
        self.command(command).await
    }

    async fn revoke_token(&self, jti: &str, expires_at: i64, now: i64) -> StoreResult<()> {
        self.revoke_until(
            &revoked_token_key(jti),
            expires_at,
            now,
            Some(&Change::TokenRevoked(jti.to_owned())),
        )
        .await
    }

    async fn is_token_revoked(&self, jti: &str) -> StoreResult<bool> {
        let mut command = cmd("EXISTS");
        command.arg(revoked_token_key(jti));
        self.command(command).await
    }

    async fn is_access_revoked(&self, grant_id: &str, jti: &str) -> StoreResult<bool> {
        match &self.connection {
            // One command on one server.
            Connection::Single(_) => {
                let mut command = cmd("EXISTS");
                command
                    .arg(revoked_grant_key(grant_id))
                    .arg(revoked_token_key(jti));
                let present: u64 = self.command(command).await?;
                Ok(present > 0)
            }
            // The two keys live in different slots, which one command cannot span: ask both
            // at once instead.
            Connection::Cluster(_) => super::grant_or_token_revoked(self, grant_id, jti).await,
        }
    }
}

#[async_trait]
impl SessionStore for RedisStore {
    async fn put_session(
        &self,
        digest: &str,
        session: &SessionRecord,
        now: i64,
    ) -> StoreResult<()> {
        let text = encode(session)?;
        let _: Option<String> = self
            .command(set_until(
                &session_key(digest),
                &text,
                session.expires_at,
                now,
            ))
            .await?;
        Ok(())
    }

    async fn get_session(&self, digest: &str, now: i64) -> StoreResult<Option<SessionRecord>> {
        let mut command = cmd("GET");
        command.arg(session_key(digest));
        let text: Option<String> = self.command(command).await?;
        let session = text
            .map(|text| decode::<SessionRecord>(&text))
            .transpose()?;
        Ok(session.filter(|session| session.expires_at > now))
    }

    async fn delete_session(&self, digest: &str) -> StoreResult<bool> {
        let mut command = cmd("DEL");
        command.arg(session_key(digest));
        self.command(command).await
    }
}

#[async_trait]
impl ThrottleStore for RedisStore {
    // The window is the key's lifetime, counted by Redis's clock from the first hit: `now`
    // is not needed to open or end it.
    async fn hit(&self, key: &str, window_secs: u64, _now: i64) -> StoreResult<u64> {
        self.script(
            HIT_COUNTER,
            &[&counter_key(key)],
            &[&window_secs.max(1).to_string()],
        )
        .await
    }

    async fn current(&self, key: &str, _now: i64) -> StoreResult<u64> {
        let mut command = cmd("GET");
        command.arg(counter_key(key));
        let count: Option<u64> = self.command(command).await?;
        Ok(count.unwrap_or(0))
    }

    async fn reset(&self, key: &str) -> StoreResult<()> {
        let mut command = cmd("DEL");
        command.arg(counter_key(key));
        let _: u64 = self.command(command).await?;
        Ok(())
    }
}

#[async_trait]
impl DeviceStore for RedisStore {
    async fn put_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
        devices: &[serde_json::Value],
    ) -> StoreResult<()> {
        let mut command = cmd("SET");
        command
            .arg(devices_key(project_id, agent_user_id))
            .arg(encode(&devices)?);
        let _: Option<String> = self.command(command).await?;
        Ok(())
    }

    async fn get_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<Vec<serde_json::Value>>> {
        let mut command = cmd("GET");
        command.arg(devices_key(project_id, agent_user_id));
        let text: Option<String> = self.command(command).await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn delete_agent_user(&self, project_id: &str, agent_user_id: &str) -> StoreResult<bool> {
        let devices = devices_key(project_id, agent_user_id);
        let existed: bool = self
            .script(
                DELETE_AGENT_USER,
                &[
                    &devices,
                    &device_states_key(project_id, agent_user_id),
                    &agent_user_owners_key(project_id),
                    &agent_user_ids_key(project_id),
                ],
                &[agent_user_id],
            )
            .await?;
        Ok(existed)
    }

    async fn put_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        let _: i64 = self
            .script(
                PUT_AGENT_USER,
                &[
                    &agent_user_owners_key(project_id),
                    &agent_user_ids_key(project_id),
                ],
                &[agent_user_id, user_id],
            )
            .await?;
        Ok(())
    }

    async fn user_of_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<String>> {
        let mut command = cmd("HGET");
        command
            .arg(agent_user_owners_key(project_id))
            .arg(agent_user_id);
        self.command(command).await
    }

    async fn agent_user_of_user(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<String>> {
        let mut command = cmd("HGET");
        command.arg(agent_user_ids_key(project_id)).arg(user_id);
        self.command(command).await
    }

    async fn put_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
        states: &[(String, serde_json::Value)],
    ) -> StoreResult<()> {
        if states.is_empty() {
            return Ok(());
        }
        let mut command = cmd("HSET");
        command.arg(device_states_key(project_id, agent_user_id));
        for (device_id, state) in states {
            command.arg(device_id).arg(encode(state)?);
        }
        let _: i64 = self.command(command).await?;
        Ok(())
    }

    async fn get_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<std::collections::BTreeMap<String, serde_json::Value>> {
        let mut command = cmd("HGETALL");
        command.arg(device_states_key(project_id, agent_user_id));
        let texts: std::collections::HashMap<String, String> = self.command(command).await?;
        texts
            .into_iter()
            .map(|(device_id, text)| Ok((device_id, decode(&text)?)))
            .collect()
    }
}

#[async_trait]
impl LinkStore for RedisStore {
    async fn put_link(&self, link: &LinkRecord) -> StoreResult<()> {
        let mut command = cmd("HSETNX");
        command
            .arg(links_key(&link.user_id))
            .arg(&link.grant_id)
            .arg(encode(link)?);
        let _: bool = self.command(command).await?;
        Ok(())
    }

    async fn list_links(&self, user_id: &str) -> StoreResult<Vec<LinkRecord>> {
        let mut command = cmd("HVALS");
        command.arg(links_key(user_id));
        let texts: Vec<String> = self.command(command).await?;
        let mut links = texts
            .iter()
            .map(|text| decode::<LinkRecord>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        links.sort_by(|a, b| (a.created_at, &a.grant_id).cmp(&(b.created_at, &b.grant_id)));
        Ok(links)
    }

    async fn remove_link(&self, user_id: &str, grant_id: &str) -> StoreResult<Option<LinkRecord>> {
        let text: Option<String> = self
            .script(TAKE_FIELD, &[&links_key(user_id)], &[grant_id])
            .await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn put_consent(&self, user_id: &str, client_id: &str, scope: &str) -> StoreResult<()> {
        let mut command = cmd("HSET");
        command.arg(consents_key(user_id)).arg(client_id).arg(scope);
        let _: u64 = self.command(command).await?;
        Ok(())
    }

    async fn get_consent(&self, user_id: &str, client_id: &str) -> StoreResult<Option<String>> {
        let mut command = cmd("HGET");
        command.arg(consents_key(user_id)).arg(client_id);
        self.command(command).await
    }

    async fn delete_consent(&self, user_id: &str, client_id: &str) -> StoreResult<bool> {
        let mut command = cmd("HDEL");
        command.arg(consents_key(user_id)).arg(client_id);
        self.command(command).await
    }

    async fn unlink_grant(&self, event: &UnlinkEvent) -> StoreResult<bool> {
        // The mark alone kills the grant. Its refresh tokens go last: a repeat may start from
        // one of them (a client's `/revoke` retried after a failure part-way), and only their
        // records still say whose grant it is.
        self.revoke_grant(&event.grant_id).await?;
        let mut command = cmd("HEXISTS");
        command.arg(links_key(&event.user_id)).arg(&event.grant_id);
        let linked: bool = self.command(command).await?;
        let removed = if linked {
            self.push_unlink_event(event).await?;
            self.script(
                FORGET_LINK,
                &[&consents_key(&event.user_id), &links_key(&event.user_id)],
                &[&event.client_id, &event.grant_id],
            )
            .await?
        } else {
            false
        };
        self.delete_grant_refresh_tokens(&event.grant_id).await?;
        Ok(removed)
    }

    async fn push_unlink_event(&self, event: &UnlinkEvent) -> StoreResult<()> {
        let mut command = cmd("HSETNX");
        command
            .arg(UNLINK_EVENTS)
            .arg(&event.id)
            .arg(encode(event)?);
        let _: bool = self.command(command).await?;
        Ok(())
    }

    async fn pending_unlink_events(&self, limit: usize) -> StoreResult<Vec<UnlinkEvent>> {
        let mut command = cmd("HVALS");
        command.arg(UNLINK_EVENTS);
        let texts: Vec<String> = self.command(command).await?;
        let mut events = texts
            .iter()
            .map(|text| decode::<UnlinkEvent>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        events.sort_by(|a, b| (a.at, &a.id).cmp(&(b.at, &b.id)));
        events.truncate(limit);
        Ok(events)
    }

    async fn ack_unlink_event(&self, id: &str) -> StoreResult<()> {
        let mut command = cmd("HDEL");
        command.arg(UNLINK_EVENTS).arg(id);
        let _: u64 = self.command(command).await?;
        Ok(())
    }
}

#[async_trait]
impl ServiceAccountStore for RedisStore {
    async fn put_service_account(&self, account: &ServiceAccountRecord) -> StoreResult<()> {
        let text = encode(account)?;
        let mut args: Vec<&str> = vec![&account.email, &text];
        args.extend(account.keys.keys().map(String::as_str));
        let stored: bool = self
            .script(
                PUT_SERVICE_ACCOUNT,
                &[SERVICE_ACCOUNTS, SERVICE_ACCOUNT_KEYS],
                &args,
            )
            .await?;
        if stored {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists("service account key".to_owned()))
        }
    }

    async fn get_service_account(&self, email: &str) -> StoreResult<Option<ServiceAccountRecord>> {
        let mut command = cmd("HGET");
        command.arg(SERVICE_ACCOUNTS).arg(email);
        let text: Option<String> = self.command(command).await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn service_account_by_key(
        &self,
        key_id: &str,
    ) -> StoreResult<Option<ServiceAccountRecord>> {
        let text: Option<String> = self
            .script(
                SERVICE_ACCOUNT_BY_KEY,
                &[SERVICE_ACCOUNTS, SERVICE_ACCOUNT_KEYS],
                &[key_id],
            )
            .await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn list_service_accounts(&self) -> StoreResult<Vec<ServiceAccountRecord>> {
        let mut command = cmd("HVALS");
        command.arg(SERVICE_ACCOUNTS);
        let texts: Vec<String> = self.command(command).await?;
        let mut accounts = texts
            .iter()
            .map(|text| decode::<ServiceAccountRecord>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        accounts.sort_by(|a, b| a.email.cmp(&b.email));
        Ok(accounts)
    }

    async fn remove_service_account(&self, email: &str) -> StoreResult<bool> {
        self.script(
            REMOVE_SERVICE_ACCOUNT,
            &[SERVICE_ACCOUNTS, SERVICE_ACCOUNT_KEYS],
            &[email],
        )
        .await
    }
}

#[async_trait]
impl IdentityProviderStore for RedisStore {
    async fn insert_identity_provider(&self, provider: &IdentityProviderRecord) -> StoreResult<()> {
        let mut command = cmd("HSETNX");
        command
            .arg(IDENTITY_PROVIDERS)
            .arg(&provider.id)
            .arg(encode(provider)?);
        let inserted: bool = self.command(command).await?;
        if inserted {
            Ok(())
        } else {
            Err(StoreError::AlreadyExists(format!(
                "identity provider {}",
                provider.id
            )))
        }
    }

    async fn update_identity_provider(
        &self,
        provider: &IdentityProviderRecord,
    ) -> StoreResult<bool> {
        let record = encode(provider)?;
        self.script(
            UPDATE_IF_PRESENT,
            &[IDENTITY_PROVIDERS],
            &[&provider.id, &record],
        )
        .await
    }

    async fn get_identity_provider(&self, id: &str) -> StoreResult<Option<IdentityProviderRecord>> {
        let mut command = cmd("HGET");
        command.arg(IDENTITY_PROVIDERS).arg(id);
        let text: Option<String> = self.command(command).await?;
        text.map(|text| decode(&text)).transpose()
    }

    async fn list_identity_providers(&self) -> StoreResult<Vec<IdentityProviderRecord>> {
        let mut command = cmd("HVALS");
        command.arg(IDENTITY_PROVIDERS);
        let texts: Vec<String> = self.command(command).await?;
        let mut providers = texts
            .iter()
            .map(|text| decode::<IdentityProviderRecord>(text))
            .collect::<StoreResult<Vec<_>>>()?;
        providers.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(providers)
    }

    async fn remove_identity_provider(&self, id: &str) -> StoreResult<bool> {
        // The mappings go first: a failure between the two steps leaves the provider
        // listed without its mappings, and removing it again completes the job.
        let mut forget = cmd("DEL");
        forget.arg(external_identities_key(id));
        let _: u64 = self.command(forget).await?;
        let mut remove = cmd("HDEL");
        remove.arg(IDENTITY_PROVIDERS).arg(id);
        let removed: u64 = self.command(remove).await?;
        Ok(removed == 1)
    }

    async fn get_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
    ) -> StoreResult<Option<String>> {
        let mut command = cmd("HGET");
        command
            .arg(external_identities_key(provider_id))
            .arg(subject);
        self.command(command).await
    }

    async fn put_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
        user_id: &str,
    ) -> StoreResult<()> {
        let mut command = cmd("HSET");
        command
            .arg(external_identities_key(provider_id))
            .arg(subject)
            .arg(user_id);
        let _: u64 = self.command(command).await?;
        Ok(())
    }

    async fn put_login_state(
        &self,
        key: &str,
        state: &LoginStateRecord,
        now: i64,
    ) -> StoreResult<()> {
        let text = encode(state)?;
        let _: Option<String> = self
            .command(set_until(
                &login_state_key(key),
                &text,
                state.expires_at,
                now,
            ))
            .await?;
        Ok(())
    }

    async fn take_login_state(&self, key: &str, now: i64) -> StoreResult<Option<LoginStateRecord>> {
        let text: Option<String> = self.script(TAKE_KEY, &[&login_state_key(key)], &[]).await?;
        let state = text
            .map(|text| decode::<LoginStateRecord>(&text))
            .transpose()?;
        Ok(state.filter(|state| state.expires_at > now))
    }
}

#[async_trait]
impl Store for RedisStore {
    async fn ping(&self) -> StoreResult<()> {
        let _: String = self.command(cmd("PING")).await?;
        Ok(())
    }

    fn change_feed(&self) -> Option<Arc<dyn ChangeFeed>> {
        // A cluster delivers messages published through different nodes in no common
        // order, which the heartbeat's proof of freshness relies on: no feed, no caching.
        let (location, settings) = self.feed_source.clone()?;
        Some(Arc::new(RedisFeed {
            location,
            settings,
            store: self.clone(),
            instance: crate::secrets::new_uuid(),
        }))
    }

    fn backend_name(&self) -> &'static str {
        if self.cluster {
            "redis-cluster"
        } else {
            "redis"
        }
    }
}

/// The pushed change feed of a single Redis server; see [`super::cached`].
struct RedisFeed {
    location: RedisLocation,
    settings: RedisConnectSettings,
    /// Publishes the heartbeats.
    store: RedisStore,
    /// Tells this instance's heartbeats from other instances'.
    instance: String,
}

impl std::fmt::Debug for RedisFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisFeed").finish_non_exhaustive()
    }
}

#[async_trait]
impl ChangeFeed for RedisFeed {
    async fn follow(&self, caches: Weak<Caches>) -> StoreResult<()> {
        let timeouts = self.store.timeouts;
        // Asked again at every subscription, so that after a failover the feed follows the
        // primary the Sentinels name now.
        let client = super::redis_connect::primary_client(&self.location, &self.settings).await?;
        let pubsub = tokio::time::timeout(timeouts.connect, client.get_async_pubsub())
            .await
            .map_err(|_| StoreError::Unavailable("redis: subscribing timed out".to_owned()))?
            .map_err(|error| unavailable(&error))?;
        // The sink stays alive as long as the subscription is used.
        let (mut sink, mut stream) = pubsub.split();
        tokio::time::timeout(timeouts.response, sink.subscribe(CHANGES_CHANNEL))
            .await
            .map_err(|_| StoreError::Unavailable("redis: subscribing timed out".to_owned()))?
            .map_err(|error| unavailable(&error))?;
        let heartbeat = format!("h:{}:", self.instance);
        let mut ticker = tokio::time::interval(HEARTBEAT_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                message = std::future::poll_fn(|context| {
                    futures_core::Stream::poll_next(std::pin::Pin::new(&mut stream), context)
                }) => {
                    let Some(message) = message else {
                        return Err(StoreError::Unavailable(
                            "redis: the change feed's subscription ended".to_owned(),
                        ));
                    };
                    let Some(caches) = caches.upgrade() else {
                        return Ok(());
                    };
                    let Ok(payload) = message.get_payload::<String>() else {
                        continue;
                    };
                    if let Some(sent) = payload.strip_prefix(heartbeat.as_str()) {
                        if let Ok(sent) = sent.parse() {
                            caches.mark_current(sent);
                        }
                    } else if let Some(change) = Change::decode(&payload) {
                        caches.apply(&change);
                    }
                }
                _ = ticker.tick() => {
                    let Some(sent) = caches.upgrade().map(|caches| caches.now_ms()) else {
                        return Ok(());
                    };
                    let mut command = cmd("PUBLISH");
                    command.arg(CHANGES_CHANNEL).arg(format!("{heartbeat}{sent}"));
                    let _: i64 = self.store.command(command).await?;
                }
            }
        }
    }

    fn catch_up(&self, _caches: &Caches) -> Option<bool> {
        None
    }
}
