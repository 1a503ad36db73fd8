//! Client credentials at the token endpoint (RFC 6749 §2.3.1): `client_secret_basic` (the
//! `Authorization: Basic` header, whose two parts are form-urlencoded before base64) or
//! `client_secret_post` (form fields), never both.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::params::Params;

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
