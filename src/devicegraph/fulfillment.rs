//! linkd in the platform's seat towards an integration's fulfilment URL: after a user links,
//! and on `devices:requestSync`, it sends the smart-home `action.devices.SYNC` intent with an
//! access token it issued for that user, validates the answer and replaces the user's devices
//! in the graph.
//!
//! The call itself goes through [`OutboundClient`]: HTTPS, bounded, retried.

use std::sync::Arc;

use serde_json::Value;

use super::devices;
use crate::app::App;
use crate::clock::SharedClock;
use crate::grants::{self, AccessClaims};
use crate::outbound::{OutboundClient, OutboundError};
use crate::store::{ClientRecord, LinkRecord, SharedStore};
use crate::tokens::TokenKind;
use crate::tokens::keyring::KeyringHandle;

/// The intent linkd sends.
pub const SYNC_INTENT: &str = "action.devices.SYNC";

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
    /// The link's grant is revoked: linkd mints no token for it, so there is no call.
    #[error("the user's link to the integration was revoked")]
    GrantRevoked,
}

impl From<OutboundError> for FulfillmentError {
    fn from(error: OutboundError) -> Self {
        match error {
            OutboundError::Unreachable(reason) => Self::Unreachable(reason),
            OutboundError::Status(status) => Self::Status(status),
            OutboundError::InvalidResponse(reason) => Self::InvalidResponse(reason),
            OutboundError::Internal(reason) => Self::Internal(reason),
        }
    }
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
    /// Where request ids and token ids come from.
    random: crate::secrets::SharedRandomness,
    issuer: String,
    access_token_ttl_secs: i64,
    outbound: OutboundClient,
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
            random: Arc::clone(&app.random),
            issuer: app.issuer.clone(),
            access_token_ttl_secs: app.oauth.access_token_ttl_secs,
            outbound: app.outbound.clone(),
        }
    }

    fn access_token(&self, link: &LinkRecord) -> Result<String, FulfillmentError> {
        let jti = grants::new_id(&*self.random)
            .map_err(|error| FulfillmentError::Internal(error.to_string()))?;
        let claims = AccessClaims::issue(
            jti,
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
        let outcome = self.sync_unrecorded(client, link).await;
        let label = match &outcome {
            Ok(_) => "ok",
            Err(FulfillmentError::NotConfigured) => "not_configured",
            Err(FulfillmentError::Unreachable(_)) => "unreachable",
            Err(FulfillmentError::Status(status)) if *status < 500 => "status_4xx",
            Err(FulfillmentError::Status(_)) => "status_5xx",
            Err(FulfillmentError::InvalidResponse(_)) => "invalid_response",
            Err(FulfillmentError::Internal(_)) => "internal",
            Err(FulfillmentError::GrantRevoked) => "grant_revoked",
        };
        crate::metrics::record_fulfillment_call("sync", label);
        outcome
    }

    async fn sync_unrecorded(
        &self,
        client: &ClientRecord,
        link: &LinkRecord,
    ) -> Result<(String, usize), FulfillmentError> {
        let url = client
            .settings
            .fulfillment_url
            .as_deref()
            .ok_or(FulfillmentError::NotConfigured)?;
        // Never a token for a dead grant: the link may have been revoked since it was read
        // (this also runs in the background after linking).
        let store_failed =
            |error: crate::store::StoreError| FulfillmentError::Internal(error.to_string());
        if self
            .store
            .is_grant_revoked(&link.grant_id)
            .await
            .map_err(store_failed)?
        {
            return Err(FulfillmentError::GrantRevoked);
        }
        let token = self.access_token(link)?;
        let request_id = grants::new_id(&*self.random)
            .map_err(|error| FulfillmentError::Internal(error.to_string()))?;
        let request = serde_json::json!({
            "requestId": request_id,
            "inputs": [{ "intent": SYNC_INTENT }],
        });
        let response = self.outbound.post_json(url, &token, &request).await?;
        let (agent_user_id, devices) = parse_sync_response(&request_id, &response)?;
        // Remembered first, so that stored devices always have a user to requestSync for.
        self.store
            .put_agent_user(&client.project_id, &agent_user_id, &link.user_id)
            .await
            .map_err(store_failed)?;
        self.store
            .put_devices(&client.project_id, &agent_user_id, &devices)
            .await
            .map_err(store_failed)?;
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
