//! The URLs section: the issuer, the platform's redirect bases, the device-graph scope base
//! and API base URL, and the audiences service accounts' assertions may name. Each is checked
//! by its grammar alone; nothing is fetched.

use std::net::SocketAddr;

use super::{Problems, finish, https_url};
use crate::config::defaults;
use crate::config::raw::RawSettings;

/// The URLs linkd names and accepts.
#[derive(Debug, Clone)]
pub struct Urls {
    /// Issuer URL, without trailing slash.
    pub issuer: String,
    /// Bases of the platform's redirect URIs: the production one, then the sandbox one.
    pub redirect_bases: Vec<String>,
    /// Base of the device-graph scope; `None` means the issuer.
    pub devicegraph_scope_base: Option<String>,
    /// Base URL of the device-graph API; `None` means the issuer.
    pub devicegraph_base_url: Option<String>,
    /// Audiences of service accounts' assertions accepted besides linkd's token URL.
    pub assertion_audiences: Vec<String>,
}

/// Validates `--issuer`, `--redirect-base`, `--redirect-sandbox-base`,
/// `--device-graph-scope-base`, `--device-graph-base-url` and `--assertion-audiences`. The
/// issuer defaults to `https://{listen}`; `listen` is `None` when the listening address is
/// itself invalid, which the listener section reports.
pub fn validate(raw: &RawSettings, listen: Option<SocketAddr>) -> Result<Urls, Problems> {
    let mut problems = Problems::new();
    let plain_http = raw.plain_http.unwrap_or(defaults::PLAIN_HTTP);
    let issuer = match raw.issuer.as_deref() {
        Some(issuer) => https_url(issuer, plain_http)
            .map_err(|reason| problems.push(format!("--issuer {issuer:?}: {reason}")))
            .ok(),
        None => listen.map(|listen| format!("https://{listen}")),
    };

    let mut redirect_bases = Vec::new();
    for (flag, value, default) in [
        (
            "--redirect-base",
            &raw.redirect_base,
            defaults::REDIRECT_BASE,
        ),
        (
            "--redirect-sandbox-base",
            &raw.redirect_sandbox_base,
            defaults::REDIRECT_SANDBOX_BASE,
        ),
    ] {
        let Some(base) = value else {
            redirect_bases.push(default.to_owned());
            continue;
        };
        match crate::redirect_uri::validate_for_registration(base) {
            Ok(()) if !base.contains('?') => {
                redirect_bases.push(base.trim_end_matches('/').to_owned());
            }
            Ok(()) => problems.push(format!("{flag} {base:?}: must not contain a query")),
            Err(reason) => problems.push(format!("{flag} {base:?}: {reason}")),
        }
    }

    // The same rules as the issuer's: these URLs name this issuer's API and scopes.
    let mut issuer_like = |flag: &str, value: &Option<String>| {
        value.as_deref().and_then(|url| {
            https_url(url, false)
                .map_err(|reason| problems.push(format!("{flag} {url:?}: {reason}")))
                .ok()
        })
    };
    let devicegraph_scope_base =
        issuer_like("--device-graph-scope-base", &raw.device_graph_scope_base);
    let devicegraph_base_url = issuer_like("--device-graph-base-url", &raw.device_graph_base_url);

    let assertion_audiences = match &raw.assertion_audiences {
        None => defaults::ASSERTION_AUDIENCES
            .iter()
            .map(|audience| (*audience).to_owned())
            .collect(),
        Some(audiences) => audiences
            .iter()
            .filter(|entry| !entry.trim().is_empty())
            .filter_map(|audience| {
                https_url(audience.trim(), false)
                    .map_err(|reason| {
                        problems.push(format!("--assertion-audiences {audience:?}: {reason}"));
                    })
                    .ok()
            })
            .collect(),
    };

    match issuer {
        Some(issuer) => finish(
            Urls {
                issuer,
                redirect_bases,
                devicegraph_scope_base,
                devicegraph_base_url,
                assertion_audiences,
            },
            problems,
        ),
        None => Err(problems),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LISTEN: Option<SocketAddr> = Some(SocketAddr::new(
        std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
        8443,
    ));

    #[test]
    fn a_valid_section() {
        let raw = RawSettings {
            issuer: Some("https://id.example.com/linkd/".into()),
            redirect_base: Some("https://redirect.example/".into()),
            device_graph_scope_base: Some("https://scopes.example".into()),
            device_graph_base_url: Some("https://graph.example/".into()),
            assertion_audiences: Some(vec![
                "https://a.example/token/".into(),
                " https://b.example/t".into(),
                String::new(),
            ]),
            ..RawSettings::default()
        };
        let urls = validate(&raw, LISTEN).unwrap();
        assert_eq!(urls.issuer, "https://id.example.com/linkd");
        assert_eq!(
            urls.redirect_bases,
            ["https://redirect.example", defaults::REDIRECT_SANDBOX_BASE]
        );
        assert_eq!(
            urls.devicegraph_scope_base.as_deref(),
            Some("https://scopes.example")
        );
        assert_eq!(
            urls.devicegraph_base_url.as_deref(),
            Some("https://graph.example")
        );
        assert_eq!(
            urls.assertion_audiences,
            ["https://a.example/token", "https://b.example/t"]
        );
    }

    #[test]
    fn the_defaults_follow_the_listening_address() {
        let urls = validate(&RawSettings::default(), LISTEN).unwrap();
        assert_eq!(urls.issuer, "https://127.0.0.1:8443");
        assert_eq!(urls.devicegraph_scope_base, None);
        assert_eq!(urls.assertion_audiences, defaults::ASSERTION_AUDIENCES);
        let only_theirs = RawSettings {
            assertion_audiences: Some(vec![String::new()]),
            ..RawSettings::default()
        };
        let urls = validate(&only_theirs, LISTEN).unwrap();
        assert!(urls.assertion_audiences.is_empty());
    }

    #[test]
    fn a_loopback_http_issuer_needs_plain_http() {
        let raw = RawSettings {
            issuer: Some("http://127.0.0.1:8080".into()),
            ..RawSettings::default()
        };
        assert!(validate(&raw, LISTEN).is_err());
        let plain = RawSettings {
            plain_http: Some(true),
            ..raw
        };
        assert_eq!(
            validate(&plain, LISTEN).unwrap().issuer,
            "http://127.0.0.1:8080"
        );
    }

    #[test]
    fn each_invalid_field_is_reported_and_together() {
        let raw = RawSettings {
            issuer: Some("ftp://x".into()),
            redirect_base: Some("https://redirect.example/?a=b".into()),
            redirect_sandbox_base: Some("https://sandbox.example/#f".into()),
            device_graph_scope_base: Some("http://scopes.example".into()),
            device_graph_base_url: Some("https:///api".into()),
            assertion_audiences: Some(vec!["http://a.example/token".into()]),
            ..RawSettings::default()
        };
        let problems = validate(&raw, LISTEN).unwrap_err();
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert_eq!(
            problems[0],
            "--issuer \"ftp://x\": must start with https://"
        );
        assert_eq!(
            problems[1],
            "--redirect-base \"https://redirect.example/?a=b\": must not contain a query"
        );
        assert!(problems[2].starts_with("--redirect-sandbox-base "));
        assert!(problems[3].starts_with("--device-graph-scope-base \"http://scopes.example\": "));
        assert_eq!(
            problems[4],
            "--device-graph-base-url \"https:///api\": has no host"
        );
        assert!(
            problems[5].starts_with("--assertion-audiences \"http://a.example/token\": "),
            "{problems:?}"
        );
    }

    #[test]
    fn without_a_listening_address_only_an_issuer_given_counts() {
        assert!(validate(&RawSettings::default(), None).is_err());
        let raw = RawSettings {
            issuer: Some("https://id.example.com".into()),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&raw, None).unwrap().issuer,
            "https://id.example.com"
        );
    }
}
