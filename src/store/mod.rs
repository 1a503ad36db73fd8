//! Persistence: one trait per concern, two backends behind them.
//!
//! | trait | what it keeps |
//! |---|---|
//! | [`ClientStore`] | registered integrations (OAuth clients) |
//! | [`UserStore`] | the integrator's user accounts |
//! | [`RefreshTokenStore`] | refresh tokens, by digest, grouped by grant |
//! | [`CodeLedger`] | the single-use ledger of authorization-code `jti`s |
//! | [`RevocationStore`] | revoked grants and revoked access-token `jti`s |
//! | [`SessionStore`] | browser sessions of the sign-in pages |
//! | [`ThrottleStore`] | fixed-window counters for throttling |
//! | [`DeviceStore`] | the device graph: devices per project and agent user |
//! | [`LinkStore`] | linked integrations per user, remembered consent, unlink events |
//! | [`ServiceAccountStore`] | service accounts of integrations and their public keys |
//! | [`IdentityProviderStore`] | upstream identity providers, the external identities mapped to users, one-time login states |
//!
//! [`cached::CachedStore`] wraps a backend for the server's hot paths: clients, users and
//! revocation answers from memory, kept coherent by the backend's change feed.
//!
//! Backends ([`sqlite::SqliteStore`], [`redis::RedisStore`]) contain no business rules: they
//! store and fetch what the domain hands them, atomically where the trait says so. Every
//! failure to reach the backend is [`StoreError::Unavailable`], never "not found", so callers
//! can answer 503 instead of declaring a credential invalid (DESIGN.md "Failure semantics").
//!
//! Where a store is and how it is reached are [`location`]'s (the `--store` value, parsed
//! before anything is opened) and [`redis_connect`]'s (TLS, credentials, the Sentinel-named
//! primary); [`open_location`] opens either backend.
//!
//! Timestamps are Unix seconds supplied by the caller (the domain owns the clock), so tests
//! control expiry without sleeping: no backend reads a clock of its own. Redis still drops
//! expired keys by its own clock; a key is given the lifetime that is left by the caller's
//! clock (`expires_at - now`), so Redis forgets it when that much time has passed there.

pub mod cached;
pub mod location;
pub mod redis;
pub mod redis_connect;
pub mod sharded;
pub mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The backend could not be reached or did not answer in time. Callers answer 503.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// An insert collided with an existing record (same id, or same unique field).
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// A stored record could not be decoded; the data is damaged or from an unknown version.
    #[error("stored record is corrupt: {0}")]
    Corrupt(String),
    /// The store was written in a layout this linkd does not know (by a newer linkd, most
    /// likely): it is neither read nor written, so that neither binary misreads the other's
    /// data. Not transient, unlike [`StoreError::Unavailable`].
    #[error("incompatible store: {0}")]
    Incompatible(String),
}

/// Shorthand for store results.
pub type StoreResult<T> = Result<T, StoreError>;

/// A registered integration. Extra fields added by later versions must be `#[serde(default)]`
/// so that older records still decode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientRecord {
    /// The `client_id` the platform presents.
    pub id: String,
    /// The platform project id; it names the redirect URI path `/r/<project_id>`.
    pub project_id: String,
    /// Display name shown on the consent page.
    pub name: String,
    /// Digest of the client secret (never the secret itself).
    pub secret_digest: String,
    /// Unix seconds when the client was registered.
    pub created_at: i64,
    /// Branding and protocol options; absent in records written before they existed.
    #[serde(default)]
    pub settings: ClientSettings,
}

