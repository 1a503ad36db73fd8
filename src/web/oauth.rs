//! The OAuth JSON endpoints over HTTP: token (RFC 6749 §5), revocation (RFC 7009),
//! introspection (RFC 7662), userinfo with its Bearer challenges (RFC 6750 §3), and
//! discovery. Each handler reads what the protocol core needs from the request, calls it,
//! and turns its outcome or error into the response here, in one place per error type.

use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, WWW_AUTHENTICATE};
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::error::{Refusal, TokenError};
use crate::oauth::params::Params;
use crate::oauth::{client_auth, grant, introspect, metadata, revoke, userinfo};
use crate::store::ClientRecord;
use crate::tokens::bearer::{self, BearerFailure};

/// `POST /token`.
pub async fn token(app: &App, request: &Request<Bytes>, context: &RequestContext) -> HttpResponse {
    let form = match read_form(request) {
        Ok(form) => form,
        Err(error) => return refusal_response(Refusal::uniform(error)),
    };
    let address = client_address(app, request, context);
    let grant_type = crate::metrics::grant_type_label(form.get("grant_type"));
    match grant::token(app, &form, authorization(request), address).await {
        Ok(issued) => {
            crate::metrics::record_token_request(grant_type, "issued", "none");
            response::json(StatusCode::OK, &serde_json::json!(issued))
        }
        Err(refusal) => {
            let result = refusal_result(&refusal.error);
            let answer = refusal_response(refusal);
            crate::metrics::record_token_request(grant_type, result, sent_error(&answer).await);
            answer
        }
    }
}

/// The `result` label of a refused token request: why, from a fixed set.
fn refusal_result(error: &TokenError) -> &'static str {
    match error {
        TokenError::InvalidClient => "invalid_client",
        TokenError::InvalidRequest(_) => "invalid_request",
        TokenError::InvalidGrant(_) => "invalid_grant",
        TokenError::UnsupportedGrantType => "unsupported_grant_type",
        TokenError::InvalidScope => "invalid_scope",
        TokenError::Throttled(_) => "throttled",
        TokenError::Unavailable => "unavailable",
        TokenError::Busy(_) => "busy",
        TokenError::Assertion { .. } => "assertion_refused",
    }
}

/// The OAuth error code `answer` sends, from the fixed set linkd sends; `other` for none.
/// Read from the answer itself, so that the label is what the client saw.
async fn sent_error(answer: &HttpResponse) -> &'static str {
    const SENT: [&str; 6] = [
        "invalid_grant",
        "invalid_client",
        "invalid_request",
        "invalid_scope",
        "unsupported_grant_type",
        "temporarily_unavailable",
    ];
    let Ok(body) = http_body_util::BodyExt::collect(answer.body().clone()).await;
    serde_json::from_slice::<serde_json::Value>(&body.to_bytes())
        .ok()
        .and_then(|body| {
            let error = body.get("error")?.as_str()?.to_owned();
            SENT.into_iter().find(|known| *known == error)
        })
        .unwrap_or("other")
}

/// `POST /revoke`: 200 with an empty object for any token the client may name.
pub async fn revoke(app: &App, request: &Request<Bytes>, context: &RequestContext) -> HttpResponse {
    let answer = async {
        let (client, token) = client_token_request(app, request, context).await?;
        revoke::revoke(app, &client, &token).await
    };
    match answer.await {
        Ok(()) => response::json(StatusCode::OK, &serde_json::json!({})),
        Err(error) => refusal_response(Refusal::rfc6749(error)),
    }
}

