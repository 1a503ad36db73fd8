//! The token, userinfo, revocation and introspection endpoints over real HTTPS, on the
//! embedded store and on a real Redis that a test stops and restarts. Codes are minted by
//! signing code claims with the server's own keyring, exactly as the authorization
//! endpoint does, so each rule is tested alone.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::Full;
use linkd::app::App;
use linkd::grants::{AccessClaims, CodeClaims};
use linkd::store::ClientSettings;
use linkd::tokens::TokenKind;

use crate::support::linkd::{TestServer, sample, settings_in};
use crate::support::{REDIRECT, encode, flow, https, provision, redis_server};

const OTHER_REDIRECT: &str = "https://oauth-redirect.googleusercontent.com/r/other-project";
/// A secret with every character form-encoding changes, to prove Basic decoding.
const ACME_SECRET: &str = "s3cret:with+plus%percent and space";
const OTHER_SECRET: &str = "another-long-secret-value";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

struct Fixture {
    server: TestServer,
    user_id: String,
    _redis: Option<redis_server::RedisServer>,
}

impl Fixture {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    fn code(&self, client: &str, redirect: &str, pkce: Option<&str>, exp_offset: i64) -> String {
        provision::Code {
            client,
            user: &self.user_id,
            redirect,
            scope: "email profile",
            pkce,
            lifetime: exp_offset,
        }
        .sign(self.app())
    }

    async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> https::Reply {
        self.post_with(path, form, basic, &[]).await
    }

    async fn post_with(
        &self,
        path: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        headers: &[(&str, &str)],
    ) -> https::Reply {
        let mut headers = headers.to_vec();
        let authorization;
        if let Some((id, secret)) = basic {
            let credentials = base64::engine::general_purpose::STANDARD.encode(format!(
                "{}:{}",
                encode(id),
                encode(secret)
            ));
            authorization = format!("Basic {credentials}");
            headers.push(("authorization", &authorization));
        }
        flow::post_form_with_headers(&self.server.target(), path, form, &headers).await
    }

    /// As [`Fixture::post`], from the client a trusted load balancer names in
    /// `X-Forwarded-For`.
    async fn post_from(
        &self,
        path: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
        forwarded_for: &str,
    ) -> https::Reply {
        self.post_with(path, form, basic, &[("x-forwarded-for", forwarded_for)])
            .await
    }

    async fn refresh_from(
        &self,
        refresh_token: &str,
        client: (&str, &str),
        forwarded_for: &str,
    ) -> https::Reply {
        self.post_from(
            "/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
            Some(client),
            forwarded_for,
        )
        .await
    }

    async fn exchange(&self, code: &str) -> https::Reply {
        flow::redeem(&self.server.target(), code, REDIRECT, ACME_SECRET).await
    }

    async fn refresh(&self, refresh_token: &str, client: (&str, &str)) -> https::Reply {
        self.post(
            "/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ],
            Some(client),
        )
        .await
    }

    async fn userinfo(&self, authorization: Option<&str>) -> https::Reply {
        self.userinfo_at("/userinfo", authorization).await
    }

    async fn userinfo_at(&self, path_and_query: &str, authorization: Option<&str>) -> https::Reply {
        let headers: Vec<_> = authorization
            .map(|value| ("authorization", value))
            .into_iter()
            .collect();
        flow::get(&self.server.target(), path_and_query, &headers).await
    }
}

async fn fixture(adjust: impl FnOnce(&mut linkd::config::ServeSettings)) -> Fixture {
    fixture_on(false, adjust).await
}

/// A fixture on the embedded store, or on a Redis of its own.
async fn fixture_on(
    redis: bool,
    adjust: impl FnOnce(&mut linkd::config::ServeSettings),
) -> Fixture {
    fixture_on_clocked(redis, None, adjust).await
}

/// [`fixture_on`] with the server on `clock` when one is given.
async fn fixture_on_clocked(
    redis: bool,
    clock: Option<Arc<linkd::clock::ManualClock>>,
    adjust: impl FnOnce(&mut linkd::config::ServeSettings),
) -> Fixture {
    let (server, redis) = TestServer::start_on_store_clocked(redis, clock, adjust).await;
    let app = server.server.app();
    for (id, project, secret, rfc) in [
        ("acme", "acme-project", ACME_SECRET, false),
        ("other", "other-project", OTHER_SECRET, true),
    ] {
        let settings = ClientSettings {
            rfc6749_errors: rfc,
            ..ClientSettings::default()
        };
        provision::client(app, id, project, None, Some(secret), settings).await;
    }
    let profile = linkd::users::Profile {
        given_name: Some("Ada".to_owned()),
        family_name: Some("Lovelace".to_owned()),
        ..linkd::users::Profile::default()
    };
    let user_id = provision::ada(app, profile).await;
    Fixture {
        server,
        user_id,
        _redis: redis,
    }
}

