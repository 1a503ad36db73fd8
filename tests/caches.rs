//! The server's in-memory answers on the hot paths (`linkd::store::cached`) stay coherent
//! with every other writer of its store: another connection to the same SQLite file or
//! Redis (as another instance or the CLI is), and the CLI itself. A client changed
//! elsewhere, a user removed elsewhere, a grant or a token revoked elsewhere: the running
//! server follows within the documented bound (at once on SQLite, within
//! `STALENESS_BOUND` on Redis), and when the Redis change feed is lost it asks the store
//! again rather than trust what it remembered.

use std::time::{Duration, Instant};

use linkd::store::cached::STALENESS_BOUND;
use linkd::store::{SharedStore, StoreTimeouts};

use crate::support::linkd::TestServer;
use crate::support::{REDIRECT, cli, flow, https, provision, redis_server};

const SECRET: &str = "acme-client-secret-value";
const NEW_SECRET: &str = "acme-rotated-secret-value";

struct Fixture {
    server: TestServer,
    user_id: String,
    /// The `--store` of the server, for the CLI and the other writer.
    location: String,
    redis: Option<redis_server::RedisServer>,
    _dir: tempfile::TempDir,
}

struct Tokens {
    access: String,
    refresh: String,
}

async fn fixture(redis: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let redis = redis.then(redis_server::RedisServer::start);
    let location = match &redis {
        Some(server) => server.url(),
        None => dir.path().join("linkd.db").display().to_string(),
    };
    let store = location.clone();
    let server = TestServer::start(move |settings| settings.store = store).await;
    let app = server.server.app();
    let user_id = provision::acme_and_ada(app, SECRET).await;
    Fixture {
        server,
        user_id,
        location,
        redis,
        _dir: dir,
    }
}

impl Fixture {
    /// Another writer of the same store, as another instance or the CLI is: its own
    /// connection, no cache.
    async fn other_writer(&self) -> SharedStore {
        linkd::store::open(&self.location, StoreTimeouts::default())
            .await
            .unwrap()
    }

    async fn link(&self) -> Tokens {
        let code = provision::Code {
            client: "acme",
            user: &self.user_id,
            redirect: REDIRECT,
            scope: "email",
            pkce: None,
            lifetime: 300,
        }
        .sign(self.server.server.app());
        let reply = flow::redeem(&self.server.target(), &code, REDIRECT, SECRET).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        Tokens {
            access: body["access_token"].as_str().unwrap().to_owned(),
            refresh: body["refresh_token"].as_str().unwrap().to_owned(),
        }
    }

    async fn refresh_with(&self, refresh_token: &str, secret: &str) -> https::Reply {
        flow::post(
            &self.server.target(),
            "/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
                ("client_id", "acme"),
                ("client_secret", secret),
            ],
        )
        .await
    }

    async fn userinfo(&self, access_token: &str) -> u16 {
        flow::userinfo(&self.server.target(), access_token)
            .await
            .status
    }

    /// How long a change made by another writer may take to reach the server.
    fn bound(&self) -> Duration {
        if self.redis.is_some() {
            STALENESS_BOUND
        } else {
            linkd::store::sqlite::CHANGES_CHECK_INTERVAL
        }
    }
}

