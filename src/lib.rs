//! linkd: an account-linking OAuth 2.0 server and device-graph API for smart-home
//! integrations.
//!
//! # Layout
//!
//! Dependencies point downward only, with no import cycle: a module uses modules of its own
//! row or of rows below it. What would point upward is injected by [`server`]: the router is
//! the device-graph client's in-process transport, and the unlink worker runs there, woken by
//! [`app::App`] rather than started by it.
//!
//! | layer | modules | owns |
//! |---|---|---|
//! | entry | [`cli`] | the operator CLI: `serve` resolves the settings and runs a server; the admin commands |
//! | assembly | [`server`], [`config`] | building the state, router, device-graph client and workers, and running them until a signal; configuration: raw settings layered from flags, environment and file, validated section by section without I/O, then loaded |
//! | web | [`routes`] | the route table, request admission, the in-process transport |
//! | endpoints | [`oauth`], [`devicegraph`], [`account`], [`ops`] | OAuth protocol endpoints, discovery and JWKS; the device-graph API, its client and the unlink worker; the account page; health, readiness, metrics |
//! | domain | [`sessions`], [`app`], [`service_accounts`], [`tokens`], [`users`], [`grants`], [`clients`], [`throttle`] | sign-in sessions; shared state; service accounts; keyring, JWTs and the Bearer check; users and passwords; grants, codes and refresh tokens; integrations; throttling of guesses |
//! | views | [`pages`] | HTML page views |
//! | infrastructure | [`http`], [`store`] | listener, TLS and certificate reload, limits, timeouts, shutdown; one trait per concern, Redis and embedded SQLite backends |
//! | support | [`redirect_uri`], [`outbound`], [`logging`], [`metrics`], [`clock`], [`secrets`] | the redirect URI grammar and the platform's redirect bases; the HTTPS client of calls to fulfilments and external device graphs; log setup; Prometheus metrics; injected time; random values, digests, constant-time compare |

pub mod account;
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
pub mod outbound;
pub mod pages;
pub mod redirect_uri;
pub mod routes;
pub mod secrets;
pub mod server;
pub mod service_accounts;
pub mod sessions;
pub mod store;
pub mod throttle;
pub mod tokens;
pub mod users;
