//! The device graph against a real linkd over TLS, on the embedded store and on a real Redis:
//! service accounts and the JWT-bearer grant, `devices:sync` and its sibling methods, SYNC to
//! a real fulfilment server (a small hyper service started here), the platform's error format,
//! and isolation between projects.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use linkd::app::App;
use linkd::service_accounts::WELL_KNOWN_TOKEN_AUDIENCE;
use linkd::store::ClientSettings;
use linkd::tokens::TokenKind;
use serde_json::{Value, json};

use crate::support::linkd::{TestServer, eventually, metric, settings_in};
use crate::support::{PASSWORD, REDIRECT, cli, flow, https, provision, redis_server};

const ACME_SECRET: &str = "acme-secret-long-enough-to-pass";

/// What the fulfilment saw and what it answers.
#[derive(Default)]
struct FulfillmentLog {
    /// Bearer tokens of the calls, in order.
    tokens: Vec<String>,
    /// Request bodies, in order.
    bodies: Vec<Value>,
    /// Answer HTTP 500 instead of a SYNC response.
    failing: bool,
}

/// A fulfilment URL served by a hyper service: answers SYNC with `devices` for `agent_user`.
struct Fulfillment {
    url: String,
    log: Arc<Mutex<FulfillmentLog>>,
}

impl Fulfillment {
    async fn start(agent_user: String, devices: Value) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/smarthome", listener.local_addr().unwrap());
        let log = Arc::new(Mutex::new(FulfillmentLog::default()));
        let shared = Arc::clone(&log);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                let (log, agent_user, devices) =
                    (Arc::clone(&shared), agent_user.clone(), devices.clone());
                let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                    let (log, agent_user, devices) =
                        (Arc::clone(&log), agent_user.clone(), devices.clone());
                    async move {
                        let token = request
                            .headers()
                            .get("authorization")
                            .and_then(|value| value.to_str().ok())
                            .and_then(|value| value.strip_prefix("Bearer "))
                            .unwrap_or_default()
                            .to_owned();
                        let body: Value = serde_json::from_slice(
                            &request.into_body().collect().await.unwrap().to_bytes(),
                        )
                        .unwrap();
                        let failing = {
                            let mut log = log.lock().unwrap();
                            log.tokens.push(token);
                            log.bodies.push(body.clone());
                            log.failing
                        };
                        let (status, answer) = if failing {
                            (500, json!({"error": "down"}))
                        } else {
                            (
                                200,
                                json!({
                                    "requestId": body["requestId"],
                                    "payload": {"agentUserId": agent_user, "devices": devices},
                                }),
                            )
                        };
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(answer.to_string())))
                                .unwrap(),
                        )
                    }
                });
                tokio::spawn(async move {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { url, log }
    }

    fn calls(&self) -> usize {
        self.log.lock().unwrap().tokens.len()
    }
}

/// Every Device field of the interface, with a name of 70 astral characters.
fn full_device(id: &str) -> Value {
    json!({
        "id": id,
        "type": "action.devices.types.LIGHT",
        "traits": ["action.devices.traits.OnOff", "action.devices.traits.Brightness"],
        "name": {
            "name": "🏠".repeat(70),
            "nicknames": ["reading lamp", "lámpara"],
            "defaultNames": ["Acme Lamp 3000"],
        },
        "willReportState": true,
        "roomHint": "living room",
        "structureHint": "home",
        "deviceInfo": {"manufacturer": "Acme", "model": "L3000", "hwVersion": "3", "swVersion": "1.2.3"},
        "attributes": {"colorModel": "rgb", "commandOnlyOnOff": false},
        "customData": {"fooValue": 74, "barValue": true, "bazValue": "foo"},
        "otherDeviceIds": [{"agentId": "local", "deviceId": "lamp-local-1"}],
        "notificationSupportedByAgent": true,
    })
}

struct Fixture {
    server: TestServer,
    user_id: String,
    /// Key files of service accounts of `acme-project` and `other-project`.
    acme_key: Value,
    other_key: Value,
    fulfillment: Fulfillment,
    redis: Option<redis_server::RedisServer>,
}

impl Fixture {
    fn app(&self) -> &Arc<App> {
        self.server.server.app()
    }

    async fn send(
        &self,
        method: &str,
        path: &str,
        bearer: Option<&str>,
        body: Bytes,
    ) -> https::Reply {
        send_api(&self.server, method, path, bearer, body).await
    }

    async fn call(&self, path: &str, bearer: &str, body: &Value) -> https::Reply {
        self.send("POST", path, Some(bearer), Bytes::from(body.to_string()))
            .await
    }

    async fn post_form(&self, form: &[(&str, &str)]) -> https::Reply {
        flow::post(&self.server.target(), "/token", form).await
    }

    fn scope(&self) -> String {
        format!("{}/auth/devicegraph", self.app().issuer)
    }

    /// A service-account access token from the JWT-bearer grant.
    async fn service_token(&self, key: &Value) -> String {
        let now = self.app().clock.now();
        let assertion = sign_assertion(
            key,
            key["token_uri"].as_str().unwrap(),
            Some(&self.scope()),
            now,
            now + 3600,
        );
        let reply = self
            .post_form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ])
            .await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        let body = reply.json();
        assert_eq!(body["token_type"], "Bearer");
        assert!(body["expires_in"].as_i64().unwrap() <= 3600);
        body["access_token"].as_str().unwrap().to_owned()
    }

    /// Links the user to `acme` by redeeming a code; returns the user's access token.
    async fn link(&self) -> String {
        let code = provision::Code {
            client: "acme",
            user: &self.user_id,
            redirect: REDIRECT,
            scope: "email",
            pkce: None,
            lifetime: 300,
        }
        .sign(self.app());
        let reply = flow::redeem(&self.server.target(), &code, REDIRECT, ACME_SECRET).await;
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.json()["access_token"].as_str().unwrap().to_owned()
    }
}

async fn fixture(redis: bool) -> Fixture {
    let (server, redis) = TestServer::start_on_store(redis, |_| {}).await;
    let app = server.server.app();
    let user_id = provision::ada(app, linkd::users::Profile::default()).await;
    let fulfillment = Fulfillment::start(
        user_id.clone(),
        json!([full_device("lamp"), {"id": "plug", "type": "action.devices.types.OUTLET",
            "traits": ["action.devices.traits.OnOff"], "name": {"name": "Plug"}}]),
    )
    .await;
    let acme_settings = ClientSettings {
        fulfillment_url: Some(fulfillment.url.clone()),
        ..ClientSettings::default()
    };
    provision::acme(app, None, Some(ACME_SECRET), acme_settings).await;
    provision::client(
        app,
        "other",
        "other-project",
        None,
        None,
        ClientSettings::default(),
    )
    .await;
    let acme_key = service_account(app, "acme", "graph", &app.issuer).await;
    let other_key = service_account(app, "other", "graph", &app.issuer).await;
    Fixture {
        server,
        user_id,
        acme_key,
        other_key,
        fulfillment,
        redis,
    }
}

