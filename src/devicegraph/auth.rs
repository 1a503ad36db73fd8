//! Who may call the device-graph API: a service account of the integration's project, by
//! an access token linkd issued to it (the JWT-bearer grant) or by a JWT the account signed
//! itself, as client libraries do when told to skip the token call: bound to this API by
//! `aud` = the API's base URL, or (AIP-4111, "self-signed JWT with scopes") by a `scope`
//! claim naming the device-graph scope and no `aud`. A user's linking token, a token without
//! the device-graph scope, or another project's account is refused. linkd itself, calling its own graph when a user
//! unlinks, is the one other caller: by an access token it signed for the integration with
//! the grant id [`OWN_GRAPH_GRANT`], which no token endpoint grant can carry.
//!
//! The router authenticates every API request from its head alone, before it reads the
//! body, and hands the endpoint the caller's account: a stranger cannot make linkd hold a body.

use super::ApiError;
use super::graph_client::{OWN_GRAPH_CALLER, OWN_GRAPH_GRANT};
use crate::app::App;
use crate::grants::AccessClaims;
use crate::service_accounts::{self, AssertionError};
use crate::store::{ClientRecord, ServiceAccountRecord};
use crate::tokens::bearer::{self, BearerFailure};

/// The service account behind a request with this `Authorization` header value.
pub async fn authenticate(
    app: &App,
    authorization: Option<&str>,
) -> Result<ServiceAccountRecord, ApiError> {
    let Some(token) = bearer::bearer_token(authorization) else {
        return Err(ApiError::unauthenticated(
            "Request is missing a bearer token.",
        ));
    };
    let scope = app.devicegraph_scope();
    let header = jsonwebtoken::decode_header(token).map_err(|_| {
        ApiError::unauthenticated("Request had invalid authentication credentials.")
    })?;
    if header.typ.as_deref() == Some(crate::tokens::TokenKind::AccessToken.typ()) {
        let claims: AccessClaims =
            app.check_access_token(token, None)
                .await
                .map_err(|failure| match failure {
                    BearerFailure::Unavailable => ApiError::unavailable(),
                    BearerFailure::Missing
                    | BearerFailure::Invalid(_)
                    | BearerFailure::InvalidRequest(_) => {
                        ApiError::unauthenticated("Request had invalid authentication credentials.")
                    }
                })?;
        let not_a_service_account =
            || ApiError::permission_denied("The caller is not a service account.");
        // A valid token of linkd for another audience (a user's linking token) is a known
        // caller without the right to this API: 403, as the platform answers it.
        if claims.aud != app.devicegraph_audience() {
            return Err(not_a_service_account());
        }
        if !claims.scope.split(' ').any(|granted| granted == scope) {
            return Err(ApiError::permission_denied(
                "Request had insufficient authentication scopes.",
            ));
        }
        if claims.gid == OWN_GRAPH_GRANT {
            let client = app
                .store
                .get_client(&claims.client_id)
                .await?
                .ok_or_else(not_a_service_account)?;
            return Ok(own_graph_caller(&client, scope));
        }
        let account = app
            .store
            .get_service_account(&claims.sub)
            .await?
            .ok_or_else(not_a_service_account)?;
        return Ok(account);
    }
    self_signed(app, token, &scope).await
}

/// A JWT the service account signed itself for this API.
async fn self_signed(
    app: &App,
    token: &str,
    scope: &str,
) -> Result<ServiceAccountRecord, ApiError> {
    let refused = |reason: &dyn std::fmt::Display| {
        ApiError::unauthenticated(format!(
            "Request had invalid authentication credentials: {reason}."
        ))
    };
    let (account, claims) = service_accounts::verify_signed_jwt(
        &*app.store,
        token,
        app.clock.now(),
        app.oauth.leeway_secs,
    )
    .await
    .map_err(|error| match error {
        AssertionError::Unavailable => ApiError::unavailable(),
        other => refused(&other),
    })?;
    if claims["sub"].as_str() != Some(account.email.as_str()) {
        return Err(refused(&AssertionError::WrongSubject));
    }
    let granted: Option<Vec<&str>> = match &claims["scope"] {
        serde_json::Value::Null => None,
        serde_json::Value::String(granted) => Some(granted.split(' ').collect()),
        _ => return Err(refused(&"scope must be a space-separated string")),
    };
    let base_url = app.devicegraph_base_url();
    match (&claims["aud"], &granted) {
        // AIP-4111: without an audience the scope is what binds the JWT to an API; only
        // linkd knows the key, so no other API can be meant.
        (serde_json::Value::Null, Some(_)) => {}
        (serde_json::Value::Null, None) => {
            return Err(refused(&format_args!(
                "aud must be {base_url}, or scope must be given"
            )));
        }
        (aud, _) if service_accounts::audience_matches(aud, &[base_url]) => {}
        _ => {
            return Err(refused(&AssertionError::WrongAudience(base_url.to_owned())));
        }
    }
    let insufficient =
        || ApiError::permission_denied("Request had insufficient authentication scopes.");
    if granted.is_some_and(|granted| !granted.contains(&scope)) {
        return Err(insufficient());
    }
    if !account.scopes.iter().any(|allowed| allowed == scope) {
        return Err(insufficient());
    }
    Ok(account)
}

/// linkd as the caller of its own graph for `client`'s project.
fn own_graph_caller(client: &ClientRecord, scope: String) -> ServiceAccountRecord {
    ServiceAccountRecord {
        email: OWN_GRAPH_CALLER.to_owned(),
        unique_id: OWN_GRAPH_GRANT.to_owned(),
        client_id: client.id.clone(),
        project_id: client.project_id.clone(),
        name: OWN_GRAPH_CALLER.to_owned(),
        keys: Default::default(),
        scopes: vec![scope],
        created_at: 0,
    }
}
