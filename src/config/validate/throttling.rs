//! The throttling section: which load balancers are trusted to name the client in
//! `X-Forwarded-For`, so that per-address sign-in limits count the client, not the balancer.
//! The thresholds themselves are not configurable.

use super::{Problems, finish};
use crate::config::raw::RawSettings;

/// Who may name the client's address.
#[derive(Debug, Clone, Default)]
pub struct Throttling {
    /// Load balancers whose `X-Forwarded-For` names the client; empty: the TCP peer is.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// Validates `--trusted-proxies`; blank entries are ignored.
pub fn validate(raw: &RawSettings) -> Result<Throttling, Problems> {
    let mut problems = Problems::new();
    let trusted_proxies = raw
        .trusted_proxies
        .iter()
        .flatten()
        .filter(|entry| !entry.trim().is_empty())
        .filter_map(|entry| {
            crate::http::client_address::parse_trusted_proxy(entry)
                .map_err(|reason| problems.push(format!("--trusted-proxies: {reason}")))
                .ok()
        })
        .collect();
    finish(Throttling { trusted_proxies }, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxies(entries: &[&str]) -> RawSettings {
        RawSettings {
            trusted_proxies: Some(entries.iter().map(|entry| (*entry).to_owned()).collect()),
            ..RawSettings::default()
        }
    }

    #[test]
    fn a_valid_section() {
        let throttling = validate(&proxies(&["10.0.0.0/8", " 192.0.2.1", ""])).unwrap();
        let shown: Vec<String> = throttling
            .trusted_proxies
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(shown, ["10.0.0.0/8", "192.0.2.1/32"]);
        assert!(
            validate(&RawSettings::default())
                .unwrap()
                .trusted_proxies
                .is_empty()
        );
    }

    #[test]
    fn each_invalid_entry_is_reported_and_together() {
        assert_eq!(
            validate(&proxies(&["10.0.0.0/8", "balancer"])).unwrap_err(),
            ["--trusted-proxies: \"balancer\" is not an IP address or a CIDR network"]
        );
        assert_eq!(
            validate(&proxies(&["a", "10.0.0.0/33", "b"]))
                .unwrap_err()
                .len(),
            3
        );
    }
}
