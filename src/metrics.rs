//! Prometheus metrics: one process-wide recorder (the `metrics` facade allows only one),
//! rendered by `GET /metrics`. Every metric is described ([`describe`]), so that the
//! exposition carries `# HELP` and `# TYPE` for each family.
//!
//! | metric | type | labels | meaning |
//! |---|---|---|---|
//! | `linkd_build_info` | gauge | version, git_commit | always 1; the running build |
//! | `linkd_http_requests_total` | counter | route, method, status | requests answered |
//! | `linkd_http_request_duration_seconds` | histogram | route | handler latency |
//! | `linkd_http_body_bytes_reserved` | gauge | | memory reserved by request bodies being read or handled |
//! | `linkd_token_requests_total` | counter | grant_type, result, error | token endpoint outcomes |
//! | `linkd_code_replays_total` | counter | | authorization codes presented again (the grant is revoked) |
//! | `linkd_throttled_total` | counter | what | refusals by throttling |
//! | `linkd_unlink_events_total` | counter | outcome | unlink events the device graph was told of (`handled`) or not (`failed`) |
//! | `linkd_unlink_queue_depth` | gauge | | unlink events left pending after the latest worker pass (at most one batch) |
//! | `linkd_fulfillment_calls_total` | counter | intent, outcome | calls to integrations' fulfilments |
//! | `linkd_store_call_duration_seconds` | histogram | operation | store calls of the token and userinfo endpoints |
//! | `linkd_store_errors_total` | counter | operation | store calls that failed as unavailable |
//! | `linkd_store_up` | gauge | | 1 when the latest store health probe succeeded, else 0 |
//! | `linkd_keyring_reloads_total` | counter | outcome | keyring reloads (changed, failed) |
//! | `linkd_signing_key_age_seconds` | gauge | | time since the current signing key became current |
//! | `linkd_tls_certificate_expiry_seconds` | gauge | | time until the served certificate's notAfter |
//! | `process_*` | | | CPU, memory, descriptors and threads of the process (`metrics-process`) |
//!
//! Every label takes values from a fixed set, so a client cannot create series: `route` is a
//! route table label or `unmatched`, `method` one of [`METHODS`] or `other`, `status` a code
//! linkd answers with, `grant_type` one of [`grant_type_label`]'s, `error` an OAuth error
//! code linkd sends, never text a client supplied.

use std::future::Future;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

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
                .ok()?
                .set_buckets_for_metric(
                    Matcher::Full("linkd_store_call_duration_seconds".to_owned()),
                    &LATENCY_BUCKETS,
                )
                .ok()?;
            match builder.install_recorder() {
                Ok(handle) => {
                    describe();
                    start_upkeep(handle.clone());
                    Some(handle)
                }
                Err(error) => {
                    tracing::warn!(%error, "metrics recorder not installed");
                    None
                }
            }
        })
        .as_ref()
}

/// How often histogram samples are folded into their buckets.
const UPKEEP_INTERVAL: std::time::Duration = std::time::Duration::from_secs(5);

/// Folds recorded histogram samples into their buckets every [`UPKEEP_INTERVAL`], on a
/// thread of its own. The recorder keeps every sample until this runs (a scrape also does
/// it), so without it memory grows with every request while nothing scrapes `/metrics`:
/// some 50 bytes a request, hundreds of megabytes a day.
fn start_upkeep(handle: PrometheusHandle) {
    let started = std::thread::Builder::new()
        .name("metrics-upkeep".to_owned())
        .spawn(move || {
            loop {
                std::thread::sleep(UPKEEP_INTERVAL);
                handle.run_upkeep();
            }
        });
    if let Err(error) = started {
        tracing::warn!(%error, "metrics upkeep thread not started: histograms grow until scraped");
    }
}

/// The process metrics collector, described once with the recorder.
fn process_collector() -> &'static metrics_process::Collector {
    static COLLECTOR: OnceLock<metrics_process::Collector> = OnceLock::new();
    COLLECTOR.get_or_init(metrics_process::Collector::default)
}

