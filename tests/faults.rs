//! The platform's view of linkd while Redis misbehaves. A fault-injecting proxy sits between
//! linkd and a real Redis; in each round one fault is put in force (commands that land after
//! linkd gave up on them, refused writes as after a failover, a loading or full Redis,
//! dropped connections) while the platform links a user, refreshes and calls userinfo for
//! every live link, and a user unlinks (on the account page, or the platform revokes). Then
//! the fault clears and the platform retries what got 503, as it does.
//!
//! Counted over every round: a credential that was valid is never called invalid
//! (`invalid_grant`, 401), every failure is a 503 with `Retry-After`, every retried operation
//! succeeds once the fault is gone, and afterwards no listed link has a dead grant and no live
//! grant has lost its link.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fault_proxy::{Fault, FaultProxy};
use linkd::app::App;

use crate::support::linkd::TestServer;
use crate::support::{
    PASSWORD, REDIRECT, encode, fault_proxy, flow, https, provision, redis_server,
};

const SECRET: &str = "a-long-enough-client-secret-value";

/// What the platform holds for one link.
#[derive(Debug, Clone)]
struct Link {
    refresh: String,
    access: String,
    /// Whether the platform or the user ended it (and saw that succeed).
    ended: bool,
}

/// One platform operation, kept to be retried after a 503.
#[derive(Debug, Clone)]
enum Operation {
    Exchange(String),
    Refresh(String),
    Userinfo(String),
    Revoke(String),
    AccountUnlink,
}

#[derive(Debug, Default)]
struct Tally {
    ok: usize,
    unavailable: usize,
    wrongly_invalid: Vec<String>,
}

struct Platform {
    server: TestServer,
    cookies: String,
    user_id: String,
    /// Links by grant id.
    links: BTreeMap<String, Link>,
    tally: Tally,
}

fn grant_of(refresh: &str) -> String {
    linkd::grants::parse_refresh_token(refresh)
        .unwrap()
        .grant_id
}

