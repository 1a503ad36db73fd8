//! Connecting to Redis: TLS, credentials and finding the current primary, for the store and
//! for anything else that needs the same server (a pub/sub subscriber), through
//! [`primary_client`].
//!
//! - **TLS** (`rediss…` locations): the server's certificate is checked against the host
//!   name of the location (sent as SNI), and must chain to the system's roots or to a CA of
//!   `--store-ca-file` (PEM), which adds to the system's roots rather than replacing them.
//! - **Credentials** come from the environment — `LINKD_STORE_USERNAME`,
//!   `LINKD_STORE_PASSWORD` or `LINKD_STORE_PASSWORD_FILE` (the file's first line), and
//!   `LINKD_SENTINEL_PASSWORD` for the Sentinels — or from the location itself when that came
//!   from the environment or the configuration file. The environment's replace the
//!   location's. They are never taken from the command line, where other users of the machine
//!   can read them.
//! - **Sentinel**: the Sentinels are asked, in order, for the primary of the service
//!   (`SENTINEL get-master-addr-by-name`), and the answer is checked with `ROLE` before it is
//!   used. After a connection error, a timeout or a `READONLY` answer (a demoted primary),
//!   the next call asks the Sentinels again: the call that met the error fails as
//!   unavailable (503), the ones after it reach the new primary, without a restart.

use std::sync::Arc;
use std::time::Duration;

use redis::aio::{
    ConnectionLike, ConnectionManager, ConnectionManagerConfig, MultiplexedConnection,
};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Client, IntoConnectionInfo, RedisError, RedisFuture, Value};

use super::location::{RedisLocation, RedisTopology};
use super::{StoreError, StoreResult, StoreTimeouts};

/// Credentials of the Redis servers and of the Sentinels. Debug output hides the passwords.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct RedisCredentials {
    /// The ACL user (`AUTH user password`); `None` is the default user.
    pub username: Option<String>,
    /// The password of the user.
    pub password: Option<String>,
    /// The password of the Sentinels (`requirepass` in their configuration).
    pub sentinel_password: Option<String>,
}

impl std::fmt::Debug for RedisCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |secret: &Option<String>| secret.as_ref().map(|_| "***");
        f.debug_struct("RedisCredentials")
            .field("username", &self.username)
            .field("password", &hidden(&self.password))
            .field("sentinel_password", &hidden(&self.sentinel_password))
            .finish()
    }
}

/// Variable of the Redis ACL user.
pub const USERNAME_VARIABLE: &str = "LINKD_STORE_USERNAME";
/// Variable of the Redis password.
pub const PASSWORD_VARIABLE: &str = "LINKD_STORE_PASSWORD";
/// Variable naming a file whose first line is the Redis password.
pub const PASSWORD_FILE_VARIABLE: &str = "LINKD_STORE_PASSWORD_FILE";
/// Variable of the Sentinels' password.
pub const SENTINEL_PASSWORD_VARIABLE: &str = "LINKD_SENTINEL_PASSWORD";

impl RedisCredentials {
    /// The credentials of the process environment.
    pub fn from_env() -> Result<Self, String> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// The credentials of the variables `lookup` finds, or which of them is unusable.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let set = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let password = match (set(PASSWORD_VARIABLE), set(PASSWORD_FILE_VARIABLE)) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{PASSWORD_VARIABLE} and {PASSWORD_FILE_VARIABLE}: set one of them, not both"
                ));
            }
            (Some(password), None) => Some(password),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(&path)
                    .map_err(|error| format!("{PASSWORD_FILE_VARIABLE} {path}: {error}"))?;
                let line = text.lines().next().unwrap_or_default().to_owned();
                if line.is_empty() {
                    return Err(format!(
                        "{PASSWORD_FILE_VARIABLE} {path}: the first line is empty"
                    ));
                }
                Some(line)
            }
            (None, None) => None,
        };
        Ok(Self {
            username: set(USERNAME_VARIABLE),
            password,
            sentinel_password: set(SENTINEL_PASSWORD_VARIABLE),
        })
    }
}

