//! Load test of `POST /v1/devices:sync`: a real linkd over TLS and HTTP/2, on the embedded
//! store and on a real Redis, called by service-account credentials of both kinds (an access
//! token from the JWT-bearer grant, and a JWT the account signs itself) for agent users drawn
//! at random from a populated graph. Reports requests per second and latency percentiles; see
//! `docs/perf.md`.
//!
//! `cargo bench --bench devicegraph_load` runs every scenario for `LINKD_LOAD_SECS` seconds
//! (default 10). Under `cargo test` it runs each for a fraction of a second and checks that
//! every answer was a 200, so the load test cannot rot unnoticed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

// linkd and Redis start as in the integration tests, whose other helpers go unused here.
#[allow(dead_code, unused_macros)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use linkd::store::ClientSettings;
use serde_json::{Value, json};
use support::linkd::TestServer;
use support::{https, provision, redis_server};

/// Agent users in the graph, each with `DEVICES_PER_USER` devices.
const AGENT_USERS: usize = 1000;
const DEVICES_PER_USER: usize = 10;
/// TLS connections, each carrying `STREAMS_PER_CONNECTION` concurrent requests.
const CONNECTIONS: usize = 4;
const STREAMS_PER_CONNECTION: usize = 8;

fn device(index: usize) -> Value {
    json!({
        "id": format!("device-{index}"),
        "type": "action.devices.types.LIGHT",
        "traits": ["action.devices.traits.OnOff", "action.devices.traits.Brightness"],
        "name": {"name": format!("Lamp {index}"), "nicknames": ["reading lamp"],
                 "defaultNames": ["Acme Lamp"]},
        "willReportState": true,
        "roomHint": "living room",
        "deviceInfo": {"manufacturer": "Acme", "model": "L1", "hwVersion": "1", "swVersion": "2.1"},
        "attributes": {"commandOnlyOnOff": false},
        "customData": {"serial": format!("SN{index:08}")},
    })
}

fn sign(key: &Value, audience: &str, scope: Option<&str>, now: i64) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    header.kid = Some(key["private_key_id"].as_str().unwrap().to_owned());
    let mut claims = json!({
        "iss": key["client_email"], "sub": key["client_email"], "aud": audience,
        "iat": now, "exp": now + 3600,
    });
    if let Some(scope) = scope {
        claims["scope"] = json!(scope);
    }
    let signer =
        jsonwebtoken::EncodingKey::from_rsa_pem(key["private_key"].as_str().unwrap().as_bytes())
            .unwrap();
    jsonwebtoken::encode(&header, &claims, &signer).unwrap()
}

/// A populated server and the two credentials.
struct Target {
    server: TestServer,
    access_token: String,
    self_signed: String,
    _redis: Option<redis_server::RedisServer>,
}

async fn target(redis: bool) -> Target {
    let (server, redis) = TestServer::start_on_store(redis, |settings| {
        settings.log_filter = "warn".to_owned();
    })
    .await;
    let app = server.server.app();
    provision::acme(app, None, None, ClientSettings::default()).await;
    let scope = app.devicegraph_scope();
    let (_, key) = linkd::service_accounts::create(
        &*app.store,
        "acme",
        "load",
        &app.issuer,
        &app.issuer,
        app.clock.now(),
    )
    .await
    .unwrap();
    let devices: Vec<Value> = (0..DEVICES_PER_USER).map(device).collect();
    for user in 0..AGENT_USERS {
        app.store
            .put_devices("acme-project", &format!("user-{user}"), &devices)
            .await
            .unwrap();
    }
    let now = app.clock.now();
    let assertion = sign(&key, &app.url("/token"), Some(&scope), now);
    let reply = https::send(
        server.address,
        https::client_config(&server.cert, https::Offer::Both),
        https::request("POST", "/token")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(
                serde_urlencoded::to_string([
                    ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                    ("assertion", assertion.as_str()),
                ])
                .unwrap(),
            )))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let access_token = reply.json()["access_token"].as_str().unwrap().to_owned();
    let self_signed = sign(&key, app.devicegraph_base_url(), None, now);
    Target {
        server,
        access_token,
        self_signed,
        _redis: redis,
    }
}

