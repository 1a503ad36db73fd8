//! Token revocation (RFC 7009), client-authenticated.
//!
//! A refresh token ends its whole grant as Unlink does ([`grants::unlink`]): the refresh
//! token and every access token of the grant die for good, the link leaves the account page,
//! consent is forgotten and the device graph is told (RFC 7009 §2.1 lets the server revoke
//! the grant). An access token revokes itself only: it is short-lived, and a client that
//! revokes one (e.g. on logout of one session) has not said the link is over. An unknown,
//! invalid or another client's token is answered 200 as well (RFC 7009 §2.2) and changes
//! nothing.

use crate::app::App;
use crate::grants::{self, AccessClaims, grant_label};
use crate::oauth::error::TokenError;
use crate::store::ClientRecord;
use crate::tokens::{Expectations, TokenKind};

/// Path of this endpoint.
pub const PATH: &str = "/revoke";

/// Revokes `presented` for `client`. Succeeds, changing nothing, for a token that is
/// unknown, invalid or another client's; fails only when the store cannot answer.
pub async fn revoke(app: &App, client: &ClientRecord, presented: &str) -> Result<(), TokenError> {
    let now = app.clock.now();
    if let Some(refresh) = grants::parse_refresh_token(presented) {
        if let Some(found) = app
            .store
            .get_refresh_token(&refresh.grant_id, &refresh.digest)
            .await?
            && found.record.client_id == client.id
        {
            app.unlink_grant(&found.record.user_id, &client.id, &refresh.grant_id)
                .await?;
            tracing::info!(client_id = %client.id, grant = %grant_label(&refresh.grant_id), "grant revoked by its client");
        }
        return Ok(());
    }
    let verified: Result<AccessClaims, _> = app.keyring.load().verify(
        presented,
        TokenKind::AccessToken,
        &Expectations {
            now,
            leeway: app.oauth.leeway_secs,
            issuer: Some(&app.issuer),
            audience: None,
        },
    );
    if let Ok(claims) = verified
        && claims.client_id == client.id
    {
        app.store
            .revoke_token(&claims.jti, claims.exp + app.oauth.leeway_secs, now)
            .await?;
        tracing::info!(client_id = %client.id, "access token revoked by its client");
    }
    Ok(())
}
