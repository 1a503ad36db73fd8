//! `grant_type=authorization_code` (RFC 6749 §4.1.3): the code is a JWT linkd signed, so
//! its signature, type, expiry, audience (the client), redirect URI and PKCE challenge are
//! checked without the store; single use is the store's, in two phases.
//!
//! Redemption begins by taking the code for this attempt (a lease of a few store timeouts)
//! and finishes by spending it atomically with storing the refresh token. A store fault in
//! between leaves a code the client's retry can still redeem; a code presented after it was
//! spent is a replay and revokes its grant (RFC 6749 §4.1.2).

use super::{CodeGrant, Issued, TokenError, sign_access_token};
use crate::app::App;
use crate::grants::{self, CodeClaims, grant_label};
use crate::oauth::pkce;
use crate::scope::Scope;
use crate::secrets;
use crate::store::{
    ClientRecord, CodeRedemption, LinkRecord, RedemptionFinish, RedemptionStart, RefreshTokenRecord,
};
use crate::tokens::{Expectations, TokenKind};

/// Checks `grant`'s code for `client` and, if it is good and unspent, issues the grant's
/// access and refresh tokens and records the link.
pub async fn redeem(
    app: &App,
    client: &ClientRecord,
    grant: &CodeGrant,
) -> Result<Issued, TokenError> {
    let now = app.clock.now();
    let claims = verify_code(app, client, grant, now)?;
    // Everything else checked: now take the code for this attempt, atomically across
    // instances. Spending it is a second step, atomic with storing the refresh token, so
    // that a store fault in between leaves a code the client's retry can still redeem.
    let attempt = CodeRedemption {
        jti: claims.jti.clone(),
        grant_id: claims.gid.clone(),
        attempt: grants::new_id(&*app.random).map_err(|_| TokenError::Unavailable)?,
        now,
        lease_until: now + app.oauth.redemption_lease_secs,
        expires_at: claims.exp + app.oauth.leeway_secs,
    };
    let begun = tokio::time::Instant::now();
    match crate::metrics::time_store("begin_redemption", app.store.begin_redemption(&attempt))
        .await?
    {
        RedemptionStart::Started => {}
        RedemptionStart::InFlight { lease_until } => {
            // Another attempt of this client holds the code and may still issue tokens: it
            // may be the request this one retries. Neither is known to be a replay yet.
            tracing::info!(
                client_id = %client.id,
                grant = %grant_label(&claims.gid),
                "authorization code redemption already under way"
            );
            return Err(TokenError::Busy(lease_until.saturating_sub(now).max(1)));
        }
        RedemptionStart::Redeemed => {
            crate::metrics::record_code_replay();
            app.unlink_grant(&claims.sub, &client.id, &claims.gid)
                .await?;
            tracing::warn!(
                client_id = %client.id,
                grant = %grant_label(&claims.gid),
                "authorization code replayed: grant revoked"
            );
            return Err(TokenError::InvalidGrant("the code was already used"));
        }
    }
    let (refresh_token, stored) = grants::new_refresh_token(&*app.random, &claims.gid)
        .map_err(|_| TokenError::Unavailable)?;
    let link = LinkRecord {
        grant_id: claims.gid.clone(),
        user_id: claims.sub.clone(),
        client_id: client.id.clone(),
        scope: claims.scope.clone(),
        created_at: now,
    };
    // The link is recorded first (idempotently), so that a grant that gains a refresh token
    // is always listed on the account page, where it can be unlinked.
    crate::metrics::time_store("put_link", app.store.put_link(&link)).await?;
    if app.clock.now() > attempt.lease_until {
        // Past its lease a retry may have taken the code over; finishing would then only
        // be refused, so give the retry its chance at once.
        return Err(TokenError::Unavailable);
    }
    let scope = Scope::from_stored(&claims.scope);
    // Signed before the code is spent: nothing may fail once it is.
    let access_token = sign_access_token(
        app,
        &app.issuer,
        &client.id,
        &claims.sub,
        &scope,
        &claims.gid,
    )?;
    let finished = finish(
        app,
        &attempt,
        begun,
        &stored.digest,
        &RefreshTokenRecord {
            user_id: claims.sub.clone(),
            client_id: client.id.clone(),
            grant_id: claims.gid.clone(),
            scope: claims.scope.clone(),
            created_at: now,
        },
    )
    .await?;
    // From here on the code is spent: a 503 would turn the client's retry into a replay
    // that revokes the grant, so a store fault below is logged, never answered.
    match finished {
        RedemptionFinish::Issued => {
            match grants::withdrawn(&*app.store, &claims.sub, &claims.gid).await {
                // The user was removed, or the grant revoked, while the link was being made.
                Ok(true) => end_withdrawn_grant(app, &claims, &client.id).await,
                Ok(false) => {
                    // As the platform does after a link: ask the integration for the user's
                    // devices.
                    crate::devicegraph::fulfillment::SyncCaller::new(app)
                        .sync_in_background(client.clone(), link);
                }
                Err(error) => tracing::warn!(%error, "could not recheck a new grant"),
            }
        }
        // A replay of the code revoked the grant while this attempt held it. This attempt
        // holds the code, so it still gets its answer; tokens of a revoked grant are refused
        // wherever they are presented, as after any replay.
        RedemptionFinish::GrantRevoked => end_withdrawn_grant(app, &claims, &client.id).await,
        // A retry took the code over: it, not this attempt, issues the tokens.
        RedemptionFinish::Superseded => return Err(TokenError::Unavailable),
    }
    tracing::info!(client_id = %client.id, grant = %grant_label(&claims.gid), "code exchanged");
    Ok(Issued {
        token_type: "Bearer",
        access_token,
        refresh_token: Some(refresh_token),
        expires_in: app.oauth.access_token_ttl_secs,
        scope,
    })
}