/// A code, the redirect URI sent with it, and extra form fields.
type RejectionCase = (
    String,
    Option<&'static str>,
    Vec<(&'static str, &'static str)>,
);

fn assert_invalid_grant(reply: &https::Reply, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", reply.text());
    assert_eq!(reply.json()["error"], "invalid_grant", "{what}");
    assert_eq!(
        reply.header("cache-control").as_deref(),
        Some("no-store"),
        "{what}"
    );
    assert_eq!(
        reply.header("pragma").as_deref(),
        Some("no-cache"),
        "{what}"
    );
    assert!(reply.json().get("access_token").is_none(), "{what}");
}

async fn code_exchange_with_body_or_basic_credentials(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let body = fixture
        .exchange(&fixture.code("acme", REDIRECT, None, 600))
        .await;
    assert_eq!(body.status, 200, "{}", body.text());
    let tokens = body.json();
    assert_eq!(tokens["token_type"], "Bearer");
    assert!(tokens["expires_in"].is_number());
    assert!(tokens["refresh_token"].as_str().unwrap().len() > 43);
    assert_eq!(body.header("cache-control").as_deref(), Some("no-store"));

    let code = fixture.code("acme", REDIRECT, Some(CHALLENGE), 600);
    let basic = fixture
        .post(
            "/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
            ],
            Some(("acme", ACME_SECRET)),
        )
        .await;
    assert_eq!(basic.status, 200, "{}", basic.text());

    let userinfo = fixture
        .userinfo(Some(&format!(
            "Bearer {}",
            basic.json()["access_token"].as_str().unwrap()
        )))
        .await;
    assert_eq!(userinfo.status, 200);
    let claims = userinfo.json();
    assert_eq!(claims["sub"], fixture.user_id.as_str());
    assert_eq!(claims["email"], "ada@example.com");
    assert_eq!(claims["given_name"], "Ada");
    assert!(claims.get("picture").is_none());
}

