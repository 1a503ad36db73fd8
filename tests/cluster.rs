//! linkd as it runs in production, with every part a real process on loopback: HAProxy
//! terminating TLS (deploy/haproxy/termination.cfg, unchanged but for addresses and
//! certificate) in front of three `linkd serve --plain-http` processes that share one keys
//! directory and one Redis — a primary, its replica and three Sentinels, or a Redis Cluster
//! of three masters. Clients and users are added with the command line, tokens come from the
//! authorization-code flow through HAProxy. Under a steady load of refreshes and userinfo
//! calls through HAProxy the test kills the Redis primary, drains one linkd with SIGTERM and
//! starts it again, and rotates the signing key, then counts what the platform would have
//! seen: no `invalid_grant` and no 401 for valid credentials, every failure a 503 with
//! `Retry-After`, no connection error, a success again within [`RECOVERY`] of each fault, and
//! every refresh token issued before the failover still working.
//!
//! Termination rather than TLS pass-through: HAProxy then sees each request, so its health
//! checks and its choice of instance act per request, linkd's X-Forwarded-For handling is in
//! the path, and it is the configuration `deploy/compose.yaml` runs.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;

use crate::support::haproxy::{self, Running, assert_success, run, tool, write};
use crate::support::linkd::eventually;
use crate::support::redis_sentinel::SentinelDeployment;
use crate::support::redis_server::{RedisCluster, free_port, redis_cli};
use crate::support::{PASSWORD, REDIRECT, cli, encode, flow, https};

const LINKD: &str = env!("CARGO_BIN_EXE_linkd");

/// The secret of the client `acme`, added with `linkd clients add --secret-stdin`.
const SECRET: &str = "cluster-test-client-secret-0123456789";

/// How many users link their account, each holding one refresh token.
const USERS: usize = 3;

/// How many clients send refreshes and userinfo calls at once.
const WORKERS: usize = 4;

/// How soon after each fault a call must succeed again.
const RECOVERY: Duration = Duration::from_secs(15);

/// `--key-reload-secs` of the instances, and the `--reload-interval-secs` of `keys rotate`.
const KEY_RELOAD_SECS: u64 = 1;

/// `keys rotate --min-published-secs`: longer than the reload interval, as it must be.
const MIN_PUBLISHED_SECS: u64 = 2;

/// The `--drain-delay-secs` of the instances: linkd's default, which the shipped HAProxy
/// health checks (every 2 s, down after 2 failures) must notice within.
const DRAIN_DELAY: Duration = Duration::from_secs(5);

/// What one call through HAProxy answered.
#[derive(Debug, Clone)]
enum Answer {
    /// 200; for a refresh, the signing key id of the access token.
    Success { kid: Option<String> },
    /// 503, with or without `Retry-After`.
    Unavailable { retry_after: bool },
    /// Any other status: a refusal of valid credentials, or a balancer error.
    Refused { status: u16, body: String },
    /// No HTTP answer at all: refused or reset connection, failed handshake.
    Connection(String),
}

/// A call and when it was made.
#[derive(Debug, Clone)]
struct Outcome {
    call: &'static str,
    started: Instant,
    finished: Instant,
    answer: Answer,
}

impl Outcome {
    fn is_success(&self) -> bool {
        matches!(self.answer, Answer::Success { .. })
    }
}

/// One linkd process behind HAProxy, on a port of its own that a restart keeps.
struct Instance {
    port: u16,
    process: Option<Running>,
}

/// HAProxy, three linkd and the store URL they share.
struct Deployment {
    _dir: tempfile::TempDir,
    keys: PathBuf,
    /// The certificate HAProxy serves, which the clients trust.
    cert: PathBuf,
    store: String,
    issuer: String,
    balancer: SocketAddr,
    stats_port: u16,
    instances: Vec<Instance>,
    haproxy: Running,
}

