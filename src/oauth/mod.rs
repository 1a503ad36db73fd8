//! OAuth 2.0 endpoints, one module per protocol concept.

pub mod authorize;
pub mod client_auth;
pub mod introspect;
pub mod metadata;
pub mod params;
pub mod pkce;
pub mod revoke;
pub mod token;
pub mod userinfo;
