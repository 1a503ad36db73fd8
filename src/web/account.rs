//! The account page over HTTP (the interface's "a way to unlink"): the signed-in user's
//! linked integrations ([`crate::users::links`]), each with an Unlink button that revokes
//! the grant and queues an unlink event for the device graph (`agentUsers.delete`), and
//! sign-out.

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext};
use crate::pages::{self, AccountPage, LinkView, PageLocale};
use crate::sessions::{self, SESSION_COOKIE};
use crate::store::StoreError;
use crate::users::links;
use crate::web::authorize::{self, SignedInForm};
use crate::web::cookies;

/// Path of the account page.
pub const PATH: &str = pages::ACCOUNT_PATH;
/// Path the Unlink form posts to.
pub const UNLINK_PATH: &str = "/account/unlink";
/// Path the sign-out form posts to.
pub const SIGN_OUT_PATH: &str = "/signout";

fn unavailable(app: &App, error: &StoreError) -> HttpResponse {
    tracing::warn!(%error, "store failed on the account page");
    crate::metrics::record_store_error("account");
    authorize::error_page(
        app,
        StatusCode::SERVICE_UNAVAILABLE,
        "The service is briefly unavailable. Try again in a moment.",
    )
}

fn date_of(seconds: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp(seconds)
        .map(|at| at.date().to_string())
        .unwrap_or_default()
}

/// `GET /account`.
pub async fn account(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let session =
        match sessions::current(app, cookies::cookie(request.headers(), SESSION_COOKIE)).await {
            Ok(Some(session)) => session,
            Ok(None) => return authorize::account_sign_in_page(app).await,
            Err(error) => return unavailable(app, &error),
        };
    let user = match app.store.get_user(&session.record.user_id).await {
        Ok(Some(user)) => user,
        Ok(None) => return authorize::account_sign_in_page(app).await,
        Err(error) => return unavailable(app, &error),
    };
    let views = match links::live_links(app, &user.id).await {
        Ok(live) => live
            .into_iter()
            .map(|linked| LinkView {
                name: linked.name,
                since: date_of(linked.link.created_at),
                grant_id: linked.link.grant_id,
            })
            .collect(),
        Err(error) => return unavailable(app, &error),
    };
    let page = AccountPage {
        locale: PageLocale::new(&pages::ENGLISH, &app.oauth.platform_name, ""),
        user_email: user.email,
        links: views,
        csrf: session.record.csrf_secret,
    };
    crate::web::page::html(StatusCode::OK, &page, None)
}

/// `POST /account/unlink`: revokes one of the user's grants.
pub async fn unlink(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let (form, session) = match authorize::signed_in_form(app, request).await {
        SignedInForm::Valid(form, session) => (form, session),
        SignedInForm::NoSession(_) => return authorize::account_sign_in_page(app).await,
        SignedInForm::Refused(answer) => return answer,
    };
    let user_id = &session.record.user_id;
    let grant_id = form.get("grant").unwrap_or_default();
    if let Err(error) = links::unlink_own(app, user_id, grant_id).await {
        return unavailable(app, &error);
    }
    let mut answer = crate::http::response::with_body(
        StatusCode::SEE_OTHER,
        "text/plain; charset=utf-8",
        Bytes::new(),
    );
    answer.headers_mut().insert(
        hyper::header::LOCATION,
        hyper::header::HeaderValue::from_static(PATH),
    );
    answer
}

/// `POST /signout`.
pub async fn sign_out(
    app: &App,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    match authorize::signed_in_form(app, request).await {
        SignedInForm::Valid(_, session) => authorize::end_session(app, &session, PATH).await,
        SignedInForm::NoSession(_) => authorize::account_sign_in_page(app).await,
        SignedInForm::Refused(answer) => answer,
    }
}
