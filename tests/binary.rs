//! The real `linkd` binary: serving, signals, configuration errors and live key rotation
//! through the CLI against a running server.

use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::linkd::eventually;
use crate::support::{cli, flow, https};

const LINKD: &str = env!("CARGO_BIN_EXE_linkd");

/// A `linkd serve` child process and the address it reported.
struct Served {
    child: Child,
    address: SocketAddr,
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `linkd serve` on a free port; keys are checked for changes every second unless
/// `extra` sets `--key-reload-secs`, and logs are JSON unless it sets `--log-format`.
fn serve(dir: &Path, extra: &[&str]) -> Served {
    let reload: &[&str] = if extra.contains(&"--key-reload-secs") {
        &[]
    } else {
        &["--key-reload-secs", "1"]
    };
    let format: &[&str] = if extra.contains(&"--log-format") {
        &[]
    } else {
        &["--log-format", "json"]
    };
    let mut child = Command::new(LINKD)
        .args(["--store", &dir.join("linkd.db").display().to_string()])
        .args(["--keys-dir", &dir.join("keys").display().to_string()])
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(format)
        .args(reload)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (address_sender, address_receiver) = std::sync::mpsc::channel();
    std::thread::spawn({
        let log = std::sync::Arc::clone(&log);
        move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<serde_json::Value>(&line)
                    && let Some(address) = event["address"].as_str()
                {
                    let _ = address_sender.send(address.parse::<SocketAddr>().unwrap());
                } else if line.contains("linkd serving")
                    && let Some(address) = line
                        .split_whitespace()
                        .find_map(|field| field.strip_prefix("address="))
                {
                    let _ = address_sender.send(address.parse::<SocketAddr>().unwrap());
                }
                log.lock().unwrap().push(line);
            }
        }
    });
    let address = address_receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| {
            panic!(
                "linkd did not report its address: {:?}",
                log.lock().unwrap()
            )
        });
    Served {
        child,
        address,
        log,
    }
}

fn cert(dir: &Path) -> PathBuf {
    dir.join("keys").join("dev-tls-cert.pem")
}

fn linkd_keys(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(LINKD)
        .args([
            "--keys-dir",
            &dir.join("keys").display().to_string(),
            "keys",
        ])
        .args(args)
        .output()
        .unwrap()
}

async fn jwks_kids(served: &Served, dir: &Path) -> Vec<String> {
    let reply = https::get(served.address, &cert(dir), "/.well-known/jwks.json").await;
    assert_eq!(reply.status, 200);
    reply.json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn serve_answers_over_tls_and_exits_zero_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let mut served = serve(dir.path(), &[]);
    let reply = https::get(served.address, &cert(dir.path()), "/healthz").await;
    assert_eq!(reply.status, 200);
    let log = served.log.lock().unwrap().join("\n");
    assert!(log.contains("self-signed development certificate"), "{log}");

    let status = Command::new("kill")
        .args(["-TERM", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // For the drain delay (5 s by default) the server reports not-ready and still serves.
    let address = served.address;
    eventually(Duration::from_secs(3), "not ready after SIGTERM", || {
        let cert = cert(dir.path());
        async move { (https::get(address, &cert, "/readyz").await.status == 503).then_some(()) }
    })
    .await;
    assert_eq!(
        https::get(address, &cert(dir.path()), "/healthz")
            .await
            .status,
        200
    );
    let exit = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        loop {
            if let Some(exit) = served.child.try_wait().unwrap() {
                return exit;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap();
    assert_eq!(exit.code(), Some(0));
}

#[tokio::test]
async fn refused_authorization_requests_are_logged_with_their_reason_and_request_id() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &[]);
    let reply = https::send(
        served.address,
        https::client_config(&cert(dir.path()), https::Offer::Both),
        https::request("GET", "/authorize?response_type=code&state=s3cr3t-state")
            .header("x-request-id", "refusal-1")
            .body(http_body_util::Full::new(bytes::Bytes::new()))
            .unwrap(),
    )
    .await;
    assert_eq!(reply.status, 400);
    let refusal = eventually(Duration::from_secs(5), "the refusal is logged", || {
        let log = std::sync::Arc::clone(&served.log);
        async move {
            log.lock()
                .unwrap()
                .iter()
                .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
                .find(|event| {
                    event["message"]
                        .as_str()
                        .is_some_and(|message| message.starts_with("authorization request refused"))
                })
        }
    })
    .await;
    assert_eq!(refusal["reason"], "The request does not name a client.");
    assert_eq!(refusal["request_id"], "refusal-1", "{refusal}");
    let served_line = served
        .log
        .lock()
        .unwrap()
        .iter()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["message"] == "served" && event["route"] == "authorize")
        .expect("the request is logged");
    assert_eq!(served_line["request_id"], "refusal-1", "{served_line}");
    let log = served.log.lock().unwrap().join("\n");
    assert!(!log.contains("s3cr3t-state"), "the query reached the log");
}

#[tokio::test]
async fn generated_key_appears_in_the_running_servers_jwks() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &[]);
    let before = jwks_kids(&served, dir.path()).await;
    assert_eq!(
        before.len(),
        1,
        "a first serve creates exactly one current key"
    );

    let generated = linkd_keys(dir.path(), &["generate"]);
    assert!(generated.status.success(), "{generated:?}");

    let after = eventually(Duration::from_secs(15), "JWKS grows", || {
        let served = &served;
        let dir = dir.path();
        async move {
            let kids = jwks_kids(served, dir).await;
            (kids.len() == 2).then_some(kids)
        }
    })
    .await;
    assert!(after.contains(&before[0]));
}

