//! linkd as the relying party of a real OpenID Connect provider (node-oidc-provider as
//! released, over HTTPS with a test authority trusted as `--outbound-ca-file` trusts one),
//! signed in at in a real Chromium: discovery, PKCE, the code exchange with either client
//! authentication, `id_token` verification, userinfo completion, refused answers, a provider
//! that is down, and a provider that rotated its signing key.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use linkd::clock::Clock as _;
use linkd::identity::claims::ExternalClaims;
use linkd::identity::oidc::{OidcClient, OidcError, ProviderAnswer};

use crate::support::browser::{Browser, Platform, query_of};
use crate::support::oidc_provider::{Fault, OidcProvider, ProviderOptions, TestClient};

/// One sign-in's secrets, as linkd's sign-in session keeps them.
struct Attempt {
    state: String,
    nonce: String,
    verifier: String,
    challenge: String,
}

impl Attempt {
    fn new() -> Self {
        let verifier = linkd::secrets::random_token(32).unwrap();
        let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
        Self {
            state: linkd::secrets::random_token(16).unwrap(),
            nonce: linkd::secrets::random_token(16).unwrap(),
            challenge: URL_SAFE_NO_PAD.encode(digest.as_ref()),
            verifier,
        }
    }
}

/// A provider with one client, a browser, and the redirect URI's stand-in.
struct Setup {
    provider: OidcProvider,
    client: TestClient,
    browser: Browser,
    platform: Platform,
    scopes: Vec<String>,
}

impl Setup {
    async fn start(change: impl FnOnce(&mut ProviderOptions, &mut TestClient)) -> Self {
        let platform = Platform::start().await;
        let mut client = TestClient::new(&format!("{}/r/oidc", platform.base()));
        let mut options = ProviderOptions::new(Vec::new());
        change(&mut options, &mut client);
        options.clients = vec![client.clone()];
        let (provider, browser) = tokio::join!(OidcProvider::start(options), Browser::start());
        Self {
            provider,
            client,
            browser,
            platform,
            scopes: vec![
                "openid".to_owned(),
                "email".to_owned(),
                "profile".to_owned(),
            ],
        }
    }

    /// Signs in as `login` through `oidc`'s authorization URL; the code and the attempt.
    async fn code(&self, oidc: &OidcClient, login: &str) -> (String, Attempt) {
        let attempt = Attempt::new();
        let config = self.client.config(&self.provider.issuer, &self.scopes);
        let url = oidc
            .authorization_url(
                &config,
                &self.client.redirect_uri,
                &attempt.state,
                &attempt.nonce,
                &attempt.challenge,
            )
            .await
            .unwrap();
        self.browser.goto(&url).await;
        self.provider.sign_in(&self.browser, login).await;
        let query = query_of(&self.platform.next_redirect().await);
        assert_eq!(query.get("state"), Some(&attempt.state), "{query:?}");
        // RFC 9207: the provider names itself in the answer.
        assert_eq!(query.get("iss"), Some(&self.provider.issuer), "{query:?}");
        let code = query
            .get("code")
            .unwrap_or_else(|| panic!("no code: {query:?}\n{}", self.provider.log()))
            .clone();
        (code, attempt)
    }

    async fn finish(
        &self,
        oidc: &OidcClient,
        code: &str,
        attempt: &Attempt,
        nonce: &str,
    ) -> Result<ExternalClaims, OidcError> {
        self.finish_as(oidc, &self.client, code, attempt, nonce)
            .await
    }

    async fn finish_as(
        &self,
        oidc: &OidcClient,
        client: &TestClient,
        code: &str,
        attempt: &Attempt,
        nonce: &str,
    ) -> Result<ExternalClaims, OidcError> {
        self.finish_answer(
            oidc,
            client,
            ProviderAnswer {
                code,
                issuer: Some(&self.provider.issuer),
            },
            attempt,
            nonce,
        )
        .await
    }