/// What connecting to Redis needs beside the location.
#[derive(Debug, Clone, Default)]
pub struct RedisConnectSettings {
    /// Bounds of connecting and of every call.
    pub timeouts: StoreTimeouts,
    /// Credentials from the environment; they replace those of the location.
    pub credentials: RedisCredentials,
    /// PEM CA certificates trusted for `rediss` besides the system's roots
    /// (`--store-ca-file`).
    pub ca_certificates: Option<Vec<u8>>,
}

/// The certificates a `rediss` connection trusts: `None` leaves the redis crate to the
/// system's roots; with a CA file, the system's roots and the file's certificates together
/// (the crate would otherwise trust the file alone).
fn tls_certificates(settings: &RedisConnectSettings) -> Option<redis::TlsCertificates> {
    let extra = settings.ca_certificates.as_ref()?;
    let mut pem = String::new();
    for certificate in rustls_native_certs::load_native_certs().certs {
        use base64::Engine as _;
        let encoded = base64::engine::general_purpose::STANDARD.encode(certificate.as_ref());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in encoded.as_bytes().chunks(64) {
            pem.push_str(&String::from_utf8_lossy(line));
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    let mut root_cert = pem.into_bytes();
    root_cert.extend_from_slice(extra);
    Some(redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(root_cert),
    })
}

/// rustls needs a process-wide crypto provider when more than one is compiled in; linkd's
/// is aws-lc-rs everywhere. Installing it twice is harmless.
fn ensure_crypto_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

/// A connect-time failure: its message is safe to show (no command arguments are in it) and
/// tells the operator what is wrong (refused, certificate, authentication).
fn connect_failed(what: &str, error: &RedisError) -> StoreError {
    StoreError::Unavailable(format!("{what}: {error}"))
}

/// A client of one server at `url` (`redis://host:port[/db]` or `rediss://…`), with
/// `username`/`password` when given, over TLS with the configured roots for `rediss`.
fn node_client(
    url: &str,
    username: Option<&str>,
    password: Option<&str>,
    settings: &RedisConnectSettings,
) -> Result<Client, RedisError> {
    let info = url.into_connection_info()?;
    let mut redis_settings = info.redis_settings().clone();
    if let Some(username) = username {
        redis_settings = redis_settings.set_username(username);
    }
    if let Some(password) = password {
        redis_settings = redis_settings.set_password(password);
    }
    let info = info.set_redis_settings(redis_settings);
    let tls = matches!(info.addr(), redis::ConnectionAddr::TcpTls { .. });
    if tls {
        ensure_crypto_provider();
    }
    match tls_certificates(settings) {
        Some(certificates) if tls => Client::build_with_tls(info, certificates),
        _ => Client::open(info),
    }
}

/// The user and password to connect with: the environment's, else the location's.
fn redis_credentials<'a>(
    location: &'a RedisLocation,
    settings: &'a RedisConnectSettings,
) -> (Option<&'a str>, Option<&'a str>) {
    let credentials = &settings.credentials;
    (
        credentials
            .username
            .as_deref()
            .or(location.username.as_deref()),
        credentials
            .password
            .as_deref()
            .or(location.password.as_deref()),
    )
}

fn node_scheme(location: &RedisLocation) -> &'static str {
    if location.tls { "rediss" } else { "redis" }
}

fn connection_config(timeouts: StoreTimeouts) -> AsyncConnectionConfig {
    AsyncConnectionConfig::new()
        .set_connection_timeout(Some(timeouts.connect))
        .set_response_timeout(Some(timeouts.response))
}

