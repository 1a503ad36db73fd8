//! The outbound section: the external device graph unlinks are sent to instead of linkd's
//! own (its URL and the service-account key file to call it with), and the CA certificates
//! trusted for outbound HTTPS besides the system's. The files are read by
//! [`crate::config::load`], not here.

use std::path::PathBuf;

use super::{Problems, finish};
use crate::config::raw::RawSettings;

/// An external device graph, not yet loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalDeviceGraph {
    /// Base URL of the graph.
    pub url: String,
    /// Service-account key file to call it with.
    pub key_file: PathBuf,
}

/// Where outbound calls go and whom they trust.
#[derive(Debug, Clone, Default)]
pub struct Outbound {
    /// The external device graph unlinks are sent to; `None` means linkd's own.
    pub external_device_graph: Option<ExternalDeviceGraph>,
    /// PEM file of CA certificates trusted besides the system's.
    pub ca_file: Option<PathBuf>,
}

/// Validates `--device-graph-url` with `--device-graph-key-file`, and takes
/// `--outbound-ca-file`.
pub fn validate(raw: &RawSettings) -> Result<Outbound, Problems> {
    let mut problems = Problems::new();
    let external_device_graph = match (&raw.device_graph_url, &raw.device_graph_key_file) {
        (None, None) => None,
        (Some(url), Some(key_file)) => match crate::outbound::check_url(url) {
            Ok(_) => Some(ExternalDeviceGraph {
                url: url.clone(),
                key_file: key_file.clone(),
            }),
            Err(reason) => {
                problems.push(format!(
                    "--device-graph-url/--device-graph-key-file: {reason}"
                ));
                None
            }
        },
        _ => {
            problems.push(
                "--device-graph-url and --device-graph-key-file: give both or neither".to_owned(),
            );
            None
        }
    };
    finish(
        Outbound {
            external_device_graph,
            ca_file: raw.outbound_ca_file.clone(),
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
            device_graph_url: Some("https://graph.example".into()),
            device_graph_key_file: Some("key.json".into()),
            outbound_ca_file: Some("ca.pem".into()),
            ..RawSettings::default()
        };
        let outbound = validate(&raw).unwrap();
        assert_eq!(
            outbound.external_device_graph,
            Some(ExternalDeviceGraph {
                url: "https://graph.example".into(),
                key_file: "key.json".into()
            })
        );
        assert_eq!(outbound.ca_file, Some(PathBuf::from("ca.pem")));
        assert_eq!(
            validate(&RawSettings::default())
                .unwrap()
                .external_device_graph,
            None
        );
    }

    #[test]
    fn each_invalid_field_is_reported() {
        let url_alone = RawSettings {
            device_graph_url: Some("https://graph.example".into()),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&url_alone).unwrap_err(),
            ["--device-graph-url and --device-graph-key-file: give both or neither"]
        );
        let key_alone = RawSettings {
            device_graph_key_file: Some("key.json".into()),
            ..RawSettings::default()
        };
        assert_eq!(validate(&key_alone).unwrap_err().len(), 1);
        let remote_http = RawSettings {
            device_graph_url: Some("http://graph.example".into()),
            device_graph_key_file: Some("key.json".into()),
            ..RawSettings::default()
        };
        let problems = validate(&remote_http).unwrap_err();
        assert!(
            problems[0].starts_with("--device-graph-url/--device-graph-key-file: "),
            "{problems:?}"
        );
    }
}