/// Asks `check` until it holds, failing if it still did not hold when asked later than
/// `bound` after the start: every request begun past the bound must see the change.
async fn within<F, Fut>(bound: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    loop {
        let asked = Instant::now();
        if check().await {
            return;
        }
        assert!(
            asked.duration_since(started) <= bound,
            "{what}: still not so when asked {:?} after, beyond {bound:?}",
            asked.duration_since(started)
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The client's secret rotated by another writer: the old secret is refused and the new
/// one accepted within the bound, though the server had the client in memory; then
/// `linkd clients remove` ends the client for the running server too.
async fn a_client_changed_elsewhere_is_followed(redis: bool) {
    let fixture = fixture(redis).await;
    let tokens = fixture.link().await;
    let warm = fixture.refresh_with(&tokens.refresh, SECRET).await;
    assert_eq!(warm.status, 200, "{}", warm.text());

    let other = fixture.other_writer().await;
    let mut client = other.get_client("acme").await.unwrap().unwrap();
    client.secret_digest = linkd::secrets::sha256_hex(NEW_SECRET.as_bytes());
    assert!(other.update_client(&client).await.unwrap());
    within(fixture.bound(), "the old secret refused", || async {
        fixture.refresh_with(&tokens.refresh, SECRET).await.status == 400
    })
    .await;
    let rotated = fixture.refresh_with(&tokens.refresh, NEW_SECRET).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text());

    cli::run_ok(
        &fixture.location,
        &["clients", "remove", "acme", "--yes"],
        None,
    );
    within(fixture.bound(), "the removed client refused", || async {
        fixture
            .refresh_with(&tokens.refresh, NEW_SECRET)
            .await
            .status
            == 400
    })
    .await;
}

/// A grant revoked and an access token revoked by another writer, and a user removed by
/// the CLI: the server, which had each answer in memory, refuses the token within the bound,
/// and never accepts it again.
async fn revocations_elsewhere_are_followed(redis: bool) {
    let fixture = fixture(redis).await;
    let other = fixture.other_writer().await;

    let by_grant = fixture.link().await;
    assert_eq!(fixture.userinfo(&by_grant.access).await, 200);
    // The refresh token's record is now in memory too.
    assert_eq!(
        fixture.refresh_with(&by_grant.refresh, SECRET).await.status,
        200
    );
    assert_eq!(
        fixture.refresh_with(&by_grant.refresh, SECRET).await.status,
        200
    );
    let claims = fixture
        .server
        .server
        .app()
        .check_access_token(&by_grant.access, None)
        .await
        .unwrap();
    other.revoke_grant(&claims.gid).await.unwrap();
    within(
        fixture.bound(),
        "the revoked grant's token refused",
        || async { fixture.userinfo(&by_grant.access).await == 401 },
    )
    .await;
    within(
        fixture.bound(),
        "the revoked grant's refresh token refused",
        || async { fixture.refresh_with(&by_grant.refresh, SECRET).await.status == 400 },
    )
    .await;

    let by_token = fixture.link().await;
    assert_eq!(fixture.userinfo(&by_token.access).await, 200);
    let claims = fixture
        .server
        .server
        .app()
        .check_access_token(&by_token.access, None)
        .await
        .unwrap();
    other
        .revoke_token(&claims.jti, claims.exp, claims.iat)
        .await
        .unwrap();
    within(fixture.bound(), "the revoked token refused", || async {
        fixture.userinfo(&by_token.access).await == 401
    })
    .await;

    // `linkd users remove`, run as an operator does, while the server has the user's
    // token and record in memory.
    let by_user = fixture.link().await;
    assert_eq!(fixture.userinfo(&by_user.access).await, 200);
    cli::run_ok(
        &fixture.location,
        &["users", "remove", "ada@example.com", "--yes"],
        None,
    );
    within(
        fixture.bound(),
        "the removed user's token refused",
        || async { fixture.userinfo(&by_user.access).await == 401 },
    )
    .await;

    tokio::time::sleep(STALENESS_BOUND * 2).await;
    for tokens in [&by_grant, &by_token, &by_user] {
        assert_eq!(fixture.userinfo(&tokens.access).await, 401);
    }
    assert_eq!(
        fixture.refresh_with(&by_grant.refresh, SECRET).await.status,
        400
    );
}

on_both_stores!(
    a_client_changed_elsewhere_is_followed,
    revocations_elsewhere_are_followed
);

/// The Redis change feed's subscription is cut and a grant revoked while it is down (its
/// announcement reaches no one): the server does not trust its memory beyond the bound, asks
/// Redis, and refuses the token, then and after it has subscribed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_redis_feed_falls_back_to_the_store() {
    let fixture = fixture(true).await;
    let redis = fixture.redis.as_ref().unwrap();
    let other = fixture.other_writer().await;
    let tokens = fixture.link().await;
    assert_eq!(fixture.userinfo(&tokens.access).await, 200);
    assert_eq!(
        fixture.refresh_with(&tokens.refresh, SECRET).await.status,
        200
    );
    let claims = fixture
        .server
        .server
        .app()
        .check_access_token(&tokens.access, None)
        .await
        .unwrap();

    redis.cli(&["CLIENT", "KILL", "TYPE", "pubsub"]).unwrap();
    other.revoke_grant(&claims.gid).await.unwrap();
    within(
        STALENESS_BOUND,
        "the token refused without the feed",
        || async { fixture.userinfo(&tokens.access).await == 401 },
    )
    .await;
    // Long enough for the feed to subscribe again: what it missed stays missed, and the
    // token stays refused.
    let until = Instant::now() + Duration::from_secs(3);
    while Instant::now() < until {
        assert_eq!(fixture.userinfo(&tokens.access).await, 401);
        assert_eq!(
            fixture.refresh_with(&tokens.refresh, SECRET).await.status,
            400
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Redis stops: within the bound the server stops answering from memory and says 503, as
/// it does without a cache, rather than accept a token it can no longer check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_redis_is_not_hidden_by_the_cache() {
    let mut fixture = fixture(true).await;
    let tokens = fixture.link().await;
    assert_eq!(fixture.userinfo(&tokens.access).await, 200);
    assert_eq!(
        fixture.refresh_with(&tokens.refresh, SECRET).await.status,
        200
    );
    fixture.redis.as_mut().unwrap().stop();
    within(STALENESS_BOUND, "503 once Redis is gone", || async {
        fixture.userinfo(&tokens.access).await == 503
    })
    .await;
    within(
        STALENESS_BOUND,
        "refresh 503 once Redis is gone",
        || async { fixture.refresh_with(&tokens.refresh, SECRET).await.status == 503 },
    )
    .await;
}
