//! linkd as the relying party of an integrator's OpenID Connect provider (OpenID Connect Core
//! 1.0 §3.1, the authorization code flow), whether the integrator runs its own or uses a hosted
//! one (Auth0, Amazon Cognito, Firebase / Identity Platform, Keycloak, Okta, …).
//!
//! - Endpoints and keys come from the provider's discovery document
//!   (`{issuer}/.well-known/openid-configuration`), whose `issuer` must be exactly the
//!   configured one and whose URLs must all be https (module `discovery`).
//! - The browser goes to the authorization endpoint with `state`, `nonce` and a PKCE S256
//!   challenge ([`OidcClient::authorization_url`]); the caller keeps them in its sign-in session.
//! - The code comes back and is redeemed at the token endpoint with client_secret_basic, or
//!   client_secret_post when that is all the provider lists; the `id_token` is verified with
//!   a key of the provider's JWKS (module `id_token`), and its claims are completed by the userinfo
//!   endpoint when the provider has one ([`OidcClient::finish`]).
//!
//! Discovery documents are cached per issuer for [`CACHE_TTL`], key sets as module
//! [`key_sets`](crate::identity::key_sets) describes: fetched again for an `id_token` signed
//! with a key the cached set lacks, since the provider may have rotated its keys, but not more
//! often than the refetch interval.
//!
//! Every failure is one of two kinds: the provider did not answer or answered 5xx
//! ([`OidcError::Unavailable`]: try again later), or it answered something linkd refuses
//! ([`OidcError::Rejected`]: this sign-in failed). Neither message ever holds the client
//! secret, the code or a token.

mod discovery;
mod id_token;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use self::discovery::{ClientAuth, Discovery, printable};
use self::id_token::{Expected, KeySet};
use crate::identity::claims::ExternalClaims;
use crate::identity::key_sets::{CACHE_TTL, JWKS_REFETCH_INTERVAL, KeySetCache};
use crate::outbound::{OutboundClient, OutboundError};

/// What linkd stores about an upstream OpenID provider.
pub struct OidcProviderConfig<'a> {
    /// The exact issuer URL; discovery is at `{issuer}/.well-known/openid-configuration`.
    pub issuer: &'a str,
    /// linkd's client id at the provider.
    pub client_id: &'a str,
    /// linkd's client secret at the provider; never logged.
    pub client_secret: &'a str,
    /// The scopes to ask for; `openid` is always sent, listed or not.
    pub scopes: &'a [String],
}

impl std::fmt::Debug for OidcProviderConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcProviderConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

/// Why the provider could not be used.
#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    /// The provider (discovery, JWKS, token or userinfo endpoint) did not answer or answered 5xx:
    /// the browser gets a 503 page.
    #[error("identity provider unavailable: {0}")]
    Unavailable(String),
    /// The provider answered but the answer is not acceptable (bad token, wrong nonce, invalid_grant, …):
    /// the sign-in failed; the browser gets a clear page.
    #[error("identity provider answer refused: {0}")]
    Rejected(String),
}

/// Each issuer's discovery document and when it was fetched (monotonic).
type DiscoveryCache = HashMap<String, (Arc<Discovery>, Instant)>;

/// One per process (in `App`): discovery documents cached per issuer, key sets per
/// `jwks_uri`. Clones share the caches.
#[derive(Clone)]
pub struct OidcClient {
    outbound: OutboundClient,
    discovery: Arc<Mutex<DiscoveryCache>>,
    keys: KeySetCache<KeySet>,
}

impl std::fmt::Debug for OidcClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcClient")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// What the provider sent back with the browser (OpenID Connect Core §3.1.2.5, RFC 9207).
#[derive(Debug, Clone, Copy)]
pub struct ProviderAnswer<'a> {
    /// `code`.
    pub code: &'a str,
    /// `iss`, when the provider sent it.
    pub issuer: Option<&'a str>,
}

/// What the token endpoint issued.
struct Tokens {
    id_token: String,
    access_token: String,
    bearer: bool,
}

impl OidcClient {
    /// A client making its calls through `outbound` (system roots plus `--outbound-ca-file`).
    pub fn new(outbound: OutboundClient) -> Self {
        Self {
            outbound,
            discovery: Arc::new(Mutex::new(HashMap::new())),
            keys: KeySetCache::new(CACHE_TTL, JWKS_REFETCH_INTERVAL),
        }
    }

