//! Linking through the integrator's own OpenID Connect provider, end to end: node-oidc-provider
//! (tests/support/oidc_provider.rs) registered with `linkd identity-providers add`, an
//! integration switched to it with `linkd clients update --identity-provider`, and Chromium
//! signing in at the provider, agreeing on linkd's consent page and coming back to the
//! platform with a code that redeems. Then the returning user, the person cancelling at the
//! provider, and a provider that fails when the browser returns.

use std::sync::{Arc, Mutex};

use crate::support::browser::{Browser, Platform, agree_and_fetch_userinfo, query_of};
use crate::support::linkd::TestServer;
use crate::support::oidc_provider::{Fault, OidcProvider, ProviderOptions, TestClient};
use crate::support::{cli, encode, flow, provision};

const STATE: &str = "state-from-the-platform";

fn authorize_url(issuer: &str, redirect_uri: &str, user_locale: &str) -> String {
    format!(
        "{issuer}/authorize?client_id=acme&redirect_uri={}&state={STATE}&response_type=code&scope=openid%20email%20profile&user_locale={user_locale}",
        encode(redirect_uri)
    )
}

async fn links_through_an_openid_provider(redis: bool) {
    let platform = Platform::start().await;
    let mut provider = OidcProvider::start(ProviderOptions::new(Vec::new())).await;
    let store_location = Arc::new(Mutex::new(String::new()));
    let (server, _redis) = {
        let store_location = Arc::clone(&store_location);
        let roots = provider.ca_roots();
        let base = platform.base();
        TestServer::start_on_store(redis, move |settings| {
            settings.oauth.redirect_bases = vec![base];
            settings.outbound_roots = roots;
            *store_location.lock().unwrap() = settings.store.clone();
        })
        .await
    };
    let store = store_location.lock().unwrap().clone();
    let app = Arc::clone(server.server.app());
    let secret = provision::acme(
        &app,
        Some("Acme Home"),
        None,
        linkd::store::ClientSettings {
            company_name: Some("Acme".to_owned()),
            ..Default::default()
        },
    )
    .await;

    // The operator registers the provider; linkd prints the callback URL the provider needs.
    let callback = format!("{}/signin/corp/callback", app.issuer);
    let client = TestClient::new(&callback);
    let added = cli::run_ok(
        &store,
        &[
            "identity-providers",
            "add",
            "--id",
            "corp",
            "--issuer",
            &provider.issuer,
            "--client-id",
            &client.id,
            "--client-secret-stdin",
            "--name",
            "Corp account",
            "--linkd-issuer",
            &app.issuer,
        ],
        Some(&format!("{}\n", client.secret)),
    );
    assert!(
        added.contains(&format!("redirect_uri: {callback}")),
        "{added}"
    );
    assert!(!added.contains(&client.secret), "{added}");
    provider.register(client.clone()).await;
    cli::run_ok(
        &store,
        &[
            "clients",
            "update",
            "acme",
            "--identity-provider",
            "corp",
            "--keep-password-sign-in",
        ],
        None,
    );
    let shown = cli::run_ok(&store, &["identity-providers", "show", "corp"], None);
    assert!(!shown.contains(&client.secret), "{shown}");

    let redirect_uri = format!("{}/r/acme-project", platform.base());
    let browser = Browser::start().await;
    // The integration's page offers the provider (in the platform's language) beside the
    // password form it keeps.
    let german = authorize_url(&app.issuer, &redirect_uri, "de-AT");
    let browser_ref = &browser;
    crate::support::linkd::eventually(
        std::time::Duration::from_secs(5),
        "the sign-in page offers the provider",
        || {
            let german = german.clone();
            async move {
                browser_ref.goto(&german).await;
                browser_ref
                    .text()
                    .await
                    .contains("Weiter mit Corp account")
                    .then_some(())
            }
        },
    )
    .await;
    assert!(browser.has("#password").await, "the password form is kept");
    browser.click("a.continue").await;
    provider.sign_in(&browser, "ada").await;
    let consent = browser.text().await;
    // The email reached linkd through the provider's userinfo (its id_token has none).
    assert!(consent.contains("ada@example.com"), "{consent}");
    assert!(consent.contains("Zustimmen und verknüpfen"), "{consent}");
    let claims = agree_and_fetch_userinfo(
        &browser,
        &platform,
        &server.target(),
        &redirect_uri,
        &secret,
        STATE,
    )
    .await;
    assert_eq!(claims["email"], "ada@example.com", "{claims}");
    assert_eq!(claims["name"], "Ada Example", "{claims}");
    let first_user = claims["sub"].as_str().unwrap().to_owned();
    browser.close().await;

    // The returning user, in a new browser: the same linkd user, consent remembered.
    let browser = Browser::start().await;
    browser
        .goto(&authorize_url(&app.issuer, &redirect_uri, "en"))
        .await;
    browser.click("a.continue").await;
    provider.sign_in(&browser, "ada").await;
    let query = query_of(&platform.next_redirect().await);
    let tokens = flow::redeem(&server.target(), &query["code"], &redirect_uri, &secret).await;
    let access = tokens.json()["access_token"].as_str().unwrap().to_owned();
    let claims = flow::userinfo(&server.target(), &access).await.json();
    assert_eq!(claims["sub"], first_user.as_str());
    assert_eq!(app.store.list_users().await.unwrap().len(), 1);
    browser.close().await;

    // The person cancels at the provider's login page: the platform hears access_denied
    // with its state, as when cancelling on linkd's own page.
    let browser = Browser::start().await;
    browser
        .goto(&authorize_url(&app.issuer, &redirect_uri, "en"))
        .await;
    browser.click("a.continue").await;
    browser.click("a[href*='/abort']").await;
    let query = query_of(&platform.next_redirect().await);
    assert_eq!(query["error"], "access_denied", "{query:?}");
    assert_eq!(query["state"], STATE);
    assert!(!query.contains_key("code"));
    browser.close().await;

    // The provider's token endpoint fails while the browser comes back: a 503 page, never
    // a redirect to the platform (it would take it for a failed link).
    provider.fail("/token", Fault::Status(503));
    let browser = Browser::start().await;
    browser
        .goto(&authorize_url(&app.issuer, &redirect_uri, "en"))
        .await;
    browser.click("a.continue").await;
    provider.sign_in(&browser, "ada").await;
    let page = browser.text().await;
    assert!(
        page.contains("Corp account is not answering right now"),
        "{page}"
    );
    assert!(browser.current_url().await.starts_with(&callback));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        !platform
            .received
            .lock()
            .unwrap()
            .iter()
            .any(|target| target.starts_with("/r/")),
        "the platform heard of the failure"
    );
    provider.clear_faults();
    // After the outage the same browser links again.
    browser
        .goto(&authorize_url(&app.issuer, &redirect_uri, "en"))
        .await;
    browser.click("a.continue").await;
    provider.sign_in(&browser, "ada").await;
    let query = query_of(&platform.next_redirect().await);
    assert!(query.contains_key("code"), "{query:?}");
    browser.close().await;

    // An answer that names another issuer (RFC 9207: a mix-up, the code being another
    // provider's): a page, and the platform hears nothing.
    let authorize = authorize_url(&app.issuer, &redirect_uri, "en");
    let request = authorize.split_once('?').unwrap().1;
    let heard_before = platform.received.lock().unwrap().len();
    // The code is never sent to the provider: its token endpoint fails now, which would make
    // the answer a 503 had linkd called it.
    provider.fail("/token", Fault::Status(503));
    for iss in ["&iss=https%3A%2F%2Fmallory.example", ""] {
        let started = flow::get(
            &server.target(),
            &format!("/signin/corp/start?request={}", encode(request)),
            &[],
        )
        .await;
        assert_eq!(started.status, 302, "{}", started.text());
        let state = query_of(&started.header("location").unwrap())["state"].clone();
        let cookie = format!(
            "__Host-linkd-upstream={}",
            flow::set_cookie(&started, "__Host-linkd-upstream").unwrap()
        );
        // The provider always names itself (its discovery says so): an answer without iss
        // is refused as well.
        let reply = flow::get(
            &server.target(),
            &format!("/signin/corp/callback?code=stolen-code&state={state}{iss}"),
            &[("cookie", &cookie)],
        )
        .await;
        assert_eq!(reply.status, 400, "{iss}: {}", reply.text());
        assert!(reply.header("location").is_none());
    }
    assert_eq!(platform.received.lock().unwrap().len(), heard_before);
    provider.clear_faults();
}

on_both_stores!(links_through_an_openid_provider);
