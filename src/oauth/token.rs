//! The token endpoint (RFC 6749 §4.1.3 code exchange, §6 refresh; the interface's "Token
//! exchange endpoint").
//!
//! | step | where |
//! |---|---|
//! | form body only, no repeated parameter, no secret in the query (§3.2, §2.3.1) | [`token`] |
//! | client authentication, Basic or body, never both (§2.3.1), throttled | [`authenticate_client`] |
//! | code: signature, type, expiry, audience, redirect URI, PKCE, then single use | [`exchange_code`] |
//! | refresh: digest lookup with the grant's revocation state, client binding, scope | [`refresh`] |
//! | failures to the wire, in one place | [`TokenError::response`] |
//!
//! Every failure answers `400 {"error":"invalid_grant"}` by default, because that is what
//! the platform expects; a client may opt into RFC 6749 §5.2 codes. A store that cannot
//! answer is a 503 `temporarily_unavailable`, never `invalid_grant`: the platform unlinks a
//! user on `invalid_grant`.

use bytes::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::clients;
use crate::grants::{self, AccessClaims, CodeClaims};
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::client_auth::{self, AuthMethod, CredentialsError};
use crate::oauth::params::Params;
use crate::oauth::pkce;
use crate::secrets;
use crate::store::{
    ClientRecord, CodeRedemption, LinkRecord, RedemptionFinish, RedemptionStart,
    RefreshTokenRecord, StoreError,
};
use crate::throttle;
use crate::tokens::{Expectations, TokenKind};

/// Path of this endpoint.
pub const PATH: &str = "/token";

/// Why a token request failed. Descriptions are fixed ASCII texts: nothing from the request
/// is echoed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Too many failed client authentications: try again after the window.
    Throttled(u64),
    /// The store could not answer.
    Unavailable,
    /// Another attempt at the same code may still be running: retry after that many
    /// seconds.
    Busy(i64),
}

impl From<StoreError> for TokenError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed at the token endpoint");
        crate::metrics::record_store_error("token");
        Self::Unavailable
    }
}

/// A JSON response with the caching headers RFC 6749 §5.1 requires of every token response
/// (which every JSON answer of linkd's carries).
pub fn token_json(status: StatusCode, value: &serde_json::Value) -> HttpResponse {
    response::json(status, value)
}

impl TokenError {
    /// The wire form: the platform's uniform `invalid_grant` unless the client chose
    /// `rfc6749_errors`. A 401 always challenges with `Basic`, the scheme linkd accepts.
    pub fn response(self, rfc6749_errors: bool) -> HttpResponse {
        let (status, code, description) = match (self, rfc6749_errors) {
            (Self::Unavailable, _) => return unavailable(5),
            (Self::Busy(retry_after), _) => return unavailable(retry_after),
            (Self::Throttled(retry_after), _) => {
                let mut answer = token_json(
                    StatusCode::TOO_MANY_REQUESTS,
                    &serde_json::json!({
                        "error": "invalid_client",
                        "error_description": "too many failed client authentications; retry later",
                    }),
                );
                answer.headers_mut().insert(
                    hyper::header::RETRY_AFTER,
                    HeaderValue::from(u32::try_from(retry_after).unwrap_or(u32::MAX)),
                );
                return answer;
            }
            (Self::InvalidClient, true) => {
                let mut answer = token_json(
                    StatusCode::UNAUTHORIZED,
                    &serde_json::json!({
                        "error": "invalid_client",
                        "error_description": "client authentication failed",
                    }),
                );
                answer.headers_mut().insert(
                    hyper::header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Basic realm=\"linkd\""),
                );
                return answer;
            }
            (Self::InvalidClient, false) => (
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "client authentication failed",
            ),
            (Self::InvalidRequest(description), true) => {
                (StatusCode::BAD_REQUEST, "invalid_request", description)
            }
            (Self::InvalidGrant(description) | Self::InvalidRequest(description), _) => {
                (StatusCode::BAD_REQUEST, "invalid_grant", description)
            }
            (Self::UnsupportedGrantType, true) => (
                StatusCode::BAD_REQUEST,
                "unsupported_grant_type",
                "grant_type must be authorization_code or refresh_token",
            ),
            (Self::UnsupportedGrantType, false) => (
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "grant_type must be authorization_code or refresh_token",
            ),
            (Self::InvalidScope, true) => (
                StatusCode::BAD_REQUEST,
                "invalid_scope",
                "scope exceeds the grant",
            ),
            (Self::InvalidScope, false) => (
                StatusCode::BAD_REQUEST,
                "invalid_grant",
                "scope exceeds the grant",
            ),
        };
        token_json(
            status,
            &serde_json::json!({ "error": code, "error_description": description }),
        )
    }
}

