//! `POST /v1/devices:sync`: the devices of one agent user of the caller's project.

use bytes::Bytes;
use hyper::{Request, StatusCode};
use serde_json::Value;

use super::{ApiError, auth, devices};
use crate::app::App;
use crate::http::{HttpResponse, RequestContext, response};

/// Path of this method.
pub const PATH: &str = "/v1/devices:sync";

/// Parses the request body: `{requestId?: string, agentUserId: string}`.
fn parse(body: &[u8]) -> Result<(Option<String>, String), ApiError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|_| ApiError::invalid_argument("Invalid JSON payload received."))?;
    let Some(object) = value.as_object() else {
        return Err(ApiError::invalid_argument(
            "The request body must be a JSON object.",
        ));
    };
    let request_id = match object.get("requestId") {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(_) => return Err(ApiError::invalid_argument("requestId must be a string.")),
    };
    let agent_user_id = match object.get("agentUserId") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        Some(Value::String(_)) | None | Some(Value::Null) => {
            return Err(ApiError::invalid_argument("agentUserId is required."));
        }
        Some(_) => return Err(ApiError::invalid_argument("agentUserId must be a string.")),
    };
    Ok((request_id, agent_user_id))
}

/// `POST /v1/devices:sync`.
pub async fn sync(app: &App, request: &Request<Bytes>, _context: &RequestContext) -> HttpResponse {
    match answer(app, request).await {
        Ok(body) => response::json(StatusCode::OK, &body),
        Err(error) => error.response(),
    }
}

async fn answer(app: &App, request: &Request<Bytes>) -> Result<Value, ApiError> {
    let account = auth::authenticate(app, request).await?;
    let (request_id, agent_user_id) = parse(request.body())?;
    let stored = app
        .store
        .get_devices(&account.project_id, &agent_user_id)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Requested entity was not found: agentUserId {agent_user_id:?}."
            ))
        })?;
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
