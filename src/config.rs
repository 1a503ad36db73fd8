//! Configuration of `linkd serve`: flags, `LINKD_*` environment variables and an optional
//! TOML file, layered (flag over environment over file over default) into one validated
//! [`ServeSettings`]. Every problem is reported at once, each naming the flag that fixes it.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::http::ServerLimits;
use crate::http::tls::CertificateFiles;
use crate::logging::LogFormat;
use crate::store::StoreTimeouts;
use crate::tokens::keyring::Algorithm;

/// Default listening address.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8443";
/// Default embedded store path.
pub const DEFAULT_STORE: &str = "linkd.db";
/// Default keys directory.
pub const DEFAULT_KEYS_DIR: &str = "keys";

/// Flags of `linkd serve`. Each has an environment variable; a flag wins over the
/// variable, which wins over the `--config` file, which wins over the default.
#[derive(Debug, Default, clap::Args)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (keys as the flag names, with `_`).
    #[arg(long, env = "LINKD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8443].
    #[arg(long, env = "LINKD_LISTEN", value_name = "ADDR")]
    pub listen: Option<String>,
    /// Issuer URL: the public `https` origin (and optional path) clients reach linkd at
    /// [default: https://<listen address>].
    #[arg(long, env = "LINKD_ISSUER", value_name = "URL")]
    pub issuer: Option<String>,
    /// PEM certificate chain; reloaded when the file changes and on SIGHUP. Without it a
    /// self-signed development certificate is generated in the keys directory.
    #[arg(
        long,
        env = "LINKD_TLS_CERT",
        value_name = "FILE",
        requires = "tls_key"
    )]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `--tls-cert`.
    #[arg(
        long,
        env = "LINKD_TLS_KEY",
        value_name = "FILE",
        requires = "tls_cert"
    )]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP, for a load balancer that terminates TLS in front of linkd.
    #[arg(long, env = "LINKD_PLAIN_HTTP", num_args = 0..=1, default_missing_value = "true", value_name = "BOOL")]
    pub plain_http: Option<bool>,
    /// Log format [default: human].
    #[arg(long, env = "LINKD_LOG_FORMAT", value_enum)]
    pub log_format: Option<LogFormat>,
    /// Log filter, in `RUST_LOG` syntax [default: info].
    #[arg(long, env = "LINKD_LOG", value_name = "FILTER")]
    pub log: Option<String>,
    /// Algorithm of the key created when the keys directory is empty [default: es256].
    #[arg(long, env = "LINKD_SIGNING_ALG", value_name = "ALG")]
    pub signing_alg: Option<String>,
    /// Seconds between checks of the keys directory for rotated keys [default: 10].
    #[arg(long, env = "LINKD_KEY_RELOAD_SECS", value_name = "SECS")]
    pub key_reload_secs: Option<u64>,
    /// Seconds between checks of the TLS certificate files [default: 10].
    #[arg(long, env = "LINKD_CERT_RELOAD_SECS", value_name = "SECS")]
    pub cert_reload_secs: Option<u64>,
    /// Maximum connections served at once [default: 1024].
    #[arg(long, env = "LINKD_MAX_CONNECTIONS", value_name = "N")]
    pub max_connections: Option<usize>,
    /// Maximum size of a request head in bytes, at least 8192 [default: 16384].
    #[arg(long, env = "LINKD_MAX_HEADER_BYTES", value_name = "BYTES")]
    pub max_header_bytes: Option<usize>,
    /// Seconds a client has to send a complete request head [default: 10].
    #[arg(long, env = "LINKD_HEADER_READ_TIMEOUT_SECS", value_name = "SECS")]
    pub header_read_timeout_secs: Option<u64>,
    /// Seconds a client has to complete the TLS handshake [default: 10].
    #[arg(long, env = "LINKD_TLS_HANDSHAKE_TIMEOUT_SECS", value_name = "SECS")]
    pub tls_handshake_timeout_secs: Option<u64>,
    /// Seconds an idle keep-alive connection stays open [default: 60].
    #[arg(long, env = "LINKD_IDLE_TIMEOUT_SECS", value_name = "SECS")]
    pub idle_timeout_secs: Option<u64>,
    /// Seconds a request may take before it is answered 503 [default: 30].
    #[arg(long, env = "LINKD_REQUEST_TIMEOUT_SECS", value_name = "SECS")]
    pub request_timeout_secs: Option<u64>,
    /// Seconds in-flight requests get to finish after SIGTERM/SIGINT [default: 25].
    #[arg(long, env = "LINKD_SHUTDOWN_GRACE_SECS", value_name = "SECS")]
    pub shutdown_grace_secs: Option<u64>,
    /// Milliseconds a store call may take before it counts as unavailable [default: 2000].
    #[arg(long, env = "LINKD_STORE_TIMEOUT_MS", value_name = "MS")]
    pub store_timeout_ms: Option<u64>,
    /// Authorization code lifetime in seconds, at most 600 [default: 600].
    #[arg(long, env = "LINKD_CODE_TTL_SECS", value_name = "SECS")]
    pub code_ttl_secs: Option<i64>,
    /// Access token lifetime in seconds [default: 3600].
    #[arg(long, env = "LINKD_ACCESS_TOKEN_TTL_SECS", value_name = "SECS")]
    pub access_token_ttl_secs: Option<i64>,
    /// Name of the platform accounts are linked to, shown on the pages [default: Google].
    #[arg(long, env = "LINKD_PLATFORM_NAME", value_name = "NAME")]
    pub platform_name: Option<String>,
    /// Base of the platform's redirect URIs [default: https://oauth-redirect.googleusercontent.com].
    #[arg(long, env = "LINKD_REDIRECT_BASE", value_name = "URL")]
    pub redirect_base: Option<String>,
    /// Base of the platform's sandbox redirect URIs
    /// [default: https://oauth-redirect-sandbox.googleusercontent.com].
    #[arg(long, env = "LINKD_REDIRECT_SANDBOX_BASE", value_name = "URL")]
    pub redirect_sandbox_base: Option<String>,
    /// Base of the device-graph scope, `{base}/auth/devicegraph` [default: the issuer].
    #[arg(long, env = "LINKD_DEVICE_GRAPH_SCOPE_BASE", value_name = "URL")]
    pub device_graph_scope_base: Option<String>,
    /// Public base URL of the device-graph API, the audience of self-signed service-account
    /// JWTs [default: the issuer].
    #[arg(long, env = "LINKD_DEVICE_GRAPH_BASE_URL", value_name = "URL")]
    pub device_graph_base_url: Option<String>,
    /// An external device graph to send agentUsers.delete to when a user unlinks, instead of
    /// linkd's own (needs --device-graph-key-file).
    #[arg(long, env = "LINKD_DEVICE_GRAPH_URL", value_name = "URL")]
    pub device_graph_url: Option<String>,
    /// Service-account key file (JSON) to call --device-graph-url with.
    #[arg(long, env = "LINKD_DEVICE_GRAPH_KEY_FILE", value_name = "FILE")]
    pub device_graph_key_file: Option<PathBuf>,
    /// PEM file of CA certificates trusted for outbound HTTPS (fulfilment URLs, the external
    /// device graph), in addition to the system's roots.
    #[arg(long, env = "LINKD_OUTBOUND_CA_FILE", value_name = "FILE")]
    pub outbound_ca_file: Option<PathBuf>,
    /// Load balancers (addresses or CIDR networks, comma-separated) whose X-Forwarded-For
    /// names the client for per-address sign-in limits [default: none, the TCP peer is the
    /// client].
    #[arg(
        long,
        env = "LINKD_TRUSTED_PROXIES",
        value_name = "CIDR,...",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,
    /// Audiences (https URLs, comma-separated) that service accounts' JWT-bearer assertions
    /// may carry besides linkd's own token endpoint URL, which is always accepted; an empty
    /// value accepts that one only [default: https://oauth2.googleapis.com/token, which
    /// client libraries write whatever the key file's token_uri says].
    #[arg(
        long,
        env = "LINKD_ASSERTION_AUDIENCES",
        value_name = "URL,...",
        value_delimiter = ','
    )]
    pub assertion_audiences: Option<Vec<String>>,
}

