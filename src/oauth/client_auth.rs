//! Client credentials at the token endpoint (RFC 6749 §2.3.1): `client_secret_basic` (the
//! `Authorization: Basic` header, whose two parts are form-urlencoded before base64) or
//! `client_secret_post` (form fields), never both.

use std::net::IpAddr;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::error::TokenError;
use super::params::Params;
use crate::app::App;
use crate::clients::{self, ClientId};
use crate::store::ClientRecord;
use crate::throttle;

/// How the client presented its credentials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// HTTP Basic.
    Basic,
    /// `client_id` and `client_secret` form fields.
    Post,
}

/// Credentials as presented, before they are checked against the registration.
#[derive(Clone, PartialEq, Eq)]
pub struct PresentedCredentials {
    /// The claimed client id.
    pub client_id: String,
    /// The presented secret.
    pub client_secret: String,
    /// Where they came from.
    pub method: AuthMethod,
}

impl std::fmt::Debug for PresentedCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresentedCredentials")
            .field("client_id", &self.client_id)
            .field("method", &self.method)
            .finish_non_exhaustive()
    }
}

/// Why credentials could not even be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CredentialsError {
    /// No credentials at all.
    #[error("client authentication is required")]
    Missing,
    /// The `Authorization` header is not valid Basic credentials.
    #[error("malformed Basic credentials")]
    MalformedBasic,
    /// Basic credentials and a `client_secret` field were both sent, or the two
    /// `client_id`s disagree (RFC 6749 §2.3: one method per request).
    #[error("more than one client authentication method")]
    Conflicting,
    /// A `client_id` without a `client_secret` (or the reverse) in the body.
    #[error("incomplete client credentials")]
    Incomplete,
}

/// Reads the client's credentials from the `Authorization` header value (if any) and the
/// form parameters.
pub fn presented_credentials(
    authorization: Option<&str>,
    form: &Params,
) -> Result<PresentedCredentials, CredentialsError> {
    let basic = authorization.map(parse_basic).transpose()?;
    match basic {
        Some((client_id, client_secret)) => {
            if form.contains("client_secret") {
                return Err(CredentialsError::Conflicting);
            }
            if form
                .get("client_id")
                .is_some_and(|body_id| body_id != client_id)
            {
                return Err(CredentialsError::Conflicting);
            }
            Ok(PresentedCredentials {
                client_id,
                client_secret,
                method: AuthMethod::Basic,
            })
        }
        None => match (form.get("client_id"), form.get("client_secret")) {
            (Some(client_id), Some(client_secret)) => Ok(PresentedCredentials {
                client_id: client_id.to_owned(),
                client_secret: client_secret.to_owned(),
                method: AuthMethod::Post,
            }),
            (None, None) => Err(CredentialsError::Missing),
            _ => Err(CredentialsError::Incomplete),
        },
    }
}

/// Authenticates the client of a token, revocation or introspection request from `address`,
/// by the `Authorization` header value and the form. The right secret is always accepted.
/// Failed attempts are counted per (client, source), and per source for unknown client ids;
/// past the limit the source's wrong secrets are answered 429 until the window passes,
/// without touching the store (see [`crate::throttle`]).
pub async fn authenticate(
    app: &App,
    authorization: Option<&str>,
    form: &Params,
    address: IpAddr,
) -> Result<ClientRecord, TokenError> {
    let presented = presented_credentials(authorization, form).map_err(|error| match error {
        CredentialsError::Conflicting => {
            TokenError::InvalidRequest("use exactly one client authentication method")
        }
        CredentialsError::Missing
        | CredentialsError::MalformedBasic
        | CredentialsError::Incomplete => TokenError::InvalidClient,
    })?;
    let source = throttle::source_of(address);
    let pair_key = throttle::client_source_key(&presented.client_id, &source);
    let source_key = throttle::client_auth_source_key(&source);
    let now = app.clock.now();
    // An id no client can have is unknown without asking the store.
    let client = match ClientId::parse(&presented.client_id) {
        Ok(client_id) => app.store.get_client(client_id.as_str()).await?,
        Err(_) => None,
    };
    let verified = clients::verify_secret(client.as_ref(), &presented.client_secret);
    // The right secret is never refused, whatever the source's failures: the platform calls
    // every integration from shared addresses, and anyone can make it call linkd's token
    // endpoint (a project of their own pointed at it), so a block on a source can also be a
    // block on the real client. Guessing is bounded by the secrets' entropy instead.
    if let Some(client) = client.as_ref().filter(|_| verified) {
        return Ok(client.clone());
    }
    if let Some(until) = app
        .throttle_blocks
        .blocked_until(&[&pair_key, &source_key], now)
    {
        return Err(TokenError::Throttled(
            u64::try_from(until.saturating_sub(now)).unwrap_or(1).max(1),
        ));
    }
    // Known clients count per source, so that a stranger's guesses never refuse the real
    // client; unknown ids count once per source, so inventing ids creates no new counters.
    let window = app.oauth.throttle_window_secs;
    let (key, limit) = if client.is_some() {
        (pair_key, app.oauth.client_auth_attempts)
    } else {
        (source_key, app.oauth.unknown_client_attempts_per_source)
    };
    let failures = app.store.hit(&key, window, now).await?;
    tracing::warn!(
        client_id = %presented.client_id,
        %source,
        known_client = client.is_some(),
        method = match presented.method { AuthMethod::Basic => "basic", AuthMethod::Post => "post" },
        "client authentication failed"
    );
    if failures >= limit {
        // This failure is answered as one; the source's next attempts are refused.
        let until = now + i64::try_from(window).unwrap_or(i64::MAX);
        app.throttle_blocks.block(key, until, now);
        tracing::warn!(client_id = %presented.client_id, %source, "client authentication throttled for this source");
        crate::metrics::record_throttled("client_auth");
    }
    Err(TokenError::InvalidClient)
}