async fn every_rejection_is_invalid_grant_and_issues_nothing(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let app = fixture.app();
    let good = || fixture.code("acme", REDIRECT, None, 600);
    let access_token = {
        let reply = fixture.exchange(&good()).await;
        reply.json()["access_token"].as_str().unwrap().to_owned()
    };
    let foreign_dir = tempfile::tempdir().unwrap();
    linkd::tokens::keyring::ensure_current(
        foreign_dir.path(),
        linkd::tokens::keyring::Algorithm::Es256,
        0,
    )
    .unwrap();
    let foreign = linkd::tokens::keyring::KeyringHandle::open(foreign_dir.path()).unwrap();
    let forged = foreign
        .load()
        .sign(
            TokenKind::AuthorizationCode,
            &serde_json::json!({"iss": app.issuer, "aud": "acme", "sub": fixture.user_id, "exp": 4_000_000_000i64, "iat": 1, "jti": "j", "rdh": linkd::secrets::sha256_hex(REDIRECT.as_bytes()), "scope": "email", "gid": "g"}),
        )
        .unwrap();
    let mut tampered = good();
    tampered.insert(tampered.len() - 3, 'A');
    tampered.pop();
    let pkce_code = fixture.code("acme", REDIRECT, Some(CHALLENGE), 600);
    let with = |code: String,
                redirect: Option<&'static str>,
                extra: Vec<(&'static str, &'static str)>| (code, redirect, extra);
    let cases: Vec<(&str, RejectionCase)> = vec![
        (
            "expired code",
            with(
                fixture.code("acme", REDIRECT, None, -120),
                Some(REDIRECT),
                vec![],
            ),
        ),
        (
            "code 2 s past its expiry, within the clock leeway",
            with(
                fixture.code("acme", REDIRECT, None, -2),
                Some(REDIRECT),
                vec![],
            ),
        ),
        (
            "another client's code",
            with(
                fixture.code("other", OTHER_REDIRECT, None, 600),
                Some(OTHER_REDIRECT),
                vec![],
            ),
        ),
        ("missing redirect_uri", with(good(), None, vec![])),
        (
            "redirect_uri with a trailing slash",
            with(
                good(),
                Some("https://oauth-redirect.googleusercontent.com/r/acme-project/"),
                vec![],
            ),
        ),
        ("forged code", with(forged, Some(REDIRECT), vec![])),
        ("tampered code", with(tampered, Some(REDIRECT), vec![])),
        (
            "garbage",
            with("not-a-code".to_owned(), Some(REDIRECT), vec![]),
        ),
        (
            "access token as code",
            with(access_token.clone(), Some(REDIRECT), vec![]),
        ),
        (
            "missing verifier",
            with(pkce_code.clone(), Some(REDIRECT), vec![]),
        ),
        (
            "wrong verifier",
            with(
                pkce_code.clone(),
                Some(REDIRECT),
                vec![(
                    "code_verifier",
                    "eBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk",
                )],
            ),
        ),
        (
            "verifier without challenge",
            with(good(), Some(REDIRECT), vec![("code_verifier", VERIFIER)]),
        ),
        (
            "wrong secret",
            with(good(), Some(REDIRECT), vec![("client_secret", "nope")]),
        ),
    ];
    for (what, (code, redirect, extra)) in cases {
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("client_id", "acme"),
        ];
        if let Some(redirect) = redirect {
            form.push(("redirect_uri", redirect));
        }
        if !extra.iter().any(|(name, _)| *name == "client_secret") {
            form.push(("client_secret", ACME_SECRET));
        }
        form.extend(extra.iter().copied());
        assert_invalid_grant(&fixture.post("/token", &form, None).await, what);
    }
    // The PKCE code was never spent by the failed attempts: the right verifier works.
    let redeemed = fixture
        .post(
            "/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", pkce_code.as_str()),
                ("redirect_uri", REDIRECT),
                ("code_verifier", VERIFIER),
                ("client_id", "acme"),
                ("client_secret", ACME_SECRET),
            ],
            None,
        )
        .await;
    assert_eq!(redeemed.status, 200, "{}", redeemed.text());

    let code = good();
    for (what, form, basic) in [
        (
            "unknown client",
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
                ("client_id", "ghost"),
                ("client_secret", ACME_SECRET),
            ],
            None,
        ),
        (
            "Basic and body secret",
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
                ("client_secret", ACME_SECRET),
            ],
            Some(("acme", ACME_SECRET)),
        ),
        (
            "Basic and another body client_id",
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
                ("client_id", "other"),
            ],
            Some(("acme", ACME_SECRET)),
        ),
        (
            "repeated code",
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
            ],
            Some(("acme", ACME_SECRET)),
        ),
        (
            "password grant",
            vec![
                ("grant_type", "password"),
                ("username", "ada"),
                ("password", "x"),
            ],
            Some(("acme", ACME_SECRET)),
        ),
        (
            "no credentials",
            vec![
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", REDIRECT),
            ],
            None,
        ),
    ] {
        assert_invalid_grant(&fixture.post("/token", &form, basic).await, what);
    }
    let json_body = https::send(
        fixture.server.address,
        https::client_config(&fixture.server.cert, https::Offer::Both),
        https::request("POST", "/token")
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                r#"{"grant_type":"authorization_code"}"#,
            )))
            .unwrap(),
    )
    .await;
    assert_invalid_grant(&json_body, "JSON body");
    // After all that, the untouched code still works once.
    assert_eq!(fixture.exchange(&code).await.status, 200);
}

