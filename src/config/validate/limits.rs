//! The limits section: the server's resource bounds, how many connections it serves, how
//! large a request head may be and how long each step of a connection may take. That a code
//! exchange fits in the request timeout involves the store timeout too, and is checked by
//! [`super::validate`].

use std::time::Duration;

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::http::ServerLimits;

/// Validates `--max-connections`, `--max-header-bytes`, `--header-read-timeout-secs`,
/// `--tls-handshake-timeout-secs`, `--idle-timeout-secs`, `--request-timeout-secs` and
/// `--shutdown-grace-secs`. The body budgets are not configurable and keep their defaults.
pub fn validate(raw: &RawSettings) -> Result<ServerLimits, Problems> {
    let mut problems = Problems::new();
    let mut seconds = |flag: &str, value: Option<u64>, default: u64, min: u64, max: u64| {
        Duration::from_secs(bounded(
            flag,
            value.unwrap_or(default),
            min..=max,
            &mut problems,
        ))
    };
    let header_read_timeout = seconds(
        "--header-read-timeout-secs",
        raw.header_read_timeout_secs,
        defaults::HEADER_READ_TIMEOUT_SECS,
        1,
        300,
    );
    let tls_handshake_timeout = seconds(
        "--tls-handshake-timeout-secs",
        raw.tls_handshake_timeout_secs,
        defaults::TLS_HANDSHAKE_TIMEOUT_SECS,
        1,
        300,
    );
    let idle_timeout = seconds(
        "--idle-timeout-secs",
        raw.idle_timeout_secs,
        defaults::IDLE_TIMEOUT_SECS,
        1,
        3600,
    );
    let request_timeout = seconds(
        "--request-timeout-secs",
        raw.request_timeout_secs,
        defaults::REQUEST_TIMEOUT_SECS,
        1,
        600,
    );
    let shutdown_grace = seconds(
        "--shutdown-grace-secs",
        raw.shutdown_grace_secs,
        defaults::SHUTDOWN_GRACE_SECS,
        0,
        600,
    );
    let max_connections = bounded(
        "--max-connections",
        raw.max_connections.unwrap_or(defaults::MAX_CONNECTIONS),
        1..=1_000_000,
        &mut problems,
    );
    // hyper refuses HTTP/1 buffers under 8 KiB.
    let max_header_bytes = bounded(
        "--max-header-bytes",
        raw.max_header_bytes.unwrap_or(defaults::MAX_HEADER_BYTES),
        8192..=1024 * 1024,
        &mut problems,
    );
    finish(
        ServerLimits {
            max_connections,
            tls_handshake_timeout,
            header_read_timeout,
            max_header_bytes,
            idle_timeout,
            request_timeout,
            shutdown_grace,
            ..ServerLimits::default()
        },
        problems,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_section() {
        let raw = RawSettings {
            max_connections: Some(10),
            max_header_bytes: Some(8192),
            header_read_timeout_secs: Some(2),
            tls_handshake_timeout_secs: Some(3),
            idle_timeout_secs: Some(4),
            request_timeout_secs: Some(50),
            shutdown_grace_secs: Some(0),
            ..RawSettings::default()
        };
        let limits = validate(&raw).unwrap();
        assert_eq!(limits.max_connections, 10);
        assert_eq!(limits.max_header_bytes, 8192);
        assert_eq!(limits.header_read_timeout, Duration::from_secs(2));
        assert_eq!(limits.tls_handshake_timeout, Duration::from_secs(3));
        assert_eq!(limits.idle_timeout, Duration::from_secs(4));
        assert_eq!(limits.request_timeout, Duration::from_secs(50));
        assert_eq!(limits.shutdown_grace, Duration::ZERO);
    }

    #[test]
    fn each_invalid_field_is_reported() {
        let cases = [
            (
                RawSettings {
                    max_connections: Some(0),
                    ..RawSettings::default()
                },
                "--max-connections 0: must be between 1 and 1000000",
            ),
            (
                RawSettings {
                    max_header_bytes: Some(100),
                    ..RawSettings::default()
                },
                "--max-header-bytes 100: must be between 8192 and 1048576",
            ),
            (
                RawSettings {
                    header_read_timeout_secs: Some(301),
                    ..RawSettings::default()
                },
                "--header-read-timeout-secs 301: must be between 1 and 300",
            ),
            (
                RawSettings {
                    tls_handshake_timeout_secs: Some(0),
                    ..RawSettings::default()
                },
                "--tls-handshake-timeout-secs 0: must be between 1 and 300",
            ),
            (
                RawSettings {
                    idle_timeout_secs: Some(0),
                    ..RawSettings::default()
                },
                "--idle-timeout-secs 0: must be between 1 and 3600",
            ),
            (
                RawSettings {
                    request_timeout_secs: Some(601),
                    ..RawSettings::default()
                },
                "--request-timeout-secs 601: must be between 1 and 600",
            ),
            (
                RawSettings {
                    shutdown_grace_secs: Some(601),
                    ..RawSettings::default()
                },
                "--shutdown-grace-secs 601: must be between 0 and 600",
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(validate(&raw).unwrap_err(), [expected]);
        }
    }

    #[test]
    fn several_problems_are_reported_together() {
        let raw = RawSettings {
            max_connections: Some(0),
            idle_timeout_secs: Some(0),
            request_timeout_secs: Some(0),
            ..RawSettings::default()
        };
        assert_eq!(validate(&raw).unwrap_err().len(), 3);
    }
}
