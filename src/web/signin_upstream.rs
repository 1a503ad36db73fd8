//! Sign-in through an upstream identity provider over HTTP (the core is
//! [`crate::identity::login`]).
//!
//! | request | answer |
//! |---|---|
//! | `GET /signin/{id}/start?request=…` | the authorization request validated again, then 302 to the provider with the binding cookie: [`start`] |
//! | `GET /signin/{id}/start?account=1` | the same for the account page's sign-in |
//! | `GET /signin/{id}/callback?…` | the provider's answer: a session and 303 back to the request (consent) or the account page; `access_denied` to the platform when the person cancelled; otherwise a page, 503 when the provider is down: [`callback`] |
//!
//! A provider that is down is a 503 page, never a redirect to the platform: the platform
//! would take an error redirect for a failed link.

use bytes::Bytes;
use hyper::header::{HeaderValue, SET_COOKIE};
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext, response};
use crate::identity::SignInFailure;
use crate::identity::login::{self, BINDING_COOKIE, Finished, LOGIN_STATE_TTL_SECS};
use crate::oauth::authorize::{self, validate};
use crate::oauth::params::Params;
use crate::pages::Texts;
use crate::sessions::{self, SESSION_COOKIE, SIGNIN_CSRF_COOKIE};
use crate::web::authorize::{
    error_page, error_page_saying, failure_response, redirect_response, resume_location, texts_for,
};
use crate::web::cookies;

/// The prefix of the routes.
pub const PREFIX: &str = "/signin/";

/// The page telling the person why the sign-in ended.
fn failure_page(app: &App, texts: &'static Texts, failure: &SignInFailure) -> HttpResponse {
    let status = match failure {
        SignInFailure::Unavailable { .. } | SignInFailure::ServiceUnavailable => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        SignInFailure::EmailTaken { .. } => StatusCode::CONFLICT,
        SignInFailure::Denied { .. } => StatusCode::FORBIDDEN,
        SignInFailure::Failed { .. } | SignInFailure::Expired => StatusCode::BAD_REQUEST,
    };
    let (id, variables) = failure.message();
    let mut page = error_page_saying(app, texts, status, texts.with(id, &variables));
    if failure.is_unavailable() {
        page.headers_mut()
            .insert(hyper::header::RETRY_AFTER, HeaderValue::from(30u32));
    }
    page
}

/// `/signin/{id}/{step}`, split; `None` for any other shape.
fn split_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix(PREFIX)?;
    let (id, step) = rest.split_once('/')?;
    (!id.is_empty() && !step.contains('/')).then_some((id, step))
}

/// `GET /signin/{id}/start` and `GET /signin/{id}/callback`.
pub async fn answer(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let Some((id, step)) = split_path(request.uri().path()) else {
        return response::not_found();
    };
    let Ok(params) = Params::parse(request.uri().query().unwrap_or_default().as_bytes()) else {
        let texts = texts_for(request.headers(), None);
        return error_page(app, texts, StatusCode::BAD_REQUEST, "request-malformed");
    };
    match step {
        "start" => start(app, id, request.headers(), &params).await,
        "callback" => callback(app, id, request, &params).await,
        _ => response::not_found(),
    }
}