/// A client of the current primary of `location`: the server itself, the primary the
/// Sentinels name now (checked with `ROLE`), or for a cluster the first seed node that
/// answers (pub/sub messages reach every node of a cluster). For a connection of its own —
/// a pub/sub subscriber — that must use the same servers, TLS roots and credentials as the
/// store; after a failover, call it again.
pub async fn primary_client(
    location: &RedisLocation,
    settings: &RedisConnectSettings,
) -> StoreResult<Client> {
    let (username, password) = redis_credentials(location, settings);
    match &location.topology {
        RedisTopology::Single { url } => node_client(url, username, password, settings)
            .map_err(|error| connect_failed("redis", &error)),
        RedisTopology::Cluster { nodes } => {
            let mut last = StoreError::Unavailable("redis cluster: no seed node".to_owned());
            for node in nodes {
                let url = format!("{}://{node}", node_scheme(location));
                let client = node_client(&url, username, password, settings)
                    .map_err(|error| connect_failed("redis cluster", &error))?;
                match client
                    .get_multiplexed_async_connection_with_config(&connection_config(
                        settings.timeouts,
                    ))
                    .await
                {
                    Ok(_) => return Ok(client),
                    Err(error) => {
                        last = connect_failed(&format!("redis cluster node {node}"), &error)
                    }
                }
            }
            Err(last)
        }
        RedisTopology::Sentinel { .. } => {
            let (client, _) = sentinel_primary(location, settings).await?;
            Ok(client)
        }
    }
}

/// Asks the Sentinels for the primary of the service and connects to it, checking that it
/// is a primary: a client and a connection to it.
async fn sentinel_primary(
    location: &RedisLocation,
    settings: &RedisConnectSettings,
) -> StoreResult<(Client, MultiplexedConnection)> {
    let RedisTopology::Sentinel {
        sentinels,
        service,
        db,
    } = &location.topology
    else {
        return Err(StoreError::Unavailable(
            "redis: not a Sentinel location".to_owned(),
        ));
    };
    let scheme = node_scheme(location);
    let config = connection_config(settings.timeouts);
    let bound = settings.timeouts.connect.saturating_mul(2);
    let mut problem = format!("redis sentinel: none of {} answered", sentinels.join(","));
    for sentinel in sentinels {
        let asked = async {
            let client = node_client(
                &format!("{scheme}://{sentinel}"),
                None,
                settings.credentials.sentinel_password.as_deref(),
                settings,
            )?;
            let mut connection = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(service)
                .query_async::<Option<(String, u16)>>(&mut connection)
                .await
        };
        let address = match tokio::time::timeout(bound, asked).await {
            Ok(Ok(Some(address))) => address,
            Ok(Ok(None)) => {
                problem = format!("redis sentinel {sentinel}: knows no service `{service}`");
                continue;
            }
            Ok(Err(error)) => {
                problem = format!("redis sentinel {sentinel}: {error}");
                continue;
            }
            Err(_) => {
                problem = format!("redis sentinel {sentinel}: timed out");
                continue;
            }
        };
        let (host, port) = address;
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host
        };
        let (username, password) = redis_credentials(location, settings);
        let url = format!("{scheme}://{host}:{port}/{db}");
        let connected = async {
            let client = node_client(&url, username, password, settings)?;
            let mut connection = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut connection).await?;
            let is_primary = role
                .first()
                .and_then(|value| redis::from_redis_value::<String>(value.clone()).ok())
                .is_some_and(|role| role == "master");
            Ok::<_, RedisError>((client, connection, is_primary))
        };
        match tokio::time::timeout(bound, connected).await {
            Ok(Ok((client, connection, true))) => return Ok((client, connection)),
            Ok(Ok((_, _, false))) => {
                problem = format!(
                    "redis sentinel {sentinel}: named {host}:{port} for `{service}`, which is not a primary (yet)"
                );
            }
            Ok(Err(error)) => problem = format!("redis primary {host}:{port}: {error}"),
            Err(_) => problem = format!("redis primary {host}:{port}: timed out"),
        }
    }
    Err(StoreError::Unavailable(problem))
}

