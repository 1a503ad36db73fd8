//! Sign-in through the integrator's own accounts: a login hand-off to a small web app of the
//! integrator started by the test (end to end in Chromium, and every refusal over plain
//! HTTPS), an OpenID provider that does not answer, and `linkd identity-providers` at the
//! command line.

use std::sync::Arc;

use browser::{Browser, Platform, agree_and_fetch_userinfo, query_of};
use linkd::app::App;
use linkd::config::load::ServeSettings;
use linkd::store::{ClientSettings, IdentityProviderKind, IdentityProviderRecord};

use crate::support::handoff::{self, HandoffApp, IntegratorKey, Person};
use crate::support::linkd::TestServer;
use crate::support::{REDIRECT, browser, cli, encode, flow, https, provision, redis_server};

const PROVIDER: &str = "acme-accounts";
const STATE: &str = "platform-state-42";

fn ada() -> Person {
    Person {
        sub: "acme-user-1".to_owned(),
        email: "Ada@Example.com".to_owned(),
        name: "Ada Lovelace".to_owned(),
        cancel: false,
    }
}

async fn add_handoff(app: &App, login_url: &str, public_pem: &str) {
    app.store
        .insert_identity_provider(&IdentityProviderRecord {
            id: PROVIDER.to_owned(),
            name: "Acme account".to_owned(),
            kind: IdentityProviderKind::Handoff {
                login_url: login_url.to_owned(),
                public_key_pem: Some(public_pem.to_owned()),
                jwks_url: None,
            },
            created_at: app.clock.now(),
        })
        .await
        .unwrap();
}

fn acme_settings(provider: &str) -> ClientSettings {
    ClientSettings {
        company_name: Some("Acme".to_owned()),
        identity_provider: Some(provider.to_owned()),
        password_sign_in: false,
        ..ClientSettings::default()
    }
}

struct Setup {
    server: TestServer,
    key: Arc<IntegratorKey>,
    handoff: HandoffApp,
    secret: String,
    _redis: Option<redis_server::RedisServer>,
}

impl Setup {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }
}

async fn setup(redis: bool, bases: Vec<String>) -> Setup {
    setup_adjusted(redis, move |settings| {
        if !bases.is_empty() {
            settings.oauth.redirect_bases = bases;
        }
    })
    .await
}

async fn setup_adjusted(redis: bool, adjust: impl FnOnce(&mut ServeSettings)) -> Setup {
    let (server, redis) = TestServer::start_on_store(redis, adjust).await;
    let app = Arc::clone(server.server.app());
    let key = Arc::new(IntegratorKey::generate());
    let handoff =
        HandoffApp::start(Arc::clone(&key), PROVIDER, &app.issuer, &app.issuer, ada()).await;
    add_handoff(&app, &handoff.login_url(), &key.public_pem).await;
    let secret = provision::acme(&app, Some("Acme Home"), None, acme_settings(PROVIDER)).await;
    Setup {
        server,
        key,
        handoff,
        secret,
        _redis: redis,
    }
}

fn authorize_query(redirect_uri: &str) -> String {
    format!(
        "client_id=acme&redirect_uri={}&state={STATE}&response_type=code&scope=openid%20email%20profile",
        encode(redirect_uri)
    )
}

/// Links through the hand-off in Chromium: button, integrator's app, consent, code, tokens;
/// a second sign-in in another browser finds the same user with the name refreshed; a
/// replayed callback is refused.
async fn handoff_links_in_a_browser(redis: bool) {
    let platform = Platform::start().await;
    let setup = setup(redis, vec![platform.base()]).await;
    let redirect_uri = format!("{}/r/acme-project", platform.base());
    let authorize = format!(
        "{}/authorize?{}",
        setup.app().issuer,
        authorize_query(&redirect_uri)
    );

    let browser = Browser::start().await;
    browser.goto(&authorize).await;
    let page = browser.text().await;
    assert!(page.contains("Continue with Acme account"), "{page}");
    assert!(
        !browser.has("#password").await,
        "the password form is off for acme"
    );
    browser.click("a.continue").await;
    let consent = browser.text().await;
    assert!(consent.contains("Agree and link"), "{consent}");
    assert!(consent.contains("ada@example.com"), "{consent}");
    let claims = agree_and_fetch_userinfo(
        &browser,
        &platform,
        &setup.server.target(),
        &redirect_uri,
        &setup.secret,
        STATE,
    )
    .await;
    assert_eq!(claims["email"], "ada@example.com");
    assert_eq!(claims["name"], "Ada Lovelace");
    let user_id = claims["sub"].as_str().unwrap().to_owned();

    // The callback URL again, as if replayed: the challenge was used.
    let used = setup.handoff.sent.lock().unwrap().last().unwrap().clone();
    browser.goto(&used).await;
    let replayed = browser.text().await;
    assert!(
        replayed.contains("has expired or was started in another browser"),
        "{replayed}"
    );
    browser.close().await;

    // A second sign-in, in another browser, after the name changed at the integrator.
    setup.handoff.person.lock().unwrap().name = "Ada King".to_owned();
    let browser = Browser::start().await;
    browser.goto(&authorize).await;
    browser.click("a.continue").await;
    // Consent is remembered: straight back to the platform.
    let target = platform.next_redirect().await;
    let code = query_of(&target)["code"].clone();
    browser.close().await;
    let tokens = flow::redeem(&setup.server.target(), &code, &redirect_uri, &setup.secret).await;
    let access = tokens.json()["access_token"].as_str().unwrap().to_owned();
    let claims = flow::userinfo(&setup.server.target(), &access).await.json();
    assert_eq!(claims["sub"], user_id.as_str());
    assert_eq!(claims["name"], "Ada King");
    let users = setup.app().store.list_users().await.unwrap();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(
        users[0].password_hash, "",
        "a user of the provider has no password"
    );
}