async fn start(
    app: &App,
    provider_id: &str,
    headers: &hyper::HeaderMap,
    params: &Params,
) -> HttpResponse {
    // The linking flow's language is the platform's `user_locale` inside the request; the
    // account page passes its own.
    let request_locale = params
        .get("request")
        .and_then(|raw| Params::parse(raw.as_bytes()).ok())
        .and_then(|request| request.get("user_locale").map(str::to_owned));
    let texts = texts_for(
        headers,
        request_locale.as_deref().or(params.get("user_locale")),
    );
    let provider = match app.store.get_identity_provider(provider_id).await {
        Ok(Some(provider)) => provider,
        Ok(None) => {
            return error_page(app, texts, StatusCode::NOT_FOUND, "signin-not-offered");
        }
        Err(error) => return failure_response(app, texts, error.into(), false),
    };
    let raw = match (params.get("request"), params.get("account")) {
        (Some(raw), None) => {
            let authorization = match validate(app, raw).await {
                Ok(authorization) => authorization,
                Err(failure) => return failure_response(app, texts, failure, false),
            };
            // An integration offers its own provider only.
            if authorization.client.settings.identity_provider.as_deref() != Some(provider_id) {
                return error_page(app, texts, StatusCode::BAD_REQUEST, "signin-not-offered");
            }
            raw.to_owned()
        }
        (None, Some("1")) => String::new(),
        _ => return error_page(app, texts, StatusCode::BAD_REQUEST, "request-malformed"),
    };
    match login::begin(app, &provider, &raw).await {
        Ok(started) => {
            let mut answer = redirect_response(StatusCode::FOUND, &started.location);
            if let Some(cookie) =
                cookies::set_cookie(BINDING_COOKIE, &started.binding, LOGIN_STATE_TTL_SECS)
            {
                answer.headers_mut().append(SET_COOKIE, cookie);
            }
            answer
        }
        Err(failure) => failure_page(app, texts, &failure),
    }
}

async fn callback(
    app: &App,
    provider_id: &str,
    request: &Request<Bytes>,
    params: &Params,
) -> HttpResponse {
    let binding = cookies::cookie(request.headers(), BINDING_COOKIE);
    let finished = login::finish(app, provider_id, binding, params).await;
    // The sign-in's request is known only once its login state is found: refusals before
    // that speak the browser's language.
    let texts = texts_for(request.headers(), None);
    let mut answer = match finished {
        Ok(Finished::SignedIn { user, request }) => match sessions::start(app, &user).await {
            Ok((cookie_value, _session)) => {
                tracing::info!(provider = %provider_id, user_id = %user.id, "signed in through an identity provider");
                let mut answer =
                    redirect_response(StatusCode::SEE_OTHER, &resume_location(&request, texts));
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
            Err(sessions::SessionError::Store(error)) => {
                failure_response(app, texts, error.into(), false)
            }
            Err(sessions::SessionError::Random(_)) => {
                failure_page(app, texts, &SignInFailure::ServiceUnavailable)
            }
        },
        Ok(Finished::Denied { request, error }) => {
            tracing::info!(provider = %provider_id, error, "the identity provider did not sign the person in");
            denied(app, texts, provider_id, &request).await
        }
        Err(failure) => {
            tracing::info!(provider = %provider_id, failure = failure.kind(), "sign-in through an identity provider ended");
            failure_page(app, texts, &failure)
        }
    };
    // The binding has served, whatever the outcome.
    if let Some(cookie) = cookies::set_cookie(BINDING_COOKIE, "", 0) {
        answer.headers_mut().append(SET_COOKIE, cookie);
    }
    answer
}

/// The person did not sign in at the provider: the platform hears `access_denied` with its
/// `state`; the account page's sign-in shows a page.
async fn denied(
    app: &App,
    texts: &'static Texts,
    provider_id: &str,
    request: &str,
) -> HttpResponse {
    let name = match app.store.get_identity_provider(provider_id).await {
        Ok(Some(provider)) => provider.name,
        _ => provider_id.to_owned(),
    };
    if request.is_empty() {
        return failure_page(app, texts, &SignInFailure::Denied { name });
    }
    match validate(app, request).await {
        Ok(authorization) => {
            let location = authorize::error_location(
                &authorization.redirect_uri,
                "access_denied",
                "the user did not sign in with the identity provider",
                Some(&authorization.state),
            );
            redirect_response(StatusCode::FOUND, &location)
        }
        Err(failure) => failure_response(app, texts, failure, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(split_path("/signin/acme/start"), Some(("acme", "start")));
        assert_eq!(
            split_path("/signin/acme/callback"),
            Some(("acme", "callback"))
        );
        assert_eq!(split_path("/signin/acme"), None);
        assert_eq!(split_path("/signin//start"), None);
        assert_eq!(split_path("/signin/a/b/c"), None);
    }
}
