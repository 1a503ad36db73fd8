//! The raw settings of `linkd serve`: the one list of its settings, each a flag, a `LINKD_*`
//! environment variable and a key of the `--config` TOML file, none of them checked yet.
//! Clap fills a [`RawSettings`] from the flags and the environment (a flag over its
//! variable); [`layered`] lays it over the file's. Defaults come later, in validation.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::logging::LogFormat;

/// Declares the raw settings struct and derives from its one field list how two layers
/// merge, so that a setting added to the struct cannot be forgotten by the merge.
macro_rules! raw_settings {
    (
        $(#[$struct_meta:meta])*
        pub struct $name:ident {
            $(
                $(#[$field_meta:meta])*
                pub $field:ident: $type:ty,
            )*
        }
    ) => {
        $(#[$struct_meta])*
        pub struct $name {
            $(
                $(#[$field_meta])*
                pub $field: $type,
            )*
        }

        impl $name {
            /// Every setting `self` has, and `lower`'s where `self` has none.
            pub fn or(self, lower: Self) -> Self {
                Self {
                    $($field: self.$field.or(lower.$field),)*
                }
            }
        }
    };
}

raw_settings! {
    /// Settings of `linkd serve`, each optional: a flag wins over its environment variable,
    /// which wins over the `--config` file, which wins over the default. File keys are the
    /// flag names with `_`; a key the file does not know is an error.
    #[derive(Debug, Default, clap::Args, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct RawSettings {
        /// TOML file with any of the settings below (keys as the flag names, with `_`).
        #[arg(long, env = "LINKD_CONFIG", value_name = "FILE")]
        #[serde(skip)]
        pub config: Option<PathBuf>,
        /// Where the data lives: the global `--store` flag (`LINKD_STORE`), for every command.
        #[arg(skip)]
        pub store: Option<String>,
        /// The keys directory: the global `--keys-dir` flag (`LINKD_KEYS_DIR`), for every
        /// command.
        #[arg(skip)]
        pub keys_dir: Option<PathBuf>,
        /// Address to listen on [default: 127.0.0.1:8443].
        #[arg(long, env = "LINKD_LISTEN", value_name = "ADDR")]
        pub listen: Option<String>,
        /// Address of a second, plain-HTTP listener for a private network that serves
        /// /metrics, /healthz and /readyz; when set, /metrics is served there only
        /// [default: none].
        #[arg(long, env = "LINKD_ADMIN_LISTEN", value_name = "ADDR")]
        pub admin_listen: Option<String>,
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
        #[arg(
            long,
            env = "LINKD_PLAIN_HTTP",
            num_args = 0..=1,
            default_missing_value = "true",
            value_name = "BOOL"
        )]
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
        /// Seconds between SIGTERM/SIGINT and closing the listeners, during which /readyz
        /// reports not-ready and requests are still served, so that load balancers stop
        /// sending traffic first [default: 5].
        #[arg(long, env = "LINKD_DRAIN_DELAY_SECS", value_name = "SECS")]
        pub drain_delay_secs: Option<u64>,
        /// Seconds in-flight requests get to finish after SIGTERM/SIGINT [default: 25].
        #[arg(long, env = "LINKD_SHUTDOWN_GRACE_SECS", value_name = "SECS")]
        pub shutdown_grace_secs: Option<u64>,
        /// PEM file of CA certificates trusted for a `rediss…` store besides the system's roots
        /// (the admin commands read LINKD_STORE_CA_FILE).
        #[arg(long, env = "LINKD_STORE_CA_FILE", value_name = "FILE")]
        pub store_ca_file: Option<PathBuf>,
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
        /// Base of the platform's redirect URIs
        /// [default: https://oauth-redirect.googleusercontent.com].
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
        pub trusted_proxies: Option<Vec<String>>,
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
}

impl RawSettings {
    /// The settings of a TOML file's text.
    pub fn from_toml(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|error| error.message().to_owned())
    }

    /// The settings of the TOML file at `path`, or what is wrong with it, naming `--config`.
    pub fn read_file(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("--config {}: {error}", path.display()))?;
        Self::from_toml(&text).map_err(|message| format!("--config {}: {message}", path.display()))
    }
}

/// The flags and environment (`flags`) laid over the file they name, if any. A file that
/// cannot be read or parsed is reported and counts as empty, so that the other settings are
/// still checked and every problem is reported at once.
pub fn layered(flags: RawSettings) -> (RawSettings, Option<String>) {
    match flags.config.as_deref().map(RawSettings::read_file) {
        None => (flags, None),
        Some(Ok(file)) => (flags.or(file), None),
        Some(Err(problem)) => (flags, Some(problem)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_higher_layer_wins_setting_by_setting() {
        let flags = RawSettings {
            listen: Some("127.0.0.1:9001".into()),
            ..RawSettings::default()
        };
        let file = RawSettings::from_toml(
            "listen = \"127.0.0.1:9000\"\nidle_timeout_secs = 5\nstore = \"from-file.db\"\n",
        )
        .unwrap();
        let merged = flags.or(file);
        assert_eq!(merged.listen.as_deref(), Some("127.0.0.1:9001"));
        assert_eq!(merged.idle_timeout_secs, Some(5));
        assert_eq!(merged.store.as_deref(), Some("from-file.db"));
        assert_eq!(merged.max_connections, None, "left to the default");
    }

    #[test]
    fn the_file_knows_every_setting_but_the_file_itself() {
        let file = RawSettings::from_toml(
            "trusted_proxies = [\"10.0.0.0/8\"]\nassertion_audiences = []\nplain_http = true\n\
             log_format = \"json\"\nkeys_dir = \"k\"\n",
        )
        .unwrap();
        assert_eq!(file.trusted_proxies.unwrap(), ["10.0.0.0/8"]);
        assert_eq!(file.assertion_audiences.unwrap(), Vec::<String>::new());
        assert_eq!(file.plain_http, Some(true));
        assert_eq!(file.log_format, Some(LogFormat::Json));
        assert_eq!(file.keys_dir, Some(PathBuf::from("k")));
        for unknown in ["lisen = \"x\"", "config = \"other.toml\""] {
            let problem = RawSettings::from_toml(unknown).unwrap_err();
            assert!(problem.contains("unknown field"), "{problem}");
        }
    }

    #[test]
    fn a_bad_file_is_reported_and_the_flags_still_count() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("linkd.toml");
        std::fs::write(&file, "lisen = \"127.0.0.1:9000\"\n").unwrap();
        let flags = RawSettings {
            config: Some(file),
            listen: Some("127.0.0.1:9001".into()),
            ..RawSettings::default()
        };
        let (raw, problem) = layered(flags);
        let problem = problem.unwrap();
        assert!(problem.starts_with("--config "), "{problem}");
        assert!(problem.contains("lisen"), "{problem}");
        assert_eq!(raw.listen.as_deref(), Some("127.0.0.1:9001"));

        let missing = RawSettings {
            config: Some(dir.path().join("absent.toml")),
            ..RawSettings::default()
        };
        assert!(layered(missing).1.unwrap().starts_with("--config "));
    }
}