/// An RS256 JWT signed by the key file's private key, as a service account signs its
/// assertions and self-signed API credentials (`iss` = `sub` = the account).
fn sign_assertion(key: &Value, audience: &str, scope: Option<&str>, iat: i64, exp: i64) -> String {
    let mut claims = json!({
        "iss": key["client_email"], "sub": key["client_email"], "aud": audience,
        "iat": iat, "exp": exp,
    });
    if let Some(scope) = scope {
        claims["scope"] = json!(scope);
    }
    sign_jwt(key, true, &claims)
}

/// `claims` signed RS256 by the key file's private key, with its `kid` in the header or
/// without one.
fn sign_jwt(key: &Value, with_kid: bool, claims: &Value) -> String {
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    if with_kid {
        header.kid = Some(key["private_key_id"].as_str().unwrap().to_owned());
    }
    let signer =
        jsonwebtoken::EncodingKey::from_rsa_pem(key["private_key"].as_str().unwrap().as_bytes())
            .unwrap();
    jsonwebtoken::encode(&header, claims, &signer).unwrap()
}

/// The key file's `token_uri`: linkd's token endpoint.
fn token_uri_of(key: &Value) -> String {
    key["token_uri"].as_str().unwrap().to_owned()
}

/// A service account of integration `client` named `name`, allowed the device-graph scope of
/// `scope_base`; returns its key file.
async fn service_account(app: &App, client: &str, name: &str, scope_base: &str) -> Value {
    let (_, key) = linkd::service_accounts::create(
        &*app.store,
        client,
        name,
        &app.issuer,
        scope_base,
        app.clock.now(),
    )
    .await
    .unwrap();
    key
}

/// A device with only the required fields.
fn minimal_device(id: &str) -> Value {
    json!({"id": id, "type": "t", "traits": [], "name": {"name": "n"}})
}

/// Sends a request to the device-graph API of `server`.
async fn send_api(
    server: &TestServer,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Bytes,
) -> https::Reply {
    let mut request = https::request(method, path).header("content-type", "application/json");
    if let Some(token) = bearer {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    https::send(
        server.address,
        https::client_config(&server.cert, https::Offer::Both),
        request.body(Full::new(body)).unwrap(),
    )
    .await
}

fn assert_api_error(reply: &https::Reply, status: u16, canonical: &str, what: &str) {
    assert_eq!(reply.status, status, "{what}: {}", reply.text());
    let body = reply.json();
    assert_eq!(body["error"]["code"], status, "{what}");
    assert_eq!(body["error"]["status"], canonical, "{what}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{what}"
    );
}

/// Link → SYNC to the fulfilment → devices:sync returns every field, the name cut at 60 code
/// points; requestSync repeats the SYNC; state reports and queries; agentUsers.delete.
async fn sync_round_trip(redis: bool) {
    let fixture = fixture(redis).await;
    let token = fixture.service_token(&fixture.acme_key).await;
    let user = fixture.user_id.clone();
    let user_token = fixture.link().await;

    // After a link linkd sends SYNC, as the platform does.
    let synced = eventually(Duration::from_secs(10), "SYNC after linking", || async {
        let reply = fixture
            .call(
                "/v1/devices:sync",
                &token,
                &json!({"requestId": "r-1", "agentUserId": user}),
            )
            .await;
        (reply.status == 200).then(|| reply.json())
    })
    .await;
    assert_eq!(synced["requestId"], "r-1");
    assert_eq!(synced["payload"]["agentUserId"], user.as_str());
    let devices = synced["payload"]["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 2);
    let mut expected = full_device("lamp");
    expected["name"]["name"] = json!("🏠".repeat(60));
    assert_eq!(
        devices[0], expected,
        "every Device field survives the round trip"
    );
    assert_eq!(
        devices[0]["name"]["name"].as_str().unwrap().chars().count(),
        60
    );

    // The fulfilment got SYNC with an access token for the linked user.
    let (fulfilment_token, body) = {
        let log = fixture.fulfillment.log.lock().unwrap();
        (log.tokens[0].clone(), log.bodies[0].clone())
    };
    assert_eq!(body["inputs"][0]["intent"], "action.devices.SYNC");
    assert!(body["requestId"].as_str().is_some_and(|id| !id.is_empty()));
    let userinfo = fixture
        .send("GET", "/userinfo", Some(&fulfilment_token), Bytes::new())
        .await;
    assert_eq!(userinfo.status, 200, "{}", userinfo.text());
    assert_eq!(userinfo.json()["sub"], user.as_str());

    // requestSync, waiting: one more call to the fulfilment.
    let synced_ok = "linkd_fulfillment_calls_total{intent=\"sync\",outcome=\"ok\"}";
    let synced_before = metric(synced_ok);
    let before = fixture.fulfillment.calls();
    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": user}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), json!({}));
    assert_eq!(fixture.fulfillment.calls(), before + 1);
    assert!(metric(synced_ok) >= synced_before + 1.0);
    // async: answers at once; the call still happens.
    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": user, "async": true}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    eventually(Duration::from_secs(10), "async requestSync", || async {
        (fixture.fulfillment.calls() == before + 2).then_some(())
    })
    .await;
    // A failing fulfilment is reported, and the devices stay as they were.
    fixture.fulfillment.log.lock().unwrap().failing = true;
    let before_failure = fixture.fulfillment.calls();
    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": user}),
        )
        .await;
    assert_api_error(&reply, 503, "UNAVAILABLE", "failing fulfilment");
    assert_eq!(
        fixture.fulfillment.calls(),
        before_failure + 3,
        "a 5xx is retried, a bounded number of times"
    );
    assert!(
        reply.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("HTTP 500")
    );
    fixture.fulfillment.log.lock().unwrap().failing = false;
    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": "nobody"}),
        )
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "requestSync for an unknown user");

    // Report state, then query it; reports merge attribute by attribute.
    let report = json!({"requestId": "rs-1", "agentUserId": user, "payload": {"devices": {
        "states": {"lamp": {"on": true, "brightness": 40}},
        "notifications": {"plug": {"ObjectDetection": {"priority": 0}}},
    }}});
    let reply = fixture
        .call("/v1/devices:reportStateAndNotification", &token, &report)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), json!({"requestId": "rs-1"}));
    let update = json!({"agentUserId": user, "payload": {"devices": {"states": {"lamp": {"brightness": 80}}}}});
    let reply = fixture
        .call("/v1/devices:reportStateAndNotification", &token, &update)
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let query = json!({"requestId": "q-1", "agentUserId": user,
        "inputs": [{"payload": {"devices": [{"id": "lamp"}, {"id": "plug"}]}}]});
    let reply = fixture.call("/v1/devices:query", &token, &query).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.json(),
        json!({"requestId": "q-1", "payload": {"devices": {
            "lamp": {"on": true, "brightness": 80},
            "plug": {},
        }}})
    );
    let unknown_device =
        json!({"agentUserId": user, "payload": {"devices": {"states": {"ghost": {"on": true}}}}});
    let reply = fixture
        .call(
            "/v1/devices:reportStateAndNotification",
            &token,
            &unknown_device,
        )
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "state of an unknown device");
    let reply = fixture
        .call(
            "/v1/devices:query",
            &token,
            &json!({"agentUserId": user,
            "inputs": [{"payload": {"devices": [{"id": "ghost"}]}}]}),
        )
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "query of an unknown device");

    // Isolation: another project's account sees none of this project's users.
    let other = fixture.service_token(&fixture.other_key).await;
    for (path, body) in [
        ("/v1/devices:sync", json!({"agentUserId": user})),
        ("/v1/devices:query", query.clone()),
        ("/v1/devices:reportStateAndNotification", report.clone()),
    ] {
        let reply = fixture.call(path, &other, &body).await;
        assert_api_error(&reply, 404, "NOT_FOUND", path);
    }
    let reply = fixture
        .send(
            "DELETE",
            &format!("/v1/agentUsers/{user}"),
            Some(&other),
            Bytes::new(),
        )
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "delete from another project");

    // A user's linking token is not a service account's.
    let reply = fixture
        .call(
            "/v1/devices:sync",
            &user_token,
            &json!({"agentUserId": user}),
        )
        .await;
    assert_api_error(&reply, 403, "PERMISSION_DENIED", "a user's linking token");
    // Nor is a service account's token a user's: /userinfo refuses it by its audience.
    let userinfo = fixture
        .send("GET", "/userinfo", Some(&token), Bytes::new())
        .await;
    assert_eq!(userinfo.status, 401, "{}", userinfo.text());
    assert!(
        userinfo
            .header("www-authenticate")
            .unwrap()
            .contains("the access token is not for this endpoint")
    );

    // agentUsers.delete forgets the user, devices and states.
    let reply = fixture
        .send(
            "DELETE",
            &format!("/v1/agentUsers/{user}"),
            Some(&token),
            Bytes::new(),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json(), json!({}));
    let reply = fixture
        .call("/v1/devices:sync", &token, &json!({"agentUserId": user}))
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "sync after delete");
    assert!(
        fixture
            .app()
            .store
            .get_device_states("acme-project", &user)
            .await
            .unwrap()
            .is_empty()
    );
}

