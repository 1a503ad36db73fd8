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
    self, Branding, ConsentPage, ContinueWith, ErrorPage, PageLocale, SharedItem, SignInPage,
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
    failure: AuthorizeError,
    after_post: bool,
) -> HttpResponse {
    match failure {
        AuthorizeError::Page(message) => {
            // The reason is one of a fixed set of texts: never the query, which carries
            // codes and state.
            tracing::info!(
                reason = message,
                "authorization request refused with an error page"
            );
            error_page(app, StatusCode::BAD_REQUEST, message)
        }
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
    for scope in request.scope.tokens() {
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
    crate::web::page::html(StatusCode::OK, &page, request.redirect_uri.origin())
}

/// The "Continue with" buttons and whether the password form shows: the integration's own
/// provider when linking, every provider on the account page (people created by a provider
/// have no password and must still reach the page to unlink).
async fn sign_in_options(
    app: &App,
    request: Option<&AuthorizationRequest>,
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
                    href: format!("/signin/{}/start?account=1", provider.id),
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
    status: StatusCode,
    email: &str,
    error: Option<String>,
) -> HttpResponse {
    let Ok(csrf) = app.random.token(32) else {
        return error_page(
            app,
            StatusCode::SERVICE_UNAVAILABLE,
            "The service is briefly unavailable. Try again in a moment.",
        );
    };
    let (continue_with, password_form) = match sign_in_options(app, request).await {
        Ok(options) => options,
        Err(error) => return failure_response(app, error.into(), false),
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
                continue_with,
                password_form,
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
            continue_with,
            password_form,
        },
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
pub async fn account_sign_in_page(app: &App) -> HttpResponse {
    sign_in_page(app, None, StatusCode::OK, "", None).await
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
    let session = match sessions::current(app, cookies::cookie(headers, SESSION_COOKIE)).await {
        Ok(session) => session,
        Err(error) => return failure_response(app, error.into(), false),
    };
    let Some(session) = session else {
        return sign_in_page(app, Some(authorization), StatusCode::OK, "", None).await;
    };
    match authorize::next_step(app, authorization, &session.record.user_id).await {
        Ok(NextStep::Code(location)) => redirect_response(redirect_status, &location),
        Ok(NextStep::Consent(user)) => {
            consent_page(app, authorization, &user, &session.record.csrf_secret)
        }
        Ok(NextStep::SignIn) => {
            sign_in_page(app, Some(authorization), StatusCode::OK, "", None).await
        }
        Err(failure) => failure_response(app, failure, false),
    }
}

fn see_other(location: &str) -> HttpResponse {
    redirect_response(StatusCode::SEE_OTHER, location)
}

/// Where a form returns after signing in or out: the authorization request, or the
/// account page.
pub(crate) fn resume_location(raw: &str) -> String {
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
    let expected_csrf = cookies::cookie(request.headers(), SIGNIN_CSRF_COOKIE).unwrap_or_default();
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
    if let Some(authorization) = &authorization
        && authorization.client.settings.identity_provider.is_some()
        && !authorization.client.settings.password_sign_in
    {
        return error_page(
            app,
            StatusCode::BAD_REQUEST,
            "This app does not sign in with a password. Go back and choose how to continue.",
        );
    }
    let email_text = form.get("email").unwrap_or_default();
    let password = form.get("password").unwrap_or_default();
    let locale = pages::locale_for(
        authorization
            .as_ref()
            .and_then(|a| a.user_locale.as_deref()),
    );

    let address = crate::web::oauth::client_address(app, request, context);
    let cookie_value = match users::sign_in(app, email_text, password, address).await {
        Ok(SignIn::SignedIn { cookie_value, .. }) => cookie_value,
        Ok(SignIn::Failed) => {
            return sign_in_page(
                app,
                authorization.as_ref(),
                StatusCode::UNAUTHORIZED,
                email_text,
                Some(locale.signin_failed.to_owned()),
            )
            .await;
        }
        Ok(SignIn::Throttled { retry_after_secs }) => {
            let mut answer = sign_in_page(
                app,
                authorization.as_ref(),
                StatusCode::TOO_MANY_REQUESTS,
                email_text,
                Some(locale.signin_throttled.to_owned()),
            )
            .await;
            answer.headers_mut().insert(
                hyper::header::RETRY_AFTER,
                HeaderValue::from(u32::try_from(retry_after_secs).unwrap_or(u32::MAX)),
            );
            return answer;
        }
        Err(users::SignInError::Store(error)) => return failure_response(app, error.into(), true),
        Err(users::SignInError::Random) => {
            return failure_response(app, AuthorizeError::Unavailable, true);
        }
    };
    let mut answer = see_other(&resume_location(&raw));
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
        return SignedInForm::Refused(error_page(
            app,
            StatusCode::BAD_REQUEST,
            "The form is malformed.",
        ));
    };
    let session =
        match sessions::current(app, cookies::cookie(request.headers(), SESSION_COOKIE)).await {
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
        Some("cancel") => see_other(&authorize::declined(&authorization)),
        Some("agree") => {
            match authorize::agree(app, &authorization, &session.record.user_id).await {
                Ok(Some(location)) => see_other(&location),
                Ok(None) => see_other(&resume_location(raw)),
                Err(failure) => failure_response(app, failure, true),
            }
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
    if let Some(cookie) = cookies::set_cookie(SESSION_COOKIE, "", 0) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}
