//! Reaching the store in production: the `--store` location's forms (a URL of an unknown
//! scheme is bad input, never a SQLite file), Redis over TLS with a CA file and the host name
//! checked, Redis credentials from the environment and never from argv, and a Sentinel
//! deployment followed across a failover — each against real `redis-server` processes.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use linkd::store::location::StoreLocation;
use linkd::store::redis_connect::{RedisConnectSettings, RedisCredentials, read_ca_file};
use linkd::store::{RefreshTokenRecord, SharedStore, StoreError, StoreTimeouts};

use crate::support::redis_sentinel::SentinelDeployment;
use crate::support::redis_server::RedisServer;
use crate::support::redis_tls::{TlsRedisCluster, TlsRedisServer};

fn settings(credentials: RedisCredentials, ca_file: Option<&Path>) -> RedisConnectSettings {
    RedisConnectSettings {
        timeouts: StoreTimeouts {
            connect: Duration::from_secs(2),
            response: Duration::from_secs(2),
        },
        credentials,
        ca_certificates: ca_file.map(|path| read_ca_file(path).unwrap()),
    }
}

async fn open(location: &str, settings: &RedisConnectSettings) -> Result<SharedStore, StoreError> {
    linkd::store::open_location(&StoreLocation::parse(location).unwrap(), settings).await
}

/// Opens the store and proves it works with one write and one read.
async fn open_and_use(location: &str, settings: &RedisConnectSettings) -> Result<(), StoreError> {
    let store = open(location, settings).await?;
    store.ping().await?;
    store.reset("probe").await?;
    assert_eq!(store.hit("probe", 60, 0).await?, 1);
    assert_eq!(store.current("probe", 0).await?, 1);
    Ok(())
}

/// Runs the linkd binary with `env` set and `LINKD_*` store variables otherwise cleared.
fn linkd(args: &[&str], env: &[(&str, &str)], dir: &Path) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_linkd"));
    for variable in [
        "LINKD_STORE",
        "LINKD_KEYS_DIR",
        "LINKD_STORE_CA_FILE",
        "LINKD_STORE_USERNAME",
        "LINKD_STORE_PASSWORD",
        "LINKD_STORE_PASSWORD_FILE",
        "LINKD_SENTINEL_PASSWORD",
    ] {
        command.env_remove(variable);
    }
    command
        .envs(env.iter().copied())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).trim().to_owned()
}

