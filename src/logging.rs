//! Log setup: `tracing` to stderr, human-readable or JSON lines.
//!
//! What never reaches a log: query strings (they carry codes and state), `Authorization`,
//! `Cookie` and `Set-Cookie` headers, request bodies, and any token, secret, password or
//! code. Requests are logged by route template with a request id; see `http::serve_request`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. A second call (tests starting several servers in one
/// process) leaves the first in place.
pub fn init(format: LogFormat, filter: &str) {
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false);
    let _already_installed = match format {
        LogFormat::Human => builder.try_init(),
        LogFormat::Json => builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .with_span_list(false)
            .try_init(),
    };
}
