//! The Bearer check (RFC 6750) of every endpoint that takes linkd's access tokens — userinfo,
//! introspection, the device-graph API: the token of the `Authorization` header, verified
//! for signature, type, issuer, audience and expiry, and not revoked; and why it was refused,
//! in RFC 6750's wire form.

use hyper::StatusCode;
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};

use crate::grants::AccessClaims;
use crate::http::{HttpResponse, response};
use crate::store::{Store, StoreError};
use crate::tokens::keyring::KeyringHandle;
use crate::tokens::{Expectations, TokenError, TokenKind};

/// Why a bearer token was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BearerFailure {
    /// No bearer token in the `Authorization` header (RFC 6750 §3.1: no error code).
    Missing,
    /// Invalid, expired, revoked or of the wrong type.
    Invalid(&'static str),
    /// A token sent another way than the `Authorization` header (RFC 6750 §3.1
    /// `invalid_request`, 400).
    InvalidRequest(&'static str),
    /// The store could not answer.
    Unavailable,
}

impl From<StoreError> for BearerFailure {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed while checking an access token");
        crate::metrics::record_store_error("access_token");
        Self::Unavailable
    }
}

impl BearerFailure {
    /// The wire form, with the `WWW-Authenticate` challenge RFC 6750 §3 asks for.
    pub fn response(self) -> HttpResponse {
        let (status, challenge, body) = match self {
            Self::Missing => (
                StatusCode::UNAUTHORIZED,
                "Bearer realm=\"linkd\"".to_owned(),
                serde_json::json!({ "error": "invalid_request", "error_description": "a bearer token is required" }),
            ),
            Self::InvalidRequest(description) => (
                StatusCode::BAD_REQUEST,
                format!(
                    "Bearer realm=\"linkd\", error=\"invalid_request\", error_description=\"{description}\""
                ),
                serde_json::json!({ "error": "invalid_request", "error_description": description }),
            ),
            Self::Invalid(description) => (
                StatusCode::UNAUTHORIZED,
                format!(
                    "Bearer realm=\"linkd\", error=\"invalid_token\", error_description=\"{description}\""
                ),
                serde_json::json!({ "error": "invalid_token", "error_description": description }),
            ),
            Self::Unavailable => {
                return response::service_unavailable(
                    "the service is briefly unavailable; retry",
                    5,
                );
            }
        };
        let mut answer = response::json(status, &body);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            answer.headers_mut().insert(WWW_AUTHENTICATE, value);
        }
        answer
    }
}

/// The token of an `Authorization: Bearer` header among `headers`.
pub fn bearer_in(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Verifies an access token by `keyring` against `expectations` and checks in `store` that
/// it has not been revoked.
pub async fn check_access_token(
    keyring: &KeyringHandle,
    store: &dyn Store,
    token: &str,
    expectations: &Expectations<'_>,
) -> Result<AccessClaims, BearerFailure> {
    let claims: AccessClaims = keyring
        .load()
        .verify(token, TokenKind::AccessToken, expectations)
        .map_err(|error| {
            BearerFailure::Invalid(match error {
                TokenError::Expired => "the access token expired",
                TokenError::WrongType => "not an access token",
                TokenError::WrongAudience => "the access token is not for this endpoint",
                _ => "the access token is invalid",
            })
        })?;
    if store.is_access_revoked(&claims.gid, &claims.jti).await? {
        return Err(BearerFailure::Invalid("the access token was revoked"));
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_follow_rfc_6750() {
        let missing = BearerFailure::Missing.response();
        assert_eq!(missing.status(), 401);
        assert_eq!(
            missing.headers()[WWW_AUTHENTICATE],
            "Bearer realm=\"linkd\""
        );
        let invalid = BearerFailure::Invalid("the access token expired").response();
        assert_eq!(invalid.status(), 401);
        assert_eq!(
            invalid.headers()[WWW_AUTHENTICATE],
            "Bearer realm=\"linkd\", error=\"invalid_token\", error_description=\"the access token expired\""
        );
        let unavailable = BearerFailure::Unavailable.response();
        assert_eq!(unavailable.status(), 503);
        assert!(unavailable.headers().contains_key("retry-after"));
        assert!(!unavailable.headers().contains_key(WWW_AUTHENTICATE));
    }
}
