//! Ending a link, every way it can end, against a real linkd over TLS on the embedded store
//! and on a real Redis: Unlink on the account page (also when the store fails part-way),
//! RFC 7009 revocation, `linkd users remove` and `linkd users set-password` run as an
//! operator would while the server runs. Whichever way, a dead grant stays dead, and the
//! account page never lists a link that no longer works nor drops one that still does.

use std::sync::Arc;
use std::time::Duration;

use linkd::app::App;

use crate::support::linkd::{TestServer, eventually};
use crate::support::{PASSWORD, REDIRECT, cli, flow, https, provision, redis_server};

const PROJECT: &str = "acme-project";
const SECRET: &str = "acme-client-secret-value";

struct Fixture {
    server: TestServer,
    user_id: String,
    /// The `--store` of the server, for the CLI.
    store: String,
    redis: Option<redis_server::RedisServer>,
    _dir: tempfile::TempDir,
}

/// Tokens of one grant.
struct Tokens {
    access: String,
    refresh: String,
}

async fn fixture(redis: bool, clock: Option<Arc<linkd::clock::ManualClock>>) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let redis = redis.then(redis_server::RedisServer::start);
    let store = match &redis {
        Some(server) => server.url(),
        None => dir.path().join("linkd.db").display().to_string(),
    };
    let location = store.clone();
    let adjust = move |settings: &mut linkd::config::ServeSettings| settings.store = location;
    let server = match clock {
        Some(clock) => TestServer::start_with_clock(clock, adjust).await,
        None => TestServer::start(adjust).await,
    };
    let app = server.server.app();
    let user_id = provision::acme_and_ada(app, SECRET).await;
    Fixture {
        server,
        user_id,
        store,
        redis,
        _dir: dir,
    }
}

impl Fixture {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    fn target(&self) -> flow::Target<'_> {
        self.server.target()
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> https::Reply {
        flow::post(&self.target(), path, form).await
    }

    async fn post_form_with_cookies(
        &self,
        path: &str,
        form: &[(&str, &str)],
        cookies: &str,
    ) -> https::Reply {
        flow::post_form(&self.target(), path, form, cookies).await
    }

    async fn exchange(&self, code: &str) -> Tokens {
        let reply = flow::redeem(&self.target(), code, REDIRECT, SECRET).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        Tokens {
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
        }
    }

    /// Links Ada with a code signed by the server's keyring, as the authorization endpoint
    /// signs it, without a browser session.
    async fn link(&self) -> Tokens {
        let code = provision::Code {
            client: "acme",
            user: &self.user_id,
            redirect: REDIRECT,
            scope: "email",
            pkce: None,
            lifetime: 300,
        }
        .sign(self.app());
        self.exchange(&code).await
    }

    /// Links Ada through the pages (sign-in, consent, remembered consent), as a browser
    /// does; returns the session cookie and the tokens.
    async fn link_with_session(&self) -> (String, Tokens) {
        let request = serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", "acme"),
            ("redirect_uri", REDIRECT),
            ("state", "xyz"),
        ])
        .unwrap();
        let (cookies, linked) =
            flow::link_with_session(&self.target(), &request, "ada@example.com", PASSWORD).await;
        let code = flow::redirect_query(&linked)["code"].clone();
        (cookies, self.exchange(&code).await)
    }

    async fn refresh(&self, refresh_token: &str) -> https::Reply {
        self.post(
            "/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", "acme"),
                ("client_secret", SECRET),
            ],
        )
        .await
    }

    async fn userinfo(&self, access_token: &str) -> u16 {
        flow::userinfo(&self.target(), access_token).await.status
    }

    async fn revoke(&self, token: &str) -> https::Reply {
        self.post(
            "/revoke",
            &[
                ("token", token),
                ("client_id", "acme"),
                ("client_secret", SECRET),
            ],
        )
        .await
    }

    async fn account_page(&self, cookies: &str) -> https::Reply {
        flow::get(&self.target(), "/account", &[("cookie", cookies)]).await
    }

    async fn links(&self) -> Vec<String> {
        self.app()
            .store
            .list_links(&self.user_id)
            .await
            .unwrap()
            .into_iter()
            .map(|link| link.grant_id)
            .collect()
    }

    /// Gives Ada a device in the graph, so that the unlink event's `agentUsers.delete` shows.
    async fn give_a_device(&self) {
        let device = serde_json::json!({"id": "lamp", "type": "action.devices.types.LIGHT",
            "traits": ["action.devices.traits.OnOff"], "name": {"name": "Lamp"}});
        self.app()
            .store
            .put_devices(PROJECT, &self.user_id, &[device])
            .await
            .unwrap();
    }

    /// Asserts that Ada's consent for acme is forgotten.
    async fn assert_consent_forgotten(&self, what: &str) {
        let consent = self
            .app()
            .store
            .get_consent(&self.user_id, "acme")
            .await
            .unwrap();
        assert_eq!(consent, None, "{what}");
    }

    /// Waits until the unlink event was queued and carried out: Ada's devices are gone.
    async fn device_graph_forgets_ada(&self, what: &str) {
        eventually(Duration::from_secs(45), what, || async {
            let store = &self.app().store;
            let devices = store.get_devices(PROJECT, &self.user_id).await.unwrap();
            let pending = store.pending_unlink_events(10).await.unwrap();
            (devices.is_none() && pending.is_empty()).then_some(())
        })
        .await;
    }

    /// Runs the linkd binary on the server's store, with `stdin`, asserting success;
    /// returns its stdout.
    fn cli(&self, args: &[&str], stdin: &str) -> String {
        cli::run_ok(&self.store, args, Some(stdin))
    }
}