/// The claims of `grant`'s code, if it is linkd's, unexpired, `client`'s, for the same
/// redirect URI, and its PKCE verifier matches.
fn verify_code(
    app: &App,
    client: &ClientRecord,
    grant: &CodeGrant,
    now: i64,
) -> Result<CodeClaims, TokenError> {
    let invalid_code =
        || TokenError::InvalidGrant("the code is invalid, expired or not this client's");
    let claims: CodeClaims = app
        .keyring
        .load()
        .verify(
            &grant.code,
            TokenKind::AuthorizationCode,
            &Expectations {
                now,
                leeway: app.oauth.leeway_secs,
                issuer: Some(&app.issuer),
                audience: Some(&client.id),
            },
        )
        .map_err(|_| invalid_code())?;
    // The leeway above absorbs clock skew for `iat`; it must not lengthen the code's life
    // beyond the lifetime it was issued with (10 minutes at most).
    if now > claims.exp {
        return Err(invalid_code());
    }
    let redirect_mismatch =
        TokenError::InvalidGrant("redirect_uri does not match the authorization request");
    let redirect_uri = grant
        .redirect_uri
        .as_deref()
        .ok_or(redirect_mismatch.clone())?;
    if !secrets::constant_time_eq(
        secrets::sha256_hex(redirect_uri.as_bytes()).as_bytes(),
        claims.rdh.as_bytes(),
    ) {
        return Err(redirect_mismatch);
    }
    match (&claims.pkce, grant.code_verifier.as_deref()) {
        (Some(challenge), Some(verifier)) => {
            if !pkce::verify(verifier, challenge).unwrap_or(false) {
                return Err(TokenError::InvalidGrant("code_verifier does not match"));
            }
        }
        (Some(_), None) => return Err(TokenError::InvalidGrant("code_verifier is required")),
        (None, Some(_)) => {
            return Err(TokenError::InvalidGrant(
                "code_verifier sent for a request without code_challenge",
            ));
        }
        (None, None) => {}
    }
    Ok(claims)
}

/// Finishes `attempt`, taken at `begun`, asking the store again after a failure until the
/// attempt's lease has passed: a failed call may still have spent the code (its answer was
/// lost, or it landed after linkd gave up on it), and answering 503 for a spent code would
/// turn the client's retry into a replay that revokes the grant. The store answers a repeat
/// as it answered the first call, and spends nothing past the lease, so a failure answered
/// after the lease leaves the code to the retry, unless the store stayed unreachable for the
/// whole lease after spending it.
async fn finish(
    app: &App,
    attempt: &CodeRedemption,
    begun: tokio::time::Instant,
    digest: &str,
    record: &RefreshTokenRecord,
) -> Result<RedemptionFinish, TokenError> {
    let lease = u64::try_from(attempt.lease_until.saturating_sub(attempt.now)).unwrap_or(0);
    // A little past the lease as the store measures it: it began when the store took the
    // code, before `begun`.
    let deadline = begun + std::time::Duration::from_secs(lease);
    loop {
        match crate::metrics::time_store(
            "finish_redemption",
            app.store.finish_redemption(attempt, digest, record),
        )
        .await
        {
            Ok(finished) => return Ok(finished),
            Err(error) if tokio::time::Instant::now() >= deadline => return Err(error.into()),
            Err(error) => {
                tracing::warn!(%error, "could not finish a code redemption; asking again");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// Ends a grant withdrawn while its code was being redeemed (its link, consent and an unlink
/// event). A store fault is only logged: the grant is revoked already, and the rest is
/// finished by the account page or by unlinking again.
async fn end_withdrawn_grant(app: &App, claims: &CodeClaims, client_id: &str) {
    if let Err(error) = app.unlink_grant(&claims.sub, client_id, &claims.gid).await {
        tracing::warn!(%error, grant = %grant_label(&claims.gid), "could not end a withdrawn grant");
    }
}
