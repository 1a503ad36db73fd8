//! The listener section: the address linkd listens on, how connections are secured (operator
//! certificate files, a self-signed development certificate, or plain HTTP behind a load
//! balancer) and how often the certificate files are checked for changes. Whether the files
//! exist is [`crate::config::load`]'s to find out.

use std::net::SocketAddr;
use std::time::Duration;

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::http::tls::CertificateFiles;

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

/// Where and how linkd accepts connections.
#[derive(Debug, Clone)]
pub struct Listener {
    /// Listening address.
    pub address: SocketAddr,
    /// TLS mode.
    pub tls: TlsSettings,
    /// Interval of certificate reload checks.
    pub cert_reload_interval: Duration,
    /// Address of the plain-HTTP admin listener, if any.
    pub admin_address: Option<SocketAddr>,
    /// Time between the stop signal and closing the listeners, while readiness fails.
    pub drain_delay: Duration,
}

/// Validates `--listen`, `--plain-http`, `--tls-cert`, `--tls-key`, `--cert-reload-secs`,
/// `--admin-listen` and `--drain-delay-secs`.
pub fn validate(raw: &RawSettings) -> Result<Listener, Problems> {
    let mut problems = Problems::new();
    let listen = raw.listen.as_deref().unwrap_or(defaults::LISTEN);
    let address = listen.parse::<SocketAddr>().map_err(|_| {
        problems.push(format!(
            "--listen {listen:?}: expected IP:PORT, e.g. 0.0.0.0:8443"
        ));
    });
    let plain_http = raw.plain_http.unwrap_or(defaults::PLAIN_HTTP);
    let tls = match (raw.tls_cert.clone(), raw.tls_key.clone(), plain_http) {
        (Some(_), _, true) | (_, Some(_), true) => {
            problems.push("--plain-http: cannot be combined with --tls-cert/--tls-key".to_owned());
            TlsSettings::Plain
        }
        (None, None, true) => TlsSettings::Plain,
        (None, None, false) => TlsSettings::Development,
        (Some(cert), Some(key), false) => TlsSettings::Files(CertificateFiles { cert, key }),
        (Some(_), None, false) => {
            problems.push("--tls-key: required with --tls-cert".to_owned());
            TlsSettings::Development
        }
        (None, Some(_), false) => {
            problems.push("--tls-cert: required with --tls-key".to_owned());
            TlsSettings::Development
        }
    };
    let cert_reload_secs = bounded(
        "--cert-reload-secs",
        raw.cert_reload_secs.unwrap_or(defaults::CERT_RELOAD_SECS),
        1..=3600,
        &mut problems,
    );
    let drain_delay_secs = bounded(
        "--drain-delay-secs",
        raw.drain_delay_secs.unwrap_or(defaults::DRAIN_DELAY_SECS),
        0..=300,
        &mut problems,
    );
    let admin_address = raw.admin_listen.as_deref().and_then(|admin| {
        admin
            .parse::<SocketAddr>()
            .map_err(|_| {
                problems.push(format!(
                    "--admin-listen {admin:?}: expected IP:PORT, e.g. 10.0.0.5:9090"
                ));
            })
            .ok()
    });
    if let (Some(admin), Ok(public)) = (admin_address, address)
        && admin == public
        && admin.port() != 0
    {
        problems.push(format!("--admin-listen {admin}: must differ from --listen"));
    }
    match address {
        Ok(address) => finish(
            Listener {
                address,
                tls,
                cert_reload_interval: Duration::from_secs(cert_reload_secs),
                admin_address,
                drain_delay: Duration::from_secs(drain_delay_secs),
            },
            problems,
        ),
        Err(()) => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_valid_section() {
        let raw = RawSettings {
            listen: Some("0.0.0.0:443".into()),
            tls_cert: Some("cert.pem".into()),
            tls_key: Some("key.pem".into()),
            cert_reload_secs: Some(30),
            ..RawSettings::default()
        };
        let listener = validate(&raw).unwrap();
        assert_eq!(listener.address.to_string(), "0.0.0.0:443");
        assert_eq!(
            listener.tls,
            TlsSettings::Files(CertificateFiles {
                cert: "cert.pem".into(),
                key: "key.pem".into()
            })
        );
        assert_eq!(listener.cert_reload_interval, Duration::from_secs(30));
        let plain = RawSettings {
            plain_http: Some(true),
            ..RawSettings::default()
        };
        assert_eq!(validate(&plain).unwrap().tls, TlsSettings::Plain);
    }

    #[test]
    fn the_admin_listener_is_optional_and_the_drain_delay_has_a_default() {
        let defaults = validate(&RawSettings::default()).unwrap();
        assert_eq!(defaults.admin_address, None);
        assert_eq!(
            defaults.drain_delay,
            Duration::from_secs(defaults::DRAIN_DELAY_SECS)
        );
        let raw = RawSettings {
            admin_listen: Some("10.0.0.5:9090".into()),
            drain_delay_secs: Some(0),
            ..RawSettings::default()
        };
        let listener = validate(&raw).unwrap();
        assert_eq!(listener.admin_address.unwrap().to_string(), "10.0.0.5:9090");
        assert_eq!(listener.drain_delay, Duration::ZERO);
    }

    #[test]
    fn each_invalid_field_is_reported() {
        let cases: [(RawSettings, &str); 8] = [
            (
                RawSettings {
                    admin_listen: Some("private".into()),
                    ..RawSettings::default()
                },
                "--admin-listen \"private\": expected IP:PORT, e.g. 10.0.0.5:9090",
            ),
            (
                RawSettings {
                    listen: Some("0.0.0.0:8443".into()),
                    admin_listen: Some("0.0.0.0:8443".into()),
                    ..RawSettings::default()
                },
                "--admin-listen 0.0.0.0:8443: must differ from --listen",
            ),
            (
                RawSettings {
                    drain_delay_secs: Some(301),
                    ..RawSettings::default()
                },
                "--drain-delay-secs 301: must be between 0 and 300",
            ),
            (
                RawSettings {
                    listen: Some("nowhere".into()),
                    ..RawSettings::default()
                },
                "--listen \"nowhere\": expected IP:PORT, e.g. 0.0.0.0:8443",
            ),
            (
                RawSettings {
                    plain_http: Some(true),
                    tls_cert: Some("c.pem".into()),
                    tls_key: Some("k.pem".into()),
                    ..RawSettings::default()
                },
                "--plain-http: cannot be combined with --tls-cert/--tls-key",
            ),
            (
                RawSettings {
                    tls_cert: Some("c.pem".into()),
                    ..RawSettings::default()
                },
                "--tls-key: required with --tls-cert",
            ),
            (
                RawSettings {
                    tls_key: Some("k.pem".into()),
                    ..RawSettings::default()
                },
                "--tls-cert: required with --tls-key",
            ),
            (
                RawSettings {
                    cert_reload_secs: Some(0),
                    ..RawSettings::default()
                },
                "--cert-reload-secs 0: must be between 1 and 3600",
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(validate(&raw).unwrap_err(), [expected]);
        }
    }

    #[test]
    fn several_problems_are_reported_together() {
        let raw = RawSettings {
            listen: Some("nowhere".into()),
            tls_key: Some("k.pem".into()),
            cert_reload_secs: Some(7200),
            ..RawSettings::default()
        };
        assert_eq!(validate(&raw).unwrap_err().len(), 3);
    }
}
