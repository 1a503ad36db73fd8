//! Validation of the layered [`RawSettings`], one pure function per section from the raw
//! settings to a typed section: no file is read, nothing is called and no store is opened
//! here (that is [`super::load`]'s). Every section reports all of its problems, and
//! [`validate`] all sections' together, each a line naming the flag that fixes it.
//!
//! | section | flags |
//! |---|---|
//! | [`listener`] | `--listen`, `--plain-http`, `--tls-cert`, `--tls-key`, `--cert-reload-secs` |
//! | [`store`] | `--store`, `--store-ca-file`, `--store-timeout-ms` |
//! | [`keys`] | `--keys-dir`, `--signing-alg`, `--key-reload-secs` |
//! | [`urls`] | `--issuer`, `--redirect-base`, `--redirect-sandbox-base`, `--device-graph-scope-base`, `--device-graph-base-url`, `--assertion-audiences` |
//! | [`limits`] | `--max-connections`, `--max-header-bytes`, the `--…-timeout-secs`, `--shutdown-grace-secs` |
//! | [`oauth`] | `--code-ttl-secs`, `--access-token-ttl-secs`, `--platform-name` |
//! | [`throttling`] | `--trusted-proxies` |
//! | [`outbound`] | `--device-graph-url`, `--device-graph-key-file`, `--outbound-ca-file` |
//! | [`logging`] | `--log-format`, `--log` |

pub mod keys;
pub mod limits;
pub mod listener;
pub mod logging;
pub mod oauth;
pub mod outbound;
pub mod store;
pub mod throttling;
pub mod urls;

use std::fmt::Display;
use std::ops::RangeInclusive;

use super::defaults;
use super::raw::RawSettings;
use crate::app::OAuthSettings;
use crate::http::ServerLimits;

/// What is wrong with the settings: one line per problem, each naming the flag that fixes it.
pub type Problems = Vec<String>;

/// The settings with every section valid. Files they name are not read yet.
#[derive(Debug, Clone)]
pub struct ValidSettings {
    /// Listening address and TLS mode.
    pub listener: listener::Listener,
    /// Store location and timeouts.
    pub store: store::Store,
    /// Keys directory and keyring policy.
    pub keys: keys::Keys,
    /// Issuer and the other URLs linkd names.
    pub urls: urls::Urls,
    /// Server resource bounds.
    pub limits: ServerLimits,
    /// Lifetimes and page text of the OAuth protocol.
    pub oauth: oauth::OAuthPolicy,
    /// Who is trusted to name the client's address.
    pub throttling: throttling::Throttling,
    /// Where outbound calls go and whom they trust.
    pub outbound: outbound::Outbound,
    /// Log format and filter.
    pub logging: logging::Logging,
}

impl ValidSettings {
    /// The protocol policy of these settings; what no flag sets keeps its default.
    pub fn oauth_settings(&self) -> OAuthSettings {
        OAuthSettings {
            code_ttl_secs: self.oauth.code_ttl_secs,
            access_token_ttl_secs: self.oauth.access_token_ttl_secs,
            platform_name: self.oauth.platform_name.clone(),
            redirect_bases: self.urls.redirect_bases.clone(),
            trusted_proxies: self.throttling.trusted_proxies.clone(),
            devicegraph_scope_base: self.urls.devicegraph_scope_base.clone(),
            devicegraph_base_url: self.urls.devicegraph_base_url.clone(),
            assertion_audiences: self.urls.assertion_audiences.clone(),
            ..OAuthSettings::default()
        }
    }
}

/// Validates every section of `raw`, reporting the problems of all of them at once.
pub fn validate(raw: &RawSettings) -> Result<ValidSettings, Problems> {
    let mut problems = Problems::new();
    let store = keep(store::validate(raw), &mut problems);
    let listener = keep(listener::validate(raw), &mut problems);
    let urls = keep(
        urls::validate(raw, listener.as_ref().map(|listener| listener.address)),
        &mut problems,
    );
    let keys = keep(keys::validate(raw), &mut problems);
    let limits = keep(limits::validate(raw), &mut problems);
    problems.extend(code_exchange_fits_in_a_request(raw).err());
    let logging = keep(logging::validate(raw), &mut problems);
    let oauth = keep(oauth::validate(raw), &mut problems);
    let throttling = keep(throttling::validate(raw), &mut problems);
    let outbound = keep(outbound::validate(raw), &mut problems);
    match (
        listener, store, keys, urls, limits, oauth, throttling, outbound, logging,
    ) {
        (
            Some(listener),
            Some(store),
            Some(keys),
            Some(urls),
            Some(limits),
            Some(oauth),
            Some(throttling),
            Some(outbound),
            Some(logging),
        ) if problems.is_empty() => Ok(ValidSettings {
            listener,
            store,
            keys,
            urls,
            limits,
            oauth,
            throttling,
            outbound,
            logging,
        }),
        _ => Err(problems),
    }
}

