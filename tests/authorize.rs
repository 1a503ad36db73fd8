//! The authorization endpoint's rules over real HTTPS: what earns an error page and never a
//! redirect, what goes back by redirect with `state`, parameter hygiene, PKCE, headers, and
//! code expiry with an injected clock.

use std::sync::Arc;

use linkd::clock::{Clock as _, ManualClock};
use linkd::store::ClientSettings;

use crate::support::linkd::TestServer;
use crate::support::{PASSWORD, REDIRECT, encode, flow, https, provision};

const SANDBOX: &str = "https://oauth-redirect-sandbox.googleusercontent.com/r/acme-project";

async fn provision(server: &TestServer, pkce_required: bool) -> String {
    let app = server.server.app();
    let secret = provision::acme(app, None, None, ClientSettings::default()).await;
    let strict = ClientSettings {
        pkce_required,
        ..ClientSettings::default()
    };
    provision::client(app, "strict", "strict-project", None, Some(&secret), strict).await;
    provision::ada(app, linkd::users::Profile::default()).await;
    secret
}

fn query(client: &str, redirect: &str, extra: &str) -> String {
    format!(
        "client_id={client}&redirect_uri={}&state=xyz&response_type=code{extra}",
        encode(redirect)
    )
}

fn assert_error_page(reply: &https::Reply, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", reply.text());
    assert!(reply.header("location").is_none(), "{what} redirected");
    assert!(
        reply
            .header("content-type")
            .unwrap()
            .starts_with("text/html"),
        "{what}"
    );
}

#[tokio::test]
async fn untrusted_clients_and_redirects_get_an_error_page_never_a_redirect() {
    let server = TestServer::start(|_| {}).await;
    provision(&server, false).await;
    let variants = [
        format!("{REDIRECT}/"),
        REDIRECT.replace("https://", "HTTPS://"),
        REDIRECT.replace("oauth-redirect.", "OAUTH-REDIRECT."),
        REDIRECT.replace(".com/", ".com:443/"),
        format!("{REDIRECT}?x=1"),
        format!("{REDIRECT}#frag"),
        format!("{REDIRECT}/../x"),
        REDIRECT.replace("/r/", "%2Fr%2F"),
        REDIRECT.replace(".com/", ".com.evil.com/"),
        REDIRECT.replace("https://", "https://evil@"),
        format!("{REDIRECT}2"),
        "https://evil.example/cb".to_owned(),
    ];
    for variant in &variants {
        let reply = flow::get(
            &server.target(),
            &format!("/authorize?{}", query("acme", variant, "")),
            &[],
        )
        .await;
        assert_error_page(&reply, variant);
    }
    for (what, request) in [
        (
            "no client",
            format!(
                "redirect_uri={}&state=s&response_type=code",
                encode(REDIRECT)
            ),
        ),
        ("unknown client", query("nobody", REDIRECT, "")),
        (
            "no redirect",
            "client_id=acme&state=s&response_type=code".to_owned(),
        ),
        (
            "repeated redirect",
            format!(
                "{}&redirect_uri={}",
                query("acme", REDIRECT, ""),
                encode(SANDBOX)
            ),
        ),
        (
            "repeated client",
            format!("{}&client_id=strict", query("acme", REDIRECT, "")),
        ),
    ] {
        let reply = flow::get(&server.target(), &format!("/authorize?{request}"), &[]).await;
        assert_error_page(&reply, what);
    }
}

#[tokio::test]
async fn parameters_that_are_not_utf8_get_an_error_page() {
    let server = TestServer::start(|_| {}).await;
    provision(&server, false).await;
    let valid = flow::get(
        &server.target(),
        &format!("/authorize?{}", query("acme", REDIRECT, "")),
        &[],
    )
    .await;
    assert_eq!(valid.status, 200, "{}", valid.text());
    // Decoded leniently, each of these would be a valid request with U+FFFD in a parameter.
    for (what, extra) in [
        ("an invalid UTF-8 sequence", "&user_locale=%C3%28"),
        ("a lone 0xFF byte", "&user_locale=%FF"),
        ("a broken escape", "&user_locale=%ZZ"),
    ] {
        let request = query("acme", REDIRECT, extra);
        let reply = flow::get(&server.target(), &format!("/authorize?{request}"), &[]).await;
        assert_error_page(&reply, what);
        let reply = https::send(
            server.address,
            https::client_config(&server.cert, https::Offer::Both),
            https::request("POST", "/authorize")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(http_body_util::Full::new(bytes::Bytes::from(request)))
                .unwrap(),
        )
        .await;
        assert_error_page(&reply, &format!("{what}, posted"));
    }
    let mut raw = query("acme", REDIRECT, "&user_locale=").into_bytes();
    raw.push(0xFF);
    let reply = https::send(
        server.address,
        https::client_config(&server.cert, https::Offer::Both),
        https::request("POST", "/authorize")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(http_body_util::Full::new(bytes::Bytes::from(raw)))
            .unwrap(),
    )
    .await;
    assert_error_page(&reply, "a raw 0xFF byte in a posted form");
}