/// Per-integration options beyond identity: what the pages show and how the token
/// endpoint answers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientSettings {
    /// Company name shown on the pages (defaults to the display name).
    #[serde(default)]
    pub company_name: Option<String>,
    /// `https` URL of the company logo.
    #[serde(default)]
    pub logo_url: Option<String>,
    /// `https` URL of the integrator's privacy policy.
    #[serde(default)]
    pub privacy_policy_url: Option<String>,
    /// `https` URL where a person without an account can sign up.
    #[serde(default)]
    pub signup_url: Option<String>,
    /// `https` URL where a person who forgot their password can reset it, linked from the
    /// sign-in page.
    #[serde(default)]
    pub forgot_password_url: Option<String>,
    /// Redirect URIs allowed besides the platform's `/r/<project_id>` ones.
    #[serde(default)]
    pub extra_redirect_uris: Vec<String>,
    /// Answer token-endpoint failures with RFC 6749 §5.2 codes instead of the platform's
    /// uniform `invalid_grant`.
    #[serde(default)]
    pub rfc6749_errors: bool,
    /// Refuse authorization requests without a PKCE challenge.
    #[serde(default)]
    pub pkce_required: bool,
    /// Where linkd sends the smart-home SYNC intent after a link and on requestSync.
    #[serde(default)]
    pub fulfillment_url: Option<String>,
    /// Scopes the integration may ask for at `/authorize`; records written before scopes
    /// belonged to the integration decode to [`DEFAULT_CLIENT_SCOPES`].
    #[serde(default)]
    pub scopes: ClientScopes,
    /// The identity provider (its id) that signs this integration's users in, instead of or
    /// beside linkd's own password form.
    #[serde(default)]
    pub identity_provider: Option<String>,
    /// Whether the sign-in page still shows the password form when an identity provider is
    /// set (without one, the form is always shown). Records written before identity
    /// providers existed decode to `true`.
    #[serde(default = "password_sign_in_default")]
    pub password_sign_in: bool,
}

/// What records without `password_sign_in` mean: the password form, as before.
fn password_sign_in_default() -> bool {
    true
}

/// What an integration may ask for when it was registered without `--scopes`: what generic
/// OAuth and OpenID Connect clients send (`openid email profile`) and device control.
pub const DEFAULT_CLIENT_SCOPES: [&str; 4] = ["openid", "email", "profile", "devices"];

/// The scope tokens an integration may ask for, in the order the operator gave them.
/// Validated where they are set (`linkd clients`); the store keeps them as a JSON list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ClientScopes(pub Vec<String>);

impl Default for ClientScopes {
    fn default() -> Self {
        Self(DEFAULT_CLIENT_SCOPES.map(str::to_owned).to_vec())
    }
}

impl ClientScopes {
    /// Whether `scope` is one of them.
    pub fn allows(&self, scope: &str) -> bool {
        self.0.iter().any(|allowed| allowed == scope)
    }

    /// The scopes, space-delimited as in a `scope` parameter.
    pub fn joined(&self) -> String {
        self.0.join(" ")
    }
}

/// One linked integration of a user: what the account page lists and Unlink revokes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The grant the link stands for.
    pub grant_id: String,
    /// The user.
    pub user_id: String,
    /// The integration.
    pub client_id: String,
    /// Granted scope.
    pub scope: String,
    /// Unix seconds when the link was made (code redeemed).
    pub created_at: i64,
}

/// A user unlinked an integration: the device graph must forget that user for the
/// integration's project (`agentUsers.delete`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnlinkEvent {
    /// Unique id of the event.
    pub id: String,
    /// The user who unlinked (the agent user id).
    pub user_id: String,
    /// The integration.
    pub client_id: String,
    /// The grant that was revoked.
    pub grant_id: String,
    /// Unix seconds of the unlink.
    pub at: i64,
}

/// A service account of an integration's project, which calls the device-graph API. Only
/// public keys are kept; the private key went to the key file once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceAccountRecord {
    /// The account's email-shaped identifier, the `iss` of its assertions.
    pub email: String,
    /// Numeric-looking unique id, the key file's `client_id`.
    pub unique_id: String,
    /// The integration (OAuth client) the account belongs to.
    pub client_id: String,
    /// The integration's project.
    pub project_id: String,
    /// Display name.
    pub name: String,
    /// Public keys by key id (`private_key_id`, the assertions' `kid`): SPKI PEM.
    pub keys: std::collections::BTreeMap<String, String>,
    /// Scopes the account may ask for.
    pub scopes: Vec<String>,
    /// Unix seconds when the account was created.
    pub created_at: i64,
}

