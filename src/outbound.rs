//! linkd's outbound calls — SYNC to integrations' fulfilment URLs, `agentUsers.delete` to an
//! external device graph, discovery, keys, tokens and userinfo of upstream OpenID providers —
//! and how their answers are read.
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
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
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
        let authorization = bearer_header(bearer)?;
        let body = body.map(|body| Bytes::from(serde_json::to_vec(body).unwrap_or_default()));
        let (status, answer) = self
            .exchange(url, Retry::Transient, |uri| {
                let request = Request::builder()
                    .method(method.clone())
                    .uri(uri)
                    .header(AUTHORIZATION, authorization.clone());
                match &body {
                    Some(body) => request
                        .header(CONTENT_TYPE, "application/json")
                        .body(Full::new(body.clone())),
                    None => request.body(Full::new(Bytes::new())),
                }
            })
            .await?;
        read_answer(status, &answer)
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

    /// GETs a JSON document, with a Bearer token when one is given (an OpenID provider's
    /// discovery document and JWKS need none, its userinfo endpoint does). Someone waits on
    /// the answer, so failures that come fast (no connection, 429, 5xx) are retried and an
    /// attempt that timed out is not.
    pub async fn get_json(&self, url: &str, bearer: Option<&str>) -> Result<Value, OutboundError> {
        let authorization = bearer.map(bearer_header).transpose()?;
        let (status, answer) = self
            .exchange(url, Retry::Interactive, |uri| {
                let mut request = Request::builder()
                    .method(Method::GET)
                    .uri(uri)
                    .header(ACCEPT, "application/json");
                if let Some(authorization) = &authorization {
                    request = request.header(AUTHORIZATION, authorization.clone());
                }
                request.body(Full::new(Bytes::new()))
            })
            .await?;
        read_answer(status, &answer)
    }

    /// POSTs `form` as `application/x-www-form-urlencoded`, with HTTP Basic credentials when
    /// given (each form-urlencoded before base64, as RFC 6749 §2.3.1 requires of OAuth client
    /// credentials), and returns the answer whatever its status: an OAuth token endpoint
    /// reports errors as JSON bodies of 4xx answers.
    ///
    /// The request is sent again only when the connection could not be made: a request that
    /// may have arrived (an authorization code, which is single-use) is never sent twice.
    pub async fn post_form(
        &self,
        url: &str,
        form: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Result<FormAnswer, OutboundError> {
        let body = Bytes::from(
            serde_urlencoded::to_string(form)
                .map_err(|_| OutboundError::Internal("unencodable form".to_owned()))?,
        );
        let authorization = basic.map(basic_header).transpose()?;
        let (status, answer) = self
            .exchange(url, Retry::ConnectionOnly, |uri| {
                let mut request = Request::builder()
                    .method(Method::POST)
                    .uri(uri)
                    .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
                    .header(ACCEPT, "application/json");
                if let Some(authorization) = &authorization {
                    request = request.header(AUTHORIZATION, authorization.clone());
                }
                request.body(Full::new(body.clone()))
            })
            .await?;
        Ok(FormAnswer {
            status: status.as_u16(),
            json: serde_json::from_slice(&answer).ok(),
        })
    }

    /// Sends the request `build` makes for `url` until an attempt counts as final under
    /// `retry`, and returns the status and body of that attempt.
    async fn exchange(
        &self,
        url: &str,
        retry: Retry,
        build: impl Fn(Uri) -> Result<Request<Full<Bytes>>, hyper::http::Error>,
    ) -> Result<(StatusCode, Bytes), OutboundError> {
        let client = self.client.as_ref().map_err(|reason| {
            OutboundError::Internal(format!("no trusted root certificates: {reason}"))
        })?;
        let uri = check_url(url).map_err(OutboundError::Internal)?;
        let mut backoff = FIRST_BACKOFF;
        let mut last = OutboundError::Unreachable("no attempt made".to_owned());
        for attempt_number in 1..=ATTEMPTS {
            let request =
                build(uri.clone()).map_err(|error| OutboundError::Internal(error.to_string()))?;
            let error = match attempt(client, request).await {
                Ok((status, body)) => match retry {
                    Retry::Transient | Retry::Interactive if is_transient(status.as_u16()) => {
                        if attempt_number == ATTEMPTS {
                            return Ok((status, body));
                        }
                        OutboundError::Status(status.as_u16())
                    }
                    _ => return Ok((status, body)),
                },
                Err(Failed {
                    error: error @ OutboundError::Unreachable(_),
                    connected,
                    timed_out,
                }) if match retry {
                    Retry::Transient => true,
                    Retry::Interactive => !timed_out,
                    Retry::ConnectionOnly => !connected,
                } =>
                {
                    error
                }
                Err(Failed { error, .. }) => return Err(error),
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
}

/// The answer to [`OutboundClient::post_form`].
#[derive(Debug, Clone, PartialEq)]
pub struct FormAnswer {
    /// The HTTP status.
    pub status: u16,
    /// The body, if it is JSON.
    pub json: Option<Value>,
}

/// Which failures an exchange tries again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Network errors, timeouts, 429 and 5xx: for requests that may be repeated.
    Transient,
    /// As `Transient`, except attempts that timed out: for calls someone waits on.
    Interactive,
    /// Only connections that could not be made: for requests that must arrive at most once.
    ConnectionOnly,
}

fn bearer_header(bearer: &str) -> Result<HeaderValue, OutboundError> {
    HeaderValue::from_str(&format!("Bearer {bearer}"))
        .map_err(|_| OutboundError::Internal("unusable token".to_owned()))
}

fn basic_header((user, password): (&str, &str)) -> Result<HeaderValue, OutboundError> {
    use base64::Engine as _;
    let encode = |value: &str| {
        serde_urlencoded::to_string([("", value)])
            .map(|pair| pair[1..].to_owned())
            .map_err(|_| OutboundError::Internal("unusable credentials".to_owned()))
    };
    let credentials = format!("{}:{}", encode(user)?, encode(password)?);
    let mut value = HeaderValue::from_str(&format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(credentials)
    ))
    .map_err(|_| OutboundError::Internal("unusable credentials".to_owned()))?;
    value.set_sensitive(true);
    Ok(value)
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

/// Why one attempt failed, and whether its connection was made (the request may have
/// arrived).
struct Failed {
    error: OutboundError,
    connected: bool,
    timed_out: bool,
}

/// So that `?` reads an attempt's failure as the call's.
impl From<Failed> for OutboundError {
    fn from(failed: Failed) -> Self {
        failed.error
    }
}

/// One exchange within the attempt timeout; the status and the bounded body.
async fn attempt(
    client: &HttpsClient,
    request: Request<Full<Bytes>>,
) -> Result<(StatusCode, Bytes), Failed> {
    let exchange = async {
        let response = client.request(request).await.map_err(|error| Failed {
            connected: !error.is_connect(),
            timed_out: false,
            error: OutboundError::Unreachable(error.to_string()),
        })?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|_| Failed {
                error: OutboundError::InvalidResponse(format!(
                    "a body that could not be read or exceeds {MAX_RESPONSE_BYTES} bytes"
                )),
                connected: true,
                timed_out: false,
            })?
            .to_bytes();
        Ok((status, body))
    };
    tokio::time::timeout(ATTEMPT_TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| {
            Err(Failed {
                error: OutboundError::Unreachable(format!("no answer within {ATTEMPT_TIMEOUT:?}")),
                // A timeout may have struck after the request was sent.
                connected: true,
                timed_out: true,
            })
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
    fn basic_credentials_are_form_urlencoded_before_base64() {
        use base64::Engine as _;
        let header = basic_header(("client:1", "s+cr t%/é")).unwrap();
        assert!(header.is_sensitive());
        let encoded = header.to_str().unwrap().strip_prefix("Basic ").unwrap();
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .unwrap();
        assert_eq!(
            String::from_utf8(decoded).unwrap(),
            "client%3A1:s%2Bcr+t%25%2F%C3%A9"
        );
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
