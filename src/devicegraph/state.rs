//! Device states: `POST /v1/devices:reportStateAndNotification` stores what the fulfilment
//! reports, `POST /v1/devices:query` answers it, both for devices the agent user has.

use serde_json::{Map, Value, json};

use super::{ApiError, optional_string, parse_object, required_string};
use crate::app::App;
use crate::store::ServiceAccountRecord;

/// Path of `devices.reportStateAndNotification`.
pub const REPORT_STATE_PATH: &str = "/v1/devices:reportStateAndNotification";
/// Path of `devices.query`.
pub const QUERY_PATH: &str = "/v1/devices:query";

fn unknown_device(device_id: &str, agent_user_id: &str) -> ApiError {
    ApiError::not_found(format!(
        "Requested entity was not found: device {device_id:?} of agentUserId {agent_user_id:?}."
    ))
}

/// The ids of the agent user's devices; NOT_FOUND when the user is unknown to the project.
async fn known_device_ids(
    app: &App,
    account: &ServiceAccountRecord,
    agent_user_id: &str,
) -> Result<std::collections::BTreeSet<String>, ApiError> {
    let devices = app
        .store
        .get_devices(&account.project_id, agent_user_id)
        .await?
        .ok_or_else(|| ApiError::unknown_agent_user(agent_user_id))?;
    Ok(devices
        .iter()
        .filter_map(|device| device.get("id").and_then(Value::as_str))
        .map(str::to_owned)
        .collect())
}

/// A map of device id → JSON object, as `payload.devices.states` and `.notifications` are.
fn object_map<'a>(
    value: Option<&'a Value>,
    field: &str,
) -> Result<Option<&'a Map<String, Value>>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) if map.values().all(Value::is_object) => Ok(Some(map)),
        Some(_) => Err(ApiError::invalid_argument(format!(
            "{field} must be an object mapping device ids to objects."
        ))),
    }
}

/// `POST /v1/devices:reportStateAndNotification` by `account` with `body`.
pub async fn report_state(
    app: &App,
    account: &ServiceAccountRecord,
    body: &[u8],
) -> Result<Value, ApiError> {
    let body = parse_object(body)?;
    let request_id = optional_string(&body, "requestId")?;
    optional_string(&body, "eventId")?;
    optional_string(&body, "followUpToken")?;
    let agent_user_id = required_string(&body, "agentUserId")?;
    let devices = body
        .get("payload")
        .and_then(|payload| payload.get("devices"))
        .filter(|devices| devices.is_object())
        .ok_or_else(|| ApiError::invalid_argument("payload.devices is required."))?;
    let states = object_map(devices.get("states"), "payload.devices.states")?;
    let notifications = object_map(
        devices.get("notifications"),
        "payload.devices.notifications",
    )?;
    if states.is_none() && notifications.is_none() {
        return Err(ApiError::invalid_argument(
            "payload.devices must carry states or notifications.",
        ));
    }
    let reported: std::collections::BTreeSet<&String> = states
        .into_iter()
        .chain(notifications)
        .flat_map(|map| map.keys())
        .collect();
    let known = known_device_ids(app, account, &agent_user_id).await?;
    if let Some(unknown) = reported
        .iter()
        .find(|device_id| !known.contains(**device_id))
    {
        return Err(unknown_device(unknown, &agent_user_id));
    }
    let mut stored = app
        .store
        .get_device_states(&account.project_id, &agent_user_id)
        .await?;
    let mut updates = Vec::new();
    for device_id in reported {
        let mut record = stored
            .remove(device_id)
            .and_then(|record| record.as_object().cloned())
            .unwrap_or_default();
        // A report carries changed attributes only; the state is their union over time.
        if let Some(state) = states.and_then(|map| map.get(device_id)) {
            let merged = record
                .entry("state")
                .or_insert_with(|| Value::Object(Map::new()));
            if let (Some(merged), Some(state)) = (merged.as_object_mut(), state.as_object()) {
                for (attribute, value) in state {
                    merged.insert(attribute.clone(), value.clone());
                }
            }
        }
        if let Some(notification) = notifications.and_then(|map| map.get(device_id)) {
            record.insert("notification".to_owned(), notification.clone());
        }
        updates.push((device_id.clone(), Value::Object(record)));
    }
    app.store
        .put_device_states(&account.project_id, &agent_user_id, &updates)
        .await?;
    Ok(json!({ "requestId": request_id.unwrap_or_default() }))
}

/// `POST /v1/devices:query` by `account` with `body`.
pub async fn query(
    app: &App,
    account: &ServiceAccountRecord,
    body: &[u8],
) -> Result<Value, ApiError> {
    let body = parse_object(body)?;
    let request_id = optional_string(&body, "requestId")?;
    let agent_user_id = required_string(&body, "agentUserId")?;
    let invalid = || ApiError::invalid_argument("inputs[].payload.devices[].id is required.");
    let inputs = body
        .get("inputs")
        .and_then(Value::as_array)
        .ok_or_else(|| ApiError::invalid_argument("inputs is required."))?;
    let mut requested = Vec::new();
    for input in inputs {
        let devices = input
            .pointer("/payload/devices")
            .and_then(Value::as_array)
            .ok_or_else(invalid)?;
        for device in devices {
            let id = device
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(invalid)?;
            requested.push(id.to_owned());
        }
    }
    let known = known_device_ids(app, account, &agent_user_id).await?;
    let states = app
        .store
        .get_device_states(&account.project_id, &agent_user_id)
        .await?;
    let mut answer = Map::new();
    for id in requested {
        if !known.contains(&id) {
            return Err(unknown_device(&id, &agent_user_id));
        }
        let state = states
            .get(&id)
            .and_then(|record| record.get("state"))
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()));
        answer.insert(id, state);
    }
    Ok(json!({
        "requestId": request_id.unwrap_or_default(),
        "payload": { "devices": answer },
    }))
}