/// A user account of the integrator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// Stable user id, the `sub` claim.
    pub id: String,
    /// Normalised (lower-case) email; unique across users.
    pub email: String,
    /// Full name.
    #[serde(default)]
    pub name: Option<String>,
    /// First name.
    #[serde(default)]
    pub given_name: Option<String>,
    /// Last name.
    #[serde(default)]
    pub family_name: Option<String>,
    /// Profile picture URL.
    #[serde(default)]
    pub picture: Option<String>,
    /// PHC string of the argon2id password hash.
    pub password_hash: String,
    /// Unix seconds when the user was created.
    pub created_at: i64,
}

/// What a refresh token stands for. The token itself is never stored, only its digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefreshTokenRecord {
    /// User the token was issued for.
    pub user_id: String,
    /// Client the token is bound to.
    pub client_id: String,
    /// Grant (one successful code redemption) the token belongs to.
    pub grant_id: String,
    /// Space-delimited scope of the grant.
    pub scope: String,
    /// Unix seconds when the token was issued.
    pub created_at: i64,
}

/// A refresh-token record together with the revocation state of its grant, fetched in one
/// round trip because the refresh grant is a hot path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshTokenLookup {
    /// The stored record.
    pub record: RefreshTokenRecord,
    /// Whether the grant the token belongs to has been revoked.
    pub grant_revoked: bool,
}

/// A browser session of the sign-in pages, keyed by a digest of the session cookie.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Signed-in user.
    pub user_id: String,
    /// Per-session CSRF secret the forms are bound to.
    pub csrf_secret: String,
    /// Digest of the user's password hash when the session began: a session whose user's
    /// password has changed since is over (empty in records of older versions: over too).
    #[serde(default)]
    pub credential: String,
    /// Unix seconds when the session was created.
    pub created_at: i64,
    /// Unix seconds after which the session is no longer valid.
    pub expires_at: i64,
}

/// Clients.
#[async_trait]
pub trait ClientStore: Send + Sync {
    /// Adds a client; [`StoreError::AlreadyExists`] when the id is taken.
    async fn insert_client(&self, client: &ClientRecord) -> StoreResult<()>;
    /// Replaces an existing client; `false` when there is none with that id.
    async fn update_client(&self, client: &ClientRecord) -> StoreResult<bool>;
    /// Looks a client up by id.
    async fn get_client(&self, id: &str) -> StoreResult<Option<ClientRecord>>;
    /// Every client, ordered by id.
    async fn list_clients(&self) -> StoreResult<Vec<ClientRecord>>;
    /// Removes a client; `false` when there was none.
    async fn remove_client(&self, id: &str) -> StoreResult<bool>;
}

/// Users.
#[async_trait]
pub trait UserStore: Send + Sync {
    /// Adds a user; [`StoreError::AlreadyExists`] when the id or the email is taken. Atomic:
    /// a failed insert leaves neither the record nor the email index behind.
    async fn insert_user(&self, user: &UserRecord) -> StoreResult<()>;
    /// Replaces an existing user (same id; the email may not change); `false` when absent.
    async fn update_user(&self, user: &UserRecord) -> StoreResult<bool>;
    /// Looks a user up by id.
    async fn get_user(&self, id: &str) -> StoreResult<Option<UserRecord>>;
    /// Looks a user up by normalised email.
    async fn get_user_by_email(&self, email: &str) -> StoreResult<Option<UserRecord>>;
    /// Every user, ordered by email.
    async fn list_users(&self) -> StoreResult<Vec<UserRecord>>;
    /// Removes a user and its email index entry; `false` when there was none.
    async fn remove_user(&self, id: &str) -> StoreResult<bool>;
}