/// Every refusal of the API and of the JWT-bearer grant, each with its precise error.
async fn errors(redis: bool) {
    let mut fixture = fixture(redis).await;
    let token = fixture.service_token(&fixture.acme_key).await;
    let sync = "/v1/devices:sync";

    let reply = fixture.send("POST", sync, None, Bytes::from("{}")).await;
    assert_api_error(&reply, 401, "UNAUTHENTICATED", "no token");
    assert!(
        reply
            .header("www-authenticate")
            .unwrap()
            .starts_with("Bearer")
    );
    let reply = fixture
        .send("POST", sync, Some("not.a.jwt"), Bytes::from("{}"))
        .await;
    assert_api_error(&reply, 401, "UNAUTHENTICATED", "garbage token");
    assert!(reply.header("www-authenticate").is_some());

    for (body, what) in [
        ("{not json", "malformed JSON"),
        ("[]", "not an object"),
        ("{}", "missing agentUserId"),
        (r#"{"agentUserId": 7}"#, "agentUserId of the wrong type"),
        (
            r#"{"agentUserId": "u", "requestId": []}"#,
            "requestId of the wrong type",
        ),
    ] {
        let reply = fixture
            .send("POST", sync, Some(&token), Bytes::from(body))
            .await;
        assert_api_error(&reply, 400, "INVALID_ARGUMENT", what);
    }
    // A body not declared JSON is refused before it is read, even a JSON one.
    for content_type in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/json; charset=latin1"),
        None,
    ] {
        let mut request =
            https::request("POST", sync).header("authorization", format!("Bearer {token}"));
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let reply = https::send(
            fixture.server.address,
            https::client_config(&fixture.server.cert, https::Offer::Both),
            request
                .body(Full::new(Bytes::from(r#"{"agentUserId": "nobody"}"#)))
                .unwrap(),
        )
        .await;
        assert_api_error(
            &reply,
            415,
            "INVALID_ARGUMENT",
            &format!("{content_type:?}"),
        );
    }
    let reply = https::send(
        fixture.server.address,
        https::client_config(&fixture.server.cert, https::Offer::Both),
        https::request("POST", sync)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "Application/JSON; charset=\"utf-8\"")
            .body(Full::new(Bytes::from(r#"{"agentUserId": "nobody"}"#)))
            .unwrap(),
    )
    .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "JSON with its charset");

    let oversized = format!(r#"{{"agentUserId": "{}"}}"#, "x".repeat(70 * 1024));
    let reply = fixture
        .send("POST", sync, Some(&token), Bytes::from(oversized))
        .await;
    assert_api_error(&reply, 400, "INVALID_ARGUMENT", "oversized body");
    let reply = fixture
        .call(sync, &token, &json!({"agentUserId": "nobody"}))
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "unknown agentUserId");
    for (path, body, what) in [
        (
            "/v1/devices:requestSync",
            json!({"agentUserId": "u", "async": "yes"}),
            "async not a boolean",
        ),
        (
            "/v1/devices:reportStateAndNotification",
            json!({"agentUserId": "u"}),
            "no payload",
        ),
        (
            "/v1/devices:reportStateAndNotification",
            json!({"agentUserId": "u", "payload": {"devices": {"states": {"lamp": 1}}}}),
            "state not an object",
        ),
        (
            "/v1/devices:query",
            json!({"agentUserId": "u"}),
            "no inputs",
        ),
        (
            "/v1/devices:query",
            json!({"agentUserId": "u", "inputs": [{"payload": {"devices": [{}]}}]}),
            "no device id",
        ),
    ] {
        let reply = fixture.call(path, &token, &body).await;
        assert_api_error(&reply, 400, "INVALID_ARGUMENT", what);
    }

    // A self-signed JWT for the API works in place of an access token; with the wrong
    // audience it does not.
    fixture
        .app()
        .store
        .put_devices("acme-project", "u1", &[minimal_device("d")])
        .await
        .unwrap();
    let now = fixture.app().clock.now();
    let issuer = fixture.app().issuer.clone();
    let scope = fixture.scope();
    let self_signed = sign_assertion(&fixture.acme_key, &issuer, Some(&scope), now, now + 3600);
    let reply = fixture
        .call(sync, &self_signed, &json!({"agentUserId": "u1"}))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let wrong_audience = sign_assertion(
        &fixture.acme_key,
        "https://elsewhere.example",
        Some(&scope),
        now,
        now + 3600,
    );
    let reply = fixture
        .call(sync, &wrong_audience, &json!({"agentUserId": "u1"}))
        .await;
    assert_api_error(
        &reply,
        401,
        "UNAUTHENTICATED",
        "self-signed JWT for another audience",
    );

    // AIP-4111, as client libraries send it with `always_use_jwt_access`: no `aud`, the
    // scope in a `scope` claim binds the JWT to this API.
    let email = fixture.acme_key["client_email"].clone();
    let self_signed_with = |claims: Value| sign_jwt(&fixture.acme_key, true, &claims);
    let scoped = self_signed_with(json!({
        "iss": email, "sub": email, "scope": scope, "iat": now, "exp": now + 3600,
    }));
    let reply = fixture
        .call(sync, &scoped, &json!({"agentUserId": "u1"}))
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let other_scopes = format!("https://www.googleapis.com/auth/homegraph {issuer}/auth/admin");
    for (claims, status, canonical, what) in [
        (
            json!({"iss": email, "sub": email, "scope": other_scopes, "iat": now,
                "exp": now + 3600}),
            403,
            "PERMISSION_DENIED",
            "a scope claim without the device-graph scope",
        ),
        (
            json!({"iss": email, "sub": email, "aud": issuer, "scope": other_scopes,
                "iat": now, "exp": now + 3600}),
            403,
            "PERMISSION_DENIED",
            "the right audience but a scope claim without the device-graph scope",
        ),
        (
            json!({"iss": email, "sub": email, "iat": now, "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "neither aud nor scope",
        ),
        (
            json!({"iss": email, "sub": email, "scope": [scope], "iat": now,
                "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "a scope claim that is not a string",
        ),
        (
            json!({"iss": email, "scope": scope, "iat": now, "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "no sub",
        ),
        (
            json!({"iss": email, "sub": "someone@else.example", "scope": scope, "iat": now,
                "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "sub another principal",
        ),
        (
            json!({"iss": email, "sub": email, "scope": scope, "iat": now,
                "exp": now + 7200}),
            401,
            "UNAUTHENTICATED",
            "longer than an hour",
        ),
        (
            json!({"iss": email, "sub": email, "scope": scope, "iat": now - 7200,
                "exp": now - 3600}),
            401,
            "UNAUTHENTICATED",
            "expired",
        ),
        (
            json!({"iss": email, "sub": email, "aud": token_uri_of(&fixture.acme_key),
                "scope": scope, "iat": now, "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "a token-endpoint assertion presented to the API",
        ),
        (
            json!({"iss": email, "sub": email, "aud": WELL_KNOWN_TOKEN_AUDIENCE,
                "scope": scope, "iat": now, "exp": now + 3600}),
            401,
            "UNAUTHENTICATED",
            "a library's token-endpoint assertion presented to the API",
        ),
    ] {
        let reply = fixture
            .call(
                sync,
                &self_signed_with(claims),
                &json!({"agentUserId": "u1"}),
            )
            .await;
        assert_api_error(&reply, status, canonical, what);
    }
    let mut forged_key = fixture.acme_key.clone();
    forged_key["private_key"] = fixture.other_key["private_key"].clone();
    let forged = sign_jwt(
        &forged_key,
        true,
        &json!({"iss": email, "sub": email, "scope": scope, "iat": now, "exp": now + 3600}),
    );
    let reply = fixture
        .call(sync, &forged, &json!({"agentUserId": "u1"}))
        .await;
    assert_api_error(&reply, 401, "UNAUTHENTICATED", "scoped JWT, wrong key");

    // The JWT-bearer grant: the audience client libraries hard-code is accepted besides
    // linkd's own token URL, and so is an assertion without a kid (found by its iss).
    for (assertion, what) in [
        (
            sign_assertion(
                &fixture.acme_key,
                WELL_KNOWN_TOKEN_AUDIENCE,
                Some(&scope),
                now,
                now + 3600,
            ),
            "the libraries' audience",
        ),
        (
            sign_jwt(
                &fixture.acme_key,
                false,
                &json!({"iss": email, "aud": WELL_KNOWN_TOKEN_AUDIENCE, "scope": scope,
                    "iat": now, "exp": now + 3600}),
            ),
            "no kid and no sub",
        ),
    ] {
        let reply = fixture
            .post_form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ])
            .await;
        assert_eq!(reply.status, 200, "{what}: {}", reply.text());
        let access_token = reply.json()["access_token"].as_str().unwrap().to_owned();
        let reply = fixture
            .call(sync, &access_token, &json!({"agentUserId": "u1"}))
            .await;
        assert_eq!(reply.status, 200, "{what}: {}", reply.text());
    }

    // The JWT-bearer grant: every bad assertion is refused with its RFC 6749 §5.2 code.
    let token_uri = token_uri_of(&fixture.acme_key);
    let cases = [
        (
            sign_assertion(
                &fixture.acme_key,
                &token_uri,
                Some(&scope),
                now - 7200,
                now - 3600,
            ),
            "invalid_grant",
            "expired",
        ),
        (
            sign_assertion(&fixture.acme_key, &token_uri, Some(&scope), now, now + 7200),
            "invalid_grant",
            "longer than an hour",
        ),
        (
            sign_assertion(
                &fixture.acme_key,
                "https://elsewhere.example/token",
                Some(&scope),
                now,
                now + 3600,
            ),
            "invalid_grant",
            "wrong audience",
        ),
        (
            sign_assertion(
                &fixture.acme_key,
                "https://evil.example/token",
                Some(&scope),
                now,
                now + 3600,
            ),
            "invalid_grant",
            "a foreign token endpoint's audience",
        ),
        (
            sign_assertion(
                &fixture.acme_key,
                "https://oauth2.googleapis.com/token/extra",
                Some(&scope),
                now,
                now + 3600,
            ),
            "invalid_grant",
            "a longer URL than the libraries' audience",
        ),
        (
            sign_jwt(
                &fixture.acme_key,
                true,
                &json!({"iss": email, "scope": scope, "iat": now, "exp": now + 3600}),
            ),
            "invalid_grant",
            "no audience",
        ),
        (
            sign_assertion(&forged_key, &token_uri, Some(&scope), now, now + 3600),
            "invalid_grant",
            "wrong key",
        ),
        (
            sign_jwt(
                &forged_key,
                false,
                &json!({"iss": email, "aud": WELL_KNOWN_TOKEN_AUDIENCE, "scope": scope,
                    "iat": now, "exp": now + 3600}),
            ),
            "invalid_grant",
            "no kid, wrong key",
        ),
        (
            sign_jwt(
                &fixture.acme_key,
                false,
                &json!({"iss": "nobody@acme-project.serviceaccount.linkd",
                    "aud": WELL_KNOWN_TOKEN_AUDIENCE, "scope": scope, "iat": now,
                    "exp": now + 3600}),
            ),
            "invalid_grant",
            "no kid, unknown account",
        ),
        (
            sign_jwt(
                &fixture.acme_key,
                true,
                &json!({"iss": email, "sub": "someone@else.example", "aud": token_uri,
                    "scope": scope, "iat": now, "exp": now + 3600}),
            ),
            "invalid_grant",
            "sub another principal",
        ),
        (
            sign_assertion(
                &fixture.acme_key,
                &token_uri,
                Some("https://elsewhere.example/auth/admin"),
                now,
                now + 3600,
            ),
            "invalid_scope",
            "scope not allowed",
        ),
        ("garbage".to_owned(), "invalid_grant", "not a JWT"),
    ];
    for (assertion, code, what) in cases {
        let reply = fixture
            .post_form(&[
                ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                ("assertion", &assertion),
            ])
            .await;
        assert_eq!(reply.status, 400, "{what}: {}", reply.text());
        assert_eq!(reply.json()["error"], code, "{what}");
        assert!(
            reply.json()["error_description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{what}"
        );
    }

    // A token of a removed service account stops working.
    let email = email.as_str().unwrap().to_owned();
    fixture
        .app()
        .store
        .remove_service_account(&email)
        .await
        .unwrap();
    let reply = fixture
        .call(sync, &token, &json!({"agentUserId": "u1"}))
        .await;
    assert_api_error(&reply, 403, "PERMISSION_DENIED", "removed service account");

    // The store down: 503 UNAVAILABLE, never a misleading 4xx.
    if let Some(mut redis) = fixture.redis.take() {
        redis.stop();
        let reply = fixture
            .call(sync, &self_signed, &json!({"agentUserId": "u1"}))
            .await;
        assert_api_error(&reply, 503, "UNAVAILABLE", "Redis down");
        redis.restart();
        fixture.redis = Some(redis);
    }
}

/// A fulfilment that answers SYNC with an agent user id of its own, not linkd's user id, as
/// integrators often do: the devices live under that id, requestSync for it reaches the
/// fulfilment with the linked user's token, and pressing Unlink forgets that id.
async fn fulfilment_chosen_agent_user_ids(redis: bool) {
    let fixture = fixture(redis).await;
    let app = fixture.app();
    let agent = "acme-household-7";
    let fulfillment = Fulfillment::start(agent.to_owned(), json!([minimal_device("d")])).await;
    let mut acme = app.store.get_client("acme").await.unwrap().unwrap();
    acme.settings.fulfillment_url = Some(fulfillment.url.clone());
    assert!(app.store.update_client(&acme).await.unwrap());
    let token = fixture.service_token(&fixture.acme_key).await;
    let sync = |agent_user_id: String| {
        let token = token.clone();
        let fixture = &fixture;
        async move {
            fixture
                .call(
                    "/v1/devices:sync",
                    &token,
                    &json!({"agentUserId": agent_user_id}),
                )
                .await
        }
    };

    let cookies = link_ada_over_http(&fixture.server).await;
    eventually(Duration::from_secs(10), "SYNC after linking", || async {
        (sync(agent.to_owned()).await.status == 200).then_some(())
    })
    .await;
    assert_api_error(
        &sync(fixture.user_id.clone()).await,
        404,
        "NOT_FOUND",
        "nothing is stored under linkd's user id",
    );

    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": agent}),
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(fulfillment.calls(), 2);
    let request_sync_token = fulfillment.log.lock().unwrap().tokens[1].clone();
    let userinfo = fixture
        .send("GET", "/userinfo", Some(&request_sync_token), Bytes::new())
        .await;
    assert_eq!(userinfo.status, 200, "{}", userinfo.text());
    assert_eq!(
        userinfo.json()["sub"],
        fixture.user_id.as_str(),
        "requestSync for the fulfilment's id carries the token of the user it answered for"
    );

    let target = fixture.server.target();
    let unlinked = flow::unlink_over_http(&target, &cookies).await;
    assert_eq!(unlinked.status, 303, "{}", unlinked.text());
    eventually(
        Duration::from_secs(20),
        "Unlink forgets the fulfilment's id",
        || async { (sync(agent.to_owned()).await.status == 404).then_some(()) },
    )
    .await;
    let reply = fixture
        .call(
            "/v1/devices:requestSync",
            &token,
            &json!({"agentUserId": agent}),
        )
        .await;
    assert_api_error(&reply, 404, "NOT_FOUND", "requestSync after the unlink");
}

/// A stranger's request is answered from its head: linkd does not wait for (or hold) a body
/// it would only throw away.
#[tokio::test]
async fn unauthenticated_api_requests_are_refused_before_their_body_arrives() {
    let server = TestServer::start(|settings| {
        settings.limits.request_timeout = Duration::from_secs(60);
    })
    .await;
    for (offer, bearer) in [
        (https::Offer::Both, None),
        (https::Offer::Http1, None),
        (https::Offer::Both, Some("not.a.jwt")),
    ] {
        let tls =
            https::connect_tls(server.address, https::client_config(&server.cert, offer)).await;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        // The body is announced in full and never sent: only the head reaches linkd.
        let body = https::StalledBody(None);
        let mut request = https::request("POST", "/v1/devices:sync")
            .header("content-type", "application/json")
            .header("content-length", "60000");
        if let Some(bearer) = bearer {
            request = request.header("authorization", format!("Bearer {bearer}"));
        }
        let mut request = request.body(body).unwrap();
        let io = TokioIo::new(tls);
        let answer = async {
            if h2 {
                let (mut sender, connection) =
                    hyper::client::conn::http2::handshake(hyper_util::rt::TokioExecutor::new(), io)
                        .await
                        .unwrap();
                tokio::spawn(connection);
                sender.send_request(request).await.unwrap()
            } else {
                *request.uri_mut() = "/v1/devices:sync".parse().unwrap();
                request
                    .headers_mut()
                    .insert(hyper::header::HOST, "localhost".parse().unwrap());
                let (mut sender, connection) =
                    hyper::client::conn::http1::handshake(io).await.unwrap();
                tokio::spawn(connection);
                sender.send_request(request).await.unwrap()
            }
        };
        let response = tokio::time::timeout(Duration::from_secs(5), answer)
            .await
            .unwrap_or_else(|_| {
                panic!("{offer:?}, {bearer:?}: linkd waited for the body of a stranger")
            });
        assert_eq!(response.status(), 401, "{offer:?}, {bearer:?}");
        assert!(response.headers().contains_key("www-authenticate"));
        if !h2 {
            // The unread body ends the connection: the client must know before it sends a
            // retry into it.
            assert_eq!(
                response.headers().get("connection").map(|v| v.as_bytes()),
                Some(&b"close"[..]),
                "{offer:?}, {bearer:?}"
            );
        }
    }
}

/// requestSync mints no token for a revoked grant: with the user's only link revoked (what an
/// interrupted Unlink or a replayed code leaves until the account page finishes it), the user
/// is not linked — 404 NOT_FOUND, and the fulfilment is not called, synchronously or not.
async fn request_sync_refuses_a_revoked_grant(redis: bool) {
    let fixture = fixture(redis).await;
    let app = fixture.app();
    fixture.link().await;
    eventually(Duration::from_secs(10), "SYNC after linking", || async {
        (fixture.fulfillment.calls() == 1).then_some(())
    })
    .await;
    let token = fixture.service_token(&fixture.acme_key).await;
    let grant_id = app.store.list_links(&fixture.user_id).await.unwrap()[0]
        .grant_id
        .clone();
    app.revoke_grant(&grant_id).await.unwrap();
    for body in [
        json!({"agentUserId": fixture.user_id}),
        json!({"agentUserId": fixture.user_id, "async": true}),
    ] {
        let reply = fixture.call("/v1/devices:requestSync", &token, &body).await;
        assert_api_error(&reply, 404, "NOT_FOUND", "requestSync for a revoked grant");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        fixture.fulfillment.calls(),
        1,
        "a token was minted for a revoked grant"
    );
}

on_both_stores!(
    sync_round_trip,
    errors,
    fulfilment_chosen_agent_user_ids,
    request_sync_refuses_a_revoked_grant
);

/// Runs the linkd binary on the store at `store`; returns (exit code, stdout, stderr).
fn linkd_cli(store: &std::path::Path, args: &[&str]) -> (i32, String, String) {
    let output = cli::run(store, args, None);
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The operator's path end to end: `service-accounts create` writes a key file, `devices
/// import` loads devices (refusing a bad file without change), and Google's client
/// libraries as released (Python and Node, pinned in `tests/interop/`), which nobody here
/// wrote, read the key file unchanged and call devices.sync through their Home Graph
/// clients pointed at linkd, with a token from linkd and with JWTs they sign themselves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_standard_client_library_uses_the_key_file_unchanged() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("linkd.db");
    let mut settings = settings_in(dir.path());
    settings.store = store.display().to_string();
    let server = TestServer::start_with(settings).await;
    let app = server.server.app();
    provision::acme(app, None, None, ClientSettings::default()).await;
    let issuer = app.issuer.clone();

    let key_path = dir.path().join("acme-graph.json");
    let key_arg = key_path.display().to_string();
    let (code, _, stderr) = linkd_cli(
        &store,
        &[
            "service-accounts",
            "create",
            "--client",
            "acme",
            "--out",
            &key_arg,
            "--issuer",
            &issuer,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let mode = std::fs::metadata(&key_path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the key file holds a private key");
    let key: Value = serde_json::from_str(&std::fs::read_to_string(&key_path).unwrap()).unwrap();
    assert_eq!(key["type"], "service_account");
    assert_eq!(key["project_id"], "acme-project");
    assert_eq!(key["token_uri"], format!("{issuer}/token"));
    assert!(
        key["private_key"]
            .as_str()
            .unwrap()
            .starts_with("-----BEGIN PRIVATE KEY-----")
    );
    for field in ["private_key_id", "client_email", "client_id", "auth_uri"] {
        assert!(
            key[field].as_str().is_some_and(|v| !v.is_empty()),
            "{field}"
        );
    }
    let (code, _, stderr) = linkd_cli(
        &store,
        &[
            "service-accounts",
            "create",
            "--client",
            "acme",
            "--out",
            &key_arg,
            "--issuer",
            &issuer,
        ],
    );
    assert_eq!(code, 2, "an existing key file is never replaced: {stderr}");

    // A bad file names the wrong field and changes nothing.
    let bad = dir.path().join("bad.json");
    let mut broken = full_device("lamp");
    broken["deviceInfo"]["model"] = json!(3000);
    std::fs::write(&bad, json!({"payload": {"devices": [broken]}}).to_string()).unwrap();
    let bad_arg = bad.display().to_string();
    let import = |file: &str| {
        linkd_cli(
            &store,
            &[
                "devices",
                "import",
                "--client",
                "acme",
                "--agent-user-id",
                "user-7",
                "--file",
                file,
            ],
        )
    };
    let (code, _, stderr) = import(&bad_arg);
    assert_eq!(code, 2);
    assert!(stderr.contains("devices[0].deviceInfo.model"), "{stderr}");
    assert!(
        app.store
            .get_devices("acme-project", "user-7")
            .await
            .unwrap()
            .is_none()
    );
    let good = dir.path().join("good.json");
    std::fs::write(&good, json!({"devices": [full_device("lamp")]}).to_string()).unwrap();
    let (code, stdout, stderr) = import(&good.display().to_string());
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("imported 1 device"), "{stdout}");

    // Google's Python and Node libraries, both ways each: the JWT-bearer grant (their
    // assertions carry the audience they hard-code, the Node one no kid) and a JWT they sign
    // themselves with a scope claim instead of an audience (AIP-4111).
    let scope = format!("{issuer}/auth/devicegraph");
    let email = key["client_email"].as_str().unwrap().to_owned();
    let client = |library: Library, mode: &'static str, key_file: std::path::PathBuf| {
        library.run(mode, key_file, &issuer, &scope, "user-7", &server.cert)
    };
    for library in [Library::Python, Library::Node] {
        for mode in ["grant", "self-signed"] {
            let what = format!("{library:?} {mode}");
            let output = client(library, mode, key_path.clone()).await;
            assert!(
                output.status.success(),
                "{what}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let report: Value = serde_json::from_slice(&output.stdout).unwrap();
            let answer = &report["response"];
            assert_eq!(answer["requestId"], "interop-1", "{what}");
            assert_eq!(answer["payload"]["agentUserId"], "user-7", "{what}");
            assert_eq!(answer["payload"]["devices"][0]["id"], "lamp", "{what}");
            assert_eq!(
                answer["payload"]["devices"][0]["name"]["name"]
                    .as_str()
                    .unwrap()
                    .chars()
                    .count(),
                60,
                "{what}"
            );
            let bearer = &report["bearer_claims"];
            if mode == "grant" {
                let assertion = &report["assertion_claims"];
                assert_eq!(assertion["aud"], WELL_KNOWN_TOKEN_AUDIENCE, "{what}");
                assert_eq!(assertion["iss"], email.as_str(), "{what}");
                assert_eq!(assertion["scope"], scope.as_str(), "{what}");
                if library == Library::Node {
                    assert!(report["assertion_header"]["kid"].is_null(), "{what}");
                }
                assert_eq!(bearer["iss"], issuer.as_str(), "{what}: linkd's token");
                assert_eq!(bearer["aud"], format!("{issuer}/v1"), "{what}");
            } else {
                assert_eq!(bearer["iss"], email.as_str(), "{what}: a self-signed JWT");
                assert_eq!(bearer["sub"], email.as_str(), "{what}");
                assert!(bearer["aud"].is_null(), "{what}: {bearer}");
                assert_eq!(bearer["scope"], scope.as_str(), "{what}");
            }
        }
    }

    // Rotation: a second key works beside the first; list shows accounts, never keys;
    // remove stops every key at once.
    let email = key["client_email"].as_str().unwrap().to_owned();
    let second_path = dir.path().join("acme-graph-2.json");
    let second_arg = second_path.display().to_string();
    let (code, _, stderr) = linkd_cli(
        &store,
        &[
            "service-accounts",
            "add-key",
            &email,
            "--out",
            &second_arg,
            "--issuer",
            &issuer,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let second: Value =
        serde_json::from_str(&std::fs::read_to_string(&second_path).unwrap()).unwrap();
    assert_ne!(second["private_key_id"], key["private_key_id"]);
    for (library, mode, key_file) in [
        (Library::Python, "grant", &key_path),
        (Library::Python, "grant", &second_path),
        (Library::Node, "self-signed", &second_path),
    ] {
        let output = client(library, mode, key_file.clone()).await;
        assert!(
            output.status.success(),
            "{library:?} {mode}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let (code, listing, _) = linkd_cli(&store, &["service-accounts", "list"]);
    assert_eq!(code, 0);
    assert!(listing.contains(&email), "{listing}");
    assert!(!listing.contains("PRIVATE KEY"), "{listing}");
    let (code, _, _) = linkd_cli(&store, &["service-accounts", "remove", &email]);
    assert_eq!(code, 2, "removal needs --yes");
    let (code, _, stderr) = linkd_cli(&store, &["service-accounts", "remove", &email, "--yes"]);
    assert_eq!(code, 0, "{stderr}");
    for (library, mode, key_file, refusal) in [
        (Library::Python, "grant", &key_path, "invalid_grant"),
        (Library::Node, "grant", &second_path, "invalid_grant"),
        (Library::Python, "self-signed", &key_path, "401"),
        (Library::Node, "self-signed", &second_path, "401"),
    ] {
        let output = client(library, mode, key_file.clone()).await;
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "{library:?} {mode}: a removed account's keys stop working"
        );
        assert!(stderr.contains(refusal), "{library:?} {mode}: {stderr}");
    }
}

/// A client library of the interop tests, installed by `./scripts/test` at the versions
/// pinned in `tests/interop/` (PyPI into a venv, npm into `tests/interop/node_modules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    /// google-auth with google-api-python-client's Home Graph client.
    Python,
    /// google-auth-library with the googleapis Home Graph client.
    Node,
}

impl Library {
    /// Runs `tests/interop/devicegraph_client.{py,js}` in `mode` against linkd.
    async fn run(
        self,
        mode: &str,
        key_file: std::path::PathBuf,
        api_base: &str,
        scope: &str,
        agent_user_id: &str,
        ca: &std::path::Path,
    ) -> std::process::Output {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop");
        let mut command = match self {
            Self::Python => {
                let python = std::env::var("LINKD_INTEROP_PYTHON").unwrap_or_else(|_| {
                    concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/target/interop-venv/bin/python"
                    )
                    .to_owned()
                });
                let mut command = tokio::process::Command::new(python);
                command
                    .arg(format!("{dir}/devicegraph_client.py"))
                    .env("HTTPLIB2_CA_CERTS", ca);
                command
            }
            Self::Node => {
                let mut command = tokio::process::Command::new("node");
                command
                    .arg(format!("{dir}/devicegraph_client.js"))
                    .env("NODE_EXTRA_CA_CERTS", ca);
                command
            }
        };
        command
            .args([
                mode,
                &key_file.display().to_string(),
                api_base,
                scope,
                agent_user_id,
            ])
            .output()
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "{self:?} interop client: {error}; run ./scripts/test, which installs the \
                     pinned libraries"
                )
            })
    }
}

/// `docs/devicegraph.openapi.json` describes exactly the device-graph routes linkd serves,
/// and its Device schema exactly the fields linkd stores and returns.
#[test]
fn the_openapi_document_matches_the_routes_and_the_device_fields() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/devicegraph.openapi.json"
    ))
    .unwrap();
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, operations) in document["paths"].as_object().unwrap() {
        for method in operations.as_object().unwrap().keys() {
            documented.push((method.to_uppercase(), path.clone()));
        }
    }
    let mut served: Vec<(String, String)> = Vec::new();
    for route in linkd::web::routes::ROUTES
        .iter()
        .filter(|route| route.path.starts_with("/v1/"))
    {
        // The one prefix route carries the agent user id in the rest of the path.
        let path = if route.path.ends_with('/') {
            format!("{}{{agentUserId}}", route.path)
        } else {
            route.path.to_owned()
        };
        for method in route.methods {
            served.push((method.to_string(), path.clone()));
        }
    }
    documented.sort();
    served.sort();
    assert_eq!(documented, served);

    let device = &document["components"]["schemas"]["Device"];
    let mut properties: Vec<&String> = device["properties"].as_object().unwrap().keys().collect();
    let full = full_device("lamp");
    let mut fields: Vec<&String> = full.as_object().unwrap().keys().collect();
    properties.sort();
    fields.sort();
    assert_eq!(
        properties, fields,
        "the Device schema lists every Device field"
    );
    assert_eq!(device["required"], json!(["id", "type", "traits", "name"]));
    // Every schema reference resolves.
    for reference in text.split("\"$ref\": \"#/").skip(1) {
        let pointer = format!("/{}", &reference[..reference.find('"').unwrap()]);
        assert!(document.pointer(&pointer).is_some(), "{pointer}");
    }
}

/// With `--device-graph-scope-base` and `--device-graph-base-url`, the scope and the audience
/// of self-signed JWTs follow the configuration, and the metadata lists that scope.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scope_base_and_the_api_base_url_are_configurable() {
    let server = TestServer::start(|settings| {
        settings.oauth.devicegraph_scope_base = Some("https://scopes.acme.example".to_owned());
        settings.oauth.devicegraph_base_url = Some("https://graph.acme.example".to_owned());
    })
    .await;
    let app = server.server.app();
    provision::acme(app, None, None, ClientSettings::default()).await;
    let key = service_account(app, "acme", "graph", "https://scopes.acme.example").await;
    let now = app.clock.now();
    app.store
        .put_devices("acme-project", "u1", &[minimal_device("d")])
        .await
        .unwrap();
    let scope = "https://scopes.acme.example/auth/devicegraph";
    let metadata = https::get(
        server.address,
        &server.cert,
        "/.well-known/oauth-authorization-server",
    )
    .await
    .json();
    assert!(
        metadata["scopes_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(scope)),
        "{metadata}"
    );
    let sign = |audience: &str| sign_assertion(&key, audience, Some(scope), now, now + 600);
    let call = |token: String| {
        let server = &server;
        async move {
            send_api(
                server,
                "POST",
                "/v1/devices:sync",
                Some(&token),
                Bytes::from(r#"{"agentUserId": "u1"}"#),
            )
            .await
        }
    };
    let reply = call(sign("https://graph.acme.example")).await;
    assert_eq!(reply.status, 200, "{}", reply.text());
    let reply = call(sign(&app.issuer)).await;
    assert_eq!(
        reply.status, 401,
        "the issuer is no longer the API's audience"
    );
}

/// With `--assertion-audiences`, JWT-bearer assertions may carry the configured audiences
/// and linkd's own token URL, and no longer the well-known default.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_accepted_assertion_audiences_are_configurable() {
    let server = TestServer::start(|settings| {
        settings.oauth.assertion_audiences = vec!["https://sts.acme.example/token".to_owned()];
    })
    .await;
    let app = server.server.app();
    provision::acme(app, None, None, ClientSettings::default()).await;
    let key = service_account(app, "acme", "graph", &app.issuer).await;
    let scope = app.devicegraph_scope();
    let now = app.clock.now();
    for (audience, status) in [
        (token_uri_of(&key), 200),
        ("https://sts.acme.example/token/".to_owned(), 200),
        (WELL_KNOWN_TOKEN_AUDIENCE.to_owned(), 400),
    ] {
        let assertion = sign_assertion(&key, &audience, Some(&scope), now, now + 600);
        let reply = https::send(
            server.address,
            https::client_config(&server.cert, https::Offer::Both),
            https::request("POST", "/token")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Full::new(Bytes::from(
                    serde_urlencoded::to_string([
                        ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
                        ("assertion", assertion.as_str()),
                    ])
                    .unwrap(),
                )))
                .unwrap(),
        )
        .await;
        assert_eq!(reply.status, status, "{audience}: {}", reply.text());
        if status == 400 {
            assert_eq!(reply.json()["error"], "invalid_grant");
            let description = reply.json()["error_description"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(
                description.contains(&token_uri_of(&key))
                    && description.contains("https://sts.acme.example/token"),
                "{description}"
            );
        }
    }
}

/// With `--device-graph-url` and `--device-graph-key-file`, pressing Unlink on the account
/// page is carried out with `agentUsers.delete` on that graph — here a second linkd, over
/// TLS whose certificate is trusted through `--outbound-ca-file` — authenticated by the key
/// file that graph's `service-accounts create` wrote; while that graph is down the event
/// stays queued.
/// Ada signs in, consents to `acme` and the code is redeemed, all over HTTP as the browser
/// and the platform would; returns her session cookie, for the account page.
async fn link_ada_over_http(server: &TestServer) -> String {
    let request = serde_urlencoded::to_string([
        ("response_type", "code"),
        ("client_id", "acme"),
        ("redirect_uri", REDIRECT),
        ("state", "xyz"),
    ])
    .unwrap();
    let (cookies, linked) =
        flow::link_with_session(&server.target(), &request, "ada@example.com", PASSWORD).await;
    let code = flow::redirect_query(&linked)["code"].clone();
    let redeemed = flow::redeem(&server.target(), &code, REDIRECT, ACME_SECRET).await;
    assert_eq!(redeemed.status, 200, "{}", redeemed.text());
    cookies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlinks_reach_an_external_device_graph() {
    use linkd::devicegraph::graph_client::DeviceGraphClient;

    let graph = TestServer::start(|_| {}).await;
    let graph_app = Arc::clone(graph.server.app());
    provision::acme(&graph_app, None, None, ClientSettings::default()).await;
    let key = service_account(&graph_app, "acme", "unlinker", &graph_app.issuer).await;
    let key_dir = tempfile::tempdir().unwrap();
    let key_path = key_dir.path().join("unlinker.json");
    std::fs::write(&key_path, key.to_string()).unwrap();

    let external = Arc::new(DeviceGraphClient::external(&graph_app.issuer, &key_path).unwrap());
    let graph_cert = graph.cert.clone();
    let mut linking = TestServer::start(|settings| {
        settings.external_device_graph = Some(external);
        settings.outbound_roots = linkd::outbound::read_ca_file(&graph_cert).unwrap();
    })
    .await;
    let app = Arc::clone(linking.server.app());
    provision::acme(&app, None, Some(ACME_SECRET), ClientSettings::default()).await;
    let mut users = Vec::new();
    for email in ["ada@example.com", "bob@example.com"] {
        let id = provision::user(&app, email, PASSWORD, linkd::users::Profile::default()).await;
        graph_app
            .store
            .put_devices("acme-project", &id, &[minimal_device("d")])
            .await
            .unwrap();
        users.push(id);
    }
    let graph_devices = |user: &str| {
        let graph_app = Arc::clone(&graph_app);
        let user = user.to_owned();
        async move {
            graph_app
                .store
                .get_devices("acme-project", &user)
                .await
                .unwrap()
        }
    };

    // Ada links, then presses Unlink; the external graph forgets her, not Bob.
    let target = linking.target();
    let cookies = link_ada_over_http(&linking).await;
    let unlinked = flow::unlink_over_http(&target, &cookies).await;
    assert_eq!(unlinked.status, 303, "{}", unlinked.text());
    eventually(
        Duration::from_secs(20),
        "the external graph forgets Ada",
        || {
            let forgotten = graph_devices(&users[0]);
            async move { forgotten.await.is_none().then_some(()) }
        },
    )
    .await;
    assert!(graph_devices(&users[1]).await.is_some());
    assert!(
        app.store
            .pending_unlink_events(10)
            .await
            .unwrap()
            .is_empty()
    );

    // An agent user the graph does not know counts as forgotten.
    let unlinked = |id: &str, user: &str| linkd::store::UnlinkEvent {
        id: id.to_owned(),
        user_id: user.to_owned(),
        client_id: "acme".to_owned(),
        grant_id: linkd::secrets::new_uuid(),
        at: app.clock.now(),
    };
    app.store
        .push_unlink_event(&unlinked("e2", "stranger"))
        .await
        .unwrap();
    let worker = linking.server.unlink_worker();
    let handled = "linkd_unlink_events_total{outcome=\"handled\"}";
    let handled_before = metric(handled);
    assert_eq!(worker.forget_unlinked_users().await.unwrap(), 1);
    assert!(metric(handled) >= handled_before + 1.0);

    // The external graph down: the event waits for a later pass.
    let mut graph = graph;
    graph.begin_shutdown().await.unwrap();
    app.store
        .push_unlink_event(&unlinked("e3", &users[1]))
        .await
        .unwrap();
    let failed = "linkd_unlink_events_total{outcome=\"failed\"}";
    let failed_before = metric(failed);
    assert!(worker.forget_unlinked_users().await.is_err());
    assert!(metric(failed) >= failed_before + 1.0);
    assert_eq!(app.store.pending_unlink_events(10).await.unwrap().len(), 1);
    drop(linking.begin_shutdown());
}

/// Without an external graph, an unlink goes through the same client to linkd's own API,
/// authenticated by a token linkd signs for the integration — which is no credential for
/// another integration's project, and which the token endpoint can never hand out.
#[tokio::test]
async fn unlinks_reach_the_own_graph_through_its_api() {
    let fixture = fixture(false).await;
    let app = fixture.app();
    for (project, user) in [
        ("acme-project", fixture.user_id.as_str()),
        ("other-project", fixture.user_id.as_str()),
    ] {
        app.store
            .put_devices(project, user, &[minimal_device("d")])
            .await
            .unwrap();
    }
    app.store
        .push_unlink_event(&linkd::store::UnlinkEvent {
            id: "e1".to_owned(),
            user_id: fixture.user_id.clone(),
            client_id: "acme".to_owned(),
            grant_id: linkd::secrets::new_uuid(),
            at: app.clock.now(),
        })
        .await
        .unwrap();
    let worker = fixture.server.server.unlink_worker();
    assert_eq!(worker.forget_unlinked_users().await.unwrap(), 1);
    assert!(
        app.store
            .get_devices("acme-project", &fixture.user_id)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        app.store
            .get_devices("other-project", &fixture.user_id)
            .await
            .unwrap()
            .is_some(),
        "only the unlinked integration's project forgets the user"
    );

    // The same kind of token, but for a grant of the token endpoint: refused.
    let now = app.clock.now();
    let sign = |grant: &str| {
        let claims = linkd::grants::AccessClaims::issue(
            linkd::secrets::new_uuid(),
            &app.issuer,
            "acme",
            linkd::devicegraph::graph_client::OWN_GRAPH_CALLER,
            &fixture.scope(),
            grant,
            now,
            60,
        )
        .with_audience(&app.devicegraph_audience());
        app.keyring
            .load()
            .sign(TokenKind::AccessToken, &claims)
            .unwrap()
    };
    let body = json!({"agentUserId": fixture.user_id});
    let reply = fixture
        .call(
            "/v1/devices:sync",
            &sign(&linkd::secrets::new_uuid()),
            &body,
        )
        .await;
    assert_api_error(
        &reply,
        403,
        "PERMISSION_DENIED",
        "a token of no service account",
    );
    let reply = fixture
        .call(
            "/v1/devices:sync",
            &sign(linkd::devicegraph::graph_client::OWN_GRAPH_GRANT),
            &body,
        )
        .await;
    assert_api_error(
        &reply,
        404,
        "NOT_FOUND",
        "the user's devices in other-project are out of reach of acme's token",
    );
}
