//! A provider's discovery document (OpenID Connect Discovery 1.0 §3–§4), read once when fetched
//! into what linkd needs of it, and refused as a whole when the provider cannot be used safely.

use jsonwebtoken::Algorithm;
use serde_json::Value;

use super::id_token::ACCEPTED_ALGORITHMS;

/// How linkd authenticates to the provider's token endpoint (OpenID Connect Core §9).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// HTTP Basic with the form-urlencoded client id and secret; the default of OAuth 2.0.
    Basic,
    /// The client id and secret in the form body, for providers that list only this.
    Post,
}

/// What linkd uses of a provider's discovery document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovery {
    /// `issuer`, equal to the configured issuer.
    pub issuer: String,
    /// `authorization_endpoint`.
    pub authorization_endpoint: String,
    /// `token_endpoint`.
    pub token_endpoint: String,
    /// `userinfo_endpoint`, when the provider has one.
    pub userinfo_endpoint: Option<String>,
    /// `jwks_uri`.
    pub jwks_uri: String,
    /// How to authenticate at the token endpoint.
    pub client_auth: ClientAuth,
    /// The `id_token` signing algorithms both the provider and linkd accept.
    pub algorithms: Vec<Algorithm>,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): every answer to the
    /// browser names the provider in `iss`.
    pub names_itself_in_responses: bool,
}

/// Reads `document`, fetched from `{expected_issuer}/.well-known/openid-configuration`.
pub fn parse(document: &Value, expected_issuer: &str) -> Result<Discovery, String> {
    if !document.is_object() {
        return Err("the discovery document is not a JSON object".to_owned());
    }
    // Discovery §4.3: the issuer in the document must be exactly the one it was fetched for,
    // or a provider could vouch for another's users (mix-up).
    let issuer = document["issuer"].as_str().unwrap_or_default();
    if issuer != expected_issuer {
        return Err(format!(
            "the discovery document names the issuer {:?}, not {expected_issuer:?}",
            printable(issuer)
        ));
    }
    let endpoint = |name: &str| -> Result<Option<String>, String> {
        match &document[name] {
            Value::Null => Ok(None),
            Value::String(url) if is_https_url(url) => Ok(Some(url.clone())),
            other => Err(format!(
                "the discovery document's {name} {:?} is not an https URL",
                printable(&other.to_string())
            )),
        }
    };
    let required = |name: &str| -> Result<String, String> {
        endpoint(name)?.ok_or_else(|| format!("the discovery document has no {name}"))
    };
    let listed = |name: &str| -> Option<Vec<&str>> {
        document[name]
            .as_array()
            .map(|values| values.iter().filter_map(Value::as_str).collect())
    };

    if let Some(types) = listed("response_types_supported")
        && !types.contains(&"code")
    {
        return Err("the provider does not offer the authorization code flow".to_owned());
    }
    // Absent means the provider does not say; PKCE is sent anyway. Listed without S256 means
    // it would ignore the challenge.
    if let Some(methods) = listed("code_challenge_methods_supported")
        && !methods.contains(&"S256")
    {
        return Err("the provider does not support PKCE with S256".to_owned());
    }
    // OpenID Connect Core §15.1 obliges every provider to offer RS256; a document that lists
    // nothing is read as offering just that.
    let algorithms = match listed("id_token_signing_alg_values_supported") {
        None => vec![Algorithm::RS256],
        Some(names) => ACCEPTED_ALGORITHMS
            .iter()
            .filter(|(name, _)| names.contains(name))
            .map(|(_, algorithm)| *algorithm)
            .collect(),
    };
    if algorithms.is_empty() {
        return Err(
            "the provider signs id_tokens with none of RS256, RS384, RS512, PS256, PS384, \
             PS512, ES256, ES384, EdDSA"
                .to_owned(),
        );
    }
    // Discovery §3: when the list is absent, client_secret_basic is the default.
    let client_auth = match listed("token_endpoint_auth_methods_supported") {
        None => ClientAuth::Basic,
        Some(methods) if methods.contains(&"client_secret_basic") => ClientAuth::Basic,
        Some(methods) if methods.contains(&"client_secret_post") => ClientAuth::Post,
        Some(_) => {
            return Err(
                "the provider's token endpoint accepts neither client_secret_basic nor \
                 client_secret_post"
                    .to_owned(),
            );
        }
    };
    Ok(Discovery {
        issuer: issuer.to_owned(),
        authorization_endpoint: required("authorization_endpoint")?,
        token_endpoint: required("token_endpoint")?,
        userinfo_endpoint: endpoint("userinfo_endpoint")?,
        jwks_uri: required("jwks_uri")?,
        client_auth,
        algorithms,
        names_itself_in_responses: document["authorization_response_iss_parameter_supported"]
            == Value::Bool(true),
    })
}

/// Whether `url` is an absolute https URL with a host and no fragment: every URL of an
/// OpenID provider is (Discovery §3), and plain http would let a network attacker swap keys.
pub fn is_https_url(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
        && !url.contains('#')
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        && crate::outbound::check_url(url).is_ok()
}