/// The optional TOML file: the same settings as the flags, plus the global ones.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSettings {
    store: Option<String>,
    keys_dir: Option<PathBuf>,
    listen: Option<String>,
    issuer: Option<String>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
    plain_http: Option<bool>,
    log_format: Option<LogFormat>,
    log: Option<String>,
    signing_alg: Option<String>,
    key_reload_secs: Option<u64>,
    cert_reload_secs: Option<u64>,
    max_connections: Option<usize>,
    max_header_bytes: Option<usize>,
    header_read_timeout_secs: Option<u64>,
    tls_handshake_timeout_secs: Option<u64>,
    idle_timeout_secs: Option<u64>,
    request_timeout_secs: Option<u64>,
    shutdown_grace_secs: Option<u64>,
    store_timeout_ms: Option<u64>,
    code_ttl_secs: Option<i64>,
    access_token_ttl_secs: Option<i64>,
    platform_name: Option<String>,
    redirect_base: Option<String>,
    redirect_sandbox_base: Option<String>,
    device_graph_scope_base: Option<String>,
    device_graph_base_url: Option<String>,
    device_graph_url: Option<String>,
    device_graph_key_file: Option<PathBuf>,
    outbound_ca_file: Option<PathBuf>,
    trusted_proxies: Option<Vec<String>>,
    assertion_audiences: Option<Vec<String>>,
}