#[tokio::test]
async fn later_errors_go_back_by_redirect_with_the_state() {
    let server = TestServer::start(|_| {}).await;
    provision(&server, true).await;
    let cases = [
        (
            "no state",
            format!(
                "client_id=acme&redirect_uri={}&response_type=code",
                encode(REDIRECT)
            ),
            "invalid_request",
            None,
        ),
        (
            "token flow",
            query("acme", REDIRECT, "").replace("response_type=code", "response_type=token"),
            "unsupported_response_type",
            Some("xyz"),
        ),
        (
            "no response_type",
            query("acme", REDIRECT, "").replace("&response_type=code", ""),
            "invalid_request",
            Some("xyz"),
        ),
        (
            "unknown scope",
            query("acme", REDIRECT, "&scope=email%20admin"),
            "invalid_scope",
            Some("xyz"),
        ),
        (
            "repeated scope",
            query("acme", REDIRECT, "&scope=email&scope=profile"),
            "invalid_request",
            Some("xyz"),
        ),
        (
            "repeated state",
            query("acme", REDIRECT, "&state=other"),
            "invalid_request",
            None,
        ),
        (
            "plain PKCE",
            query(
                "acme",
                REDIRECT,
                "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=plain",
            ),
            "invalid_request",
            Some("xyz"),
        ),
        (
            "short challenge",
            query(
                "acme",
                REDIRECT,
                "&code_challenge=abc&code_challenge_method=S256",
            ),
            "invalid_request",
            Some("xyz"),
        ),
        (
            "PKCE required",
            query(
                "strict",
                &REDIRECT.replace("acme-project", "strict-project"),
                "",
            ),
            "invalid_request",
            Some("xyz"),
        ),
    ];
    for (what, request, error, state) in cases {
        let reply = flow::get(&server.target(), &format!("/authorize?{request}"), &[]).await;
        assert_eq!(reply.status, 302, "{what}: {}", reply.text());
        let location = reply.header("location").unwrap();
        assert!(
            location.starts_with(if what == "PKCE required" {
                "https://oauth-redirect.googleusercontent.com/r/strict-project?"
            } else {
                "https://oauth-redirect.googleusercontent.com/r/acme-project?"
            }),
            "{what}: {location}"
        );
        let returned = flow::redirect_query(&reply);
        assert_eq!(returned["error"], error, "{what}");
        assert_eq!(returned.get("state").map(String::as_str), state, "{what}");
        assert!(!returned.contains_key("code"), "{what}");
    }
}