/// A code exchange makes about ten store calls in the worst case (its finishing step is
/// asked again for a whole lease of three). The request timeout must outlast them: a timeout
/// answered after the code was spent would turn the platform's retry into a replay that
/// revokes the new grant. Checked on the values given even when either is out of its own
/// range, so that the operator learns the real minimum at once.
fn code_exchange_fits_in_a_request(raw: &RawSettings) -> Result<(), String> {
    let store_timeout_ms = raw.store_timeout_ms.unwrap_or(defaults::STORE_TIMEOUT_MS);
    let request_timeout_secs = raw
        .request_timeout_secs
        .unwrap_or(defaults::REQUEST_TIMEOUT_SECS);
    let exchange_budget_ms = store_timeout_ms.saturating_mul(10).saturating_add(2000);
    if exchange_budget_ms > request_timeout_secs.saturating_mul(1000) {
        return Err(format!(
            "--request-timeout-secs {request_timeout_secs}: must be at least 10 × \
             --store-timeout-ms + 2 s ({} s), so that a code exchange never times out after \
             spending the code",
            exchange_budget_ms.div_ceil(1000)
        ));
    }
    Ok(())
}

/// The section when it is valid; otherwise its problems join `problems`.
fn keep<T>(section: Result<T, Problems>, problems: &mut Problems) -> Option<T> {
    section.map_err(|found| problems.extend(found)).ok()
}

/// `value` when `problems` is empty, else the problems: the end of every section validator.
fn finish<T>(value: T, problems: Problems) -> Result<T, Problems> {
    if problems.is_empty() {
        Ok(value)
    } else {
        Err(problems)
    }
}

/// `value`, with a problem recorded when it is outside `allowed`.
fn bounded<T: PartialOrd + Display + Copy>(
    flag: &str,
    value: T,
    allowed: RangeInclusive<T>,
    problems: &mut Problems,
) -> T {
    if !allowed.contains(&value) {
        problems.push(format!(
            "{flag} {value}: must be between {} and {}",
            allowed.start(),
            allowed.end()
        ));
    }
    value
}

