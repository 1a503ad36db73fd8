//! Redirect URIs: which ones a client may use, compared by exact string match (RFC 9700
//! §4.1.3, RFC 3986 §6.2.1 simple string comparison — no normalisation, no prefix), and
//! how a response is appended to one (RFC 6749 §4.1.2: keep the URI's own query).

/// Default base of the platform's production redirect URIs.
pub const DEFAULT_REDIRECT_BASE: &str = "https://oauth-redirect.googleusercontent.com";
/// Default base of the platform's sandbox redirect URIs.
pub const DEFAULT_REDIRECT_SANDBOX_BASE: &str =
    "https://oauth-redirect-sandbox.googleusercontent.com";

/// The redirect URIs a client with `project_id` may use: `{base}/r/<project_id>` for each
/// base, then its registered extras.
pub fn allowed_redirect_uris(bases: &[String], project_id: &str, extra: &[String]) -> Vec<String> {
    bases
        .iter()
        .map(|base| format!("{}/r/{project_id}", base.trim_end_matches('/')))
        .chain(extra.iter().cloned())
        .collect()
}

/// Whether `candidate` is exactly one of `allowed`.
pub fn is_allowed(candidate: &str, allowed: &[String]) -> bool {
    allowed.iter().any(|uri| uri == candidate)
}

/// A redirect URI a client may use: exactly one of its registered ones. Only
/// [`RedirectUri::registered`] makes one, so holding one means the check was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUri(String);

impl RedirectUri {
    /// `candidate`, if it is exactly one of `allowed`.
    pub fn registered(candidate: &str, allowed: &[String]) -> Option<Self> {
        is_allowed(candidate, allowed).then(|| Self(candidate.to_owned()))
    }

    /// The URI as registered and sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The URI with `params` appended to its query.
    pub fn with_query(&self, params: &[(&str, &str)]) -> String {
        with_query(&self.0, params)
    }

    /// Its origin, for a CSP `form-action`.
    pub fn origin(&self) -> Option<&str> {
        origin(&self.0)
    }
}

/// Why a redirect URI may not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistrationError {
    /// Not an absolute `https` URI (or `http` on a loopback host).
    #[error("must be an https:// URI (http:// only for 127.0.0.1, [::1] or localhost)")]
    NotHttps,
    /// Carries a fragment (RFC 6749 §3.1.2).
    #[error("must not contain a fragment (#)")]
    Fragment,
    /// Has no host, or contains characters a URI may not.
    #[error("is not a valid absolute URI")]
    Malformed,
}

/// Validates a redirect URI at registration (RFC 6749 §3.1.2, RFC 9700 §2.6).
pub fn validate_for_registration(uri: &str) -> Result<(), RegistrationError> {
    if uri.contains('#') {
        return Err(RegistrationError::Fragment);
    }
    if uri
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"' | '\\'))
    {
        return Err(RegistrationError::Malformed);
    }
    let rest = if let Some(rest) = uri.strip_prefix("https://") {
        rest
    } else if let Some(rest) = uri.strip_prefix("http://") {
        let authority = rest.split(['/', '?']).next().unwrap_or_default();
        let host = match authority.strip_prefix('[') {
            Some(bracketed) => bracketed.split(']').next().unwrap_or_default(),
            None => authority.split(':').next().unwrap_or_default(),
        };
        if !matches!(host, "127.0.0.1" | "::1" | "localhost") {
            return Err(RegistrationError::NotHttps);
        }
        rest
    } else {
        return Err(RegistrationError::NotHttps);
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(RegistrationError::Malformed);
    }
    Ok(())
}

/// Appends `params` to `redirect_uri`'s query, keeping whatever query it already has.
pub fn with_query(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    let encoded = serde_urlencoded::to_string(params).unwrap_or_default();
    let separator = if redirect_uri.contains('?') {
        if redirect_uri.ends_with('?') || redirect_uri.ends_with('&') {
            ""
        } else {
            "&"
        }
    } else {
        "?"
    };
    format!("{redirect_uri}{separator}{encoded}")
}