fn assert_invalid_grant(reply: &https::Reply, what: &str) {
    assert_eq!(reply.status, 400, "{what}: {}", reply.text());
    assert_eq!(reply.json()["error"], "invalid_grant", "{what}");
}

/// The CSRF token and grant id of the Unlink form on the account page.
async fn unlink_form(fixture: &Fixture, cookies: &str) -> (String, String) {
    let page = fixture.account_page(cookies).await;
    assert_eq!(page.status, 200, "{}", page.text());
    let html = page.text();
    (
        flow::hidden_field(&html, "csrf"),
        flow::hidden_field(&html, "grant"),
    )
}

/// Unlink on the Redis store while part of its writes are refused: the grant's keys, the
/// unlink-event queue, or the user's link and consent. Whichever step fails, the link stays
/// listed (so Unlink can be pressed again) and never outlives a grant that still works; once
/// the store takes writes again, pressing Unlink finishes the job: tokens dead, link and
/// consent gone, the device graph told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlink_interrupted_by_a_store_fault_can_be_finished() {
    let fixture = fixture(true, None).await;
    let redis = fixture.redis.as_ref().unwrap();
    // Every key may be read; writes only where listed, as on a failing server.
    let writes_only_to = |keys: &[&str]| {
        let mut args = vec!["ACL", "SETUSER", "default", "resetkeys", "%R~linkd:*"];
        args.extend_from_slice(keys);
        redis.cli(&args).unwrap();
    };
    let grant = ["~linkd:rt:*", "~linkd:revoked-grant:*"];
    let events = ["~linkd:{unlink-events}"];
    let user = ["~linkd:links:*", "~linkd:consents:*"];
    for (refused, allowed) in [
        ("the grant", [&events[..], &user[..]].concat()),
        ("the unlink event", [&grant[..], &user[..]].concat()),
        ("the link", [&grant[..], &events[..]].concat()),
    ] {
        let (cookies, tokens) = fixture.link_with_session().await;
        fixture.give_a_device().await;
        let (csrf, grant_id) = unlink_form(&fixture, &cookies).await;
        let form = [("csrf", csrf.as_str()), ("grant", grant_id.as_str())];
        let press_unlink = || fixture.post_form_with_cookies("/account/unlink", &form, &cookies);

        writes_only_to(&allowed);
        let failed = press_unlink().await;
        writes_only_to(&["~*"]);
        assert_eq!(failed.status, 503, "{refused}: {}", failed.text());
        let listed = fixture.links().await.contains(&grant_id);
        let grant_works = fixture.refresh(&tokens.refresh).await.status == 200;
        assert!(
            listed || !grant_works,
            "writes to {refused} refused: the link is gone but its grant still works"
        );
        assert!(listed, "writes to {refused} refused: the link is gone");

        let finished = press_unlink().await;
        assert_eq!(finished.status, 303, "{refused}: {}", finished.text());
        assert!(fixture.links().await.is_empty(), "{refused}");
        assert_invalid_grant(&fixture.refresh(&tokens.refresh).await, refused);
        assert_eq!(fixture.userinfo(&tokens.access).await, 401, "{refused}");
        fixture.assert_consent_forgotten(refused).await;
        fixture
            .device_graph_forgets_ada(&format!("{refused}: the unlink event"))
            .await;
    }
}