impl Platform {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    fn target(&self) -> flow::Target<'_> {
        self.server.target()
    }

    /// A code as the authorization endpoint issues it (sign-in and consent are the pages'
    /// business, tested in the browser).
    fn new_code(&self) -> String {
        provision::Code {
            client: "acme",
            user: &self.user_id,
            redirect: REDIRECT,
            scope: "openid email profile",
            pkce: None,
            lifetime: 600,
        }
        .sign(self.app())
    }

    async fn post(&self, path: &str, form: &[(&str, &str)]) -> https::Reply {
        flow::post(&self.target(), path, form).await
    }

    /// Runs `operation` once; `true` when it is done (false: 503, retry later).
    async fn run(&mut self, operation: &Operation, fault: &Fault) -> bool {
        let reply = match operation {
            Operation::Exchange(code) => flow::redeem(&self.target(), code, REDIRECT, SECRET).await,
            Operation::Refresh(refresh) => {
                self.post(
                    "/token",
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", refresh),
                        ("client_id", "acme"),
                        ("client_secret", SECRET),
                    ],
                )
                .await
            }
            Operation::Userinfo(access) => flow::userinfo(&self.target(), access).await,
            Operation::Revoke(refresh) => {
                self.post(
                    "/revoke",
                    &[
                        ("token", refresh),
                        ("token_type_hint", "refresh_token"),
                        ("client_id", "acme"),
                        ("client_secret", SECRET),
                    ],
                )
                .await
            }
            Operation::AccountUnlink => return self.account_unlink(fault).await,
        };
        if reply.status == 503 {
            assert!(reply.header("retry-after").is_some(), "{operation:?}");
            self.tally.unavailable += 1;
            return false;
        }
        if reply.status != 200 {
            self.tally.wrongly_invalid.push(format!(
                "{operation:?} under {fault:?}: {} {}",
                reply.status,
                reply.text()
            ));
            return true;
        }
        self.tally.ok += 1;
        match operation {
            Operation::Exchange(_) => {
                let body = reply.json();
                let refresh = body["refresh_token"].as_str().unwrap().to_owned();
                let link = Link {
                    access: body["access_token"].as_str().unwrap().to_owned(),
                    refresh: refresh.clone(),
                    ended: false,
                };
                self.links.insert(grant_of(&refresh), link);
            }
            Operation::Refresh(refresh) => {
                let access = reply.json()["access_token"].as_str().unwrap().to_owned();
                self.links.get_mut(&grant_of(refresh)).unwrap().access = access;
            }
            Operation::Revoke(refresh) => {
                self.links.get_mut(&grant_of(refresh)).unwrap().ended = true;
            }
            Operation::Userinfo(_) | Operation::AccountUnlink => {}
        }
        true
    }

    /// Presses Unlink on the account page for the first listed link.
    async fn account_unlink(&mut self, fault: &Fault) -> bool {
        let target = self.target();
        let page = flow::get(&target, "/account", &[("cookie", &self.cookies)]).await;
        if page.status == 503 {
            self.tally.unavailable += 1;
            return false;
        }
        assert_eq!(page.status, 200, "account page under {fault:?}");
        let html = page.text();
        if !html.contains("name=\"grant\"") {
            return true;
        }
        let grant = flow::hidden_field(&html, "grant");
        let answer = flow::post_form(
            &target,
            "/account/unlink",
            &[
                ("csrf", flow::hidden_field(&html, "csrf").as_str()),
                ("grant", grant.as_str()),
            ],
            &self.cookies,
        )
        .await;
        if answer.status == 503 {
            self.tally.unavailable += 1;
            return false;
        }
        assert_eq!(
            answer.status,
            303,
            "unlink under {fault:?}: {}",
            answer.text()
        );
        self.tally.ok += 1;
        if let Some(link) = self.links.get_mut(&grant) {
            link.ended = true;
        }
        true
    }

    /// Retries `pending` with the fault gone, as the platform does after a 503.
    async fn retry(&mut self, pending: Vec<Operation>) {
        for operation in pending {
            let started = Instant::now();
            while !self.run(&operation, &Fault::None).await {
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "{operation:?} still 503 20 s after the fault cleared"
                );
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }

    /// With the store healthy: every listed link has a live grant and every live grant its
    /// link; every ended link is dead everywhere.
    async fn check_invariants(&mut self, round: &str) {
        let listed: Vec<String> = self
            .app()
            .store
            .list_links(&self.user_id)
            .await
            .unwrap()
            .into_iter()
            .map(|link| link.grant_id)
            .collect();
        let links = self.links.clone();
        for (grant, link) in &links {
            let refreshed = self
                .post(
                    "/token",
                    &[
                        ("grant_type", "refresh_token"),
                        ("refresh_token", &link.refresh),
                        ("client_id", "acme"),
                        ("client_secret", SECRET),
                    ],
                )
                .await;
            let is_listed = listed.contains(grant);
            if link.ended {
                assert_eq!(
                    refreshed.status, 400,
                    "{round}: an ended grant still refreshes"
                );
                assert!(!is_listed, "{round}: an ended grant is still listed");
            } else {
                assert_eq!(
                    refreshed.status,
                    200,
                    "{round}: a live grant no longer refreshes: {}",
                    refreshed.text()
                );
                assert!(is_listed, "{round}: a live grant lost its link");
            }
        }
        for grant in &listed {
            assert!(
                links.get(grant).is_some_and(|link| !link.ended),
                "{round}: a link is listed whose grant the platform never held alive"
            );
        }
    }
}