    /// The same client with another shortest time between two fetches of a provider's key set
    /// (by default [`JWKS_REFETCH_INTERVAL`]).
    pub fn with_jwks_refetch_interval(mut self, interval: Duration) -> Self {
        self.keys = KeySetCache::new(CACHE_TTL, interval);
        self
    }

    /// The provider's authorization endpoint URL with response_type=code, client_id, redirect_uri,
    /// scope, state, nonce, code_challenge (S256) and code_challenge_method=S256.
    pub async fn authorization_url(
        &self,
        provider: &OidcProviderConfig<'_>,
        redirect_uri: &str,
        state: &str,
        nonce: &str,
        code_challenge: &str,
    ) -> Result<String, OidcError> {
        let discovery = self.discovery(provider.issuer).await?;
        let scope = scope(provider.scopes);
        let query = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", provider.client_id),
            ("redirect_uri", redirect_uri),
            ("scope", scope.as_str()),
            ("state", state),
            ("nonce", nonce),
            ("code_challenge", code_challenge),
            ("code_challenge_method", "S256"),
        ])
        .map_err(|_| OidcError::Rejected("unencodable authorization request".to_owned()))?;
        // An endpoint may carry a query of its own (a tenant or policy name).
        let endpoint = &discovery.authorization_endpoint;
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{endpoint}{separator}{query}"))
    }

    /// Checks the `answer`'s issuer (RFC 9207) before its code goes anywhere, redeems the code
    /// (client_secret_basic, or client_secret_post when discovery lists only that), verifies the
    /// id_token (signature from JWKS, iss, aud, exp with small leeway, iat, nonce, azp), and
    /// completes the claims from the userinfo endpoint when discovery lists one (its `sub` must
    /// match).
    pub async fn finish(
        &self,
        provider: &OidcProviderConfig<'_>,
        redirect_uri: &str,
        answer: ProviderAnswer<'_>,
        code_verifier: &str,
        nonce: &str,
        now: i64,
    ) -> Result<ExternalClaims, OidcError> {
        let discovery = self.discovery(provider.issuer).await?;
        judge_response_issuer(&discovery, answer.issuer)?;
        let tokens = match self
            .redeem(
                &discovery,
                provider,
                redirect_uri,
                answer.code,
                code_verifier,
            )
            .await
        {
            Ok(tokens) => tokens,
            Err(error @ OidcError::Unavailable(_)) => {
                // The provider may have moved its endpoints: read the document again next time.
                self.discovery_cache().remove(provider.issuer);
                return Err(error);
            }
            Err(error) => return Err(error),
        };
        let header = id_token::read_header(&tokens.id_token, &discovery.algorithms)
            .map_err(OidcError::Rejected)?;
        let jwks_uri = &discovery.jwks_uri;
        let mut keys = self
            .keys
            .get(jwks_uri, || self.fetch_keys(jwks_uri))
            .await?;
        if keys.select(&header).is_none() {
            keys = self
                .keys
                .refetch(jwks_uri, || self.fetch_keys(jwks_uri))
                .await?
                .ok_or_else(|| {
                    OidcError::Rejected(format!(
                        "no key of the provider's JWKS verifies the id_token (kid {:?}), and the \
                         JWKS was fetched less than {:?} ago",
                        header.kid.as_deref().map(printable),
                        self.keys.refetch_interval()
                    ))
                })?;
        }
        let key = keys.select(&header).ok_or_else(|| {
            OidcError::Rejected(format!(
                "no key of the provider's JWKS verifies the id_token (kid {:?})",
                header.kid.as_deref().map(printable)
            ))
        })?;
        let claims = id_token::verify_signature(&tokens.id_token, &header, key)
            .map_err(OidcError::Rejected)?;
        let expected = Expected {
            issuer: &discovery.issuer,
            client_id: provider.client_id,
            nonce,
            now,
        };
        let external = id_token::check_claims(&claims, &expected).map_err(OidcError::Rejected)?;
        let Some(userinfo_endpoint) = &discovery.userinfo_endpoint else {
            return Ok(external);
        };
        if !tokens.bearer {
            return Err(OidcError::Rejected(
                "the token endpoint issued an access token that is not a Bearer token, which \
                 linkd cannot present at the userinfo endpoint"
                    .to_owned(),
            ));
        }
        let userinfo = self
            .outbound
            .get_json(userinfo_endpoint, Some(&tokens.access_token))
            .await
            .map_err(|error| outbound_failure("the userinfo endpoint", error))?;
        id_token::complete(external, &userinfo).map_err(OidcError::Rejected)
    }

    /// The provider's discovery document, from the cache while it is fresh.
    async fn discovery(&self, issuer: &str) -> Result<Arc<Discovery>, OidcError> {
        if !discovery::is_https_url(issuer) {
            return Err(OidcError::Rejected(format!(
                "the issuer {:?} is not an https URL",
                printable(issuer)
            )));
        }
        let cached = self
            .discovery_cache()
            .get(issuer)
            .filter(|(_, fetched)| fetched.elapsed() < CACHE_TTL)
            .map(|(discovery, _)| Arc::clone(discovery));
        if let Some(discovery) = cached {
            return Ok(discovery);
        }
        let url = discovery::document_url(issuer);
        let document = self
            .outbound
            .get_json(&url, None)
            .await
            .map_err(|error| outbound_failure("the discovery document", error))?;
        let discovery = Arc::new(discovery::parse(&document, issuer).map_err(OidcError::Rejected)?);
        self.discovery_cache()
            .insert(issuer.to_owned(), (Arc::clone(&discovery), Instant::now()));
        Ok(discovery)
    }

    async fn fetch_keys(&self, jwks_uri: &str) -> Result<KeySet, OidcError> {
        let document = self
            .outbound
            .get_json(jwks_uri, None)
            .await
            .map_err(|error| outbound_failure("the JWKS", error))?;
        let keys = KeySet::parse(&document).map_err(OidcError::Rejected)?;
        if keys.is_empty() {
            return Err(OidcError::Rejected(
                "the provider's JWKS holds no key linkd can verify signatures with".to_owned(),
            ));
        }
        Ok(keys)
    }

    /// Exchanges the code at the token endpoint (OpenID Connect Core §3.1.3.1–§3.1.3.4).
    async fn redeem(
        &self,
        discovery: &Discovery,
        provider: &OidcProviderConfig<'_>,
        redirect_uri: &str,
        code: &str,
        code_verifier: &str,
    ) -> Result<Tokens, OidcError> {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("code_verifier", code_verifier),
        ];
        let basic = match discovery.client_auth {
            ClientAuth::Basic => Some((provider.client_id, provider.client_secret)),
            ClientAuth::Post => {
                form.push(("client_id", provider.client_id));
                form.push(("client_secret", provider.client_secret));
                None
            }
        };
        let answer = self
            .outbound
            .post_form(&discovery.token_endpoint, &form, basic)
            .await
            .map_err(|error| outbound_failure("the token endpoint", error))?;
        let json = answer.json.unwrap_or_default();
        match answer.status {
            200..=299 => {}
            status if status >= 500 || status == 429 => {
                return Err(OidcError::Unavailable(format!(
                    "the token endpoint answered HTTP {status}"
                )));
            }
            status => {
                let error = json["error"].as_str().map(printable);
                let description = json["error_description"].as_str().map(printable);
                return Err(OidcError::Rejected(match (error, description) {
                    (Some(error), Some(description)) => {
                        format!("the token endpoint refused the code: {error} ({description})")
                    }
                    (Some(error), None) => format!("the token endpoint refused the code: {error}"),
                    _ => format!("the token endpoint answered HTTP {status}"),
                }));
            }
        }
        let text = |name: &str| {
            json[name]
                .as_str()
                .filter(|value| !value.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    OidcError::Rejected(format!("the token endpoint's answer has no {name}"))
                })
        };
        Ok(Tokens {
            id_token: text("id_token")?,
            access_token: text("access_token")?,
            bearer: json["token_type"]
                .as_str()
                .is_some_and(|kind| kind.eq_ignore_ascii_case("bearer")),
        })
    }

    fn discovery_cache(&self) -> std::sync::MutexGuard<'_, DiscoveryCache> {
        self.discovery
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `iss` of an authorization response against the provider's `discovery` (RFC 9207 §2.4):
/// equal to its issuer when present, and present when the provider says it always sends it.
fn judge_response_issuer(
    discovery: &Discovery,
    response_issuer: Option<&str>,
) -> Result<(), OidcError> {
    match response_issuer {
        Some(issuer) if issuer == discovery.issuer => Ok(()),
        Some(issuer) => Err(OidcError::Rejected(format!(
            "the answer names the issuer {:?}, not {:?}",
            printable(issuer),
            discovery.issuer
        ))),
        None if discovery.names_itself_in_responses => Err(OidcError::Rejected(
            "the answer has no iss, which the provider says it always sends".to_owned(),
        )),
        None => Ok(()),
    }
}