impl Deployment {
    /// Starts three linkd on `store` and HAProxy in front of them, and waits until HAProxy
    /// counts all three up.
    async fn start(store: String) -> Self {
        let haproxy_binary = tool("haproxy", "apt-get install haproxy");
        let dir = tempfile::tempdir().unwrap();
        let keys = haproxy::keys_dir(dir.path());
        let balancer_port = free_port();
        let stats_port = free_port();
        let balancer = SocketAddr::from(([127, 0, 0, 1], balancer_port));
        let issuer = format!("https://localhost:{balancer_port}");
        let mut instances = Vec::new();
        for _ in 0..3 {
            instances.push(Instance::start(&store, &keys, &issuer).await);
        }
        let backends: Vec<String> = instances
            .iter()
            .map(|instance| format!("127.0.0.1:{}", instance.port))
            .collect();
        let config = haproxy::config(
            "termination.cfg",
            &keys,
            &balancer.to_string(),
            &[
                ("linkd1:8080", &backends[0]),
                ("linkd2:8080", &backends[1]),
                ("linkd3:8080", &backends[2]),
            ],
        ) + &format!(
            // The servers' states, which the test waits on.
            "\nlisten stats\n    bind 127.0.0.1:{stats_port}\n    mode http\n    stats enable\n    stats uri /stats\n"
        );
        let config = write(dir.path(), "haproxy.cfg", &config);
        let haproxy = Running::spawn(
            Command::new(haproxy_binary)
                .arg("-db")
                .arg("-f")
                .arg(&config),
        );
        let deployment = Self {
            cert: keys.join("tls.crt"),
            _dir: dir,
            keys,
            store,
            issuer,
            balancer,
            stats_port,
            instances,
            haproxy,
        };
        deployment.wait_all_up().await;
        deployment
    }

    /// Starts instance `index` again on its port and waits until it is ready.
    async fn restart_instance(&mut self, index: usize) {
        let port = self.instances[index].port;
        let mut process = spawn_linkd(&self.store, &self.keys, &self.issuer, port);
        assert!(
            ready_or_exited(&mut process, port).await,
            "linkd{} did not start again on port {port}:\n{}",
            index + 1,
            process.log().join("\n")
        );
        self.instances[index].process = Some(process);
    }

    /// HAProxy's view of each instance: `UP`, `DOWN`, `UP 1/2`…
    async fn server_states(&self) -> Vec<String> {
        let Some((200, csv)) = plain_get(self.stats_port, "/stats;csv").await else {
            return Vec::new();
        };
        csv.lines()
            .filter(|line| line.starts_with("linkd,linkd"))
            .map(|line| line.split(',').nth(17).unwrap_or_default().to_owned())
            .collect()
    }

    async fn wait_all_up(&self) {
        eventually(
            Duration::from_secs(60),
            "HAProxy counting every linkd up",
            || async {
                let states = self.server_states().await;
                (states.len() == 3 && states.iter().all(|state| state == "UP")).then_some(())
            },
        )
        .await;
    }