    async fn finish_answer(
        &self,
        oidc: &OidcClient,
        client: &TestClient,
        answer: ProviderAnswer<'_>,
        attempt: &Attempt,
        nonce: &str,
    ) -> Result<ExternalClaims, OidcError> {
        oidc.finish(
            &client.config(&self.provider.issuer, &self.scopes),
            &self.client.redirect_uri,
            answer,
            &attempt.verifier,
            nonce,
            now(),
        )
        .await
    }

    async fn close(self) {
        self.browser.close().await;
    }
}

fn now() -> i64 {
    linkd::clock::SystemClock.now()
}

fn ada() -> ExternalClaims {
    ExternalClaims {
        subject: "ada".to_owned(),
        email: Some("ada@example.com".to_owned()),
        email_verified: Some(true),
        name: Some("Ada Example".to_owned()),
        given_name: Some("Ada".to_owned()),
        family_name: Some("Example".to_owned()),
        picture: None,
    }
}

fn rejected(outcome: Result<ExternalClaims, OidcError>) -> String {
    match outcome {
        Err(OidcError::Rejected(reason)) => reason,
        other => panic!("expected Rejected, got {other:?}"),
    }
}

/// The whole flow: the authorization URL carries PKCE S256, state and nonce; the browser
/// signs in at the provider; the code gives the `id_token`'s `sub` with the email and
/// profile that only the provider's userinfo serves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_at_the_provider_gives_its_claims_completed_by_userinfo() {
    let setup = Setup::start(|_, _| {}).await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let attempt = Attempt::new();
    let config = setup.client.config(&setup.provider.issuer, &setup.scopes);
    let url = oidc
        .authorization_url(
            &config,
            "https://linkd.example/cb",
            "st",
            "nc",
            &attempt.challenge,
        )
        .await
        .unwrap();
    let (endpoint, query) = url.split_once('?').unwrap();
    assert_eq!(endpoint, format!("{}/auth", setup.provider.issuer));
    let query = query_of(&format!("?{query}"));
    for (name, value) in [
        ("response_type", "code"),
        ("client_id", setup.client.id.as_str()),
        ("redirect_uri", "https://linkd.example/cb"),
        ("scope", "openid email profile"),
        ("state", "st"),
        ("nonce", "nc"),
        ("code_challenge", attempt.challenge.as_str()),
        ("code_challenge_method", "S256"),
    ] {
        assert_eq!(query.get(name).map(String::as_str), Some(value), "{name}");
    }

    let (code, attempt) = setup.code(&oidc, "ada").await;
    let claims = setup.finish(&oidc, &code, &attempt, &attempt.nonce).await;
    assert_eq!(claims.unwrap(), ada());

    // RFC 9207: the answer names this provider; another issuer, or no issuer from a provider
    // whose discovery says it always names itself, is refused (mix-up) before the code is
    // redeemed: the same code still redeems once the answer names the provider.
    let (code, attempt) = setup.code(&oidc, "ada").await;
    for issuer in [Some("https://mallory.example"), None] {
        let answer = ProviderAnswer {
            code: &code,
            issuer,
        };
        assert!(
            matches!(
                setup
                    .finish_answer(&oidc, &setup.client, answer, &attempt, &attempt.nonce)
                    .await,
                Err(OidcError::Rejected(_))
            ),
            "{issuer:?}"
        );
    }
    let claims = setup.finish(&oidc, &code, &attempt, &attempt.nonce).await;
    assert_eq!(claims.unwrap(), ada());
    setup.close().await;
}

/// The premise of the test above: the provider keeps the email out of the `id_token`, so
/// the email linkd returned came from userinfo.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_serves_the_email_at_userinfo_only() {
    let setup = Setup::start(|_, _| {}).await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let (code, attempt) = setup.code(&oidc, "ada").await;
    let answer = setup
        .provider
        .outbound()
        .post_form(
            &format!("{}/token", setup.provider.issuer),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", &setup.client.redirect_uri),
                ("code_verifier", &attempt.verifier),
            ],
            Some((&setup.client.id, &setup.client.secret)),
        )
        .await
        .unwrap();
    assert_eq!(answer.status, 200, "{:?}", answer.json);
    let json = answer.json.unwrap();
    let payload = json["id_token"]
        .as_str()
        .unwrap()
        .split('.')
        .nth(1)
        .unwrap();
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["sub"], "ada");
    assert!(claims.get("email").is_none(), "{claims}");
    assert!(claims.get("name").is_none(), "{claims}");
    setup.close().await;
}

