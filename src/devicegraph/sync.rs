//! `POST /v1/devices:sync`: the devices of one agent user of the caller's project.

use serde_json::Value;

use super::{ApiError, devices};
use crate::app::App;
use crate::store::ServiceAccountRecord;

/// Path of this method.
pub const PATH: &str = "/v1/devices:sync";

/// Parses the request body: `{requestId?: string, agentUserId: string}`.
fn parse(body: &[u8]) -> Result<(Option<String>, String), ApiError> {
    let object = super::parse_object(body)?;
    Ok((
        super::optional_string(&object, "requestId")?,
        super::required_string(&object, "agentUserId")?,
    ))
}

/// `POST /v1/devices:sync` by `account` with `body`.
pub async fn sync(
    app: &App,
    account: &ServiceAccountRecord,
    body: &[u8],
) -> Result<Value, ApiError> {
    let (request_id, agent_user_id) = parse(body)?;
    let stored = app
        .store
        .get_devices(&account.project_id, &agent_user_id)
        .await?
        .ok_or_else(|| ApiError::unknown_agent_user(&agent_user_id))?;
    let devices: Vec<Value> = stored
        .into_iter()
        .map(|mut device| {
            if let Some(Value::String(name)) = device.pointer_mut("/name/name") {
                *name = devices::truncate_name(name);
            }
            device
        })
        .collect();
    Ok(serde_json::json!({
        "requestId": request_id.unwrap_or_default(),
        "payload": { "agentUserId": agent_user_id, "devices": devices },
    }))
}