/// An issuer, or another URL naming this issuer's API, is an absolute `https` URL with no
/// query or fragment (RFC 8414 §2), returned without its trailing slash; `http` only for
/// loopback development behind `--plain-http`.
fn https_url(url: &str, plain_http: bool) -> Result<String, &'static str> {
    let trimmed = url.trim_end_matches('/');
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
    use std::time::Duration;

    use super::*;

    #[test]
    fn empty_settings_validate_to_the_defaults() {
        let valid = validate(&RawSettings::default()).unwrap();
        assert_eq!(valid.listener.address.to_string(), defaults::LISTEN);
        assert_eq!(valid.urls.issuer, "https://127.0.0.1:8443");
        assert_eq!(valid.listener.tls, listener::TlsSettings::Development);
        assert_eq!(valid.store.location, defaults::STORE);
        assert_eq!(valid.keys.dir, std::path::Path::new(defaults::KEYS_DIR));
    }

    #[test]
    fn the_defaults_are_those_of_the_parts_they_configure() {
        let valid = validate(&RawSettings::default()).unwrap();
        let library = ServerLimits::default();
        let limits = &valid.limits;
        assert_eq!(limits.max_connections, library.max_connections);
        assert_eq!(limits.max_header_bytes, library.max_header_bytes);
        assert_eq!(limits.header_read_timeout, library.header_read_timeout);
        assert_eq!(limits.tls_handshake_timeout, library.tls_handshake_timeout);
        assert_eq!(limits.idle_timeout, library.idle_timeout);
        assert_eq!(limits.request_timeout, library.request_timeout);
        assert_eq!(limits.shutdown_grace, library.shutdown_grace);
        let timeouts = crate::store::StoreTimeouts::default();
        assert_eq!(valid.store.timeouts.connect, timeouts.connect);
        assert_eq!(valid.store.timeouts.response, timeouts.response);
        let (ours, library) = (valid.oauth_settings(), OAuthSettings::default());
        assert_eq!(ours.code_ttl_secs, library.code_ttl_secs);
        assert_eq!(ours.access_token_ttl_secs, library.access_token_ttl_secs);
        assert_eq!(ours.platform_name, library.platform_name);
        assert_eq!(ours.redirect_bases, library.redirect_bases);
        assert_eq!(ours.assertion_audiences, library.assertion_audiences);
        assert_eq!(ours.redemption_lease_secs, library.redemption_lease_secs);
    }

    #[test]
    fn every_section_reports_its_problems_at_once() {
        let raw = RawSettings {
            listen: Some("nowhere".into()),
            issuer: Some("ftp://x".into()),
            max_header_bytes: Some(100),
            signing_alg: Some("rs256".into()),
            device_graph_url: Some("https://graph.example".into()),
            trusted_proxies: Some(vec!["10.0.0.0/8".into(), "balancer".into()]),
            log: Some("=[".into()),
            code_ttl_secs: Some(9999),
            store: Some(" ".into()),
            ..RawSettings::default()
        };
        let problems = validate(&raw).unwrap_err().join("\n");
        for flag in [
            "--listen",
            "--issuer",
            "--max-header-bytes",
            "--signing-alg",
            "--device-graph-key-file",
            "--trusted-proxies",
            "--log ",
            "--code-ttl-secs",
            "--store",
        ] {
            assert!(problems.contains(flag), "{flag} missing from {problems}");
        }
    }

    #[test]
    fn a_request_timeout_shorter_than_a_code_exchange_is_refused() {
        let raw = RawSettings {
            store_timeout_ms: Some(5000),
            ..RawSettings::default()
        };
        let problems = validate(&raw).unwrap_err();
        assert_eq!(
            problems,
            [
                "--request-timeout-secs 30: must be at least 10 × --store-timeout-ms + 2 s (52 s), \
              so that a code exchange never times out after spending the code"
            ]
        );
        let raw = RawSettings {
            store_timeout_ms: Some(5000),
            request_timeout_secs: Some(52),
            ..RawSettings::default()
        };
        let valid = validate(&raw).unwrap();
        assert_eq!(valid.limits.request_timeout, Duration::from_secs(52));
    }

    #[test]
    fn flags_win_over_the_file_and_the_file_over_the_defaults() {
        let file = RawSettings::from_toml(
            "listen = \"127.0.0.1:9000\"\nidle_timeout_secs = 5\nstore = \"from-file.db\"\n\
             trusted_proxies = [\"10.0.0.0/8\", \"192.0.2.1\"]\ncode_ttl_secs = 300\n",
        )
        .unwrap();
        let flags = RawSettings {
            listen: Some("127.0.0.1:9001".into()),
            code_ttl_secs: Some(120),
            ..RawSettings::default()
        };
        let valid = validate(&flags.or(file)).unwrap();
        assert_eq!(valid.listener.address.port(), 9001);
        assert_eq!(valid.urls.issuer, "https://127.0.0.1:9001");
        assert_eq!(valid.oauth.code_ttl_secs, 120);
        assert_eq!(valid.limits.idle_timeout, Duration::from_secs(5));
        assert_eq!(valid.store.location, "from-file.db");
        assert_eq!(valid.throttling.trusted_proxies.len(), 2);
        assert_eq!(
            valid.limits.request_timeout,
            Duration::from_secs(defaults::REQUEST_TIMEOUT_SECS)
        );
    }

    #[test]
    fn https_urls_have_a_host_and_no_query() {
        assert_eq!(
            https_url("https://id.example.com/", false).unwrap(),
            "https://id.example.com"
        );
        assert!(https_url("http://id.example.com", true).is_err());
        assert!(https_url("http://127.0.0.1:8080", true).is_ok());
        assert!(https_url("http://127.0.0.1:8080", false).is_err());
        assert!(https_url("https://id.example.com/?a=b", false).is_err());
        assert!(https_url("https://", false).is_err());
        assert!(https_url("https://id.example.com/a b", false).is_err());
    }
}