async fn a_replayed_code_revokes_what_it_produced(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let code = fixture.code("acme", REDIRECT, None, 600);
    let first = fixture.exchange(&code).await.json();
    let access = format!("Bearer {}", first["access_token"].as_str().unwrap());
    let refresh = first["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(fixture.userinfo(Some(&access)).await.status, 200);

    assert_invalid_grant(&fixture.exchange(&code).await, "replay");
    let refused = fixture.userinfo(Some(&access)).await;
    assert_eq!(refused.status, 401);
    assert!(
        refused
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token")
    );
    assert_invalid_grant(
        &fixture.refresh(&refresh, ("acme", ACME_SECRET)).await,
        "refresh after replay",
    );
}

/// Concurrent redemptions of one code: exactly one attempt holds the code at a time and
/// issues tokens; the others are told to retry while it may still be running (they may be
/// the client's own retries) and are replays once it has issued — which revokes the grant.
async fn concurrent_redemptions_of_one_code_yield_one_success(redis: bool) {
    let fixture = Arc::new(fixture_on(redis, |_| {}).await);
    let code = fixture.code("acme", REDIRECT, None, 600);
    let attempts: Vec<_> = (0..20)
        .map(|_| {
            let fixture = Arc::clone(&fixture);
            let code = code.clone();
            tokio::spawn(async move { fixture.exchange(&code).await })
        })
        .collect();
    let mut replies = Vec::new();
    for attempt in attempts {
        replies.push(attempt.await.unwrap());
    }
    let statuses: Vec<u16> = replies.iter().map(|reply| reply.status).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    for reply in replies.iter().filter(|reply| reply.status != 200) {
        match reply.status {
            503 => assert!(reply.header("retry-after").is_some()),
            _ => assert_invalid_grant(reply, "a concurrent redemption"),
        }
    }
    let winner = replies
        .iter()
        .find(|reply| reply.status == 200)
        .unwrap()
        .json();
    // The losers retry, as the platform does after a 503: the code was redeemed meanwhile,
    // so each retry is a replay.
    for _ in statuses.iter().filter(|s| **s == 503) {
        let retry = fixture.exchange(&code).await;
        assert_invalid_grant(&retry, "a retry after the code was redeemed");
    }
    if statuses.iter().all(|s| *s != 400) {
        assert_invalid_grant(&fixture.exchange(&code).await, "a replay");
    }
    // The replays revoked the winner's grant, however they interleaved with it.
    let access = format!("Bearer {}", winner["access_token"].as_str().unwrap());
    assert_eq!(fixture.userinfo(Some(&access)).await.status, 401);
    assert_invalid_grant(
        &fixture
            .refresh(
                winner["refresh_token"].as_str().unwrap(),
                ("acme", ACME_SECRET),
            )
            .await,
        "the winner's refresh token",
    );
    let links = fixture
        .app()
        .store
        .list_links(&fixture.user_id)
        .await
        .unwrap();
    assert!(links.is_empty(), "no link survives the replays: {links:?}");
}

impl Fixture {
    fn code_claims(&self, code: &str) -> CodeClaims {
        provision::verify_code(self.app(), code, None)
    }

    /// An attempt at redeeming `code` that took it at `taken_at` and then issued nothing, as
    /// one cut short by a store fault or a crash does.
    async fn abandon_redemption(&self, code: &str, taken_at: i64) {
        let claims = self.code_claims(code);
        let app = self.app();
        let attempt = linkd::store::CodeRedemption {
            jti: claims.jti,
            grant_id: claims.gid,
            attempt: "abandoned".to_owned(),
            now: taken_at,
            lease_until: taken_at + app.oauth.redemption_lease_secs,
            expires_at: claims.exp + 60,
        };
        assert_eq!(
            app.store.begin_redemption(&attempt).await.unwrap(),
            linkd::store::RedemptionStart::Started
        );
    }

    /// Retries the exchange of `code` as the platform does after a 503, until it is answered
    /// otherwise; every answer before that must be a 503 with `Retry-After`.
    async fn exchange_until_not_503(&self, code: &str) -> https::Reply {
        let started = std::time::Instant::now();
        loop {
            let reply = self.exchange(code).await;
            if reply.status != 503 {
                return reply;
            }
            assert!(reply.header("retry-after").is_some());
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "still 503 after 20 s"
            );
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}

/// A redemption cut short after it took the code, before it issued anything: the client's
/// retry is told to wait while the cut-short attempt might still be running, then succeeds.
/// Nothing was wrong with the code, so it must never be called invalid.
async fn an_interrupted_redemption_can_be_retried(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let now = fixture.app().clock.now();
    let lease = fixture.app().oauth.redemption_lease_secs;

    // Long ago: the retry takes the code over at once.
    let code = fixture.code("acme", REDIRECT, None, 600);
    fixture.abandon_redemption(&code, now - lease - 1).await;
    let tokens = fixture.exchange(&code).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text());
    let refresh = tokens.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(
        fixture
            .refresh(&refresh, ("acme", ACME_SECRET))
            .await
            .status,
        200
    );

    // Just now: 503 with Retry-After until the lease has passed, then 200.
    let code = fixture.code("acme", REDIRECT, None, 600);
    fixture.abandon_redemption(&code, now - lease + 1).await;
    let busy = fixture.exchange(&code).await;
    assert_eq!(busy.status, 503, "{}", busy.text());
    assert_eq!(busy.json()["error"], "temporarily_unavailable");
    let retried = fixture.exchange_until_not_503(&code).await;
    assert_eq!(retried.status, 200, "{}", retried.text());

    // Once tokens were issued, the same request is a replay and revokes.
    assert_invalid_grant(
        &fixture.exchange(&code).await,
        "replay after tokens were issued",
    );
    let access = format!(
        "Bearer {}",
        retried.json()["access_token"].as_str().unwrap()
    );
    assert_eq!(fixture.userinfo(Some(&access)).await.status, 401);
}

async fn refresh_tokens_are_reusable_bound_to_their_client_and_scope_limited(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let tokens = fixture
        .exchange(&fixture.code("acme", REDIRECT, None, 600))
        .await
        .json();
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let mut seen = vec![tokens["access_token"].as_str().unwrap().to_owned()];
    for _ in 0..3 {
        let reply = fixture.refresh(refresh, ("acme", ACME_SECRET)).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        assert!(body.get("refresh_token").is_none());
        let access = body["access_token"].as_str().unwrap().to_owned();
        assert!(
            !seen.contains(&access),
            "each refresh returns a new access token"
        );
        seen.push(access);
    }
    assert_invalid_grant(
        &fixture.refresh(refresh, ("other", OTHER_SECRET)).await,
        "another client's refresh token",
    );
    let narrower = fixture
        .post(
            "/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh),
                ("scope", "email"),
            ],
            Some(("acme", ACME_SECRET)),
        )
        .await;
    assert_eq!(narrower.json()["scope"], "email");
    assert_invalid_grant(
        &fixture
            .post(
                "/token",
                &[
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh),
                    ("scope", "email devices"),
                ],
                Some(("acme", ACME_SECRET)),
            )
            .await,
        "broader scope",
    );
    let mut mangled = refresh.to_owned();
    mangled.pop();
    mangled.push('x');
    assert_invalid_grant(
        &fixture.refresh(&mangled, ("acme", ACME_SECRET)).await,
        "unknown refresh token",
    );
}

