//! Token introspection (RFC 7662), client-authenticated. A client learns about its own
//! tokens only: another client's token, like any invalid one, is `{"active": false}`.

use crate::app::App;
use crate::grants;
use crate::oauth::error::TokenError;
use crate::store::ClientRecord;
use crate::tokens::bearer::BearerFailure;

/// Path of this endpoint.
pub const PATH: &str = "/introspect";

/// The RFC 7662 §2.2 answer about `presented` for `client`; fails only when the store cannot
/// answer.
pub async fn introspect(
    app: &App,
    client: &ClientRecord,
    presented: &str,
) -> Result<serde_json::Value, TokenError> {
    let inactive = serde_json::json!({ "active": false });
    if let Some(refresh) = grants::parse_refresh_token(presented) {
        let found = app
            .store
            .get_refresh_token(&refresh.grant_id, &refresh.digest)
            .await?;
        return Ok(match found {
            Some(found) if !found.grant_revoked && found.record.client_id == client.id => {
                serde_json::json!({
                    "active": true,
                    "token_type": "refresh_token",
                    "scope": found.record.scope,
                    "client_id": found.record.client_id,
                    "sub": found.record.user_id,
                    "iat": found.record.created_at,
                    "iss": app.issuer,
                })
            }
            _ => inactive,
        });
    }
    match app.check_access_token(presented, None).await {
        Ok(claims) if claims.client_id == client.id => Ok(serde_json::json!({
            "active": true,
            "token_type": "Bearer",
            "scope": claims.scope,
            "client_id": claims.client_id,
            "sub": claims.sub,
            "exp": claims.exp,
            "iat": claims.iat,
            "iss": claims.iss,
            "aud": claims.aud,
            "jti": claims.jti,
        })),
        Ok(_)
        | Err(
            BearerFailure::Invalid(_) | BearerFailure::Missing | BearerFailure::InvalidRequest(_),
        ) => Ok(inactive),
        Err(BearerFailure::Unavailable) => Err(TokenError::Unavailable),
    }
}