/// How connections are secured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSettings {
    /// Certificate and key files given by the operator.
    Files(CertificateFiles),
    /// A self-signed certificate generated into the keys directory.
    Development,
    /// No TLS (`--plain-http`).
    Plain,
}

/// Validated settings of a server: no loose options left.
#[derive(Debug, Clone)]
pub struct ServeSettings {
    /// Where the data lives (`redis://…` or a SQLite path).
    pub store: String,
    /// Keys directory.
    pub keys_dir: PathBuf,
    /// Listening address.
    pub listen: SocketAddr,
    /// Issuer URL, without trailing slash.
    pub issuer: String,
    /// TLS mode.
    pub tls: TlsSettings,
    /// Log format.
    pub log_format: LogFormat,
    /// Log filter.
    pub log_filter: String,
    /// Algorithm of a key created on an empty keys directory.
    pub signing_alg: Algorithm,
    /// Interval of keyring reload checks.
    pub key_reload_interval: Duration,
    /// Interval of certificate reload checks.
    pub cert_reload_interval: Duration,
    /// Server resource bounds.
    pub limits: ServerLimits,
    /// Store timeouts.
    pub store_timeouts: StoreTimeouts,
    /// Protocol policy.
    pub oauth: crate::app::OAuthSettings,
    /// The external device graph unlinks are sent to; `None` means linkd's own.
    pub external_device_graph:
        Option<std::sync::Arc<crate::devicegraph::graph_client::DeviceGraphClient>>,
    /// CA certificates trusted for outbound HTTPS besides the system's.
    pub outbound_roots: Vec<rustls_pki_types::CertificateDer<'static>>,
}

impl ServeSettings {
    /// Settings for a server on `listen`, with every default; for tests and embedding.
    pub fn with_defaults(store: String, keys_dir: PathBuf, listen: SocketAddr) -> Self {
        Self {
            store,
            keys_dir,
            listen,
            issuer: format!("https://{listen}"),
            tls: TlsSettings::Development,
            log_format: LogFormat::Human,
            log_filter: "info".to_owned(),
            signing_alg: Algorithm::Es256,
            key_reload_interval: Duration::from_secs(10),
            cert_reload_interval: Duration::from_secs(10),
            limits: ServerLimits::default(),
            store_timeouts: StoreTimeouts::default(),
            oauth: crate::app::OAuthSettings::default(),
            external_device_graph: None,
            outbound_roots: Vec::new(),
        }
    }
}