/// 503 `temporarily_unavailable` with `Retry-After`: the request may succeed when retried.
fn unavailable(retry_after_secs: i64) -> HttpResponse {
    let mut answer = token_json(
        StatusCode::SERVICE_UNAVAILABLE,
        &serde_json::json!({
            "error": "temporarily_unavailable",
            "error_description": "the service is briefly unavailable; retry",
        }),
    );
    answer.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        HeaderValue::from(u32::try_from(retry_after_secs.max(1)).unwrap_or(u32::MAX)),
    );
    answer
}

/// Reads a form-encoded token-style request: refuses other content types, repeated
/// parameters and a client secret in the query string.
pub(crate) fn read_form(request: &Request<Bytes>) -> Result<Params, TokenError> {
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

/// Authenticates the client of a token, revocation or introspection request coming from
/// `address`. The right secret is always accepted. Failed attempts are counted per (client,
/// source), and per source for unknown client ids; past the limit the source's wrong
/// secrets are answered 429 until the window passes, without touching the store (see
/// [`crate::throttle`]).
pub(crate) async fn authenticate_client(
    app: &App,
    request: &Request<Bytes>,
    form: &Params,
    address: std::net::IpAddr,
) -> Result<ClientRecord, TokenError> {
    let authorization = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok());
    let presented =
        client_auth::presented_credentials(authorization, form).map_err(|error| match error {
            CredentialsError::Conflicting => {
                TokenError::InvalidRequest("use exactly one client authentication method")
            }
            CredentialsError::Missing
            | CredentialsError::MalformedBasic
            | CredentialsError::Incomplete => TokenError::InvalidClient,
        })?;
    let source = throttle::source_of(address);
    let pair_key = throttle::client_source_key(&presented.client_id, &source);
    let source_key = throttle::client_auth_source_key(&source);
    let now = app.clock.now();
    let client = app.store.get_client(&presented.client_id).await?;
    let verified = clients::verify_secret(client.as_ref(), &presented.client_secret);
    // The right secret is never refused, whatever the source's failures: the platform calls
    // every integration from shared addresses, and anyone can make it call linkd's token
    // endpoint (a project of their own pointed at it), so a block on a source can also be a
    // block on the real client. Guessing is bounded by the secrets' entropy instead.
    if let Some(client) = client.as_ref().filter(|_| verified) {
        return Ok(client.clone());
    }
    if let Some(until) = app
        .throttle_blocks
        .blocked_until(&[&pair_key, &source_key], now)
    {
        return Err(TokenError::Throttled(
            u64::try_from(until.saturating_sub(now)).unwrap_or(1).max(1),
        ));
    }
    // Known clients count per source, so that a stranger's guesses never refuse the real
    // client; unknown ids count once per source, so inventing ids creates no new counters.
    let window = app.oauth.throttle_window_secs;
    let (key, limit) = if client.is_some() {
        (pair_key, app.oauth.client_auth_attempts)
    } else {
        (source_key, app.oauth.unknown_client_attempts_per_source)
    };
    let failures = app.store.hit(&key, window, now).await?;
    tracing::warn!(
        client_id = %presented.client_id,
        %source,
        known_client = client.is_some(),
        method = match presented.method { AuthMethod::Basic => "basic", AuthMethod::Post => "post" },
        "client authentication failed"
    );
    if failures >= limit {
        // This failure is answered as one; the source's next attempts are refused.
        let until = now + i64::try_from(window).unwrap_or(i64::MAX);
        app.throttle_blocks.block(key, until, now);
        tracing::warn!(client_id = %presented.client_id, %source, "client authentication throttled for this source");
        crate::metrics::record_throttled("client_auth");
    }
    Err(TokenError::InvalidClient)
}

