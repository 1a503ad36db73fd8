//! The default of every setting of `linkd serve` that no flag, variable or file key gave, in
//! one place. The validators apply them; the help text and the README's operator guide
//! restate them for operators. Settings whose default depends on another (the issuer on the
//! listening address, the device-graph URLs on the issuer) say so where they are validated.

use crate::logging::LogFormat;
use crate::tokens::keyring::Algorithm;

/// Listening address.
pub const LISTEN: &str = "127.0.0.1:8443";
/// Store: the embedded SQLite file at this path.
pub const STORE: &str = "linkd.db";
/// Keys directory.
pub const KEYS_DIR: &str = "keys";
/// Whether to serve plain HTTP instead of TLS.
pub const PLAIN_HTTP: bool = false;
/// Log format.
pub const LOG_FORMAT: LogFormat = LogFormat::Human;
/// Log filter.
pub const LOG_FILTER: &str = "info";
/// Algorithm of the key created in an empty keys directory.
pub const SIGNING_ALG: Algorithm = Algorithm::Es256;
/// Seconds between checks of the keys directory.
pub const KEY_RELOAD_SECS: u64 = 10;
/// Seconds between checks of the certificate files.
pub const CERT_RELOAD_SECS: u64 = 10;
/// Connections served at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// Request head limit, bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Seconds to send a request head.
pub const HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// Seconds to finish the TLS handshake.
pub const TLS_HANDSHAKE_TIMEOUT_SECS: u64 = 10;
/// Seconds an idle keep-alive connection stays open.
pub const IDLE_TIMEOUT_SECS: u64 = 60;
/// Seconds a request may take.
pub const REQUEST_TIMEOUT_SECS: u64 = 30;
/// Seconds linkd reports not-ready and keeps serving after SIGTERM before it closes its
/// listeners.
pub const DRAIN_DELAY_SECS: u64 = 5;
/// Seconds in-flight requests get after SIGTERM.
pub const SHUTDOWN_GRACE_SECS: u64 = 25;
/// Milliseconds a store call may take.
pub const STORE_TIMEOUT_MS: u64 = 2000;
/// Authorization code lifetime, seconds.
pub const CODE_TTL_SECS: i64 = 600;
/// Access token lifetime, seconds.
pub const ACCESS_TOKEN_TTL_SECS: i64 = 3600;
/// Name of the platform accounts are linked to.
pub const PLATFORM_NAME: &str = "Google";
/// Base of the platform's redirect URIs.
pub const REDIRECT_BASE: &str = crate::redirect_uri::DEFAULT_REDIRECT_BASE;
/// Base of the platform's sandbox redirect URIs.
pub const REDIRECT_SANDBOX_BASE: &str = crate::redirect_uri::DEFAULT_REDIRECT_SANDBOX_BASE;
/// Audiences of service accounts' assertions accepted besides linkd's own token URL.
pub const ASSERTION_AUDIENCES: &[&str] = &[crate::service_accounts::WELL_KNOWN_TOKEN_AUDIENCE];