#[tokio::test]
async fn sighup_reloads_the_keyring_at_once() {
    let dir = tempfile::tempdir().unwrap();
    // Periodic checks an hour apart: only the signal can make the new key appear in time.
    let mut served = serve(dir.path(), &["--key-reload-secs", "3600"]);
    assert_eq!(jwks_kids(&served, dir.path()).await.len(), 1);
    let generated = linkd_keys(dir.path(), &["generate"]);
    assert!(generated.status.success(), "{generated:?}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        jwks_kids(&served, dir.path()).await.len(),
        1,
        "no reload without the signal"
    );

    let status = Command::new("kill")
        .args(["-HUP", &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    eventually(Duration::from_secs(15), "JWKS grows after SIGHUP", || {
        let served = &served;
        let dir = dir.path();
        async move { (jwks_kids(served, dir).await.len() == 2).then_some(()) }
    })
    .await;
    assert!(
        served.child.try_wait().unwrap().is_none(),
        "SIGHUP reloads; it does not stop linkd"
    );
}

#[tokio::test]
async fn configuration_errors_are_all_reported_with_exit_code_2() {
    let output = Command::new(LINKD)
        .args([
            "serve",
            "--listen",
            "nowhere",
            "--issuer",
            "ftp://example.com",
            "--idle-timeout-secs",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for flag in ["--listen", "--issuer", "--idle-timeout-secs"] {
        assert!(stderr.contains(flag), "{flag} not reported: {stderr}");
    }
}

#[test]
fn check_config_validates_everything_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("linkd.db").display().to_string();
    let keys = dir.path().join("keys").display().to_string();
    let config = dir.path().join("linkd.toml");
    std::fs::write(
        &config,
        "admin_listen = \"127.0.0.1:9090\"\ndrain_delay_secs = 2\n",
    )
    .unwrap();
    // `serve --check-config` on this store and keys directory, with `extra` flags.
    let check_config = |extra: &[&str]| {
        Command::new(LINKD)
            .args([
                "--store",
                &store,
                "--keys-dir",
                &keys,
                "serve",
                "--check-config",
            ])
            .args(extra)
            .output()
            .unwrap()
    };
    let output = check_config(&["--config", &config.display().to_string()]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "configuration OK\n"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "--check-config created files"
    );

    let missing = dir.path().join("missing.pem").display().to_string();
    let output = check_config(&[
        "--listen",
        "nowhere",
        "--tls-cert",
        &missing,
        "--tls-key",
        &missing,
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--listen"), "{stderr}");

    let output = check_config(&["--tls-cert", &missing, "--tls-key", &missing]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--tls-cert"), "{stderr}");
    assert!(stderr.contains("no such file"), "{stderr}");

    std::fs::create_dir(dir.path().join("keys")).unwrap();
    std::fs::write(
        dir.path()
            .join("keys")
            .join(linkd::tokens::keyring::MANIFEST_FILE),
        "{",
    )
    .unwrap();
    let output = check_config(&[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--keys-dir"), "{stderr}");
}

#[tokio::test]
async fn a_flag_wins_over_its_variable_and_the_variable_over_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("linkd.toml");
    std::fs::write(
        &file,
        "idle_timeout_secs = 7001\ncode_ttl_secs = 7002\nmax_connections = 0\n",
    )
    .unwrap();
    // Out-of-range values in every layer, so that the refusal names the one that won.
    let output = Command::new(LINKD)
        .env("LINKD_IDLE_TIMEOUT_SECS", "7003")
        .env("LINKD_CODE_TTL_SECS", "7004")
        .args(["serve", "--config", &file.display().to_string()])
        .args(["--idle-timeout-secs", "7005"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "--idle-timeout-secs 7005:",
        "--code-ttl-secs 7004:",
        "--max-connections 0:",
    ] {
        assert!(
            stderr.contains(expected),
            "{expected} not reported: {stderr}"
        );
    }
    for overridden in ["7001", "7002", "7003"] {
        assert!(
            !stderr.contains(overridden),
            "{overridden} reported: {stderr}"
        );
    }
}

fn linkd_admin(dir: &Path, args: &[&str], stdin: &str) -> std::process::Output {
    cli::run(dir.join("linkd.db"), args, Some(stdin))
}

#[tokio::test]
async fn no_credential_reaches_the_log_even_at_trace_level() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "client-secret-under-test-0123456789";
    let password = "password under test";
    assert!(
        linkd_admin(
            dir.path(),
            &[
                "clients",
                "add",
                "--id",
                "acme",
                "--project-id",
                "acme-project",
                "--secret-stdin"
            ],
            &format!("{secret}\n"),
        )
        .status
        .success()
    );
    assert!(
        linkd_admin(
            dir.path(),
            &[
                "users",
                "add",
                "--email",
                "ada@example.com",
                "--password-stdin"
            ],
            &format!("{password}\n"),
        )
        .status
        .success()
    );
    let served = serve(dir.path(), &["--log", "trace"]);
    let cert = cert(dir.path());
    let target = flow::Target {
        address: served.address,
        cert: &cert,
    };
    let redirect = "https://oauth-redirect.googleusercontent.com/r/acme-project";
    let request = format!(
        "client_id=acme&redirect_uri={}&state=st&response_type=code",
        serde_urlencoded::to_string([("v", redirect)]).unwrap()[2..].to_owned()
    );
    let linked = flow::link_over_http(&target, &request, "ada@example.com", password).await;
    let code = flow::redirect_query(&linked)["code"].clone();
    let tokens = flow::post_form(
        &target,
        "/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code.as_str()),
            ("redirect_uri", redirect),
            ("client_id", "acme"),
            ("client_secret", secret),
        ],
        "",
    )
    .await
    .json();
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refreshed = flow::post_form(
        &target,
        "/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh.as_str()),
            ("client_id", "acme"),
            ("client_secret", secret),
        ],
        "",
    )
    .await;
    assert_eq!(refreshed.status, 200);
    let userinfo = flow::get(
        &target,
        "/userinfo",
        &[("authorization", &format!("Bearer {access}"))],
    )
    .await;
    assert_eq!(userinfo.status, 200);

    // Let the last lines reach the reader thread.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let log = served.log.lock().unwrap().join("\n");
    assert!(
        log.len() > 1000,
        "trace logging produced too little to prove anything"
    );
    assert!(
        log.contains("code exchanged"),
        "the flow did not run: {log}"
    );
    let signature = |token: &str| token.rsplit('.').next().unwrap().to_owned();
    for (what, needle) in [
        ("client secret", secret.to_owned()),
        ("password", password.to_owned()),
        ("password, form-encoded", password.replace(' ', "+")),
        ("authorization code signature", signature(&code)),
        ("access token signature", signature(&access)),
        ("refresh token", refresh.clone()),
        ("refresh token secret part", signature(&refresh)),
    ] {
        assert!(!log.contains(&needle), "the {what} was written to the log");
    }
}

#[tokio::test]
async fn client_values_cannot_forge_lines_in_the_human_log() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), &["--log-format", "human"]);
    let cert = cert(dir.path());
    let target = flow::Target {
        address: served.address,
        cert: &cert,
    };
    let forged_client =
        "acme\r\n2030-01-01T00:00:00.000000Z  INFO forged: client authenticated\x1b[31m";
    let reply = flow::post_form(
        &target,
        "/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", "rt1.x.y"),
            ("client_id", forged_client),
            ("client_secret", "wrong"),
        ],
        "",
    )
    .await;
    assert_eq!(reply.status, 400, "{}", reply.text());

    let lines = eventually(Duration::from_secs(5), "the failure in the log", || {
        let lines = served.log.lock().unwrap().clone();
        let logged = lines
            .iter()
            .any(|line| line.contains("client authentication failed"));
        async move { logged.then_some(lines) }
    })
    .await;
    let log = lines.join("\n");
    let failure = lines
        .iter()
        .find(|line| line.contains("client authentication failed"))
        .unwrap();
    assert!(
        failure.contains("forged: client authenticated"),
        "the client id is logged, escaped: {failure}"
    );
    assert!(
        lines
            .iter()
            .all(|line| !line.contains("forged") || line.contains("client authentication failed")),
        "a client id started a log line of its own: {log}"
    );
    assert!(!log.contains('\r'), "a raw CR reached the log: {log:?}");
    assert!(
        !log.contains('\x1b'),
        "an escape sequence reached the log: {log:?}"
    );
}