/// Refused answers are `Rejected` with the reason, never `Unavailable`, and no message
/// holds the client secret: a wrong secret (the provider refuses it and keeps the code), a
/// nonce that is not the sign-in's, and a code redeemed twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_answers_are_rejected() {
    let setup = Setup::start(|_, _| {}).await;
    let oidc = OidcClient::new(setup.provider.outbound());

    let (code, attempt) = setup.code(&oidc, "ada").await;
    let mut impostor = setup.client.clone();
    impostor.secret = "wrong-secret-value".to_owned();
    let reason = rejected(
        setup
            .finish_as(&oidc, &impostor, &code, &attempt, &attempt.nonce)
            .await,
    );
    assert!(reason.contains("invalid_client"), "{reason}");
    assert!(
        !reason.contains(&impostor.secret) && !reason.contains(&code),
        "{reason}"
    );

    let reason = rejected(setup.finish(&oidc, &code, &attempt, "another-nonce").await);
    assert!(reason.contains("nonce"), "{reason}");

    let (code, attempt) = setup.code(&oidc, "ada").await;
    assert_eq!(
        setup
            .finish(&oidc, &code, &attempt, &attempt.nonce)
            .await
            .unwrap(),
        ada()
    );
    let reason = rejected(setup.finish(&oidc, &code, &attempt, &attempt.nonce).await);
    assert!(reason.contains("invalid_grant"), "{reason}");

    // A wrong PKCE verifier is the provider's invalid_grant too.
    let (code, mut attempt) = setup.code(&oidc, "ada").await;
    attempt.verifier = Attempt::new().verifier;
    let reason = rejected(setup.finish(&oidc, &code, &attempt, &attempt.nonce).await);
    assert!(reason.contains("invalid_grant"), "{reason}");
    setup.close().await;
}

/// A provider that is down makes every step `Unavailable`: the token endpoint for a code
/// issued before it stopped, discovery for a client that has not read it yet. Once it is
/// back, the same clients work again: no failure was cached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_is_down_is_unavailable_until_it_is_back() {
    let mut setup = Setup::start(|_, _| {}).await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let (code, attempt) = setup.code(&oidc, "ada").await;
    setup.provider.stop();

    let outcome = setup.finish(&oidc, &code, &attempt, &attempt.nonce).await;
    assert!(
        matches!(outcome, Err(OidcError::Unavailable(ref reason)) if reason.contains("token endpoint")),
        "{outcome:?}"
    );
    let fresh = OidcClient::new(setup.provider.outbound());
    let config = setup.client.config(&setup.provider.issuer, &setup.scopes);
    let outcome = fresh
        .authorization_url(&config, &setup.client.redirect_uri, "s", "n", "c")
        .await;
    assert!(
        matches!(outcome, Err(OidcError::Unavailable(ref reason)) if reason.contains("discovery")),
        "{outcome:?}"
    );

    setup.provider.restart().await;
    let (code, attempt) = setup.code(&fresh, "ada").await;
    assert_eq!(
        setup
            .finish(&oidc, &code, &attempt, &attempt.nonce)
            .await
            .unwrap(),
        ada()
    );
    setup.close().await;
}

/// A provider that lists only client_secret_post in its discovery document, and answers
/// Basic credentials with invalid_client, gets the secret in the form; its ES256 key
/// verifies the `id_token`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_that_lists_only_client_secret_post_gets_it() {
    let setup = Setup::start(|options, client| {
        options.auth_methods = vec!["client_secret_post"];
        options.key_alg = "ES256";
        *client = client.clone().authenticating_with("client_secret_post");
    })
    .await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let (code, attempt) = setup.code(&oidc, "grace").await;
    let claims = setup
        .finish(&oidc, &code, &attempt, &attempt.nonce)
        .await
        .unwrap();
    assert_eq!(claims.subject, "grace");
    assert_eq!(claims.email.as_deref(), Some("grace@example.com"));
    assert_eq!(claims.given_name.as_deref(), Some("Grace"));
    setup.close().await;
}