    fn target(&self) -> flow::Target<'_> {
        flow::Target {
            address: self.balancer,
            cert: self.cert(),
        }
    }

    fn cert(&self) -> &Path {
        &self.cert
    }

    /// The key ids instance `index` publishes (none while it does not answer).
    async fn jwks_kids(&self, index: usize) -> Vec<String> {
        let Some((200, body)) =
            plain_get(self.instances[index].port, "/.well-known/jwks.json").await
        else {
            return Vec::new();
        };
        let jwks: serde_json::Value = serde_json::from_str(&body).unwrap();
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|key| key["kid"].as_str().map(str::to_owned))
            .collect()
    }

    /// `linkd --keys-dir … keys <args>`.
    fn keys_command(&self, args: &[&str]) -> std::process::Output {
        run(Command::new(LINKD)
            .env_remove("LINKD_KEYS_DIR")
            .arg("--keys-dir")
            .arg(&self.keys)
            .arg("keys")
            .args(args))
    }

    /// Adds the client and the users with the command line, links each user's account
    /// through HAProxy and returns their refresh tokens.
    async fn provision(&self) -> Vec<String> {
        cli::run_ok(
            &self.store,
            &[
                "clients",
                "add",
                "--id",
                "acme",
                "--project-id",
                "acme-project",
                "--secret-stdin",
            ],
            Some(&format!("{SECRET}\n")),
        );
        let request = format!(
            "client_id=acme&redirect_uri={}&state=st&response_type=code",
            encode(REDIRECT)
        );
        let mut refresh_tokens = Vec::new();
        for user in 0..USERS {
            let email = format!("user{user}@example.com");
            cli::run_ok(
                &self.store,
                &["users", "add", "--email", &email, "--password-stdin"],
                Some(&format!("{PASSWORD}\n")),
            );
            let linked = flow::link_over_http(&self.target(), &request, &email, PASSWORD).await;
            let code = flow::redirect_query(&linked)["code"].clone();
            let tokens = flow::redeem(&self.target(), &code, REDIRECT, SECRET).await;
            assert_eq!(tokens.status, 200, "{}", tokens.text());
            refresh_tokens.push(tokens.json()["refresh_token"].as_str().unwrap().to_owned());
        }
        refresh_tokens
    }

    /// The log lines of every process that tell of a failure, and the last few, for a
    /// failure message.
    fn logs(&self) -> String {
        let telling = |line: &&String| {
            line.contains("\"status\":5")
                || line.contains("\"status\":4")
                || line.contains("keyring changed")
                || line.contains(" 401 ")
                || line.contains("\"level\":\"WARN\"")
                || line.contains("\"level\":\"ERROR\"")
                || line.contains("\" 50")
                || line.contains(" 503 ")
        };
        let excerpt = |log: Vec<String>| {
            let failures: Vec<&String> = log.iter().filter(telling).take(40).collect();
            let tail = &log[log.len().saturating_sub(5)..];
            format!(
                "{}\n…\n{}\n",
                failures
                    .iter()
                    .map(|line| line.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                tail.join("\n")
            )
        };
        let mut text = String::new();
        for (index, instance) in self.instances.iter().enumerate() {
            if let Some(process) = &instance.process {
                text += &format!("linkd{}:\n{}", index + 1, excerpt(process.log()));
            }
        }
        text + &format!("HAProxy:\n{}", excerpt(self.haproxy.log()))
    }

    /// SIGTERMs instance `index`, checks that it drains as documented while HAProxy takes it
    /// out of rotation, starts it again and waits until HAProxy sends it traffic. Returns
    /// how long after the signal HAProxy counted it down and how long it took to exit.
    async fn drain_and_restart(&mut self, index: usize) -> (Duration, Duration) {
        let port = self.instances[index].port;
        let signalled = Instant::now();
        self.instances[index]
            .process
            .as_ref()
            .unwrap()
            .signal("TERM");
        let mut not_ready = None;
        let mut taken_out = None;
        let exit = loop {
            if let Some(exit) = self.instances[index].process.as_mut().unwrap().try_wait() {
                break exit;
            }
            assert!(
                signalled.elapsed() < DRAIN_DELAY + Duration::from_secs(30),
                "linkd{} did not exit after SIGTERM:\n{}",
                index + 1,
                self.logs()
            );
            if not_ready.is_none() && signalled.elapsed() < DRAIN_DELAY {
                // While draining it reports not-ready and still serves.
                if plain_get(port, "/readyz").await.map(|(status, _)| status) == Some(503) {
                    let seen = signalled.elapsed();
                    let healthz = plain_get(port, "/healthz").await.map(|(status, _)| status);
                    if signalled.elapsed() < DRAIN_DELAY {
                        assert_eq!(healthz, Some(200), "serving while draining");
                    }
                    not_ready = Some(seen);
                }
            }
            if taken_out.is_none()
                && self
                    .server_states()
                    .await
                    .get(index)
                    .is_some_and(|state| state.starts_with("DOWN"))
            {
                taken_out = Some(signalled.elapsed());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let exited = signalled.elapsed();
        assert!(exit.success(), "linkd{} exited {exit}:\n{}", index + 1, {
            let log = self.instances[index].process.as_ref().unwrap().log();
            log[log.len().saturating_sub(20)..].join("\n")
        });
        let not_ready = not_ready.unwrap_or_else(|| panic!("/readyz never answered 503"));
        assert!(not_ready < DRAIN_DELAY, "not ready after {not_ready:?}");
        assert!(
            exited >= DRAIN_DELAY,
            "exited {exited:?} after SIGTERM, before the drain delay"
        );
        let taken_out = taken_out.unwrap_or_else(|| {
            panic!(
                "HAProxy did not count linkd{} down before it exited:\n{}",
                index + 1,
                self.logs()
            )
        });
        self.restart_instance(index).await;
        self.wait_all_up().await;
        (taken_out, exited)
    }
}

impl Instance {
    /// Starts a linkd on a free port. Another test may take the port between the moment it
    /// is picked and linkd binding it (linkd then exits, and the other process answers on
    /// the port): another port is tried.
    async fn start(store: &str, keys: &Path, issuer: &str) -> Self {
        for _ in 0..5 {
            let port = free_port();
            let mut process = spawn_linkd(store, keys, issuer, port);
            if ready_or_exited(&mut process, port).await {
                return Self {
                    port,
                    process: Some(process),
                };
            }
        }
        panic!("linkd did not start on any of 5 free ports");
    }
}

/// `linkd serve` on 127.0.0.1:`port` behind the balancer, on the shared store and keys.
fn spawn_linkd(store: &str, keys: &Path, issuer: &str, port: u16) -> Running {
    Running::spawn(
        Command::new(LINKD)
            .env_remove("LINKD_STORE")
            .env_remove("LINKD_KEYS_DIR")
            .arg("--store")
            .arg(store)
            .arg("--keys-dir")
            .arg(keys)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--plain-http", "--trusted-proxies", "127.0.0.1"])
            .args(["--issuer", issuer])
            .args(["--key-reload-secs", &KEY_RELOAD_SECS.to_string()])
            .args(["--drain-delay-secs", &DRAIN_DELAY.as_secs().to_string()])
            .args(["--log-format", "json"]),
    )
}

/// Waits until `process` answers /readyz with 200 on `port` (true) or exits (false).
async fn ready_or_exited(process: &mut Running, port: u16) -> bool {
    let started = Instant::now();
    loop {
        if process.try_wait().is_some() {
            return false;
        }
        // The answer may come from another process that holds the port: ours must also have
        // said it listens there.
        let listening = format!("\"address\":\"127.0.0.1:{port}\"");
        if process.log().iter().any(|line| line.contains(&listening))
            && plain_get(port, "/readyz").await.map(|(status, _)| status) == Some(200)
        {
            return true;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "linkd not ready within 60 s:\n{}",
            process.log().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `GET path` over plain HTTP/1.1 to 127.0.0.1:`port`: the status and body, `None` when
/// the connection fails.
async fn plain_get(port: u16, path: &str) -> Option<(u16, String)> {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .ok()?;
    tokio::spawn(connection);
    let request = hyper::Request::builder()
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.ok()?;
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.ok()?.to_bytes();
    Some((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The `kid` in the header of a JWS.
fn kid(token: &str) -> Option<String> {
    let header = token.split('.').next()?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .ok()?;
    let header: serde_json::Value = serde_json::from_slice(&json).ok()?;
    header["kid"].as_str().map(str::to_owned)
}

/// Sends `request` through HAProxy and classifies the answer; the access token of a
/// successful refresh comes back with it.
async fn call(
    balancer: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    name: &'static str,
    request: hyper::Request<Full<Bytes>>,
) -> (Outcome, Option<String>) {
    let started = Instant::now();
    let reply = https::try_send(balancer, config, request).await;
    let finished = Instant::now();
    let mut access_token = None;
    let answer = match reply {
        Err(error) => Answer::Connection(error),
        Ok(reply) if reply.status == 200 => {
            access_token = (name == "refresh").then(|| {
                reply.json()["access_token"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            });
            Answer::Success {
                kid: access_token.as_deref().and_then(kid),
            }
        }
        Ok(reply) if reply.status == 503 => Answer::Unavailable {
            retry_after: reply.header("retry-after").is_some(),
        },
        Ok(reply) => Answer::Refused {
            status: reply.status,
            body: reply.text(),
        },
    };
    (
        Outcome {
            call: name,
            started,
            finished,
            answer,
        },
        access_token,
    )
}

/// The platform's steady traffic: refresh with one of `refresh_tokens`, then userinfo with
/// the access token it returned, round and round until `stop`.
async fn load(
    balancer: SocketAddr,
    cert: PathBuf,
    refresh_tokens: Arc<Vec<String>>,
    first: usize,
    stop: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
) {
    let config = https::client_config(&cert, https::Offer::Both);
    let mut round = first;
    while !stop.load(Ordering::Relaxed) {
        let refresh_token = &refresh_tokens[round % refresh_tokens.len()];
        round += 1;
        let form = serde_urlencoded::to_string([
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
            ("client_id", "acme"),
            ("client_secret", SECRET),
        ])
        .unwrap();
        let request = https::request("POST", "/token")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(Full::new(Bytes::from(form)))
            .unwrap();
        let (outcome, access_token) = call(balancer, config.clone(), "refresh", request).await;
        outcomes.lock().unwrap().push(outcome);
        if let Some(access_token) = access_token {
            let request = https::request("GET", "/userinfo")
                .header("authorization", format!("Bearer {access_token}"))
                .body(Full::new(Bytes::new()))
                .unwrap();
            let (outcome, _) = call(balancer, config.clone(), "userinfo", request).await;
            outcomes.lock().unwrap().push(outcome);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The load running against a deployment, and the faults injected meanwhile.
struct Traffic {
    stop: Arc<AtomicBool>,
    outcomes: Arc<Mutex<Vec<Outcome>>>,
    workers: Vec<tokio::task::JoinHandle<()>>,
    faults: Vec<(&'static str, Instant)>,
}

impl Traffic {
    fn start(deployment: &Deployment, refresh_tokens: &[String]) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let outcomes = Arc::new(Mutex::new(Vec::new()));
        let refresh_tokens = Arc::new(refresh_tokens.to_vec());
        let workers = (0..WORKERS)
            .map(|first| {
                tokio::spawn(load(
                    deployment.balancer,
                    deployment.cert().to_owned(),
                    Arc::clone(&refresh_tokens),
                    first,
                    Arc::clone(&stop),
                    Arc::clone(&outcomes),
                ))
            })
            .collect();
        Self {
            stop,
            outcomes,
            workers,
            faults: Vec::new(),
        }
    }

    fn fault(&mut self, name: &'static str) {
        self.faults.push((name, Instant::now()));
    }

    fn outcomes(&self) -> Vec<Outcome> {
        self.outcomes.lock().unwrap().clone()
    }

    /// Waits until `count` calls that started after the last fault succeeded (at most
    /// [`RECOVERY`] plus slack: the verdict on recovery comes from the outcomes).
    async fn wait_for_successes(&self, count: usize) {
        let since = self.faults.last().map(|(_, at)| *at);
        eventually(
            RECOVERY + Duration::from_secs(15),
            "calls succeeding",
            || {
                let done = self
                    .outcomes()
                    .iter()
                    .filter(|outcome| {
                        outcome.is_success() && since.is_none_or(|at| outcome.started > at)
                    })
                    .count()
                    >= count;
                async move { done.then_some(()) }
            },
        )
        .await;
    }

    /// Waits until a refresh returned an access token signed with a key other than `kid`.
    async fn wait_for_new_kid(&self, old: &str) -> String {
        eventually(
            Duration::from_secs(30),
            "tokens signed with the new key",
            || {
                let found =
                    self.outcomes()
                        .iter()
                        .rev()
                        .find_map(|outcome| match &outcome.answer {
                            Answer::Success { kid: Some(kid) } if kid != old => Some(kid.clone()),
                            _ => None,
                        });
                async move { found }
            },
        )
        .await
    }

    async fn stop(self) -> (Vec<Outcome>, Vec<(&'static str, Instant)>) {
        self.stop.store(true, Ordering::Relaxed);
        for worker in self.workers {
            worker.await.unwrap();
        }
        let outcomes = self.outcomes.lock().unwrap().clone();
        (outcomes, self.faults)
    }
}

/// What the calls between one fault and the next answered.
#[derive(Debug, Default)]
struct FaultReport {
    calls: usize,
    unavailable_with_retry_after: usize,
    unavailable_without_retry_after: usize,
    refused: Vec<(u16, String)>,
    connection_errors: Vec<String>,
    /// From the fault to the end of the first success after the last failure.
    recovery: Option<Duration>,
}

/// The calls answered from `from` on (until `until`): a call in flight when a fault
/// struck counts towards that fault.
fn report(outcomes: &[Outcome], from: Instant, until: Option<Instant>) -> FaultReport {
    let window: Vec<&Outcome> = outcomes
        .iter()
        .filter(|outcome| {
            outcome.finished >= from && until.is_none_or(|until| outcome.finished < until)
        })
        .collect();
    let mut report = FaultReport {
        calls: window.len(),
        ..FaultReport::default()
    };
    let mut last_failure = None;
    for outcome in &window {
        match &outcome.answer {
            Answer::Success { .. } => continue,
            Answer::Unavailable { retry_after: true } => report.unavailable_with_retry_after += 1,
            Answer::Unavailable { retry_after: false } => {
                report.unavailable_without_retry_after += 1;
            }
            Answer::Refused { status, body } => {
                report
                    .refused
                    .push((*status, format!("{}: {body}", outcome.call)));
            }
            Answer::Connection(error) => {
                report
                    .connection_errors
                    .push(format!("{}: {error}", outcome.call));
            }
        }
        last_failure =
            Some(last_failure.map_or(outcome.started, |last: Instant| last.max(outcome.started)));
    }
    // A success that started after the last failure, or any success when nothing failed.
    report.recovery = outcomes
        .iter()
        .filter(|outcome| outcome.is_success() && outcome.started >= last_failure.unwrap_or(from))
        .map(|outcome| outcome.finished)
        .min()
        .map(|finished| finished - from);
    report
}

/// Checks every fault's window and prints the numbers deploy/README.md quotes.
fn judge(name: &str, deployment: &Deployment, outcomes: &[Outcome], faults: &[(&str, Instant)]) {
    eprintln!(
        "{name}: {} calls, {} successes",
        outcomes.len(),
        outcomes
            .iter()
            .filter(|outcome| outcome.is_success())
            .count()
    );
    let mut problems = Vec::new();
    // Before the first fault, nothing may fail at all.
    let before = report(
        outcomes,
        outcomes[0].started,
        faults.first().map(|(_, at)| *at),
    );
    if before.unavailable_with_retry_after + before.unavailable_without_retry_after > 0
        || !before.refused.is_empty()
        || !before.connection_errors.is_empty()
    {
        problems.push(format!("before any fault: {before:?}"));
    }
    for (at, (fault, started)) in faults.iter().enumerate() {
        let until = faults.get(at + 1).map(|(_, next)| *next);
        let window = report(outcomes, *started, until);
        eprintln!(
            "{name}: {fault}: {} calls, {} × 503 with Retry-After, {} × 503 without, {} refused, \
             {} connection errors, success again after {:?}",
            window.calls,
            window.unavailable_with_retry_after,
            window.unavailable_without_retry_after,
            window.refused.len(),
            window.connection_errors.len(),
            window.recovery,
        );
        if window.unavailable_without_retry_after > 0 {
            problems.push(format!(
                "{fault}: {} × 503 without Retry-After",
                window.unavailable_without_retry_after
            ));
        }
        if !window.refused.is_empty() {
            problems.push(format!("{fault}: refused {:?}", window.refused));
        }
        if !window.connection_errors.is_empty() {
            problems.push(format!(
                "{fault}: connection errors {:?}",
                window.connection_errors
            ));
        }
        if window.recovery.is_none_or(|recovery| recovery > RECOVERY) {
            problems.push(format!(
                "{fault}: no success within {RECOVERY:?} (after {:?})",
                window.recovery
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{name}:\n{}\n{}",
        problems.join("\n"),
        deployment.logs()
    );
}

/// Refreshes with every token through HAProxy: each must still work (a 503 while the store
/// settles is retried; `invalid_grant` fails the test at once).
async fn assert_refresh_tokens_work(deployment: &Deployment, refresh_tokens: &[String]) {
    let config = https::client_config(deployment.cert(), https::Offer::Both);
    for refresh_token in refresh_tokens {
        eventually(RECOVERY, "the refresh token working", || {
            let config = config.clone();
            async move {
                let form = serde_urlencoded::to_string([
                    ("grant_type", "refresh_token"),
                    ("refresh_token", refresh_token.as_str()),
                    ("client_id", "acme"),
                    ("client_secret", SECRET),
                ])
                .unwrap();
                let request = https::request("POST", "/token")
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(Full::new(Bytes::from(form)))
                    .unwrap();
                let (outcome, _) = call(deployment.balancer, config, "refresh", request).await;
                match outcome.answer {
                    Answer::Success { .. } => Some(()),
                    Answer::Unavailable { .. } | Answer::Connection(_) => None,
                    Answer::Refused { status, body } => {
                        panic!("a refresh token issued before the faults: {status} {body}")
                    }
                }
            }
        })
        .await;
    }
}

/// `linkd keys generate`, then `keys rotate` as soon as the next key has been published
/// for `--min-published-secs`, then SIGHUP to the first instance only: the others pick the
/// rotation up within `--key-reload-secs`, so for a moment instances sign with different
/// keys and each must verify the other's tokens.
async fn rotate_keys(deployment: &Deployment, traffic: &mut Traffic) {
    let old = traffic
        .outcomes()
        .iter()
        .rev()
        .find_map(|outcome| match &outcome.answer {
            Answer::Success { kid: Some(kid) } => Some(kid.clone()),
            _ => None,
        })
        .unwrap();
    let published_before = deployment.jwks_kids(0).await;
    traffic.fault("keys generate");
    assert_success(
        "linkd keys generate",
        &deployment.keys_command(&["generate"]),
    );
    // `keys rotate` counts the next key's age in whole seconds, so with a minimum this close
    // to the reload interval it may allow the rotation up to a second early, before every
    // instance published the key; an operator checks the JWKS, and so does the test.
    for index in 0..deployment.instances.len() {
        eventually(
            Duration::from_secs(30),
            "every instance publishing the next key",
            || async {
                let kids = deployment.jwks_kids(index).await;
                kids.iter()
                    .any(|kid| !published_before.contains(kid))
                    .then_some(())
            },
        )
        .await;
    }
    let min_published = MIN_PUBLISHED_SECS.to_string();
    let reload = KEY_RELOAD_SECS.to_string();
    let rotate = [
        "rotate",
        "--min-published-secs",
        &min_published,
        "--reload-interval-secs",
        &reload,
    ];
    // Refused (exit 2) until the next key is old enough.
    eventually(Duration::from_secs(30), "keys rotate accepted", || {
        let output = deployment.keys_command(&rotate);
        let accepted = output.status.success();
        assert!(
            accepted || output.status.code() == Some(2),
            "linkd keys rotate: {}",
            haproxy::text(&output.stderr)
        );
        async move { accepted.then_some(()) }
    })
    .await;
    traffic.fault("keys rotate");
    deployment.instances[0]
        .process
        .as_ref()
        .unwrap()
        .signal("HUP");
    let new = traffic.wait_for_new_kid(&old).await;
    assert_ne!(new, old);
    // Time for every instance to reload, under load, before the verdict.
    tokio::time::sleep(Duration::from_secs(KEY_RELOAD_SECS * 2)).await;
    traffic.wait_for_successes(20).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_behind_haproxy_ride_out_a_redis_failover_a_drain_and_a_key_rotation() {
    let mut redis = SentinelDeployment::start();
    let mut deployment = Deployment::start(redis.url()).await;
    let refresh_tokens = deployment.provision().await;
    let mut traffic = Traffic::start(&deployment, &refresh_tokens);
    traffic.wait_for_successes(20).await;

    // Replication is asynchronous and linkd does not WAIT on the hot path: a failover loses
    // what the primary acknowledged in about the last second before it died (AOF everysec,
    // replica link up). The refresh tokens were minted before the load started and
    // refreshes mint none, so waiting for the replica here makes every one of them part of
    // what the new primary holds; the test then proves none is lost by the failover itself.
    let acknowledged = redis_cli(redis.primary().port(), &["WAIT", "1", "5000"]);
    assert_eq!(acknowledged.as_deref(), Some("1"), "replica acknowledged");
    traffic.fault("Redis primary killed");
    redis.kill_primary();
    tokio::task::block_in_place(|| redis.wait_for_failover(Duration::from_secs(30)));
    traffic.wait_for_successes(20).await;
    assert_refresh_tokens_work(&deployment, &refresh_tokens).await;

    traffic.fault("linkd2 SIGTERM, drained and started again");
    let (taken_out, exited) = deployment.drain_and_restart(1).await;
    eprintln!("sentinel: linkd2 out of HAProxy after {taken_out:?}, exited after {exited:?}");
    traffic.wait_for_successes(20).await;

    rotate_keys(&deployment, &mut traffic).await;

    let (outcomes, faults) = traffic.stop().await;
    judge("sentinel", &deployment, &outcomes, &faults);
    assert_refresh_tokens_work(&deployment, &refresh_tokens).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_on_a_redis_cluster_ride_out_a_drain_and_a_key_rotation() {
    let cluster = RedisCluster::start(3);
    let mut deployment = Deployment::start(cluster.url()).await;
    let refresh_tokens = deployment.provision().await;
    let mut traffic = Traffic::start(&deployment, &refresh_tokens);
    traffic.wait_for_successes(20).await;

    traffic.fault("linkd2 SIGTERM, drained and started again");
    let (taken_out, exited) = deployment.drain_and_restart(1).await;
    eprintln!("cluster: linkd2 out of HAProxy after {taken_out:?}, exited after {exited:?}");
    traffic.wait_for_successes(20).await;

    rotate_keys(&deployment, &mut traffic).await;

    let (outcomes, faults) = traffic.stop().await;
    judge("cluster", &deployment, &outcomes, &faults);
    assert_refresh_tokens_work(&deployment, &refresh_tokens).await;
}
