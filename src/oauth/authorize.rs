//! The authorization endpoint (RFC 6749 §4.1.1–4.1.2; the interface's "Authorization
//! endpoint") with its sign-in, consent and switch-account forms.
//!
//! | step | where |
//! |---|---|
//! | validate `client_id` and `redirect_uri` (exact match); on failure an error page, never a redirect (§4.1.2.1) | [`validate`] |
//! | other errors go back to the redirect URI with `error` and the untouched `state` | [`validate`] → [`AuthorizeError::Redirect`] |
//! | sign in when there is no session | [`authorize`] → sign-in page → [`sign_in`] |
//! | consent, remembered per user, client and scope | [`authorize`] → consent page → [`consent`] |
//! | issue a single-use code JWT and redirect with `code` and `state` (§4.1.2) | [`issue_code`] |
//!
//! The forms carry the original query string and every step validates it again from
//! scratch, so no authorization request is kept on the server between pages.

use bytes::Bytes;
use hyper::header::{HeaderValue, LOCATION, SET_COOKIE};
use hyper::{Method, Request, StatusCode};

use crate::app::App;
use crate::grants::{self, CodeClaims};
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::params::Params;
use crate::oauth::pkce;
use crate::pages::{self, Branding, ConsentPage, ErrorPage, PageLocale, SharedItem, SignInPage};
use crate::redirect_uri as redirect;
use crate::secrets;
use crate::sessions::{self, SESSION_COOKIE, SIGNIN_CSRF_COOKIE};
use crate::store::{ClientRecord, StoreError, UserRecord};
use crate::throttle;
use crate::tokens::TokenKind;
use crate::users;

/// Path of the authorization endpoint.
pub const PATH: &str = "/authorize";
/// Path the sign-in form posts to.
pub const SIGN_IN_PATH: &str = "/authorize/signin";
/// Path the consent form posts to.
pub const CONSENT_PATH: &str = "/authorize/consent";
/// Path the switch-account form posts to.
pub const SWITCH_PATH: &str = "/authorize/switch";

/// A validated authorization request.
#[derive(Debug, Clone)]
pub struct AuthorizationRequest {
    /// The client.
    pub client: ClientRecord,
    /// The exact redirect URI, one of the client's allowed ones.
    pub redirect_uri: String,
    /// The client's `state`, returned untouched.
    pub state: String,
    /// Requested scope, normalised (space-delimited, in request order).
    pub scope: String,
    /// PKCE S256 challenge.
    pub code_challenge: Option<String>,
    /// The platform's `user_locale`.
    pub user_locale: Option<String>,
    /// The request's parameters as received, carried by the forms.
    pub raw: String,
}

/// Why an authorization request cannot proceed, and how to say so.
#[derive(Debug)]
pub enum AuthorizeError {
    /// The client or redirect URI cannot be trusted: show an error page (400), never
    /// redirect.
    Page(&'static str),
    /// An error the client should see: redirect with `error` and `state`.
    Redirect {
        /// The validated redirect URI.
        redirect_uri: String,
        /// RFC 6749 §4.1.2.1 error code.
        error: &'static str,
        /// Human-readable description (ASCII, no secrets).
        description: &'static str,
        /// The request's `state`, when it had exactly one.
        state: Option<String>,
    },
    /// The store could not answer: 503 page.
    Unavailable,
}

impl From<StoreError> for AuthorizeError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed during authorization");
        crate::metrics::record_store_error("authorize");
        Self::Unavailable
    }
}

/// The redirect URIs `client` may use.
pub fn allowed_redirect_uris(app: &App, client: &ClientRecord) -> Vec<String> {
    redirect::allowed_redirect_uris(
        &app.oauth.redirect_bases,
        &client.project_id,
        &client.settings.extra_redirect_uris,
    )
}

