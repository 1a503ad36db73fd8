//! linkd in the platform's seat towards an integration's fulfilment URL: after a user links,
//! and on `devices:requestSync`, it sends the smart-home `action.devices.SYNC` intent with an
//! access token it issued for that user, validates the answer and replaces the user's devices
//! in the graph.
//!
//! Outbound calls are bounded: HTTPS only (plain HTTP to loopback, for local fulfilments), a
//! timeout per attempt, a few attempts with backoff on network errors, 429 and 5xx, and a cap
//! on the response size.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Uri};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

use super::devices;
use crate::app::App;
use crate::clock::SharedClock;
use crate::grants::{self, AccessClaims};
use crate::store::{ClientRecord, LinkRecord, SharedStore};
use crate::tokens::TokenKind;
use crate::tokens::keyring::KeyringHandle;

/// The intent linkd sends.
pub const SYNC_INTENT: &str = "action.devices.SYNC";

/// Attempts per call, the first included.
const ATTEMPTS: u32 = 3;
/// Bound on one attempt, connection included.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// First pause between attempts; doubled each time.
const FIRST_BACKOFF: Duration = Duration::from_millis(200);
/// Largest SYNC response read.
const MAX_RESPONSE_BYTES: usize = 1024 * 1024;

/// Why a fulfilment call failed. Messages never include the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FulfillmentError {
    /// The integration has no fulfilment URL.
    #[error("the integration has no fulfilment URL (linkd clients update --fulfillment-url)")]
    NotConfigured,
    /// Not reachable after every attempt, or timed out.
    #[error("the fulfilment could not be reached: {0}")]
    Unreachable(String),
    /// The fulfilment answered with a non-success status.
    #[error("the fulfilment answered HTTP {0}")]
    Status(u16),
    /// The answer is not a valid SYNC response; the message names the field.
    #[error("the fulfilment's SYNC response is invalid: {0}")]
    InvalidResponse(String),
    /// The access token for the call could not be signed, or the store failed.
    #[error("linkd cannot make the call: {0}")]
    Internal(String),
}

/// Checks a fulfilment (or device-graph) URL: `https`, or `http` to a loopback host.
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

type HttpsClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

fn http_client() -> Result<&'static HttpsClient, FulfillmentError> {
    static CLIENT: OnceLock<Result<HttpsClient, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_native_roots(rustls::crypto::aws_lc_rs::default_provider())
                .map_err(|error| format!("no trusted root certificates: {error}"))?
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .build();
            Ok(Client::builder(TokioExecutor::new()).build(connector))
        })
        .as_ref()
        .map_err(|error| FulfillmentError::Internal(error.clone()))
}

/// Outcome of one attempt: a final answer, or a failure worth another attempt.
enum Attempt {
    Done(Result<Value, FulfillmentError>),
    Retry(FulfillmentError),
}

