//! Upgrading a store in place: SQLite files of every earlier schema version, made from the
//! SQL those versions wrote (`tests/fixtures/`), opened by this linkd with their data
//! intact; a step that fails leaves the file as it was; a SQLite file or a Redis written by a
//! newer linkd is refused, by the library and by the binary, without a write; the Redis key
//! layout's marker is written once and checked before the first command.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use linkd::store::location::StoreLocation;
use linkd::store::redis::schema::{LAYOUT_VERSION, SCHEMA_KEY};
use linkd::store::redis_connect::RedisConnectSettings;
use linkd::store::sqlite::{SCHEMA_VERSION, SqliteStore};
use linkd::store::{
    ClientStore as _, CodeLedger as _, CodeRedemption, DEFAULT_CLIENT_SCOPES, DeviceStore as _,
    LinkStore as _, RedemptionStart, RefreshTokenStore as _, RevocationStore as _, StoreError,
    StoreTimeouts, UserStore as _,
};

use crate::support::redis_server::{RedisCluster, RedisServer};

const SCHEMA_V1: &str = include_str!("fixtures/sqlite-schema-v1.sql");
const SCHEMA_V2: &str = include_str!("fixtures/sqlite-schema-v2.sql");

/// Before the fixtures' spent code lapses, after everything else they hold was written.
const NOW: i64 = 1_900_000_000;

fn timeouts() -> StoreTimeouts {
    StoreTimeouts {
        connect: Duration::from_secs(2),
        response: Duration::from_secs(2),
    }
}

/// A SQLite file in `dir` made by running `sql`, as an older linkd left it.
fn file_from(dir: &Path, sql: &str) -> PathBuf {
    let path = dir.join("linkd.db");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    path
}

fn schema_version(path: &Path) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap()
}

fn count(path: &Path, query: &str) -> i64 {
    rusqlite::Connection::open(path)
        .unwrap()
        .query_row(query, [], |row| row.get(0))
        .unwrap()
}

/// What the fixtures hold, read back through the store, and the store still writes.
async fn fixture_data_survives(store: &SqliteStore) {
    let client = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(client.project_id, "acme-project");
    assert_eq!(client.name, "Acme Home");
    assert!(client.settings.pkce_required);
    assert_eq!(
        client.settings.extra_redirect_uris,
        ["https://acme.example/cb"]
    );
    assert_eq!(
        client.settings.scopes.0, DEFAULT_CLIENT_SCOPES,
        "a record written before scopes gets the default ones"
    );

    let user = store
        .get_user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(user.id, "u-ada");
    assert_eq!(user.family_name.as_deref(), Some("Lovelace"));

    let live = store
        .get_refresh_token("g-live", "digest-live")
        .await
        .unwrap()
        .unwrap();
    assert!(!live.grant_revoked);
    assert_eq!(live.record.user_id, "u-ada");
    assert_eq!(live.record.scope, "email devices");
    let revoked = store
        .get_refresh_token("g-revoked", "digest-revoked")
        .await
        .unwrap()
        .unwrap();
    assert!(revoked.grant_revoked, "a revocation survives the upgrade");
    assert!(store.is_grant_revoked("g-revoked").await.unwrap());

    let links = store.list_links("u-ada").await.unwrap();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].grant_id, "g-live");
    assert_eq!(
        store.get_consent("u-ada", "acme").await.unwrap().as_deref(),
        Some("email devices")
    );
    let devices = store
        .get_devices("acme-project", "u-ada")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(devices[0]["id"], "lamp-1");

    let spent = CodeRedemption {
        jti: "jti-spent".to_owned(),
        grant_id: "g-new".to_owned(),
        attempt: "attempt-1".to_owned(),
        now: NOW,
        lease_until: NOW + 30,
        expires_at: NOW + 600,
    };
    assert_eq!(
        store.begin_redemption(&spent).await.unwrap(),
        RedemptionStart::Redeemed,
        "a code spent before the upgrade stays spent"
    );

    let mut changed = client.clone();
    changed.name = "Acme Home 2".to_owned();
    assert!(store.update_client(&changed).await.unwrap());
    assert_eq!(
        store.get_client("acme").await.unwrap().unwrap().name,
        "Acme Home 2"
    );
    store
        .put_agent_user("acme-project", "agent-ada", "u-ada")
        .await
        .unwrap();
}

