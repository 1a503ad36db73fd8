//! The logging section: the log format and the filter, in `RUST_LOG` syntax. Installing the
//! subscriber is `cli::serve`'s, once the settings are valid.

use super::{Problems, finish};
use crate::config::defaults;
use crate::config::raw::RawSettings;
use crate::logging::LogFormat;

/// How linkd logs.
#[derive(Debug, Clone)]
pub struct Logging {
    /// Log format.
    pub format: LogFormat,
    /// Log filter.
    pub filter: String,
}

/// Validates `--log-format` and `--log`.
pub fn validate(raw: &RawSettings) -> Result<Logging, Problems> {
    let mut problems = Problems::new();
    let filter = raw
        .log
        .clone()
        .unwrap_or_else(|| defaults::LOG_FILTER.to_owned());
    if tracing_subscriber::EnvFilter::try_new(&filter).is_err() {
        problems.push(format!("--log {filter:?}: not a valid log filter"));
    }
    finish(
        Logging {
            format: raw.log_format.unwrap_or(defaults::LOG_FORMAT),
            filter,
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
            log_format: Some(LogFormat::Json),
            log: Some("linkd=debug,info".into()),
            ..RawSettings::default()
        };
        let logging = validate(&raw).unwrap();
        assert_eq!(logging.format, LogFormat::Json);
        assert_eq!(logging.filter, "linkd=debug,info");
        let default = validate(&RawSettings::default()).unwrap();
        assert_eq!(default.format, LogFormat::Human);
        assert_eq!(default.filter, "info");
    }

    #[test]
    fn an_invalid_filter_is_reported() {
        let raw = RawSettings {
            log: Some("linkd=[".into()),
            ..RawSettings::default()
        };
        assert_eq!(
            validate(&raw).unwrap_err(),
            ["--log \"linkd=[\": not a valid log filter"]
        );
    }
}
