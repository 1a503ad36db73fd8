//! Scopes belong to the integration: what `/authorize` accepts, what discovery lists, what
//! the consent page describes and what `/userinfo` answers, over real HTTPS on both stores.
//! Integrations with their own scopes are registered and changed with the real `linkd
//! clients` commands against the store the server runs on.

use std::collections::BTreeSet;

use linkd::store::ClientSettings;
use serde_json::Value;

use crate::support::linkd::{TestServer, settings_in};
use crate::support::{PASSWORD, cli, encode, flow, https, provision, redis_server};

const ACME_SECRET: &str = "acme-client-secret-0123456789";

struct Fixture {
    server: TestServer,
    /// The `--store` the server runs on, for the CLI.
    store: String,
    user_id: String,
    redis: Option<redis_server::RedisServer>,
    _dir: tempfile::TempDir,
}

/// A server on the embedded store or on a Redis of its own, with the integration `acme`
/// registered without scopes (so with the default ones) and a user with a full profile.
async fn fixture(redis: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let mut settings = settings_in(dir.path());
    let redis = redis.then(redis_server::RedisServer::start);
    if let Some(redis) = &redis {
        settings.store = redis.url();
    }
    let store = settings.store.clone();
    let server = TestServer::start_with(settings).await;
    let app = server.server.app();
    provision::acme(
        app,
        Some("Acme"),
        Some(ACME_SECRET),
        ClientSettings::default(),
    )
    .await;
    let profile = linkd::users::Profile {
        name: Some("Ada Lovelace".to_owned()),
        given_name: Some("Ada".to_owned()),
        family_name: Some("Lovelace".to_owned()),
        picture: Some("https://pictures.example/ada.png".to_owned()),
    };
    let user_id = provision::ada(app, profile).await;
    Fixture {
        server,
        store,
        user_id,
        redis,
        _dir: dir,
    }
}

fn redirect(project: &str) -> String {
    format!("https://oauth-redirect.googleusercontent.com/r/{project}")
}

/// An authorization request of `client` (project `<client>-project`) with `scope`.
fn request(client: &str, scope: Option<&str>) -> String {
    let mut query = format!(
        "client_id={client}&redirect_uri={}&state=xyz&response_type=code",
        encode(&redirect(&format!("{client}-project")))
    );
    if let Some(scope) = scope {
        query.push_str(&format!("&scope={}", encode(scope)));
    }
    query
}