/// The common start of revocation and introspection: a form request from an authenticated
/// client naming a `token`. Failures use RFC 6749 §5.2 codes; these endpoints are not part
/// of the platform's contract.
pub(crate) async fn client_token_request(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> Result<(ClientRecord, String), HttpResponse> {
    let form = read_form(request).map_err(|failure| failure.response(true))?;
    let client = authenticate_client(app, request, &form, client_address(app, request, context))
        .await
        .map_err(|failure| failure.response(true))?;
    let token = form
        .get("token")
        .ok_or_else(|| TokenError::InvalidRequest("token is required").response(true))?;
    Ok((client, token.to_owned()))
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

/// A short, non-reversible label of a grant id for logs.
pub(crate) fn grant_label(grant_id: &str) -> String {
    secrets::sha256_hex(grant_id.as_bytes())[..12].to_owned()
}

/// The JWT-bearer grant type (RFC 7523 §2.1).
pub const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// `POST /token`.
pub async fn token(app: &App, request: &Request<Bytes>, context: &RequestContext) -> HttpResponse {
    let form = match read_form(request) {
        Ok(form) => form,
        Err(failure) => return failure.response(false),
    };
    if form.get("grant_type") == Some(JWT_BEARER) {
        // Service accounts authenticate by the assertion itself, not client credentials;
        // their errors are RFC 6749 §5.2 codes with a useful description (RFC 7523 §3.1).
        return match jwt_bearer(app, &form).await {
            Ok(body) => token_json(StatusCode::OK, &body),
            Err(answer) => answer,
        };
    }
    let address = client_address(app, request, context);
    let client = match authenticate_client(app, request, &form, address).await {
        Ok(client) => client,
        Err(failure) => return failure.response(false),
    };
    let rfc6749_errors = client.settings.rfc6749_errors;
    let outcome = match form.get("grant_type") {
        Some("authorization_code") => exchange_code(app, &client, &form).await,
        Some("refresh_token") => refresh(app, &client, &form).await,
        None => Err(TokenError::InvalidRequest("grant_type is required")),
        Some(_) => Err(TokenError::UnsupportedGrantType),
    };
    match outcome {
        Ok(body) => token_json(StatusCode::OK, &body),
        Err(failure) => failure.response(rfc6749_errors),
    }
}

/// Signs an access token for `audience`: the issuer for a user's token, the device-graph
/// API for a service account's.
fn sign_access_token(
    app: &App,
    audience: &str,
    client_id: &str,
    sub: &str,
    scope: &str,
    grant_id: &str,
) -> Result<String, TokenError> {
    let claims = AccessClaims::issue(
        &app.issuer,
        client_id,
        sub,
        scope,
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

/// `grant_type=authorization_code`.
async fn exchange_code(
    app: &App,
    client: &ClientRecord,
    form: &Params,
) -> Result<serde_json::Value, TokenError> {
    let code = form
        .get("code")
        .ok_or(TokenError::InvalidRequest("code is required"))?;
    let now = app.clock.now();
    let invalid_code =
        || TokenError::InvalidGrant("the code is invalid, expired or not this client's");
    let claims: CodeClaims = app
        .keyring
        .load()
        .verify(
            code,
            TokenKind::AuthorizationCode,
            &Expectations {
                now,
                leeway: app.oauth.leeway_secs,
                issuer: Some(&app.issuer),
                audience: Some(&client.id),
            },
        )
        .map_err(|_| invalid_code())?;
    // The leeway above absorbs clock skew for `iat`; it must not lengthen the code's life
    // beyond the lifetime it was issued with (10 minutes at most).
    if now > claims.exp {
        return Err(invalid_code());
    }
    let redirect_uri = form.get("redirect_uri").ok_or(TokenError::InvalidGrant(
        "redirect_uri does not match the authorization request",
    ))?;
    if !secrets::constant_time_eq(
        secrets::sha256_hex(redirect_uri.as_bytes()).as_bytes(),
        claims.rdh.as_bytes(),
    ) {
        return Err(TokenError::InvalidGrant(
            "redirect_uri does not match the authorization request",
        ));
    }
    match (&claims.pkce, form.get("code_verifier")) {
        (Some(challenge), Some(verifier)) => {
            if !pkce::verify(verifier, challenge).unwrap_or(false) {
                return Err(TokenError::InvalidGrant("code_verifier does not match"));
            }
        }
        (Some(_), None) => return Err(TokenError::InvalidGrant("code_verifier is required")),
        (None, Some(_)) => {
            return Err(TokenError::InvalidGrant(
                "code_verifier sent for a request without code_challenge",
            ));
        }
        (None, None) => {}
    }
    // Everything else checked: now take the code for this attempt, atomically across
    // instances. Spending it is a second step, atomic with storing the refresh token, so
    // that a store fault in between leaves a code the client's retry can still redeem.
    let attempt = CodeRedemption {
        jti: claims.jti.clone(),
        grant_id: claims.gid.clone(),
        attempt: grants::new_id(),
        now,
        lease_until: now + app.oauth.redemption_lease_secs,
        expires_at: claims.exp + app.oauth.leeway_secs,
    };
    let begun = tokio::time::Instant::now();
    match app.store.begin_redemption(&attempt).await? {
        RedemptionStart::Started => {}
        RedemptionStart::InFlight { lease_until } => {
            // Another attempt of this client holds the code and may still issue tokens: it
            // may be the request this one retries. Neither is known to be a replay yet.
            tracing::info!(
                client_id = %client.id,
                grant = %grant_label(&claims.gid),
                "authorization code redemption already under way"
            );
            return Err(TokenError::Busy(lease_until.saturating_sub(now).max(1)));
        }
        RedemptionStart::Redeemed => {
            app.unlink_grant(&claims.sub, &client.id, &claims.gid)
                .await?;
            tracing::warn!(
                client_id = %client.id,
                grant = %grant_label(&claims.gid),
                "authorization code replayed: grant revoked"
            );
            return Err(TokenError::InvalidGrant("the code was already used"));
        }
    }
    let (refresh_token, stored) =
        grants::new_refresh_token(&claims.gid).map_err(|_| TokenError::Unavailable)?;
    let link = LinkRecord {
        grant_id: claims.gid.clone(),
        user_id: claims.sub.clone(),
        client_id: client.id.clone(),
        scope: claims.scope.clone(),
        created_at: now,
    };
    // The link is recorded first (idempotently), so that a grant that gains a refresh token
    // is always listed on the account page, where it can be unlinked.
    app.store.put_link(&link).await?;
    if app.clock.now() > attempt.lease_until {
        // Past its lease a retry may have taken the code over; finishing would then only
        // be refused, so give the retry its chance at once.
        return Err(TokenError::Unavailable);
    }
    // Signed before the code is spent: nothing may fail once it is.
    let access_token = sign_access_token(
        app,
        &app.issuer,
        &client.id,
        &claims.sub,
        &claims.scope,
        &claims.gid,
    )?;
    let finished = finish_redemption(
        app,
        &attempt,
        begun,
        &stored.digest,
        &RefreshTokenRecord {
            user_id: claims.sub.clone(),
            client_id: client.id.clone(),
            grant_id: claims.gid.clone(),
            scope: claims.scope.clone(),
            created_at: now,
        },
    )
    .await?;
    // From here on the code is spent: a 503 would turn the client's retry into a replay
    // that revokes the grant, so a store fault below is logged, never answered.
    match finished {
        RedemptionFinish::Issued => {
            match grants::withdrawn(&*app.store, &claims.sub, &claims.gid).await {
                // The user was removed, or the grant revoked, while the link was being made.
                Ok(true) => end_withdrawn_grant(app, &claims, &client.id).await,
                Ok(false) => {
                    // As the platform does after a link: ask the integration for the user's
                    // devices.
                    crate::devicegraph::fulfillment::SyncCaller::new(app)
                        .sync_in_background(client.clone(), link);
                }
                Err(error) => tracing::warn!(%error, "could not recheck a new grant"),
            }
        }
        // A replay of the code revoked the grant while this attempt held it. This attempt
        // holds the code, so it still gets its answer; tokens of a revoked grant are refused
        // wherever they are presented, as after any replay.
        RedemptionFinish::GrantRevoked => end_withdrawn_grant(app, &claims, &client.id).await,
        // A retry took the code over: it, not this attempt, issues the tokens.
        RedemptionFinish::Superseded => return Err(TokenError::Unavailable),
    }
    tracing::info!(client_id = %client.id, grant = %grant_label(&claims.gid), "code exchanged");
    Ok(serde_json::json!({
        "token_type": "Bearer",
        "access_token": access_token,
        "refresh_token": refresh_token,
        "expires_in": app.oauth.access_token_ttl_secs,
        "scope": claims.scope,
    }))
}

/// Finishes `attempt`, taken at `begun`, asking the store again after a failure until the
/// attempt's lease has passed: a failed call may still have spent the code (its answer was
/// lost, or it landed after linkd gave up on it), and answering 503 for a spent code would
/// turn the client's retry into a replay that revokes the grant. The store answers a repeat
/// as it answered the first call, and spends nothing past the lease, so a failure answered
/// after the lease leaves the code to the retry, unless the store stayed unreachable for the
/// whole lease after spending it.
async fn finish_redemption(
    app: &App,
    attempt: &CodeRedemption,
    begun: tokio::time::Instant,
    digest: &str,
    record: &RefreshTokenRecord,
) -> Result<RedemptionFinish, TokenError> {
    let lease = u64::try_from(attempt.lease_until.saturating_sub(attempt.now)).unwrap_or(0);
    // A little past the lease as the store measures it: it began when the store took the
    // code, before `begun`.
    let deadline = begun + std::time::Duration::from_secs(lease);
    loop {
        match app.store.finish_redemption(attempt, digest, record).await {
            Ok(finished) => return Ok(finished),
            Err(error) if tokio::time::Instant::now() >= deadline => return Err(error.into()),
            Err(error) => {
                tracing::warn!(%error, "could not finish a code redemption; asking again");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Ends a grant withdrawn while its code was being redeemed (its link, consent and an unlink
/// event). A store fault is only logged: the grant is revoked already, and the rest is
/// finished by the account page or by unlinking again.
async fn end_withdrawn_grant(app: &App, claims: &CodeClaims, client_id: &str) {
    if let Err(error) = app.unlink_grant(&claims.sub, client_id, &claims.gid).await {
        tracing::warn!(%error, grant = %grant_label(&claims.gid), "could not end a withdrawn grant");
    }
}

fn jwt_bearer_error(code: &str, description: &str) -> HttpResponse {
    token_json(
        StatusCode::BAD_REQUEST,
        &serde_json::json!({ "error": code, "error_description": description_safe(description) }),
    )
}

/// `description` in the characters RFC 6749 §5.2 allows in `error_description`
/// (%x20-21 / %x23-5B / %x5D-7E), any other becoming `?`: descriptions of the JWT-bearer
/// grant may quote what the caller sent.
fn description_safe(description: &str) -> String {
    description
        .chars()
        .map(|c| match c {
            ' '..='!' | '#'..='[' | ']'..='~' => c,
            _ => '?',
        })
        .collect()
}

/// `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`: a service account's signed
/// assertion for an access token carrying the device-graph scope.
async fn jwt_bearer(app: &App, form: &Params) -> Result<serde_json::Value, HttpResponse> {
    use crate::service_accounts::{self, AssertionError};
    let Some(assertion) = form.get("assertion") else {
        return Err(jwt_bearer_error("invalid_request", "assertion is required"));
    };
    // linkd's own URL, and what client libraries write whatever the key file says.
    let own = app.url(PATH);
    let audiences: Vec<&str> = std::iter::once(own.as_str())
        .chain(app.oauth.assertion_audiences.iter().map(String::as_str))
        .collect();
    let (account, claims) = service_accounts::verify_assertion(
        &*app.store,
        assertion,
        &audiences,
        app.clock.now(),
        app.oauth.leeway_secs,
    )
    .await
    .map_err(|error| match error {
        AssertionError::Unavailable => TokenError::Unavailable.response(true),
        other => jwt_bearer_error("invalid_grant", &other.to_string()),
    })?;
    // The scope comes in the assertion (as client libraries send it) or as a parameter.
    let requested = form
        .get("scope")
        .or_else(|| claims["scope"].as_str())
        .unwrap_or_default();
    let scopes: Vec<&str> = requested.split(' ').filter(|s| !s.is_empty()).collect();
    if scopes.is_empty() {
        return Err(jwt_bearer_error("invalid_scope", "a scope is required"));
    }
    if let Some(unknown) = scopes
        .iter()
        .find(|scope| !account.scopes.iter().any(|allowed| allowed == *scope))
    {
        return Err(jwt_bearer_error(
            "invalid_scope",
            &format!("scope {unknown} is not allowed for this service account"),
        ));
    }
    let scope = scopes.join(" ");
    let grant = format!("sa-{}", account.unique_id);
    let access_token = sign_access_token(
        app,
        &app.devicegraph_audience(),
        &account.client_id,
        &account.email,
        &scope,
        &grant,
    )
    .map_err(|failure| failure.response(true))?;
    tracing::info!(service_account = %account.email, "service-account access token issued");
    Ok(serde_json::json!({
        "token_type": "Bearer",
        "access_token": access_token,
        "expires_in": app.oauth.access_token_ttl_secs,
        "scope": scope,
    }))
}

/// `grant_type=refresh_token`.
async fn refresh(
    app: &App,
    client: &ClientRecord,
    form: &Params,
) -> Result<serde_json::Value, TokenError> {
    let presented = form
        .get("refresh_token")
        .ok_or(TokenError::InvalidRequest("refresh_token is required"))?;
    let invalid =
        TokenError::InvalidGrant("the refresh token is invalid, revoked or not this client's");
    let parsed = grants::parse_refresh_token(presented).ok_or(invalid)?;
    let lookup = app
        .store
        .get_refresh_token(&parsed.grant_id, &parsed.digest)
        .await?
        .ok_or(invalid)?;
    if lookup.grant_revoked || lookup.record.client_id != client.id {
        return Err(invalid);
    }
    let scope = match form.get("scope") {
        None => lookup.record.scope.clone(),
        Some(requested) if grants::scope_is_subset(requested, &lookup.record.scope) => requested
            .split(' ')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
        Some(_) => return Err(TokenError::InvalidScope),
    };
    let access_token = sign_access_token(
        app,
        &app.issuer,
        &client.id,
        &lookup.record.user_id,
        &scope,
        &lookup.record.grant_id,
    )?;
    Ok(serde_json::json!({
        "token_type": "Bearer",
        "access_token": access_token,
        "expires_in": app.oauth.access_token_ttl_secs,
        "scope": scope,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_descriptions_keep_to_the_allowed_characters() {
        assert_eq!(
            description_safe("scope a\"b\\c\u{e9}\td is not allowed"),
            "scope a?b?c??d is not allowed"
        );
        assert_eq!(
            description_safe("aud must be https://x/token"),
            "aud must be https://x/token"
        );
    }

    fn parts(answer: &HttpResponse) -> (u16, serde_json::Value, Option<String>) {
        let body = http_body_util::BodyExt::collect(answer.body().clone());
        let bytes = futures_lite_block_on(body);
        (
            answer.status().as_u16(),
            serde_json::from_slice(&bytes).unwrap(),
            answer
                .headers()
                .get(hyper::header::WWW_AUTHENTICATE)
                .map(|v| v.to_str().unwrap().to_owned()),
        )
    }

    fn futures_lite_block_on(
        body: http_body_util::combinators::Collect<http_body_util::Full<Bytes>>,
    ) -> Bytes {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(body)
            .unwrap()
            .to_bytes()
    }

    #[test]
    fn every_failure_is_invalid_grant_by_default() {
        for failure in [
            TokenError::InvalidClient,
            TokenError::InvalidRequest("x"),
            TokenError::InvalidGrant("x"),
            TokenError::UnsupportedGrantType,
            TokenError::InvalidScope,
        ] {
            let answer = failure.response(false);
            let (status, body, challenge) = parts(&answer);
            assert_eq!(status, 400, "{failure:?}");
            assert_eq!(body["error"], "invalid_grant", "{failure:?}");
            assert_eq!(challenge, None);
            assert_eq!(answer.headers()["cache-control"], "no-store");
            assert_eq!(answer.headers()["pragma"], "no-cache");
        }
    }

    #[test]
    fn rfc6749_mode_uses_the_specific_codes() {
        let cases = [
            (TokenError::InvalidClient, 401, "invalid_client"),
            (TokenError::InvalidRequest("x"), 400, "invalid_request"),
            (TokenError::InvalidGrant("x"), 400, "invalid_grant"),
            (
                TokenError::UnsupportedGrantType,
                400,
                "unsupported_grant_type",
            ),
            (TokenError::InvalidScope, 400, "invalid_scope"),
        ];
        for (failure, status, code) in cases {
            let (got_status, body, challenge) = parts(&failure.response(true));
            assert_eq!((got_status, body["error"].as_str()), (status, Some(code)));
            assert_eq!(challenge.is_some(), status == 401, "{failure:?}");
        }
    }

    #[test]
    fn infrastructure_failures_are_never_invalid_grant() {
        for mode in [false, true] {
            let answer = TokenError::Unavailable.response(mode);
            let (status, body, _) = parts(&answer);
            assert_eq!(status, 503);
            assert_eq!(body["error"], "temporarily_unavailable");
            assert!(answer.headers().contains_key("retry-after"));
            let throttled = TokenError::Throttled(60).response(mode);
            assert_eq!(throttled.status().as_u16(), 429);
            assert_eq!(throttled.headers()["retry-after"], "60");
        }
    }

    #[test]
    fn descriptions_use_only_allowed_characters() {
        for failure in [
            TokenError::InvalidGrant("the code is invalid, expired or not this client's"),
            TokenError::InvalidRequest("a parameter is repeated or the body is malformed"),
        ] {
            let (_, body, _) = parts(&failure.response(false));
            let description = body["error_description"].as_str().unwrap();
            assert!(
                description
                    .bytes()
                    .all(|b| matches!(b, 0x20..=0x21 | 0x23..=0x5B | 0x5D..=0x7E)),
                "{description}"
            );
        }
    }
}
