//! Who may call the device-graph API: a service account of the integration's project, by
//! an access token linkd issued to it (the JWT-bearer grant) or by a JWT the account signed
//! itself for this API (`aud` = the API's base URL), as client libraries do when told to
//! skip the token call. A user's linking token, a token without the device-graph scope, or
//! another project's account is refused. linkd itself, calling its own graph when a user
//! unlinks, is the one other caller: by an access token it signed for the integration with
//! the grant id [`OWN_GRAPH_GRANT`], which no token endpoint grant can carry.
//!
//! The router authenticates every API request from its head alone, before it reads the
//! body, and hands the endpoint the [`Caller`]: a stranger cannot make linkd hold a body.

use bytes::Bytes;
use hyper::{HeaderMap, Request};

use super::ApiError;
use super::graph_client::{OWN_GRAPH_CALLER, OWN_GRAPH_GRANT};
use crate::app::App;
use crate::grants::AccessClaims;
use crate::oauth::userinfo::{self, BearerFailure};
use crate::service_accounts::{self, AssertionError};
use crate::store::{ClientRecord, ServiceAccountRecord};

/// The authenticated caller of an API request, put into the request's extensions by the
/// router.
#[derive(Debug, Clone)]
pub struct Caller(pub ServiceAccountRecord);

/// The caller the router authenticated for `request`; a request that reached an endpoint
/// without one is refused, never served.
pub fn caller(request: &Request<Bytes>) -> Result<ServiceAccountRecord, ApiError> {
    request
        .extensions()
        .get::<Caller>()
        .map(|caller| caller.0.clone())
        .ok_or_else(|| ApiError::unauthenticated("Request is missing a bearer token."))
}

/// The service account behind a request with these `headers`.
pub async fn authenticate(
    app: &App,
    headers: &HeaderMap,
) -> Result<ServiceAccountRecord, ApiError> {
    let Some(token) = userinfo::bearer_in(headers) else {
        return Err(ApiError::unauthenticated(
            "Request is missing a bearer token.",
        ));
    };
    let scope = app.devicegraph_scope();
    let header = jsonwebtoken::decode_header(token).map_err(|_| {
        ApiError::unauthenticated("Request had invalid authentication credentials.")
    })?;
    if header.typ.as_deref() == Some(crate::tokens::TokenKind::AccessToken.typ()) {
        let claims: AccessClaims = userinfo::check_access_token(app, token, None)
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
    // A self-signed service-account JWT whose audience is this API.
    let (account, _claims) = service_accounts::verify_assertion(
        &*app.store,
        token,
        app.devicegraph_base_url(),
        app.clock.now(),
        app.oauth.leeway_secs,
    )
    .await
    .map_err(|error| match error {
        AssertionError::Unavailable => ApiError::unavailable(),
        other => ApiError::unauthenticated(format!(
            "Request had invalid authentication credentials: {other}."
        )),
    })?;
    if !account.scopes.contains(&scope) {
        return Err(ApiError::permission_denied(
            "Request had insufficient authentication scopes.",
        ));
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
