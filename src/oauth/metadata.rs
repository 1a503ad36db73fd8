//! Discovery: the JSON Web Key Set (RFC 7517) and the authorization-server metadata
//! document (RFC 8414 §2, §3). The metadata names only endpoints this instance serves,
//! which the route table hands in, so that it cannot advertise an endpoint that 404s.

use crate::app::App;
use crate::store::StoreError;

/// Path of the JWKS.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// Path of the RFC 8414 metadata document.
pub const DISCOVERY_PATH: &str = "/.well-known/oauth-authorization-server";

/// How long clients may cache discovery documents. Well below the minimum time a new key
/// is published before it signs (`keys rotate --min-published-secs`, default 3600 s), so a
/// verifier always refetches the JWKS before a new key's tokens reach it.
pub const CACHE_SECONDS: u32 = 300;

/// `GET /.well-known/jwks.json`: next, current and previous public keys, as JSON.
pub fn jwks(app: &App) -> bytes::Bytes {
    app.keyring.load().jwks_json()
}

/// `GET /.well-known/oauth-authorization-server`, naming `endpoints`: the RFC 8414 field
/// and path of each endpoint served that has such a field.
pub async fn discovery(
    app: &App,
    endpoints: impl Iterator<Item = (&'static str, &'static str)>,
) -> Result<serde_json::Value, StoreError> {
    // Scopes belong to the integrations: the server supports whatever any of them may ask
    // for, plus the device-graph scope of service accounts.
    let clients = app.store.list_clients().await.inspect_err(|error| {
        tracing::warn!(%error, "store failed while listing scopes for discovery");
        crate::metrics::record_store_error("discovery");
    })?;
    let mut scopes: Vec<String> = clients
        .iter()
        .flat_map(|client| client.settings.scopes.0.iter().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let devicegraph_scope = app.devicegraph_scope();
    if !scopes.contains(&devicegraph_scope) {
        scopes.push(devicegraph_scope);
    }
    let mut document = serde_json::Map::new();
    document.insert("issuer".into(), app.issuer.clone().into());
    // RFC 8414 §2 makes `response_types_supported` REQUIRED; linkd only ever issues codes.
    document.insert(
        "response_types_supported".into(),
        serde_json::json!(["code"]),
    );
    document.insert(
        "grant_types_supported".into(),
        serde_json::json!([
            "authorization_code",
            "refresh_token",
            crate::oauth::grant::jwt_bearer::GRANT_TYPE
        ]),
    );
    document.insert(
        "token_endpoint_auth_methods_supported".into(),
        serde_json::json!(["client_secret_post", "client_secret_basic"]),
    );
    document.insert(
        "code_challenge_methods_supported".into(),
        serde_json::json!(["S256"]),
    );
    document.insert("scopes_supported".into(), serde_json::json!(scopes));
    for (field, path) in endpoints {
        document.insert(field.into(), app.url(path).into());
    }
    Ok(serde_json::Value::Object(document))
}
