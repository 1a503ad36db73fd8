//! linkd: an account-linking OAuth 2.0 server and device-graph API for smart-home
//! integrations.
//!
//! # Layout
//!
//! Dependencies point downward only.
//!
//! | layer | modules | owns |
//! |---|---|---|
//! | entry | [`cli`], [`config`], [`logging`], [`server`] | the operator CLI, layered configuration, log setup, assembling and running a server |
//! | http | [`http`], [`routes`] | listener, TLS and certificate reload, limits, timeouts, shutdown; the route table |
//! | endpoints | [`ops`], [`oauth`], [`account`], [`pages`] | health, readiness, metrics; OAuth protocol pieces, discovery and JWKS; HTML page views |
//! | domain | [`app`], [`tokens`], [`grants`], [`clients`], [`accounts`], [`throttle`] | shared state; keyring and JWTs; token claims and refresh tokens; integrations; users and passwords; throttling of guesses |
//! | store | [`store`] | one trait per concern, Redis and embedded SQLite backends |
//! | support | [`clock`], [`secrets`], [`metrics`] | injected time; random values, digests, constant-time compare; Prometheus metrics |

pub mod account;
pub mod accounts;
pub mod app;
pub mod cli;
pub mod clients;
pub mod clock;
pub mod config;
pub mod devicegraph;
pub mod grants;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod oauth;
pub mod ops;
pub mod pages;
pub mod routes;
pub mod secrets;
pub mod server;
pub mod service_accounts;
pub mod sessions;
pub mod store;
pub mod throttle;
pub mod tokens;
