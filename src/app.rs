//! The state every endpoint shares: the store, the keyring, the clock and the issuer's
//! public identity. Built once by `serve` (or by a test) and handed to the router.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
    /// Clock skew tolerated between instances when checking token times, seconds.
    pub leeway_secs: i64,
    /// Name of the platform accounts are linked to, as the pages say it.
    pub platform_name: String,
    /// Bases of the platform's redirect URIs (`{base}/r/<project_id>`).
    pub redirect_bases: Vec<String>,
    /// Scopes a client may ask for; an absent `scope` means all of them.
    pub scopes_supported: Vec<String>,
    /// Failed sign-ins per account within the throttle window before sign-in is refused.
    pub signin_attempts_per_account: u64,
    /// Failed sign-ins per client address within the throttle window.
    pub signin_attempts_per_address: u64,
    /// Failed client authentications per client within the throttle window.
    pub client_auth_attempts: u64,
    /// Throttle window, seconds.
    pub throttle_window_secs: u64,
    /// Load balancers whose `X-Forwarded-For` names the client; empty: the TCP peer is.
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Base of the device-graph scope `{base}/auth/devicegraph`; `None` means the issuer.
    pub devicegraph_scope_base: Option<String>,
    /// Base URL of the device-graph API, the `aud` of self-signed service-account JWTs;
    /// `None` means the issuer.
    pub devicegraph_base_url: Option<String>,
}

impl Default for OAuthSettings {
    fn default() -> Self {
        Self {
            code_ttl_secs: 600,
            access_token_ttl_secs: 3600,
            session_ttl_secs: 8 * 3600,
            leeway_secs: crate::tokens::jwt::DEFAULT_LEEWAY_SECS,
            platform_name: "Google".to_owned(),
            redirect_bases: vec![
                crate::oauth::redirect::DEFAULT_REDIRECT_BASE.to_owned(),
                crate::oauth::redirect::DEFAULT_REDIRECT_SANDBOX_BASE.to_owned(),
            ],
            scopes_supported: vec![
                "email".to_owned(),
                "profile".to_owned(),
                "devices".to_owned(),
            ],
            signin_attempts_per_account: 10,
            signin_attempts_per_address: 100,
            client_auth_attempts: 50,
            throttle_window_secs: 900,
            trusted_proxies: Vec::new(),
            devicegraph_scope_base: None,
            devicegraph_base_url: None,
        }
    }
}

/// Shared application state.
pub struct App {
    /// The configured backend.
    pub store: SharedStore,
    /// The signing and verification keys, swapped atomically on reload.
    pub keyring: Arc<KeyringHandle>,
    /// The source of "now" for every expiry decision.
    pub clock: SharedClock,
    /// The issuer identifier: an `https` URL without query or fragment, no trailing slash.
    pub issuer: String,
    /// Protocol policy.
    pub oauth: OAuthSettings,
    /// The device graph unlinks are sent to: linkd's own unless configured otherwise.
    pub device_graph: Arc<crate::devicegraph::graph_client::DeviceGraphClient>,
    /// The HTTPS client of calls to fulfilments and external device graphs.
    pub outbound: crate::devicegraph::outbound::OutboundClient,
    /// Set once shutdown begins, so that readiness fails while requests drain.
    draining: AtomicBool,
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
    /// removed, has the device graph forget the user at once rather than on its next pass.
    pub async fn unlink_grant(
        self: &Arc<Self>,
        user_id: &str,
        client_id: &str,
        grant_id: &str,
    ) -> crate::store::StoreResult<bool> {
        let now = self.clock.now();
        let removed =
            crate::grants::unlink(&*self.store, user_id, client_id, grant_id, now).await?;
        if removed {
            crate::devicegraph::unlink::UnlinkWorker::new(self).handle_soon();
        }
        Ok(removed)
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
            issuer: issuer.trim_end_matches('/').to_owned(),
            oauth,
            device_graph: Arc::new(crate::devicegraph::graph_client::DeviceGraphClient::own()),
            outbound: crate::devicegraph::outbound::OutboundClient::new(&[]),
            draining: AtomicBool::new(false),
        }
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
}
