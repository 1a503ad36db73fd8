//! The address of the client behind a request, for per-address limits and logs.
//!
//! Behind a load balancer the TCP peer is the balancer, so every user would share one
//! per-address counter. When the peer is one of the operator's `--trusted-proxies`, linkd
//! reads `X-Forwarded-For` from the right: each trusted hop appended the address it saw, so
//! the first address from the right that is not a trusted proxy is the client. Entries left
//! of it were written by the client itself and prove nothing; a request from any other peer
//! has its header ignored, so nobody escapes the limit by sending one.

use std::net::IpAddr;

use hyper::HeaderMap;
use ipnet::IpNet;

/// Parses a `--trusted-proxies` entry: a CIDR network or a single address.
pub fn parse_trusted_proxy(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{text:?} is not an IP address or a CIDR network"))
}

/// The client's address: the TCP peer's, or, when the peer is a trusted proxy, the nearest
/// untrusted address in `X-Forwarded-For`. An entry that is not a bare IP address ends the
/// walk at the last hop that could be checked.
pub fn client_address(headers: &HeaderMap, peer: IpAddr, trusted_proxies: &[IpNet]) -> IpAddr {
    let is_trusted = |address: &IpAddr| trusted_proxies.iter().any(|net| net.contains(address));
    let mut client = peer;
    if !is_trusted(&client) {
        return client;
    }
    let hops: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .collect();
    for hop in hops.into_iter().rev() {
        let Ok(address) = hop.trim().parse::<IpAddr>() else {
            break;
        };
        client = address;
        if !is_trusted(&client) {
            break;
        }
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for value in values {
            headers.append("x-forwarded-for", value.parse().unwrap());
        }
        headers
    }

    fn address(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_trusted_peers_are_believed() {
        let trusted = [
            parse_trusted_proxy("10.0.0.0/8").unwrap(),
            parse_trusted_proxy("2001:db8::1").unwrap(),
        ];
        let forwarded = headers(&["203.0.113.9"]);
        assert_eq!(
            client_address(&forwarded, address("198.51.100.1"), &trusted),
            address("198.51.100.1"),
            "an untrusted peer's header is ignored"
        );
        assert_eq!(
            client_address(&forwarded, address("10.1.2.3"), &trusted),
            address("203.0.113.9")
        );
        assert_eq!(
            client_address(&forwarded, address("2001:db8::1"), &trusted),
            address("203.0.113.9")
        );
        assert_eq!(
            client_address(&HeaderMap::new(), address("10.1.2.3"), &trusted),
            address("10.1.2.3"),
            "no header: the proxy is all there is"
        );
        assert_eq!(
            client_address(&forwarded, address("10.1.2.3"), &[]),
            address("10.1.2.3"),
            "no trusted proxies: the header is never read"
        );
    }

    #[test]
    fn the_nearest_untrusted_hop_is_the_client() {
        let trusted = [parse_trusted_proxy("10.0.0.0/8").unwrap()];
        let peer = address("10.0.0.1");
        // The client claimed 1.1.1.1 itself; the balancers saw 203.0.113.9.
        let chain = headers(&["1.1.1.1, 203.0.113.9", "10.0.0.7"]);
        assert_eq!(
            client_address(&chain, peer, &trusted),
            address("203.0.113.9")
        );
        let garbled = headers(&["203.0.113.9, not-an-address, 10.0.0.7"]);
        assert_eq!(
            client_address(&garbled, peer, &trusted),
            address("10.0.0.7"),
            "the walk stops at what it cannot read"
        );
    }

    #[test]
    fn entries_are_networks_or_addresses() {
        assert!(parse_trusted_proxy("10.0.0.0/8").is_ok());
        assert!(parse_trusted_proxy(" 192.0.2.1 ").is_ok());
        assert!(parse_trusted_proxy("::1").is_ok());
        assert!(parse_trusted_proxy("10.0.0.0/33").is_err());
        assert!(parse_trusted_proxy("balancer.internal").is_err());
    }
}