/// Starts a sign-in over HTTPS: the binding cookie and the challenge sent to the integrator.
async fn start(setup: &Setup, request: &str) -> (String, String) {
    let reply = flow::get(
        &setup.server.target(),
        &format!("/signin/{PROVIDER}/start?request={}", encode(request)),
        &[],
    )
    .await;
    assert_eq!(reply.status, 302, "{}", reply.text());
    let location = reply.header("location").unwrap();
    assert!(
        location.starts_with(&setup.handoff.login_url()),
        "{location}"
    );
    let challenge = query_of(&location)["login_challenge"].clone();
    let binding = flow::set_cookie(&reply, "__Host-linkd-upstream").unwrap();
    let cookie = format!("__Host-linkd-upstream={binding}");
    assert!(reply.headers.get_all("set-cookie").iter().any(|value| {
        let value = value.to_str().unwrap();
        value.contains("HttpOnly") && value.contains("Secure") && value.contains("SameSite=Lax")
    }));
    (cookie, challenge)
}

async fn callback(setup: &Setup, query: &str, cookie: Option<&str>) -> https::Reply {
    let headers: Vec<(&str, &str)> = cookie
        .map(|cookie| ("cookie", cookie))
        .into_iter()
        .collect();
    flow::get(
        &setup.server.target(),
        &format!("/signin/{PROVIDER}/callback?{query}"),
        &headers,
    )
    .await
}