/// A connection to the primary of a Sentinel-managed service that follows failovers: it
/// keeps one multiplexed connection and, once a call on it fails in a way that says the
/// primary is gone or demoted, replaces it by asking the Sentinels again on the next call.
#[derive(Clone)]
pub struct FailoverConnection {
    shared: Arc<FailoverState>,
    db: i64,
}

struct FailoverState {
    location: RedisLocation,
    settings: RedisConnectSettings,
    /// Where the primary stands; callers waiting for a lookup watch it change.
    primary: tokio::sync::watch::Sender<Primary>,
}

/// The primary as a [`FailoverConnection`] knows it. Each connection has a generation, so
/// that a late error of a connection already replaced leaves its successor alone.
#[derive(Clone)]
enum Primary {
    /// Calls go to this connection.
    Connected {
        generation: u64,
        connection: MultiplexedConnection,
    },
    /// The Sentinels are being asked, by a task of its own: a lookup outlives the calls
    /// that wait for it (each bounded by the store's response timeout), so that one slow
    /// Sentinel does not make every lookup start over from the first.
    Looking,
    /// No connection: never made, lost, or the last lookup failed (`failure`). The next
    /// call starts a lookup.
    Lost {
        generation: u64,
        failure: Option<String>,
    },
}

/// Whether an error means that the primary the connection reaches is no longer the one to
/// use: the connection broke or stalled, or the server was demoted to a replica.
fn primary_lost(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_dropped()
        || error.is_connection_refusal()
        || error.is_timeout()
        || error.is_unrecoverable_error()
        || error.code() == Some("READONLY")
        || error.code() == Some("LOADING")
        || error.code() == Some("MASTERDOWN")
}

fn not_connected(reason: String) -> RedisError {
    RedisError::from(std::io::Error::new(
        std::io::ErrorKind::NotConnected,
        reason,
    ))
}

impl FailoverConnection {
    fn with_state(
        location: &RedisLocation,
        settings: &RedisConnectSettings,
        primary: Primary,
    ) -> Self {
        let db = match location.topology {
            RedisTopology::Sentinel { db, .. } => db,
            _ => 0,
        };
        Self {
            shared: Arc::new(FailoverState {
                location: location.clone(),
                settings: settings.clone(),
                primary: tokio::sync::watch::Sender::new(primary),
            }),
            db,
        }
    }

    /// Connects to the primary the Sentinels of `location` name now.
    pub async fn connect(
        location: &RedisLocation,
        settings: &RedisConnectSettings,
    ) -> StoreResult<Self> {
        let (_, connection) = sentinel_primary(location, settings).await?;
        Ok(Self::with_state(
            location,
            settings,
            Primary::Connected {
                generation: 1,
                connection,
            },
        ))
    }

    /// A connection that asks the Sentinels on its first call.
    fn later(location: &RedisLocation, settings: &RedisConnectSettings) -> Self {
        Self::with_state(
            location,
            settings,
            Primary::Lost {
                generation: 0,
                failure: None,
            },
        )
    }

    /// The connection to use now and its generation: the current one, or the one the lookup
    /// under way or started now finds. A call that waited for a lookup that failed fails.
    async fn connection(&self) -> Result<(u64, MultiplexedConnection), RedisError> {
        let mut primary = self.shared.primary.subscribe();
        let mut waited = false;
        loop {
            let state = primary.borrow_and_update().clone();
            match state {
                Primary::Connected {
                    generation,
                    connection,
                } => return Ok((generation, connection)),
                Primary::Lost {
                    failure: Some(failure),
                    ..
                } if waited => return Err(not_connected(failure)),
                Primary::Lost { generation, .. } => {
                    let started = self.shared.primary.send_if_modified(|state| {
                        let lost = matches!(state, Primary::Lost { .. });
                        if lost {
                            *state = Primary::Looking;
                        }
                        lost
                    });
                    if started {
                        self.look_up(generation);
                    }
                }
                Primary::Looking => {}
            }
            waited = true;
            if primary.changed().await.is_err() {
                return Err(not_connected("redis sentinel: closed".to_owned()));
            }
        }
    }

