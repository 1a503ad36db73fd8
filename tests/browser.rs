//! Account linking as a person does it: a real headless Chromium signs in, consents,
//! cancels, switches account and unlinks against a real linkd over TLS, on the embedded
//! store and on Redis; the platform's redirect endpoint is a local stand-in that records
//! what the browser brings back.

use std::sync::Arc;

use browser::{Browser, Platform, query_of};
use linkd::app::App;
use linkd::grants::CodeClaims;
use linkd::store::ClientSettings;

use crate::support::linkd::{TestServer, eventually};
use crate::support::{PASSWORD, browser, encode, flow, https, provision, redis_server};

/// A small inline logo, so pages render one without any network.
const LOGO: &str = "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 48 48'%3E%3Crect width='48' height='48' rx='10' fill='%23e8710a'/%3E%3Cpath d='M14 34 24 12l10 22h-5l-5-11-5 11z' fill='white'/%3E%3C/svg%3E";
const OTHER_PASSWORD: &str = "another long password";
/// 128 characters with every unreserved punctuation mark and bytes that must be
/// percent-encoded, as the conformance suite sends it.
const STATE: &str = "s-._~AZaz09%2F%3D%26%20é%E2%9C%93-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstu";

struct Setup {
    server: TestServer,
    platform: Platform,
    sandbox: Platform,
    client_secret: String,
    _redis: Option<redis_server::RedisServer>,
}

impl Setup {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    fn redirect_uri(&self) -> String {
        format!("{}/r/acme-project", self.platform.base())
    }

    fn authorize_url(&self, redirect_uri: &str, extra: &str) -> String {
        format!(
            "https://localhost:{}/authorize?client_id=acme&redirect_uri={}&state={STATE}&response_type=code&scope=email%20profile{extra}",
            self.server.address.port(),
            encode(redirect_uri),
        )
    }
}

fn decoded_state() -> String {
    serde_urlencoded::from_str::<Vec<(String, String)>>(&format!("state={STATE}"))
        .unwrap()
        .remove(0)
        .1
}

async fn setup(redis: bool) -> Setup {
    let platform = Platform::start().await;
    let sandbox = Platform::start().await;
    let bases = vec![platform.base(), sandbox.base()];
    let (server, redis) = TestServer::start_on_store(redis, move |settings| {
        settings.oauth.redirect_bases = bases;
    })
    .await;
    let app = server.server.app();
    let client_secret = provision::acme(
        app,
        Some("Acme Home"),
        None,
        ClientSettings {
            company_name: Some("Acme".to_owned()),
            privacy_policy_url: Some("https://acme.example/privacy".to_owned()),
            signup_url: Some("https://acme.example/signup".to_owned()),
            forgot_password_url: Some("https://acme.example/forgot".to_owned()),
            logo_url: Some(LOGO.to_owned()),
            ..ClientSettings::default()
        },
    )
    .await;
    for (email, password, name) in [
        ("ada@example.com", PASSWORD, "Ada Lovelace"),
        ("grace@example.com", OTHER_PASSWORD, "Grace Hopper"),
    ] {
        let profile = linkd::users::Profile {
            name: Some(name.to_owned()),
            ..linkd::users::Profile::default()
        };
        provision::user(app, email, password, profile).await;
    }
    Setup {
        server,
        platform,
        sandbox,
        client_secret,
        _redis: redis,
    }
}

fn verify_code(app: &App, code: &str) -> CodeClaims {
    provision::verify_code(app, code, Some("acme"))
}

async fn exchange(setup: &Setup, code: &str, redirect_uri: &str) -> https::Reply {
    flow::redeem(
        &setup.server.target(),
        code,
        redirect_uri,
        &setup.client_secret,
    )
    .await
}

