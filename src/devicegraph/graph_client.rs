//! linkd as a client of a device graph: when a user unlinks, it calls the graph's
//! `agentUsers.delete` for that user. The graph is linkd's own by default, or an external one
//! (the platform's, or another linkd) given by `--device-graph-url` and a service-account key
//! file in the common JSON format.
//!
//! One client serves both: it builds the same request, authenticates with a Bearer token the
//! API checks as it checks any caller's, and reads the answer the same way. Only the last hop
//! differs: HTTPS to an external graph; to its own graph, this instance's router, in-process,
//! since an instance cannot count on reaching its own public URL (a load balancer that does
//! not hairpin, a certificate it does not trust). The router sits above this client, so
//! assembly hands it in as an [`InProcessGraph`].

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::{AUTHORIZATION, HeaderValue};
use hyper::{Method, Request};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use crate::app::App;
use crate::grants::AccessClaims;
use crate::http::{BoxFuture, HttpResponse};
use crate::outbound::{self, OutboundError};
use crate::tokens::TokenKind;

/// Lifetime of the self-signed JWTs for an external graph, the longest the API accepts.
const JWT_LIFETIME_SECS: i64 = 3600;
/// Lifetime of the tokens linkd signs for calls to its own graph, which are used at once.
const OWN_GRAPH_TOKEN_SECS: i64 = 60;

/// Grant id of the access tokens linkd signs for itself to call its own device graph for an
/// integration's project. No other grant can have it: user grants have random ids, service
/// accounts' are `sa-…`, and neither contains a colon.
pub const OWN_GRAPH_GRANT: &str = "linkd:device-graph";
/// Subject of those tokens, the name linkd appears under as its own graph's caller.
pub const OWN_GRAPH_CALLER: &str = "linkd";

/// The fields of a key file linkd needs.
#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    private_key_id: String,
    private_key: String,
    client_email: String,
}

/// This instance's router as the last hop to its own graph.
pub trait InProcessGraph: Send + Sync {
    /// Answers `request`, made inside this process, as one from the network is answered.
    fn call(&self, request: Request<Bytes>) -> BoxFuture<'_, HttpResponse>;
}

/// Where a [`DeviceGraphClient`] sends its calls.
enum Graph {
    /// This instance's own graph, through its router.
    Own(Arc<dyn InProcessGraph>),
    /// A graph at `base_url`, called over HTTPS as the key file's service account.
    External {
        base_url: String,
        email: String,
        key_id: String,
        key: jsonwebtoken::EncodingKey,
    },
}

/// A client of `agentUsers.delete` on linkd's own device graph or an external one.
pub struct DeviceGraphClient {
    graph: Graph,
}

impl std::fmt::Debug for DeviceGraphClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.graph {
            Graph::Own(_) => f.write_str("DeviceGraphClient(own)"),
            Graph::External {
                base_url, email, ..
            } => f
                .debug_struct("DeviceGraphClient")
                .field("base_url", base_url)
                .field("email", email)
                .finish_non_exhaustive(),
        }
    }
}

impl DeviceGraphClient {
    /// The client of linkd's own graph, reached through `router`.
    pub fn own(router: Arc<dyn InProcessGraph>) -> Self {
        Self {
            graph: Graph::Own(router),
        }
    }

    /// The client of the graph at `base_url`, called with the service account of `key_file`.
    pub fn external(base_url: &str, key_file: &Path) -> Result<Self, String> {
        outbound::check_url(base_url)?;
        let text = std::fs::read_to_string(key_file)
            .map_err(|error| format!("{}: {error}", key_file.display()))?;
        let key: KeyFile = serde_json::from_str(&text).map_err(|error| {
            format!(
                "{}: not a service-account key file: {error}",
                key_file.display()
            )
        })?;
        if key.kind != "service_account" {
            return Err(format!(
                "{}: type must be \"service_account\"",
                key_file.display()
            ));
        }
        let signing = jsonwebtoken::EncodingKey::from_rsa_pem(key.private_key.as_bytes())
            .map_err(|_| format!("{}: private_key is not an RSA key", key_file.display()))?;
        Ok(Self {
            graph: Graph::External {
                base_url: base_url.trim_end_matches('/').to_owned(),
                email: key.client_email,
                key_id: key.private_key_id,
                key: signing,
            },
        })
    }