    /// Asks the Sentinels in a task of its own and publishes what it finds.
    fn look_up(&self, generation: u64) {
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            let found = match sentinel_primary(&shared.location, &shared.settings).await {
                Ok((_, connection)) => {
                    tracing::info!("redis sentinel: connected to the current primary");
                    Primary::Connected {
                        generation: generation + 1,
                        connection,
                    }
                }
                Err(error) => Primary::Lost {
                    generation,
                    failure: Some(error.to_string()),
                },
            };
            shared.primary.send_replace(found);
        });
    }

    /// Forgets the connection of `generation` after `error` if it says the primary is lost,
    /// so that the next call looks the primary up again.
    fn after_error(&self, generation: u64, error: &RedisError) {
        if !primary_lost(error) {
            return;
        }
        let forgotten = self.shared.primary.send_if_modified(|state| match state {
            Primary::Connected {
                generation: current,
                ..
            } if *current == generation => {
                *state = Primary::Lost {
                    generation,
                    failure: None,
                };
                true
            }
            _ => false,
        });
        if forgotten {
            tracing::warn!(
                error = ?error.kind(),
                "redis sentinel: lost the primary; asking the Sentinels again"
            );
        }
    }

    async fn call<T>(
        &self,
        request: impl AsyncFnOnce(&mut MultiplexedConnection) -> Result<T, RedisError>,
    ) -> Result<T, RedisError> {
        let (generation, mut connection) = self.connection().await?;
        let result = request(&mut connection).await;
        if let Err(error) = &result {
            self.after_error(generation, error);
        }
        result
    }
}

impl ConnectionLike for FailoverConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            self.call(async |connection: &mut MultiplexedConnection| {
                connection.req_packed_command(cmd).await
            })
            .await
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            self.call(async |connection: &mut MultiplexedConnection| {
                connection
                    .req_packed_commands(pipeline, offset, count)
                    .await
            })
            .await
        })
    }

    fn get_db(&self) -> i64 {
        self.db
    }
}

/// The connection of a store on one primary: one server, reconnecting by itself, or the
/// primary of a Sentinel-managed service, followed across failovers.
#[derive(Clone)]
pub enum PrimaryConnection {
    /// One server at a fixed address.
    Direct(ConnectionManager),
    /// The primary the Sentinels name.
    Sentinel(FailoverConnection),
}

impl ConnectionLike for PrimaryConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> RedisFuture<'a, Value> {
        match self {
            Self::Direct(manager) => manager.req_packed_command(cmd),
            Self::Sentinel(failover) => failover.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Self::Direct(manager) => manager.req_packed_commands(pipeline, offset, count),
            Self::Sentinel(failover) => failover.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Self::Direct(manager) => manager.get_db(),
            Self::Sentinel(failover) => failover.get_db(),
        }
    }
}

/// Connects to the primary of a one-server or Sentinel location, within a bound.
pub(super) async fn connect_primary(
    location: &RedisLocation,
    settings: &RedisConnectSettings,
) -> StoreResult<PrimaryConnection> {
    let bound = settings.timeouts.connect.saturating_mul(3);
    if let RedisTopology::Sentinel { sentinels, .. } = &location.topology {
        let bound = bound.saturating_mul(u32::try_from(sentinels.len()).unwrap_or(u32::MAX));
        return tokio::time::timeout(bound, FailoverConnection::connect(location, settings))
            .await
            .map_err(|_| StoreError::Unavailable("redis sentinel: connect timed out".to_owned()))?
            .map(PrimaryConnection::Sentinel);
    }
    let client = primary_client(location, settings).await?;
    let manager = tokio::time::timeout(
        bound,
        ConnectionManager::new_with_config(client, manager_config(settings)),
    )
    .await
    .map_err(|_| StoreError::Unavailable("redis: connect timed out".to_owned()))?
    .map_err(|error| connect_failed("redis", &error))?;
    Ok(PrimaryConnection::Direct(manager))
}

