//! The account page over HTTP (the interface's "a way to unlink"): the signed-in user's
//! linked integrations ([`crate::users::links`]), each with an Unlink button that first asks
//! (`GET /account/unlink?grant=…`, a page saying what unlinking does, with Unlink and Keep
//! linked) and then, on the CSRF-checked `POST /account/unlink`, revokes the grant and
//! queues an unlink event for the device graph (`agentUsers.delete`); and sign-out.
//!
//! The pages speak the language of the `user_locale` query parameter (the forms carry it
//! on), else the browser's `Accept-Language`: no platform sends a `user_locale` here.

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext};
use crate::oauth::params::Params;
use crate::pages::{self, AccountPage, LinkView, PageText, Texts, UnlinkPage};
use crate::sessions::{self, SESSION_COOKIE};
use crate::store::{StoreError, UserRecord};
use crate::users::links;
use crate::web::authorize::{self, SignedInForm};
use crate::web::cookies;

/// Path of the account page.
pub const PATH: &str = pages::ACCOUNT_PATH;
/// Path of the Unlink confirmation (GET) and of Unlink itself (POST).
pub const UNLINK_PATH: &str = pages::UNLINK_PATH;
/// Path the sign-out form posts to.
pub const SIGN_OUT_PATH: &str = "/signout";

fn unavailable(app: &App, texts: &'static Texts, error: &StoreError) -> HttpResponse {
    tracing::warn!(%error, "store failed on the account page");
    crate::metrics::record_store_error("account");
    authorize::error_page(
        app,
        texts,
        StatusCode::SERVICE_UNAVAILABLE,
        "service-unavailable",
    )
}

fn date_of(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .map(|at| at.date().to_string())
        .unwrap_or_default()
}

fn query(request: &Request<Bytes>) -> Params {
    Params::parse(request.uri().query().unwrap_or_default().as_bytes()).unwrap_or_default()
}

fn see_other(location: &str) -> HttpResponse {
    let mut answer = crate::http::response::with_body(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        Bytes::new(),
    );
    if let Ok(value) = hyper::header::HeaderValue::from_str(location) {
        answer.headers_mut().insert(hyper::header::LOCATION, value);
    }
    answer
}

/// The signed-in user of a page request and their session's CSRF secret, or the answer to
/// give instead (the sign-in page, or an error page).
async fn signed_in_user(
    app: &App,
    request: &Request<Bytes>,
    texts: &'static Texts,
) -> Result<(UserRecord, String), HttpResponse> {
    let session =
        match sessions::current(app, cookies::cookie(request.headers(), SESSION_COOKIE)).await {
            Ok(Some(session)) => session,
            Ok(None) => return Err(authorize::account_sign_in_page(app, texts).await),
            Err(error) => return Err(unavailable(app, texts, &error)),
        };
    match app.store.get_user(&session.record.user_id).await {
        Ok(Some(user)) => Ok((user, session.record.csrf_secret)),
        Ok(None) => Err(authorize::account_sign_in_page(app, texts).await),
        Err(error) => Err(unavailable(app, texts, &error)),
    }
}

async fn link_views(app: &App, user_id: &str) -> Result<Vec<LinkView>, StoreError> {
    Ok(links::live_links(app, user_id)
        .await?
        .into_iter()
        .map(|linked| LinkView {
            name: linked.name,
            since: date_of(linked.link.created_at),
            grant_id: linked.link.grant_id,
        })
        .collect())
}

/// `GET /account`.
pub async fn account(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let texts = authorize::texts_for(request.headers(), query(request).get("user_locale"));
    let (user, csrf) = match signed_in_user(app, request, texts).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let links = match link_views(app, &user.id).await {
        Ok(links) => links,
        Err(error) => return unavailable(app, texts, &error),
    };
    let page = AccountPage {
        locale: PageText::new(texts, &app.oauth.platform_name, ""),
        user_email: user.email,
        links,
        csrf,
    };
    crate::web::page::html(StatusCode::OK, &page, None)
}

/// `GET /account/unlink?grant=…`: the page that asks before Unlink. A grant that is not one
/// of the user's live links goes back to the account page.
pub async fn confirm_unlink(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let query = query(request);
    let texts = authorize::texts_for(request.headers(), query.get("user_locale"));
    let (user, csrf) = match signed_in_user(app, request, texts).await {
        Ok(signed_in) => signed_in,
        Err(answer) => return answer,
    };
    let grant_id = query.get("grant").unwrap_or_default();
    let link = match link_views(app, &user.id).await {
        Ok(links) => links.into_iter().find(|link| link.grant_id == grant_id),
        Err(error) => return unavailable(app, texts, &error),
    };
    let Some(link) = link else {
        return see_other(&authorize::account_location(texts));
    };
    let page = UnlinkPage {
        locale: PageText::new(texts, &app.oauth.platform_name, ""),
        link,
        csrf,
    };
    crate::web::page::html(StatusCode::OK, &page, None)
}

/// `POST /account/unlink`: revokes one of the user's grants. This is the confirmation
/// page's Unlink; the session's CSRF token makes sure it comes from linkd's own page.
pub async fn unlink(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let (form, session) = match authorize::signed_in_form(app, request).await {
        SignedInForm::Valid(form, session) => (form, session),
        SignedInForm::NoSession(form) => {
            let texts = authorize::texts_for(request.headers(), form.get("user_locale"));
            return authorize::account_sign_in_page(app, texts).await;
        }
        SignedInForm::Refused(answer) => return answer,
    };
    let texts = authorize::texts_for(request.headers(), form.get("user_locale"));
    let user_id = &session.record.user_id;
    let grant_id = form.get("grant").unwrap_or_default();
    if let Err(error) = links::unlink_own(app, user_id, grant_id).await {
        return unavailable(app, texts, &error);
    }
    see_other(&authorize::account_location(texts))
}

/// `POST /signout`.
pub async fn sign_out(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    match authorize::signed_in_form(app, request).await {
        SignedInForm::Valid(form, session) => {
            let texts = authorize::texts_for(request.headers(), form.get("user_locale"));
            authorize::end_session(app, texts, &session, &authorize::account_location(texts)).await
        }
        SignedInForm::NoSession(form) => {
            let texts = authorize::texts_for(request.headers(), form.get("user_locale"));
            authorize::account_sign_in_page(app, texts).await
        }
        SignedInForm::Refused(answer) => answer,
    }
}
