//! The OAuth section: how long authorization codes and access tokens live, and the name of
//! the platform the pages say accounts are linked to. The rest of the protocol policy
//! (session lifetime, leeway, throttle thresholds) is not configurable and keeps
//! [`crate::app::OAuthSettings`]'s defaults.

use super::{Problems, bounded, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;

/// Lifetimes and page text of the OAuth protocol.
#[derive(Debug, Clone)]
pub struct OAuthPolicy {
    /// Authorization code lifetime, seconds.
    pub code_ttl_secs: i64,
    /// Access token lifetime, seconds.
    pub access_token_ttl_secs: i64,
    /// Name of the platform accounts are linked to.
    pub platform_name: String,
}

/// Validates `--code-ttl-secs`, `--access-token-ttl-secs` and `--platform-name`.
pub fn validate(raw: &RawSettings) -> Result<OAuthPolicy, Problems> {
    let mut problems = Problems::new();
    let code_ttl_secs = bounded(
        "--code-ttl-secs",
        raw.code_ttl_secs.unwrap_or(defaults::CODE_TTL_SECS),
        10..=600,
        &mut problems,
    );
    let access_token_ttl_secs = bounded(
        "--access-token-ttl-secs",
        raw.access_token_ttl_secs
            .unwrap_or(defaults::ACCESS_TOKEN_TTL_SECS),
        60..=86_400,
        &mut problems,
    );
    let platform_name = raw
        .platform_name
        .clone()
        .unwrap_or_else(|| defaults::PLATFORM_NAME.to_owned());
    if platform_name.trim().is_empty()
        || platform_name.chars().count() > 60
        || platform_name.chars().any(char::is_control)
    {
        problems.push(format!(
            "--platform-name {platform_name:?}: 1-60 printable characters"
        ));
    }
    finish(
        OAuthPolicy {
            code_ttl_secs,
            access_token_ttl_secs,
            platform_name,
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
            code_ttl_secs: Some(60),
            access_token_ttl_secs: Some(900),
            platform_name: Some("Alexa".into()),
            ..RawSettings::default()
        };
        let policy = validate(&raw).unwrap();
        assert_eq!(policy.code_ttl_secs, 60);
        assert_eq!(policy.access_token_ttl_secs, 900);
        assert_eq!(policy.platform_name, "Alexa");
    }

    #[test]
    fn each_invalid_field_is_reported_and_together() {
        let cases = [
            (
                RawSettings {
                    code_ttl_secs: Some(601),
                    ..RawSettings::default()
                },
                "--code-ttl-secs 601: must be between 10 and 600",
            ),
            (
                RawSettings {
                    access_token_ttl_secs: Some(59),
                    ..RawSettings::default()
                },
                "--access-token-ttl-secs 59: must be between 60 and 86400",
            ),
            (
                RawSettings {
                    platform_name: Some("bad\nname".into()),
                    ..RawSettings::default()
                },
                "--platform-name \"bad\\nname\": 1-60 printable characters",
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(validate(&raw).unwrap_err(), [expected]);
        }
        let raw = RawSettings {
            code_ttl_secs: Some(0),
            access_token_ttl_secs: Some(0),
            platform_name: Some(" ".into()),
            ..RawSettings::default()
        };
        assert_eq!(validate(&raw).unwrap_err().len(), 3);
    }
}