/// `POST /introspect`.
pub async fn introspect(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> HttpResponse {
    let answer = async {
        let (client, token) = client_token_request(app, request, context).await?;
        introspect::introspect(app, &client, &token).await
    };
    match answer.await {
        Ok(body) => response::json(StatusCode::OK, &body),
        Err(error) => refusal_response(Refusal::rfc6749(error)),
    }
}

/// `GET` or `POST /userinfo`: the access token in the `Authorization` header only.
pub async fn userinfo(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    if token_outside_the_header(request) {
        return bearer_refusal(BearerFailure::InvalidRequest(
            "send the access token in the Authorization header only",
        ));
    }
    let Some(token) = bearer::bearer_token(authorization(request)) else {
        return bearer_refusal(BearerFailure::Missing);
    };
    match userinfo::userinfo(app, token).await {
        Ok(claims) => response::json(StatusCode::OK, &serde_json::Value::Object(claims)),
        Err(failure) => bearer_refusal(failure),
    }
}

/// `GET /.well-known/jwks.json`.
pub fn jwks(app: &App) -> HttpResponse {
    response::cacheable_json(metadata::jwks(app), metadata::CACHE_SECONDS)
}

/// `GET /.well-known/oauth-authorization-server`, naming `endpoints`.
pub async fn discovery(
    app: &App,
    endpoints: impl Iterator<Item = (&'static str, &'static str)>,
) -> HttpResponse {
    match metadata::discovery(app, endpoints).await {
        Ok(document) => response::cacheable_json(
            serde_json::to_vec(&document).unwrap_or_default(),
            metadata::CACHE_SECONDS,
        ),
        Err(_) => response::service_unavailable("the service is briefly unavailable; retry", 5),
    }
}

/// The `Authorization` header's value, when it is text.
fn authorization(request: &Request<Bytes>) -> Option<&str> {
    request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
}

/// The address of the client behind `request`, through the trusted load balancers.
pub(crate) fn client_address(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> std::net::IpAddr {
    crate::http::client_address::client_address(
        request.headers(),
        context.remote_addr.ip(),
        &app.oauth.trusted_proxies,
    )
}

/// Reads a form-encoded token-style request: refuses other content types, repeated
/// parameters and a client secret in the query string (RFC 6749 §3.2, §2.3.1).
fn read_form(request: &Request<Bytes>) -> Result<Params, TokenError> {
    let form_encoded = request
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value.split(';').next().is_some_and(|media| {
                media
                    .trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !form_encoded {
        return Err(TokenError::InvalidRequest(
            "the body must be application/x-www-form-urlencoded",
        ));
    }
    let query = request.uri().query().unwrap_or_default();
    if Params::parse_reporting_repeats(query.as_bytes())
        .is_ok_and(|(params, _)| params.contains("client_secret"))
    {
        return Err(TokenError::InvalidRequest(
            "client credentials must not be sent in the query",
        ));
    }
    Params::parse(request.body())
        .map_err(|_| TokenError::InvalidRequest("a parameter is repeated or the body is malformed"))
}

/// The common start of revocation and introspection: a form request from an authenticated
/// client naming a `token`. These endpoints are not part of the platform's contract, so
/// their failures use RFC 6749 §5.2 codes.
async fn client_token_request(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> Result<(ClientRecord, String), TokenError> {
    let form = read_form(request)?;
    let address = client_address(app, request, context);
    let client = client_auth::authenticate(app, authorization(request), &form, address).await?;
    let token = form
        .get("token")
        .ok_or(TokenError::InvalidRequest("token is required"))?;
    Ok((client, token.to_owned()))
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

/// The wire form of a refused token-style request: the platform's uniform `invalid_grant`
/// unless the client chose RFC 6749 §5.2 codes. A 401 always challenges with `Basic`, the
/// scheme linkd accepts; a 429 and a 503 say when to retry.
pub fn refusal_response(refusal: Refusal) -> HttpResponse {
    let Refusal {
        error,
        rfc6749_errors,
    } = refusal;
    let (status, code, description) = match (error, rfc6749_errors) {
        (TokenError::Unavailable, _) => return unavailable(5),
        (TokenError::Busy(retry_after), _) => return unavailable(retry_after),
        (TokenError::Throttled(retry_after), _) => {
            let mut answer = response::error(
                StatusCode::TOO_MANY_REQUESTS,
                "invalid_client",
                "too many failed client authentications; retry later",
            );
            answer.headers_mut().insert(
                RETRY_AFTER,
                HeaderValue::from(u32::try_from(retry_after).unwrap_or(u32::MAX)),
            );
            return answer;
        }
        (TokenError::InvalidClient, true) => {
            let mut answer = response::error(
                StatusCode::UNAUTHORIZED,
                "invalid_client",
                "client authentication failed",
            );
            answer.headers_mut().insert(
                WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"linkd\""),
            );
            return answer;
        }
        (TokenError::Assertion { error, description }, _) => {
            return response::error(StatusCode::BAD_REQUEST, error, &description);
        }
        (TokenError::InvalidClient, false) => (
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "client authentication failed",
        ),
        (TokenError::InvalidRequest(description), true) => {
            (StatusCode::BAD_REQUEST, "invalid_request", description)
        }
        (TokenError::InvalidGrant(description) | TokenError::InvalidRequest(description), _) => {
            (StatusCode::BAD_REQUEST, "invalid_grant", description)
        }
        (TokenError::UnsupportedGrantType, true) => (
            StatusCode::BAD_REQUEST,
            "unsupported_grant_type",
            "grant_type must be authorization_code or refresh_token",
        ),
        (TokenError::UnsupportedGrantType, false) => (
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "grant_type must be authorization_code or refresh_token",
        ),
        (TokenError::InvalidScope, true) => (
            StatusCode::BAD_REQUEST,
            "invalid_scope",
            "scope exceeds the grant",
        ),
        (TokenError::InvalidScope, false) => (
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "scope exceeds the grant",
        ),
    };
    response::error(status, code, description)
}

/// 503 `temporarily_unavailable` with `Retry-After`: the request may succeed when retried.
fn unavailable(retry_after_secs: i64) -> HttpResponse {
    response::service_unavailable(
        "the service is briefly unavailable; retry",
        u32::try_from(retry_after_secs.max(1)).unwrap_or(u32::MAX),
    )
}

/// The wire form of a refused Bearer token, with the `WWW-Authenticate` challenge RFC 6750
/// §3 asks for. A store that cannot answer is a 503, never a 401: a 401 makes the platform
/// discard the link.
pub fn bearer_refusal(failure: BearerFailure) -> HttpResponse {
    let (status, challenge, code, description) = match failure {
        BearerFailure::Missing => (
            StatusCode::UNAUTHORIZED,
            "Bearer realm=\"linkd\"".to_owned(),
            "invalid_request",
            "a bearer token is required",
        ),
        BearerFailure::InvalidRequest(description) => (
            StatusCode::BAD_REQUEST,
            format!(
                "Bearer realm=\"linkd\", error=\"invalid_request\", error_description=\"{description}\""
            ),
            "invalid_request",
            description,
        ),
        BearerFailure::Invalid(description) => (
            StatusCode::UNAUTHORIZED,
            format!(
                "Bearer realm=\"linkd\", error=\"invalid_token\", error_description=\"{description}\""
            ),
            "invalid_token",
            description,
        ),
        BearerFailure::Unavailable => {
            return response::service_unavailable("the service is briefly unavailable; retry", 5);
        }
    };
    let mut answer = response::error(status, code, description);
    if let Ok(value) = HeaderValue::from_str(&challenge) {
        answer.headers_mut().insert(WWW_AUTHENTICATE, value);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(answer: &HttpResponse) -> (u16, serde_json::Value, Option<String>) {
        let body = http_body_util::BodyExt::collect(answer.body().clone());
        let bytes = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(body)
            .unwrap()
            .to_bytes();
        (
            answer.status().as_u16(),
            serde_json::from_slice(&bytes).unwrap(),
            answer
                .headers()
                .get(WWW_AUTHENTICATE)
                .map(|v| v.to_str().unwrap().to_owned()),
        )
    }

    fn every_token_error() -> Vec<TokenError> {
        vec![
            TokenError::InvalidClient,
            TokenError::InvalidRequest("x"),
            TokenError::InvalidGrant("x"),
            TokenError::UnsupportedGrantType,
            TokenError::InvalidScope,
            TokenError::Throttled(60),
            TokenError::Unavailable,
            TokenError::Busy(7),
            TokenError::Assertion {
                error: "invalid_scope",
                description: "scope x is not allowed".into(),
            },
        ]
    }

    /// Status, `error` and the retry or challenge header of each variant, in each form.
    #[test]
    fn every_token_error_has_its_wire_form() {
        for error in every_token_error() {
            for rfc6749 in [false, true] {
                let refusal = Refusal {
                    error: error.clone(),
                    rfc6749_errors: rfc6749,
                };
                let answer = refusal_response(refusal);
                let (status, body, challenge) = parts(&answer);
                let expected = match (&error, rfc6749) {
                    (TokenError::Throttled(_), _) => (429, "invalid_client"),
                    (TokenError::Unavailable | TokenError::Busy(_), _) => {
                        (503, "temporarily_unavailable")
                    }
                    (TokenError::Assertion { .. }, _) => (400, "invalid_scope"),
                    (_, false) => (400, "invalid_grant"),
                    (TokenError::InvalidClient, true) => (401, "invalid_client"),
                    (TokenError::InvalidRequest(_), true) => (400, "invalid_request"),
                    (TokenError::InvalidGrant(_), true) => (400, "invalid_grant"),
                    (TokenError::UnsupportedGrantType, true) => (400, "unsupported_grant_type"),
                    (TokenError::InvalidScope, true) => (400, "invalid_scope"),
                };
                assert_eq!(
                    (status, body["error"].as_str().unwrap()),
                    expected,
                    "{error:?}"
                );
                assert_eq!(challenge.is_some(), status == 401, "{error:?}");
                let retry_after = answer
                    .headers()
                    .get(RETRY_AFTER)
                    .map(|v| v.to_str().unwrap());
                match &error {
                    TokenError::Throttled(_) => assert_eq!(retry_after, Some("60")),
                    TokenError::Unavailable => assert_eq!(retry_after, Some("5")),
                    TokenError::Busy(_) => assert_eq!(retry_after, Some("7")),
                    _ => assert_eq!(retry_after, None, "{error:?}"),
                }
                assert_eq!(answer.headers()["cache-control"], "no-store");
                assert_eq!(answer.headers()["pragma"], "no-cache");
            }
        }
    }

    #[test]
    fn descriptions_use_only_allowed_characters() {
        for error in [
            TokenError::InvalidGrant("the code is invalid, expired or not this client's"),
            TokenError::InvalidRequest("a parameter is repeated or the body is malformed"),
        ] {
            let (_, body, _) = parts(&refusal_response(Refusal::uniform(error)));
            let description = body["error_description"].as_str().unwrap();
            assert!(
                description
                    .bytes()
                    .all(|b| matches!(b, 0x20..=0x21 | 0x23..=0x5B | 0x5D..=0x7E)),
                "{description}"
            );
        }
    }

    /// Each Bearer failure: its status and RFC 6750 challenge.
    #[test]
    fn every_bearer_failure_has_its_challenge() {
        let missing = bearer_refusal(BearerFailure::Missing);
        assert_eq!(missing.status(), 401);
        assert_eq!(
            missing.headers()[WWW_AUTHENTICATE],
            "Bearer realm=\"linkd\""
        );
        let invalid = bearer_refusal(BearerFailure::Invalid("the access token expired"));
        assert_eq!(invalid.status(), 401);
        assert_eq!(
            invalid.headers()[WWW_AUTHENTICATE],
            "Bearer realm=\"linkd\", error=\"invalid_token\", error_description=\"the access token expired\""
        );
        let request = bearer_refusal(BearerFailure::InvalidRequest("header only"));
        assert_eq!(request.status(), 400);
        assert!(
            request.headers()[WWW_AUTHENTICATE]
                .to_str()
                .unwrap()
                .contains("error=\"invalid_request\"")
        );
        let unavailable = bearer_refusal(BearerFailure::Unavailable);
        assert_eq!(unavailable.status(), 503);
        assert!(unavailable.headers().contains_key(RETRY_AFTER));
        assert!(!unavailable.headers().contains_key(WWW_AUTHENTICATE));
    }
}
