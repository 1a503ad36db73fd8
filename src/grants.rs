//! Grants: what one successful linking produces, and every token derived from it.
//!
//! A grant is born when an authorization code is issued (its id travels in the code), is
//! materialised when the code is redeemed (refresh token, access tokens, the link on the
//! account page), and dies when it is revoked — by a replayed code (RFC 6819 §5.2.1.1), by
//! the user unlinking, by RFC 7009 revocation of its refresh token, or by the operator
//! removing the user. Each of these is one domain operation, [`unlink`]: the grant is
//! revoked for good, its refresh tokens deleted, its link removed, the consent forgotten and
//! an unlink event queued for the device graph. Every access token carries the grant id, so
//! revoking the grant revokes them all without listing them; the revocation never lapses,
//! so no token of a dead grant, whenever it was signed, is ever accepted again.
//!
//! Refresh tokens look like `rt1.<grant id>.<43 base64url chars>` (256 random bits). The
//! grant id inside lets the store keep the token's digest beside its grant's revocation
//! mark (one Redis Cluster slot, one round trip). They do not expire and are not rotated:
//! the platform keeps using the refresh token it received at linking, and a rotation whose
//! response is lost would unlink the user.

use serde::{Deserialize, Serialize};

use crate::secrets::{self, Randomness};
use crate::store::{Store, StoreResult, UnlinkEvent};

/// Prefix and version of refresh tokens.
const REFRESH_TOKEN_PREFIX: &str = "rt1";

/// Claims of an authorization code (header `typ: code+jwt`). Minimal on purpose: codes
/// travel in URLs, so they carry ids and digests, never personal data (RFC 9700 §4.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeClaims {
    /// Issuer.
    pub iss: String,
    /// The client the code was issued to.
    pub aud: String,
    /// The user.
    pub sub: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issue time, Unix seconds.
    pub iat: i64,
    /// Unique id, claimed once in the store on redemption.
    pub jti: String,
    /// SHA-256 (hex) of the redirect URI of the authorization request.
    pub rdh: String,
    /// Granted scope, space-delimited.
    pub scope: String,
    /// Grant id.
    pub gid: String,
    /// PKCE S256 challenge, when the request carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pkce: Option<String>,
}

/// Claims of an access token (RFC 9068, header `typ: at+jwt`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// Issuer.
    pub iss: String,
    /// The user.
    pub sub: String,
    /// Audience: the issuer's resource identifier.
    pub aud: String,
    /// The client the token was issued to.
    pub client_id: String,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issue time, Unix seconds.
    pub iat: i64,
    /// Unique id.
    pub jti: String,
    /// Granted scope, space-delimited.
    pub scope: String,
    /// Grant id.
    pub gid: String,
}

impl AccessClaims {
    /// The claims of a new access token `jti` from `issuer` (also its audience) for `sub`
    /// through `client_id`, issued at `now` and living `ttl_secs`.
    #[allow(clippy::too_many_arguments)]
    pub fn issue(
        jti: String,
        issuer: &str,
        client_id: &str,
        sub: &str,
        scope: &str,
        grant_id: &str,
        now: i64,
        ttl_secs: i64,
    ) -> Self {
        Self {
            iss: issuer.to_owned(),
            sub: sub.to_owned(),
            aud: issuer.to_owned(),
            client_id: client_id.to_owned(),
            exp: now + ttl_secs,
            iat: now,
            jti,
            scope: scope.to_owned(),
            gid: grant_id.to_owned(),
        }
    }

    /// The same claims for another audience: the device-graph API's, for service accounts,
    /// so that their tokens are refused where a user's are expected and the other way round.
    pub fn with_audience(mut self, audience: &str) -> Self {
        audience.clone_into(&mut self.aud);
        self
    }
}

/// A refresh token split into the parts the store needs.
#[derive(Clone, PartialEq, Eq)]
pub struct RefreshToken {
    /// Grant the token belongs to.
    pub grant_id: String,
    /// SHA-256 (hex) of the whole token: what the store keeps.
    pub digest: String,
}

impl std::fmt::Debug for RefreshToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RefreshToken")
            .field("grant_id", &self.grant_id)
            .finish_non_exhaustive()
    }
}

/// Makes a new refresh token for `grant_id`: returns the token (given to the client once)
/// and its stored form.
pub fn new_refresh_token(
    random: &dyn Randomness,
    grant_id: &str,
) -> Result<(String, RefreshToken), secrets::RandomUnavailable> {
    let token = format!("{REFRESH_TOKEN_PREFIX}.{grant_id}.{}", random.token(32)?);
    let digest = secrets::sha256_hex(token.as_bytes());
    Ok((
        token,
        RefreshToken {
            grant_id: grant_id.to_owned(),
            digest,
        },
    ))
}

