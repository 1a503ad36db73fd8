//! Registering clients and users straight through the library, as `linkd clients add` and
//! `linkd users add` do, for tests that exercise the endpoints.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use linkd::app::App;
use linkd::store::ClientSettings;

/// Registers client `id` for `project` with `secret` (generated when `None`); returns the
/// secret.
pub async fn client(
    app: &App,
    id: &str,
    project: &str,
    name: Option<&str>,
    secret: Option<&str>,
    settings: ClientSettings,
) -> String {
    let secret = match secret {
        Some(secret) => linkd::clients::ClientSecret::supplied(secret).unwrap(),
        None => linkd::clients::ClientSecret::generate().unwrap(),
    };
    linkd::clients::register(
        &*app.store,
        linkd::clients::NewClient {
            id: linkd::clients::ClientId::parse(id).unwrap(),
            project_id: linkd::clients::ProjectId::parse(project).unwrap(),
            name: name.map(|name| linkd::clients::DisplayName::parse(name).unwrap()),
            secret: secret.clone(),
            settings,
        },
        app.clock.now(),
    )
    .await
    .unwrap();
    secret.expose().to_owned()
}

/// Adds a user; returns its id.
pub async fn user(
    app: &App,
    email: &str,
    password: &str,
    profile: linkd::accounts::Profile,
) -> String {
    linkd::accounts::add(
        &*app.store,
        linkd::accounts::NewUser {
            email: linkd::accounts::Email::parse(email).unwrap(),
            profile,
            password: linkd::accounts::Password::parse(password).unwrap(),
        },
        app.clock.now(),
    )
    .await
    .unwrap()
    .id
}