/// After the provider rotates its signing key, an `id_token` signed with the new key makes
/// linkd fetch the JWKS again and succeed; but not within the refetch interval of the last
/// fetch, so that tokens naming unknown keys cannot make linkd hammer the provider.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_signing_key_is_fetched_once_the_interval_allows() {
    let mut setup = Setup::start(|_, _| {}).await;
    let eager =
        OidcClient::new(setup.provider.outbound()).with_jwks_refetch_interval(Duration::ZERO);
    let patient = OidcClient::new(setup.provider.outbound())
        .with_jwks_refetch_interval(Duration::from_secs(3600));
    for oidc in [&eager, &patient] {
        let (code, attempt) = setup.code(oidc, "ada").await;
        setup
            .finish(oidc, &code, &attempt, &attempt.nonce)
            .await
            .unwrap();
    }

    let old_kid = setup.provider.kid();
    setup.provider.rotate_keys().await;
    assert_ne!(setup.provider.kid(), old_kid);

    let (code, attempt) = setup.code(&patient, "ada").await;
    let reason = rejected(
        setup
            .finish(&patient, &code, &attempt, &attempt.nonce)
            .await,
    );
    assert!(reason.contains("was fetched less than"), "{reason}");

    let (code, attempt) = setup.code(&eager, "ada").await;
    assert_eq!(
        setup
            .finish(&eager, &code, &attempt, &attempt.nonce)
            .await
            .unwrap(),
        ada()
    );
    setup.close().await;
}

/// A discovery document that names another issuer than the one configured is refused (a
/// provider must not vouch for another's users): here the provider calls itself
/// `https://127.0.0.1:{port}` and linkd was configured with `https://localhost:{port}`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discovery_document_naming_another_issuer_is_rejected() {
    let client = TestClient::new("https://linkd.example/cb");
    let provider = OidcProvider::start(ProviderOptions::new(vec![client.clone()])).await;
    let oidc = OidcClient::new(provider.outbound());
    let alias = format!("https://localhost:{}", provider.port);
    let outcome = oidc
        .authorization_url(
            &client.config(&alias, &[]),
            &client.redirect_uri,
            "s",
            "n",
            "c",
        )
        .await;
    assert!(
        matches!(outcome, Err(OidcError::Rejected(ref reason)) if reason.contains("names the issuer")),
        "{outcome:?}"
    );
    // The provider's own name works.
    oidc.authorization_url(
        &client.config(&provider.issuer, &[]),
        &client.redirect_uri,
        "s",
        "n",
        "c",
    )
    .await
    .unwrap();
}

/// An `id_token` the provider signed with HS256 (keyed with the client secret, as the client
/// was registered to get) is refused, though the provider lists the algorithm.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_signed_with_the_client_secret_is_rejected() {
    let setup = Setup::start(|_, client| client.id_token_alg = Some("HS256")).await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let (code, attempt) = setup.code(&oidc, "ada").await;
    let reason = rejected(setup.finish(&oidc, &code, &attempt, &attempt.nonce).await);
    assert!(reason.contains("\"HS256\""), "{reason}");
    setup.close().await;
}