/// Decodes `Basic base64(urlencode(id) ":" urlencode(secret))`.
fn parse_basic(header: &str) -> Result<(String, String), CredentialsError> {
    let (scheme, encoded) = header
        .trim()
        .split_once(' ')
        .ok_or(CredentialsError::MalformedBasic)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(CredentialsError::MalformedBasic);
    }
    let decoded = STANDARD
        .decode(encoded.trim())
        .map_err(|_| CredentialsError::MalformedBasic)?;
    let decoded = String::from_utf8(decoded).map_err(|_| CredentialsError::MalformedBasic)?;
    let (id, secret) = decoded
        .split_once(':')
        .ok_or(CredentialsError::MalformedBasic)?;
    let id = form_decode(id)?;
    let secret = form_decode(secret)?;
    if id.is_empty() {
        return Err(CredentialsError::MalformedBasic);
    }
    Ok((id, secret))
}

fn form_decode(part: &str) -> Result<String, CredentialsError> {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(&format!("v={part}"))
        .map_err(|_| CredentialsError::MalformedBasic)?;
    match pairs.as_slice() {
        [(_, value)] => Ok(value.clone()),
        // An `&` or `=` that was not encoded splits the part: not valid form-encoding.
        _ => Err(CredentialsError::MalformedBasic),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(id: &str, secret: &str) -> String {
        let encode = |s: &str| serde_urlencoded::to_string([("v", s)]).unwrap()[2..].to_owned();
        format!(
            "Basic {}",
            STANDARD.encode(format!("{}:{}", encode(id), encode(secret)))
        )
    }

    #[test]
    fn basic_credentials_are_form_decoded() {
        let secret = "a:b+c%d e\u{e9}";
        let presented =
            presented_credentials(Some(&basic("client.1", secret)), &Params::default()).unwrap();
        assert_eq!(presented.client_id, "client.1");
        assert_eq!(presented.client_secret, secret);
        assert_eq!(presented.method, AuthMethod::Basic);
    }

    #[test]
    fn body_credentials() {
        let form = Params::parse(b"client_id=c&client_secret=s").unwrap();
        let presented = presented_credentials(None, &form).unwrap();
        assert_eq!(presented.method, AuthMethod::Post);
        assert_eq!(presented.client_secret, "s");
    }

    #[test]
    fn refusals() {
        let both = Params::parse(b"client_secret=s").unwrap();
        assert_eq!(
            presented_credentials(Some(&basic("c", "s")), &both),
            Err(CredentialsError::Conflicting)
        );
        let other_id = Params::parse(b"client_id=d").unwrap();
        assert_eq!(
            presented_credentials(Some(&basic("c", "s")), &other_id),
            Err(CredentialsError::Conflicting)
        );
        let same_id = Params::parse(b"client_id=c").unwrap();
        assert!(presented_credentials(Some(&basic("c", "s")), &same_id).is_ok());
        for header in ["Basic !!!", "Basic Y2xpZW50", "Bearer abc", "Basic"] {
            assert_eq!(
                presented_credentials(Some(header), &Params::default()),
                Err(CredentialsError::MalformedBasic),
                "{header}"
            );
        }
        assert_eq!(
            presented_credentials(None, &Params::default()),
            Err(CredentialsError::Missing)
        );
        assert_eq!(
            presented_credentials(None, &Params::parse(b"client_id=c").unwrap()),
            Err(CredentialsError::Incomplete)
        );
    }

    #[test]
    fn debug_output_hides_the_secret() {
        let form = Params::parse(b"client_id=c&client_secret=topsecret").unwrap();
        let presented = presented_credentials(None, &form).unwrap();
        assert!(!format!("{presented:?}").contains("topsecret"));
    }
}