#[test]
fn a_url_of_an_unknown_scheme_is_bad_input_and_creates_no_file() {
    let dir = tempfile::tempdir().unwrap();
    for location in [
        "postgres://db/linkd",
        "redis:/db:6379",
        "localhost:6379",
        "redis+sentinel://127.0.0.1:1",
    ] {
        for args in [
            vec!["--store", location, "clients", "list"],
            vec!["--store", location, "serve", "--plain-http"],
        ] {
            let output = linkd(&args, &[], dir.path());
            assert_eq!(
                output.status.code(),
                Some(2),
                "{args:?}: {}",
                stderr(&output)
            );
            let message = stderr(&output);
            assert_eq!(message.lines().count(), 1, "{args:?}: {message}");
            assert!(message.contains("--store"), "{args:?}: {message}");
        }
    }
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "files were created: {left:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_verifies_the_certificate_against_the_ca_file_and_the_host_name() {
    let server = TlsRedisServer::start(&[]);
    let port = server.port();
    let location = format!("rediss://127.0.0.1:{port}");

    let trusted = settings(
        RedisCredentials::default(),
        Some(&server.authority().ca_file()),
    );
    open_and_use(&location, &trusted).await.unwrap();
    // `localhost` is named by the certificate too; it is checked as a host name (SNI).
    open_and_use(&format!("rediss://localhost:{port}"), &trusted)
        .await
        .unwrap();

    let system_roots_only = settings(RedisCredentials::default(), None);
    let other_ca = settings(
        RedisCredentials::default(),
        Some(&server.authority().other_ca_file()),
    );
    for (what, settings, location) in [
        ("system roots only", &system_roots_only, location.clone()),
        ("another CA", &other_ca, location.clone()),
        // The server answers on 127.0.0.2 too, with a certificate that does not name it.
        (
            "wrong host name",
            &trusted,
            format!("rediss://127.0.0.2:{port}"),
        ),
    ] {
        match open(&location, settings).await {
            Err(StoreError::Unavailable(message)) => {
                assert!(
                    message.to_lowercase().contains("certificate"),
                    "{what}: {message}"
                );
            }
            Ok(_) => panic!("{what}: connected"),
            Err(other) => panic!("{what}: {other}"),
        }
    }
    // Plain redis:// to a TLS-only port is refused too.
    assert!(
        open(&format!("redis://127.0.0.1:{port}"), &trusted)
            .await
            .and_then(|_| Err::<(), _>(StoreError::Unavailable(String::new())))
            .is_err()
    );

    // The binary: LINKD_STORE_CA_FILE trusts the CA, its absence is a failure (exit 1) that
    // names the certificate.
    let dir = tempfile::tempdir().unwrap();
    let ca = server.authority().ca_file().display().to_string();
    let args = ["--store", location.as_str(), "clients", "list"];
    let output = linkd(&args, &[("LINKD_STORE_CA_FILE", &ca)], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
    let output = linkd(&args, &[], dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).to_lowercase().contains("certificate"),
        "{}",
        stderr(&output)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rediss_cluster_speaks_tls_to_every_node() {
    let cluster = TlsRedisCluster::start(3);
    let trusted = settings(
        RedisCredentials::default(),
        Some(&cluster.authority().ca_file()),
    );
    let store = open(&cluster.url(), &trusted).await.unwrap();
    assert_eq!(store.backend_name(), "redis-cluster");
    // Keys of many slots, so that nodes the seeds only reported are used too.
    for grant in 0..20 {
        let mut record = refresh_record();
        record.grant_id = format!("g{grant}");
        assert!(store.put_refresh_token("d", &record).await.unwrap());
        let found = store
            .get_refresh_token(&record.grant_id, "d")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(found.record, record);
    }
    let untrusted = settings(RedisCredentials::default(), None);
    assert!(matches!(
        open(&cluster.url(), &untrusted).await,
        Err(StoreError::Unavailable(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_come_from_the_environment_never_from_argv() {
    let server = RedisServer::start();
    server
        .cli(&[
            "ACL",
            "SETUSER",
            "linkd",
            "on",
            ">user-secret",
            "~*",
            "&*",
            "+@all",
        ])
        .unwrap();
    server
        .cli(&["CONFIG", "SET", "requirepass", "default-secret"])
        .unwrap();
    let location = server.url();

    let none = settings(RedisCredentials::default(), None);
    assert!(matches!(
        open_and_use(&location, &none).await,
        Err(StoreError::Unavailable(_))
    ));
    let default_user = settings(
        RedisCredentials {
            password: Some("default-secret".into()),
            ..RedisCredentials::default()
        },
        None,
    );
    open_and_use(&location, &default_user).await.unwrap();
    let acl_user = settings(
        RedisCredentials {
            username: Some("linkd".into()),
            password: Some("user-secret".into()),
            ..RedisCredentials::default()
        },
        None,
    );
    open_and_use(&location, &acl_user).await.unwrap();
    let wrong = settings(
        RedisCredentials {
            username: Some("linkd".into()),
            password: Some("default-secret".into()),
            ..RedisCredentials::default()
        },
        None,
    );
    assert!(open_and_use(&location, &wrong).await.is_err());

    let dir = tempfile::tempdir().unwrap();
    let list = ["clients", "list"];
    let with_store = |store: &str| -> Vec<String> {
        ["--store", store]
            .iter()
            .chain(list.iter())
            .map(|argument| argument.to_string())
            .collect()
    };
    let args = with_store(&location);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    // From LINKD_STORE_USERNAME and LINKD_STORE_PASSWORD.
    let output = linkd(
        &args,
        &[
            ("LINKD_STORE_USERNAME", "linkd"),
            ("LINKD_STORE_PASSWORD", "user-secret"),
        ],
        dir.path(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    // From a file.
    let password_file = dir.path().join("password");
    std::fs::write(&password_file, "default-secret\n").unwrap();
    let output = linkd(
        &args,
        &[("LINKD_STORE_PASSWORD_FILE", password_file.to_str().unwrap())],
        dir.path(),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    // Without credentials: unreachable as far as linkd can tell, a failure (exit 1).
    let output = linkd(&args, &[], dir.path());
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    // A password in a --store URL on the command line is refused before anything is opened,
    // naming the variable to use; the same URL from LINKD_STORE is fine.
    let with_password = format!("redis://linkd:user-secret@127.0.0.1:{}", server.port());
    let args = with_store(&with_password);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let output = linkd(&args, &[], dir.path());
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(message.contains("LINKD_STORE_PASSWORD"), "{message}");
    assert!(!message.contains("user-secret"), "{message}");
    let output = linkd(&list, &[("LINKD_STORE", &with_password)], dir.path());
    assert!(output.status.success(), "{}", stderr(&output));
}

fn refresh_record() -> RefreshTokenRecord {
    RefreshTokenRecord {
        user_id: "u1".into(),
        client_id: "c1".into(),
        grant_id: "g1".into(),
        scope: "devices".into(),
        created_at: 1,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_failover_is_followed_without_restart() {
    let mut deployment = SentinelDeployment::start();
    let store = open(
        &deployment.url(),
        &settings(RedisCredentials::default(), None),
    )
    .await
    .unwrap();
    assert_eq!(store.backend_name(), "redis");
    assert!(
        store
            .put_refresh_token("d1", &refresh_record())
            .await
            .unwrap()
    );
    // The replica has it before the primary dies (linkd itself does not wait for replicas).
    let acknowledged = deployment.primary().cli(&["WAIT", "1", "5000"]).unwrap();
    assert_eq!(acknowledged, "1");

    deployment.kill_primary();
    let killed = Instant::now();
    // Calls meanwhile fail as unavailable (503), never as "not found".
    let mut answered = None;
    while killed.elapsed() < Duration::from_secs(30) {
        match store.get_refresh_token("g1", "d1").await {
            Ok(found) => {
                answered = Some(found);
                break;
            }
            Err(StoreError::Unavailable(_)) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(other) => panic!("during the failover: {other}"),
        }
    }
    let elapsed = killed.elapsed();
    let found = answered.expect("the store did not answer within 30 s of the failover");
    assert_eq!(found.unwrap().record, refresh_record());
    assert!(
        elapsed < Duration::from_secs(15),
        "answered only after {elapsed:?}"
    );
    deployment.wait_for_failover(Duration::from_secs(5));
    // Writes go to the new primary.
    let mut record = refresh_record();
    record.grant_id = "g2".into();
    assert!(store.put_refresh_token("d2", &record).await.unwrap());
    assert!(
        deployment
            .replica()
            .cli(&["HLEN", "linkd:rt:{g:g2}"])
            .is_some_and(|count| count == "1")
    );
    println!("store answered again {elapsed:?} after the primary was killed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demoted_primary_is_left_for_the_promoted_one() {
    let deployment = SentinelDeployment::start();
    let store = open(
        &deployment.url(),
        &settings(RedisCredentials::default(), None),
    )
    .await
    .unwrap();
    assert!(
        store
            .put_refresh_token("d1", &refresh_record())
            .await
            .unwrap()
    );
    deployment.primary().cli(&["WAIT", "1", "5000"]).unwrap();

    deployment.switch_over();
    let started = Instant::now();
    let mut grant = 0;
    // Writes keep coming; each lands, or fails as unavailable while the roles change.
    loop {
        grant += 1;
        let mut record = refresh_record();
        record.grant_id = format!("g-after-{grant}");
        match store.put_refresh_token("d", &record).await {
            Ok(stored) => {
                assert!(stored);
                if deployment
                    .replica()
                    .cli(&["ROLE"])
                    .is_some_and(|role| role.starts_with("master"))
                    && deployment
                        .replica()
                        .cli(&["HLEN", &format!("linkd:rt:{{g:{}}}", record.grant_id)])
                        .is_some_and(|count| count == "1")
                {
                    break;
                }
            }
            Err(StoreError::Unavailable(_)) => {}
            Err(other) => panic!("during the switch-over: {other}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "writes did not reach the promoted replica within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let found = store.get_refresh_token("g1", "d1").await.unwrap().unwrap();
    assert_eq!(found.record, refresh_record());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_starts_before_redis_and_is_ready_once_redis_answers() {
    use crate::support::https::{Offer, client_config, get, request, send};
    use crate::support::linkd::{TestServer, eventually};

    let mut redis = RedisServer::start();
    let url = redis.url();
    redis.stop();
    let server = TestServer::start(move |settings| {
        settings.store = url;
        settings.store_timeouts = StoreTimeouts {
            connect: Duration::from_millis(300),
            response: Duration::from_millis(300),
        };
    })
    .await;
    let not_ready = get(server.address, &server.cert, "/readyz").await;
    assert_eq!(not_ready.status, 503);
    assert_eq!(
        get(server.address, &server.cert, "/healthz").await.status,
        200
    );
    let token = send(
        server.address,
        client_config(&server.cert, Offer::Both),
        request("POST", "/token")
            .header("content-type", "application/x-www-form-urlencoded")
            .body(http_body_util::Full::new(bytes::Bytes::from_static(
                b"grant_type=refresh_token&refresh_token=r&client_id=acme&client_secret=s",
            )))
            .unwrap(),
    )
    .await;
    assert_eq!(
        token.status,
        503,
        "{}",
        String::from_utf8_lossy(&token.body)
    );
    assert!(token.header("retry-after").is_some());

    redis.restart();
    eventually(
        Duration::from_secs(15),
        "ready once Redis answers",
        || {
            let server = &server;
            async move {
                (get(server.address, &server.cert, "/readyz").await.status == 200).then_some(())
            }
        },
    )
    .await;
}
