//! The OpenID Connect relying party: discovery, the authorization URL, and redeeming the
//! provider's code into verified claims.
//!
//! This build has no OpenID Connect client: every call answers
//! [`OidcError::Unavailable`], which the sign-in flow shows as a 503 page.

use crate::identity::claims::ExternalClaims;

/// What linkd stores about an upstream OpenID provider.
#[derive(Debug)]
pub struct OidcProviderConfig<'a> {
    /// Exact issuer URL, discovery at `{issuer}/.well-known/openid-configuration`.
    pub issuer: &'a str,
    /// linkd's client id at the provider.
    pub client_id: &'a str,
    /// linkd's client secret at the provider; never logged.
    pub client_secret: &'a str,
    /// Scopes asked for; always includes `openid`.
    pub scopes: &'a [String],
}

/// Why the provider could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider did not answer or answered 5xx: the browser gets a 503 page.
    #[error("identity provider unavailable: {0}")]
    Unavailable(String),
    /// The provider answered but the answer is not acceptable: the browser gets a clear page.
    #[error("identity provider answer refused: {0}")]
    Rejected(String),
}

/// One per process: the client of every OpenID provider.
#[derive(Debug, Clone)]
pub struct OidcClient {
    _outbound: crate::outbound::OutboundClient,
}

impl OidcClient {
    /// A client making its calls through `outbound`.
    pub fn new(outbound: crate::outbound::OutboundClient) -> Self {
        Self {
            _outbound: outbound,
        }
    }

    /// The provider's authorization endpoint URL for one sign-in.
    pub async fn authorization_url(
        &self,
        provider: &OidcProviderConfig<'_>,
        _redirect_uri: &str,
        _state: &str,
        _nonce: &str,
        _code_challenge: &str,
    ) -> Result<String, OidcError> {
        Err(OidcError::Unavailable(format!(
            "no OpenID Connect client for {}",
            provider.issuer
        )))
    }

    /// Redeems `code` and verifies the `id_token`.
    pub async fn finish(
        &self,
        provider: &OidcProviderConfig<'_>,
        _redirect_uri: &str,
        _code: &str,
        _code_verifier: &str,
        _nonce: &str,
        _now: i64,
    ) -> Result<ExternalClaims, OidcError> {
        Err(OidcError::Unavailable(format!(
            "no OpenID Connect client for {}",
            provider.issuer
        )))
    }
}