/// Every bad assertion is refused with a clear page and creates no user; a callback
/// without the browser's cookie is refused; a cancel goes back to the platform as
/// `access_denied` with the platform's state; two concurrent callbacks: one wins.
async fn handoff_refusals(redis: bool) {
    let setup = setup(redis, Vec::new()).await;
    let app = Arc::clone(setup.app());
    let request = authorize_query(REDIRECT);
    let now = app.clock.now();
    let other_key = IntegratorKey::generate();
    type Spoil = Box<dyn Fn(&mut serde_json::Value)>;
    let cases: Vec<(&str, Spoil)> = vec![
        (
            "expired",
            Box::new(move |c| {
                c["iat"] = (now - 400).into();
                c["exp"] = (now - 200).into();
            }),
        ),
        (
            "wrong aud",
            Box::new(|c| c["aud"] = "https://elsewhere.example".into()),
        ),
        ("wrong iss", Box::new(|c| c["iss"] = "someone-else".into())),
        (
            "wrong nonce",
            Box::new(|c| c["nonce"] = "not-the-challenge".into()),
        ),
        (
            "too long",
            Box::new(move |c| c["exp"] = (now + 3600).into()),
        ),
        (
            "no sub",
            Box::new(|c| {
                c.as_object_mut().unwrap().remove("sub");
            }),
        ),
    ];
    for (what, spoil) in cases {
        let (cookie, challenge) = start(&setup, &request).await;
        let mut claims = handoff::claims(PROVIDER, &app.issuer, &challenge, &ada(), now);
        spoil(&mut claims);
        let assertion = setup.key.sign(&claims);
        let reply = callback(
            &setup,
            &format!("login_challenge={challenge}&assertion={assertion}"),
            Some(&cookie),
        )
        .await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        assert!(
            reply
                .text()
                .contains("Signing in with Acme account did not work"),
            "{what}: {}",
            reply.text()
        );
        assert!(!reply.text().contains(&assertion), "{what}");
    }
    // Signed by another key; and alg none.
    let (cookie, challenge) = start(&setup, &request).await;
    let forged = other_key.sign(&handoff::claims(
        PROVIDER,
        &app.issuer,
        &challenge,
        &ada(),
        now,
    ));
    let reply = callback(
        &setup,
        &format!("login_challenge={challenge}&assertion={forged}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    let (cookie, challenge) = start(&setup, &request).await;
    let b64 = |value: &serde_json::Value| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value.to_string())
    };
    let unsigned = format!(
        "{}.{}.",
        b64(&serde_json::json!({"alg": "none", "typ": "JWT"})),
        b64(&handoff::claims(
            PROVIDER,
            &app.issuer,
            &challenge,
            &ada(),
            now
        ))
    );
    let reply = callback(
        &setup,
        &format!("login_challenge={challenge}&assertion={unsigned}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert!(
        app.store.list_users().await.unwrap().is_empty(),
        "no user was created"
    );

    // A good assertion without the cookie (another browser): refused, and not spent.
    let (cookie, challenge) = start(&setup, &request).await;
    let good = setup.key.sign(&handoff::claims(
        PROVIDER,
        &app.issuer,
        &challenge,
        &ada(),
        now,
    ));
    let query = format!("login_challenge={challenge}&assertion={good}");
    let reply = callback(&setup, &query, None).await;
    assert_eq!(reply.status, 400);
    assert!(
        reply.text().contains("started in another browser"),
        "{}",
        reply.text()
    );
    let reply = callback(&setup, &query, Some("__Host-linkd-upstream=someone-elses")).await;
    assert_eq!(reply.status, 400);

    // Two callbacks at once with the right cookie: exactly one signs in.
    let (first, second) = tokio::join!(
        callback(&setup, &query, Some(&cookie)),
        callback(&setup, &query, Some(&cookie))
    );
    let mut statuses = [first.status, second.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [303, 400], "{} / {}", first.text(), second.text());
    let winner = if first.status == 303 { &first } else { &second };
    assert!(flow::set_cookie(winner, "__Host-linkd-session").is_some());
    assert_eq!(
        winner.header("location").unwrap(),
        format!("/authorize?{request}")
    );
    assert_eq!(app.store.list_users().await.unwrap().len(), 1);

    // The person cancels at the integrator: the platform hears access_denied and its state.
    let (cookie, challenge) = start(&setup, &request).await;
    let reply = callback(
        &setup,
        &format!("login_challenge={challenge}&error=access_denied"),
        Some(&cookie),
    )
    .await;
    assert_eq!(reply.status, 302, "{}", reply.text());
    let location = reply.header("location").unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    let query = query_of(&location);
    assert_eq!(query["error"], "access_denied");
    assert_eq!(query["state"], STATE);

    // A second person whose email belongs to the first: refused, not taken over.
    let (cookie, challenge) = start(&setup, &request).await;
    let mallory = Person {
        sub: "acme-user-2".to_owned(),
        ..ada()
    };
    let assertion = setup.key.sign(&handoff::claims(
        PROVIDER,
        &app.issuer,
        &challenge,
        &mallory,
        now,
    ));
    let reply = callback(
        &setup,
        &format!("login_challenge={challenge}&assertion={assertion}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(reply.status, 409, "{}", reply.text());
    assert!(
        reply
            .text()
            .contains("Another account already uses the email address ada@example.com"),
        "{}",
        reply.text()
    );
    assert!(
        reply.text().contains("ask Acme for help"),
        "{}",
        reply.text()
    );

    // A new person whose provider says the email is not verified: refused, no user.
    let (cookie, challenge) = start(&setup, &request).await;
    let grace = Person {
        sub: "acme-user-3".to_owned(),
        email: "grace@example.com".to_owned(),
        ..ada()
    };
    let mut claims = handoff::claims(PROVIDER, &app.issuer, &challenge, &grace, now);
    claims["email_verified"] = false.into();
    let assertion = setup.key.sign(&claims);
    let reply = callback(
        &setup,
        &format!("login_challenge={challenge}&assertion={assertion}"),
        Some(&cookie),
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());
    assert_eq!(app.store.list_users().await.unwrap().len(), 1);

    // The account page's sign-in offers every provider, and a second provider whose key
    // comes from the integrator's JWKS signs Grace in there.
    app.store
        .insert_identity_provider(&IdentityProviderRecord {
            id: "acme-jwks".to_owned(),
            name: "Acme by JWKS".to_owned(),
            kind: IdentityProviderKind::Handoff {
                login_url: setup.handoff.login_url(),
                public_key_pem: None,
                jwks_url: Some(setup.handoff.jwks_url()),
            },
            created_at: now,
        })
        .await
        .unwrap();
    let page = flow::get(&setup.server.target(), "/account", &[]).await;
    for button in ["Continue with Acme account", "Continue with Acme by JWKS"] {
        assert!(page.text().contains(button), "{}", page.text());
    }
    let reply = account_sign_in(&setup, "acme-jwks", &setup.key, &grace).await;
    assert_eq!(reply.status, 303, "{}", reply.text());
    // The account page in the browser's language (no Accept-Language here: English).
    assert_eq!(reply.header("location").unwrap(), "/account?user_locale=en");
    let session = format!(
        "__Host-linkd-session={}",
        flow::set_cookie(&reply, "__Host-linkd-session").unwrap()
    );
    let account = flow::get(&setup.server.target(), "/account", &[("cookie", &session)]).await;
    assert_eq!(account.status, 200);
    assert!(
        account.text().contains("grace@example.com"),
        "{}",
        account.text()
    );

    // The start refuses a request of another integration's provider and a bad request.
    let reply = flow::get(
        &setup.server.target(),
        "/signin/unknown/start?account=1",
        &[],
    )
    .await;
    assert_eq!(reply.status, 404);
    let reply = flow::get(
        &setup.server.target(),
        &format!("/signin/{PROVIDER}/start?request=client_id%3Dnobody"),
        &[],
    )
    .await;
    assert_eq!(reply.status, 400);
    // Password sign-in is off for acme: no form on the page, and a crafted post is refused.
    let page = flow::get(
        &setup.server.target(),
        &format!("/authorize?{request}"),
        &[],
    )
    .await;
    assert!(
        !page.text().contains("type=\"password\""),
        "{}",
        page.text()
    );
    let csrf = flow::set_cookie(&page, "__Host-linkd-csrf").unwrap();
    let refused = flow::post_form(
        &setup.server.target(),
        "/authorize/signin",
        &[
            ("csrf", csrf.as_str()),
            ("request", request.as_str()),
            ("email", "ada@example.com"),
            ("password", "whatever password"),
        ],
        &format!("__Host-linkd-csrf={csrf}"),
    )
    .await;
    assert_eq!(refused.status, 400, "{}", refused.text());
    assert!(
        refused.text().contains("does not sign in with a password"),
        "{}",
        refused.text()
    );
}

/// An OpenID provider that does not answer: a 503 page, never a redirect to the platform.
async fn unreachable_oidc_provider_is_a_503_page(redis: bool) {
    let (server, _redis) = TestServer::start_on_store(redis, |_| {}).await;
    let app = server.server.app();
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    app.store
        .insert_identity_provider(&IdentityProviderRecord {
            id: "corp".to_owned(),
            name: "Corp SSO".to_owned(),
            kind: IdentityProviderKind::Oidc {
                issuer: format!("https://127.0.0.1:{port}"),
                client_id: "linkd".to_owned(),
                client_secret: "s3cret-s3cret-s3cret".to_owned(),
                scopes: vec!["openid".to_owned(), "email".to_owned()],
            },
            created_at: 0,
        })
        .await
        .unwrap();
    provision::acme(app, None, None, acme_settings("corp")).await;
    let request = authorize_query(REDIRECT);
    let page = flow::get(&server.target(), &format!("/authorize?{request}"), &[]).await;
    assert!(
        page.text().contains("Continue with Corp SSO"),
        "{}",
        page.text()
    );
    let reply = flow::get(
        &server.target(),
        &format!("/signin/corp/start?request={}", encode(&request)),
        &[],
    )
    .await;
    assert_eq!(reply.status, 503, "{}", reply.text());
    assert!(reply.header("location").is_none());
    assert!(
        reply.text().contains("Corp SSO is not answering right now"),
        "{}",
        reply.text()
    );
    assert!(!reply.text().contains("s3cret"));
}

/// The example backend of docs/handoff.md, run as the document says: its code block as a
/// file, `jose` from the pinned packages, the key in a PEM file; killed when dropped.
struct DocumentedBackend {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl DocumentedBackend {
    async fn start(linkd_issuer: &str, provider_id: &str, key: &IntegratorKey) -> Self {
        let document =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/handoff.md"))
                .unwrap();
        let code = document
            .split_once("```js\n")
            .and_then(|(_, rest)| rest.split_once("\n```"))
            .map(|(code, _)| code)
            .expect("docs/handoff.md has a ```js block");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("handoff-backend.mjs"), code).unwrap();
        std::fs::write(dir.path().join("handoff.key.pem"), &key.private_pem).unwrap();
        let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/node_modules");
        assert!(
            std::path::Path::new(modules).join("jose").exists(),
            "{modules}/jose is missing: run ./scripts/test, which installs tests/interop/"
        );
        std::os::unix::fs::symlink(modules, dir.path().join("node_modules")).unwrap();
        let port = redis_server::free_port();
        let mut child = std::process::Command::new("node")
            .arg("handoff-backend.mjs")
            .current_dir(dir.path())
            .env("LINKD_ISSUER", linkd_issuer)
            .env("PROVIDER_ID", provider_id)
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            if let Some(status) = child.try_wait().unwrap() {
                let mut stderr = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
                    .unwrap();
                panic!("the documented backend exited ({status}): {stderr}");
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the documented backend is not listening on {port}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Self {
            child,
            port,
            _dir: dir,
        }
    }

    fn login_url(&self) -> String {
        format!("http://127.0.0.1:{}/linkd-login", self.port)
    }
}

impl Drop for DocumentedBackend {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The example backend of docs/handoff.md links a platform account in Chromium, and its
/// cancel reaches the platform as `access_denied` with the platform's state.
#[tokio::test(flavor = "multi_thread")]
async fn the_documented_handoff_backend_links_in_a_browser() {
    let platform = Platform::start().await;
    let base = platform.base();
    let (server, _redis) = TestServer::start_on_store(false, move |settings| {
        settings.oauth.redirect_bases = vec![base];
    })
    .await;
    let app = Arc::clone(server.server.app());
    let key = IntegratorKey::generate();
    let backend = DocumentedBackend::start(&app.issuer, "acme-app", &key).await;
    app.store
        .insert_identity_provider(&IdentityProviderRecord {
            id: "acme-app".to_owned(),
            name: "Acme account".to_owned(),
            kind: IdentityProviderKind::Handoff {
                login_url: backend.login_url(),
                public_key_pem: Some(key.public_pem.clone()),
                jwks_url: None,
            },
            created_at: app.clock.now(),
        })
        .await
        .unwrap();
    let secret = provision::acme(&app, Some("Acme Home"), None, acme_settings("acme-app")).await;
    let redirect_uri = format!("{}/r/acme-project", platform.base());
    let request = authorize_query(&redirect_uri);

    let browser = Browser::start().await;
    browser
        .goto(&format!("{}/authorize?{request}", app.issuer))
        .await;
    browser.click("a.continue").await;
    let consent = browser.text().await;
    assert!(consent.contains("ada@acme.example"), "{consent}");
    let claims = agree_and_fetch_userinfo(
        &browser,
        &platform,
        &server.target(),
        &redirect_uri,
        &secret,
        STATE,
    )
    .await;
    assert_eq!(claims["email"], "ada@acme.example");
    assert_eq!(claims["name"], "Ada Lovelace");
    browser.close().await;

    // The person gives up on the backend's login page: its cancel link.
    let started = flow::get(
        &server.target(),
        &format!("/signin/acme-app/start?request={}", encode(&request)),
        &[],
    )
    .await;
    assert_eq!(started.status, 302, "{}", started.text());
    let login = started.header("location").unwrap();
    let cookie = format!(
        "__Host-linkd-upstream={}",
        flow::set_cookie(&started, "__Host-linkd-upstream").unwrap()
    );
    let path = login
        .strip_prefix(&format!("http://127.0.0.1:{}", backend.port))
        .unwrap();
    let cancelled = https::send_plain(
        ([127, 0, 0, 1], backend.port).into(),
        "GET",
        &format!("{path}&cancel=1"),
    )
    .await;
    assert_eq!(cancelled.status, 302);
    let back = cancelled.header("location").unwrap();
    let callback = back.strip_prefix(&app.issuer).unwrap();
    let reply = flow::get(&server.target(), callback, &[("cookie", &cookie)]).await;
    let denied = query_of(&reply.header("location").unwrap_or_default());
    assert_eq!(
        denied.get("error").map(String::as_str),
        Some("access_denied"),
        "{}",
        reply.text()
    );
    assert_eq!(denied["state"], STATE);

    // A request target no URL parser takes: the backend answers 400 and keeps running.
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", backend.port))
        .await
        .unwrap();
    tokio::io::AsyncWriteExt::write_all(
        &mut raw,
        b"GET //[ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await
    .unwrap();
    let mut answer = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut raw, &mut answer)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    let later = https::send_plain(([127, 0, 0, 1], backend.port).into(), "GET", "/").await;
    assert_eq!(later.status, 404);
}

/// Signs `person` in on the account page through hand-off provider `provider` with an
/// assertion signed by `key`: the callback's answer.
async fn account_sign_in(
    setup: &Setup,
    provider: &str,
    key: &IntegratorKey,
    person: &Person,
) -> https::Reply {
    let reply = flow::get(
        &setup.server.target(),
        &format!("/signin/{provider}/start?account=1"),
        &[],
    )
    .await;
    assert_eq!(reply.status, 302, "{}", reply.text());
    let challenge = query_of(&reply.header("location").unwrap())["login_challenge"].clone();
    let cookie = format!(
        "__Host-linkd-upstream={}",
        flow::set_cookie(&reply, "__Host-linkd-upstream").unwrap()
    );
    let app = setup.app();
    let assertion = key.sign(&handoff::claims(
        provider,
        &app.issuer,
        &challenge,
        person,
        app.clock.now(),
    ));
    flow::get(
        &setup.server.target(),
        &format!("/signin/{provider}/callback?login_challenge={challenge}&assertion={assertion}"),
        &[("cookie", &cookie)],
    )
    .await
}

/// A hand-off provider whose keys come from the integrator's JWKS: fetched once for many
/// sign-ins, still used while the JWKS is down, fetched again when the integrator rotates to
/// a new key; an assertion of a key the JWKS no longer (or never) held is refused.
#[tokio::test(flavor = "multi_thread")]
async fn handoff_jwks_is_cached_and_fetched_again_after_a_rotation() {
    // Refetching is not spaced out here, so that every unknown key costs exactly one fetch.
    let setup = setup_adjusted(false, |settings| {
        settings.jwks_refetch_interval = std::time::Duration::ZERO;
    })
    .await;
    let app = Arc::clone(setup.app());
    app.store
        .insert_identity_provider(&IdentityProviderRecord {
            id: "acme-jwks".to_owned(),
            name: "Acme by JWKS".to_owned(),
            kind: IdentityProviderKind::Handoff {
                login_url: setup.handoff.login_url(),
                public_key_pem: None,
                jwks_url: Some(setup.handoff.jwks_url()),
            },
            created_at: app.clock.now(),
        })
        .await
        .unwrap();
    // Each sign-in: the key that signs, the callback's status, the JWKS fetches so far.
    let expect = async |key: &IntegratorKey, status: u16, fetches: usize| {
        let reply = account_sign_in(&setup, "acme-jwks", key, &ada()).await;
        assert_eq!(reply.status, status, "{}", reply.text());
        assert_eq!(
            setup.handoff.jwks_fetch_count(),
            fetches,
            "after a {status}"
        );
    };
    let first_key = &setup.key;
    for _ in 0..3 {
        expect(first_key, 303, 1).await;
    }

    // The integrator's JWKS is down: the keys linkd holds still sign people in.
    *setup.handoff.published.lock().unwrap() = None;
    expect(first_key, 303, 1).await;

    // The integrator rotates to a new key: its first assertion makes linkd fetch the JWKS
    // again, and it is accepted.
    let second_key = IntegratorKey::generate_with_kid("handoff-2");
    *setup.handoff.published.lock().unwrap() = Some(vec![second_key.jwk.clone()]);
    expect(&second_key, 303, 2).await;
    expect(&second_key, 303, 2).await;

    // The retired key and a key the integrator never published: refused after one fetch each.
    expect(first_key, 400, 3).await;
    expect(&IntegratorKey::generate_with_kid("handoff-3"), 400, 4).await;
    // A forgery under the current key's kid: refused, and no fetch would help.
    expect(&IntegratorKey::generate_with_kid("handoff-2"), 400, 4).await;
    assert_eq!(app.store.list_users().await.unwrap().len(), 1);
}

on_both_stores!(
    handoff_links_in_a_browser,
    handoff_refusals,
    unreachable_oidc_provider_is_a_503_page
);

/// The provider `id` as the store at `store` holds it.
fn stored_provider(store: &std::path::Path, id: &str) -> IdentityProviderRecord {
    let location = store.to_str().unwrap().to_owned();
    let id = id.to_owned();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async move {
            linkd::store::open(&location, linkd::store::StoreTimeouts::default())
                .await
                .unwrap()
                .get_identity_provider(&id)
                .await
                .unwrap()
                .unwrap()
        })
}

/// `linkd identity-providers` and `clients update --identity-provider` at the command line.
#[test]
fn identity_provider_commands() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("linkd.db");
    let key = IntegratorKey::generate();
    let pem = dir.path().join("acme.pem");
    std::fs::write(&pem, &key.public_pem).unwrap();
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let private = dir.path().join("private.pem");
    std::fs::write(&private, &key.private_pem).unwrap();
    let pem_arg = pem.to_str().unwrap();
    let secret = "provider-client-secret-0123456789";

    let out = cli::run_ok(
        &store,
        &[
            "identity-providers",
            "add",
            "--id",
            "corp",
            "--issuer",
            "https://id.example.com",
            "--client-id",
            "linkd",
            "--client-secret-stdin",
            "--name",
            "Corp SSO",
            "--linkd-issuer",
            "https://link.example.com",
        ],
        Some(&format!("{secret}\n")),
    );
    assert!(
        out.contains("https://link.example.com/signin/corp/callback"),
        "{out}"
    );
    assert!(!out.contains(secret));
    let out = cli::run_ok(
        &store,
        &[
            "identity-providers",
            "add",
            "--id",
            "acme",
            "--kind",
            "handoff",
            "--login-url",
            "https://app.acme.example/linkd-login",
            "--public-key-file",
            pem_arg,
            "--name",
            "Acme account",
        ],
        None,
    );
    assert!(out.contains("/signin/acme/callback"), "{out}");

    for args in [
        vec!["identity-providers", "list"],
        vec!["identity-providers", "list", "--output", "json"],
        vec!["identity-providers", "show", "corp"],
        vec!["identity-providers", "show", "corp", "--output", "json"],
    ] {
        let out = cli::run_ok(&store, &args, None);
        assert!(!out.contains(secret), "{args:?}: {out}");
        assert!(out.contains("corp"), "{args:?}: {out}");
    }
    let shown = cli::run_json(
        &store,
        &["identity-providers", "show", "acme", "--output", "json"],
    );
    assert_eq!(shown["kind"], "handoff");
    assert_eq!(shown["name"], "Acme account");

    let refused = |args: &[&str], stdin: Option<&str>, flag: &str| {
        let output = cli::run(&store, args, stdin);
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
        assert!(
            !stderr.contains(secret) && !String::from_utf8_lossy(&output.stdout).contains(secret)
        );
    };
    let oidc = |id: &'static str, issuer: &'static str| -> Vec<&'static str> {
        vec![
            "identity-providers",
            "add",
            "--id",
            id,
            "--issuer",
            issuer,
            "--client-id",
            "linkd",
            "--client-secret-stdin",
        ]
    };
    refused(
        &oidc("Bad_Id", "https://id.example.com"),
        Some(secret),
        "--id",
    );
    refused(
        &oidc("none", "https://id.example.com"),
        Some(secret),
        "--id",
    );
    refused(
        &oidc("plain", "http://id.example.com"),
        Some(secret),
        "--issuer",
    );
    refused(
        &oidc("corp", "https://id.example.com"),
        Some(secret),
        "--id",
    );
    refused(
        &["identity-providers", "add", "--id", "x", "--kind", "ldap"],
        None,
        "--kind",
    );
    refused(
        &[
            "identity-providers",
            "add",
            "--id",
            "x",
            "--issuer",
            "https://id.example.com",
            "--client-id",
            "c",
        ],
        None,
        "--client-secret-stdin",
    );
    for file in [
        garbage.to_str().unwrap(),
        private.to_str().unwrap(),
        "/nonexistent/key.pem",
    ] {
        refused(
            &[
                "identity-providers",
                "add",
                "--id",
                "x",
                "--kind",
                "handoff",
                "--login-url",
                "https://a.example/login",
                "--public-key-file",
                file,
            ],
            None,
            "--public-key-file",
        );
    }
    refused(
        &[
            "identity-providers",
            "add",
            "--id",
            "x",
            "--kind",
            "handoff",
            "--login-url",
            "http://a.example/login",
            "--public-key-file",
            pem_arg,
        ],
        None,
        "--login-url",
    );
    refused(&["identity-providers", "show", "nobody"], None, "nobody");
    refused(&["identity-providers", "remove", "corp"], None, "--yes");

    // Updates: a rotated client secret, new scopes, a new name and key; never printed, and
    // a flag of the other kind, an unknown id or nothing to change is refused.
    let rotated_secret = "rotated-client-secret-9876543210";
    let out = cli::run_ok(
        &store,
        &[
            "identity-providers",
            "update",
            "corp",
            "--client-secret-stdin",
            "--scopes",
            "email",
        ],
        Some(&format!("{rotated_secret}\n")),
    );
    assert!(out.contains("updated identity provider corp"), "{out}");
    assert!(!out.contains(rotated_secret));
    let stored = stored_provider(&store, "corp");
    let linkd::store::IdentityProviderKind::Oidc {
        client_secret,
        scopes,
        issuer,
        ..
    } = &stored.kind
    else {
        panic!("{stored:?}")
    };
    assert_eq!(client_secret, rotated_secret);
    assert_eq!(scopes, &["openid", "email"]);
    assert_eq!(issuer, "https://id.example.com");
    assert_eq!(stored.name, "Corp SSO");
    cli::run_ok(
        &store,
        &[
            "identity-providers",
            "update",
            "acme",
            "--name",
            "Acme app",
            "--jwks-url",
            "https://app.acme.example/jwks.json",
        ],
        None,
    );
    let shown = cli::run_json(
        &store,
        &["identity-providers", "show", "acme", "--output", "json"],
    );
    assert_eq!(shown["name"], "Acme app");
    assert_eq!(shown["jwks_url"], "https://app.acme.example/jwks.json");
    assert_eq!(shown["public_key"], serde_json::Value::Null);
    assert_eq!(shown["login_url"], "https://app.acme.example/linkd-login");
    cli::run_ok(
        &store,
        &[
            "identity-providers",
            "update",
            "acme",
            "--public-key-file",
            pem_arg,
        ],
        None,
    );
    let stored = stored_provider(&store, "acme");
    assert!(
        matches!(&stored.kind, linkd::store::IdentityProviderKind::Handoff { public_key_pem: Some(pem), jwks_url: None, .. } if pem == &key.public_pem),
        "{stored:?}"
    );
    let private_arg = private.to_str().unwrap();
    fn update<'a>(rest: &[&'a str]) -> Vec<&'a str> {
        [&["identity-providers", "update"][..], rest].concat()
    }
    refused(&update(&["acme", "--client-id", "x"]), None, "--client-id");
    refused(
        &update(&["acme", "--client-secret-stdin"]),
        Some(secret),
        "--client-secret-stdin",
    );
    refused(
        &update(&["corp", "--login-url", "https://a.example/login"]),
        None,
        "--login-url",
    );
    refused(&update(&["corp"]), None, "nothing to change");
    refused(&update(&["nobody", "--name", "X"]), None, "nobody");
    refused(
        &update(&["corp", "--issuer", "https://other.example"]),
        None,
        "--issuer",
    );
    refused(
        &update(&["acme", "--public-key-file", private_arg]),
        None,
        "--public-key-file",
    );
    refused(
        &update(&["corp", "--client-secret-stdin"]),
        Some("\n"),
        "--client-secret-stdin",
    );
    assert_eq!(stored_provider(&store, "acme"), stored);
    let linkd::store::IdentityProviderKind::Oidc { client_secret, .. } =
        stored_provider(&store, "corp").kind
    else {
        panic!()
    };
    assert_eq!(client_secret, rotated_secret);
    let listed = cli::run_ok(
        &store,
        &["identity-providers", "list", "--output", "json"],
        None,
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&listed)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // An integration through a provider; the provider cannot go while it is used.
    cli::run_ok(
        &store,
        &[
            "clients",
            "add",
            "--id",
            "acme",
            "--project-id",
            "acme-project",
            "--secret-stdin",
        ],
        Some("a-client-secret-long-enough\n"),
    );
    refused(
        &["clients", "update", "acme", "--identity-provider", "nobody"],
        None,
        "--identity-provider",
    );
    cli::run_ok(
        &store,
        &[
            "clients",
            "update",
            "acme",
            "--identity-provider",
            "acme",
            "--keep-password-sign-in",
        ],
        None,
    );
    let client = cli::run_json(&store, &["clients", "show", "acme", "--output", "json"]);
    assert_eq!(client["identity_provider"], "acme");
    assert_eq!(client["password_sign_in"], true);
    refused(
        &["identity-providers", "remove", "acme", "--yes"],
        None,
        "clients update",
    );
    cli::run_ok(
        &store,
        &["clients", "update", "acme", "--identity-provider", "none"],
        None,
    );
    let client = cli::run_json(&store, &["clients", "show", "acme", "--output", "json"]);
    assert_eq!(client["identity_provider"], serde_json::Value::Null);
    cli::run_ok(
        &store,
        &["identity-providers", "remove", "acme", "--yes"],
        None,
    );
    refused(&["identity-providers", "show", "acme"], None, "acme");
}
