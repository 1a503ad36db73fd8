//! The OAuth 2.0 protocol core, one module per protocol concept, free of HTTP: requests come
//! in parsed into types, outcomes and errors go out as types, and [`crate::web`] turns them
//! into responses.

pub mod authorize;
pub mod client_auth;
pub mod error;
pub mod grant;
pub mod introspect;
pub mod metadata;
pub mod params;
pub mod pkce;
pub mod revoke;
pub mod userinfo;