async fn clients_that_ask_get_rfc6749_error_codes(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let wrong = fixture
        .post(
            "/token",
            &[("grant_type", "refresh_token"), ("refresh_token", "x")],
            Some(("other", "wrong-secret-value")),
        )
        .await;
    // The client is unknown to the caller until authenticated: the platform's default.
    assert_invalid_grant(&wrong, "wrong secret before authentication");
    let unsupported = fixture
        .post(
            "/token",
            &[("grant_type", "password")],
            Some(("other", OTHER_SECRET)),
        )
        .await;
    assert_eq!(unsupported.status, 400);
    assert_eq!(unsupported.json()["error"], "unsupported_grant_type");
    let revoke = fixture
        .post(
            "/revoke",
            &[("token", "x")],
            Some(("other", "wrong-secret-value")),
        )
        .await;
    assert_eq!(revoke.status, 401);
    assert!(
        revoke
            .header("www-authenticate")
            .unwrap()
            .starts_with("Basic")
    );
}

async fn userinfo_refuses_every_bad_token_with_a_bearer_challenge(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let app = fixture.app();
    let tokens = fixture
        .exchange(&fixture.code("acme", REDIRECT, None, 600))
        .await
        .json();
    let access = tokens["access_token"].as_str().unwrap().to_owned();

    // The header is the only way in: a token in the query or a form body is refused as a
    // malformed request, alone or beside the header.
    let in_query = format!("/userinfo?access_token={access}");
    let bearer = format!("Bearer {access}");
    for (what, reply) in [
        ("query", fixture.userinfo_at(&in_query, None).await),
        (
            "query and header",
            fixture.userinfo_at(&in_query, Some(&bearer)).await,
        ),
        (
            "form body",
            fixture
                .post("/userinfo", &[("access_token", access.as_str())], None)
                .await,
        ),
    ] {
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        assert!(
            reply
                .header("www-authenticate")
                .unwrap()
                .contains("error=\"invalid_request\""),
            "{what}"
        );
    }
    assert_eq!(fixture.userinfo(Some(&bearer)).await.status, 200);

    let missing = fixture.userinfo(None).await;
    assert_eq!(missing.status, 401);
    assert_eq!(
        missing.header("www-authenticate").as_deref(),
        Some("Bearer realm=\"linkd\"")
    );

    let now = app.clock.now();
    let expired = app
        .keyring
        .load()
        .sign(
            TokenKind::AccessToken,
            &AccessClaims {
                iss: app.issuer.clone(),
                sub: fixture.user_id.clone(),
                aud: app.issuer.clone(),
                client_id: "acme".to_owned(),
                exp: now - 3600,
                iat: now - 7200,
                jti: "old".to_owned(),
                scope: "email".to_owned(),
                gid: "g-old".to_owned(),
            },
        )
        .unwrap();
    let foreign_dir = tempfile::tempdir().unwrap();
    linkd::tokens::keyring::ensure_current(
        foreign_dir.path(),
        linkd::tokens::keyring::Algorithm::Es256,
        0,
    )
    .unwrap();
    let forged = linkd::tokens::keyring::KeyringHandle::open(foreign_dir.path())
        .unwrap()
        .load()
        .sign(TokenKind::AccessToken, &serde_json::json!({"iss": app.issuer, "sub": fixture.user_id, "aud": app.issuer, "client_id": "acme", "exp": now + 600, "iat": now, "jti": "f", "scope": "email", "gid": "g"}))
        .unwrap();
    let code = fixture.code("acme", REDIRECT, None, 600);
    for (what, header) in [
        ("malformed", "Bearer not.a.jwt".to_owned()),
        ("forged", format!("Bearer {forged}")),
        ("expired", format!("Bearer {expired}")),
        ("code as access token", format!("Bearer {code}")),
        (
            "refresh token as access token",
            format!("Bearer {}", tokens["refresh_token"].as_str().unwrap()),
        ),
    ] {
        let reply = fixture.userinfo(Some(&header)).await;
        assert_eq!(reply.status, 401, "{what}");
        let challenge = reply.header("www-authenticate").unwrap();
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(challenge.contains("error_description="), "{what}");
    }

    // Revocation by the client (RFC 7009), then introspection says inactive.
    let introspected = fixture
        .post(
            "/introspect",
            &[("token", access.as_str())],
            Some(("acme", ACME_SECRET)),
        )
        .await;
    assert_eq!(introspected.json()["active"], true);
    assert_eq!(introspected.json()["sub"], fixture.user_id.as_str());
    let other_view = fixture
        .post(
            "/introspect",
            &[("token", access.as_str())],
            Some(("other", OTHER_SECRET)),
        )
        .await;
    assert_eq!(other_view.json(), serde_json::json!({"active": false}));
    let revoked = fixture
        .post(
            "/revoke",
            &[("token", access.as_str())],
            Some(("acme", ACME_SECRET)),
        )
        .await;
    assert_eq!(revoked.status, 200);
    assert_eq!(
        fixture
            .userinfo(Some(&format!("Bearer {access}")))
            .await
            .status,
        401
    );
    let after = fixture
        .post(
            "/introspect",
            &[("token", access.as_str())],
            Some(("acme", ACME_SECRET)),
        )
        .await;
    assert_eq!(after.json()["active"], false);

    // Revoking the refresh token ends the whole grant.
    let refresh = tokens["refresh_token"].as_str().unwrap();
    assert_eq!(
        fixture
            .post(
                "/revoke",
                &[("token", refresh)],
                Some(("acme", ACME_SECRET))
            )
            .await
            .status,
        200
    );
    assert_invalid_grant(
        &fixture.refresh(refresh, ("acme", ACME_SECRET)).await,
        "revoked refresh token",
    );
}