async fn attempt(method: &Method, uri: &Uri, bearer: &str, body: Option<&Bytes>) -> Attempt {
    let client = match http_client() {
        Ok(client) => client,
        Err(error) => return Attempt::Done(Err(error)),
    };
    let Ok(authorization) = HeaderValue::from_str(&format!("Bearer {bearer}")) else {
        return Attempt::Done(Err(FulfillmentError::Internal("unusable token".to_owned())));
    };
    let mut request = Request::builder()
        .method(method.clone())
        .uri(uri.clone())
        .header(AUTHORIZATION, authorization);
    if body.is_some() {
        request = request.header(CONTENT_TYPE, "application/json");
    }
    let request = request.body(Full::new(body.cloned().unwrap_or_default()));
    let request = match request {
        Ok(request) => request,
        Err(error) => return Attempt::Done(Err(FulfillmentError::Internal(error.to_string()))),
    };
    let exchange = async {
        let response = client
            .request(request)
            .await
            .map_err(|error| FulfillmentError::Unreachable(error.to_string()))?;
        let status = response.status();
        let body = Limited::new(response.into_body(), MAX_RESPONSE_BYTES)
            .collect()
            .await
            .map_err(|_| {
                FulfillmentError::InvalidResponse(format!(
                    "the body could not be read or exceeds {MAX_RESPONSE_BYTES} bytes"
                ))
            })?
            .to_bytes();
        Ok((status, body))
    };
    match tokio::time::timeout(ATTEMPT_TIMEOUT, exchange).await {
        Err(_) => Attempt::Retry(FulfillmentError::Unreachable(format!(
            "no answer within {ATTEMPT_TIMEOUT:?}"
        ))),
        Ok(Err(error @ FulfillmentError::Unreachable(_))) => Attempt::Retry(error),
        Ok(Err(error)) => Attempt::Done(Err(error)),
        Ok(Ok((status, _)))
            if status.is_server_error() || status == hyper::StatusCode::TOO_MANY_REQUESTS =>
        {
            Attempt::Retry(FulfillmentError::Status(status.as_u16()))
        }
        Ok(Ok((status, _))) if !status.is_success() => {
            Attempt::Done(Err(FulfillmentError::Status(status.as_u16())))
        }
        Ok(Ok((_, body))) => Attempt::Done(
            serde_json::from_slice(&body)
                .map_err(|_| FulfillmentError::InvalidResponse("the body is not JSON".to_owned())),
        ),
    }
}

/// POSTs `body` as JSON with a Bearer token; retries transient failures.
pub async fn post_json(url: &str, bearer: &str, body: &Value) -> Result<Value, FulfillmentError> {
    send_json(Method::POST, url, bearer, Some(body)).await
}

/// Sends a request with a Bearer token and an optional JSON body, and reads a JSON answer;
/// retries transient failures.
pub async fn send_json(
    method: Method,
    url: &str,
    bearer: &str,
    body: Option<&Value>,
) -> Result<Value, FulfillmentError> {
    let uri = check_url(url).map_err(FulfillmentError::Internal)?;
    let body = body.map(|body| Bytes::from(serde_json::to_vec(body).unwrap_or_default()));
    let mut backoff = FIRST_BACKOFF;
    let mut last = FulfillmentError::Unreachable("no attempt made".to_owned());
    for attempt_number in 1..=ATTEMPTS {
        match attempt(&method, &uri, bearer, body.as_ref()).await {
            Attempt::Done(outcome) => return outcome,
            Attempt::Retry(error) => {
                tracing::warn!(%error, attempt = attempt_number, "outbound call failed");
                last = error;
            }
        }
        if attempt_number < ATTEMPTS {
            tokio::time::sleep(backoff).await;
            backoff *= 2;
        }
    }
    Err(last)
}

/// Reads a SYNC response: the agent user id and the validated devices.
pub fn parse_sync_response(
    request_id: &str,
    response: &Value,
) -> Result<(String, Vec<Value>), FulfillmentError> {
    let invalid = |message: &str| FulfillmentError::InvalidResponse(message.to_owned());
    if response.get("requestId").and_then(Value::as_str) != Some(request_id) {
        return Err(invalid("requestId: must echo the request's requestId"));
    }
    let payload = response
        .get("payload")
        .filter(|payload| payload.is_object())
        .ok_or_else(|| invalid("payload: an object is required"))?;
    if let Some(code) = payload.get("errorCode") {
        return Err(FulfillmentError::InvalidResponse(format!(
            "payload.errorCode: the fulfilment reported {code}"
        )));
    }
    let agent_user_id = match payload.get("agentUserId") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => {
            return Err(invalid(
                "payload.agentUserId: a non-empty string is required",
            ));
        }
    };
    let devices = devices::devices_from(payload)
        .map_err(|message| FulfillmentError::InvalidResponse(format!("payload.{message}")))?;
    Ok((agent_user_id, devices))
}

/// What a SYNC call needs, detached from a request so that it can run in the background.
#[derive(Clone)]
pub struct SyncCaller {
    store: SharedStore,
    keyring: Arc<KeyringHandle>,
    clock: SharedClock,
    issuer: String,
    access_token_ttl_secs: i64,
}

