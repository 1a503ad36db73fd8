//! What the areas' tests share: servers, clients, fixtures.

/// Runs each of the async functions `$name(redis: bool)` as two tests, `sqlite::$name` on
/// the embedded store and `redis::$name` on a Redis of its own.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(false).await;
            })*
        }
        mod redis {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                super::$name(true).await;
            })*
        }
    };
}

pub mod browser;
pub mod cli;
pub mod fault_proxy;
pub mod flow;
pub mod handoff;
pub mod haproxy;
pub mod https;
pub mod linkd;
pub mod oidc_provider;
pub mod provision;
pub mod redis_sentinel;
pub mod redis_server;
pub mod redis_tls;

/// The redirect URI of the integration `acme` (project `acme-project`) on the platform.
pub const REDIRECT: &str = "https://oauth-redirect.googleusercontent.com/r/acme-project";

/// The password of `ada@example.com` wherever a fixture adds her.
pub const PASSWORD: &str = "correct horse battery";

/// `value` form-urlencoded, for a query string.
pub fn encode(value: &str) -> String {
    serde_urlencoded::to_string([("v", value)]).unwrap()[2..].to_owned()
}