/// The discovery document's URL for `issuer` (Discovery §4.1: a trailing `/` is not doubled).
pub fn document_url(issuer: &str) -> String {
    format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    )
}

/// `value` cut to a length fit for an error message, without control characters.
pub fn printable(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://id.example/tenant";

    fn document() -> Value {
        json!({
            "issuer": ISSUER,
            "authorization_endpoint": "https://id.example/tenant/auth",
            "token_endpoint": "https://id.example/tenant/token",
            "userinfo_endpoint": "https://id.example/tenant/me",
            "jwks_uri": "https://keys.id.example/jwks",
            "response_types_supported": ["code", "id_token"],
            "code_challenge_methods_supported": ["S256"],
            "id_token_signing_alg_values_supported": ["HS256", "RS256", "ES256", "none"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "client_secret_basic"],
        })
    }

    fn with(change: impl FnOnce(&mut Value)) -> Result<Discovery, String> {
        let mut document = document();
        change(&mut document);
        parse(&document, ISSUER)
    }

    #[test]
    fn a_complete_document_is_read() {
        let discovery = parse(&document(), ISSUER).unwrap();
        assert_eq!(discovery.issuer, ISSUER);
        assert_eq!(discovery.token_endpoint, "https://id.example/tenant/token");
        assert_eq!(
            discovery.userinfo_endpoint.as_deref(),
            Some("https://id.example/tenant/me")
        );
        assert_eq!(discovery.jwks_uri, "https://keys.id.example/jwks");
        // HMAC and `none` are never taken, whatever the provider lists.
        assert_eq!(
            discovery.algorithms,
            vec![Algorithm::RS256, Algorithm::ES256]
        );
        assert_eq!(discovery.client_auth, ClientAuth::Basic);
    }

    #[test]
    fn the_issuer_must_match_exactly() {
        for issuer in [
            json!("https://id.example/tenant/"),
            json!("https://ID.example/tenant"),
            json!("https://evil.example/tenant"),
            json!(null),
        ] {
            let error = with(|d| d["issuer"] = issuer.clone()).unwrap_err();
            assert!(error.contains("names the issuer"), "{issuer}: {error}");
        }
    }

    #[test]
    fn endpoints_must_be_https() {
        for (name, url) in [
            ("token_endpoint", json!("http://id.example/token")),
            ("authorization_endpoint", json!("ftp://id.example/auth")),
            ("jwks_uri", json!("https://id.example/jwks#x")),
            ("userinfo_endpoint", json!(42)),
            ("token_endpoint", json!("http://127.0.0.1/token")),
        ] {
            let error = with(|d| d[name] = url.clone()).unwrap_err();
            assert!(error.contains(name) && error.contains("https"), "{error}");
        }
        for name in ["authorization_endpoint", "token_endpoint", "jwks_uri"] {
            let error = with(|d| d[name] = Value::Null).unwrap_err();
            assert_eq!(error, format!("the discovery document has no {name}"));
        }
        let discovery = with(|d| d["userinfo_endpoint"] = Value::Null).unwrap();
        assert_eq!(discovery.userinfo_endpoint, None);
    }

    #[test]
    fn the_client_authentication_follows_the_listed_methods() {
        let methods = |list: Value| with(|d| d["token_endpoint_auth_methods_supported"] = list);
        assert_eq!(
            methods(json!(["client_secret_post"])).unwrap().client_auth,
            ClientAuth::Post
        );
        assert_eq!(
            methods(json!(["private_key_jwt", "client_secret_basic"]))
                .unwrap()
                .client_auth,
            ClientAuth::Basic
        );
        assert_eq!(methods(Value::Null).unwrap().client_auth, ClientAuth::Basic);
        assert!(
            methods(json!(["private_key_jwt"]))
                .unwrap_err()
                .contains("neither client_secret_basic nor client_secret_post")
        );
    }

    #[test]
    fn unusable_algorithms_flows_and_pkce_are_refused() {
        let error = with(|d| d["id_token_signing_alg_values_supported"] = json!(["HS256", "none"]))
            .unwrap_err();
        assert!(error.contains("signs id_tokens with none of"), "{error}");
        let defaulted = with(|d| d["id_token_signing_alg_values_supported"] = Value::Null);
        assert_eq!(defaulted.unwrap().algorithms, vec![Algorithm::RS256]);
        assert!(
            with(|d| d["response_types_supported"] = json!(["id_token"]))
                .unwrap_err()
                .contains("authorization code")
        );
        assert!(
            with(|d| d["code_challenge_methods_supported"] = json!(["plain"]))
                .unwrap_err()
                .contains("S256")
        );
        assert!(with(|d| d["code_challenge_methods_supported"] = Value::Null).is_ok());
        assert!(parse(&json!([1]), ISSUER).is_err());
    }

    #[test]
    fn the_document_url_does_not_double_the_slash() {
        assert_eq!(
            document_url("https://id.example/"),
            "https://id.example/.well-known/openid-configuration"
        );
        assert_eq!(
            document_url("https://id.example/tenant"),
            "https://id.example/tenant/.well-known/openid-configuration"
        );
    }
}
