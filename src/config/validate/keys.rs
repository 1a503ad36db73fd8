//! The keys section: the keys directory, the algorithm of a key created in an empty one and
//! how often the directory is checked for rotated keys. Loading the keyring is the server's,
//! at start.

use std::path::PathBuf;
use std::time::Duration;

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::tokens::keyring::Algorithm;

/// The signing keys linkd serves with.
#[derive(Debug, Clone)]
pub struct Keys {
    /// Keys directory.
    pub dir: PathBuf,
    /// Algorithm of a key created on an empty keys directory.
    pub signing_alg: Algorithm,
    /// Interval of keyring reload checks.
    pub reload_interval: Duration,
}

/// Validates `--keys-dir`, `--signing-alg` and `--key-reload-secs`.
pub fn validate(raw: &RawSettings) -> Result<Keys, Problems> {
    let mut problems = Problems::new();
    let signing_alg = match raw.signing_alg.as_deref() {
        None => defaults::SIGNING_ALG,
        Some(text) => text.parse::<Algorithm>().unwrap_or_else(|_| {
            problems.push(format!("--signing-alg {text:?}: expected es256 or eddsa"));
            defaults::SIGNING_ALG
        }),
    };
    let reload_secs = bounded(
        "--key-reload-secs",
        raw.key_reload_secs.unwrap_or(defaults::KEY_RELOAD_SECS),
        1..=3600,
        &mut problems,
    );
    finish(
        Keys {
            dir: raw
                .keys_dir
                .clone()
                .unwrap_or_else(|| PathBuf::from(defaults::KEYS_DIR)),
            signing_alg,
            reload_interval: Duration::from_secs(reload_secs),
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
            keys_dir: Some("/etc/linkd/keys".into()),
            signing_alg: Some("EdDSA".into()),
            key_reload_secs: Some(60),
            ..RawSettings::default()
        };
        let keys = validate(&raw).unwrap();
        assert_eq!(keys.dir, PathBuf::from("/etc/linkd/keys"));
        assert_eq!(keys.signing_alg, Algorithm::EdDsa);
        assert_eq!(keys.reload_interval, Duration::from_secs(60));
    }

    #[test]
    fn each_invalid_field_is_reported_and_together() {
        let raw = RawSettings {
            signing_alg: Some("rs256".into()),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&raw).unwrap_err(),
            ["--signing-alg \"rs256\": expected es256 or eddsa"]
        );
        let raw = RawSettings {
            key_reload_secs: Some(0),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&raw).unwrap_err(),
            ["--key-reload-secs 0: must be between 1 and 3600"]
        );
        let raw = RawSettings {
            signing_alg: Some("none".into()),
            key_reload_secs: Some(3601),
            ..RawSettings::default()
        };
        assert_eq!(validate(&raw).unwrap_err().len(), 2);
    }
}
