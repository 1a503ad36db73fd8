//! The Bearer check (RFC 6750) of every endpoint that takes linkd's access tokens — userinfo,
//! introspection, the device-graph API: the token of the `Authorization` header, verified
//! for signature, type, issuer, audience and expiry, and not revoked; and why it was refused.
//! The web adapter gives each refusal RFC 6750's wire form.

use crate::grants::AccessClaims;
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

/// The token of an `Authorization: Bearer` header value.
pub fn bearer_token(authorization: Option<&str>) -> Option<&str> {
    let (scheme, token) = authorization?.trim().split_once(' ')?;
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
    fn only_a_bearer_scheme_with_a_token_counts() {
        assert_eq!(bearer_token(Some("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(Some("bearer   abc ")), Some("abc"));
        for other in ["Basic abc", "Bearer", "Bearer  ", "", "Bearerabc"] {
            assert_eq!(bearer_token(Some(other)), None, "{other:?}");
        }
        assert_eq!(bearer_token(None), None);
    }
}