/// Refresh tokens. Keys combine the grant id and the token digest so that the record and its
/// grant's revocation state live together (one Redis Cluster slot, one round trip).
#[async_trait]
pub trait RefreshTokenStore: Send + Sync {
    /// Stores a refresh token digest, unless its grant is revoked: then nothing is stored and
    /// the answer is `false`, atomically, so that a grant revoked by a replayed code while its
    /// first redemption is still under way cannot gain a refresh token afterwards.
    /// [`StoreError::AlreadyExists`] if that digest is present.
    async fn put_refresh_token(
        &self,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<bool>;
    /// Fetches a refresh token record and whether its grant is revoked, in one round trip.
    async fn get_refresh_token(
        &self,
        grant_id: &str,
        digest: &str,
    ) -> StoreResult<Option<RefreshTokenLookup>>;
    /// Deletes every refresh token of a grant; returns how many were deleted.
    async fn delete_grant_refresh_tokens(&self, grant_id: &str) -> StoreResult<u64>;
}

/// One attempt at redeeming an authorization code: what the ledger needs to make the
/// redemption single-use and yet let the client retry an attempt that issued nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRedemption {
    /// The code's `jti`.
    pub jti: String,
    /// The grant the code starts (its keys share the grant's Redis Cluster slot).
    pub grant_id: String,
    /// Unique id of this attempt.
    pub attempt: String,
    /// Unix seconds, by the redeeming instance's clock.
    pub now: i64,
    /// Until when (Unix seconds) this attempt may still be running; a later attempt only
    /// takes over a pending redemption once this has passed.
    pub lease_until: i64,
    /// When the ledger may forget the code (Unix seconds): it has expired by then.
    pub expires_at: i64,
}

/// Where a code stands when an attempt starts redeeming it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedemptionStart {
    /// The attempt holds the code: the code was unused, or an earlier attempt claimed it
    /// and ended without issuing anything (its lease has passed).
    Started,
    /// Another attempt holds the code and may still be running until `lease_until`.
    InFlight {
        /// Unix seconds when that attempt's lease ends.
        lease_until: i64,
    },
    /// The code was redeemed: tokens were issued for it.
    Redeemed,
}

/// How an attempt's redemption ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedemptionFinish {
    /// The refresh token is stored and the code is spent.
    Issued,
    /// The code is spent, but its grant was revoked meanwhile (a replay raced this
    /// attempt): nothing was stored.
    GrantRevoked,
    /// The attempt no longer held the code (a retry took it over, or it lapsed): nothing
    /// was stored and the code was not spent by this attempt.
    Superseded,
}

/// The single-use ledger of authorization codes, in two phases so that a store fault
/// between them never spends a code that issued nothing: an attempt first takes the code
/// (pending), then stores its refresh token and spends the code in one atomic step.
#[async_trait]
pub trait CodeLedger: Send + Sync {
    /// Takes the code for `attempt`, atomically across every instance sharing the store.
    async fn begin_redemption(&self, attempt: &CodeRedemption) -> StoreResult<RedemptionStart>;
    /// Atomically, if `attempt` still holds the code: spends it and, unless the grant is
    /// revoked, stores the refresh token `digest` → `record`. A backend whose call can still
    /// land after the caller gave up on it (Redis) spends nothing once the attempt's lease has
    /// passed, and answers a repeat with the same digest as it answered the first call, so
    /// that the caller can learn the outcome of a call that failed.
    async fn finish_redemption(
        &self,
        attempt: &CodeRedemption,
        digest: &str,
        record: &RefreshTokenRecord,
    ) -> StoreResult<RedemptionFinish>;
}