#[tokio::test]
async fn a_valid_request_shows_the_sign_in_page_with_safe_headers() {
    let server = TestServer::start(|_| {}).await;
    provision(&server, false).await;
    for request in [
        query("acme", REDIRECT, "&extra=foobar&scope=&user_locale=de-DE"),
        query("acme", SANDBOX, ""),
        query(
            "acme",
            REDIRECT,
            "&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256",
        ),
    ] {
        let reply = flow::get(
            &server.target(),
            &format!("/authorize?{request}"),
            &[("origin", "https://evil.example")],
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert!(reply.text().contains("id=\"password\""));
        assert_eq!(reply.header("cache-control").as_deref(), Some("no-store"));
        assert_eq!(reply.header("x-frame-options").as_deref(), Some("DENY"));
        assert_eq!(
            reply.header("referrer-policy").as_deref(),
            Some("no-referrer")
        );
        let policy = reply.header("content-security-policy").unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(reply.header("access-control-allow-origin").is_none());
        let cookie = reply.header("set-cookie").unwrap();
        assert!(cookie.starts_with("__Host-linkd-csrf="), "{cookie}");
        assert!(
            cookie.contains("Secure") && cookie.contains("HttpOnly"),
            "{cookie}"
        );
    }
    // POST /authorize with a form body is the same request.
    let form: Vec<(String, String)> =
        serde_urlencoded::from_str(&query("acme", REDIRECT, "")).unwrap();
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let posted = flow::post_form(&server.target(), "/authorize", &form, "").await;
    assert_eq!(posted.status, 200);
}

#[tokio::test]
async fn forms_without_their_csrf_token_are_refused() {
    let server = TestServer::start(|_| {}).await;
    provision(&server, false).await;
    let refused = flow::post_form(
        &server.target(),
        "/authorize/signin",
        &[
            ("request", query("acme", REDIRECT, "").as_str()),
            ("email", "ada@example.com"),
            ("password", PASSWORD),
        ],
        "__Host-linkd-csrf=forged",
    )
    .await;
    assert_eq!(refused.status, 400);
    assert!(flow::set_cookie(&refused, "__Host-linkd-session").is_none());
}

#[tokio::test]
async fn codes_expire_by_the_injected_clock() {
    let clock = Arc::new(ManualClock::new(linkd::clock::SystemClock.now()));
    let server = TestServer::start_with_clock(Arc::clone(&clock), |settings| {
        settings.oauth.code_ttl_secs = 60;
    })
    .await;
    let secret = provision(&server, false).await;
    let request = query("acme", REDIRECT, "&state=the-state");
    let request = request.replacen("state=xyz&", "", 1);
    let agreed =
        flow::link_over_http(&server.target(), &request, "ada@example.com", PASSWORD).await;
    let returned = flow::redirect_query(&agreed);
    assert_eq!(returned["state"], "the-state");
    let code = returned["code"].clone();

    // Past the lifetime and the clock leeway: the code is refused without any sleep.
    clock.advance(60 + 61);
    let exchange = |code: String| {
        let secret = secret.clone();
        let server = &server;
        async move {
            flow::post_form(
                &server.target(),
                "/token",
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code.as_str()),
                    ("redirect_uri", REDIRECT),
                    ("client_id", "acme"),
                    ("client_secret", secret.as_str()),
                ],
                "",
            )
            .await
        }
    };
    let expired = exchange(code).await;
    assert_eq!(expired.status, 400, "{}", expired.text());
    assert_eq!(expired.json()["error"], "invalid_grant");

    // A fresh code at the moved clock is accepted.
    let again = flow::redirect_query(
        &flow::link_over_http(&server.target(), &request, "ada@example.com", PASSWORD).await,
    );
    let fresh = exchange(again["code"].clone()).await;
    assert_eq!(fresh.status, 200, "{}", fresh.text());
}

/// A wrong sign-in for a new account each time, from the client `forwarded_for` claims.
async fn failed_sign_in_from(server: &TestServer, attempt: usize, forwarded_for: &str) -> u16 {
    flow::sign_in_attempt(
        &server.target(),
        &query("acme", REDIRECT, ""),
        &format!("nobody{attempt}@example.com"),
        "whatever password",
        &[("x-forwarded-for", forwarded_for)],
    )
    .await
    .status
}

