//! Registering clients and users straight through the library, as `linkd clients add` and
//! `linkd users add` do, for tests that exercise the endpoints.

use linkd::app::App;
use linkd::grants::CodeClaims;
use linkd::store::ClientSettings;
use linkd::tokens::TokenKind;

use super::PASSWORD;

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

/// Registers the integration `acme` of project `acme-project`, as [`client`] does.
pub async fn acme(
    app: &App,
    name: Option<&str>,
    secret: Option<&str>,
    settings: ClientSettings,
) -> String {
    client(app, "acme", "acme-project", name, secret, settings).await
}

/// Adds a user; returns its id.
pub async fn user(
    app: &App,
    email: &str,
    password: &str,
    profile: linkd::users::Profile,
) -> String {
    linkd::users::add(
        &*app.store,
        linkd::users::NewUser {
            email: linkd::users::Email::parse(email).unwrap(),
            profile,
            password: linkd::users::Password::parse(password).unwrap(),
        },
        app.clock.now(),
    )
    .await
    .unwrap()
    .id
}

/// The integration `acme` ("Acme Home", `secret`, default settings) and Ada with no
/// profile: what most linking tests start from. Returns Ada's id.
pub async fn acme_and_ada(app: &App, secret: &str) -> String {
    acme(
        app,
        Some("Acme Home"),
        Some(secret),
        linkd::store::ClientSettings::default(),
    )
    .await;
    ada(app, linkd::users::Profile::default()).await
}

/// Adds `ada@example.com` with [`PASSWORD`] and `profile`; returns her id.
pub async fn ada(app: &App, profile: linkd::users::Profile) -> String {
    user(app, "ada@example.com", PASSWORD, profile).await
}

/// An authorization code as the authorization endpoint signs it, for tests that redeem codes
/// without going through the pages.
pub struct Code<'a> {
    /// The client the code is for.
    pub client: &'a str,
    /// The user id it links.
    pub user: &'a str,
    /// The redirect URI it was issued for.
    pub redirect: &'a str,
    pub scope: &'a str,
    /// The PKCE challenge, if any.
    pub pkce: Option<&'a str>,
    /// Seconds until it expires, from the server's clock (negative: already expired).
    pub lifetime: i64,
}

impl Code<'_> {
    /// The code, signed with the server's current signing key.
    pub fn sign(&self, app: &App) -> String {
        let now = app.clock.now();
        app.keyring
            .load()
            .sign(
                TokenKind::AuthorizationCode,
                &CodeClaims {
                    iss: app.issuer.clone(),
                    aud: self.client.to_owned(),
                    sub: self.user.to_owned(),
                    exp: now + self.lifetime,
                    iat: now - 1,
                    jti: linkd::secrets::new_uuid(),
                    rdh: linkd::secrets::sha256_hex(self.redirect.as_bytes()),
                    scope: self.scope.to_owned(),
                    gid: linkd::secrets::new_uuid(),
                    pkce: self.pkce.map(str::to_owned),
                },
            )
            .unwrap()
    }
}

/// The claims of `code`, verified as the token endpoint verifies it (for `audience`, when
/// given).
pub fn verify_code(app: &App, code: &str, audience: Option<&str>) -> CodeClaims {
    app.keyring
        .load()
        .verify(
            code,
            TokenKind::AuthorizationCode,
            &linkd::tokens::Expectations {
                now: app.clock.now(),
                leeway: 60,
                issuer: Some(&app.issuer),
                audience,
            },
        )
        .unwrap()
}