/// A real Redis, the fault proxy in front of it, and linkd using the proxy with short store
/// timeouts, provisioned with the `acme` integration and the user Ada (whose id is returned).
async fn behind_a_fault_proxy() -> (redis_server::RedisServer, FaultProxy, TestServer, String) {
    let redis = redis_server::RedisServer::start();
    let proxy = FaultProxy::start(format!("127.0.0.1:{}", redis.port()).parse().unwrap()).await;
    let url = proxy.url();
    let server = TestServer::start(move |settings| {
        settings.store = url;
        settings.store_timeouts = linkd::store::StoreTimeouts {
            connect: Duration::from_millis(300),
            response: Duration::from_millis(300),
        };
    })
    .await;
    let app = Arc::clone(server.server.app());
    let user_id = provision::acme_and_ada(&app, SECRET).await;
    (redis, proxy, server, user_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_misbehaving_redis_never_makes_a_valid_credential_invalid() {
    let (redis, proxy, server, user_id) = behind_a_fault_proxy().await;
    let target = server.target();
    let request = format!(
        "client_id=acme&redirect_uri={}&state=s&response_type=code",
        encode(REDIRECT)
    );
    let (cookies, _) =
        flow::sign_in_over_http(&target, &request, "ada@example.com", PASSWORD).await;
    let mut platform = Platform {
        server,
        cookies,
        user_id,
        links: BTreeMap::new(),
        tally: Tally::default(),
    };
    // Two links to start with, made while Redis is healthy.
    for _ in 0..2 {
        let code = platform.new_code();
        assert!(platform.run(&Operation::Exchange(code), &Fault::None).await);
    }

    let faults = [
        Fault::Delay(Duration::from_millis(900)),
        Fault::FailWrites(fault_proxy::READONLY),
        Fault::FailWrites(fault_proxy::OOM),
        Fault::FailAll(fault_proxy::LOADING),
        Fault::Drop,
    ];
    for round in 0..2 {
        for fault in &faults {
            proxy.set(fault.clone());
            let mut operations = vec![Operation::Exchange(platform.new_code())];
            let live: Vec<Link> = platform
                .links
                .values()
                .filter(|link| !link.ended)
                .cloned()
                .collect();
            for link in &live {
                operations.push(Operation::Refresh(link.refresh.clone()));
                operations.push(Operation::Userinfo(link.access.clone()));
            }
            // Alternate who ends a link: the platform by revocation, the user on the page.
            if round == 0 {
                if let Some(link) = live.first() {
                    operations.push(Operation::Revoke(link.refresh.clone()));
                }
            } else {
                operations.push(Operation::AccountUnlink);
            }
            let mut pending = Vec::new();
            for operation in operations {
                if !platform.run(&operation, fault).await {
                    pending.push(operation);
                }
            }
            proxy.set(Fault::None);
            platform.retry(pending).await;
            platform
                .check_invariants(&format!("round {round}, {fault:?}"))
                .await;
        }
    }
    let tally = &platform.tally;
    assert!(
        tally.wrongly_invalid.is_empty(),
        "valid credentials called invalid: {:#?}",
        tally.wrongly_invalid
    );
    assert!(
        tally.unavailable >= faults.len(),
        "the faults were not felt: {tally:?}"
    );
    assert!(tally.ok > 0);
    println!(
        "faults: {} answers ok, {} answered 503 and retried, 0 valid credentials called invalid",
        tally.ok, tally.unavailable
    );
    drop(redis);
}

/// A finishing write that lands after linkd gave up on it has spent the code: answering 503
/// would turn the platform's retry into a replay that revokes the new grant. linkd learns the
/// outcome instead, and the platform ends up with a working link.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_spent_by_a_late_write_is_never_answered_503() {
    let (redis, proxy, server, user_id) = behind_a_fault_proxy().await;
    let mut platform = Platform {
        server,
        cookies: String::new(),
        user_id,
        links: BTreeMap::new(),
        tally: Tally::default(),
    };
    // A healthy link first, so that Redis knows the scripts and runs the held one at once.
    let first = Operation::Exchange(platform.new_code());
    assert!(platform.run(&first, &Fault::None).await);
    let code = platform.new_code();
    // Only the script that spends the code and stores the refresh token (the one command of
    // an exchange naming the grant's refresh tokens) lands late.
    proxy.set(Fault::DelayOnce("linkd:rt:{g:", Duration::from_millis(900)));
    let exchange = Operation::Exchange(code);
    let started = Instant::now();
    while !platform.run(&exchange, &Fault::None).await {
        assert!(started.elapsed() < Duration::from_secs(20), "still 503");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(
        platform.tally.wrongly_invalid.is_empty(),
        "the platform's retry was taken for a replay: {:?}",
        platform.tally.wrongly_invalid
    );
    println!("late finishing write: {:?}", platform.tally);
    platform.check_invariants("late finishing write").await;
    drop(redis);
}
