//! linkd's outbound calls — SYNC to integrations' fulfilment URLs, `agentUsers.delete` to an
//! external device graph — and how their answers are read.
//!
//! Calls are bounded: HTTPS only (plain HTTP to loopback, for local services), a timeout per
//! attempt, a few attempts with backoff on network errors, 429 and 5xx, and a cap on the
//! response size. Servers are trusted by the system's root certificates plus any given with
//! `--outbound-ca-file`, for services behind a private CA.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;
use serde_json::Value;

/// Attempts per call, the first included.
const ATTEMPTS: u32 = 3;
/// Bound on one attempt, connection included.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// First pause between attempts; doubled each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// Largest answer read.
pub const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Why an outbound call failed. Messages never include the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// Not reachable after every attempt, or timed out.
    #[error("could not be reached: {0}")]
    Unreachable(String),
    /// The server answered with a non-success status.
    #[error("answered HTTP {0}")]
    Status(u16),
    /// The answer is not JSON, or too large.
    #[error("answered {0}")]
    InvalidResponse(String),
    /// The call could not be made (no trusted roots, an unusable token).
    #[error("cannot be called: {0}")]
    Internal(String),
}

/// Checks a fulfilment or device-graph URL: `https`, or `http` to a loopback host.
pub fn check_url(url: &str) -> Result<Uri, String> {
    let uri: Uri = url.parse().map_err(|_| format!("{url:?} is not a URL"))?;
    let host = uri.host().unwrap_or_default();
    let loopback = host == "localhost"
        || host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") if !host.is_empty() => Ok(uri),
        Some("http") if loopback => Ok(uri),
        _ => Err(format!(
            "{url:?} must be an https URL (plain http is allowed to loopback addresses only)"
        )),
    }
}

/// Reads the certificates of a PEM file given with `--outbound-ca-file`.
pub fn read_ca_file(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certificates = CertificateDer::pem_file_iter(path)
        .and_then(|certificates| certificates.collect::<Result<Vec<_>, _>>())
        .map_err(|error| format!("{}: {error}", path.display()))?;
    if certificates.is_empty() {
        return Err(format!(
            "{}: no PEM certificate in the file",
            path.display()
        ));
    }
    Ok(certificates)
}

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The HTTPS client of outbound calls, cheap to clone (its connection pool is shared).
#[derive(Clone)]
pub struct OutboundClient {
    // A client that could not be built (no root certificate at all) fails each call with the
    // reason instead of failing start-up, since most deployments never call out.
    client: Result<HttpsClient, String>,
}

impl std::fmt::Debug for OutboundClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundClient")
            .field("usable", &self.client.is_ok())
            .finish_non_exhaustive()
    }
}

