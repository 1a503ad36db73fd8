//! Which linkd user a provider's person is: the (provider, subject) mapping, with the user
//! created just in time on a first sign-in and its profile refreshed on every sign-in.
//!
//! - A new user needs an email: linkd users are unique by email. Claims without an email, with
//!   `email_verified: false`, or with an address linkd's rules refuse end the sign-in
//!   ([`SignInFailure::Failed`]).
//! - An email that already belongs to another linkd user is never taken over: that would let
//!   whoever controls the provider's account sign in as the existing user. The person is told
//!   to sign in with the password ([`SignInFailure::EmailTaken`]).
//! - The profile (`name`, `given_name`, `family_name`, `picture`) follows the provider at every
//!   sign-in; a value that breaks linkd's rules (`linkd users add`'s) is dropped, not fatal.
//!   The email is the one set at the first sign-in.
//! - Users created this way have no password (an empty hash): they sign in only through the
//!   provider, unless an operator sets one with `linkd users set-password`.

use crate::app::App;
use crate::identity::SignInFailure;
use crate::identity::claims::ExternalClaims;
use crate::store::{IdentityProviderRecord, StoreError, UserRecord};
use crate::users::{self, Email, Profile, ProfileField};

/// The profile fields of `claims` that pass linkd's rules.
fn profile_of(claims: &ExternalClaims) -> Profile {
    let text = |field, value: &Option<String>| {
        value
            .as_deref()
            .and_then(|value| users::parse_profile_text(field, value).ok())
    };
    Profile {
        name: text(ProfileField::Name, &claims.name),
        given_name: text(ProfileField::GivenName, &claims.given_name),
        family_name: text(ProfileField::FamilyName, &claims.family_name),
        picture: claims
            .picture
            .as_deref()
            .and_then(|picture| users::parse_picture_url(picture).ok()),
    }
}

/// The linkd user `claims` stand for, created or refreshed; `company` names who to ask for
/// help when the email is taken.
pub async fn user_for(
    app: &App,
    provider: &IdentityProviderRecord,
    claims: &ExternalClaims,
    company: &str,
) -> Result<UserRecord, SignInFailure> {
    let Profile {
        name,
        given_name,
        family_name,
        picture,
    } = profile_of(claims);
    let store = &app.store;
    if let Some(user_id) = store
        .get_external_identity(&provider.id, &claims.subject)
        .await?
        && let Some(mut user) = store.get_user(&user_id).await?
    {
        let refreshed = (&name, &given_name, &family_name, &picture)
            != (
                &user.name,
                &user.given_name,
                &user.family_name,
                &user.picture,
            );
        if refreshed {
            user.name = name;
            user.given_name = given_name;
            user.family_name = family_name;
            user.picture = picture;
            store.update_user(&user).await?;
        }
        return Ok(user);
    }
    let failed = || SignInFailure::Failed {
        name: provider.name.clone(),
    };
    let email = claims
        .email
        .as_deref()
        .filter(|_| claims.email_verified != Some(false))
        .and_then(|email| Email::parse(email).ok())
        .ok_or_else(|| {
            tracing::info!(provider = %provider.id, "sign-in refused: the provider shared no usable email");
            failed()
        })?;
    let user = UserRecord {
        id: app.random.uuid()?,
        email: email.as_str().to_owned(),
        name,
        given_name,
        family_name,
        picture,
        password_hash: String::new(),
        created_at: app.clock.now(),
    };
    // The mapping first: should the insert fail, the mapping names no user and the next
    // sign-in starts over, whereas a user without its mapping would hold the email for good.
    store
        .put_external_identity(&provider.id, &claims.subject, &user.id)
        .await?;
    match store.insert_user(&user).await {
        Ok(()) => {
            tracing::info!(provider = %provider.id, user_id = %user.id, "user created at the first sign-in through an identity provider");
            Ok(user)
        }
        Err(StoreError::AlreadyExists(_)) => Err(SignInFailure::EmailTaken {
            email: user.email,
            company: company.to_owned(),
        }),
        Err(other) => Err(other.into()),
    }
}
