//! The authorization endpoint over HTTP (the core is [`crate::oauth::authorize`]): its
//! redirects (302 after a GET, 303 after a form post), the sign-in, consent and error pages,
//! and the session cookies.
//!
//! | request | answer |
//! |---|---|
//! | `GET`/`POST /authorize` | error page, error redirect, sign-in page, consent page, or the code redirect: [`authorize`] |
//! | `POST /authorize/signin` | [`crate::users::sign_in`], then back to the request: [`sign_in`] |
//! | `POST /authorize/consent` | Agree ([`crate::oauth::authorize::agree`]) or Cancel: [`consent`] |
//! | `POST /authorize/switch` | sign out and start over: [`switch_account`] |

use bytes::Bytes;
use hyper::header::{HeaderValue, LOCATION, SET_COOKIE};
use hyper::{Method, Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext, response};
use crate::oauth::authorize::{
    self, AuthorizationRequest, AuthorizeError, NextStep, PATH, validate,
};
use crate::oauth::params::Params;
use crate::pages::{
    self, Branding, ConsentPage, ContinueWith, ErrorPage, PageText, SignInPage, Texts, i18n,
};
use crate::sessions::{self, SESSION_COOKIE, SIGNIN_CSRF_COOKIE};
use crate::store::{ClientRecord, UserRecord};
use crate::users::{self, SignIn};
use crate::web::cookies;

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
        forgot_password_url: settings.forgot_password_url.clone(),
    }
}

/// The language of a page: the platform's `user_locale` when it sent one (or a form carried
/// it on), else the browser's `Accept-Language`, else English ([`i18n::negotiate`]).
pub fn texts_for(headers: &hyper::HeaderMap, user_locale: Option<&str>) -> &'static Texts {
    let accept = headers
        .get(hyper::header::ACCEPT_LANGUAGE)
        .and_then(|value| value.to_str().ok());
    i18n::negotiate(user_locale, accept)
}

fn locale_of(app: &App, request: &AuthorizationRequest, texts: &'static Texts) -> PageText {
    PageText::new(
        texts,
        &app.oauth.platform_name,
        &branding(&request.client).company,
    )
}

/// An error page (no redirect) saying message `id` in `texts`' language.
pub fn error_page(app: &App, texts: &'static Texts, status: StatusCode, id: &str) -> HttpResponse {
    let locale = PageText::new(texts, &app.oauth.platform_name, "");
    let message = locale.t(id);
    error_page_saying(app, texts, status, message)
}

/// An error page (no redirect) showing `message`, already in `texts`' language.
pub fn error_page_saying(
    app: &App,
    texts: &'static Texts,
    status: StatusCode,
    message: String,
) -> HttpResponse {
    let page = ErrorPage {
        locale: PageText::new(texts, &app.oauth.platform_name, ""),
        message,
    };
    crate::web::page::html(status, &page, None)
}

pub(crate) fn redirect_response(status: StatusCode, location: &str) -> HttpResponse {
    let mut answer = response::with_body(status, "text/plain; charset=utf-8", Bytes::new());
    if let Ok(value) = HeaderValue::from_str(location) {
        answer.headers_mut().insert(LOCATION, value);
    }
    answer
}