/// The scope parameter: `openid` first, then the configured scopes, each once.
fn scope(scopes: &[String]) -> String {
    let mut names = vec!["openid"];
    for name in scopes.iter().flat_map(|scope| scope.split_whitespace()) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names.join(" ")
}

/// An outbound failure as the kind the browser's page depends on.
fn outbound_failure(what: &str, error: OutboundError) -> OidcError {
    match error {
        OutboundError::Unreachable(reason) => {
            OidcError::Unavailable(format!("{what} could not be reached: {reason}"))
        }
        OutboundError::Status(status) if status >= 500 || status == 429 => {
            OidcError::Unavailable(format!("{what} answered HTTP {status}"))
        }
        OutboundError::Status(status) => {
            OidcError::Rejected(format!("{what} answered HTTP {status}"))
        }
        OutboundError::InvalidResponse(reason) => {
            OidcError::Rejected(format!("{what} answered {reason}"))
        }
        OutboundError::Internal(reason) => {
            OidcError::Unavailable(format!("{what} cannot be called: {reason}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openid_is_always_asked_for_once() {
        let scopes =
            |names: &[&str]| scope(&names.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>());
        assert_eq!(scopes(&[]), "openid");
        assert_eq!(
            scopes(&["email", "openid", "profile"]),
            "openid email profile"
        );
        assert_eq!(scopes(&["email profile", "email"]), "openid email profile");
    }

    #[test]
    fn outbound_failures_split_into_unavailable_and_rejected() {
        let unavailable = [
            OutboundError::Unreachable("connection refused".to_owned()),
            OutboundError::Status(503),
            OutboundError::Status(429),
            OutboundError::Internal("no roots".to_owned()),
        ];
        for error in unavailable {
            assert!(matches!(
                outbound_failure("x", error),
                OidcError::Unavailable(_)
            ));
        }
        let rejected = [
            OutboundError::Status(404),
            OutboundError::Status(401),
            OutboundError::InvalidResponse("a body that is not JSON".to_owned()),
        ];
        for error in rejected {
            assert!(matches!(
                outbound_failure("x", error),
                OidcError::Rejected(_)
            ));
        }
    }

    #[test]
    fn the_response_issuer_is_required_only_where_the_provider_promises_it() {
        let document = |promises: bool| {
            serde_json::json!({
                "issuer": "https://id.example",
                "authorization_endpoint": "https://id.example/auth",
                "token_endpoint": "https://id.example/token",
                "jwks_uri": "https://id.example/jwks",
                "authorization_response_iss_parameter_supported": promises,
            })
        };
        let silent = discovery::parse(&document(false), "https://id.example").unwrap();
        let promising = discovery::parse(&document(true), "https://id.example").unwrap();
        for discovery in [&silent, &promising] {
            assert!(judge_response_issuer(discovery, Some("https://id.example")).is_ok());
            for other in ["https://mallory.example", "https://id.example/", ""] {
                assert!(matches!(
                    judge_response_issuer(discovery, Some(other)),
                    Err(OidcError::Rejected(_))
                ));
            }
        }
        // Most providers do not send it yet: its absence is accepted unless promised.
        assert!(judge_response_issuer(&silent, None).is_ok());
        assert!(matches!(
            judge_response_issuer(&promising, None),
            Err(OidcError::Rejected(_))
        ));
    }

    #[test]
    fn the_secret_is_not_in_the_debug_form() {
        let scopes = vec!["email".to_owned()];
        let config = OidcProviderConfig {
            issuer: "https://id.example",
            client_id: "linkd",
            client_secret: "s3cr3t-value",
            scopes: &scopes,
        };
        let printed = format!("{config:?}");
        assert!(
            printed.contains("linkd") && !printed.contains("s3cr3t"),
            "{printed}"
        );
    }

    #[tokio::test]
    async fn an_issuer_that_is_not_https_is_refused_without_a_call() {
        let client = OidcClient::new(OutboundClient::new(&[]));
        let config = OidcProviderConfig {
            issuer: "http://id.example",
            client_id: "linkd",
            client_secret: "secret",
            scopes: &[],
        };
        let error = client
            .authorization_url(&config, "https://linkd.example/cb", "s", "n", "c")
            .await
            .unwrap_err();
        assert!(
            matches!(error, OidcError::Rejected(ref m) if m.contains("https")),
            "{error}"
        );
    }
}
