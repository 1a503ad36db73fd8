//! `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer` (RFC 7523 §2.1): a service
//! account's signed assertion for an access token carrying the device-graph scope. The
//! assertion authenticates the caller; no client credentials are involved.

use super::{AssertionGrant, Issued, PATH, TokenError, sign_access_token};
use crate::app::App;
use crate::scope::Scope;
use crate::service_accounts::{self, AssertionError};

/// The grant type's URN.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

fn refused(error: &'static str, description: &str) -> TokenError {
    TokenError::Assertion {
        error,
        description: description_safe(description),
    }
}

/// `description` in the characters RFC 6749 §5.2 allows in `error_description`
/// (%x20-21 / %x23-5B / %x5D-7E), any other becoming `?`: descriptions of this grant may
/// quote what the caller sent.
pub fn description_safe(description: &str) -> String {
    description
        .chars()
        .map(|c| match c {
            ' '..='!' | '#'..='[' | ']'..='~' => c,
            _ => '?',
        })
        .collect()
}

/// An access token for the service account whose assertion `grant` carries.
pub async fn issue(app: &App, grant: &AssertionGrant) -> Result<Issued, TokenError> {
    let Some(assertion) = grant.assertion.as_deref() else {
        return Err(refused("invalid_request", "assertion is required"));
    };
    // linkd's own URL, and what client libraries write whatever the key file says.
    let own = app.url(PATH);
    let audiences: Vec<&str> = std::iter::once(own.as_str())
        .chain(app.oauth.assertion_audiences.iter().map(String::as_str))
        .collect();
    let (account, claims) = service_accounts::verify_assertion(
        &*app.store,
        assertion,
        &audiences,
        app.clock.now(),
        app.oauth.leeway_secs,
    )
    .await
    .map_err(|error| match error {
        AssertionError::Unavailable => TokenError::Unavailable,
        other => refused("invalid_grant", &other.to_string()),
    })?;
    // The scope comes in the assertion (as client libraries send it) or as a parameter.
    let requested = grant
        .scope
        .as_deref()
        .or_else(|| claims["scope"].as_str())
        .unwrap_or_default();
    let Ok(scope) = Scope::parse(requested) else {
        return Err(refused("invalid_scope", "the scope is malformed"));
    };
    if scope.is_empty() {
        return Err(refused("invalid_scope", "a scope is required"));
    }
    if let Some(unknown) = scope
        .tokens()
        .find(|token| !account.scopes.iter().any(|allowed| allowed == token))
    {
        return Err(refused(
            "invalid_scope",
            &format!("scope {unknown} is not allowed for this service account"),
        ));
    }
    let grant = format!("sa-{}", account.unique_id);
    let access_token = sign_access_token(
        app,
        &app.devicegraph_audience(),
        &account.client_id,
        &account.email,
        &scope,
        &grant,
    )?;
    tracing::info!(service_account = %account.email, "service-account access token issued");
    Ok(Issued {
        token_type: "Bearer",
        access_token,
        refresh_token: None,
        expires_in: app.oauth.access_token_ttl_secs,
        scope,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_descriptions_keep_to_the_allowed_characters() {
        assert_eq!(
            description_safe("scope a\"b\\c\u{e9}\td is not allowed"),
            "scope a?b?c??d is not allowed"
        );
        assert_eq!(
            description_safe("aud must be https://x/token"),
            "aud must be https://x/token"
        );
    }
}
