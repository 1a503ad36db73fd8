//! The userinfo endpoint (the interface's "Userinfo endpoint"; bearer usage by RFC 6750
//! §2.1 and §3): an access token in the `Authorization` header only, checked for signature,
//! type, issuer, expiry and revocation, answered with the user's claims that the token's
//! scope covers.
//!
//! A 401 makes the platform discard the link, so linkd answers 401 only when it knows the
//! token is bad; when the store cannot say whether it was revoked, it answers 503.

use crate::app::App;
use crate::scope::Scope;
use crate::tokens::bearer::BearerFailure;

/// Path of this endpoint.
pub const PATH: &str = "/userinfo";

/// The claims of the user of access token `token` that its scope covers.
pub async fn userinfo(
    app: &App,
    token: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, BearerFailure> {
    let claims = app.check_access_token(token, Some(&app.issuer)).await?;
    let Some(user) =
        crate::metrics::time_store("get_user", app.store.get_user(&claims.sub)).await?
    else {
        return Err(BearerFailure::Invalid("the account no longer exists"));
    };
    Ok(claims_for_scope(user, &Scope::from_stored(&claims.scope)))
}

/// The claims of `user` that `scope` covers, as the consent page described them: `sub`
/// always, `email` with the `email` scope, the names and picture with `profile` (OpenID
/// Connect Core §5.4).
fn claims_for_scope(
    user: crate::store::UserRecord,
    scope: &Scope,
) -> serde_json::Map<String, serde_json::Value> {
    let granted = |wanted: &str| scope.contains(wanted);
    let mut body = serde_json::Map::new();
    body.insert("sub".into(), user.id.into());
    if granted("email") {
        body.insert("email".into(), user.email.into());
    }
    if granted("profile") {
        for (claim, value) in [
            ("given_name", user.given_name),
            ("family_name", user.family_name),
            ("name", user.name),
            ("picture", user.picture),
        ] {
            if let Some(value) = value {
                body.insert(claim.into(), value.into());
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_follow_the_scope() {
        let user = crate::store::UserRecord {
            id: "u1".into(),
            email: "ada@example.com".into(),
            name: Some("Ada Lovelace".into()),
            given_name: Some("Ada".into()),
            family_name: None,
            picture: Some("https://example.com/ada.png".into()),
            password_hash: "h".into(),
            created_at: 0,
        };
        let keys = |scope: &str| {
            claims_for_scope(user.clone(), &Scope::parse(scope).unwrap())
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(keys("devices"), ["sub"]);
        assert_eq!(keys("openid"), ["sub"]);
        assert_eq!(keys("openid email"), ["email", "sub"]);
        assert_eq!(keys("profile"), ["given_name", "name", "picture", "sub"]);
        assert_eq!(keys("emails profiles"), ["sub"]);
    }
}
