//! Loading validated settings into the [`ServeSettings`] a server runs with: the one step of
//! the configuration that reads files, those the operator named. It checks that the
//! certificate files exist, reads the outbound and store CA certificates, the Redis
//! credentials of the environment and the external device graph's key file. Opening the store and loading the keyring and the certificate are the
//! server's, at start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::CertificateDer;

use super::defaults;
use super::validate::listener::TlsSettings;
use super::validate::{Problems, ValidSettings};
use crate::app::OAuthSettings;
use crate::devicegraph::graph_client::DeviceGraphClient;
use crate::http::ServerLimits;
use crate::logging::LogFormat;
use crate::store::StoreTimeouts;
use crate::store::redis_connect::{RedisCredentials, read_ca_file};
use crate::tokens::keyring::Algorithm;

/// Settings of a server, loaded: no loose options left.
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
    /// Address of the plain-HTTP admin listener (`/metrics`, `/healthz`, `/readyz`), if any.
    pub admin_listen: Option<SocketAddr>,
    /// Time between the stop signal and closing the listeners, while readiness fails.
    pub drain_delay: Duration,
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
    /// PEM CA certificates trusted for a `rediss` store besides the system's.
    pub store_ca_certificates: Option<Vec<u8>>,
    /// Redis credentials from the environment.
    pub store_credentials: RedisCredentials,
    /// Protocol policy.
    pub oauth: OAuthSettings,
    /// The external device graph unlinks are sent to; `None` means linkd's own.
    pub external_device_graph: Option<Arc<DeviceGraphClient>>,
    /// CA certificates trusted for outbound HTTPS besides the system's.
    pub outbound_roots: Vec<CertificateDer<'static>>,
    /// The shortest time between two fetches of one identity provider's key set for tokens
    /// naming keys linkd has not seen (no flag: tests shorten it).
    pub jwks_refetch_interval: Duration,
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
            admin_listen: None,
            drain_delay: Duration::from_secs(defaults::DRAIN_DELAY_SECS),
            log_format: defaults::LOG_FORMAT,
            log_filter: defaults::LOG_FILTER.to_owned(),
            signing_alg: defaults::SIGNING_ALG,
            key_reload_interval: Duration::from_secs(defaults::KEY_RELOAD_SECS),
            cert_reload_interval: Duration::from_secs(defaults::CERT_RELOAD_SECS),
            limits: ServerLimits::default(),
            store_timeouts: StoreTimeouts::default(),
            store_ca_certificates: None,
            store_credentials: RedisCredentials::default(),
            oauth: OAuthSettings::default(),
            external_device_graph: None,
            outbound_roots: Vec::new(),
            jwks_refetch_interval: crate::identity::key_sets::JWKS_REFETCH_INTERVAL,
        }
    }
}

/// Reads the files `valid` names and assembles the settings of a server. Every file that
/// cannot be used is reported, naming its flag.
pub fn load(valid: ValidSettings) -> Result<ServeSettings, Problems> {
    let mut problems = Problems::new();
    if let TlsSettings::Files(files) = &valid.listener.tls {
        for (flag, path) in [("--tls-cert", &files.cert), ("--tls-key", &files.key)] {
            if !path.is_file() {
                problems.push(format!("{flag} {}: no such file", path.display()));
            }
        }
    }
    let external_device_graph = valid
        .outbound
        .external_device_graph
        .as_ref()
        .and_then(|graph| {
            DeviceGraphClient::external(&graph.url, &graph.key_file)
                .map(Arc::new)
                .map_err(|reason| {
                    problems.push(format!(
                        "--device-graph-url/--device-graph-key-file: {reason}"
                    ));
                })
                .ok()
        });
    let outbound_roots = match &valid.outbound.ca_file {
        None => Vec::new(),
        Some(path) => crate::outbound::read_ca_file(path).unwrap_or_else(|reason| {
            problems.push(format!("--outbound-ca-file: {reason}"));
            Vec::new()
        }),
    };
    let store_ca_certificates = valid.store.ca_file.as_ref().and_then(|path| {
        read_ca_file(path)
            .map_err(|reason| problems.push(format!("--store-ca-file: {reason}")))
            .ok()
    });
    let store_credentials = RedisCredentials::from_env().unwrap_or_else(|reason| {
        problems.push(reason);
        RedisCredentials::default()
    });
    if !problems.is_empty() {
        return Err(problems);
    }
    let oauth = valid.oauth_settings();
    Ok(ServeSettings {
        store: valid.store.location,
        keys_dir: valid.keys.dir,
        listen: valid.listener.address,
        issuer: valid.urls.issuer,
        tls: valid.listener.tls,
        admin_listen: valid.listener.admin_address,
        drain_delay: valid.listener.drain_delay,
        log_format: valid.logging.format,
        log_filter: valid.logging.filter,
        signing_alg: valid.keys.signing_alg,
        key_reload_interval: valid.keys.reload_interval,
        cert_reload_interval: valid.listener.cert_reload_interval,
        limits: valid.limits,
        store_timeouts: valid.store.timeouts,
        store_ca_certificates,
        store_credentials,
        oauth,
        external_device_graph,
        outbound_roots,
        jwks_refetch_interval: crate::identity::key_sets::JWKS_REFETCH_INTERVAL,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::raw::RawSettings;
    use crate::config::validate::validate;

    #[test]
    fn settings_without_files_load_as_validated() {
        let raw = RawSettings {
            listen: Some("127.0.0.1:9001".into()),
            idle_timeout_secs: Some(5),
            ..RawSettings::default()
        };
        let settings = load(validate(&raw).unwrap()).unwrap();
        assert_eq!(settings.listen.port(), 9001);
        assert_eq!(settings.issuer, "https://127.0.0.1:9001");
        assert_eq!(settings.limits.idle_timeout, Duration::from_secs(5));
        assert!(settings.external_device_graph.is_none());
        assert!(settings.outbound_roots.is_empty());
    }

    #[test]
    fn every_file_that_cannot_be_used_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let absent = |name: &str| Some(dir.path().join(name));
        let raw = RawSettings {
            tls_cert: absent("cert.pem"),
            tls_key: absent("key.pem"),
            device_graph_url: Some("https://graph.example".into()),
            device_graph_key_file: absent("key.json"),
            outbound_ca_file: absent("ca.pem"),
            store_ca_file: absent("store-ca.pem"),
            ..RawSettings::default()
        };
        let problems = load(validate(&raw).unwrap()).unwrap_err();
        assert_eq!(problems.len(), 5, "{problems:?}");
        assert!(problems[0].starts_with("--tls-cert "), "{problems:?}");
        assert!(problems[0].ends_with(": no such file"), "{problems:?}");
        assert!(problems[1].starts_with("--tls-key "), "{problems:?}");
        assert!(problems[2].starts_with("--device-graph-url/--device-graph-key-file: "));
        assert!(problems[3].starts_with("--outbound-ca-file: "));
        assert!(problems[4].starts_with("--store-ca-file: "), "{problems:?}");
    }

    #[test]
    fn the_defaults_for_embedding_are_the_validated_defaults() {
        let valid = validate(&RawSettings::default()).unwrap();
        let listen = valid.listener.address;
        let loaded = load(valid).unwrap();
        let embedded = ServeSettings::with_defaults(
            defaults::STORE.to_owned(),
            defaults::KEYS_DIR.into(),
            listen,
        );
        assert_eq!(format!("{loaded:?}"), format!("{embedded:?}"));
    }
}
