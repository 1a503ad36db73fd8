//! `grant_type=refresh_token` (RFC 6749 §6): one store round trip returns the refresh-token
//! record with its grant's revocation state; the client must be the one it was issued to; a
//! narrower scope may be asked for, never a wider one. Refresh tokens are not rotated: the
//! platform keeps one per link, and rotation would turn a lost response into an unlink.

use super::{Issued, RefreshGrant, TokenError, sign_access_token};
use crate::app::App;
use crate::grants;
use crate::scope::Scope;
use crate::store::ClientRecord;

/// A new access token for `grant`, presented by `client`.
pub async fn refresh(
    app: &App,
    client: &ClientRecord,
    grant: &RefreshGrant,
) -> Result<Issued, TokenError> {
    let invalid =
        TokenError::InvalidGrant("the refresh token is invalid, revoked or not this client's");
    let parsed = grants::parse_refresh_token(&grant.refresh_token).ok_or(invalid.clone())?;
    let lookup = crate::metrics::time_store(
        "get_refresh_token",
        app.store
            .get_refresh_token(&parsed.grant_id, &parsed.digest),
    )
    .await?
    .ok_or(invalid.clone())?;
    if lookup.grant_revoked || lookup.record.client_id != client.id {
        return Err(invalid);
    }
    let granted = Scope::from_stored(&lookup.record.scope);
    let scope = match &grant.scope {
        None => granted,
        Some(requested) if requested.is_subset_of(&granted) => requested.clone(),
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
    Ok(Issued {
        token_type: "Bearer",
        access_token,
        refresh_token: None,
        expires_in: app.oauth.access_token_ttl_secs,
        scope,
    })
}
