//! The userinfo endpoint (the interface's "Userinfo endpoint"; bearer usage by RFC 6750
//! §2.1 and §3): an access token in the `Authorization` header only, checked for signature,
//! type, issuer, expiry and revocation, answered with the user's claims that the token's
//! scope covers.
//!
//! A 401 makes the platform discard the link, so linkd answers 401 only when it knows the
//! token is bad; when the store cannot say whether it was revoked, it answers 503.

use bytes::Bytes;
use hyper::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::grants::AccessClaims;
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::params::Params;
use crate::store::StoreError;
use crate::tokens::{Expectations, TokenError, TokenKind};

/// Path of this endpoint.
pub const PATH: &str = "/userinfo";

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

/// The bearer token of the `Authorization` header, if that is what it holds.
pub fn bearer_token(request: &Request<Bytes>) -> Option<&str> {
    bearer_in(request.headers())
}

/// The token of an `Authorization: Bearer` header among `headers`.
pub fn bearer_in(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Verifies an access token of linkd for `audience` (any of linkd's audiences when `None`)
/// and checks it has not been revoked.
pub async fn check_access_token(
    app: &App,
    token: &str,
    audience: Option<&str>,
) -> Result<AccessClaims, BearerFailure> {
    let claims: AccessClaims = app
        .keyring
        .load()
        .verify(
            token,
            TokenKind::AccessToken,
            &Expectations {
                now: app.clock.now(),
                leeway: app.oauth.leeway_secs,
                issuer: Some(&app.issuer),
                audience,
            },
        )
        .map_err(|error| {
            BearerFailure::Invalid(match error {
                TokenError::Expired => "the access token expired",
                TokenError::WrongType => "not an access token",
                TokenError::WrongAudience => "the access token is not for this endpoint",
                _ => "the access token is invalid",
            })
        })?;
    if app
        .store
        .is_access_revoked(&claims.gid, &claims.jti)
        .await?
    {
        return Err(BearerFailure::Invalid("the access token was revoked"));
    }
    Ok(claims)
}

/// Whether an `access_token` parameter came in the query or a form body. linkd takes the
/// header only (the query method leaks tokens into logs, RFC 9700 §4.3.2); such a token is
/// refused outright rather than ignored, so that the client learns why, and so is a second
/// token beside the header.
fn token_outside_the_header(request: &Request<Bytes>) -> bool {
    let in_query = request.uri().query().is_some_and(|query| {
        Params::parse_reporting_repeats(query.as_bytes())
            .is_ok_and(|(params, _)| params.contains("access_token"))
    });
    let in_body = !request.body().is_empty()
        && Params::parse_reporting_repeats(request.body())
            .is_ok_and(|(params, _)| params.contains("access_token"));
    in_query || in_body
}

/// `GET` or `POST /userinfo`.
pub async fn userinfo(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    if token_outside_the_header(request) {
        return BearerFailure::InvalidRequest(
            "send the access token in the Authorization header only",
        )
        .response();
    }
    let Some(token) = bearer_token(request) else {
        return BearerFailure::Missing.response();
    };
    let claims = match check_access_token(app, token, Some(&app.issuer)).await {
        Ok(claims) => claims,
        Err(failure) => return failure.response(),
    };
    let user = match app.store.get_user(&claims.sub).await {
        Ok(Some(user)) => user,
        Ok(None) => return BearerFailure::Invalid("the account no longer exists").response(),
        Err(error) => return BearerFailure::from(error).response(),
    };
    response::json(
        StatusCode::OK,
        &serde_json::Value::Object(claims_for_scope(user, &claims.scope)),
    )
}

/// The claims of `user` that `scope` covers, as the consent page described them: `sub`
/// always, `email` with the `email` scope, the names and picture with `profile` (OpenID
/// Connect Core §5.4).
fn claims_for_scope(
    user: crate::store::UserRecord,
    scope: &str,
) -> serde_json::Map<String, serde_json::Value> {
    let granted = |wanted: &str| scope.split(' ').any(|scope| scope == wanted);
    let mut body = serde_json::Map::new();
    body.insert("sub".into(), user.id.into());
    if granted("email") {
        body.insert("email".into(), user.email.into());
    }
    if granted("profile") {
        for (claim, value) in [
            ("given_name", user.given_name),
            ("family_name", user.family_name),
            ("name", user.name),
            ("picture", user.picture),
        ] {
            if let Some(value) = value {
                body.insert(claim.into(), value.into());
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_follow_the_scope() {
        let user = crate::store::UserRecord {
            id: "u1".into(),
            email: "ada@example.com".into(),
            name: Some("Ada Lovelace".into()),
            given_name: Some("Ada".into()),
            family_name: None,
            picture: Some("https://example.com/ada.png".into()),
            password_hash: "h".into(),
            created_at: 0,
        };
        let keys = |scope: &str| {
            claims_for_scope(user.clone(), scope)
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(keys("devices"), ["sub"]);
        assert_eq!(keys("openid"), ["sub"]);
        assert_eq!(keys("openid email"), ["email", "sub"]);
        assert_eq!(keys("profile"), ["given_name", "name", "picture", "sub"]);
        assert_eq!(keys("emails profiles"), ["sub"]);
    }

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