/// A stranger guessing a client's secret (the client id is public) gets 429 for its wrong
/// secrets once past the limit, but never makes linkd refuse the right secret — not even
/// from the same address, since the platform's addresses are shared with anyone who can
/// make it call linkd; inventing client ids creates no counter per id.
async fn client_secret_brute_force_is_throttled_and_recovers(redis: bool) {
    use linkd::clock::Clock as _;
    let clock = Arc::new(linkd::clock::ManualClock::new(
        linkd::clock::SystemClock.now(),
    ));
    let fixture = fixture_on_clocked(redis, Some(Arc::clone(&clock)), |settings| {
        settings.oauth.client_auth_attempts = 5;
        settings.oauth.unknown_client_attempts_per_source = 5;
        settings.oauth.throttle_window_secs = 60;
        // The test client connects from 127.0.0.1, standing for the load balancer.
        settings.oauth.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    let shared = "203.0.113.66";
    let elsewhere = "198.51.100.20";
    let code = fixture.code("acme", REDIRECT, None, 600);
    let exchanged = fixture
        .post_from(
            "/token",
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", REDIRECT),
            ],
            Some(("acme", ACME_SECRET)),
            elsewhere,
        )
        .await;
    assert_eq!(exchanged.status, 200, "{}", exchanged.text());
    let refresh = exchanged.json()["refresh_token"]
        .as_str()
        .unwrap()
        .to_owned();
    for _ in 0..5 {
        let reply = fixture
            .refresh_from(&refresh, ("acme", "wrong-secret-value"), shared)
            .await;
        assert_eq!(reply.status, 400);
    }
    let throttled = fixture
        .refresh_from(&refresh, ("acme", "another-wrong-secret"), shared)
        .await;
    assert_eq!(throttled.status, 429, "{}", throttled.text());
    assert!(throttled.header("retry-after").is_some());
    // The right secret is never refused, from the guessing address or any other.
    for source in [shared, elsewhere] {
        let refreshed = fixture
            .refresh_from(&refresh, ("acme", ACME_SECRET), source)
            .await;
        assert_eq!(refreshed.status, 200, "{source}: {}", refreshed.text());
    }

    // Invented client ids count once per source: no counter per invented id.
    let sprayer = "203.0.113.77";
    for n in 0..5 {
        let reply = fixture
            .refresh_from("rt1.g.x", (&format!("invented-{n}"), "x"), sprayer)
            .await;
        assert_eq!(reply.status, 400);
    }
    assert_eq!(
        fixture
            .refresh_from("rt1.g.x", ("invented-9", "x"), sprayer)
            .await
            .status,
        429
    );
    let store = &fixture.app().store;
    assert_eq!(
        store
            .current(
                &linkd::throttle::client_auth_source_key(sprayer),
                clock.now()
            )
            .await
            .unwrap(),
        5
    );
    for n in 0..5 {
        let key = linkd::throttle::client_source_key(&format!("invented-{n}"), sprayer);
        assert_eq!(store.current(&key, clock.now()).await.unwrap(), 0, "{key}");
    }

    // The window is measured by linkd's clock: moving it ends the window, nothing sleeps.
    clock.advance(59);
    assert_eq!(
        fixture
            .refresh_from(&refresh, ("acme", "wrong-secret-value"), shared)
            .await
            .status,
        429,
        "the window is not over yet"
    );
    clock.advance(1);
    assert_eq!(
        fixture
            .refresh_from(&refresh, ("acme", "wrong-secret-value"), shared)
            .await
            .status,
        400,
        "the block lapses with the window"
    );
}

/// Redis answers the code redemption only after linkd gave up on it (the command lands
/// late): the 503 the platform got must not turn its retry into `invalid_grant`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redemption_that_lands_after_its_timeout_can_be_retried() {
    let redis = redis_server::RedisServer::start();
    let url = redis.url();
    let fixture = fixture(move |settings| {
        settings.store = url;
        settings.store_timeouts = linkd::store::StoreTimeouts {
            connect: Duration::from_millis(200),
            response: Duration::from_millis(200),
        };
    })
    .await;
    let code = fixture.code("acme", REDIRECT, None, 600);
    // Warm the connection, so the paused command below is the redemption itself.
    assert_eq!(fixture.app().store.ping().await.ok(), Some(()));
    // Every write and script waits 1.5 s and then runs; reads go on.
    redis.cli(&["CLIENT", "PAUSE", "1500", "WRITE"]).unwrap();
    let slow = fixture.exchange(&code).await;
    assert_eq!(slow.status, 503, "{}", slow.text());
    assert!(slow.header("retry-after").is_some());
    let retried = fixture.exchange_until_not_503(&code).await;
    assert_eq!(retried.status, 200, "{}", retried.text());
    let refresh = retried.json()["refresh_token"].as_str().unwrap().to_owned();
    assert_eq!(
        fixture
            .refresh(&refresh, ("acme", ACME_SECRET))
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn redis_outage_gives_503_never_invalid_grant_and_recovers() {
    let mut redis = redis_server::RedisServer::start();
    let url = redis.url();
    let fixture = fixture(move |settings| {
        settings.store = url;
        settings.store_timeouts = linkd::store::StoreTimeouts {
            connect: Duration::from_millis(300),
            response: Duration::from_millis(300),
        };
    })
    .await;
    let tokens = fixture
        .exchange(&fixture.code("acme", REDIRECT, None, 600))
        .await
        .json();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let access = format!("Bearer {}", tokens["access_token"].as_str().unwrap());

    // Stopping Redis loses nothing the test needs later only if it persisted; it did not,
    // so the restart below comes back empty and the outage itself is what is checked.
    redis.stop();
    let refreshed = fixture.refresh(&refresh, ("acme", ACME_SECRET)).await;
    assert_eq!(refreshed.status, 503, "{}", refreshed.text());
    assert_eq!(refreshed.json()["error"], "temporarily_unavailable");
    assert!(refreshed.header("retry-after").is_some());
    let userinfo = fixture.userinfo(Some(&access)).await;
    assert_eq!(userinfo.status, 503);
    assert!(userinfo.header("www-authenticate").is_none());

    redis.restart();
    // The restarted Redis is empty: re-provision, then the endpoints work again.
    let app = fixture.app();
    let started = std::time::Instant::now();
    loop {
        if app.store.ping().await.is_ok() {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "no recovery");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    provision::acme(app, None, Some(ACME_SECRET), ClientSettings::default()).await;
    let again = fixture
        .exchange(&fixture.code("acme", REDIRECT, None, 600))
        .await;
    assert_eq!(again.status, 200, "{}", again.text());
}

/// Every metric family of `metrics` has `# HELP` and `# TYPE` lines.
fn assert_every_family_is_described(metrics: &str) {
    let described = |kind: &str, family: &str| {
        metrics
            .lines()
            .any(|line| line.starts_with(&format!("# {kind} {family} ")))
    };
    let mut families = 0;
    for line in metrics
        .lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
    {
        let name = line.split(['{', ' ']).next().unwrap();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|suffix| {
                name.strip_suffix(suffix)
                    .filter(|family| described("TYPE", family))
            })
            .unwrap_or(name);
        assert!(
            described("HELP", family),
            "no HELP for {family}:\n{metrics}"
        );
        assert!(
            described("TYPE", family),
            "no TYPE for {family}:\n{metrics}"
        );
        families += 1;
    }
    assert!(families > 10, "too few metrics: {metrics}");
}

async fn metrics_are_described_and_count_token_outcomes_and_replays(redis: bool) {
    let fixture = fixture_on(redis, |_| {}).await;
    let scrape = || async {
        https::get(fixture.server.address, &fixture.server.cert, "/metrics")
            .await
            .text()
    };
    let invalid_grant = "linkd_token_requests_total{grant_type=\"authorization_code\",result=\"invalid_grant\",error=\"invalid_grant\"}";
    let issued = "linkd_token_requests_total{grant_type=\"authorization_code\",result=\"issued\",error=\"none\"}";
    let before = scrape().await;

    let code = fixture.code("acme", REDIRECT, None, 600);
    let first = fixture.exchange(&code).await;
    assert_eq!(first.status, 200, "{}", first.text());
    let access = format!("Bearer {}", first.json()["access_token"].as_str().unwrap());
    assert_eq!(fixture.userinfo(Some(&access)).await.status, 200);
    assert_invalid_grant(&fixture.exchange(&code).await, "replay");

    let after = scrape().await;
    assert_every_family_is_described(&after);
    assert!(
        sample(&after, issued) >= sample(&before, issued) + 1.0,
        "{after}"
    );
    assert!(
        sample(&after, invalid_grant) >= sample(&before, invalid_grant) + 1.0,
        "{after}"
    );
    let replays = "linkd_code_replays_total";
    assert!(
        sample(&after, replays) >= sample(&before, replays) + 1.0,
        "{after}"
    );
    for series in [
        "linkd_store_call_duration_seconds_count{operation=\"begin_redemption\"}",
        "linkd_store_call_duration_seconds_count{operation=\"get_user\"}",
    ] {
        assert!(
            sample(&after, series) > sample(&before, series),
            "{series}: {after}"
        );
    }
    for gauge in [
        "linkd_signing_key_age_seconds",
        "linkd_tls_certificate_expiry_seconds",
        "linkd_store_up",
    ] {
        assert!(
            after.lines().any(|line| line.starts_with(gauge)),
            "{gauge}: {after}"
        );
    }
    assert!(sample(&after, "linkd_tls_certificate_expiry_seconds") > 0.0);
    assert!(
        after.contains(&format!(
            "linkd_build_info{{version=\"{}\"",
            env!("CARGO_PKG_VERSION")
        )),
        "{after}"
    );
    assert!(after.contains("process_"), "no process metrics: {after}");
}

on_both_stores!(
    metrics_are_described_and_count_token_outcomes_and_replays,
    code_exchange_with_body_or_basic_credentials,
    every_rejection_is_invalid_grant_and_issues_nothing,
    a_replayed_code_revokes_what_it_produced,
    concurrent_redemptions_of_one_code_yield_one_success,
    an_interrupted_redemption_can_be_retried,
    refresh_tokens_are_reusable_bound_to_their_client_and_scope_limited,
    clients_that_ask_get_rfc6749_error_codes,
    userinfo_refuses_every_bad_token_with_a_bearer_challenge,
    client_secret_brute_force_is_throttled_and_recovers
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_instance_serves_any_step_with_one_redis_and_one_keys_directory() {
    let redis = redis_server::RedisServer::start();
    let shared = tempfile::tempdir().unwrap();
    let keys_dir = shared.path().join("keys");
    let (url, keys) = (redis.url(), keys_dir.clone());
    let first = fixture(move |settings| {
        settings.store = url;
        settings.keys_dir = keys;
        settings.issuer = "https://linkd.test".to_owned();
    })
    .await;
    let mut settings = settings_in(shared.path());
    settings.store = redis.url();
    settings.keys_dir = keys_dir;
    settings.issuer = "https://linkd.test".to_owned();
    let second = Fixture {
        server: TestServer::start_with(settings).await,
        user_id: first.user_id.clone(),
        _redis: None,
    };
    assert_ne!(first.server.address, second.server.address);

    // A code made on the first instance is redeemed on the second; its access token works
    // on the first; a replay on the first is caught by the shared ledger and revokes the
    // grant on both.
    let code = first.code("acme", REDIRECT, None, 600);
    let tokens = second.exchange(&code).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text());
    let tokens = tokens.json();
    let access = format!("Bearer {}", tokens["access_token"].as_str().unwrap());
    assert_eq!(first.userinfo(Some(&access)).await.status, 200);
    assert_invalid_grant(&first.exchange(&code).await, "replay on another instance");
    assert_eq!(second.userinfo(Some(&access)).await.status, 401);
    assert_eq!(first.userinfo(Some(&access)).await.status, 401);
    drop(redis);
}
