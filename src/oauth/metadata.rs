//! Discovery: the JSON Web Key Set (RFC 7517) and the authorization-server metadata
//! document (RFC 8414 §2, §3). The metadata names only endpoints this instance serves,
//! derived from the route table, so that it cannot advertise an endpoint that 404s.

use crate::app::App;
use crate::http::{HttpResponse, response};
use crate::routes::{self, Endpoint};

/// Path of the JWKS.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// Path of the RFC 8414 metadata document.
pub const DISCOVERY_PATH: &str = "/.well-known/oauth-authorization-server";

/// How long clients may cache discovery documents. Well below the minimum time a new key
/// is published before it signs (`keys rotate --min-published-secs`, default 3600 s), so a
/// verifier always refetches the JWKS before a new key's tokens reach it.
pub const CACHE_SECONDS: u32 = 300;

/// `GET /.well-known/jwks.json`: next, current and previous public keys.
pub fn jwks(app: &App) -> HttpResponse {
    response::cacheable_json(app.keyring.load().jwks_json(), CACHE_SECONDS)
}

/// `GET /.well-known/oauth-authorization-server`.
pub async fn discovery(app: &App) -> HttpResponse {
    // Scopes belong to the integrations: the server supports whatever any of them may ask
    // for, plus the device-graph scope of service accounts.
    let clients = match app.store.list_clients().await {
        Ok(clients) => clients,
        Err(error) => {
            tracing::warn!(%error, "store failed while listing scopes for discovery");
            crate::metrics::record_store_error("discovery");
            return response::service_unavailable("the service is briefly unavailable; retry", 5);
        }
    };
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
            crate::oauth::token::JWT_BEARER
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
    for route in routes::ROUTES {
        if let Some(field) = metadata_field(route.endpoint) {
            document.insert(field.into(), app.url(route.path).into());
        }
    }
    let body = serde_json::to_vec(&serde_json::Value::Object(document)).unwrap_or_default();
    response::cacheable_json(body, CACHE_SECONDS)
}

/// The RFC 8414 field naming an endpoint, for endpoints that have one.
fn metadata_field(endpoint: Endpoint) -> Option<&'static str> {
    match endpoint {
        Endpoint::Jwks => Some("jwks_uri"),
        Endpoint::Authorize => Some("authorization_endpoint"),
        Endpoint::Token => Some("token_endpoint"),
        Endpoint::Userinfo => Some("userinfo_endpoint"),
        Endpoint::Revoke => Some("revocation_endpoint"),
        Endpoint::Introspect => Some("introspection_endpoint"),
        Endpoint::Healthz
        | Endpoint::Readyz
        | Endpoint::Metrics
        | Endpoint::Discovery
        | Endpoint::SignIn
        | Endpoint::Consent
        | Endpoint::SwitchAccount
        | Endpoint::Account
        | Endpoint::Unlink
        | Endpoint::SignOut
        | Endpoint::Stylesheet
        | Endpoint::DevicesSync
        | Endpoint::DevicesRequestSync
        | Endpoint::DevicesReportState
        | Endpoint::DevicesQuery
        | Endpoint::AgentUsersDelete => None,
    }
}
