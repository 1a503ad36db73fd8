//! The token endpoint's protocol core (RFC 6749 §4.1.3 code exchange, §6 refresh, RFC 7523
//! §2.1 JWT-bearer; the interface's "Token exchange endpoint"), free of HTTP: the web adapter
//! hands in the form and the `Authorization` header and turns the outcome into a response.
//!
//! | step | where |
//! |---|---|
//! | client authentication, Basic or body, never both (§2.3.1), throttled | [`client_auth::authenticate`] |
//! | the grant parsed into a [`Grant`], one variant per grant type | [`Grant::from_form`] |
//! | code: signature, type, expiry, audience, redirect URI, PKCE, then single use | [`code::redeem`] |
//! | refresh: digest lookup with the grant's revocation state, client binding, scope | [`refresh::refresh`] |
//! | a service account's assertion | [`jwt_bearer::issue`] |
//!
//! Every failure is a [`TokenError`]; whether it goes out as the platform's uniform
//! `invalid_grant` or as the RFC 6749 §5.2 code is the client's choice, carried by
//! [`Refusal`]. A store that cannot answer is `Unavailable`, never `invalid_grant`: the
//! platform unlinks a user on `invalid_grant`.

pub mod code;
pub mod jwt_bearer;
pub mod refresh;

use std::net::IpAddr;

use serde::Serialize;

use crate::app::App;
use crate::grants::{self, AccessClaims};
use crate::oauth::client_auth;
use crate::oauth::params::Params;
use crate::scope::Scope;
use crate::store::ClientRecord;
use crate::tokens::TokenKind;

pub use crate::oauth::error::{Refusal, TokenError};

/// Path of the token endpoint.
pub const PATH: &str = "/token";

/// The grant a client presents, one variant per grant type linkd issues tokens for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// `grant_type=authorization_code`.
    AuthorizationCode(CodeGrant),
    /// `grant_type=refresh_token`.
    RefreshToken(RefreshGrant),
    /// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`: a service account's
    /// assertion, which authenticates it; no client credentials take part.
    JwtBearer(AssertionGrant),
}

/// The parameters of the JWT-bearer grant, checked by [`jwt_bearer::issue`], whose errors
/// (unlike the other grants') describe what is wrong.
#[derive(Clone, PartialEq, Eq)]
pub struct AssertionGrant {
    /// The signed assertion.
    pub assertion: Option<String>,
    /// The `scope` parameter, when the assertion does not carry one.
    pub scope: Option<String>,
}

impl std::fmt::Debug for AssertionGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionGrant")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// The parameters of a code exchange.
#[derive(Clone, PartialEq, Eq)]
pub struct CodeGrant {
    /// The code, a JWT linkd signed.
    pub code: String,
    /// The redirect URI of the authorization request, which must match.
    pub redirect_uri: Option<String>,
    /// The PKCE verifier.
    pub code_verifier: Option<String>,
}

impl std::fmt::Debug for CodeGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeGrant")
            .field("redirect_uri", &self.redirect_uri)
            .finish_non_exhaustive()
    }
}

/// The parameters of a refresh.
#[derive(Clone, PartialEq, Eq)]
pub struct RefreshGrant {
    /// The refresh token as presented.
    pub refresh_token: String,
    /// A narrower scope, if asked for.
    pub scope: Option<Scope>,
}

impl std::fmt::Debug for RefreshGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefreshGrant")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The grant of a token request's form, or why there is none.
    pub fn from_form(form: &Params) -> Result<Self, TokenError> {
        match form.get("grant_type") {
            Some("authorization_code") => Ok(Self::AuthorizationCode(CodeGrant {
                code: form
                    .get("code")
                    .ok_or(TokenError::InvalidRequest("code is required"))?
                    .to_owned(),
                redirect_uri: form.get("redirect_uri").map(str::to_owned),
                code_verifier: form.get("code_verifier").map(str::to_owned),
            })),
            Some("refresh_token") => Ok(Self::RefreshToken(RefreshGrant {
                refresh_token: form
                    .get("refresh_token")
                    .ok_or(TokenError::InvalidRequest("refresh_token is required"))?
                    .to_owned(),
                scope: form
                    .get("scope")
                    .map(|scope| Scope::parse(scope).map_err(|_| TokenError::InvalidScope))
                    .transpose()?,
            })),
            Some(jwt_bearer::GRANT_TYPE) => Ok(Self::JwtBearer(AssertionGrant {
                assertion: form.get("assertion").map(str::to_owned),
                scope: form.get("scope").map(str::to_owned),
            })),
            None => Err(TokenError::InvalidRequest("grant_type is required")),
            Some(_) => Err(TokenError::UnsupportedGrantType),
        }
    }
}