/// Layers flags (with their environment variables), the file and defaults, and validates
/// the result. Returns every problem found, each a line naming its flag.
pub fn resolve(
    store: Option<&str>,
    keys_dir: Option<&Path>,
    args: ServeArgs,
) -> Result<ServeSettings, Vec<String>> {
    let mut errors = Vec::new();
    let file = match &args.config {
        None => FileSettings::default(),
        Some(path) => match std::fs::read_to_string(path) {
            Err(error) => {
                errors.push(format!("--config {}: {error}", path.display()));
                FileSettings::default()
            }
            Ok(text) => match toml::from_str::<FileSettings>(&text) {
                Ok(file) => file,
                Err(error) => {
                    let message = error.message().to_owned();
                    errors.push(format!("--config {}: {message}", path.display()));
                    FileSettings::default()
                }
            },
        },
    };

    let store = store
        .map(str::to_owned)
        .or(file.store)
        .unwrap_or_else(|| DEFAULT_STORE.to_owned());
    if store.trim().is_empty() {
        errors.push("--store: must not be empty".to_owned());
    }
    let keys_dir = keys_dir
        .map(Path::to_path_buf)
        .or(file.keys_dir)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_KEYS_DIR));

    let listen_text = args
        .listen
        .or(file.listen)
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let listen = match listen_text.parse::<SocketAddr>() {
        Ok(listen) => Some(listen),
        Err(_) => {
            errors.push(format!(
                "--listen {listen_text:?}: expected IP:PORT, e.g. 0.0.0.0:8443"
            ));
            None
        }
    };

    let plain_http = args.plain_http.or(file.plain_http).unwrap_or(false);
    let tls_cert = args.tls_cert.or(file.tls_cert);
    let tls_key = args.tls_key.or(file.tls_key);
    let tls = match (tls_cert, tls_key, plain_http) {
        (Some(_), _, true) | (_, Some(_), true) => {
            errors.push("--plain-http: cannot be combined with --tls-cert/--tls-key".to_owned());
            TlsSettings::Plain
        }
        (None, None, true) => TlsSettings::Plain,
        (None, None, false) => TlsSettings::Development,
        (Some(cert), Some(key), false) => {
            for (flag, path) in [("--tls-cert", &cert), ("--tls-key", &key)] {
                if !path.is_file() {
                    errors.push(format!("{flag} {}: no such file", path.display()));
                }
            }
            TlsSettings::Files(CertificateFiles { cert, key })
        }
        (Some(_), None, false) => {
            errors.push("--tls-key: required with --tls-cert".to_owned());
            TlsSettings::Development
        }
        (None, Some(_), false) => {
            errors.push("--tls-cert: required with --tls-key".to_owned());
            TlsSettings::Development
        }
    };

    let issuer = match args.issuer.or(file.issuer) {
        Some(issuer) => match validate_issuer(&issuer, plain_http) {
            Ok(issuer) => Some(issuer),
            Err(reason) => {
                errors.push(format!("--issuer {issuer:?}: {reason}"));
                None
            }
        },
        None => listen.map(|listen| format!("https://{listen}")),
    };

    let signing_alg_text = args
        .signing_alg
        .or(file.signing_alg)
        .unwrap_or_else(|| "es256".to_owned());
    let signing_alg = match signing_alg_text.parse::<Algorithm>() {
        Ok(alg) => alg,
        Err(_) => {
            errors.push(format!(
                "--signing-alg {signing_alg_text:?}: expected es256 or eddsa"
            ));
            Algorithm::Es256
        }
    };

    let mut seconds = |flag: &str, value: Option<u64>, default: u64, min: u64, max: u64| {
        let value = value.unwrap_or(default);
        if value < min || value > max {
            errors.push(format!("{flag} {value}: must be between {min} and {max}"));
        }
        Duration::from_secs(value)
    };
    let key_reload_interval = seconds(
        "--key-reload-secs",
        args.key_reload_secs.or(file.key_reload_secs),
        10,
        1,
        3600,
    );
    let cert_reload_interval = seconds(
        "--cert-reload-secs",
        args.cert_reload_secs.or(file.cert_reload_secs),
        10,
        1,
        3600,
    );
    let header_read_timeout = seconds(
        "--header-read-timeout-secs",
        args.header_read_timeout_secs
            .or(file.header_read_timeout_secs),
        10,
        1,
        300,
    );
    let tls_handshake_timeout = seconds(
        "--tls-handshake-timeout-secs",
        args.tls_handshake_timeout_secs
            .or(file.tls_handshake_timeout_secs),
        10,
        1,
        300,
    );
    let idle_timeout = seconds(
        "--idle-timeout-secs",
        args.idle_timeout_secs.or(file.idle_timeout_secs),
        60,
        1,
        3600,
    );
    let request_timeout = seconds(
        "--request-timeout-secs",
        args.request_timeout_secs.or(file.request_timeout_secs),
        30,
        1,
        600,
    );
    let shutdown_grace = seconds(
        "--shutdown-grace-secs",
        args.shutdown_grace_secs.or(file.shutdown_grace_secs),
        25,
        0,
        600,
    );
    let store_timeout_ms = args
        .store_timeout_ms
        .or(file.store_timeout_ms)
        .unwrap_or(2000);
    if !(10..=60_000).contains(&store_timeout_ms) {
        errors.push(format!(
            "--store-timeout-ms {store_timeout_ms}: must be between 10 and 60000"
        ));
    }
    // A code exchange makes about ten store calls in the worst case (its finishing step is
    // asked again for a whole lease of three). The request timeout must outlast them: a
    // timeout answered after the code was spent would turn the platform's retry into a
    // replay that revokes the new grant.
    let exchange_budget_ms = store_timeout_ms.saturating_mul(10).saturating_add(2000);
    if u128::from(exchange_budget_ms) > request_timeout.as_millis() {
        errors.push(format!(
            "--request-timeout-secs {}: must be at least 10 × --store-timeout-ms + 2 s ({} s), \
             so that a code exchange never times out after spending the code",
            request_timeout.as_secs(),
            exchange_budget_ms.div_ceil(1000)
        ));
    }
    let max_connections = args
        .max_connections
        .or(file.max_connections)
        .unwrap_or(1024);
    if !(1..=1_000_000).contains(&max_connections) {
        errors.push(format!(
            "--max-connections {max_connections}: must be between 1 and 1000000"
        ));
    }
    let max_header_bytes = args
        .max_header_bytes
        .or(file.max_header_bytes)
        .unwrap_or(16 * 1024);
    // hyper refuses HTTP/1 buffers under 8 KiB.
    if !(8192..=1024 * 1024).contains(&max_header_bytes) {
        errors.push(format!(
            "--max-header-bytes {max_header_bytes}: must be between 8192 and 1048576"
        ));
    }

    let log_format = args
        .log_format
        .or(file.log_format)
        .unwrap_or(LogFormat::Human);
    let log_filter = args.log.or(file.log).unwrap_or_else(|| "info".to_owned());
    if tracing_subscriber::EnvFilter::try_new(&log_filter).is_err() {
        errors.push(format!("--log {log_filter:?}: not a valid log filter"));
    }

    let mut oauth = crate::app::OAuthSettings {
        code_ttl_secs: args.code_ttl_secs.or(file.code_ttl_secs).unwrap_or(600),
        access_token_ttl_secs: args
            .access_token_ttl_secs
            .or(file.access_token_ttl_secs)
            .unwrap_or(3600),
        ..crate::app::OAuthSettings::default()
    };
    if !(10..=600).contains(&oauth.code_ttl_secs) {
        errors.push(format!(
            "--code-ttl-secs {}: must be between 10 and 600",
            oauth.code_ttl_secs
        ));
    }
    if !(60..=86_400).contains(&oauth.access_token_ttl_secs) {
        errors.push(format!(
            "--access-token-ttl-secs {}: must be between 60 and 86400",
            oauth.access_token_ttl_secs
        ));
    }
    if let Some(name) = args.platform_name.or(file.platform_name) {
        if name.trim().is_empty() || name.chars().count() > 60 || name.chars().any(char::is_control)
        {
            errors.push(format!(
                "--platform-name {name:?}: 1-60 printable characters"
            ));
        }
        oauth.platform_name = name;
    }
    for (flag, value, slot) in [
        (
            "--redirect-base",
            args.redirect_base.or(file.redirect_base),
            0,
        ),
        (
            "--redirect-sandbox-base",
            args.redirect_sandbox_base.or(file.redirect_sandbox_base),
            1,
        ),
    ] {
        if let Some(base) = value {
            match crate::redirect_uri::validate_for_registration(&base) {
                Ok(()) if !base.contains('?') => {
                    oauth.redirect_bases[slot] = base.trim_end_matches('/').to_owned();
                }
                Ok(()) => errors.push(format!("{flag} {base:?}: must not contain a query")),
                Err(reason) => errors.push(format!("{flag} {base:?}: {reason}")),
            }
        }
    }
    for (flag, value, slot) in [
        (
            "--device-graph-scope-base",
            args.device_graph_scope_base
                .or(file.device_graph_scope_base),
            &mut oauth.devicegraph_scope_base,
        ),
        (
            "--device-graph-base-url",
            args.device_graph_base_url.or(file.device_graph_base_url),
            &mut oauth.devicegraph_base_url,
        ),
    ] {
        if let Some(url) = value {
            // The same rules as the issuer's: these URLs name this issuer's API and scopes.
            match validate_issuer(&url, false) {
                Ok(url) => *slot = Some(url),
                Err(reason) => errors.push(format!("{flag} {url:?}: {reason}")),
            }
        }
    }
    let external_device_graph = match (
        args.device_graph_url.or(file.device_graph_url),
        args.device_graph_key_file.or(file.device_graph_key_file),
    ) {
        (None, None) => None,
        (Some(url), Some(key_file)) => {
            match crate::devicegraph::graph_client::DeviceGraphClient::external(&url, &key_file) {
                Ok(graph) => Some(std::sync::Arc::new(graph)),
                Err(reason) => {
                    errors.push(format!(
                        "--device-graph-url/--device-graph-key-file: {reason}"
                    ));
                    None
                }
            }
        }
        _ => {
            errors.push(
                "--device-graph-url and --device-graph-key-file: give both or neither".to_owned(),
            );
            None
        }
    };
    let trusted_proxies = if args.trusted_proxies.is_empty() {
        file.trusted_proxies.unwrap_or_default()
    } else {
        args.trusted_proxies
    };
    for entry in trusted_proxies
        .iter()
        .filter(|entry| !entry.trim().is_empty())
    {
        match crate::http::client_address::parse_trusted_proxy(entry) {
            Ok(network) => oauth.trusted_proxies.push(network),
            Err(reason) => errors.push(format!("--trusted-proxies: {reason}")),
        }
    }
    if let Some(audiences) = args.assertion_audiences.or(file.assertion_audiences) {
        oauth.assertion_audiences.clear();
        for audience in audiences.iter().filter(|entry| !entry.trim().is_empty()) {
            match validate_issuer(audience.trim(), false) {
                Ok(audience) => oauth.assertion_audiences.push(audience),
                Err(reason) => {
                    errors.push(format!("--assertion-audiences {audience:?}: {reason}"));
                }
            }
        }
    }
    let outbound_roots = match args.outbound_ca_file.or(file.outbound_ca_file) {
        None => Vec::new(),
        Some(path) => crate::outbound::read_ca_file(&path).unwrap_or_else(|reason| {
            errors.push(format!("--outbound-ca-file: {reason}"));
            Vec::new()
        }),
    };

    match (listen, issuer) {
        (Some(listen), Some(issuer)) if errors.is_empty() => Ok(ServeSettings {
            store,
            keys_dir,
            listen,
            issuer,
            tls,
            log_format,
            log_filter,
            signing_alg,
            key_reload_interval,
            cert_reload_interval,
            limits: ServerLimits {
                max_connections,
                tls_handshake_timeout,
                header_read_timeout,
                max_header_bytes,
                idle_timeout,
                request_timeout,
                shutdown_grace,
                ..ServerLimits::default()
            },
            store_timeouts: StoreTimeouts {
                connect: Duration::from_millis(store_timeout_ms),
                response: Duration::from_millis(store_timeout_ms),
            },
            oauth,
            external_device_graph,
            outbound_roots,
        }),
        _ => Err(errors),
    }
}