/// The origin (`scheme://authority`) of an absolute URI, for a CSP `form-action`.
pub fn origin(uri: &str) -> Option<&str> {
    let scheme_end = uri.find("://")? + 3;
    let authority_end = uri[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(uri.len(), |offset| scheme_end + offset);
    Some(&uri[..authority_end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_registered_uri_becomes_a_redirect_uri() {
        let allowed = vec!["https://a.example/r/p".to_owned()];
        let uri = RedirectUri::registered("https://a.example/r/p", &allowed).unwrap();
        assert_eq!(uri.origin(), Some("https://a.example"));
        assert_eq!(
            uri.with_query(&[("code", "c")]),
            "https://a.example/r/p?code=c"
        );
        for near in [
            "https://a.example/r/p/",
            "https://A.example/r/p",
            "https://a.example/r/P",
        ] {
            assert_eq!(RedirectUri::registered(near, &allowed), None, "{near}");
        }
    }

    fn google_allowed() -> Vec<String> {
        allowed_redirect_uris(
            &[
                DEFAULT_REDIRECT_BASE.to_owned(),
                DEFAULT_REDIRECT_SANDBOX_BASE.to_owned(),
            ],
            "P",
            &[],
        )
    }

    #[test]
    fn exact_match_only() {
        let allowed = google_allowed();
        assert!(is_allowed(
            "https://oauth-redirect.googleusercontent.com/r/P",
            &allowed
        ));
        assert!(is_allowed(
            "https://oauth-redirect-sandbox.googleusercontent.com/r/P",
            &allowed
        ));
        for variant in [
            "https://oauth-redirect.googleusercontent.com/r/P/",
            "HTTPS://oauth-redirect.googleusercontent.com/r/P",
            "https://OAUTH-REDIRECT.googleusercontent.com/r/P",
            "https://oauth-redirect.googleusercontent.com:443/r/P",
            "https://oauth-redirect.googleusercontent.com/r/P?x=1",
            "https://oauth-redirect.googleusercontent.com/r/P#frag",
            "https://oauth-redirect.googleusercontent.com/r/P/../x",
            "https://oauth-redirect.googleusercontent.com%2Fr%2FP",
            "https://oauth-redirect.googleusercontent.com.evil.com/r/P",
            "https://evil@oauth-redirect.googleusercontent.com/r/P",
            "https://oauth-redirect.googleusercontent.com/r/P2",
            "https://evil.example/cb",
        ] {
            assert!(!is_allowed(variant, &allowed), "{variant} accepted");
        }
    }

    #[test]
    fn registration_rules() {
        assert!(validate_for_registration("https://example.com/cb?x=1").is_ok());
        assert!(validate_for_registration("http://127.0.0.1:9000/cb").is_ok());
        assert!(validate_for_registration("http://[::1]:9000/cb").is_ok());
        assert_eq!(
            validate_for_registration("http://example.com/cb"),
            Err(RegistrationError::NotHttps)
        );
        assert_eq!(
            validate_for_registration("https://example.com/cb#x"),
            Err(RegistrationError::Fragment)
        );
        assert_eq!(
            validate_for_registration("https://u@example.com/cb"),
            Err(RegistrationError::Malformed)
        );
        assert_eq!(
            validate_for_registration("javascript:alert(1)"),
            Err(RegistrationError::NotHttps)
        );
    }

    #[test]
    fn response_parameters_keep_the_existing_query() {
        assert_eq!(
            with_query("https://a.example/r/P", &[("code", "c"), ("state", "s t")]),
            "https://a.example/r/P?code=c&state=s+t"
        );
        assert_eq!(
            with_query("https://a.example/cb?x=1", &[("code", "c")]),
            "https://a.example/cb?x=1&code=c"
        );
    }

    #[test]
    fn origin_of_uri() {
        assert_eq!(
            origin("https://a.example:8443/r/P?x"),
            Some("https://a.example:8443")
        );
        assert_eq!(origin("https://a.example"), Some("https://a.example"));
        assert_eq!(origin("nope"), None);
    }
}
