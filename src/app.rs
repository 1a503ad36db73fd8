//! The state every endpoint shares: the store, the keyring, the clock and the issuer's
//! public identity. Built once by `serve` (or by a test) and handed to the router.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::Notify;

use crate::clock::SharedClock;
use crate::store::SharedStore;
use crate::tokens::keyring::KeyringHandle;

/// Protocol policy: lifetimes, the platform's redirect bases, what the pages say.
#[derive(Debug, Clone)]
pub struct OAuthSettings {
    /// Authorization code lifetime, seconds (the interface's "about 10 minutes").
    pub code_ttl_secs: i64,
    /// Access token lifetime, seconds (reported as `expires_in`).
    pub access_token_ttl_secs: i64,
    /// Sign-in session lifetime, seconds.
    pub session_ttl_secs: i64,
    /// How long one attempt at redeeming a code may hold it, seconds: the longest an attempt
    /// can run (its store calls each bounded by the store timeout). A retry of the same code
    /// takes it over only after that, so it never races a live attempt.
    pub redemption_lease_secs: i64,
    /// Clock skew tolerated between instances when checking token times, seconds.
    pub leeway_secs: i64,
    /// Name of the platform accounts are linked to, as the pages say it.
    pub platform_name: String,
    /// Bases of the platform's redirect URIs (`{base}/r/<project_id>`).
    pub redirect_bases: Vec<String>,
    /// Failed sign-ins to one account from one source within the throttle window before
    /// that source is refused for that account; also how many failures on an account (from
    /// anywhere) are free before each attempt on it is delayed.
    pub signin_attempts_per_account: u64,
    /// Failed sign-ins from one source within the throttle window before it is refused.
    pub signin_attempts_per_address: u64,
    /// Longest delay of a sign-in to an account under attack, seconds.
    pub signin_max_delay_secs: u64,
    /// Failed authentications of one client from one source within the throttle window
    /// before that source is refused for that client.
    pub client_auth_attempts: u64,
    /// Failed authentications naming unknown clients from one source within the throttle
    /// window before that source is refused.
    pub unknown_client_attempts_per_source: u64,
    /// Throttle window, seconds.
    pub throttle_window_secs: u64,
    /// Load balancers whose `X-Forwarded-For` names the client; empty: the TCP peer is.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Base of the device-graph scope `{base}/auth/devicegraph`; `None` means the issuer.
    pub devicegraph_scope_base: Option<String>,
    /// Base URL of the device-graph API, the `aud` of self-signed service-account JWTs;
    /// `None` means the issuer.
    pub devicegraph_base_url: Option<String>,
    /// Audiences JWT-bearer assertions of service accounts may carry besides linkd's own
    /// token endpoint URL (by default the one client libraries hard-code).
    pub assertion_audiences: Vec<String>,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        Self {
            code_ttl_secs: 600,
            access_token_ttl_secs: 3600,
            session_ttl_secs: 8 * 3600,
            redemption_lease_secs: redemption_lease_secs(crate::store::StoreTimeouts::default()),
            leeway_secs: crate::tokens::jwt::DEFAULT_LEEWAY_SECS,
            platform_name: "Google".to_owned(),
            redirect_bases: vec![
                crate::redirect_uri::DEFAULT_REDIRECT_BASE.to_owned(),
                crate::redirect_uri::DEFAULT_REDIRECT_SANDBOX_BASE.to_owned(),
            ],
            signin_attempts_per_account: 10,
            signin_attempts_per_address: 100,
            signin_max_delay_secs: 5,
            client_auth_attempts: 50,
            unknown_client_attempts_per_source: 50,
            throttle_window_secs: 900,
            trusted_proxies: Vec::new(),
            devicegraph_scope_base: None,
            devicegraph_base_url: None,
            assertion_audiences: vec![
                crate::service_accounts::WELL_KNOWN_TOKEN_AUDIENCE.to_owned(),
            ],
        }
    }
}

/// The lease of a code-redemption attempt for stores bounded by `timeouts`: its three store
/// calls (take the code, record the link, finish) and a second for everything else.
pub fn redemption_lease_secs(timeouts: crate::store::StoreTimeouts) -> i64 {
    let calls = timeouts.response.saturating_mul(3).as_secs_f64().ceil();
    // At most 3 × 60 s by the configuration's bounds, so the conversion is exact.
    #[allow(clippy::cast_possible_truncation)]
    let seconds = calls as i64;
    seconds + 1
}

