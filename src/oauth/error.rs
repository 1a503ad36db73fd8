//! Why a request to the token, revocation or introspection endpoint failed, free of HTTP:
//! the web adapter decides the status, body and headers of each variant, in one place.

use crate::store::StoreError;

/// Why a token request failed. Descriptions are fixed ASCII texts: nothing from the request
/// is echoed, except in [`TokenError::Assertion`], whose text is made safe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenError {
    /// Client authentication failed.
    InvalidClient,
    /// The request is malformed.
    InvalidRequest(&'static str),
    /// The code or refresh token is invalid, expired, revoked or another client's.
    InvalidGrant(&'static str),
    /// A grant type linkd does not issue tokens for.
    UnsupportedGrantType,
    /// A scope beyond the grant.
    InvalidScope,
    /// Too many failed client authentications: try again after that many seconds.
    Throttled(u64),
    /// The store could not answer.
    Unavailable,
    /// Another attempt at the same code may still be running: retry after that many
    /// seconds.
    Busy(i64),
    /// A service account's assertion or scope was refused (RFC 7523 §3.1): always an
    /// RFC 6749 §5.2 code with a description of what was wrong.
    Assertion {
        /// `invalid_request`, `invalid_grant` or `invalid_scope`.
        error: &'static str,
        /// What was wrong, in the characters §5.2 allows.
        description: String,
    },
}

impl From<StoreError> for TokenError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed at the token endpoint");
        crate::metrics::record_store_error("token");
        Self::Unavailable
    }
}

/// A refused token request and the wire form its client chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What went wrong.
    pub error: TokenError,
    /// Whether to answer with RFC 6749 §5.2 codes rather than the uniform `invalid_grant`.
    pub rfc6749_errors: bool,
}

impl Refusal {
    /// A refusal in the platform's uniform form.
    pub fn uniform(error: TokenError) -> Self {
        Self {
            error,
            rfc6749_errors: false,
        }
    }

    /// A refusal with RFC 6749 §5.2 codes.
    pub fn rfc6749(error: TokenError) -> Self {
        Self {
            error,
            rfc6749_errors: true,
        }
    }
}
