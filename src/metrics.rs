//! Prometheus metrics: one process-wide recorder (the `metrics` facade allows only one),
//! rendered by `GET /metrics`.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `linkd_http_requests_total` | route, method, status | requests answered |
//! | `linkd_http_body_bytes_reserved` | | memory reserved by request bodies being read or handled |
//! | `linkd_http_request_duration_seconds` | route | handler latency histogram |
//! | `linkd_store_errors_total` | operation | store calls that failed as unavailable |
//! | `linkd_store_up` | | 1 when the latest store health probe succeeded, else 0 |
//! | `linkd_keyring_reloads_total` | outcome | keyring reloads (changed, failed) |
//!
//! Every label takes values from a fixed set, so a client cannot create series: `route` is a
//! route table label or `unmatched`, `method` one of [`METHODS`] or `other`, `status` a code
//! linkd answers with.

use std::sync::OnceLock;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Latency buckets in seconds: token and userinfo calls live in the low milliseconds; the
/// upper buckets catch store timeouts.
const LATENCY_BUCKETS: [f64; 12] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
];

/// Installs the recorder (once per process) and returns the handle that renders it; `None`
/// when another recorder was installed first by an embedding program.
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("linkd_http_request_duration_seconds".to_owned()),
                    &LATENCY_BUCKETS,
                )
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => Some(handle),
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// The metrics in Prometheus text format.
pub fn render() -> String {
    install().map(PrometheusHandle::render).unwrap_or_default()
}

/// The request methods that get their own `method` label; any other is `other`.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"];

/// The `method` label of `method`: HTTP lets clients invent methods, and each distinct label
/// value is a series kept for the life of the process.
fn method_label(method: &str) -> &'static str {
    METHODS
        .into_iter()
        .find(|known| *known == method)
        .unwrap_or("other")
}

/// Counts one answered request and its latency.
pub fn record_request(route: &'static str, method: &str, status: u16, elapsed: Duration) {
    metrics::counter!(
        "linkd_http_requests_total",
        "route" => route,
        "method" => method_label(method),
        "status" => status.to_string()
    )
    .increment(1);
    metrics::histogram!("linkd_http_request_duration_seconds", "route" => route)
        .record(elapsed.as_secs_f64());
}

/// Adds (`reserved`) or removes request-body bytes from the reserved memory gauge.
pub fn record_body_bytes_reserved(bytes: usize, reserved: bool) {
    let gauge = metrics::gauge!("linkd_http_body_bytes_reserved");
    #[allow(clippy::cast_precision_loss)]
    let bytes = bytes as f64;
    if reserved {
        gauge.increment(bytes);
    } else {
        gauge.decrement(bytes);
    }
}

/// Counts a store call that failed because the store could not answer.
pub fn record_store_error(operation: &'static str) {
    metrics::counter!("linkd_store_errors_total", "operation" => operation).increment(1);
}

/// Sets the store health gauge from the latest probe.
pub fn record_store_up(up: bool) {
    metrics::gauge!("linkd_store_up").set(if up { 1.0 } else { 0.0 });
}

/// Counts a keyring reload by outcome (`changed` or `failed`).
pub fn record_keyring_reload(outcome: &'static str) {
    metrics::counter!("linkd_keyring_reloads_total", "outcome" => outcome).increment(1);
}

/// Counts a refusal by throttling (`what`: `client_auth`, `signin`).
pub fn record_throttled(what: &'static str) {
    metrics::counter!("linkd_throttled_total", "what" => what).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invented_methods_share_one_label() {
        assert_eq!(method_label("GET"), "GET");
        assert_eq!(method_label("PATCH"), "PATCH");
        assert_eq!(method_label("get"), "other");
        assert_eq!(method_label("BREW"), "other");
    }
}