pub(crate) fn failure_response(
    app: &App,
    texts: &'static Texts,
    failure: AuthorizeError,
    after_post: bool,
) -> HttpResponse {
    match failure {
        AuthorizeError::Page(message) => {
            // The reason is one of a fixed set of texts: never the query, which carries
            // codes and state.
            tracing::info!(
                reason = message.reason(),
                "authorization request refused with an error page"
            );
            error_page(app, texts, StatusCode::BAD_REQUEST, message.message_id())
        }
        AuthorizeError::Unavailable => {
            let mut page = error_page(
                app,
                texts,
                StatusCode::SERVICE_UNAVAILABLE,
                "service-unavailable",
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
            tracing::info!(
                error,
                reason = description,
                "authorization request refused back to the client"
            );
            let status = if after_post {
                StatusCode::SEE_OTHER
            } else {
                StatusCode::FOUND
            };
            let location =
                authorize::error_location(&redirect_uri, error, description, state.as_deref());
            redirect_response(status, &location)
        }
    }
}

fn consent_page(
    app: &App,
    request: &AuthorizationRequest,
    texts: &'static Texts,
    user: &UserRecord,
    csrf: &str,
) -> HttpResponse {
    let locale = locale_of(app, request, texts);
    let page = ConsentPage {
        shared: ConsentPage::shared_items(&locale, request.scope.tokens()),
        locale,
        client: branding(&request.client),
        user_email: user.email.clone(),
        csrf: csrf.to_owned(),
        request: request.raw.clone(),
    };
    crate::web::page::html(StatusCode::OK, &page, request.redirect_uri.origin())
}

/// The "Continue with" buttons and whether the password form shows: the integration's own
/// provider when linking, every provider on the account page (people created by a provider
/// have no password and must still reach the page to unlink).
async fn sign_in_options(
    app: &App,
    request: Option<&AuthorizationRequest>,
    texts: &'static Texts,
) -> Result<(Vec<ContinueWith>, bool), crate::store::StoreError> {
    let encode = |raw: &str| {
        percent_encoding::utf8_percent_encode(raw, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    match request {
        Some(request) => {
            let settings = &request.client.settings;
            let Some(provider_id) = settings.identity_provider.as_deref() else {
                return Ok((Vec::new(), true));
            };
            let Some(provider) = app.store.get_identity_provider(provider_id).await? else {
                // A provider removed under the integration: the password form is all there is.
                return Ok((Vec::new(), true));
            };
            let button = ContinueWith {
                name: provider.name,
                href: format!(
                    "/signin/{}/start?request={}",
                    provider.id,
                    encode(&request.raw)
                ),
            };
            Ok((vec![button], settings.password_sign_in))
        }
        None => {
            let buttons = app
                .store
                .list_identity_providers()
                .await?
                .into_iter()
                .map(|provider| ContinueWith {
                    href: format!(
                        "/signin/{}/start?account=1&user_locale={}",
                        provider.id,
                        encode(texts.tag())
                    ),
                    name: provider.name,
                })
                .collect();
            Ok((buttons, true))
        }
    }
}

/// The sign-in page, setting a fresh pre-session CSRF cookie.
async fn sign_in_page(
    app: &App,
    request: Option<&AuthorizationRequest>,
    texts: &'static Texts,
    status: StatusCode,
    email: &str,
    error: Option<String>,
) -> HttpResponse {
    let Ok(csrf) = app.random.token(32) else {
        return error_page(
            app,
            texts,
            StatusCode::SERVICE_UNAVAILABLE,
            "service-unavailable",
        );
    };
    let (continue_with, password_form) = match sign_in_options(app, request, texts).await {
        Ok(options) => options,
        Err(error) => return failure_response(app, texts, error.into(), false),
    };
    let page = SignInPage {
        locale: match request {
            Some(request) => locale_of(app, request, texts),
            None => PageText::new(texts, &app.oauth.platform_name, ""),
        },
        client: request.map(|request| branding(&request.client)),
        csrf: csrf.clone(),
        request: request
            .map(|request| request.raw.clone())
            .unwrap_or_default(),
        email: email.to_owned(),
        error,
        continue_with,
        password_form,
    };
    // A returning user's sign-in POST answers 303 to `/authorize`, which answers 302 to the
    // platform; Chromium checks that whole chain against `form-action`, so the sign-in page
    // must allow the validated redirect origin just as the consent page does.
    let redirect_origin = request.and_then(|request| request.redirect_uri.origin());
    let mut answer = crate::web::page::html(status, &page, redirect_origin);
    if let Some(cookie) = cookies::set_cookie(SIGNIN_CSRF_COOKIE, &csrf, 3600) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}

/// The sign-in page for the account page (no authorization request).
pub async fn account_sign_in_page(app: &App, texts: &'static Texts) -> HttpResponse {
    sign_in_page(app, None, texts, StatusCode::OK, "", None).await
}

/// The language a request's `user_locale` parameter (query or form) or browser asks for.
fn texts_of_parameters(headers: &hyper::HeaderMap, raw: &str) -> &'static Texts {
    let params = Params::parse(raw.as_bytes()).ok();
    texts_for(headers, params.as_ref().and_then(|p| p.get("user_locale")))
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
            texts_for(request.headers(), None),
            AuthorizeError::Page(authorize::Refusal::Malformed),
            false,
        );
    };
    let authorization = match validate(app, &raw).await {
        Ok(authorization) => authorization,
        Err(failure) => {
            let texts = texts_of_parameters(request.headers(), &raw);
            return failure_response(app, texts, failure, false);
        }
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
    let texts = texts_for(headers, authorization.user_locale.as_deref());
    let session = match sessions::current(app, cookies::cookie(headers, SESSION_COOKIE)).await {
        Ok(session) => session,
        Err(error) => return failure_response(app, texts, error.into(), false),
    };
    let Some(session) = session else {
        return sign_in_page(app, Some(authorization), texts, StatusCode::OK, "", None).await;
    };
    match authorize::next_step(app, authorization, &session.record.user_id).await {
        Ok(NextStep::Code(location)) => redirect_response(redirect_status, &location),
        Ok(NextStep::Consent(user)) => consent_page(
            app,
            authorization,
            texts,
            &user,
            &session.record.csrf_secret,
        ),
        Ok(NextStep::SignIn) => {
            sign_in_page(app, Some(authorization), texts, StatusCode::OK, "", None).await
        }
        Err(failure) => failure_response(app, texts, failure, false),
    }
}

fn see_other(location: &str) -> HttpResponse {
    redirect_response(StatusCode::SEE_OTHER, location)
}

/// Where a form returns after signing in or out: the authorization request, or the
/// account page in the language the form was in.
pub(crate) fn resume_location(raw: &str, texts: &'static Texts) -> String {
    if raw.is_empty() {
        account_location(texts)
    } else {
        format!("{PATH}?{raw}")
    }
}

/// The account page in `texts`' language.
pub(crate) fn account_location(texts: &'static Texts) -> String {
    format!("{}?user_locale={}", pages::ACCOUNT_PATH, texts.tag())
}

/// `POST /authorize/signin`: sign in, or Cancel (the person declines before signing in:
/// the platform gets `access_denied` with its `state`, as after Cancel on the consent page).
pub async fn sign_in(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> HttpResponse {
    let Ok(form) = Params::parse(request.body()) else {
        let texts = texts_for(request.headers(), None);
        return error_page(app, texts, StatusCode::BAD_REQUEST, "form-malformed");
    };
    let form_texts = texts_for(request.headers(), form.get("user_locale"));
    let expected_csrf = cookies::cookie(request.headers(), SIGNIN_CSRF_COOKIE).unwrap_or_default();
    if !sessions::csrf_matches(expected_csrf, form.get("csrf")) {
        return error_page(app, form_texts, StatusCode::BAD_REQUEST, "form-expired");
    }
    let raw = form.get("request").unwrap_or_default().to_owned();
    let authorization = if raw.is_empty() {
        None
    } else {
        match validate(app, &raw).await {
            Ok(authorization) => Some(authorization),
            Err(failure) => {
                let texts = texts_of_parameters(request.headers(), &raw);
                return failure_response(app, texts, failure, true);
            }
        }
    };
    let texts = match &authorization {
        Some(authorization) => texts_for(request.headers(), authorization.user_locale.as_deref()),
        None => form_texts,
    };
    if form.get("action") == Some("cancel") {
        return match &authorization {
            Some(authorization) => see_other(&authorize::declined(authorization)),
            None => see_other(&account_location(texts)),
        };
    }
    if let Some(authorization) = &authorization
        && authorization.client.settings.identity_provider.is_some()
        && !authorization.client.settings.password_sign_in
    {
        return error_page(app, texts, StatusCode::BAD_REQUEST, "password-signin-off");
    }
    let email_text = form.get("email").unwrap_or_default();
    let password = form.get("password").unwrap_or_default();

    let address = crate::web::oauth::client_address(app, request, context);
    let cookie_value = match users::sign_in(app, email_text, password, address).await {
        Ok(SignIn::SignedIn { cookie_value, .. }) => cookie_value,
        Ok(SignIn::Failed) => {
            return sign_in_page(
                app,
                authorization.as_ref(),
                texts,
                StatusCode::UNAUTHORIZED,
                email_text,
                Some(texts.text("signin-failed")),
            )
            .await;
        }
        Ok(SignIn::Throttled { retry_after_secs }) => {
            let mut answer = sign_in_page(
                app,
                authorization.as_ref(),
                texts,
                StatusCode::TOO_MANY_REQUESTS,
                email_text,
                Some(texts.text("signin-throttled")),
            )
            .await;
            answer.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                HeaderValue::from(u32::try_from(retry_after_secs).unwrap_or(u32::MAX)),
            );
            return answer;
        }
        Err(users::SignInError::Store(error)) => {
            return failure_response(app, texts, error.into(), true);
        }
        Err(users::SignInError::Random) => {
            return failure_response(app, texts, AuthorizeError::Unavailable, true);
        }
    };
    let mut answer = see_other(&resume_location(&raw, texts));
    let headers = answer.headers_mut();
    if let Some(cookie) =
        cookies::set_cookie(SESSION_COOKIE, &cookie_value, app.oauth.session_ttl_secs)
    {
        headers.append(SET_COOKIE, cookie);
    }
    if let Some(cookie) = cookies::set_cookie(SIGNIN_CSRF_COOKIE, "", 0) {
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
        let texts = texts_for(request.headers(), None);
        return SignedInForm::Refused(error_page(
            app,
            texts,
            StatusCode::BAD_REQUEST,
            "form-malformed",
        ));
    };
    let texts = texts_for(request.headers(), form.get("user_locale"));
    let session =
        match sessions::current(app, cookies::cookie(request.headers(), SESSION_COOKIE)).await {
            Ok(session) => session,
            Err(error) => {
                return SignedInForm::Refused(failure_response(app, texts, error.into(), true));
            }
        };
    let Some(session) = session else {
        return SignedInForm::NoSession(form);
    };
    if !sessions::csrf_matches(&session.record.csrf_secret, form.get("csrf")) {
        return SignedInForm::Refused(error_page(
            app,
            texts,
            StatusCode::BAD_REQUEST,
            "form-expired",
        ));
    }
    SignedInForm::Valid(form, session)
}

/// The language of a form: the `user_locale` of the authorization request it carries, or
/// the one it carries itself, or the browser's.
fn form_texts(request: &Request<Bytes>, form: &Params) -> &'static Texts {
    let raw = form.get("request").unwrap_or_default();
    if raw.is_empty() {
        texts_for(request.headers(), form.get("user_locale"))
    } else {
        texts_of_parameters(request.headers(), raw)
    }
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
            form_texts(request, &form),
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
    let texts = form_texts(request, &form);
    let raw = form.get("request").unwrap_or_default();
    let authorization = match validate(app, raw).await {
        Ok(authorization) => authorization,
        Err(failure) => return failure_response(app, texts, failure, true),
    };
    match form.get("action") {
        Some("cancel") => see_other(&authorize::declined(&authorization)),
        Some("agree") => {
            match authorize::agree(app, &authorization, &session.record.user_id).await {
                Ok(Some(location)) => see_other(&location),
                Ok(None) => see_other(&resume_location(raw, texts)),
                Err(failure) => failure_response(app, texts, failure, true),
            }
        }
        _ => error_page(app, texts, StatusCode::BAD_REQUEST, "form-malformed"),
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
    let texts = form_texts(request, &form);
    end_session(
        app,
        texts,
        &session,
        &resume_location(form.get("request").unwrap_or_default(), texts),
    )
    .await
}

/// Deletes `session`, clears its cookie and redirects to `location`.
pub(crate) async fn end_session(
    app: &App,
    texts: &'static Texts,
    session: &sessions::Session,
    location: &str,
) -> HttpResponse {
    if let Err(error) = app.store.delete_session(&session.digest).await {
        return failure_response(app, texts, error.into(), true);
    }
    let mut answer = see_other(location);
    if let Some(cookie) = cookies::set_cookie(SESSION_COOKIE, "", 0) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}