async fn full_link(redis: bool) {
    let setup = setup(redis).await;
    let browser = Browser::start().await;
    let redirect_uri = setup.redirect_uri();
    browser
        .goto(&setup.authorize_url(&redirect_uri, "&user_locale=en-US"))
        .await;
    let signin = browser.text().await;
    assert!(signin.contains("Sign in to Acme"), "{signin}");
    assert!(
        signin.contains("link your Acme account to Google"),
        "{signin}"
    );

    // A wrong password shows one generic message and stays on the page.
    browser.sign_in("ada@example.com", "wrong password!").await;
    let failed = browser.text().await;
    assert!(failed.contains("do not match an account"), "{failed}");
    assert!(setup.platform.received.lock().unwrap().is_empty());

    browser.sign_in("ada@example.com", PASSWORD).await;
    let consent = browser.text().await;
    for expected in [
        "Link your Acme account to Google",
        "you authorize Google to access and control your Acme devices",
        "ada@example.com",
        "Your email address",
        "Agree and link",
        "Cancel",
        "Privacy policy",
    ] {
        assert!(
            consent.contains(expected),
            "{expected:?} missing: {consent}"
        );
    }
    browser.click("button[value=agree]").await;

    let target = setup.platform.next_redirect().await;
    assert!(target.starts_with("/r/acme-project?"), "{target}");
    let query = query_of(&target);
    assert_eq!(
        query["state"],
        decoded_state(),
        "state must come back untouched"
    );
    let code = &query["code"];
    let claims = verify_code(setup.app(), code);
    assert_eq!(claims.aud, "acme");
    assert_eq!(claims.scope, "email profile");

    let tokens = exchange(&setup, code, &redirect_uri).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text());
    let access_token = tokens.json()["access_token"].as_str().unwrap().to_owned();
    let userinfo = flow::userinfo(&setup.server.target(), &access_token).await;
    assert_eq!(userinfo.status, 200, "{}", userinfo.text());
    assert_eq!(userinfo.json()["email"], "ada@example.com");

    // Consent is remembered: a second linking goes straight back with a new code.
    browser.goto(&setup.authorize_url(&redirect_uri, "")).await;
    let again = query_of(&setup.platform.next_redirect().await);
    assert_ne!(&again["code"], code);
    assert_eq!(again["state"], decoded_state());

    // The account page lists the link; Unlink revokes it, and the device graph forgets the
    // user's devices.
    let device = serde_json::json!({"id": "lamp", "type": "action.devices.types.LIGHT",
        "traits": ["action.devices.traits.OnOff"], "name": {"name": "Lamp"}});
    setup
        .app()
        .store
        .put_devices("acme-project", &claims.sub, &[device])
        .await
        .unwrap();
    browser
        .goto(&format!(
            "https://localhost:{}/account",
            setup.server.address.port()
        ))
        .await;
    let account = browser.text().await;
    assert!(account.contains("Acme Home"), "{account}");
    browser.click(".links button").await;
    assert!(
        browser.text().await.contains("Unlink Acme Home?"),
        "Unlink asks first"
    );
    let still = flow::userinfo(&setup.server.target(), &access_token).await;
    assert_eq!(still.status, 200, "asking must not unlink");
    browser.click("button[value=unlink]").await;
    let after = browser.text().await;
    assert!(after.contains("Nothing is linked"), "{after}");
    let refused = flow::userinfo(&setup.server.target(), &access_token).await;
    assert_eq!(
        refused.status, 401,
        "an unlinked grant's token must stop working"
    );
    eventually(
        std::time::Duration::from_secs(10),
        "the device graph forgets an unlinked user",
        || async {
            let devices = setup
                .app()
                .store
                .get_devices("acme-project", &claims.sub)
                .await
                .unwrap();
            let pending = setup.app().store.pending_unlink_events(10).await.unwrap();
            (devices.is_none() && pending.is_empty()).then_some(())
        },
    )
    .await;
    browser.close().await;
}

async fn sandbox_cancel_and_switch(redis: bool) {
    let setup = setup(redis).await;
    let browser = Browser::start().await;
    let sandbox_uri = format!("{}/r/acme-project", setup.sandbox.base());
    browser.goto(&setup.authorize_url(&sandbox_uri, "")).await;
    browser.sign_in("ada@example.com", PASSWORD).await;
    assert!(browser.text().await.contains("ada@example.com"));

    // Not you? Switch account, sign in as someone else.
    browser.click("button[value=switch]").await;
    assert!(
        browser.has("#password").await,
        "switching must show the sign-in page"
    );
    browser.sign_in("grace@example.com", OTHER_PASSWORD).await;
    let consent = browser.text().await;
    assert!(consent.contains("grace@example.com"), "{consent}");

    // Cancel goes back with access_denied and the state, and no code.
    browser.click("button[value=cancel]").await;
    let query = query_of(&setup.sandbox.next_redirect().await);
    assert_eq!(query["error"], "access_denied");
    assert_eq!(query["state"], decoded_state());
    assert!(!query.contains_key("code"));

    // Agreeing on the sandbox redirect works too.
    browser.goto(&setup.authorize_url(&sandbox_uri, "")).await;
    browser.click("button[value=agree]").await;
    let linked = query_of(&setup.sandbox.next_redirect().await);
    let claims = verify_code(setup.app(), &linked["code"]);
    let grace = setup
        .app()
        .store
        .get_user_by_email("grace@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claims.sub, grace.id);
    browser.close().await;
}

/// Signs in with `browser` on a fresh authorization request and agrees, so that the
/// user's consent is remembered; returns the code the platform received.
async fn link_once(setup: &Setup, browser: &Browser, email: &str, password: &str) -> String {
    let redirect_uri = setup.redirect_uri();
    browser.goto(&setup.authorize_url(&redirect_uri, "")).await;
    browser.sign_in(email, password).await;
    browser.click("button[value=agree]").await;
    query_of(&setup.platform.next_redirect().await)["code"].clone()
}

/// A returning user (consent remembered) without a linkd session — a new phone, an expired
/// session — signs in and goes straight back to the platform: the sign-in POST answers 303
/// to `/authorize`, which answers 302 to the platform, and Chromium checks that whole
/// redirect chain against the sign-in page's CSP `form-action`.
async fn returning_user_links_again(redis: bool) {
    let setup = setup(redis).await;
    let first = Browser::start().await;
    let first_code = link_once(&setup, &first, "ada@example.com", PASSWORD).await;
    first.close().await;

    let fresh = Browser::start().await;
    let redirect_uri = setup.redirect_uri();
    fresh.goto(&setup.authorize_url(&redirect_uri, "")).await;
    assert!(
        fresh.has("#password").await,
        "a fresh profile has no session"
    );
    fresh.sign_in("ada@example.com", PASSWORD).await;
    let again = query_of(&setup.platform.next_redirect().await);
    assert_eq!(again["state"], decoded_state());
    assert_ne!(again["code"], first_code);
    let tokens = exchange(&setup, &again["code"], &redirect_uri).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text());

    // Switch account on the consent page of another user, then sign in as the returning
    // user: the same chain, started from the sign-in page that Switch account shows.
    let switching = Browser::start().await;
    switching
        .goto(&setup.authorize_url(&redirect_uri, ""))
        .await;
    switching.sign_in("grace@example.com", OTHER_PASSWORD).await;
    assert!(switching.text().await.contains("grace@example.com"));
    switching.click("button[value=switch]").await;
    switching.sign_in("ada@example.com", PASSWORD).await;
    let switched = query_of(&setup.platform.next_redirect().await);
    let claims = verify_code(setup.app(), &switched["code"]);
    let ada = setup
        .app()
        .store
        .get_user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claims.sub, ada.id);
    fresh.close().await;
    switching.close().await;
}