/// Revocation lists. A grant's revocation is permanent: refresh tokens do not expire and a
/// grant's access tokens can be minted for as long as anything names it, so the mark (one
/// small entry per revoked grant) is never forgotten. A single access token's revocation may
/// be forgotten after `expires_at` (Unix seconds), when the token has expired anyway.
#[async_trait]
pub trait RevocationStore: Send + Sync {
    /// Revokes, for good, every token carrying this grant id. Idempotent.
    async fn revoke_grant(&self, grant_id: &str) -> StoreResult<()>;
    /// Whether a grant has been revoked.
    async fn is_grant_revoked(&self, grant_id: &str) -> StoreResult<bool>;
    /// Revokes one access token by `jti`, at `now` (Unix seconds).
    async fn revoke_token(&self, jti: &str, expires_at: i64, now: i64) -> StoreResult<()>;
    /// Whether one access token has been revoked.
    async fn is_token_revoked(&self, jti: &str) -> StoreResult<bool>;
    /// Whether the access token `jti` of grant `grant_id` is revoked, either way: the check
    /// of every Bearer request. Both questions are asked at once, so that it costs one round
    /// trip to the store rather than two in a row.
    async fn is_access_revoked(&self, grant_id: &str, jti: &str) -> StoreResult<bool> {
        grant_or_token_revoked(self, grant_id, jti).await
    }
}

/// [`RevocationStore::is_access_revoked`] by its two single questions, asked concurrently:
/// for backends that cannot ask both in one call.
pub(crate) async fn grant_or_token_revoked<S: RevocationStore + ?Sized>(
    store: &S,
    grant_id: &str,
    jti: &str,
) -> StoreResult<bool> {
    let (grant, token) = tokio::try_join!(
        store.is_grant_revoked(grant_id),
        store.is_token_revoked(jti)
    )?;
    Ok(grant || token)
}

/// Browser sessions.
#[async_trait]
pub trait SessionStore: Send + Sync {
    /// Stores a session under the digest of its cookie value, at `now`; it lapses at
    /// `expires_at`.
    async fn put_session(&self, digest: &str, session: &SessionRecord, now: i64)
    -> StoreResult<()>;
    /// Fetches a live session; `None` when absent or past `expires_at` (compared to `now`).
    async fn get_session(&self, digest: &str, now: i64) -> StoreResult<Option<SessionRecord>>;
    /// Deletes a session; `false` when there was none.
    async fn delete_session(&self, digest: &str) -> StoreResult<bool>;
}

/// Fixed-window counters for throttling sign-in and client authentication.
#[async_trait]
pub trait ThrottleStore: Send + Sync {
    /// Increments the counter `key` at `now` and returns its new value. A counter that did
    /// not exist starts at 1 and lapses `window_secs` after that first hit (later hits do not
    /// extend it).
    async fn hit(&self, key: &str, window_secs: u64, now: i64) -> StoreResult<u64>;
    /// The counter's value in its live window at `now`, without counting a hit (0 when
    /// absent).
    async fn current(&self, key: &str, now: i64) -> StoreResult<u64>;
    /// Clears the counter `key`.
    async fn reset(&self, key: &str) -> StoreResult<()>;
}

/// The device graph: for each project and agent user, the list of Device objects (opaque JSON
/// to the store).
#[async_trait]
pub trait DeviceStore: Send + Sync {
    /// Replaces the devices of an agent user.
    async fn put_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
        devices: &[serde_json::Value],
    ) -> StoreResult<()>;
    /// The devices of an agent user; `None` when the agent user is unknown.
    async fn get_devices(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<Vec<serde_json::Value>>>;
    /// Forgets an agent user, its devices, their states and which user it stands for;
    /// `false` when it had no devices.
    async fn delete_agent_user(&self, project_id: &str, agent_user_id: &str) -> StoreResult<bool>;
    /// Records that the project's fulfilment answered SYNC for linkd's user `user_id` with
    /// `agent_user_id`. One agent user id per user and project: a new answer replaces the
    /// user's previous id, and an id answered for another user moves to this one.
    async fn put_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
        user_id: &str,
    ) -> StoreResult<()>;
    /// linkd's user an agent user id stands for, as recorded by [`DeviceStore::put_agent_user`].
    async fn user_of_agent_user(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<Option<String>>;
    /// The agent user id recorded for linkd's user `user_id` in the project.
    async fn agent_user_of_user(
        &self,
        project_id: &str,
        user_id: &str,
    ) -> StoreResult<Option<String>>;
    /// Sets the reported state of some of an agent user's devices (each replacing that
    /// device's previous state).
    async fn put_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
        states: &[(String, serde_json::Value)],
    ) -> StoreResult<()>;
    /// The reported states of an agent user's devices, by device id.
    async fn get_device_states(
        &self,
        project_id: &str,
        agent_user_id: &str,
    ) -> StoreResult<std::collections::BTreeMap<String, serde_json::Value>>;
}

