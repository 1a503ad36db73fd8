//! The account page (the interface's "a way to unlink"): the signed-in user's linked
//! integrations, each with an Unlink button that revokes the grant — refresh token and
//! access tokens — and queues an unlink event for the device graph
//! (`agentUsers.delete`).

use std::sync::Arc;

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::grants;
use crate::http::{HttpResponse, RequestContext};
use crate::oauth::authorize::{self, SignedInForm};
use crate::pages::{self, AccountPage, LinkView, PageLocale};
use crate::sessions;
use crate::store::{StoreError, UnlinkEvent};

/// Path of the account page.
pub const PATH: &str = "/account";
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
    app: &App,
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
    let user_id = session.record.user_id.clone();
    let grant_id = form.get("grant").unwrap_or_default();
    let now = app.clock.now();
    let removed = match app.store.remove_link(&user_id, grant_id).await {
        Ok(removed) => removed,
        Err(error) => return unavailable(app, &error),
    };
    if let Some(link) = removed {
        let revoke = async {
            app.revoke_grant(&link.grant_id).await?;
            app.store.delete_consent(&user_id, &link.client_id).await?;
            app.store
                .push_unlink_event(&UnlinkEvent {
                    id: grants::new_id(),
                    user_id: user_id.clone(),
                    client_id: link.client_id.clone(),
                    grant_id: link.grant_id.clone(),
                    at: now,
                })
                .await
        };
        if let Err(error) = revoke.await {
            return unavailable(app, &error);
        }
        tracing::info!(client_id = %link.client_id, "user unlinked an integration");
        crate::devicegraph::unlink::UnlinkWorker::new(app).handle_soon();
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