/// Shared application state.
pub struct App {
    /// The configured backend.
    pub store: SharedStore,
    /// The signing and verification keys, swapped atomically on reload.
    pub keyring: Arc<KeyringHandle>,
    /// The source of "now" for every expiry decision.
    pub clock: SharedClock,
    /// The source of the random values requests make: ids, tokens, session secrets.
    pub random: crate::secrets::SharedRandomness,
    /// The issuer identifier: an `https` URL without query or fragment, no trailing slash.
    pub issuer: String,
    /// Protocol policy.
    pub oauth: OAuthSettings,
    /// The HTTPS client of calls to fulfilments and external device graphs.
    pub outbound: crate::outbound::OutboundClient,
    /// The OpenID Connect relying party of every upstream provider (discovery and keys
    /// cached per issuer).
    pub oidc: crate::identity::oidc::OidcClient,
    /// The hand-off integrators' key sets fetched from their `--jwks-url`, per URL.
    pub handoff_keys:
        crate::identity::key_sets::KeySetCache<Vec<crate::identity::handoff::AssertionKey>>,
    /// Throttling blocks this instance has seen, so that a correct client secret costs no
    /// store call.
    pub throttle_blocks: crate::throttle::LocalBlocks,
    /// Set once shutdown begins, so that readiness fails while requests drain.
    draining: AtomicBool,
    /// Whether the store answered the last health probe; reported, never a readiness
    /// condition.
    store_up: AtomicBool,
    /// Whether the store has answered since this instance started. Until it has, nothing
    /// can be served, and the instance is not ready (a Redis started after linkd); once it
    /// has, an outage is everyone's and leaves readiness alone.
    store_answered: AtomicBool,
    /// Wakes the unlink worker, which assembly starts, when an unlink queued an event.
    unlink_queued: Notify,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("store", &self.store.backend_name())
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl App {
    /// The device-graph scope service accounts need.
    pub fn devicegraph_scope(&self) -> String {
        crate::service_accounts::devicegraph_scope(
            self.oauth
                .devicegraph_scope_base
                .as_deref()
                .unwrap_or(&self.issuer),
        )
    }

    /// Revokes a grant for good — its access tokens are refused wherever and whenever they
    /// were signed — and deletes its refresh tokens. It leaves the link and consent alone:
    /// to end a grant as Unlink does, use [`crate::grants::unlink`] (or
    /// [`App::unlink_grant`]), or the account page finishes the job when it next lists the
    /// link.
    pub async fn revoke_grant(&self, grant_id: &str) -> crate::store::StoreResult<()> {
        self.store.revoke_grant(grant_id).await?;
        self.store.delete_grant_refresh_tokens(grant_id).await?;
        Ok(())
    }

    /// Ends a user's grant as Unlink does ([`crate::grants::unlink`]) and, when a link was
    /// removed, has the device graph forget the user at once rather than on the unlink
    /// worker's next pass.
    pub async fn unlink_grant(
        &self,
        user_id: &str,
        client_id: &str,
        grant_id: &str,
    ) -> crate::store::StoreResult<bool> {
        let now = self.clock.now();
        let removed =
            crate::grants::unlink(&*self.store, user_id, client_id, grant_id, now).await?;
        if removed {
            self.unlink_queued.notify_one();
        }
        Ok(removed)
    }

    /// Completes when an unlink queued an event since the last time it completed.
    pub async fn unlink_queued(&self) {
        self.unlink_queued.notified().await;
    }

    /// Verifies an access token of linkd for `audience` (any of linkd's audiences when `None`)
    /// and checks it has not been revoked: the Bearer check ([`crate::tokens::bearer`]).
    pub async fn check_access_token(
        &self,
        token: &str,
        audience: Option<&str>,
    ) -> Result<crate::grants::AccessClaims, crate::tokens::bearer::BearerFailure> {
        let expectations = crate::tokens::Expectations {
            now: self.clock.now(),
            leeway: self.oauth.leeway_secs,
            issuer: Some(&self.issuer),
            audience,
        };
        crate::tokens::bearer::check_access_token(&self.keyring, &*self.store, token, &expectations)
            .await
    }

    /// The device-graph API's base URL.
    pub fn devicegraph_base_url(&self) -> &str {
        self.oauth
            .devicegraph_base_url
            .as_deref()
            .unwrap_or(&self.issuer)
    }

    /// The `aud` of the access tokens linkd issues for the device-graph API: its versioned
    /// root, distinct from the issuer (the audience of users' tokens) even when the API
    /// shares the issuer's URL.
    pub fn devicegraph_audience(&self) -> String {
        format!("{}/v1", self.devicegraph_base_url())
    }

    /// Assembles the state.
    pub fn new(
        store: SharedStore,
        keyring: Arc<KeyringHandle>,
        clock: SharedClock,
        issuer: String,
        oauth: OAuthSettings,
    ) -> Self {
        Self {
            store,
            keyring,
            clock,
            random: Arc::new(crate::secrets::SystemRandomness),
            issuer: issuer.trim_end_matches('/').to_owned(),
            oauth,
            outbound: crate::outbound::OutboundClient::new(&[]),
            oidc: crate::identity::oidc::OidcClient::new(crate::outbound::OutboundClient::new(&[])),
            handoff_keys: crate::identity::key_sets::KeySetCache::new(
                crate::identity::handoff::JWKS_TIME_TO_LIVE,
                crate::identity::key_sets::JWKS_REFETCH_INTERVAL,
            ),
            throttle_blocks: crate::throttle::LocalBlocks::default(),
            draining: AtomicBool::new(false),
            store_up: AtomicBool::new(true),
            store_answered: AtomicBool::new(true),
            unlink_queued: Notify::new(),
        }
    }

    /// The same state drawing its random values from `random` (tests make them repeatable).
    pub fn with_randomness(mut self, random: crate::secrets::SharedRandomness) -> Self {
        self.random = random;
        self
    }

    /// The absolute URL of a path served by this issuer.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// Marks the instance as draining: readiness fails from now on.
    pub fn begin_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether shutdown has begun.
    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::SeqCst)
    }

    /// Records whether the store answered the latest health probe.
    pub fn set_store_up(&self, up: bool) {
        self.store_up.store(up, Ordering::SeqCst);
        if up {
            self.store_answered.store(true, Ordering::SeqCst);
        }
        crate::metrics::record_store_up(up);
    }

    /// Marks the store as not yet answered: it could not be reached when this instance
    /// started.
    pub fn store_not_yet_answered(&self) {
        self.store_answered.store(false, Ordering::SeqCst);
        self.set_store_up(false);
    }

    /// Whether the store has answered since this instance started.
    pub fn has_store_answered(&self) -> bool {
        self.store_answered.load(Ordering::SeqCst)
    }

    /// Whether the store answered the latest health probe (true until one fails).
    pub fn is_store_up(&self) -> bool {
        self.store_up.load(Ordering::SeqCst)
    }
}