/// Linked integrations per user, consent memory, and unlink events.
#[async_trait]
pub trait LinkStore: Send + Sync {
    /// Records a link (idempotent for the same grant).
    async fn put_link(&self, link: &LinkRecord) -> StoreResult<()>;
    /// The user's links, oldest first.
    async fn list_links(&self, user_id: &str) -> StoreResult<Vec<LinkRecord>>;
    /// Removes one of the user's links and returns it; `None` when the user has no such link.
    async fn remove_link(&self, user_id: &str, grant_id: &str) -> StoreResult<Option<LinkRecord>>;
    /// Remembers that the user consented to `scope` for the client.
    async fn put_consent(&self, user_id: &str, client_id: &str, scope: &str) -> StoreResult<()>;
    /// The scope the user consented to for the client, if any.
    async fn get_consent(&self, user_id: &str, client_id: &str) -> StoreResult<Option<String>>;
    /// Forgets the user's consent for the client; `false` when there was none.
    async fn delete_consent(&self, user_id: &str, client_id: &str) -> StoreResult<bool>;
    /// Ends the grant `event.grant_id` of user `event.user_id` for good, in this order:
    /// revokes the grant (permanently); then, only if the user still has a link for that
    /// grant, queues `event`, forgets the user's consent for `event.client_id` and removes
    /// the link; and deletes the grant's refresh tokens. Returns whether a link was removed.
    ///
    /// Atomic where the backend can (SQLite: one transaction). Where it cannot (Redis
    /// Cluster: the grant's keys, the user's keys and the event queue live in three slots)
    /// the steps run in that order and each is idempotent, so a failure part-way leaves the
    /// link listed with its grant already dead, and calling again with the same event
    /// completes the rest (an event id already queued is not queued twice). Never a link gone
    /// while its grant still works.
    async fn unlink_grant(&self, event: &UnlinkEvent) -> StoreResult<bool>;
    /// Queues an unlink event.
    async fn push_unlink_event(&self, event: &UnlinkEvent) -> StoreResult<()>;
    /// Up to `limit` queued unlink events, oldest first.
    async fn pending_unlink_events(&self, limit: usize) -> StoreResult<Vec<UnlinkEvent>>;
    /// Removes a handled unlink event.
    async fn ack_unlink_event(&self, id: &str) -> StoreResult<()>;
}

/// Service accounts, found by email or by one of their key ids.
#[async_trait]
pub trait ServiceAccountStore: Send + Sync {
    /// Adds or replaces an account and indexes its key ids.
    async fn put_service_account(&self, account: &ServiceAccountRecord) -> StoreResult<()>;
    /// The account with this email.
    async fn get_service_account(&self, email: &str) -> StoreResult<Option<ServiceAccountRecord>>;
    /// The account owning key `key_id`.
    async fn service_account_by_key(
        &self,
        key_id: &str,
    ) -> StoreResult<Option<ServiceAccountRecord>>;
    /// Every account, ordered by email.
    async fn list_service_accounts(&self) -> StoreResult<Vec<ServiceAccountRecord>>;
    /// Removes an account and its key index entries; `false` when absent.
    async fn remove_service_account(&self, email: &str) -> StoreResult<bool>;
}

/// An upstream identity provider: who signs an integration's users in when linkd's own
/// password form is not (or not only) the way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentityProviderRecord {
    /// `[a-z0-9-]`, 1–40 characters: the path segment of `/signin/{id}/…`.
    pub id: String,
    /// The name the sign-in page shows ("Continue with {name}").
    pub name: String,
    /// How linkd talks to it.
    pub kind: IdentityProviderKind,
    /// Unix seconds when the provider was added.
    pub created_at: i64,
}

