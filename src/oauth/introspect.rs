//! Token introspection (RFC 7662), client-authenticated. A client learns about its own
//! tokens only: another client's token, like any invalid one, is `{"active": false}`.

use bytes::Bytes;
use hyper::{Request, StatusCode};

use crate::app::App;
use crate::grants;
use crate::http::{HttpResponse, RequestContext};
use crate::oauth::token::{self, TokenError};
use crate::tokens::bearer::BearerFailure;

/// Path of this endpoint.
pub const PATH: &str = "/introspect";

/// `POST /introspect`.
pub async fn introspect(
    app: &App,
    request: &Request<Bytes>,
    context: &RequestContext,
) -> HttpResponse {
    let (client, presented) = match token::client_token_request(app, request, context).await {
        Ok(checked) => checked,
        Err(answer) => return answer,
    };
    let presented = presented.as_str();
    let inactive = serde_json::json!({ "active": false });
    if let Some(refresh) = grants::parse_refresh_token(presented) {
        let found = match app
            .store
            .get_refresh_token(&refresh.grant_id, &refresh.digest)
            .await
        {
            Ok(found) => found,
            Err(error) => return TokenError::from(error).response(true),
        };
        let body = match found {
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
        };
        return token::token_json(StatusCode::OK, &body);
    }
    let body = match app.check_access_token(presented, None).await {
        Ok(claims) if claims.client_id == client.id => serde_json::json!({
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
        }),
        Ok(_)
        | Err(
            BearerFailure::Invalid(_) | BearerFailure::Missing | BearerFailure::InvalidRequest(_),
        ) => inactive,
        Err(BearerFailure::Unavailable) => return TokenError::Unavailable.response(true),
    };
    token::token_json(StatusCode::OK, &body)
}
