//! Operations endpoints: liveness, readiness and metrics.
//!
//! Liveness never depends on the store: a Redis outage must not make an orchestrator
//! restart every instance. Nor does readiness: every instance shares the store, so an outage
//! would take them all out of the load balancer at once, which then closes connections
//! instead of letting linkd answer 503 with `Retry-After`. Readiness means this instance can
//! serve: a signing key is loaded, it is not draining, and the store has answered once since
//! it started (an instance started before its Redis has nothing to serve with). The store's
//! health, as the background probe ([`probe_store`]) last saw it, is reported beside it.

use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;

use crate::app::App;
use crate::http::{HttpResponse, response};

/// Bound on one store health probe, below the probe interval.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the store's health is probed for `/readyz` and `linkd_store_up`.
pub const STORE_PROBE_INTERVAL: Duration = Duration::from_secs(5);

/// `GET /healthz`: the process is alive and serving.
pub fn healthz() -> HttpResponse {
    response::json(StatusCode::OK, &serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when a signing key is loaded, the instance is not draining and the
/// store has answered since it started; 503 naming each failed check otherwise. `store` reports the latest store probe (`up` or
/// `down`) without deciding readiness.
pub fn readyz(app: &App) -> HttpResponse {
    let signing_key_ok = app.keyring.load().has_signing_key();
    let draining = app.is_draining();
    let store = if app.is_store_up() { "up" } else { "down" };
    let store_answered = app.has_store_answered();
    let ready = signing_key_ok && !draining && store_answered;
    let body = serde_json::json!({
        "status": if ready { "ready" } else { "unavailable" },
        "store": store,
        "checks": {
            "signing_key": if signing_key_ok { "ok" } else { "missing" },
            "draining": draining,
            "store_answered": store_answered,
        }
    });
    if ready {
        response::json(StatusCode::OK, &body)
    } else {
        let mut answer = response::json(StatusCode::SERVICE_UNAVAILABLE, &body);
        answer.headers_mut().insert(
            hyper::header::RETRY_AFTER,
            hyper::header::HeaderValue::from(5u32),
        );
        answer
    }
}

/// Pings the store every `interval` and records the outcome in `app` (and the
/// `linkd_store_up` gauge), for as long as the returned task runs.
pub fn probe_store(app: Arc<App>, interval: Duration) -> tokio::task::JoinHandle<()> {
    app.set_store_up(app.is_store_up());
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let up = matches!(
                tokio::time::timeout(STORE_PROBE_TIMEOUT, app.store.ping()).await,
                Ok(Ok(()))
            );
            if !up {
                crate::metrics::record_store_error("ping");
            }
            if up != app.is_store_up() {
                if up {
                    tracing::info!("store reachable again");
                } else {
                    tracing::warn!("store unreachable");
                }
            }
            app.set_store_up(up);
        }
    })
}

/// `GET /metrics`: Prometheus text exposition format, with the gauges that count time read
/// now from `app`'s clock.
pub fn metrics(app: &App) -> HttpResponse {
    let keyring = app.keyring.load();
    let current_since = keyring.current_kid().and_then(|kid| {
        keyring
            .keys()
            .iter()
            .find(|key| key.kid == kid)
            .map(|key| key.activated_at.unwrap_or(key.created_at))
    });
    crate::metrics::record_time_gauges(app.clock.now(), current_since);
    response::with_body(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        crate::metrics::render(),
    )
}