/// A connection to the primary of a one-server or Sentinel location that is made on its
/// first use rather than now, so that a server can start before Redis does: its calls fail
/// as unavailable until Redis answers, and the first call after that connects. A cluster
/// has no such connection (the client needs a reachable node to learn the slots).
pub(super) fn primary_later(
    location: &RedisLocation,
    settings: &RedisConnectSettings,
) -> StoreResult<PrimaryConnection> {
    match &location.topology {
        RedisTopology::Single { url } => {
            let (username, password) = redis_credentials(location, settings);
            let client = node_client(url, username, password, settings)
                .map_err(|error| connect_failed("redis", &error))?;
            let manager = ConnectionManager::new_lazy_with_config(client, manager_config(settings))
                .map_err(|error| connect_failed("redis", &error))?;
            Ok(PrimaryConnection::Direct(manager))
        }
        RedisTopology::Sentinel { .. } => Ok(PrimaryConnection::Sentinel(
            FailoverConnection::later(location, settings),
        )),
        RedisTopology::Cluster { .. } => Err(StoreError::Unavailable(
            "redis cluster: no seed node answers".to_owned(),
        )),
    }
}

fn manager_config(settings: &RedisConnectSettings) -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(settings.timeouts.connect))
        .set_response_timeout(Some(settings.timeouts.response))
        .set_number_of_retries(1)
        .set_max_delay(Duration::from_millis(500))
}

/// Connects to a cluster through its seed nodes, within a bound; TLS and credentials apply
/// to the nodes the cluster reports too.
pub(super) async fn connect_cluster(
    location: &RedisLocation,
    settings: &RedisConnectSettings,
) -> StoreResult<ClusterConnection> {
    let RedisTopology::Cluster { nodes } = &location.topology else {
        return Err(StoreError::Unavailable(
            "redis: not a cluster location".to_owned(),
        ));
    };
    let scheme = node_scheme(location);
    let nodes: Vec<String> = nodes
        .iter()
        .map(|node| format!("{scheme}://{node}"))
        .collect();
    let (username, password) = redis_credentials(location, settings);
    let mut builder = redis::cluster::ClusterClientBuilder::new(nodes)
        .connection_timeout(settings.timeouts.connect)
        .response_timeout(settings.timeouts.response)
        .retries(2);
    if let Some(username) = username {
        builder = builder.username(username);
    }
    if let Some(password) = password {
        builder = builder.password(password);
    }
    if location.tls {
        ensure_crypto_provider();
        builder = builder.tls(redis::TlsMode::Secure);
        if let Some(certificates) = tls_certificates(settings) {
            builder = builder.certs(certificates);
        }
    }
    let client = builder
        .build()
        .map_err(|error| connect_failed("redis cluster", &error))?;
    tokio::time::timeout(
        settings.timeouts.connect.saturating_mul(3),
        client.get_async_connection(),
    )
    .await
    .map_err(|_| StoreError::Unavailable("redis cluster: connect timed out".to_owned()))?
    .map_err(|error| connect_failed("redis cluster", &error))
}

/// The PEM CA certificates of `path`, checked to hold at least one certificate, or why they
/// cannot be used.
pub fn read_ca_file(path: &std::path::Path) -> Result<Vec<u8>, String> {
    use rustls_pki_types::pem::PemObject as _;
    let pem = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let certificates = rustls_pki_types::CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| format!("{}: not PEM certificates: {error}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!("{}: holds no PEM certificate", path.display()));
    }
    Ok(pem)
}