/// Validates an authorization request given as `application/x-www-form-urlencoded`.
pub async fn validate(app: &App, raw: &str) -> Result<AuthorizationRequest, AuthorizeError> {
    let Ok((params, repeated)) = Params::parse_reporting_repeats(raw.as_bytes()) else {
        return Err(AuthorizeError::Page("The request is malformed."));
    };
    if repeated
        .iter()
        .any(|name| name == "client_id" || name == "redirect_uri")
    {
        return Err(AuthorizeError::Page(
            "The request names its client or redirect address more than once.",
        ));
    }
    let Some(client_id) = params.get("client_id") else {
        return Err(AuthorizeError::Page("The request does not name a client."));
    };
    let Some(client) = app.store.get_client(client_id).await? else {
        return Err(AuthorizeError::Page("The request names an unknown client."));
    };
    let Some(redirect_uri) = params.get("redirect_uri") else {
        return Err(AuthorizeError::Page("The request has no redirect address."));
    };
    if !redirect::is_allowed(redirect_uri, &allowed_redirect_uris(app, &client)) {
        return Err(AuthorizeError::Page(
            "The redirect address is not registered for this client.",
        ));
    }
    let state = (!repeated.iter().any(|name| name == "state"))
        .then(|| params.get("state").map(str::to_owned))
        .flatten();
    let redirect_error = |error, description| AuthorizeError::Redirect {
        redirect_uri: redirect_uri.to_owned(),
        error,
        description,
        state: state.clone(),
    };
    if !repeated.is_empty() {
        return Err(redirect_error("invalid_request", "a parameter is repeated"));
    }
    let Some(state) = state.clone() else {
        return Err(redirect_error("invalid_request", "state is required"));
    };
    match params.get("response_type") {
        None => {
            return Err(redirect_error(
                "invalid_request",
                "response_type is required",
            ));
        }
        Some("code") => {}
        Some(_) => {
            return Err(redirect_error(
                "unsupported_response_type",
                "only response_type=code is supported",
            ));
        }
    }
    // The integration's own scopes bound the request; without one it gets all of them
    // (RFC 6749 §3.3 lets the server apply a pre-defined default).
    let allowed = &client.settings.scopes;
    let mut scopes: Vec<&str> = Vec::new();
    for scope in params
        .get("scope")
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
    {
        if !allowed.allows(scope) {
            return Err(redirect_error(
                "invalid_scope",
                "a requested scope is not allowed for this client",
            ));
        }
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let scope = if scopes.is_empty() {
        allowed.joined()
    } else {
        scopes.join(" ")
    };
    let code_challenge = match (
        params.get("code_challenge"),
        params.get("code_challenge_method"),
    ) {
        (Some(challenge), method) => {
            if pkce::validate_challenge(challenge, method).is_err() {
                return Err(redirect_error(
                    "invalid_request",
                    "code_challenge must be S256 and 43 base64url characters",
                ));
            }
            Some(challenge.to_owned())
        }
        (None, Some(_)) => {
            return Err(redirect_error(
                "invalid_request",
                "code_challenge_method without code_challenge",
            ));
        }
        (None, None) if client.settings.pkce_required => {
            return Err(redirect_error(
                "invalid_request",
                "code_challenge is required",
            ));
        }
        (None, None) => None,
    };
    Ok(AuthorizationRequest {
        redirect_uri: redirect_uri.to_owned(),
        state,
        scope,
        code_challenge,
        user_locale: params.get("user_locale").map(str::to_owned),
        raw: raw.to_owned(),
        client,
    })
}

/// The integration as the pages show it.
pub fn branding(client: &ClientRecord) -> Branding {
    let settings = &client.settings;
    Branding {
        company: settings
            .company_name
            .clone()
            .unwrap_or_else(|| client.name.clone()),
        name: client.name.clone(),
        logo_url: settings.logo_url.clone(),
        privacy_policy_url: settings.privacy_policy_url.clone(),
        signup_url: settings.signup_url.clone(),
    }
}

fn locale_of(app: &App, request: &AuthorizationRequest) -> PageLocale {
    PageLocale::new(
        pages::locale_for(request.user_locale.as_deref()),
        &app.oauth.platform_name,
        &branding(&request.client).company,
    )
}

/// An error page (no redirect).
pub fn error_page(app: &App, status: StatusCode, message: &str) -> HttpResponse {
    let page = ErrorPage {
        locale: PageLocale::new(&pages::ENGLISH, &app.oauth.platform_name, ""),
        message: message.to_owned(),
    };
    pages::html(status, &page, None)
}

fn redirect_response(status: StatusCode, location: &str) -> HttpResponse {
    let mut answer = response::with_body(status, "text/plain; charset=utf-8", Bytes::new());
    if let Ok(value) = HeaderValue::from_str(location) {
        answer.headers_mut().insert(LOCATION, value);
    }
    answer
}

fn failure_response(app: &App, failure: AuthorizeError, after_post: bool) -> HttpResponse {
    match failure {
        AuthorizeError::Page(message) => error_page(app, StatusCode::BAD_REQUEST, message),
        AuthorizeError::Unavailable => {
            let mut page = error_page(
                app,
                StatusCode::SERVICE_UNAVAILABLE,
                "The service is briefly unavailable. Try again in a moment.",
            );
            page.headers_mut()
                .insert(hyper::header::RETRY_AFTER, HeaderValue::from(5u32));
            page
        }
        AuthorizeError::Redirect {
            redirect_uri,
            error,
            description,
            state,
        } => {
            let mut params = vec![("error", error), ("error_description", description)];
            if let Some(state) = state.as_deref() {
                params.push(("state", state));
            }
            let status = if after_post {
                StatusCode::SEE_OTHER
            } else {
                StatusCode::FOUND
            };
            redirect_response(status, &redirect::with_query(&redirect_uri, &params))
        }
    }
}

/// Signs a code for `user` and builds the redirect carrying it.
async fn issue_code(
    app: &App,
    request: &AuthorizationRequest,
    user: &UserRecord,
    status: StatusCode,
) -> HttpResponse {
    let now = app.clock.now();
    let claims = CodeClaims {
        iss: app.issuer.clone(),
        aud: request.client.id.clone(),
        sub: user.id.clone(),
        exp: now + app.oauth.code_ttl_secs,
        iat: now,
        jti: grants::new_id(),
        rdh: secrets::sha256_hex(request.redirect_uri.as_bytes()),
        scope: request.scope.clone(),
        gid: grants::new_id(),
        pkce: request.code_challenge.clone(),
    };
    match app
        .keyring
        .load()
        .sign(TokenKind::AuthorizationCode, &claims)
    {
        Ok(code) => {
            tracing::info!(client_id = %request.client.id, "authorization code issued");
            let location = redirect::with_query(
                &request.redirect_uri,
                &[("code", code.as_str()), ("state", request.state.as_str())],
            );
            redirect_response(status, &location)
        }
        Err(error) => {
            tracing::error!(%error, "cannot sign an authorization code");
            error_page(
                app,
                StatusCode::SERVICE_UNAVAILABLE,
                "The service is briefly unavailable. Try again in a moment.",
            )
        }
    }
}

fn shared_items(app: &App, request: &AuthorizationRequest) -> Vec<SharedItem> {
    let locale = pages::locale_for(request.user_locale.as_deref());
    let fill = |text: &str| {
        pages::fill(
            text,
            &app.oauth.platform_name,
            &branding(&request.client).company,
        )
    };
    // The account ID goes with every link (`sub` of the tokens and of userinfo), so it is
    // always listed, and it is all that `openid` grants.
    let mut items = vec![SharedItem {
        scope: "openid".to_owned(),
        what: fill(locale.share_id),
        why: fill(locale.share_id_why),
    }];
    for scope in request.scope.split(' ') {
        let (what, why) = match scope {
            "openid" => continue,
            "email" => (fill(locale.share_email), fill(locale.share_email_why)),
            "profile" => (fill(locale.share_profile), fill(locale.share_profile_why)),
            "devices" => (fill(locale.share_devices), fill(locale.share_devices_why)),
            // A scope of the integration's own: named as it is, never left out.
            other => (
                fill(locale.share_other).replace("{scope}", other),
                fill(locale.share_other_why),
            ),
        };
        items.push(SharedItem {
            scope: scope.to_owned(),
            what,
            why,
        });
    }
    items
}

fn consent_page(
    app: &App,
    request: &AuthorizationRequest,
    user: &UserRecord,
    csrf: &str,
) -> HttpResponse {
    let locale = pages::locale_for(request.user_locale.as_deref());
    let company = branding(&request.client).company;
    let page = ConsentPage {
        locale: locale_of(app, request),
        client: branding(&request.client),
        consent_heading: pages::fill(locale.consent_heading, &app.oauth.platform_name, &company),
        consent_lead: pages::fill(locale.consent_lead, &app.oauth.platform_name, &company),
        user_email: user.email.clone(),
        shared: shared_items(app, request),
        csrf: csrf.to_owned(),
        request: request.raw.clone(),
    };
    pages::html(
        StatusCode::OK,
        &page,
        redirect::origin(&request.redirect_uri),
    )
}

/// The sign-in page, setting a fresh pre-session CSRF cookie.
fn sign_in_page(
    app: &App,
    request: Option<&AuthorizationRequest>,
    status: StatusCode,
    email: &str,
    error: Option<String>,
) -> HttpResponse {
    let Ok(csrf) = secrets::random_token(32) else {
        return error_page(
            app,
            StatusCode::SERVICE_UNAVAILABLE,
            "The service is briefly unavailable. Try again in a moment.",
        );
    };
    let locale = pages::locale_for(request.and_then(|r| r.user_locale.as_deref()));
    let page = match request {
        Some(request) => {
            let company = branding(&request.client).company;
            SignInPage {
                locale: locale_of(app, request),
                heading: pages::fill(locale.signin_heading, &app.oauth.platform_name, &company),
                lead: pages::fill(locale.signin_lead, &app.oauth.platform_name, &company),
                linking: true,
                client: branding(&request.client),
                csrf: csrf.clone(),
                request: request.raw.clone(),
                email: email.to_owned(),
                error,
            }
        }
        None => SignInPage {
            locale: PageLocale::new(locale, &app.oauth.platform_name, ""),
            heading: locale.signin_title.to_owned(),
            lead: locale.account_title.to_owned(),
            linking: false,
            client: Branding {
                company: locale.account_title.to_owned(),
                name: String::new(),
                logo_url: None,
                privacy_policy_url: None,
                signup_url: None,
            },
            csrf: csrf.clone(),
            request: String::new(),
            email: email.to_owned(),
            error,
        },
    };
    // A returning user's sign-in POST answers 303 to `/authorize`, which answers 302 to the
    // platform; Chromium checks that whole chain against `form-action`, so the sign-in page
    // must allow the validated redirect origin just as the consent page does.
    let redirect_origin = request.and_then(|request| redirect::origin(&request.redirect_uri));
    let mut answer = pages::html(status, &page, redirect_origin);
    if let Some(cookie) = sessions::set_cookie(SIGNIN_CSRF_COOKIE, &csrf, 3600) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}

/// The sign-in page for the account page (no authorization request).
pub fn account_sign_in_page(app: &App) -> HttpResponse {
    sign_in_page(app, None, StatusCode::OK, "", None)
}

/// The parameters of the request: the query for GET, the form body for POST; `None` for a
/// body that is not UTF-8.
fn raw_parameters(request: &Request<Bytes>) -> Option<String> {
    if request.method() == Method::POST {
        String::from_utf8(request.body().to_vec()).ok()
    } else {
        Some(request.uri().query().unwrap_or_default().to_owned())
    }
}

/// `GET` (or `POST`) `/authorize`.
pub async fn authorize(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let Some(raw) = raw_parameters(request) else {
        return failure_response(
            app,
            AuthorizeError::Page("The request is malformed."),
            false,
        );
    };
    let authorization = match validate(app, &raw).await {
        Ok(authorization) => authorization,
        Err(failure) => return failure_response(app, failure, false),
    };
    continue_signed_in(app, &authorization, request.headers(), StatusCode::FOUND).await
}

/// With a valid request: the sign-in page without a session, the code when consent is
/// remembered, the consent page otherwise.
async fn continue_signed_in(
    app: &App,
    authorization: &AuthorizationRequest,
    headers: &hyper::HeaderMap,
    redirect_status: StatusCode,
) -> HttpResponse {
    let session = match sessions::current(app, headers).await {
        Ok(session) => session,
        Err(error) => return failure_response(app, error.into(), false),
    };
    let Some(session) = session else {
        return sign_in_page(app, Some(authorization), StatusCode::OK, "", None);
    };
    let user = match app.store.get_user(&session.record.user_id).await {
        Ok(Some(user)) => user,
        Ok(None) => return sign_in_page(app, Some(authorization), StatusCode::OK, "", None),
        Err(error) => return failure_response(app, error.into(), false),
    };
    match app
        .store
        .get_consent(&user.id, &authorization.client.id)
        .await
    {
        Ok(Some(consented)) if grants::scope_is_subset(&authorization.scope, &consented) => {
            issue_code(app, authorization, &user, redirect_status).await
        }
        Ok(_) => consent_page(app, authorization, &user, &session.record.csrf_secret),
        Err(error) => failure_response(app, error.into(), false),
    }
}

fn see_other(location: &str) -> HttpResponse {
    redirect_response(StatusCode::SEE_OTHER, location)
}

/// Where a form returns after signing in or out: the authorization request, or the
/// account page.
fn resume_location(raw: &str) -> String {
    if raw.is_empty() {
        pages::ACCOUNT_PATH.to_owned()
    } else {
        format!("{PATH}?{raw}")
    }
}

/// `POST /authorize/signin`.
pub async fn sign_in(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> HttpResponse {
    let Ok(form) = Params::parse(request.body()) else {
        return error_page(app, StatusCode::BAD_REQUEST, "The form is malformed.");
    };
    let expected_csrf = sessions::cookie(request.headers(), SIGNIN_CSRF_COOKIE).unwrap_or_default();
    if !sessions::csrf_matches(expected_csrf, form.get("csrf")) {
        return error_page(
            app,
            StatusCode::BAD_REQUEST,
            "The sign-in form expired. Go back and start again.",
        );
    }
    let raw = form.get("request").unwrap_or_default().to_owned();
    let authorization = if raw.is_empty() {
        None
    } else {
        match validate(app, &raw).await {
            Ok(authorization) => Some(authorization),
            Err(failure) => return failure_response(app, failure, true),
        }
    };
    let email_text = form.get("email").unwrap_or_default();
    let password = form.get("password").unwrap_or_default();
    let locale = pages::locale_for(
        authorization
            .as_ref()
            .and_then(|a| a.user_locale.as_deref()),
    );

    // Throttle before spending a password hash on the attempt: a source past its limits is
    // refused (its own failures), and an account under attack from anywhere only makes each
    // attempt on it wait, so the owner still gets in (see `crate::throttle`).
    let address = crate::http::client_address::client_address(
        request.headers(),
        context.remote_addr.ip(),
        &app.oauth.trusted_proxies,
    );
    let source = throttle::source_of(address);
    let normalised_email = email_text.trim().to_lowercase();
    let account_key = throttle::account_key(&normalised_email);
    let account_source_key = throttle::account_source_key(&normalised_email, &source);
    let source_key = throttle::signin_source_key(&source);
    let window = app.oauth.throttle_window_secs;
    // Held until this attempt is counted, so that a burst from one source is counted as if
    // sent one after another.
    let patience = std::time::Duration::from_secs(app.oauth.signin_max_delay_secs + 5);
    let turn = app.throttle_blocks.check_turn(&source, patience).await;
    let now = app.clock.now();
    let counts = async {
        Ok::<_, StoreError>((
            app.store.current(&account_source_key, now).await?,
            app.store.current(&source_key, now).await?,
            app.store.current(&account_key, now).await?,
        ))
    };
    let (account_source_failures, source_failures, account_failures) = match counts.await {
        Ok(counts) => counts,
        Err(error) => return failure_response(app, error.into(), true),
    };
    if turn.is_none()
        || account_source_failures >= app.oauth.signin_attempts_per_account
        || source_failures >= app.oauth.signin_attempts_per_address
    {
        tracing::warn!(%source, "sign-in throttled for this source");
        crate::metrics::record_throttled("signin");
        let mut answer = sign_in_page(
            app,
            authorization.as_ref(),
            StatusCode::TOO_MANY_REQUESTS,
            email_text,
            Some(locale.signin_throttled.to_owned()),
        );
        answer.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            HeaderValue::from(u32::try_from(window).unwrap_or(u32::MAX)),
        );
        return answer;
    }
    let delay = throttle::account_delay_secs(
        account_failures,
        app.oauth.signin_attempts_per_account,
        app.oauth.signin_max_delay_secs,
    );
    if delay > 0 {
        tracing::info!(
            delay_secs = delay,
            "sign-in delayed: the account has recent failures"
        );
        tokio::time::sleep(std::time::Duration::from_secs(delay)).await;
    }

    let user = match users::Email::parse(email_text) {
        Ok(email) => match app.store.get_user_by_email(email.as_str()).await {
            Ok(user) => user,
            Err(error) => return failure_response(app, error.into(), true),
        },
        Err(_) => None,
    };
    // argon2 is deliberately slow: keep it off the async workers. Unknown users are
    // verified against a dummy hash so they cost the same time.
    let verified = {
        let user = user.clone();
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || users::verify_password(user.as_ref(), &password))
            .await
            .unwrap_or(false)
    };
    let Some(user) = user.filter(|_| verified) else {
        let hits = async {
            let now = app.clock.now();
            app.store.hit(&account_source_key, window, now).await?;
            app.store.hit(&source_key, window, now).await?;
            app.store.hit(&account_key, window, now).await
        };
        if let Err(error) = hits.await {
            return failure_response(app, error.into(), true);
        }
        tracing::info!(%source, "sign-in failed");
        return sign_in_page(
            app,
            authorization.as_ref(),
            StatusCode::UNAUTHORIZED,
            email_text,
            Some(locale.signin_failed.to_owned()),
        );
    };

    let (cookie_value, _session) = match sessions::start(app, &user).await {
        Ok(started) => started,
        Err(sessions::SessionError::Store(error)) => {
            return failure_response(app, error.into(), true);
        }
        Err(sessions::SessionError::Random(_)) => {
            return failure_response(app, AuthorizeError::Unavailable, true);
        }
    };
    if let Err(error) = app.store.reset(&account_source_key).await {
        tracing::warn!(%error, "could not reset the sign-in counter");
    }
    tracing::info!(user = %user.id, "signed in");
    let mut answer = see_other(&resume_location(&raw));
    let headers = answer.headers_mut();
    if let Some(cookie) =
        sessions::set_cookie(SESSION_COOKIE, &cookie_value, app.oauth.session_ttl_secs)
    {
        headers.append(SET_COOKIE, cookie);
    }
    if let Some(cookie) = sessions::set_cookie(SIGNIN_CSRF_COOKIE, "", 0) {
        headers.append(SET_COOKIE, cookie);
    }
    answer
}