impl Fixture {
    fn target(&self) -> flow::Target<'_> {
        self.server.target()
    }

    /// Runs `linkd --store <the server's store> <args>`, asserting success; returns stdout.
    fn linkd(&self, args: &[&str]) -> String {
        cli::run_ok(&self.store, args, None)
    }

    async fn authorize(&self, client: &str, scope: Option<&str>) -> https::Reply {
        flow::get(
            &self.target(),
            &format!("/authorize?{}", request(client, scope)),
            &[],
        )
        .await
    }

    /// Asserts that the request is valid: the sign-in page, no redirect.
    async fn assert_accepted(&self, client: &str, scope: &str) {
        let reply = self.authorize(client, Some(scope)).await;
        assert_eq!(
            reply.status,
            200,
            "{client} {scope:?}: {:?} {}",
            reply.header("location"),
            reply.text()
        );
        assert!(
            reply.text().contains("id=\"password\""),
            "{client} {scope:?}"
        );
    }

    /// Asserts that the request goes back to the client's redirect URI with
    /// `invalid_scope`, its `state` and no code.
    async fn assert_invalid_scope(&self, client: &str, scope: &str) {
        let reply = self.authorize(client, Some(scope)).await;
        assert_eq!(reply.status, 302, "{client} {scope:?}: {}", reply.text());
        let location = reply.header("location").unwrap();
        assert!(
            location.starts_with(&format!("{}?", redirect(&format!("{client}-project")))),
            "{location}"
        );
        let returned = flow::redirect_query(&reply);
        assert_eq!(returned["error"], "invalid_scope", "{client} {scope:?}");
        assert_eq!(returned["state"], "xyz");
        assert!(!returned.contains_key("code"));
    }

    /// The scopes discovery lists.
    async fn scopes_supported(&self) -> Vec<String> {
        let reply = https::get(
            self.server.address,
            &self.server.cert,
            "/.well-known/oauth-authorization-server",
        )
        .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        serde_json::from_value(reply.json()["scopes_supported"].clone()).unwrap()
    }

    fn devicegraph_scope(&self) -> String {
        self.server.server.app().devicegraph_scope()
    }

    /// Signs in for `request` and opens its consent page, which must be shown (no remembered
    /// consent covers it); then agrees. Returns the page and the code.
    async fn consent_and_link(&self, request: &str) -> (String, String) {
        let (cookies, signed_in) =
            flow::sign_in_over_http(&self.target(), request, "ada@example.com", PASSWORD).await;
        let page = flow::get(
            &self.target(),
            &signed_in.header("location").unwrap(),
            &[("cookie", &cookies)],
        )
        .await;
        assert_eq!(page.status, 200, "consent page expected: {}", page.text());
        let html = page.text();
        let agreed = flow::post_form(
            &self.target(),
            "/authorize/consent",
            &[
                ("csrf", flow::hidden_field(&html, "csrf").as_str()),
                ("request", flow::hidden_field(&html, "request").as_str()),
                ("action", "agree"),
            ],
            &cookies,
        )
        .await;
        assert_eq!(agreed.status, 303, "{}", agreed.text());
        let code = flow::redirect_query(&agreed)["code"].clone();
        (html, code)
    }

    async fn token(&self, form: &[(&str, &str)]) -> Value {
        let mut form = form.to_vec();
        form.extend([("client_id", "acme"), ("client_secret", ACME_SECRET)]);
        let reply = flow::post_form(&self.target(), "/token", &form, "").await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    }

    /// Links `acme` with `scope`; returns the page, the token response and userinfo's answer
    /// to its access token.
    async fn link_acme(&self, scope: &str) -> (String, Value, Value) {
        let (html, code) = self.consent_and_link(&request("acme", Some(scope))).await;
        let tokens = self
            .token(&[
                ("grant_type", "authorization_code"),
                ("code", code.as_str()),
                ("redirect_uri", redirect("acme-project").as_str()),
            ])
            .await;
        let userinfo = self
            .userinfo(tokens["access_token"].as_str().unwrap())
            .await;
        (html, tokens, userinfo)
    }

    async fn userinfo(&self, access_token: &str) -> Value {
        let reply = flow::userinfo(&self.target(), access_token).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()
    }

    /// Rewrites `acme`'s stored record as a version without per-client scopes wrote it.
    async fn store_acme_without_scopes(&self) {
        let record = self
            .server
            .server
            .app()
            .store
            .get_client("acme")
            .await
            .unwrap()
            .unwrap();
        let mut json = serde_json::to_value(&record).unwrap();
        json["settings"].as_object_mut().unwrap().remove("scopes");
        let json = json.to_string();
        match &self.redis {
            Some(redis) => {
                redis
                    .cli(&["HSET", "linkd:{clients}", "acme", &json])
                    .unwrap();
            }
            None => {
                let db = rusqlite::Connection::open(&self.store).unwrap();
                let changed = db
                    .execute(
                        "UPDATE clients SET record = ?1 WHERE id = 'acme'",
                        [json.as_str()],
                    )
                    .unwrap();
                assert_eq!(changed, 1);
            }
        }
    }
}