async fn unregistered_redirect_is_never_followed(redis: bool) {
    let setup = setup(redis).await;
    let browser = Browser::start().await;
    let evil = format!("{}/r/acme-project/", setup.platform.base());
    browser.goto(&setup.authorize_url(&evil, "")).await;
    let page = browser.text().await;
    assert!(page.contains("not registered"), "{page}");
    assert!(browser.current_url().await.starts_with(&format!(
        "https://localhost:{}/authorize",
        setup.server.address.port()
    )));
    assert!(setup.platform.received.lock().unwrap().is_empty());
    browser.close().await;
}

on_both_stores!(
    full_link,
    sandbox_cancel_and_switch,
    unregistered_redirect_is_never_followed,
    returning_user_links_again
);

/// Writes screenshots of the real pages to `$LINKD_SCREENSHOTS_DIR` (see
/// `scripts/screenshots`); ignored in the normal run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes documentation screenshots; run by scripts/screenshots"]
async fn screenshots() {
    let directory = std::path::PathBuf::from(
        std::env::var("LINKD_SCREENSHOTS_DIR").expect("LINKD_SCREENSHOTS_DIR"),
    );
    std::fs::create_dir_all(&directory).unwrap();
    let setup = setup(false).await;
    let browser = Browser::start().await;
    let redirect_uri = setup.redirect_uri();
    let port = setup.server.address.port();

    browser.goto(&setup.authorize_url(&redirect_uri, "")).await;
    browser.screenshot(&directory.join("signin.png")).await;
    browser.sign_in("ada@example.com", "not the password").await;
    browser
        .screenshot(&directory.join("signin-failed.png"))
        .await;
    browser.sign_in("ada@example.com", PASSWORD).await;
    browser.screenshot(&directory.join("consent.png")).await;
    browser.client.set_window_size(390, 844).await.unwrap();
    browser
        .screenshot(&directory.join("consent-phone.png"))
        .await;
    browser.client.set_window_size(1200, 1000).await.unwrap();

    let evil = "https://evil.example/callback";
    browser.goto(&setup.authorize_url(evil, "")).await;
    browser.screenshot(&directory.join("error.png")).await;

    let ada = setup
        .app()
        .store
        .get_user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    setup
        .app()
        .store
        .put_link(&linkd::store::LinkRecord {
            grant_id: "b0c3f0a2-1d5e-4e1b-9a59-9c1a2f6d7e01".to_owned(),
            user_id: ada.id,
            client_id: "acme".to_owned(),
            scope: "email profile".to_owned(),
            created_at: 1_795_000_000,
        })
        .await
        .unwrap();
    browser
        .goto(&format!("https://localhost:{port}/account"))
        .await;
    browser.screenshot(&directory.join("account.png")).await;
    browser.close().await;

    // The pages on a phone (390 px wide) in English and two other languages, one of them
    // in a CJK script.
    for tag in ["en", "de", "ja"] {
        let phone = Browser::start().await;
        phone.client.set_window_size(390, 844).await.unwrap();
        let shot = |page: &str| directory.join(format!("phone-{tag}-{page}.png"));
        phone
            .goto(&setup.authorize_url(&redirect_uri, &format!("&user_locale={tag}")))
            .await;
        phone.screenshot(&shot("signin")).await;
        phone.sign_in("ada@example.com", PASSWORD).await;
        phone.screenshot(&shot("consent")).await;
        phone
            .goto(&format!(
                "https://localhost:{port}/account?user_locale={tag}"
            ))
            .await;
        phone.screenshot(&shot("account")).await;
        phone.click(".links button").await;
        phone.screenshot(&shot("unlink")).await;
        phone.close().await;
    }
}