/// An issuer is an absolute `https` URL with no query or fragment (RFC 8414 §2); `http`
/// only for loopback development behind `--plain-http`.
fn validate_issuer(issuer: &str, plain_http: bool) -> Result<String, &'static str> {
    let trimmed = issuer.trim_end_matches('/');
    let rest = if let Some(rest) = trimmed.strip_prefix("https://") {
        rest
    } else if let Some(rest) = trimmed.strip_prefix("http://") {
        let authority = rest.split('/').next().unwrap_or_default();
        let host = authority
            .rsplit_once(':')
            .map_or(authority, |(host, _port)| host);
        if !(plain_http && matches!(host, "127.0.0.1" | "localhost" | "[::1]")) {
            return Err("must start with https:// (http:// only for loopback with --plain-http)");
        }
        rest
    } else {
        return Err("must start with https://");
    };
    if rest.is_empty() || rest.starts_with('/') {
        return Err("has no host");
    }
    if rest.contains(['?', '#']) {
        return Err("must not contain a query or fragment");
    }
    if rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not contain spaces or control characters");
    }
    Ok(trimmed.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_resolve() {
        let settings = resolve(None, None, ServeArgs::default()).unwrap();
        assert_eq!(settings.listen.to_string(), DEFAULT_LISTEN);
        assert_eq!(settings.issuer, "https://127.0.0.1:8443");
        assert_eq!(settings.tls, TlsSettings::Development);
        assert_eq!(settings.store, DEFAULT_STORE);
    }

    #[test]
    fn every_error_is_reported_at_once_with_its_flag() {
        let args = ServeArgs {
            listen: Some("nowhere".into()),
            issuer: Some("ftp://x".into()),
            max_header_bytes: Some(100),
            signing_alg: Some("rs256".into()),
            device_graph_url: Some("https://graph.example".into()),
            outbound_ca_file: Some("/nonexistent/ca.pem".into()),
            trusted_proxies: vec!["10.0.0.0/8".into(), "balancer".into()],
            ..ServeArgs::default()
        };
        let errors = resolve(None, None, args).unwrap_err();
        let joined = errors.join("\n");
        for flag in [
            "--listen",
            "--issuer",
            "--max-header-bytes",
            "--signing-alg",
            "--device-graph-key-file",
            "--outbound-ca-file",
            "--trusted-proxies",
        ] {
            assert!(joined.contains(flag), "{flag} missing from {joined}");
        }
    }

    #[test]
    fn a_request_timeout_shorter_than_a_code_exchange_is_refused() {
        let args = ServeArgs {
            store_timeout_ms: Some(5000),
            ..ServeArgs::default()
        };
        let errors = resolve(None, None, args).unwrap_err().join("\n");
        assert!(errors.contains("--request-timeout-secs 30"), "{errors}");
        let args = ServeArgs {
            store_timeout_ms: Some(5000),
            request_timeout_secs: Some(52),
            ..ServeArgs::default()
        };
        assert!(resolve(None, None, args).is_ok());
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("linkd.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nidle_timeout_secs = 5\nstore = \"from-file.db\"\n\
             trusted_proxies = [\"10.0.0.0/8\", \"192.0.2.1\"]\n",
        )
        .unwrap();
        let args = ServeArgs {
            config: Some(file),
            listen: Some("127.0.0.1:9001".into()),
            ..ServeArgs::default()
        };
        let settings = resolve(None, None, args).unwrap();
        assert_eq!(settings.listen.port(), 9001);
        assert_eq!(settings.limits.idle_timeout, Duration::from_secs(5));
        assert_eq!(settings.store, "from-file.db");
        assert_eq!(settings.oauth.trusted_proxies.len(), 2);
    }

    #[test]
    fn unknown_file_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("linkd.toml");
        std::fs::write(&file, "lisen = \"127.0.0.1:9000\"\n").unwrap();
        let args = ServeArgs {
            config: Some(file),
            ..ServeArgs::default()
        };
        let errors = resolve(None, None, args).unwrap_err();
        assert!(errors[0].contains("--config"), "{errors:?}");
        assert!(errors[0].contains("lisen"), "{errors:?}");
    }

    #[test]
    fn issuer_must_be_https_without_query() {
        assert!(validate_issuer("https://id.example.com/", false).is_ok());
        assert_eq!(
            validate_issuer("https://id.example.com/", false).unwrap(),
            "https://id.example.com"
        );
        assert!(validate_issuer("http://id.example.com", true).is_err());
        assert!(validate_issuer("http://127.0.0.1:8080", true).is_ok());
        assert!(validate_issuer("http://127.0.0.1:8080", false).is_err());
        assert!(validate_issuer("https://id.example.com/?a=b", false).is_err());
        assert!(validate_issuer("https://", false).is_err());
    }

    #[test]
    fn plain_http_excludes_certificates() {
        let args = ServeArgs {
            plain_http: Some(true),
            tls_cert: Some("c.pem".into()),
            tls_key: Some("k.pem".into()),
            ..ServeArgs::default()
        };
        let errors = resolve(None, None, args).unwrap_err();
        assert!(errors.iter().any(|e| e.contains("--plain-http")));
    }

    #[test]
    fn assertion_audiences_default_to_the_well_known_one_and_may_be_replaced() {
        let settings = resolve(None, None, ServeArgs::default()).unwrap();
        assert_eq!(
            settings.oauth.assertion_audiences,
            [crate::service_accounts::WELL_KNOWN_TOKEN_AUDIENCE]
        );
        let audiences = |given: &[&str]| {
            resolve(
                None,
                None,
                ServeArgs {
                    assertion_audiences: Some(given.iter().map(|a| (*a).to_owned()).collect()),
                    ..ServeArgs::default()
                },
            )
            .map(|settings| settings.oauth.assertion_audiences)
        };
        assert_eq!(audiences(&[""]).unwrap(), Vec::<String>::new());
        assert_eq!(
            audiences(&["https://a.example/token/", " https://b.example/t"]).unwrap(),
            ["https://a.example/token", "https://b.example/t"]
        );
        let errors = audiences(&["http://a.example/token", "https://b.example/t"]).unwrap_err();
        assert!(
            errors[0].contains("--assertion-audiences \"http://a.example/token\""),
            "{errors:?}"
        );

        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("linkd.toml");
        std::fs::write(&file, "assertion_audiences = []\n").unwrap();
        let settings = resolve(
            None,
            None,
            ServeArgs {
                config: Some(file),
                ..ServeArgs::default()
            },
        )
        .unwrap();
        assert!(settings.oauth.assertion_audiences.is_empty());
    }
}