/// Faults of each of the provider's endpoints: statuses of 5xx and outages are
/// `Unavailable`, answers that are not JSON are `Rejected`. A code the token endpoint never
/// saw (its 502 came from in front of the provider) is redeemed once the fault is gone. An
/// endpoint that never answers fails within one attempt's timeout (10 s): the browser is
/// waiting, and a second token request could spend the code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_faults_are_unavailable_or_rejected() {
    let setup = Setup::start(|_, _| {}).await;
    let provider = &setup.provider;
    let config = setup.client.config(&provider.issuer, &setup.scopes);
    let discovery_path = "/.well-known/openid-configuration";
    let unavailable = |outcome: Result<ExternalClaims, OidcError>, what: &str| match outcome {
        Err(OidcError::Unavailable(reason)) => assert!(reason.contains(what), "{reason}"),
        other => panic!("expected Unavailable for {what}, got {other:?}"),
    };

    let fresh = OidcClient::new(provider.outbound());
    provider.fail(discovery_path, Fault::Status(503));
    let outcome = fresh
        .authorization_url(&config, &setup.client.redirect_uri, "s", "n", "c")
        .await;
    assert!(
        matches!(outcome, Err(OidcError::Unavailable(ref r)) if r.contains("HTTP 503")),
        "{outcome:?}"
    );
    // An endpoint that never answers costs one attempt's timeout, not one per retry.
    provider.fail(discovery_path, Fault::Hang);
    let started = std::time::Instant::now();
    let outcome = fresh
        .authorization_url(&config, &setup.client.redirect_uri, "s", "n", "c")
        .await;
    assert!(
        matches!(outcome, Err(OidcError::Unavailable(ref r)) if r.contains("could not be reached")),
        "{outcome:?}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    provider.fail(discovery_path, Fault::Html);
    let outcome = fresh
        .authorization_url(&config, &setup.client.redirect_uri, "s", "n", "c")
        .await;
    assert!(
        matches!(outcome, Err(OidcError::Rejected(ref r)) if r.contains("not JSON")),
        "{outcome:?}"
    );
    provider.clear_faults();

    let oidc = OidcClient::new(provider.outbound());
    let (code, attempt) = setup.code(&oidc, "ada").await;
    provider.fail("/token", Fault::Status(502));
    unavailable(
        setup.finish(&oidc, &code, &attempt, &attempt.nonce).await,
        "token endpoint answered HTTP 502",
    );
    provider.clear_faults();
    assert_eq!(
        setup
            .finish(&oidc, &code, &attempt, &attempt.nonce)
            .await
            .unwrap(),
        ada()
    );

    let (code, attempt) = setup.code(&oidc, "ada").await;
    provider.fail("/me", Fault::Status(503));
    unavailable(
        setup.finish(&oidc, &code, &attempt, &attempt.nonce).await,
        "userinfo endpoint answered HTTP 503",
    );
    provider.fail("/me", Fault::Html);
    let (code, attempt) = setup.code(&oidc, "ada").await;
    let reason = rejected(setup.finish(&oidc, &code, &attempt, &attempt.nonce).await);
    assert!(
        reason.contains("userinfo endpoint") && reason.contains("not JSON"),
        "{reason}"
    );
    provider.clear_faults();

    // A client that has not fetched the keys yet meets a broken JWKS.
    let (code, attempt) = setup.code(&oidc, "ada").await;
    provider.fail("/jwks", Fault::Status(500));
    let keyless = OidcClient::new(provider.outbound());
    unavailable(
        setup
            .finish(&keyless, &code, &attempt, &attempt.nonce)
            .await,
        "JWKS answered HTTP 500",
    );
    provider.clear_faults();

    let (code, attempt) = setup.code(&oidc, "ada").await;
    provider.fail("/token", Fault::Hang);
    let started = std::time::Instant::now();
    unavailable(
        setup.finish(&oidc, &code, &attempt, &attempt.nonce).await,
        "token endpoint could not be reached",
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    setup.close().await;
}

/// A provider signing with an Ed25519 key (EdDSA): the key type and algorithm are read from
/// its JWKS like RSA and P-256 keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_eddsa_signing_key_verifies() {
    let setup = Setup::start(|options, _| options.key_alg = "EdDSA").await;
    let oidc = OidcClient::new(setup.provider.outbound());
    let (code, attempt) = setup.code(&oidc, "ada").await;
    assert_eq!(
        setup
            .finish(&oidc, &code, &attempt, &attempt.nonce)
            .await
            .unwrap(),
        ada()
    );
    setup.close().await;
}