#[tokio::test]
async fn a_version_1_file_is_upgraded_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_from(dir.path(), SCHEMA_V1);
    assert_eq!(schema_version(&path), 1);
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    assert_eq!(schema_version(&path), SCHEMA_VERSION);
    assert_eq!(
        count(
            &path,
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'used_codes'"
        ),
        0
    );
    fixture_data_survives(&store).await;
}

#[tokio::test]
async fn a_version_2_file_is_upgraded_with_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_from(dir.path(), SCHEMA_V2);
    assert_eq!(schema_version(&path), 2);
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    assert_eq!(schema_version(&path), SCHEMA_VERSION);
    fixture_data_survives(&store).await;
    drop(store);
    // Opening an up-to-date file again applies nothing.
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    assert_eq!(schema_version(&path), SCHEMA_VERSION);
    assert!(store.get_client("acme").await.unwrap().is_some());
}

#[tokio::test]
async fn the_earliest_version_1_files_gain_the_device_tables_they_lacked() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_from(
        dir.path(),
        &format!("{SCHEMA_V1}\nDROP TABLE device_states; DROP TABLE agent_users;"),
    );
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    fixture_data_survives(&store).await;
    assert_eq!(
        store
            .user_of_agent_user("acme-project", "agent-ada")
            .await
            .unwrap()
            .as_deref(),
        Some("u-ada")
    );
}

#[tokio::test]
async fn a_step_that_fails_leaves_the_file_at_its_version_and_the_next_open_retries_it() {
    let dir = tempfile::tempdir().unwrap();
    // A table in the way of step 2 makes it fail after part of it ran.
    let path = file_from(
        dir.path(),
        &format!("{SCHEMA_V1}\nCREATE TABLE code_redemptions (jti TEXT PRIMARY KEY);"),
    );
    match SqliteStore::open(&path, timeouts()) {
        Err(StoreError::Unavailable(message)) => {
            assert!(message.contains("schema version 2"), "{message}");
        }
        other => panic!("a failing step was not reported: {:?}", other.map(|_| ())),
    }
    assert_eq!(schema_version(&path), 1);
    assert_eq!(count(&path, "SELECT COUNT(*) FROM used_codes"), 1);
    assert_eq!(
        count(
            &path,
            "SELECT COUNT(*) FROM sqlite_master WHERE name = 'changes'"
        ),
        0
    );

    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE code_redemptions;")
        .unwrap();
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    assert_eq!(schema_version(&path), SCHEMA_VERSION);
    fixture_data_survives(&store).await;
}