/// Parses a presented refresh token; `None` when it cannot be one of ours.
pub fn parse_refresh_token(presented: &str) -> Option<RefreshToken> {
    let mut parts = presented.splitn(3, '.');
    let (prefix, grant_id, random) = (parts.next()?, parts.next()?, parts.next()?);
    let grant_id_ok = !grant_id.is_empty()
        && grant_id.len() <= 64
        && grant_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let random_ok = random.len() == 43
        && random
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    (prefix == REFRESH_TOKEN_PREFIX && grant_id_ok && random_ok).then(|| RefreshToken {
        grant_id: grant_id.to_owned(),
        digest: secrets::sha256_hex(presented.as_bytes()),
    })
}

/// A short, non-reversible label of a grant id for logs.
pub fn grant_label(grant_id: &str) -> String {
    secrets::sha256_hex(grant_id.as_bytes())[..12].to_owned()
}

/// A new random id (grant ids, `jti`s, attempts) from `random`.
pub fn new_id(random: &dyn Randomness) -> Result<String, secrets::RandomUnavailable> {
    random.uuid()
}

/// Ends grant `grant_id` of user `user_id` through client `client_id`, at `now`: revokes it
/// for good and deletes its refresh tokens, then — if the user's link for it is still there —
/// queues the unlink event, forgets the user's consent for the client and removes the link
/// ([`crate::store::LinkStore::unlink_grant`]). Returns whether a link was removed.
///
/// The caller must know the grant is the user's (a link of theirs, a refresh token or code
/// naming them): the grant is revoked whatever the link says. Safe to repeat: after a store
/// failure part-way, the link is still listed beside a dead grant, and calling again finishes
/// the job without queuing a second event.
pub async fn unlink(
    store: &dyn Store,
    user_id: &str,
    client_id: &str,
    grant_id: &str,
    now: i64,
) -> StoreResult<bool> {
    store
        .unlink_grant(&UnlinkEvent {
            // One event per grant, so that finishing an interrupted unlink queues no other.
            id: format!("unlink-{grant_id}"),
            user_id: user_id.to_owned(),
            client_id: client_id.to_owned(),
            grant_id: grant_id.to_owned(),
            at: now,
        })
        .await
}

/// Ends every grant the user's links name ([`unlink`] each); returns how many links were
/// removed. For an account that is removed or compromised.
pub async fn unlink_all(store: &dyn Store, user_id: &str, now: i64) -> StoreResult<usize> {
    let mut removed = 0;
    for link in store.list_links(user_id).await? {
        if unlink(store, user_id, &link.client_id, &link.grant_id, now).await? {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Whether a grant being materialised (its refresh token and link just stored) must be
/// ended at once: it was revoked meanwhile (a replay of its code), or its user was removed.
/// Checked after the link is stored, so that an operator removing the user — who ends the
/// user's listed grants before and after removing the record — cannot miss it either way.
pub async fn withdrawn(store: &dyn Store, user_id: &str, grant_id: &str) -> StoreResult<bool> {
    let (revoked, user) =
        tokio::try_join!(store.is_grant_revoked(grant_id), store.get_user(user_id))?;
    Ok(revoked || user.is_none())
}

/// Whether every scope in `requested` is in `granted` (space-delimited sets).
pub fn scope_is_subset(requested: &str, granted: &str) -> bool {
    let granted: Vec<&str> = granted.split(' ').filter(|s| !s.is_empty()).collect();
    requested
        .split(' ')
        .filter(|s| !s.is_empty())
        .all(|scope| granted.contains(&scope))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refresh_tokens_round_trip_and_carry_their_grant() {
        let (token, stored) = new_refresh_token(&secrets::SystemRandomness, "0b7e-grant").unwrap();
        assert!(token.starts_with("rt1.0b7e-grant."));
        assert_eq!(parse_refresh_token(&token), Some(stored.clone()));
        assert!(!stored.digest.contains(&token));
        let (other, _) = new_refresh_token(&secrets::SystemRandomness, "0b7e-grant").unwrap();
        assert_ne!(token, other);
    }

    #[test]
    fn foreign_refresh_tokens_are_not_parsed() {
        for garbage in [
            "",
            "rt1",
            "rt1.g",
            "rt1..x",
            "rt2.g.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "rt1.g.short",
            "rt1.g/../.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "eyJhbGciOiJFUzI1NiJ9.e30.sig",
        ] {
            assert_eq!(parse_refresh_token(garbage), None, "{garbage}");
        }
    }

    #[test]
    fn scope_subsets() {
        assert!(scope_is_subset("email", "email profile"));
        assert!(scope_is_subset("", "email"));
        assert!(!scope_is_subset("email devices", "email profile"));
    }
}