/// Gives every metric its help text and unit, and sets the build info.
fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_gauge!(
        "linkd_build_info",
        "The running build: always 1, labelled with the version and git commit."
    );
    describe_counter!(
        "linkd_http_requests_total",
        "HTTP requests answered, by route, method and status."
    );
    describe_histogram!(
        "linkd_http_request_duration_seconds",
        metrics::Unit::Seconds,
        "Time to answer an HTTP request, by route."
    );
    describe_gauge!(
        "linkd_http_body_bytes_reserved",
        metrics::Unit::Bytes,
        "Memory reserved by request bodies being read or handled."
    );
    describe_counter!(
        "linkd_token_requests_total",
        "Token endpoint requests by grant type, result and the OAuth error sent (none when tokens were issued); each invalid_grant unlinks a user."
    );
    describe_counter!(
        "linkd_code_replays_total",
        "Authorization codes presented after they were used; each revokes its grant."
    );
    describe_counter!(
        "linkd_throttled_total",
        "Requests refused by throttling, by what was throttled (client_auth, signin)."
    );
    describe_counter!(
        "linkd_unlink_events_total",
        "Unlink events the device graph was told of (handled) or could not be (failed, retried later)."
    );
    describe_gauge!(
        "linkd_unlink_queue_depth",
        "Unlink events still pending after the latest worker pass (counts at most one batch)."
    );
    describe_counter!(
        "linkd_fulfillment_calls_total",
        "Calls to integrations' fulfilment URLs, by intent and outcome."
    );
    describe_histogram!(
        "linkd_store_call_duration_seconds",
        metrics::Unit::Seconds,
        "Time of store calls on the token and userinfo paths, by operation."
    );
    describe_counter!(
        "linkd_store_errors_total",
        "Store calls that failed because the store could not answer, by operation."
    );
    describe_gauge!(
        "linkd_store_up",
        "1 when the latest store health probe succeeded, else 0."
    );
    describe_counter!(
        "linkd_keyring_reloads_total",
        "Keyring reloads from the keys directory, by outcome (changed, failed)."
    );
    describe_gauge!(
        "linkd_signing_key_age_seconds",
        metrics::Unit::Seconds,
        "Time since the current signing key became current."
    );
    describe_gauge!(
        "linkd_tls_certificate_expiry_seconds",
        metrics::Unit::Seconds,
        "Time until the notAfter of the certificate linkd serves (negative once expired)."
    );
    metrics::gauge!(
        "linkd_build_info",
        "version" => env!("CARGO_PKG_VERSION"),
        "git_commit" => option_env!("LINKD_GIT_COMMIT").unwrap_or("unknown")
    )
    .set(1.0);
    process_collector().describe();
}

/// The metrics in Prometheus text format, with the process metrics read now.
pub fn render() -> String {
    let Some(handle) = install() else {
        return String::new();
    };
    process_collector().collect();
    handle.render()
}

/// The `grant_type` label of a token request's `grant_type` parameter: one of a fixed set,
/// as the parameter is the client's to choose.
pub fn grant_type_label(grant_type: Option<&str>) -> &'static str {
    match grant_type {
        Some("authorization_code") => "authorization_code",
        Some("refresh_token") => "refresh_token",
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => "jwt_bearer",
        Some(_) => "other",
        None => "none",
    }
}

/// Counts a token request by grant type, result (`issued` or why it was refused) and the
/// OAuth error code sent (`none` when tokens were issued).
pub fn record_token_request(grant_type: &'static str, result: &'static str, error: &'static str) {
    metrics::counter!(
        "linkd_token_requests_total",
        "grant_type" => grant_type,
        "result" => result,
        "error" => error
    )
    .increment(1);
}

/// Counts an authorization code presented again.
pub fn record_code_replay() {
    metrics::counter!("linkd_code_replays_total").increment(1);
}

/// Counts unlink events by outcome (`handled`, `failed`).
pub fn record_unlink_events(outcome: &'static str, events: usize) {
    metrics::counter!("linkd_unlink_events_total", "outcome" => outcome)
        .increment(u64::try_from(events).unwrap_or(u64::MAX));
}

/// Sets the unlink queue depth seen by the latest worker pass.
pub fn record_unlink_queue_depth(pending: usize) {
    #[allow(clippy::cast_precision_loss)]
    metrics::gauge!("linkd_unlink_queue_depth").set(pending as f64);
}

/// Counts a call to a fulfilment by intent and outcome.
pub fn record_fulfillment_call(intent: &'static str, outcome: &'static str) {
    metrics::counter!("linkd_fulfillment_calls_total", "intent" => intent, "outcome" => outcome)
        .increment(1);
}

/// Runs the store call `call`, recording its duration as `operation`.
pub async fn time_store<T>(operation: &'static str, call: impl Future<Output = T>) -> T {
    let started = Instant::now();
    let outcome = call.await;
    metrics::histogram!("linkd_store_call_duration_seconds", "operation" => operation)
        .record(started.elapsed().as_secs_f64());
    outcome
}

/// The served certificate's notAfter, Unix seconds; `i64::MIN` while none is known.
static CERTIFICATE_NOT_AFTER: AtomicI64 = AtomicI64::new(i64::MIN);

/// Remembers the notAfter (Unix seconds) of the certificate now served.
pub fn record_certificate_not_after(not_after: i64) {
    CERTIFICATE_NOT_AFTER.store(not_after, Ordering::Relaxed);
}

/// Sets the gauges that count from `now` (Unix seconds): the current signing key's age
/// (`current_since`, when there is one) and the time left on the served certificate.
pub fn record_time_gauges(now: i64, current_since: Option<i64>) {
    #[allow(clippy::cast_precision_loss)]
    if let Some(since) = current_since {
        metrics::gauge!("linkd_signing_key_age_seconds").set(now.saturating_sub(since) as f64);
    }
    let not_after = CERTIFICATE_NOT_AFTER.load(Ordering::Relaxed);
    #[allow(clippy::cast_precision_loss)]
    if not_after != i64::MIN {
        metrics::gauge!("linkd_tls_certificate_expiry_seconds")
            .set(not_after.saturating_sub(now) as f64);
    }
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
