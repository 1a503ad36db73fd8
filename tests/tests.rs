//! linkd's integration tests, in one binary: real servers on ephemeral ports over real TLS,
//! real Redis servers on free ports, real Chromium for the pages and the linkd binary for
//! the command line. The `support` module holds what the areas share; each other module is
//! one area of linkd.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[macro_use]
mod support;

mod authorize;
mod binary;
mod browser;
mod caches;
mod cli_admin;
mod cluster;
mod demo;
mod deploy;
mod devicegraph;
mod faults;
mod identity_providers;
mod import;
mod keyring;
mod oidc;
mod pages;
mod revocation;
mod scopes;
mod server;
mod store_connect;
mod store_contract;
mod store_upgrade;
mod token_endpoint;
mod upstream_oidc;