/// Runs the linkd binary in `dir` with no `LINKD_*` variable from the test's environment.
fn linkd(dir: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_linkd"));
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("LINKD_") {
            command.env_remove(name);
        }
    }
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// `linkd serve` on `store` exits at once, non-zero, and says why; nothing listens.
fn serve_refuses(dir: &Path, store: &str, expected: &str) {
    let keys = dir.join("keys").display().to_string();
    let output = linkd(
        dir,
        &[
            "--store",
            store,
            "--keys-dir",
            &keys,
            "serve",
            "--listen",
            "127.0.0.1:0",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(expected), "{stderr}");
}

#[test]
fn the_cli_upgrades_an_old_file_and_refuses_a_newer_one_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = file_from(dir.path(), SCHEMA_V1);
    let store = path.display().to_string();
    let listed = linkd(dir.path(), &["--store", &store, "clients", "list"]);
    assert!(listed.status.success(), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("acme-project"));
    assert_eq!(schema_version(&path), SCHEMA_VERSION);

    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    let refused = linkd(dir.path(), &["--store", &store, "clients", "list"]);
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("schema version {}", SCHEMA_VERSION + 1)),
        "{stderr}"
    );
    assert!(stderr.contains("newer linkd"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    serve_refuses(dir.path(), &store, "newer linkd");
    assert_eq!(schema_version(&path), SCHEMA_VERSION + 1);
}

async fn open(location: &str) -> Result<linkd::store::SharedStore, StoreError> {
    linkd::store::open(location, timeouts()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_gets_the_layout_marker_once_and_keeps_data_written_before_it() {
    let redis = RedisServer::start();
    // A Redis that linkd wrote before the marker existed: layout 1, no marker.
    let record = r#"{"id":"acme","project_id":"acme-project","name":"Acme Home","secret_digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","created_at":1700000000}"#;
    redis
        .cli(&["HSET", "linkd:{clients}", "acme", record])
        .unwrap();
    let store = open(&redis.url()).await.unwrap();
    assert_eq!(
        redis.cli(&["GET", SCHEMA_KEY]).unwrap(),
        LAYOUT_VERSION.to_string()
    );
    let client = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(client.project_id, "acme-project");
    drop(store);
    // A second instance finds the marker and accepts it.
    let again = open(&redis.url()).await.unwrap();
    again.ping().await.unwrap();
    assert_eq!(
        redis.cli(&["GET", SCHEMA_KEY]).unwrap(),
        LAYOUT_VERSION.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_written_by_a_newer_linkd_is_refused_untouched() {
    let redis = RedisServer::start();
    let newer = (LAYOUT_VERSION + 1).to_string();
    redis.cli(&["SET", SCHEMA_KEY, &newer]).unwrap();
    match open(&redis.url()).await {
        Err(StoreError::Incompatible(message)) => {
            assert!(message.contains(&format!("layout {newer}")), "{message}");
            assert!(message.contains("newer linkd"), "{message}");
        }
        other => panic!("opened a newer layout: {:?}", other.map(|_| ())),
    }
    redis.cli(&["SET", SCHEMA_KEY, "not-a-version"]).unwrap();
    assert!(matches!(
        open(&redis.url()).await,
        Err(StoreError::Incompatible(_))
    ));
    redis.cli(&["SET", SCHEMA_KEY, &newer]).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let listed = linkd(dir.path(), &["--store", &redis.url(), "clients", "list"]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(listed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("newer linkd"), "{stderr}");
    serve_refuses(dir.path(), &redis.url(), "newer linkd");
    assert_eq!(redis.cli(&["DBSIZE"]).unwrap(), "1", "nothing was written");
    assert_eq!(redis.cli(&["GET", SCHEMA_KEY]).unwrap(), newer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_opened_before_redis_answers_checks_the_marker_before_its_first_write() {
    let mut redis = RedisServer::start();
    redis.stop();
    let location = StoreLocation::parse(&redis.url()).unwrap();
    let settings = RedisConnectSettings {
        timeouts: StoreTimeouts {
            connect: Duration::from_millis(300),
            response: Duration::from_millis(500),
        },
        ..RedisConnectSettings::default()
    };
    let store = linkd::store::open_eventually(&location, &settings)
        .await
        .unwrap();
    redis.restart();
    let newer = (LAYOUT_VERSION + 1).to_string();
    redis.cli(&["SET", SCHEMA_KEY, &newer]).unwrap();
    let started = std::time::Instant::now();
    let refused = loop {
        match store.hit("probe", 60, NOW).await {
            Err(StoreError::Unavailable(_)) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            other => break other,
        }
    };
    assert!(
        matches!(refused, Err(StoreError::Incompatible(_))),
        "{refused:?}"
    );
    assert!(store.ping().await.is_err(), "not ready on a newer layout");
    assert_eq!(redis.cli(&["DBSIZE"]).unwrap(), "1", "nothing was written");

    // Once the marker is one this linkd knows, the same store goes on.
    redis
        .cli(&["SET", SCHEMA_KEY, &LAYOUT_VERSION.to_string()])
        .unwrap();
    assert_eq!(store.hit("probe", 60, NOW).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_cluster_carries_the_marker_too() {
    let cluster = RedisCluster::start(3);
    let store = open(&cluster.url()).await.unwrap();
    store.ping().await.unwrap();
    assert_eq!(
        cluster.cli(&["GET", SCHEMA_KEY]).unwrap(),
        LAYOUT_VERSION.to_string()
    );
    drop(store);
    cluster
        .cli(&["SET", SCHEMA_KEY, &(LAYOUT_VERSION + 1).to_string()])
        .unwrap();
    assert!(matches!(
        open(&cluster.url()).await,
        Err(StoreError::Incompatible(_))
    ));
}
