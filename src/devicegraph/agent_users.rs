//! `DELETE /v1/agentUsers/{agentUserId}` (`agentUsers.delete`): the project forgets one of
//! its agent users and their devices.

use serde_json::{Value, json};

use super::ApiError;
use crate::app::App;
use crate::store::ServiceAccountRecord;

/// Prefix of `agentUsers.delete`: `DELETE /v1/agentUsers/{agentUserId}`.
pub const PREFIX: &str = "/v1/agentUsers/";

/// The agent user id of an `agentUsers.delete` path, percent-decoded.
pub fn agent_user_from_path(path: &str) -> Option<String> {
    let encoded = path.strip_prefix(PREFIX)?;
    let decoded = percent_encoding::percent_decode_str(encoded)
        .decode_utf8()
        .ok()?;
    (!decoded.is_empty()).then(|| decoded.into_owned())
}

/// `DELETE /v1/agentUsers/{agentUserId}` by `account`, for the request's `path`.
pub async fn delete_agent_user(
    app: &App,
    account: &ServiceAccountRecord,
    path: &str,
) -> Result<Value, ApiError> {
    let agent_user_id = agent_user_from_path(path)
        .ok_or_else(|| ApiError::invalid_argument("agentUserId is required in the path."))?;
    if app
        .store
        .delete_agent_user(&account.project_id, &agent_user_id)
        .await?
    {
        tracing::info!(project_id = %account.project_id, "agent user deleted from the device graph");
        Ok(json!({}))
    } else {
        Err(ApiError::unknown_agent_user(&agent_user_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_user_ids_are_decoded_from_the_path() {
        assert_eq!(
            agent_user_from_path("/v1/agentUsers/user%2F1%20x").as_deref(),
            Some("user/1 x")
        );
        assert_eq!(
            agent_user_from_path("/v1/agentUsers/plain").as_deref(),
            Some("plain")
        );
        assert_eq!(agent_user_from_path("/v1/agentUsers/"), None);
        assert_eq!(agent_user_from_path("/v1/agentUsers/%FF"), None);
    }
}
