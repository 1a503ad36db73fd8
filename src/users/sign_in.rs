//! Signing in with a password, throttled: the domain rules behind the sign-in form.
//!
//! A source past its limits is refused (its own failures count per account and in all);
//! an account under attack from anywhere only makes each attempt on it wait, at most
//! `signin_max_delay_secs`, so that its owner still gets in; one check at a time per source
//! and instance, so that a burst is counted as if sent one after another (see
//! [`crate::throttle`]). The password hash is checked only after all that, off the async
//! workers, and against a dummy hash for unknown users so that they cost the same time.
//! A password that matched a hash of another scheme or of older parameters (an imported
//! user) is hashed again with linkd's argon2id before the session starts, since the session
//! is bound to the hash it began under.

use std::net::IpAddr;

use crate::app::App;
use crate::sessions::{self, SessionError};
use crate::store::{StoreError, UserRecord};
use crate::throttle;

use super::{
    Email, HashReplaced, password, rehash_password, replace_password_hash, verify_password,
};

/// How a sign-in attempt ended.
pub enum SignIn {
    /// Signed in: the new session's cookie value.
    SignedIn {
        /// The user's id.
        user_id: String,
        /// The session cookie's value (a secret: never logged).
        cookie_value: String,
    },
    /// Wrong email or password.
    Failed,
    /// This source tried too often: retry after that many seconds.
    Throttled {
        /// Seconds until the window passes.
        retry_after_secs: u64,
    },
}

impl std::fmt::Debug for SignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::SignedIn { user_id, .. } => f
                .debug_struct("SignedIn")
                .field("user_id", user_id)
                .finish_non_exhaustive(),
            Self::Failed => f.write_str("Failed"),
            Self::Throttled { retry_after_secs } => f
                .debug_struct("Throttled")
                .field("retry_after_secs", retry_after_secs)
                .finish(),
        }
    }
}

/// Why a sign-in could not be decided.
#[derive(Debug, thiserror::Error)]
pub enum SignInError {
    /// The store could not answer.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No randomness for the session.
    #[error("no randomness for a session")]
    Random,
}

impl From<SessionError> for SignInError {
    fn from(error: SessionError) -> Self {
        match error {
            SessionError::Store(error) => Self::Store(error),
            SessionError::Random(_) => Self::Random,
        }
    }
}

/// Signs in with `email_text` and `password` from `address`.
pub async fn sign_in(
    app: &App,
    email_text: &str,
    password: &str,
    address: IpAddr,
) -> Result<SignIn, SignInError> {
    let source = throttle::source_of(address);
    let normalised_email = email_text.trim().to_lowercase();
    let account_key = throttle::account_key(&normalised_email);
    let account_source_key = throttle::account_source_key(&normalised_email, &source);
    let source_key = throttle::signin_source_key(&source);
    let window = app.oauth.throttle_window_secs;
    // Held until this attempt is counted, so that a burst from one source is counted as if
    // sent one after another.
    let patience = std::time::Duration::from_secs(app.oauth.signin_max_delay_secs + 5);
    let turn = app.throttle_blocks.check_turn(&source, patience).await;
    let now = app.clock.now();
    let account_source_failures = app.store.current(&account_source_key, now).await?;
    let source_failures = app.store.current(&source_key, now).await?;
    let account_failures = app.store.current(&account_key, now).await?;
    if turn.is_none()
        || account_source_failures >= app.oauth.signin_attempts_per_account
        || source_failures >= app.oauth.signin_attempts_per_address
    {
        tracing::warn!(%source, "sign-in throttled for this source");
        crate::metrics::record_throttled("signin");
        return Ok(SignIn::Throttled {
            retry_after_secs: window,
        });
    }
    let delay = throttle::account_delay_secs(
        account_failures,
        app.oauth.signin_attempts_per_account,
        app.oauth.signin_max_delay_secs,
    );
    if delay > 0 {
        tracing::info!(
            delay_secs = delay,
            "sign-in delayed: the account has recent failures"
        );
        tokio::time::sleep(std::time::Duration::from_secs(delay)).await;
    }

    let user = match Email::parse(email_text) {
        Ok(email) => app.store.get_user_by_email(email.as_str()).await?,
        Err(_) => None,
    };
    // argon2 is deliberately slow: keep it off the async workers. Unknown users are
    // verified against a dummy hash so they cost the same time.
    let verified = {
        let user = user.clone();
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || verify_password(user.as_ref(), &password))
            .await
            .unwrap_or(false)
    };
    let Some(user) = user.filter(|_| verified) else {
        let now = app.clock.now();
        app.store.hit(&account_source_key, window, now).await?;
        app.store.hit(&source_key, window, now).await?;
        app.store.hit(&account_key, window, now).await?;
        tracing::info!(%source, "sign-in failed");
        return Ok(SignIn::Failed);
    };
    let user = if password::needs_rehash(&user.password_hash) {
        rehash(app, user, password).await
    } else {
        user
    };
    let (cookie_value, _session) = sessions::start(app, &user).await?;
    if let Err(error) = app.store.reset(&account_source_key).await {
        tracing::warn!(%error, "could not reset the sign-in counter");
    }
    tracing::info!(user = %user.id, "signed in");
    Ok(SignIn::SignedIn {
        user_id: user.id,
        cookie_value,
    })
}

/// Replaces the hash `user`'s `password` just matched with a fresh argon2id hash and returns
/// the record the session should start from. Nothing here fails the sign-in: on any problem
/// the old hash stays (it still verifies; the next sign-in tries again) with a warning that
/// names the user and the cause, never the password or a hash. A password change
/// (`linkd users set-password`) racing this wins ([`replace_password_hash`]).
async fn rehash(app: &App, user: UserRecord, password: &str) -> UserRecord {
    let new_hash = {
        let password = password.to_owned();
        tokio::task::spawn_blocking(move || rehash_password(&password)).await
    };
    let new_hash = match new_hash {
        Ok(Ok(hash)) => hash,
        Ok(Err(error)) => {
            tracing::warn!(user = %user.id, %error, "could not rehash the password");
            return user;
        }
        Err(error) => {
            tracing::warn!(user = %user.id, %error, "could not rehash the password");
            return user;
        }
    };
    let from = password::password_scheme(&user.password_hash);
    match replace_password_hash(&*app.store, &user, new_hash).await {
        Ok(HashReplaced::Replaced(updated)) => {
            tracing::info!(user = %updated.id, from, "password rehashed to argon2id");
            updated
        }
        Ok(HashReplaced::Changed) => {
            tracing::info!(
                user = %user.id,
                "password not rehashed: it was changed or the user removed meanwhile"
            );
            user
        }
        Err(error) => {
            tracing::warn!(user = %user.id, %error, "could not rehash the password");
            user
        }
    }
}
