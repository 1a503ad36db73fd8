//! The userinfo endpoint (the interface's "Userinfo endpoint"; bearer usage by RFC 6750
//! §2.1 and §3): an access token in the `Authorization` header only, checked for signature,
//! type, issuer, expiry and revocation, answered with the user's claims that the token's
//! scope covers.
//!
//! A 401 makes the platform discard the link, so linkd answers 401 only when it knows the
//! token is bad; when the store cannot say whether it was revoked, it answers 503.

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::params::Params;
use crate::tokens::bearer::{BearerFailure, bearer_in};

/// Path of this endpoint.
pub const PATH: &str = "/userinfo";

/// The bearer token of the `Authorization` header, if that is what it holds.
pub fn bearer_token(request: &Request<Bytes>) -> Option<&str> {
    bearer_in(request.headers())
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
    let claims = match app.check_access_token(token, Some(&app.issuer)).await {
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
}