/// The two ways an upstream provider vouches for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum IdentityProviderKind {
    /// An OpenID Connect provider; linkd is its relying party.
    Oidc {
        /// The exact issuer URL; discovery at `{issuer}/.well-known/openid-configuration`.
        issuer: String,
        /// linkd's client id at the provider.
        client_id: String,
        /// linkd's client secret at the provider. Never printed or logged.
        client_secret: String,
        /// Scopes asked for; always includes `openid`.
        scopes: Vec<String>,
    },
    /// The integrator's own web app signs the person in and returns a signed assertion.
    Handoff {
        /// Where the browser is sent with `login_challenge`.
        login_url: String,
        /// The integrator's public key (SPKI PEM), when given as a file.
        #[serde(default)]
        public_key_pem: Option<String>,
        /// The integrator's JWKS URL, when given instead.
        #[serde(default)]
        jwks_url: Option<String>,
    },
}

/// A sign-in through an upstream provider in progress: what the callback needs to finish it.
/// Stored under a digest of the browser-binding cookie, taken once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoginStateRecord {
    /// The provider the browser was sent to.
    pub provider_id: String,
    /// The OpenID Connect `state`, which is also the hand-off's `login_challenge`.
    pub state: String,
    /// The `nonce` the `id_token` must carry.
    pub nonce: String,
    /// The PKCE verifier (S256) of the provider's code.
    pub code_verifier: String,
    /// The authorization request to resume (its raw query); empty for the account page.
    pub request: String,
    /// Unix seconds when the sign-in began.
    pub created_at: i64,
    /// Unix seconds after which the callback is refused.
    pub expires_at: i64,
}

/// Identity providers, the external identities mapped to users, and login states.
#[async_trait]
pub trait IdentityProviderStore: Send + Sync {
    /// Adds a provider; [`StoreError::AlreadyExists`] when the id is taken.
    async fn insert_identity_provider(&self, provider: &IdentityProviderRecord) -> StoreResult<()>;
    /// Replaces the settings of an existing provider (the external identities mapped through
    /// it stay); `false` when there is none.
    async fn update_identity_provider(
        &self,
        provider: &IdentityProviderRecord,
    ) -> StoreResult<bool>;
    /// Looks a provider up by id.
    async fn get_identity_provider(&self, id: &str) -> StoreResult<Option<IdentityProviderRecord>>;
    /// Every provider, ordered by id.
    async fn list_identity_providers(&self) -> StoreResult<Vec<IdentityProviderRecord>>;
    /// Removes a provider and every external identity mapped through it (the users stay);
    /// `false` when there was none.
    async fn remove_identity_provider(&self, id: &str) -> StoreResult<bool>;
    /// The user the provider's `subject` is mapped to.
    async fn get_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
    ) -> StoreResult<Option<String>>;
    /// Maps the provider's `subject` to `user_id`, replacing an earlier mapping.
    async fn put_external_identity(
        &self,
        provider_id: &str,
        subject: &str,
        user_id: &str,
    ) -> StoreResult<()>;
    /// Stores a login state under `key` at `now`; it lapses at its `expires_at`.
    async fn put_login_state(
        &self,
        key: &str,
        state: &LoginStateRecord,
        now: i64,
    ) -> StoreResult<()>;
    /// Removes and returns the live login state under `key`, atomically: of two concurrent
    /// takes, one gets it and the other `None`. `None` too once past `expires_at`.
    async fn take_login_state(&self, key: &str, now: i64) -> StoreResult<Option<LoginStateRecord>>;
}

