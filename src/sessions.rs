//! Browser sessions of the sign-in pages, and the CSRF tokens that bind forms to them.
//!
//! A session is a random cookie value (`__Host-` prefixed: `Secure`, `Path=/`, no
//! `Domain`, so no sibling host can plant or read it; `HttpOnly`; `SameSite=Lax`) whose
//! SHA-256 digest keys a server-side record, so signing out or an operator can end it. Forms
//! of a signed-in user carry the session's CSRF secret; the sign-in form, shown before any
//! session exists, carries a separate random value that must match its own `__Host-` cookie
//! (double submit).
//!
//! A session lasts as long as the account it was begun for, under the password it was begun
//! with: it records a digest of the user's password hash, so removing the user or changing
//! the password (`linkd users remove`, `linkd users set-password`) ends every session of
//! that user at once, on every instance, without the store having to find them.

use crate::app::App;
use crate::secrets;
use crate::store::{SessionRecord, StoreError, UserRecord};

/// Name of the session cookie.
pub const SESSION_COOKIE: &str = "__Host-linkd-session";
/// Name of the pre-session CSRF cookie of the sign-in form.
pub const SIGNIN_CSRF_COOKIE: &str = "__Host-linkd-csrf";

/// A signed-in session.
#[derive(Debug, Clone)]
pub struct Session {
    /// Digest of the cookie value: the store key.
    pub digest: String,
    /// The stored record.
    pub record: SessionRecord,
}

/// The live session named by the session cookie's value, if any.
pub async fn current(app: &App, cookie: Option<&str>) -> Result<Option<Session>, StoreError> {
    let Some(value) = cookie else {
        return Ok(None);
    };
    let digest = secrets::sha256_hex(value.as_bytes());
    let Some(record) = app.store.get_session(&digest, app.clock.now()).await? else {
        return Ok(None);
    };
    let Some(user) = app.store.get_user(&record.user_id).await? else {
        return Ok(None);
    };
    let same_password = secrets::constant_time_eq(
        credential_stamp(&user).as_bytes(),
        record.credential.as_bytes(),
    );
    Ok(same_password.then_some(Session { digest, record }))
}

/// What a session remembers of the password it was begun under: a digest of the user's
/// password hash (itself salted), enough to notice a change and useless for anything else.
fn credential_stamp(user: &UserRecord) -> String {
    secrets::sha256_hex(format!("linkd-session-credential:{}", user.password_hash).as_bytes())
}

/// Why a session could not be created.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The store could not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No randomness.
    #[error(transparent)]
    Random(#[from] secrets::RandomUnavailable),
}

/// Starts a session for `user`; returns the cookie value to set and the session.
pub async fn start(app: &App, user: &UserRecord) -> Result<(String, Session), SessionError> {
    let value = app.random.token(32)?;
    let now = app.clock.now();
    let record = SessionRecord {
        user_id: user.id.clone(),
        credential: credential_stamp(user),
        csrf_secret: app.random.token(32)?,
        created_at: now,
        expires_at: now + app.oauth.session_ttl_secs,
    };
    let digest = secrets::sha256_hex(value.as_bytes());
    app.store.put_session(&digest, &record, now).await?;
    Ok((value, Session { digest, record }))
}

/// Whether a submitted CSRF token matches the expected one, in constant time.
pub fn csrf_matches(expected: &str, submitted: Option<&str>) -> bool {
    submitted.is_some_and(|submitted| {
        !expected.is_empty() && secrets::constant_time_eq(expected.as_bytes(), submitted.as_bytes())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_comparison() {
        assert!(csrf_matches("token", Some("token")));
        assert!(!csrf_matches("token", Some("tokeN")));
        assert!(!csrf_matches("token", None));
        assert!(!csrf_matches("", Some("")));
    }
}