impl OutboundClient {
    /// A client trusting the system's roots and `extra_roots`.
    pub fn new(extra_roots: &[CertificateDer<'static>]) -> Self {
        Self {
            client: build_client(extra_roots),
        }
    }

    /// Sends a request with a Bearer token and an optional JSON body, and reads a JSON
    /// answer; retries transient failures.
    pub async fn send_json(
        &self,
        method: Method,
        url: &str,
        bearer: &str,
        body: Option<&Value>,
    ) -> Result<Value, OutboundError> {
        let client = self.client.as_ref().map_err(|reason| {
            OutboundError::Internal(format!("no trusted root certificates: {reason}"))
        })?;
        let uri = check_url(url).map_err(OutboundError::Internal)?;
        let authorization = HeaderValue::from_str(&format!("Bearer {bearer}"))
            .map_err(|_| OutboundError::Internal("unusable token".to_owned()))?;
        let body = body.map(|body| Bytes::from(serde_json::to_vec(body).unwrap_or_default()));
        let mut backoff = FIRST_BACKOFF;
        let mut last = OutboundError::Unreachable("no attempt made".to_owned());
        for attempt_number in 1..=ATTEMPTS {
            let request = Request::builder()
                .method(method.clone())
                .uri(uri.clone())
                .header(AUTHORIZATION, authorization.clone());
            let request = match &body {
                Some(body) => request
                    .header(CONTENT_TYPE, "application/json")
                    .body(Full::new(body.clone())),
                None => request.body(Full::new(Bytes::new())),
            }
            .map_err(|error| OutboundError::Internal(error.to_string()))?;
            let error = match attempt(client, request).await {
                Ok((status, body)) => match read_answer(status, &body) {
                    Err(error @ OutboundError::Status(code)) if is_transient(code) => error,
                    outcome => return outcome,
                },
                Err(error @ OutboundError::Unreachable(_)) => error,
                Err(error) => return Err(error),
            };
            tracing::warn!(%error, attempt = attempt_number, "outbound call failed");
            last = error;
            if attempt_number < ATTEMPTS {
                tokio::time::sleep(backoff).await;
                backoff *= 2;
            }
        }
        Err(last)
    }

    /// POSTs `body` as JSON with a Bearer token; retries transient failures.
    pub async fn post_json(
        &self,
        url: &str,
        bearer: &str,
        body: &Value,
    ) -> Result<Value, OutboundError> {
        self.send_json(Method::POST, url, bearer, Some(body)).await
    }

    /// GETs a public JSON document (an integrator's JWKS) without credentials, in one
    /// attempt: a person is waiting on the answer.
    pub async fn get_public_json(&self, url: &str) -> Result<Value, OutboundError> {
        let client = self.client.as_ref().map_err(|reason| {
            OutboundError::Internal(format!("no trusted root certificates: {reason}"))
        })?;
        let uri = check_url(url).map_err(OutboundError::Internal)?;
        let request = Request::builder()
            .method(Method::GET)
            .uri(uri)
            .body(Full::new(Bytes::new()))
            .map_err(|error| OutboundError::Internal(error.to_string()))?;
        let (status, body) = attempt(client, request).await?;
        read_answer(status, &body)
    }
}

fn build_client(extra_roots: &[CertificateDer<'static>]) -> Result<HttpsClient, String> {
    let mut roots = rustls::RootCertStore::empty();
    // Unreadable system certificates are skipped, as every TLS client does.
    let (_added, _skipped) =
        roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    for certificate in extra_roots {
        roots
            .add(certificate.clone())
            .map_err(|error| format!("--outbound-ca-file: {error}"))?;
    }
    if roots.is_empty() {
        return Err("the system has none and no --outbound-ca-file was given".to_owned());
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|error| error.to_string())?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .build();
    Ok(Client::builder(TokioExecutor::new()).build(connector))
}

fn is_transient(status: u16) -> bool {
    status >= 500 || status == StatusCode::TOO_MANY_REQUESTS.as_u16()
}

/// One exchange within the attempt timeout; the status and the bounded body.
async fn attempt(
    client: &HttpsClient,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), OutboundError> {
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|error| OutboundError::Unreachable(error.to_string()))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|_| {
                OutboundError::InvalidResponse(format!(
                    "a body that could not be read or exceeds {MAX_RESPONSE_BYTES} bytes"
                ))
            })?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(ATTEMPT_TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| {
            Err(OutboundError::Unreachable(format!(
                "no answer within {ATTEMPT_TIMEOUT:?}"
            )))
        })
}

/// An answer as a call's outcome: the JSON body of a success, or the status of a failure.
pub fn read_answer(status: StatusCode, body: &[u8]) -> Result<Value, OutboundError> {
    if !status.is_success() {
        return Err(OutboundError::Status(status.as_u16()));
    }
    serde_json::from_slice(body)
        .map_err(|_| OutboundError::InvalidResponse("a body that is not JSON".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_url("https://fulfil.example/smarthome").is_ok());
        assert!(check_url("http://127.0.0.1:8080/f").is_ok());
        assert!(check_url("http://[::1]:8080/f").is_ok());
        assert!(check_url("http://localhost/f").is_ok());
        assert!(check_url("http://fulfil.example/f").is_err());
        assert!(check_url("http://10.0.0.1/f").is_err());
        assert!(check_url("ftp://fulfil.example/f").is_err());
        assert!(check_url("not a url").is_err());
    }

    #[test]
    fn answers_are_json_successes_or_statuses() {
        assert_eq!(
            read_answer(StatusCode::OK, b"{\"a\":1}"),
            Ok(serde_json::json!({"a": 1}))
        );
        assert_eq!(
            read_answer(StatusCode::NOT_FOUND, b"{}"),
            Err(OutboundError::Status(404))
        );
        assert!(matches!(
            read_answer(StatusCode::OK, b"<html>"),
            Err(OutboundError::InvalidResponse(_))
        ));
        assert!(is_transient(503) && is_transient(429) && !is_transient(404));
    }

    #[test]
    fn a_ca_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        assert!(
            read_ca_file(&path)
                .unwrap_err()
                .contains("no PEM certificate")
        );
        assert!(read_ca_file(&dir.path().join("absent.pem")).is_err());
    }
}