/// The names of the claims in a userinfo answer.
fn claim_names(userinfo: &Value) -> BTreeSet<&str> {
    userinfo
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

/// The `data-scope` of each line of the consent page's shared-data list, in order.
fn listed_scopes(html: &str) -> Vec<&str> {
    html.split("<li data-scope=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect()
}

async fn each_integration_has_its_own_scopes(redis: bool) {
    let fixture = fixture(redis).await;
    // What generic OAuth and OpenID Connect clients send, on an integration registered
    // without scopes.
    fixture
        .assert_accepted("acme", "openid email profile")
        .await;
    fixture.assert_accepted("acme", "devices").await;
    fixture
        .assert_invalid_scope("acme", "openid read:lights")
        .await;

    // Another integration with scopes of its own.
    fixture.linkd(&[
        "clients",
        "add",
        "--id",
        "lights",
        "--project-id",
        "lights-project",
        "--scopes",
        "openid read:lights",
    ]);
    fixture
        .assert_accepted("lights", "read:lights openid")
        .await;
    fixture.assert_accepted("lights", "read:lights").await;
    fixture.assert_invalid_scope("lights", "openid email").await;
    fixture.assert_invalid_scope("lights", "devices").await;
    let listed = fixture.linkd(&["clients", "list"]);
    let lights = listed.lines().find(|l| l.starts_with("lights")).unwrap();
    assert!(lights.contains("openid read:lights"), "{listed}");
    let acme = listed.lines().find(|l| l.starts_with("acme")).unwrap();
    assert!(acme.contains("openid email profile devices"), "{listed}");

    // Discovery lists every scope some integration may ask for, and the device graph's.
    let devicegraph = fixture.devicegraph_scope();
    assert_eq!(
        fixture.scopes_supported().await,
        [
            "devices",
            "email",
            "openid",
            "profile",
            "read:lights",
            devicegraph.as_str()
        ]
    );

    // `clients update --scopes` replaces the list, and the running server follows it.
    fixture.linkd(&[
        "clients",
        "update",
        "lights",
        "--scopes",
        "openid email write:lights",
    ]);
    fixture
        .assert_accepted("lights", "openid email write:lights")
        .await;
    fixture.assert_invalid_scope("lights", "read:lights").await;
    assert_eq!(
        fixture.scopes_supported().await,
        [
            "devices",
            "email",
            "openid",
            "profile",
            "write:lights",
            devicegraph.as_str()
        ]
    );

    // A record stored before integrations had scopes gets the default ones.
    fixture.store_acme_without_scopes().await;
    fixture
        .assert_accepted("acme", "openid email profile devices")
        .await;
    fixture.assert_invalid_scope("acme", "write:lights").await;
    let listed = fixture.linkd(&["clients", "list"]);
    let acme = listed.lines().find(|l| l.starts_with("acme")).unwrap();
    assert!(acme.contains("openid email profile devices"), "{listed}");
}

async fn consent_and_userinfo_follow_the_scope(redis: bool) {
    let fixture = fixture(redis).await;

    // Device control only: the page promises the account ID and device control, and
    // userinfo keeps to that.
    let (html, tokens, userinfo) = fixture.link_acme("devices").await;
    assert_eq!(tokens["scope"], "devices");
    assert_eq!(claim_names(&userinfo), BTreeSet::from(["sub"]));
    assert_eq!(userinfo["sub"], fixture.user_id.as_str());
    assert_eq!(listed_scopes(&html), ["openid", "devices"]);
    assert!(html.contains("Your account ID"), "{html}");
    assert!(html.contains("Control of your devices"), "{html}");
    assert!(!html.contains("Your email address"), "{html}");

    // Each scope alone (none within the consent remembered from the link before).
    let (html, _, userinfo) = fixture.link_acme("email").await;
    assert_eq!(listed_scopes(&html), ["openid", "email"]);
    assert_eq!(claim_names(&userinfo), BTreeSet::from(["sub", "email"]));

    let (html, _, userinfo) = fixture.link_acme("profile").await;
    assert_eq!(listed_scopes(&html), ["openid", "profile"]);
    assert_eq!(
        claim_names(&userinfo),
        BTreeSet::from(["sub", "name", "given_name", "family_name", "picture"])
    );

    // What generic OpenID Connect clients ask for.
    let (html, tokens, userinfo) = fixture.link_acme("openid email profile").await;
    assert_eq!(tokens["scope"], "openid email profile");
    assert_eq!(listed_scopes(&html), ["openid", "email", "profile"]);
    assert!(html.contains("Your email address"), "{html}");
    assert!(html.contains("Your name and profile picture"), "{html}");
    assert!(!html.contains("Control of your devices"), "{html}");
    assert_eq!(
        userinfo,
        serde_json::json!({
            "sub": fixture.user_id,
            "email": "ada@example.com",
            "name": "Ada Lovelace",
            "given_name": "Ada",
            "family_name": "Lovelace",
            "picture": "https://pictures.example/ada.png",
        })
    );

    // A refresh for a narrower scope yields a token userinfo answers narrower for.
    let refreshed = fixture
        .token(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("scope", "openid email"),
        ])
        .await;
    assert_eq!(refreshed["scope"], "openid email");
    let narrower = fixture
        .userinfo(refreshed["access_token"].as_str().unwrap())
        .await;
    assert_eq!(claim_names(&narrower), BTreeSet::from(["sub", "email"]));

    // Without a scope the request gets the integration's whole list, and a scope of the
    // integration's own is shown by name rather than left out.
    fixture.linkd(&[
        "clients",
        "add",
        "--id",
        "lights",
        "--project-id",
        "lights-project",
        "--name",
        "Lights",
        "--scopes",
        "openid read:lights email",
    ]);
    let (html, _) = fixture.consent_and_link(&request("lights", None)).await;
    assert_eq!(listed_scopes(&html), ["openid", "read:lights", "email"]);
    assert!(html.contains("Access named “read:lights”"), "{html}");
    assert!(
        html.contains("a permission Lights defines for Google"),
        "{html}"
    );
}

on_both_stores!(
    each_integration_has_its_own_scopes,
    consent_and_userinfo_follow_the_scope
);