/// A client's token request: who asks, for what.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    /// The authenticated client.
    pub client: ClientRecord,
    /// What it presents.
    pub grant: Grant,
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Clone, Serialize)]
pub struct Issued {
    /// Always `Bearer`.
    pub token_type: &'static str,
    /// The signed access token.
    pub access_token: String,
    /// A new refresh token, on a code exchange only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// Lifetime of the access token in seconds.
    pub expires_in: i64,
    /// The scope granted.
    pub scope: Scope,
}

impl std::fmt::Debug for Issued {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Issued")
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// `POST /token` with its `form` and `Authorization` header value, from `source`.
pub async fn token(
    app: &App,
    form: &Params,
    authorization: Option<&str>,
    source: IpAddr,
) -> Result<Issued, Refusal> {
    let grant = Grant::from_form(form);
    if let Ok(Grant::JwtBearer(assertion)) = &grant {
        // Service accounts authenticate by the assertion itself, not client credentials;
        // their errors are RFC 6749 §5.2 codes with a useful description (RFC 7523 §3.1).
        return jwt_bearer::issue(app, assertion)
            .await
            .map_err(Refusal::rfc6749);
    }
    // A client learns nothing about its request before it has authenticated, and is then
    // answered in the error form it chose.
    let client = client_auth::authenticate(app, authorization, form, source)
        .await
        .map_err(Refusal::uniform)?;
    let rfc6749_errors = client.settings.rfc6749_errors;
    let refused = |error| Refusal {
        error,
        rfc6749_errors,
    };
    let request = TokenRequest {
        grant: grant.map_err(refused)?,
        client,
    };
    match &request.grant {
        Grant::AuthorizationCode(grant) => code::redeem(app, &request.client, grant).await,
        Grant::RefreshToken(grant) => refresh::refresh(app, &request.client, grant).await,
        // Answered above, before client authentication.
        Grant::JwtBearer(_) => Err(TokenError::UnsupportedGrantType),
    }
    .map_err(refused)
}

/// Signs an access token for `audience`: the issuer for a user's token, the device-graph
/// API for a service account's.
pub(crate) fn sign_access_token(
    app: &App,
    audience: &str,
    client_id: &str,
    sub: &str,
    scope: &Scope,
    grant_id: &str,
) -> Result<String, TokenError> {
    let jti = grants::new_id(&*app.random).map_err(|_| TokenError::Unavailable)?;
    let claims = AccessClaims::issue(
        jti,
        &app.issuer,
        client_id,
        sub,
        scope.as_str(),
        grant_id,
        app.clock.now(),
        app.oauth.access_token_ttl_secs,
    )
    .with_audience(audience);
    app.keyring
        .load()
        .sign(TokenKind::AccessToken, &claims)
        .map_err(|error| {
            tracing::error!(%error, "cannot sign an access token");
            TokenError::Unavailable
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form(body: &str) -> Params {
        Params::parse(body.as_bytes()).unwrap()
    }

    #[test]
    fn grants_parse_into_their_variant() {
        assert_eq!(
            Grant::from_form(&form("grant_type=authorization_code&code=c&redirect_uri=r")),
            Ok(Grant::AuthorizationCode(CodeGrant {
                code: "c".into(),
                redirect_uri: Some("r".into()),
                code_verifier: None,
            }))
        );
        assert_eq!(
            Grant::from_form(&form(
                "grant_type=refresh_token&refresh_token=t&scope=email"
            )),
            Ok(Grant::RefreshToken(RefreshGrant {
                refresh_token: "t".into(),
                scope: Some(Scope::parse("email").unwrap()),
            }))
        );
    }

    #[test]
    fn malformed_grants_are_told_apart() {
        for (body, expected) in [
            ("", TokenError::InvalidRequest("grant_type is required")),
            ("grant_type=password", TokenError::UnsupportedGrantType),
            (
                "grant_type=client_credentials",
                TokenError::UnsupportedGrantType,
            ),
            (
                "grant_type=authorization_code",
                TokenError::InvalidRequest("code is required"),
            ),
            (
                "grant_type=refresh_token",
                TokenError::InvalidRequest("refresh_token is required"),
            ),
            (
                "grant_type=refresh_token&refresh_token=t&scope=%22quoted%22",
                TokenError::InvalidScope,
            ),
        ] {
            assert_eq!(Grant::from_form(&form(body)), Err(expected), "{body}");
        }
    }

    #[test]
    fn debug_output_hides_codes_and_tokens() {
        let code = Grant::from_form(&form("grant_type=authorization_code&code=secretcode"));
        assert!(!format!("{code:?}").contains("secretcode"));
        let refresh = Grant::from_form(&form("grant_type=refresh_token&refresh_token=secrettok"));
        assert!(!format!("{refresh:?}").contains("secrettok"));
    }
}
