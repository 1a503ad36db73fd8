//! Identity providers as the operator registers them (`linkd identity-providers`): their ids,
//! the validation of every setting before anything is stored, and the rules of removal.
//!
//! A provider is removed only when no integration names it (`linkd clients update ID
//! --identity-provider none` first): an integration whose users could no longer sign in would
//! otherwise break silently. The users it created stay, with their links; the mapping of the
//! provider's subjects to them is forgotten, so a provider added again under the same id
//! creates new users only for subjects whose email is free.

use crate::store::{
    ClientStore, IdentityProviderKind, IdentityProviderRecord, IdentityProviderStore, StoreError,
};

/// Longest provider id.
const MAX_ID_CHARS: usize = 40;
/// Longest display name.
const MAX_NAME_CHARS: usize = 100;
/// Longest client id or client secret at an OpenID provider.
const MAX_CREDENTIAL_CHARS: usize = 1024;
/// Largest public-key file read.
pub const MAX_PUBLIC_KEY_BYTES: u64 = 16 * 1024;

/// Why a provider setting was refused or a provider command failed. The Display is the one
/// line an operator sees, naming the flag that fixes it; it never contains a secret.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// A setting is unusable.
    #[error("{flag}: {reason}")]
    Invalid {
        /// The flag.
        flag: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A provider with this id exists.
    #[error("--id {0:?}: an identity provider with this id already exists")]
    DuplicateId(String),
    /// No provider has this id.
    #[error("no identity provider with id {0:?} (see `linkd identity-providers list`)")]
    UnknownProvider(String),
    /// Integrations still sign in through the provider.
    #[error(
        "identity provider {id:?} is used by client(s) {clients}; run `linkd clients update CLIENT --identity-provider none` for each first"
    )]
    InUse {
        /// The provider.
        id: String,
        /// The clients naming it, comma-separated.
        clients: String,
    },
    /// The store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl ProviderError {
    /// Whether the operator's input was at fault: the command changed nothing.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Store(_))
    }
}

fn invalid(flag: &'static str, reason: impl Into<String>) -> ProviderError {
    ProviderError::Invalid {
        flag,
        reason: reason.into(),
    }
}

/// Validates a provider id: 1–40 characters of `a-z`, `0-9` and `-`, not starting or ending
/// with `-`, and not `none`. It is a path segment of linkd's callback URL.
pub fn parse_id(flag: &'static str, id: &str) -> Result<String, ProviderError> {
    let valid = !id.is_empty()
        && id.len() <= MAX_ID_CHARS
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !id.starts_with('-')
        && !id.ends_with('-')
        // `clients update --identity-provider none` removes a client's provider.
        && id != "none";
    if valid {
        Ok(id.to_owned())
    } else {
        Err(invalid(
            flag,
            format!(
                "{:?} is not a provider id: 1–{MAX_ID_CHARS} characters of a-z, 0-9 and \"-\", not starting or ending with \"-\"",
                id.chars().take(64).collect::<String>()
            ),
        ))
    }
}

/// Validates a display name: 1–100 characters, no control characters.
pub fn parse_name(name: &str) -> Result<String, ProviderError> {
    let count = name.chars().count();
    if name.trim().is_empty() || count > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(invalid(
            "--name",
            format!("must be 1–{MAX_NAME_CHARS} characters without control characters"),
        ));
    }
    Ok(name.to_owned())
}

/// An `https` URL with a host, no fragment and no spaces or control characters.
fn parse_https_url(
    flag: &'static str,
    url: &str,
    loopback_http: bool,
) -> Result<String, ProviderError> {
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) || url.contains('#') {
        return Err(invalid(
            flag,
            format!("{url:?} must be a URL without spaces or a fragment"),
        ));
    }
    let uri = crate::outbound::check_url(url).map_err(|reason| invalid(flag, reason))?;
    if uri.scheme_str() != Some("https") && !loopback_http {
        return Err(invalid(flag, format!("{url:?} must be an https URL")));
    }
    Ok(url.to_owned())
}

/// Validates an OpenID provider's issuer: an `https` URL without query or fragment; a
/// trailing `/` is kept, since the issuer is compared exactly with the provider's `iss`.
pub fn parse_issuer(issuer: &str) -> Result<String, ProviderError> {
    let issuer = parse_https_url("--issuer", issuer, false)?;
    if issuer.contains('?') {
        return Err(invalid("--issuer", "must not have a query"));
    }
    Ok(issuer)
}

/// Validates a client id or secret at an OpenID provider.
pub fn parse_credential(flag: &'static str, value: &str) -> Result<String, ProviderError> {
    if value.is_empty()
        || value.chars().count() > MAX_CREDENTIAL_CHARS
        || value.chars().any(char::is_control)
    {
        return Err(invalid(
            flag,
            format!("must be 1–{MAX_CREDENTIAL_CHARS} characters without control characters"),
        ));
    }
    Ok(value.to_owned())
}

/// Validates the scopes asked of an OpenID provider; `openid` is added when missing.
pub fn parse_scopes(scopes: &str) -> Result<Vec<String>, ProviderError> {
    let mut parsed: Vec<String> = Vec::new();
    for scope in scopes.split(' ').filter(|scope| !scope.is_empty()) {
        if !scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
        {
            return Err(invalid(
                "--scopes",
                format!("{scope:?} is not a scope (printable ASCII without space, '\"' or '\\\\')"),
            ));
        }
        if !parsed.iter().any(|known| known == scope) {
            parsed.push(scope.to_owned());
        }
    }
    if !parsed.iter().any(|scope| scope == "openid") {
        parsed.insert(0, "openid".to_owned());
    }
    Ok(parsed)
}