/// Everything a backend provides.
#[async_trait]
pub trait Store:
    ClientStore
    + UserStore
    + RefreshTokenStore
    + CodeLedger
    + RevocationStore
    + SessionStore
    + ThrottleStore
    + DeviceStore
    + LinkStore
    + ServiceAccountStore
    + IdentityProviderStore
    + Send
    + Sync
{
    /// Checks that the backend answers (readiness probe).
    async fn ping(&self) -> StoreResult<()>;
    /// Which backend this is, for logs: `"redis"` or `"sqlite"`.
    fn backend_name(&self) -> &'static str;
    /// How this backend announces changes of clients, users and revocations to the caches
    /// of [`cached::CachedStore`]; `None` when it cannot, and nothing is cached.
    fn change_feed(&self) -> Option<Arc<dyn cached::ChangeFeed>> {
        None
    }
}

/// A shared handle to whichever backend is configured.
pub type SharedStore = Arc<dyn Store>;

/// Timeouts that bound every store call so that a slow backend turns into
/// [`StoreError::Unavailable`] instead of a hung request.
#[derive(Debug, Clone, Copy)]
pub struct StoreTimeouts {
    /// Bound on establishing a connection.
    pub connect: std::time::Duration,
    /// Bound on one command or transaction.
    pub response: std::time::Duration,
}

impl Default for StoreTimeouts {
    fn default() -> Self {
        Self {
            connect: std::time::Duration::from_secs(2),
            response: std::time::Duration::from_secs(2),
        }
    }
}

/// Whether `location` names a Redis store rather than a SQLite file.
pub fn is_redis_location(location: &str) -> bool {
    matches!(
        location::StoreLocation::parse(location),
        Ok(location::StoreLocation::Redis(_))
    )
}

/// Opens the backend named by `location` (see [`location`] for its forms): Redis with no
/// credentials or CA certificates beyond what the location itself says, or the embedded
/// SQLite file. A location that is not one fails as [`StoreError::Unavailable`] naming
/// `--store`; callers that must tell bad input from an unreachable store parse it first with
/// [`location::StoreLocation::parse`] and call [`open_location`].
pub async fn open(location: &str, timeouts: StoreTimeouts) -> StoreResult<SharedStore> {
    let location = location::StoreLocation::parse(location)
        .map_err(|error| StoreError::Unavailable(error.to_string()))?;
    let settings = redis_connect::RedisConnectSettings {
        timeouts,
        ..redis_connect::RedisConnectSettings::default()
    };
    open_location(&location, &settings).await
}

/// Opens the backend at a parsed `location`; `redis` says how to reach Redis (its timeouts
/// bound the SQLite store's calls too).
pub async fn open_location(
    location: &location::StoreLocation,
    redis: &redis_connect::RedisConnectSettings,
) -> StoreResult<SharedStore> {
    match location {
        location::StoreLocation::Redis(redis_location) => Ok(Arc::new(
            redis::RedisStore::connect(redis_location, redis).await?,
        )),
        location::StoreLocation::Sqlite(path) => {
            Ok(Arc::new(sqlite::SqliteStore::open(path, redis.timeouts)?))
        }
    }
}

/// As [`open_location`], for a server that may start before Redis does: a one-server or
/// Sentinel Redis that cannot be reached now is opened anyway, its calls failing as
/// [`StoreError::Unavailable`] (503, not ready) until Redis answers. A SQLite file that
/// cannot be opened, a Redis Cluster without a reachable node and a store in a layout this
/// linkd does not know ([`StoreError::Incompatible`]) are still errors.
pub async fn open_eventually(
    location: &location::StoreLocation,
    redis: &redis_connect::RedisConnectSettings,
) -> StoreResult<SharedStore> {
    match (open_location(location, redis).await, location) {
        (Err(StoreError::Unavailable(reason)), location::StoreLocation::Redis(redis_location))
            if !matches!(
                redis_location.topology,
                location::RedisTopology::Cluster { .. }
            ) =>
        {
            tracing::warn!(%reason, "redis is not reachable yet: serving 503 until it answers");
            Ok(Arc::new(redis::RedisStore::connect_later(
                redis_location,
                redis,
            )?))
        }
        (opened, _) => opened,
    }
}
