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
//! | assembly | [`server`] | building the state, router, device-graph client and workers, and running them until a signal |
//! | web | [`web`] | the route table and one adapter per protocol: the only modules above [`http`] that name hyper |
//! | configuration | [`config`] | raw settings layered from flags, environment and file, validated section by section without I/O, then loaded |
//! | protocol core | [`oauth`], [`devicegraph`], [`users`], [`identity`] | OAuth endpoints as typed requests and outcomes (`oauth::grant` for the token endpoint, `oauth::authorize`); the device-graph API, its client and the unlink worker; users, sign-in and their links; sign-in through upstream identity providers (OpenID Connect, login hand-off) |
//! | domain | [`sessions`], [`app`], [`service_accounts`], [`tokens`], [`grants`], [`clients`], [`throttle`] | sign-in sessions; shared state; service accounts; keyring, JWTs and the Bearer check; grants, codes, refresh tokens and Unlink; integrations; throttling of guesses |
//! | infrastructure | [`http`], [`store`] | listener, TLS and certificate reload, limits, timeouts, shutdown; one trait per concern, Redis and embedded SQLite backends |
//! | support | [`scope`], [`redirect_uri`], [`pages`], [`outbound`], [`logging`], [`metrics`], [`clock`], [`secrets`] | OAuth scopes; the redirect URI grammar and the platform's redirect bases; HTML page views; the HTTPS client of calls to fulfilments and external device graphs; log setup; Prometheus metrics; injected time; random values, digests, constant-time compare |
//!
//! A refresh request, for example, goes [`http`] → [`web::routes`] → [`web::oauth::token`] →
//! [`oauth::grant::token`] (client authentication, then [`oauth::grant::refresh::refresh`]) →
//! [`store`] and [`tokens`], and its outcome back through [`web::oauth`] to the wire.

pub mod app;
pub mod cli;
pub mod clients;
pub mod clock;
pub mod config;
pub mod devicegraph;
pub mod grants;
pub mod http;
pub mod identity;
pub mod logging;
pub mod metrics;
pub mod oauth;
pub mod outbound;
pub mod pages;
pub mod redirect_uri;
pub mod scope;
pub mod secrets;
pub mod server;
pub mod service_accounts;
pub mod sessions;
pub mod store;
pub mod throttle;
pub mod tokens;
pub mod users;
pub mod web;