/// A form posted by a signed-in user: its parameters and session, with CSRF checked.
pub(crate) enum SignedInForm {
    /// Checked.
    Valid(Params, sessions::Session),
    /// No session: send the person to sign in.
    NoSession(Params),
    /// Answer this instead.
    Refused(HttpResponse),
}

pub(crate) async fn signed_in_form(app: &App, request: &Request<Bytes>) -> SignedInForm {
    let Ok(form) = Params::parse(request.body()) else {
        return SignedInForm::Refused(error_page(
            app,
            StatusCode::BAD_REQUEST,
            "The form is malformed.",
        ));
    };
    let session = match sessions::current(app, request.headers()).await {
        Ok(session) => session,
        Err(error) => return SignedInForm::Refused(failure_response(app, error.into(), true)),
    };
    let Some(session) = session else {
        return SignedInForm::NoSession(form);
    };
    if !sessions::csrf_matches(&session.record.csrf_secret, form.get("csrf")) {
        return SignedInForm::Refused(error_page(
            app,
            StatusCode::BAD_REQUEST,
            "The form expired. Go back and start again.",
        ));
    }
    SignedInForm::Valid(form, session)
}

/// A form of the linking flow: without a session it resumes the authorization request it
/// carries, which shows the sign-in page.
async fn linking_form(
    app: &App,
    request: &Request<Bytes>,
) -> Result<(Params, sessions::Session), HttpResponse> {
    match signed_in_form(app, request).await {
        SignedInForm::Valid(form, session) => Ok((form, session)),
        SignedInForm::NoSession(form) => Err(see_other(&resume_location(
            form.get("request").unwrap_or_default(),
        ))),
        SignedInForm::Refused(answer) => Err(answer),
    }
}

