//! Operations endpoints: liveness, readiness and metrics.
//!
//! Liveness never depends on the store: a Redis outage must not make an orchestrator
//! restart every instance. Readiness does, so that a load balancer stops sending traffic
//! to an instance that could only answer 503.

use std::time::Duration;

use hyper::StatusCode;

use crate::app::App;
use crate::http::{HttpResponse, response};

/// Bound on the readiness probe's store ping, below typical probe timeouts.
const READINESS_PING_TIMEOUT: Duration = Duration::from_secs(2);

/// `GET /healthz`: the process is alive and serving.
pub fn healthz() -> HttpResponse {
    response::json(StatusCode::OK, &serde_json::json!({ "status": "ok" }))
}

/// `GET /readyz`: 200 when the store answers, a signing key is loaded and the instance is
/// not draining; 503 naming each failed check otherwise.
pub async fn readyz(app: &App) -> HttpResponse {
    let store_ok = match tokio::time::timeout(READINESS_PING_TIMEOUT, app.store.ping()).await {
        Ok(Ok(())) => true,
        Ok(Err(_)) | Err(_) => {
            crate::metrics::record_store_error("ping");
            false
        }
    };
    let signing_key_ok = app.keyring.load().has_signing_key();
    let draining = app.is_draining();
    let ready = store_ok && signing_key_ok && !draining;
    let body = serde_json::json!({
        "status": if ready { "ready" } else { "unavailable" },
        "checks": {
            "store": if store_ok { "ok" } else { "unreachable" },
            "signing_key": if signing_key_ok { "ok" } else { "missing" },
            "draining": draining,
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

/// `GET /metrics`: Prometheus text exposition format.
pub fn metrics() -> HttpResponse {
    response::with_body(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        crate::metrics::render(),
    )
}
