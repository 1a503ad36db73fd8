//! `POST /v1/devices:requestSync`: the fulfilment asks linkd to send the platform's SYNC
//! for one of its agent users, now or in the background.

use serde_json::{Value, json};

use super::fulfillment::{FulfillmentError, SyncCaller};
use super::{ApiError, parse_object, required_string};
use crate::app::App;
use crate::store::ServiceAccountRecord;

/// Path of `devices.requestSync`.
pub const PATH: &str = "/v1/devices:requestSync";

/// `POST /v1/devices:requestSync` by `account` with `body`.
pub async fn request_sync(
    app: &App,
    account: &ServiceAccountRecord,
    body: &[u8],
) -> Result<Value, ApiError> {
    let body = parse_object(body)?;
    let agent_user_id = required_string(&body, "agentUserId")?;
    let run_async = match body.get("async") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(flag)) => *flag,
        Some(_) => return Err(ApiError::invalid_argument("async must be a boolean.")),
    };
    let client = app
        .store
        .get_client(&account.client_id)
        .await?
        .ok_or_else(|| ApiError::permission_denied("The caller's integration no longer exists."))?;
    if client.settings.fulfillment_url.is_none() {
        return Err(ApiError::failed_precondition(
            FulfillmentError::NotConfigured.to_string(),
        ));
    }
    // linkd issues the token for the user the fulfilment answered this agent user id for,
    // or, for an id no fulfilment answered yet (devices imported, or none synced), the user
    // whose linkd id it is; over that user's newest live link to this integration. A link
    // whose grant is revoked (an unlink or `/revoke` left half-done) is no link: without a
    // live one the user is not linked, and the answer is the same 404 as for an unknown id.
    let user_id = app
        .store
        .user_of_agent_user(&client.project_id, &agent_user_id)
        .await?
        .unwrap_or_else(|| agent_user_id.clone());
    let mut live = None;
    for link in app.store.list_links(&user_id).await?.into_iter().rev() {
        if link.client_id == client.id && !app.store.is_grant_revoked(&link.grant_id).await? {
            live = Some(link);
            break;
        }
    }
    let link = live.ok_or_else(|| ApiError::unknown_agent_user(&agent_user_id))?;
    let caller = SyncCaller::new(app);
    if run_async {
        caller.sync_in_background(client, link);
        return Ok(json!({}));
    }
    match caller.sync(&client, &link).await {
        Ok(_) => Ok(json!({})),
        // Revoked between the choice above and the call.
        Err(FulfillmentError::GrantRevoked) => Err(ApiError::unknown_agent_user(&agent_user_id)),
        Err(error @ (FulfillmentError::Unreachable(_) | FulfillmentError::Status(_))) => {
            Err(ApiError::unavailable_because(error.to_string()))
        }
        Err(FulfillmentError::Internal(message)) => {
            tracing::warn!(%message, "requestSync failed inside linkd");
            Err(ApiError::unavailable())
        }
        Err(error) => Err(ApiError::failed_precondition(error.to_string())),
    }
}