/// `POST /authorize/consent`: Agree and link, or Cancel.
pub async fn consent(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let (form, session) = match linking_form(app, request).await {
        Ok(checked) => checked,
        Err(answer) => return answer,
    };
    let raw = form.get("request").unwrap_or_default();
    let authorization = match validate(app, raw).await {
        Ok(authorization) => authorization,
        Err(failure) => return failure_response(app, failure, true),
    };
    match form.get("action") {
        Some("cancel") => {
            let location = redirect::with_query(
                &authorization.redirect_uri,
                &[
                    ("error", "access_denied"),
                    ("error_description", "the user declined"),
                    ("state", authorization.state.as_str()),
                ],
            );
            see_other(&location)
        }
        Some("agree") => {
            let user = match app.store.get_user(&session.record.user_id).await {
                Ok(Some(user)) => user,
                Ok(None) => return see_other(&resume_location(raw)),
                Err(error) => return failure_response(app, error.into(), true),
            };
            if let Err(error) = app
                .store
                .put_consent(&user.id, &authorization.client.id, &authorization.scope)
                .await
            {
                return failure_response(app, error.into(), true);
            }
            issue_code(app, &authorization, &user, StatusCode::SEE_OTHER).await
        }
        _ => error_page(app, StatusCode::BAD_REQUEST, "The form is malformed."),
    }
}

/// `POST /authorize/switch`: end the session and show the sign-in page again.
pub async fn switch_account(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let (form, session) = match linking_form(app, request).await {
        Ok(checked) => checked,
        Err(answer) => return answer,
    };
    end_session(
        app,
        &session,
        &resume_location(form.get("request").unwrap_or_default()),
    )
    .await
}

/// Deletes `session`, clears its cookie and redirects to `location`.
pub(crate) async fn end_session(
    app: &App,
    session: &sessions::Session,
    location: &str,
) -> HttpResponse {
    if let Err(error) = app.store.delete_session(&session.digest).await {
        return failure_response(app, error.into(), true);
    }
    let mut answer = see_other(location);
    if let Some(cookie) = sessions::set_cookie(SESSION_COOKIE, "", 0) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}