/// A link whose grant is already dead (what an interrupted Unlink, a replayed code or an
/// older instance's `/revoke` leaves) is finished by the account page rather than listed.
async fn the_account_page_finishes_a_half_done_unlink(redis: bool) {
    let fixture = fixture(redis, None).await;
    let (cookies, _tokens) = fixture.link_with_session().await;
    fixture.give_a_device().await;
    let grant_id = fixture.links().await.pop().unwrap();
    fixture.app().revoke_grant(&grant_id).await.unwrap();
    let page = fixture.account_page(&cookies).await;
    assert_eq!(page.status, 200, "{}", page.text());
    assert!(page.text().contains("Nothing is linked"), "{}", page.text());
    assert!(fixture.links().await.is_empty());
    fixture
        .device_graph_forgets_ada("the account page queues the unlink event")
        .await;
}

/// RFC 7009: revoking a refresh token ends the grant as Unlink does — tokens, link, consent,
/// and the device graph is told; revoking an access token ends that token only.
async fn revoking_a_refresh_token_ends_the_link(redis: bool) {
    let fixture = fixture(redis, None).await;
    let (cookies, tokens) = fixture.link_with_session().await;
    fixture.give_a_device().await;

    assert_eq!(fixture.revoke(&tokens.access).await.status, 200);
    assert_eq!(fixture.userinfo(&tokens.access).await, 401);
    let refreshed = fixture.refresh(&tokens.refresh).await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.text());
    let fresh_access = refreshed.json()["access_token"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(fixture.userinfo(&fresh_access).await, 200);
    assert_eq!(
        fixture.links().await.len(),
        1,
        "an access token is not the link"
    );

    assert_eq!(fixture.revoke(&tokens.refresh).await.status, 200);
    assert_invalid_grant(&fixture.refresh(&tokens.refresh).await, "revoked grant");
    assert_eq!(fixture.userinfo(&fresh_access).await, 401);
    assert!(
        fixture.links().await.is_empty(),
        "the link outlived /revoke"
    );
    fixture
        .assert_consent_forgotten("consent outlived /revoke")
        .await;
    let page = fixture.account_page(&cookies).await;
    assert!(page.text().contains("Nothing is linked"), "{}", page.text());
    fixture
        .device_graph_forgets_ada("/revoke queues the unlink event")
        .await;
}

/// A grant's revocation does not lapse: an access token of a revoked grant is refused for as
/// long as it is otherwise valid, however long after the revocation it is shown. The clock
/// stands a month in the past, so the server's tokens outlive what the store would keep an
/// expiring mark for.
async fn a_revoked_grant_stays_revoked(redis: bool) {
    use linkd::clock::Clock as _;
    let month_ago = linkd::clock::SystemClock.now() - 30 * 86_400;
    let clock = Arc::new(linkd::clock::ManualClock::new(month_ago));
    let fixture = fixture(redis, Some(Arc::clone(&clock))).await;
    let revoked = fixture.link().await;
    let other = fixture.link().await;
    assert_eq!(fixture.userinfo(&revoked.access).await, 200);
    assert_eq!(fixture.revoke(&revoked.refresh).await.status, 200);
    assert_eq!(fixture.userinfo(&revoked.access).await, 401);
    // Another revocation, and a write two months on by which everything that may lapse has
    // lapsed and is purged on SQLite. (That Redis gives a grant's mark no expiry at all is
    // checked in tests/store_contract.rs: Redis expires keys by its own clock.)
    assert_eq!(fixture.revoke(&other.refresh).await.status, 200);
    fixture
        .app()
        .store
        .revoke_token(
            "later",
            clock.now() + 61 * 86_400,
            clock.now() + 60 * 86_400,
        )
        .await
        .unwrap();
    clock.advance(60);
    assert_eq!(
        fixture.userinfo(&revoked.access).await,
        401,
        "a revoked grant's access token came back to life"
    );
    assert_invalid_grant(&fixture.refresh(&revoked.refresh).await, "revoked grant");
}

/// `linkd users remove` while the server runs: every grant of the user dies (refresh
/// `invalid_grant`, userinfo 401), the links go and the device graph forgets the user.
async fn removing_a_user_ends_every_grant(redis: bool) {
    let fixture = fixture(redis, None).await;
    let first = fixture.link().await;
    let second = fixture.link().await;
    fixture.give_a_device().await;
    let out = fixture.cli(&["users", "remove", "ada@example.com", "--yes"], "");
    for tokens in [&first, &second] {
        assert_invalid_grant(&fixture.refresh(&tokens.refresh).await, "removed user");
        assert_eq!(fixture.userinfo(&tokens.access).await, 401);
    }
    assert!(out.contains("2 link(s) ended"), "{out}");
    assert!(fixture.links().await.is_empty());
    fixture
        .device_graph_forgets_ada("removing the user queues unlink events")
        .await;
}

