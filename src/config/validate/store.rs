//! The store section: where the data lives (`redis://…`, `rediss://…`,
//! `redis+cluster://…` or the embedded SQLite file's path) and how long a store call may take
//! before it counts as unavailable. Opening the store is the server's, at start.

use std::time::Duration;

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::store::StoreTimeouts;

/// The store linkd serves from.
#[derive(Debug, Clone)]
pub struct Store {
    /// Where the data lives (`redis://…` or a SQLite path).
    pub location: String,
    /// Bounds of every store call.
    pub timeouts: StoreTimeouts,
}

/// Validates `--store` and `--store-timeout-ms`.
pub fn validate(raw: &RawSettings) -> Result<Store, Problems> {
    let mut problems = Problems::new();
    let location = raw.store.as_deref().unwrap_or(defaults::STORE).to_owned();
    if location.trim().is_empty() {
        problems.push("--store: must not be empty".to_owned());
    }
    let timeout = Duration::from_millis(bounded(
        "--store-timeout-ms",
        raw.store_timeout_ms.unwrap_or(defaults::STORE_TIMEOUT_MS),
        10..=60_000,
        &mut problems,
    ));
    finish(
        Store {
            location,
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
        let both = RawSettings {
            store: Some(String::new()),
            store_timeout_ms: Some(9),
            ..RawSettings::default()
        };
        assert_eq!(validate(&both).unwrap_err().len(), 2);
    }
}
