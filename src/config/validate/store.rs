//! The store section: where the data lives (a Redis location or the embedded SQLite file's
//! path, see [`crate::store::location`]), the CA file trusted for `rediss` and how long a
//! store call may take before it counts as unavailable. Opening the store is the server's,
//! at start.

use std::time::Duration;

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::store::StoreTimeouts;
use crate::store::location::StoreLocation;

/// The store linkd serves from.
#[derive(Debug, Clone)]
pub struct Store {
    /// Where the data lives (`redis://…` or a SQLite path), checked to parse.
    pub location: String,
    /// CA certificates trusted for `rediss` besides the system's (not read yet).
    pub ca_file: Option<std::path::PathBuf>,
    /// Bounds of every store call.
    pub timeouts: StoreTimeouts,
}

/// Validates `--store`, `--store-ca-file` and `--store-timeout-ms`.
pub fn validate(raw: &RawSettings) -> Result<Store, Problems> {
    let mut problems = Problems::new();
    let location = raw.store.as_deref().unwrap_or(defaults::STORE).to_owned();
    if location.trim().is_empty() {
        problems.push("--store: must not be empty".to_owned());
    } else if let Err(error) = StoreLocation::parse(&location) {
        problems.push(error.to_string());
    }
    let ca_file = raw.store_ca_file.clone();
    let timeout = Duration::from_millis(bounded(
        "--store-timeout-ms",
        raw.store_timeout_ms.unwrap_or(defaults::STORE_TIMEOUT_MS),
        10..=60_000,
        &mut problems,
    ));
    finish(
        Store {
            location,
            ca_file,
            timeouts: StoreTimeouts {
                connect: timeout,
                response: timeout,
            },
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
            store: Some("redis://db:6379".into()),
            store_timeout_ms: Some(500),
            ..RawSettings::default()
        };
        let store = validate(&raw).unwrap();
        assert_eq!(store.location, "redis://db:6379");
        assert_eq!(store.timeouts.connect, Duration::from_millis(500));
        assert_eq!(store.timeouts.response, Duration::from_millis(500));
    }

    #[test]
    fn each_invalid_field_is_reported_and_together() {
        let empty = RawSettings {
            store: Some(" ".into()),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&empty).unwrap_err(),
            ["--store: must not be empty"]
        );
        let slow = RawSettings {
            store_timeout_ms: Some(60_001),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&slow).unwrap_err(),
            ["--store-timeout-ms 60001: must be between 10 and 60000"]
        );
        for location in ["postgres://db/linkd", "redis:/db", "localhost:6379"] {
            let unknown = RawSettings {
                store: Some(location.into()),
                ..RawSettings::default()
            };
            let problems = validate(&unknown).unwrap_err();
            assert_eq!(problems.len(), 1, "{problems:?}");
            assert!(problems[0].starts_with("--store "), "{problems:?}");
        }
        let both = RawSettings {
            store: Some(String::new()),
            store_timeout_ms: Some(9),
            ..RawSettings::default()
        };
        assert_eq!(validate(&both).unwrap_err().len(), 2);
    }
}