/// `linkd users set-password` ends the user's sessions and keeps the links (the platform's
/// link does not depend on the password); with `--revoke-links` the links end too.
async fn setting_a_password_ends_sessions_and_optionally_links(redis: bool) {
    let fixture = fixture(redis, None).await;
    let (cookies, tokens) = fixture.link_with_session().await;
    let page = fixture.account_page(&cookies).await;
    assert!(page.text().contains("Acme Home"), "{}", page.text());

    fixture.cli(
        &[
            "users",
            "set-password",
            "ada@example.com",
            "--password-stdin",
        ],
        "a brand new password\n",
    );
    let page = fixture.account_page(&cookies).await;
    assert_eq!(page.status, 200);
    assert!(
        !page.text().contains("Acme Home"),
        "the session outlived the password: {}",
        page.text()
    );
    let refreshed = fixture.refresh(&tokens.refresh).await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.text());
    assert_eq!(fixture.links().await.len(), 1);

    let out = fixture.cli(
        &[
            "users",
            "set-password",
            "ada@example.com",
            "--password-stdin",
            "--revoke-links",
        ],
        "another new password\n",
    );
    assert!(out.contains("1 link(s) ended"), "{out}");
    assert_invalid_grant(&fixture.refresh(&tokens.refresh).await, "--revoke-links");
    assert_eq!(fixture.userinfo(&tokens.access).await, 401);
    assert!(fixture.links().await.is_empty());
}

on_both_stores!(
    the_account_page_finishes_a_half_done_unlink,
    revoking_a_refresh_token_ends_the_link,
    a_revoked_grant_stays_revoked,
    removing_a_user_ends_every_grant,
    setting_a_password_ends_sessions_and_optionally_links
);

/// Sessions end with the account too: a page of a removed user's session is a sign-in page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_users_session_is_no_session() {
    let fixture = fixture(false, None).await;
    let (cookies, _tokens) = fixture.link_with_session().await;
    fixture.cli(&["users", "remove", "ada@example.com", "--yes"], "");
    let page = fixture.account_page(&cookies).await;
    assert!(!page.text().contains("ada@example.com"), "{}", page.text());
}

/// The platform's `/revoke` of a refresh token on the Redis store while part of the writes
/// are refused after the grant died: the platform gets 503 and retries with the same refresh
/// token once the store takes writes again, and that retry ends the link as a first attempt
/// would have: link and consent gone, the device graph told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoke_interrupted_by_a_store_fault_is_finished_by_its_retry() {
    let fixture = fixture(true, None).await;
    let redis = fixture.redis.as_ref().unwrap();
    let writes_only_to = |keys: &[&str]| {
        let mut args = vec!["ACL", "SETUSER", "default", "resetkeys", "%R~linkd:*"];
        args.extend_from_slice(keys);
        redis.cli(&args).unwrap();
    };
    let grant = [
        "~linkd:rt:*",
        "~linkd:revoked-grant:*",
        "~linkd:counter:*",
        "~linkd:{clients}",
    ];
    let events = ["~linkd:{unlink-events}"];
    let user = ["~linkd:links:*", "~linkd:consents:*"];
    for (refused, allowed) in [
        ("the unlink event", [&grant[..], &user[..]].concat()),
        ("the link", [&grant[..], &events[..]].concat()),
    ] {
        let (_cookies, tokens) = fixture.link_with_session().await;
        fixture.give_a_device().await;
        let grant_id = fixture.links().await.pop().unwrap();

        writes_only_to(&allowed);
        let failed = fixture.revoke(&tokens.refresh).await;
        writes_only_to(&["~*"]);
        assert_eq!(failed.status, 503, "{refused}: {}", failed.text());

        let retried = fixture.revoke(&tokens.refresh).await;
        assert_eq!(retried.status, 200, "{refused}: {}", retried.text());
        assert_invalid_grant(&fixture.refresh(&tokens.refresh).await, refused);
        assert!(
            !fixture.links().await.contains(&grant_id),
            "writes to {refused} refused: the retried /revoke left the link listed"
        );
        fixture.assert_consent_forgotten(refused).await;
        fixture
            .device_graph_forgets_ada(&format!("{refused}: the unlink event"))
            .await;
    }
}
