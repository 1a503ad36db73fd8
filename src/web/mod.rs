//! The web layer: the route table and one adapter per protocol, the only modules above
//! [`crate::http`] that name hyper. Each adapter reads what the protocol core needs from a
//! request, calls the core, and turns its typed outcome or error into a response.
//!
//! | module | speaks |
//! |---|---|
//! | [`routes`] | the route table, request admission, the in-process transport of the device graph |
//! | [`oauth`] | token, revocation, introspection, userinfo, discovery: JSON and Bearer challenges |
//! | [`authorize`] | the authorization endpoint's redirects, sign-in and consent pages, cookies |
//! | [`account`] | the account page: linked integrations, unlink, sign-out |
//! | [`signin_upstream`] | sign-in through an upstream identity provider: the redirect there and the callback |
//! | [`devicegraph`] | the device-graph API's error format |
//! | [`ops`] | health, readiness, metrics |

pub mod account;
pub mod authorize;
pub mod cookies;
pub mod devicegraph;
pub mod oauth;
pub mod ops;
pub mod page;
pub mod routes;
pub mod signin_upstream;