/// What a run measured.
struct Outcome {
    requests: u64,
    failures: u64,
    elapsed: Duration,
    latencies_us: Vec<u64>,
}

impl Outcome {
    fn percentile(&self, fraction: f64) -> f64 {
        let index = ((self.latencies_us.len() as f64 - 1.0) * fraction).round() as usize;
        self.latencies_us[index] as f64 / 1000.0
    }
}

async fn run(target: &Target, bearer: &str, duration: Duration) -> Outcome {
    let failures = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + duration;
    let mut tasks = Vec::new();
    for connection in 0..CONNECTIONS {
        let tls = https::connect_tls(
            target.server.address,
            https::client_config(&target.server.cert, https::Offer::Both),
        )
        .await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (sender, driver) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        tokio::spawn(driver);
        for stream in 0..STREAMS_PER_CONNECTION {
            let mut sender = sender.clone();
            let bearer = format!("Bearer {bearer}");
            let failures = Arc::clone(&failures);
            // A fixed, distinct walk through the agent users per stream.
            let mut user = (connection * STREAMS_PER_CONNECTION + stream) * 7919;
            tasks.push(tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    user = (user + 104_729) % AGENT_USERS;
                    let body = json!({"requestId": "load", "agentUserId": format!("user-{user}")});
                    let request = Request::post("https://localhost/v1/devices:sync")
                        .header("authorization", &bearer)
                        .header("content-type", "application/json")
                        .body(Full::new(Bytes::from(body.to_string())))
                        .unwrap();
                    let started = Instant::now();
                    sender.ready().await.unwrap();
                    let response = sender.send_request(request).await.unwrap();
                    let ok = response.status() == 200;
                    let body = response.into_body().collect().await.unwrap().to_bytes();
                    latencies.push(started.elapsed().as_micros() as u64);
                    if !ok || body.len() < 100 {
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
                latencies
            }));
        }
    }
    let started = Instant::now();
    let mut latencies_us = Vec::new();
    for task in tasks {
        latencies_us.extend(task.await.unwrap());
    }
    latencies_us.sort_unstable();
    Outcome {
        requests: latencies_us.len() as u64,
        failures: failures.load(Ordering::Relaxed),
        elapsed: started.elapsed().max(duration),
        latencies_us,
    }
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this without it.
    let measuring = std::env::args().any(|arg| arg == "--bench");
    let duration = if measuring {
        Duration::from_secs(
            std::env::var("LINKD_LOAD_SECS")
                .ok()
                .and_then(|secs| secs.parse().ok())
                .unwrap_or(10),
        )
    } else {
        Duration::from_millis(300)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        println!(
            "devices:sync, {AGENT_USERS} agent users × {DEVICES_PER_USER} devices, \
             {CONNECTIONS} h2 connections × {STREAMS_PER_CONNECTION} streams, {duration:?} each"
        );
        println!("| store | credential | requests/s | p50 ms | p99 ms |");
        println!("|---|---|---|---|---|");
        for redis in [false, true] {
            let target = target(redis).await;
            let store = if redis { "Redis" } else { "SQLite" };
            // A short warm-up fills connection pools and caches.
            run(&target, &target.access_token, Duration::from_millis(200)).await;
            for (credential, bearer) in [
                ("access token", &target.access_token),
                ("self-signed JWT", &target.self_signed),
            ] {
                let outcome = run(&target, bearer, duration).await;
                assert_eq!(
                    outcome.failures, 0,
                    "{store}, {credential}: failed requests"
                );
                assert!(outcome.requests > 0);
                println!(
                    "| {store} | {credential} | {:.0} | {:.2} | {:.2} |",
                    outcome.requests as f64 / outcome.elapsed.as_secs_f64(),
                    outcome.percentile(0.5),
                    outcome.percentile(0.99),
                );
            }
        }
    });
}