    /// Whether calls go to an external graph.
    pub fn is_external(&self) -> bool {
        matches!(self.graph, Graph::External { .. })
    }

    /// `agentUsers.delete` of `agent_user_id` in the project of integration `client_id`; an
    /// agent user the graph does not know counts as deleted.
    pub async fn delete_agent_user(
        &self,
        app: &Arc<App>,
        client_id: &str,
        agent_user_id: &str,
    ) -> Result<(), OutboundError> {
        let path = format!(
            "/v1/agentUsers/{}",
            utf8_percent_encode(agent_user_id, NON_ALPHANUMERIC)
        );
        let Some(bearer) = self.bearer_token(app, client_id).await? else {
            // An integration removed since the unlink has no devices left to forget.
            return Ok(());
        };
        match self.send(app, Method::DELETE, &path, &bearer).await {
            Ok(_) | Err(OutboundError::Status(404)) => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// The credential for a call about `client_id`'s project: the key file's self-signed JWT
    /// for an external graph (whose project is the key's); for the own graph, an access token
    /// linkd signs for the integration, or `None` if the integration no longer exists.
    async fn bearer_token(
        &self,
        app: &App,
        client_id: &str,
    ) -> Result<Option<String>, OutboundError> {
        let now = app.clock.now();
        let internal = |error: String| OutboundError::Internal(error);
        match &self.graph {
            Graph::External {
                base_url,
                email,
                key_id,
                key,
            } => {
                let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
                header.kid = Some(key_id.clone());
                let claims = serde_json::json!({
                    "iss": email,
                    "sub": email,
                    "aud": base_url,
                    "iat": now,
                    "exp": now + JWT_LIFETIME_SECS,
                });
                jsonwebtoken::encode(&header, &claims, key)
                    .map(Some)
                    .map_err(|error| internal(error.to_string()))
            }
            Graph::Own(_) => {
                let client = app
                    .store
                    .get_client(client_id)
                    .await
                    .map_err(|error| internal(error.to_string()))?;
                if client.is_none() {
                    return Ok(None);
                }
                let jti = crate::grants::new_id(&*app.random)
                    .map_err(|error| internal(error.to_string()))?;
                let claims = AccessClaims::issue(
                    jti,
                    &app.issuer,
                    client_id,
                    OWN_GRAPH_CALLER,
                    &app.devicegraph_scope(),
                    OWN_GRAPH_GRANT,
                    now,
                    OWN_GRAPH_TOKEN_SECS,
                )
                .with_audience(&app.devicegraph_audience());
                app.keyring
                    .load()
                    .sign(TokenKind::AccessToken, &claims)
                    .map(Some)
                    .map_err(|error| internal(error.to_string()))
            }
        }
    }

    async fn send(
        &self,
        app: &Arc<App>,
        method: Method,
        path: &str,
        bearer: &str,
    ) -> Result<serde_json::Value, OutboundError> {
        match &self.graph {
            Graph::External { base_url, .. } => {
                app.outbound
                    .send_json(method, &format!("{base_url}{path}"), bearer, None)
                    .await
            }
            Graph::Own(router) => {
                let authorization = HeaderValue::from_str(&format!("Bearer {bearer}"))
                    .map_err(|_| OutboundError::Internal("unusable token".to_owned()))?;
                let request = Request::builder()
                    .method(method)
                    .uri(path)
                    .header(AUTHORIZATION, authorization)
                    .body(Bytes::new())
                    .map_err(|error| OutboundError::Internal(error.to_string()))?;
                let response = router.call(request).await;
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map_err(|error| OutboundError::Internal(error.to_string()))?
                    .to_bytes();
                outbound::read_answer(status, &body)
            }
        }
    }
}