#[tokio::test]
async fn sign_in_is_throttled_per_client_address_behind_trusted_proxies_only() {
    // The test client connects from 127.0.0.1, standing for the load balancer.
    let behind_balancer = TestServer::start(|settings| {
        settings.oauth.signin_attempts_per_address = 2;
        settings.oauth.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    provision(&behind_balancer, false).await;
    let client = "198.51.100.1, 203.0.113.7";
    assert_eq!(failed_sign_in_from(&behind_balancer, 1, client).await, 401);
    assert_eq!(failed_sign_in_from(&behind_balancer, 2, client).await, 401);
    assert_eq!(
        failed_sign_in_from(&behind_balancer, 3, "203.0.113.7").await,
        429,
        "the address the balancer saw is counted, whatever the client prepends"
    );
    assert_eq!(
        failed_sign_in_from(&behind_balancer, 4, "203.0.113.8").await,
        401,
        "another client behind the same balancer has its own counter"
    );

    let direct = TestServer::start(|settings| {
        settings.oauth.signin_attempts_per_address = 2;
    })
    .await;
    provision(&direct, false).await;
    for (attempt, claimed) in ["203.0.113.1", "203.0.113.2"].into_iter().enumerate() {
        assert_eq!(failed_sign_in_from(&direct, attempt, claimed).await, 401);
    }
    assert_eq!(
        failed_sign_in_from(&direct, 3, "203.0.113.3").await,
        429,
        "without trusted proxies X-Forwarded-For is ignored, so it buys no new counter"
    );
}

on_both_stores!(sign_in_is_throttled_per_account_with_one_generic_message);

/// Wrong passwords for one account are throttled with one generic message, and never lock
/// its owner out.
async fn sign_in_is_throttled_per_account_with_one_generic_message(redis: bool) {
    let (server, _redis) = TestServer::start_on_store(redis, |settings| {
        settings.oauth.signin_attempts_per_account = 3;
        settings.oauth.signin_max_delay_secs = 1;
        // The test client connects from 127.0.0.1, standing for the load balancer.
        settings.oauth.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    provision(&server, false).await;
    let attempt_from = |email: &'static str, password: &'static str, source: &'static str| {
        let server = &server;
        async move {
            flow::sign_in_attempt(
                &server.target(),
                &query("acme", REDIRECT, ""),
                email,
                password,
                &[("x-forwarded-for", source)],
            )
            .await
        }
    };
    let attacker = "203.0.113.50";
    let attempt = |email, password| attempt_from(email, password, attacker);
    let unknown = attempt("nobody@example.com", "whatever password").await;
    let wrong = attempt("ada@example.com", "wrong password!!").await;
    for reply in [&unknown, &wrong] {
        assert_eq!(reply.status, 401);
        assert!(
            reply
                .text()
                .contains("That email and password do not match an account.")
        );
        assert!(flow::set_cookie(reply, "__Host-linkd-session").is_none());
    }
    // Case and spaces do not make another account for the counter.
    attempt(" ADA@example.com", "wrong password!!").await;
    attempt("ada@example.com", "still wrong!!").await;
    let throttled = attempt("ada@example.com", PASSWORD).await;
    assert_eq!(
        throttled.status, 429,
        "the guessing source is refused for that account, right password included"
    );
    assert!(throttled.header("retry-after").is_some());
    assert!(flow::set_cookie(&throttled, "__Host-linkd-session").is_none());
    // The owner, from their own address, still gets in: after a delay, never a refusal.
    let started = std::time::Instant::now();
    let owner = attempt_from("ada@example.com", PASSWORD, "198.51.100.30").await;
    assert_eq!(owner.status, 303, "{}", owner.text());
    assert!(flow::set_cookie(&owner, "__Host-linkd-session").is_some());
    assert!(
        started.elapsed() >= std::time::Duration::from_millis(900),
        "an account with recent failures makes each attempt wait"
    );
    // Another account from the same address is not affected by this account's counter.
    let other = attempt("nobody@example.com", "whatever password").await;
    assert_eq!(other.status, 401);
}

/// Guesses sent all at once from one source are counted as they would be one after another:
/// the burst gets no more password checks than the source's limit (and one per instance
/// at most beyond it), the rest are refused before any password hash is spent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_concurrent_guesses_gets_no_more_checks_than_the_limit() {
    let server = TestServer::start(|settings| {
        settings.oauth.signin_attempts_per_address = 3;
    })
    .await;
    provision(&server, false).await;
    let (address, cert) = (server.address, server.cert.clone());
    let request = query("acme", REDIRECT, "");
    let mut burst = tokio::task::JoinSet::new();
    for n in 0..24 {
        let (cert, request) = (cert.clone(), request.clone());
        burst.spawn(async move {
            let target = flow::Target {
                address,
                cert: &cert,
            };
            let email = format!("guess{n}@example.com");
            flow::sign_in_attempt(&target, &request, &email, "wrong password!!", &[])
                .await
                .status
        });
    }
    let statuses: Vec<u16> = burst.join_all().await;
    let checked = statuses.iter().filter(|status| **status == 401).count();
    assert!(
        statuses.iter().all(|status| matches!(status, 401 | 429)),
        "{statuses:?}"
    );
    assert!(
        checked <= 4,
        "{checked} of 24 concurrent guesses from one source were checked: {statuses:?}"
    );
}

/// A sign-in throttling window on the embedded store is measured by linkd's clock: moving
/// the clock past the window lets the throttled source in again, without waiting. (On Redis
/// the window is the counter key's lifetime, which Redis counts by its own clock.)
#[tokio::test]
async fn sign_in_throttling_lapses_by_the_injected_clock() {
    let clock = Arc::new(ManualClock::new(linkd::clock::SystemClock.now()));
    let server = TestServer::start_with_clock(Arc::clone(&clock), |settings| {
        settings.oauth.signin_attempts_per_account = 3;
        settings.oauth.signin_max_delay_secs = 0;
        settings.oauth.throttle_window_secs = 600;
        // The test client connects from 127.0.0.1, standing for the load balancer.
        settings.oauth.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    provision(&server, false).await;
    let attempt = |password: &'static str| {
        let server = &server;
        async move {
            flow::sign_in_attempt(
                &server.target(),
                &query("acme", REDIRECT, ""),
                "ada@example.com",
                password,
                &[("x-forwarded-for", "203.0.113.50")],
            )
            .await
        }
    };
    for _ in 0..3 {
        assert_eq!(attempt("wrong password!!").await.status, 401);
    }
    assert_eq!(attempt(PASSWORD).await.status, 429);
    clock.advance(599);
    assert_eq!(
        attempt(PASSWORD).await.status,
        429,
        "the window is not over yet"
    );
    clock.advance(1);
    let admitted = attempt(PASSWORD).await;
    assert_eq!(admitted.status, 303, "{}", admitted.text());
    assert!(flow::set_cookie(&admitted, "__Host-linkd-session").is_some());
}
