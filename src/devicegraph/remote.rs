//! An external device graph, for deployments where the platform's graph (or another linkd)
//! holds the devices: linkd calls its `agentUsers.delete` when a user unlinks, authenticated
//! as a service account by a key file in the common service-account JSON format, with a JWT
//! the account signs itself for the API (`aud` = the API's base URL), as client libraries do.

use std::path::Path;

use hyper::Method;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;

use super::fulfillment::{self, FulfillmentError};

/// Lifetime of the self-signed JWTs, the longest the API accepts.
const JWT_LIFETIME_SECS: i64 = 3600;

/// The fields of a key file linkd needs.
#[derive(Deserialize)]
struct KeyFile {
    #[serde(rename = "type")]
    kind: String,
    private_key_id: String,
    private_key: String,
    client_email: String,
}

/// An external device graph and the service account linkd calls it as.
pub struct RemoteGraph {
    base_url: String,
    email: String,
    key_id: String,
    key: jsonwebtoken::EncodingKey,
}

impl std::fmt::Debug for RemoteGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteGraph")
            .field("base_url", &self.base_url)
            .field("email", &self.email)
            .finish_non_exhaustive()
    }
}

impl RemoteGraph {
    /// The graph at `base_url`, called with the service account of `key_file`.
    pub fn load(base_url: &str, key_file: &Path) -> Result<Self, String> {
        fulfillment::check_url(base_url)?;
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
            base_url: base_url.trim_end_matches('/').to_owned(),
            email: key.client_email,
            key_id: key.private_key_id,
            key: signing,
        })
    }

    fn token(&self, now: i64) -> Result<String, FulfillmentError> {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(self.key_id.clone());
        let claims = serde_json::json!({
            "iss": self.email,
            "sub": self.email,
            "aud": self.base_url,
            "iat": now,
            "exp": now + JWT_LIFETIME_SECS,
        });
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|error| FulfillmentError::Internal(error.to_string()))
    }

    /// `agentUsers.delete`; an agent user the graph does not know counts as deleted.
    pub async fn delete_agent_user(
        &self,
        agent_user_id: &str,
        now: i64,
    ) -> Result<(), FulfillmentError> {
        let url = format!(
            "{}/v1/agentUsers/{}",
            self.base_url,
            utf8_percent_encode(agent_user_id, NON_ALPHANUMERIC)
        );
        match fulfillment::send_json(Method::DELETE, &url, &self.token(now)?, None).await {
            Ok(_) | Err(FulfillmentError::Status(404)) => Ok(()),
            Err(error) => Err(error),
        }
    }
}
