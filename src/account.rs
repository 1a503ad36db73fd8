//! The account page (the interface's "a way to unlink"): the signed-in user's linked
//! integrations, each with an Unlink button that revokes the grant — refresh token and
//! access tokens — and queues an unlink event for the device graph
//! (`agentUsers.delete`).
//!
//! Unlink is [`crate::grants::unlink`], which kills the grant before it removes the link: a store
//! failure part-way leaves the link listed beside a dead grant, never a link gone while its
//! grant still works. Pressing Unlink again finishes the job, and so does the page itself
//! when it finds a listed link whose grant is already revoked (also after `/revoke` or a
//! replayed code).

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::http::{HttpResponse, RequestContext};
use crate::oauth::authorize::{self, SignedInForm};
use crate::pages::{self, AccountPage, LinkView, PageLocale};
use crate::sessions;
use crate::store::StoreError;

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
    let session = match sessions::current(app, request.headers()).await {
        Ok(Some(session)) => session,
        Ok(None) => return authorize::account_sign_in_page(app),
        Err(error) => return unavailable(app, &error),
    };
    let user = match app.store.get_user(&session.record.user_id).await {
        Ok(Some(user)) => user,
        Ok(None) => return authorize::account_sign_in_page(app),
        Err(error) => return unavailable(app, &error),
    };
    let links = match app.store.list_links(&user.id).await {
        Ok(links) => links,
        Err(error) => return unavailable(app, &error),
    };
    let mut views = Vec::with_capacity(links.len());
    for link in links {
        // A link whose grant is already dead is an unlink left half-done: finish it rather
        // than list a link that no longer works.
        let finished = async {
            if !app.store.is_grant_revoked(&link.grant_id).await? {
                return Ok(false);
            }
            app.unlink_grant(&user.id, &link.client_id, &link.grant_id)
                .await?;
            Ok::<_, StoreError>(true)
        };
        match finished.await {
            Ok(true) => continue,
            Ok(false) => {}
            Err(error) => return unavailable(app, &error),
        }
        let name = match app.store.get_client(&link.client_id).await {
            Ok(Some(client)) => client.name,
            Ok(None) => link.client_id.clone(),
            Err(error) => return unavailable(app, &error),
        };
        views.push(LinkView {
            name,
            since: date_of(link.created_at),
            grant_id: link.grant_id,
        });
    }
    let page = AccountPage {
        locale: PageLocale::new(&pages::ENGLISH, &app.oauth.platform_name, ""),
        user_email: user.email,
        links: views,
        csrf: session.record.csrf_secret,
    };
    pages::html(StatusCode::OK, &page, None)
}

/// `POST /account/unlink`: revokes one of the user's grants.
pub async fn unlink(
    app: &Arc<App>,
    request: &Request<Bytes>,
    _context: &RequestContext,
) -> HttpResponse {
    let (form, session) = match authorize::signed_in_form(app, request).await {
        SignedInForm::Valid(form, session) => (form, session),
        SignedInForm::NoSession(_) => return authorize::account_sign_in_page(app),
        SignedInForm::Refused(answer) => return answer,
    };
    let user_id = &session.record.user_id;
    let grant_id = form.get("grant").unwrap_or_default();
    // Only a grant of one of this user's links: the form names any id it likes.
    let link = match app.store.list_links(user_id).await {
        Ok(links) => links.into_iter().find(|link| link.grant_id == grant_id),
        Err(error) => return unavailable(app, &error),
    };
    if let Some(link) = link {
        if let Err(error) = app
            .unlink_grant(user_id, &link.client_id, &link.grant_id)
            .await
        {
            return unavailable(app, &error);
        }
        tracing::info!(client_id = %link.client_id, "user unlinked an integration");
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
        SignedInForm::NoSession(_) => authorize::account_sign_in_page(app),
        SignedInForm::Refused(answer) => answer,
    }
}
