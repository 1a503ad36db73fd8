//! The device graph (the interface's `devices.sync`; DESIGN.md "The device graph"): the
//! devices of every agent user per integration project, answered to the project's service
//! accounts in the platform API's conventions (camelCase JSON, errors as
//! `{"error":{"code","message","status"}}`).

pub mod agent_users;
pub mod auth;
pub mod devices;
pub mod fulfillment;
pub mod graph_client;
pub mod request_sync;
pub mod state;
pub mod sync;
pub mod unlink;

use serde_json::{Map, Value};

/// Paths of the API start with this; the router answers their errors in the API's format.
pub const API_PREFIX: &str = "/v1/";

/// Refuses a request body that is not declared JSON: `application/json`, with at most a
/// `charset` parameter of UTF-8, the only encoding JSON has (RFC 8259 §8.1).
pub fn require_json(content_type: Option<&str>) -> Result<(), ApiError> {
    let declared = content_type.unwrap_or_default();
    let mut parts = declared.split(';');
    let media_type = parts.next().unwrap_or_default().trim();
    let charset_ok = parts.all(|parameter| match parameter.split_once('=') {
        Some((name, value)) if name.trim().eq_ignore_ascii_case("charset") => {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            value.eq_ignore_ascii_case("utf-8")
        }
        _ => false,
    });
    if media_type.eq_ignore_ascii_case("application/json") && charset_ok {
        Ok(())
    } else {
        Err(ApiError::unsupported_media_type())
    }
}

/// A request body that must be a JSON object.
pub fn parse_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice(body) {
        Ok(Value::Object(object)) => Ok(object),
        Ok(_) => Err(ApiError::invalid_argument(
            "The request body must be a JSON object.",
        )),
        Err(_) => Err(ApiError::invalid_argument("Invalid JSON payload received.")),
    }
}

/// An optional string field (absent or `null` is `None`).
pub fn optional_string(
    object: &Map<String, Value>,
    field: &str,
) -> Result<Option<String>, ApiError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(ApiError::invalid_argument(format!(
            "{field} must be a string."
        ))),
    }
}

/// A required non-empty string field.
pub fn required_string(object: &Map<String, Value>, field: &str) -> Result<String, ApiError> {
    match optional_string(object, field)? {
        Some(text) if !text.is_empty() => Ok(text),
        _ => Err(ApiError::invalid_argument(format!("{field} is required."))),
    }
}

/// An API error in the platform's format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status code.
    pub status: u16,
    /// Canonical status name (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, …).
    pub canonical: &'static str,
    /// What went wrong, for the integrator.
    pub message: String,
}

impl ApiError {
    /// 400 `INVALID_ARGUMENT`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self {
            status: 400,
            canonical: "INVALID_ARGUMENT",
            message: message.into(),
        }
    }

    /// 401 `UNAUTHENTICATED`.
    pub fn unauthenticated(message: impl Into<String>) -> Self {
        Self {
            status: 401,
            canonical: "UNAUTHENTICATED",
            message: message.into(),
        }
    }

    /// 403 `PERMISSION_DENIED`.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        Self {
            status: 403,
            canonical: "PERMISSION_DENIED",
            message: message.into(),
        }
    }

    /// 415 `INVALID_ARGUMENT`: a body that is not declared `application/json`.
    pub fn unsupported_media_type() -> Self {
        Self {
            status: 415,
            canonical: "INVALID_ARGUMENT",
            message: "The request body must be application/json.".to_owned(),
        }
    }

    /// 404 `NOT_FOUND`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: 404,
            canonical: "NOT_FOUND",
            message: message.into(),
        }
    }

    /// 400 `FAILED_PRECONDITION`: the request is valid but the system is not in a state to
    /// run it (no fulfilment URL, a fulfilment answer that is not a valid SYNC response).
    pub fn failed_precondition(message: impl Into<String>) -> Self {
        Self {
            status: 400,
            canonical: "FAILED_PRECONDITION",
            message: message.into(),
        }
    }

    /// 404 `NOT_FOUND` for an agent user the project does not have.
    pub fn unknown_agent_user(agent_user_id: &str) -> Self {
        Self::not_found(format!(
            "Requested entity was not found: agentUserId {agent_user_id:?}."
        ))
    }

    /// 503 `UNAVAILABLE`.
    pub fn unavailable() -> Self {
        Self::unavailable_because("The service is currently unavailable.")
    }

    /// 503 `UNAVAILABLE` with a reason (a fulfilment that cannot be reached).
    pub fn unavailable_because(message: impl Into<String>) -> Self {
        Self {
            status: 503,
            canonical: "UNAVAILABLE",
            message: message.into(),
        }
    }
}

impl From<crate::store::StoreError> for ApiError {
    fn from(error: crate::store::StoreError) -> Self {
        tracing::warn!(%error, "store failed in the device-graph API");
        crate::metrics::record_store_error("devicegraph");
        Self::unavailable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_bodies_are_accepted() {
        for accepted in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            "application/json;charset=\"UTF-8\"",
        ] {
            assert!(require_json(Some(accepted)).is_ok(), "{accepted}");
        }
        for refused in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "application/jsonx",
            "application/json; charset=latin1",
            "application/json; boundary=x",
            "",
        ] {
            let error = require_json(Some(refused)).err();
            assert_eq!(error.map(|e| e.status), Some(415), "{refused}");
        }
        assert!(require_json(None).is_err());
    }
}