impl std::fmt::Debug for SyncCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncCaller")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl SyncCaller {
    /// The caller for `app`'s store, keys and issuer.
    pub fn new(app: &App) -> Self {
        Self {
            store: Arc::clone(&app.store),
            keyring: Arc::clone(&app.keyring),
            clock: Arc::clone(&app.clock),
            issuer: app.issuer.clone(),
            access_token_ttl_secs: app.oauth.access_token_ttl_secs,
        }
    }

    fn access_token(&self, link: &LinkRecord) -> Result<String, FulfillmentError> {
        let claims = AccessClaims::issue(
            &self.issuer,
            &link.client_id,
            &link.user_id,
            &link.scope,
            &link.grant_id,
            self.clock.now(),
            self.access_token_ttl_secs,
        );
        self.keyring
            .load()
            .sign(TokenKind::AccessToken, &claims)
            .map_err(|error| FulfillmentError::Internal(error.to_string()))
    }

    /// Sends SYNC for the user of `link` to the client's fulfilment and stores the devices
    /// under the project and the agent user id the fulfilment answered. Returns that id and
    /// the number of devices.
    pub async fn sync(
        &self,
        client: &ClientRecord,
        link: &LinkRecord,
    ) -> Result<(String, usize), FulfillmentError> {
        let url = client
            .settings
            .fulfillment_url
            .as_deref()
            .ok_or(FulfillmentError::NotConfigured)?;
        let token = self.access_token(link)?;
        let request_id = grants::new_id();
        let request = serde_json::json!({
            "requestId": request_id,
            "inputs": [{ "intent": SYNC_INTENT }],
        });
        let response = post_json(url, &token, &request).await?;
        let (agent_user_id, devices) = parse_sync_response(&request_id, &response)?;
        self.store
            .put_devices(&client.project_id, &agent_user_id, &devices)
            .await
            .map_err(|error| FulfillmentError::Internal(error.to_string()))?;
        tracing::info!(
            client_id = %client.id,
            devices = devices.len(),
            "devices synced from the fulfilment"
        );
        Ok((agent_user_id, devices.len()))
    }

    /// [`SyncCaller::sync`] in the background, logging the outcome; for the SYNC the
    /// platform sends after a link, which must not delay the token response.
    pub fn sync_in_background(&self, client: ClientRecord, link: LinkRecord) {
        if client.settings.fulfillment_url.is_none() {
            return;
        }
        let caller = self.clone();
        tokio::spawn(async move {
            if let Err(error) = caller.sync(&client, &link).await {
                tracing::warn!(client_id = %client.id, %error, "SYNC after linking failed");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
    fn sync_responses_are_checked_field_by_field() {
        let device = json!({"id": "d1", "type": "t", "traits": [], "name": {"name": "n"}});
        let good =
            json!({"requestId": "r1", "payload": {"agentUserId": "u1", "devices": [device]}});
        let (user, devices) = parse_sync_response("r1", &good).unwrap();
        assert_eq!((user.as_str(), devices.len()), ("u1", 1));
        for (response, field) in [
            (json!({"requestId": "other", "payload": {}}), "requestId"),
            (json!({"requestId": "r1"}), "payload"),
            (
                json!({"requestId": "r1", "payload": {"devices": []}}),
                "payload.agentUserId",
            ),
            (
                json!({"requestId": "r1", "payload": {"agentUserId": "u", "devices": [{"id": "x"}]}}),
                "payload.devices[0].type",
            ),
            (
                json!({"requestId": "r1", "payload": {"errorCode": "authFailure"}}),
                "payload.errorCode",
            ),
        ] {
            match parse_sync_response("r1", &response) {
                Err(FulfillmentError::InvalidResponse(message)) => {
                    assert!(message.starts_with(field), "{message}");
                }
                other => panic!("{response}: {other:?}"),
            }
        }
    }
}