/// Validates a hand-off login URL: `https`, or `http` to a loopback address for development.
pub fn parse_login_url(url: &str) -> Result<String, ProviderError> {
    let url = parse_https_url("--login-url", url, true)?;
    if url.contains('?') {
        return Err(invalid(
            "--login-url",
            "must not have a query (linkd appends ?login_challenge=…)",
        ));
    }
    Ok(url)
}

/// Validates a hand-off JWKS URL: `https`, or `http` to a loopback address.
pub fn parse_jwks_url(url: &str) -> Result<String, ProviderError> {
    parse_https_url("--jwks-url", url, true)
}

/// Validates the integrator's public key: one PEM public key (SPKI) of a kind linkd verifies
/// (EC P-256/P-384, RSA, Ed25519).
pub fn parse_public_key(pem: &str) -> Result<String, ProviderError> {
    super::handoff::AssertionKey::from_pem(pem)
        .map(|_| pem.trim().to_owned() + "\n")
        .map_err(|reason| invalid("--public-key-file", reason))
}

/// Adds `provider`; a taken id is [`ProviderError::DuplicateId`] and changes nothing.
pub async fn add(
    store: &dyn IdentityProviderStore,
    provider: &IdentityProviderRecord,
) -> Result<(), ProviderError> {
    match store.insert_identity_provider(provider).await {
        Ok(()) => Ok(()),
        Err(StoreError::AlreadyExists(_)) => Err(ProviderError::DuplicateId(provider.id.clone())),
        Err(other) => Err(other.into()),
    }
}

/// The provider `id`.
pub async fn find(
    store: &dyn IdentityProviderStore,
    id: &str,
) -> Result<IdentityProviderRecord, ProviderError> {
    store
        .get_identity_provider(id)
        .await?
        .ok_or_else(|| ProviderError::UnknownProvider(id.to_owned()))
}

/// Removes provider `id`, refused while an integration names it (see the module's header).
pub async fn remove<S>(store: &S, id: &str) -> Result<(), ProviderError>
where
    S: ClientStore + IdentityProviderStore + ?Sized,
{
    if store.get_identity_provider(id).await?.is_none() {
        return Err(ProviderError::UnknownProvider(id.to_owned()));
    }
    let users: Vec<String> = store
        .list_clients()
        .await?
        .into_iter()
        .filter(|client| client.settings.identity_provider.as_deref() == Some(id))
        .map(|client| client.id)
        .collect();
    if !users.is_empty() {
        return Err(ProviderError::InUse {
            id: id.to_owned(),
            clients: users.join(", "),
        });
    }
    if store.remove_identity_provider(id).await? {
        Ok(())
    } else {
        Err(ProviderError::UnknownProvider(id.to_owned()))
    }
}

/// The callback URL linkd uses at the provider: `{issuer}/signin/{id}/callback`.
pub fn callback_url(linkd_issuer: &str, id: &str) -> String {
    format!(
        "{}/signin/{id}/callback",
        linkd_issuer.trim_end_matches('/')
    )
}

/// What `show` and `list` print of a provider: everything but the client secret.
pub fn describe(provider: &IdentityProviderRecord) -> serde_json::Value {
    let mut details = serde_json::json!({
        "id": provider.id,
        "name": provider.name,
        "created_at": provider.created_at,
    });
    let extra = match &provider.kind {
        IdentityProviderKind::Oidc {
            issuer,
            client_id,
            scopes,
            ..
        } => serde_json::json!({
            "kind": "oidc",
            "issuer": issuer,
            "client_id": client_id,
            "scopes": scopes.join(" "),
        }),
        IdentityProviderKind::Handoff {
            login_url,
            public_key_pem,
            jwks_url,
        } => serde_json::json!({
            "kind": "handoff",
            "login_url": login_url,
            "public_key": public_key_pem.as_ref().map(|_| "PEM"),
            "jwks_url": jwks_url,
        }),
    };
    if let (Some(details), serde_json::Value::Object(extra)) = (details.as_object_mut(), extra) {
        details.extend(extra);
    }
    details
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        for good in ["acme", "a", "acme-sso-2"] {
            assert!(parse_id("--id", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "none",
            "-a",
            "a-",
            "Acme",
            "a_b",
            "a/b",
            "a.b",
            &"a".repeat(41),
        ] {
            assert!(parse_id("--id", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn issuers_must_be_https() {
        assert!(parse_issuer("https://id.example.com").is_ok());
        assert!(parse_issuer("https://id.example.com/realms/acme/").is_ok());
        for bad in [
            "http://id.example.com",
            "http://127.0.0.1:9000",
            "ftp://id.example.com",
            "https://id.example.com/?x=1",
            "https://id.example.com/#f",
            "id.example.com",
        ] {
            assert!(parse_issuer(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_always_include_openid() {
        assert_eq!(
            parse_scopes("email profile").unwrap(),
            ["openid", "email", "profile"]
        );
        assert_eq!(parse_scopes("openid openid").unwrap(), ["openid"]);
        assert!(parse_scopes("a\"b").is_err());
    }

    #[test]
    fn login_urls_allow_loopback_http_only() {
        assert!(parse_login_url("https://app.example.com/linkd-login").is_ok());
        assert!(parse_login_url("http://127.0.0.1:3000/login").is_ok());
        assert!(parse_login_url("http://app.example.com/login").is_err());
        assert!(parse_login_url("https://app.example.com/login?x=1").is_err());
    }
}
