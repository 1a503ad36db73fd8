//! One contract, every backend: the same tests run against the embedded SQLite store, a
//! single Redis and a three-master Redis Cluster, each started for the test.

use std::sync::Arc;
use std::time::Duration;

use linkd::store::sqlite::SqliteStore;
use linkd::store::{
    self, ClientRecord, ClientSettings, ClientStore as _, CodeRedemption, LinkRecord,
    RedemptionFinish, RedemptionStart, RefreshTokenRecord, SessionRecord, SharedStore, StoreError,
    StoreTimeouts, UserRecord,
};
use redis_server::{RedisCluster, RedisServer};

use crate::support::redis_server;

const NOW: i64 = 1_900_000_000;

fn real_now() -> i64 {
    use linkd::clock::Clock as _;
    linkd::clock::SystemClock.now()
}

fn far_future() -> i64 {
    real_now() + 3600
}

fn client(id: &str) -> ClientRecord {
    ClientRecord {
        id: id.to_owned(),
        project_id: format!("project-{id}"),
        name: format!("Client {id}"),
        secret_digest: "d".repeat(64),
        created_at: NOW,
        settings: ClientSettings {
            company_name: Some("Acme".to_owned()),
            extra_redirect_uris: vec!["https://acme.example/cb".to_owned()],
            ..ClientSettings::default()
        },
    }
}

fn user(id: &str, email: &str) -> UserRecord {
    UserRecord {
        id: id.to_owned(),
        email: email.to_owned(),
        name: Some("Ada Lovelace".to_owned()),
        given_name: Some("Ada".to_owned()),
        family_name: None,
        picture: None,
        password_hash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA".to_owned(),
        created_at: NOW,
    }
}

fn refresh(grant_id: &str, client_id: &str) -> RefreshTokenRecord {
    RefreshTokenRecord {
        user_id: "u1".to_owned(),
        client_id: client_id.to_owned(),
        grant_id: grant_id.to_owned(),
        scope: "email profile".to_owned(),
        created_at: NOW,
    }
}

fn timeouts() -> StoreTimeouts {
    StoreTimeouts {
        connect: Duration::from_millis(500),
        response: Duration::from_millis(500),
    }
}

async fn clients_contract(store: SharedStore) {
    assert_eq!(store.get_client("a").await.unwrap(), None);
    store.insert_client(&client("b")).await.unwrap();
    store.insert_client(&client("a")).await.unwrap();
    let mut changed = client("a");
    changed.name = "Other".to_owned();
    match store.insert_client(&changed).await {
        Err(StoreError::AlreadyExists(_)) => {}
        other => panic!("duplicate insert: {other:?}"),
    }
    assert_eq!(store.get_client("a").await.unwrap(), Some(client("a")));
    let ids: Vec<String> = store
        .list_clients()
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);
    assert!(store.update_client(&changed).await.unwrap());
    assert_eq!(store.get_client("a").await.unwrap(), Some(changed));
    assert!(!store.update_client(&client("missing")).await.unwrap());
    assert!(store.remove_client("a").await.unwrap());
    assert!(!store.remove_client("a").await.unwrap());
    assert_eq!(store.get_client("a").await.unwrap(), None);
}

async fn users_contract(store: SharedStore) {
    store
        .insert_user(&user("u2", "zed@example.com"))
        .await
        .unwrap();
    store
        .insert_user(&user("u1", "ada@example.com"))
        .await
        .unwrap();
    for duplicate in [user("u1", "new@example.com"), user("u3", "ada@example.com")] {
        match store.insert_user(&duplicate).await {
            Err(StoreError::AlreadyExists(_)) => {}
            other => panic!("duplicate user accepted: {other:?}"),
        }
    }
    // A refused insert leaves no trace: neither the new id nor the new email exists.
    assert_eq!(store.get_user("u3").await.unwrap(), None);
    assert_eq!(
        store.get_user_by_email("new@example.com").await.unwrap(),
        None
    );
    assert_eq!(
        store.get_user_by_email("ada@example.com").await.unwrap(),
        Some(user("u1", "ada@example.com"))
    );
    let emails: Vec<String> = store
        .list_users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.email)
        .collect();
    assert_eq!(emails, ["ada@example.com", "zed@example.com"]);
    let mut renamed = user("u1", "ada@example.com");
    renamed.name = Some("Countess".to_owned());
    assert!(store.update_user(&renamed).await.unwrap());
    assert_eq!(store.get_user("u1").await.unwrap(), Some(renamed));
    assert!(
        !store
            .update_user(&user("u9", "nine@example.com"))
            .await
            .unwrap()
    );
    assert!(store.remove_user("u1").await.unwrap());
    assert!(!store.remove_user("u1").await.unwrap());
    assert_eq!(
        store.get_user_by_email("ada@example.com").await.unwrap(),
        None
    );
    // The email is free again.
    store
        .insert_user(&user("u4", "ada@example.com"))
        .await
        .unwrap();

    // Racing sign-ups with one email: exactly one wins, the others leave nothing behind.
    let racers: Vec<_> = (0..10)
        .map(|n| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let id = format!("racer-{n}");
                (
                    id.clone(),
                    store.insert_user(&user(&id, "race@example.com")).await,
                )
            })
        })
        .collect();
    let mut winners = Vec::new();
    for racer in racers {
        match racer.await.unwrap() {
            (id, Ok(())) => winners.push(id),
            (_, Err(StoreError::AlreadyExists(_))) => {}
            (_, Err(error)) => panic!("racing insert failed: {error}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one racing insert may win");
    let stored = store
        .get_user_by_email("race@example.com")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.id, winners[0]);
    for n in 0..10 {
        let id = format!("racer-{n}");
        assert_eq!(
            store.get_user(&id).await.unwrap().is_some(),
            id == winners[0]
        );
    }
}

async fn refresh_tokens_contract(store: SharedStore) {
    store
        .put_refresh_token("digest-1", &refresh("g1", "c1"))
        .await
        .unwrap();
    store
        .put_refresh_token("digest-2", &refresh("g1", "c1"))
        .await
        .unwrap();
    store
        .put_refresh_token("digest-3", &refresh("g2", "c1"))
        .await
        .unwrap();
    match store
        .put_refresh_token("digest-1", &refresh("g1", "c1"))
        .await
    {
        Err(StoreError::AlreadyExists(_)) => {}
        other => panic!("duplicate digest: {other:?}"),
    }
    // A revoked grant gains no refresh token.
    store.revoke_grant("g-revoked").await.unwrap();
    assert!(
        !store
            .put_refresh_token("digest-9", &refresh("g-revoked", "c1"))
            .await
            .unwrap()
    );
    assert!(
        store
            .get_refresh_token("g-revoked", "digest-9")
            .await
            .unwrap()
            .is_none()
    );
    let found = store
        .get_refresh_token("g1", "digest-1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.record, refresh("g1", "c1"));
    assert!(!found.grant_revoked);
    // The digest alone is not enough: it must be presented with its own grant.
    assert_eq!(
        store.get_refresh_token("g2", "digest-1").await.unwrap(),
        None
    );
    assert_eq!(store.get_refresh_token("g1", "nope").await.unwrap(), None);

    store.revoke_grant("g1").await.unwrap();
    assert!(
        store
            .get_refresh_token("g1", "digest-2")
            .await
            .unwrap()
            .unwrap()
            .grant_revoked
    );
    assert_eq!(store.delete_grant_refresh_tokens("g1").await.unwrap(), 2);
    assert_eq!(
        store.get_refresh_token("g1", "digest-1").await.unwrap(),
        None
    );
    assert!(
        store
            .get_refresh_token("g2", "digest-3")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(store.delete_grant_refresh_tokens("g1").await.unwrap(), 0);
}

fn redemption(jti: &str, grant_id: &str, attempt: &str, now: i64) -> CodeRedemption {
    CodeRedemption {
        jti: jti.to_owned(),
        grant_id: grant_id.to_owned(),
        attempt: attempt.to_owned(),
        now,
        lease_until: now + 5,
        expires_at: now + 600,
    }
}

async fn code_ledger_contract(store: SharedStore) {
    let now = NOW;
    let racers: Vec<_> = (0..20)
        .map(|n| {
            let store = Arc::clone(&store);
            let attempt = redemption("jti-race", "g-race", &format!("attempt-{n}"), now);
            tokio::spawn(async move { store.begin_redemption(&attempt).await })
        })
        .collect();
    let mut started = 0;
    for racer in racers {
        match racer.await.unwrap().unwrap() {
            RedemptionStart::Started => started += 1,
            RedemptionStart::InFlight { lease_until } => assert_eq!(lease_until, now + 5),
            RedemptionStart::Redeemed => panic!("nothing was redeemed yet"),
        }
    }
    assert_eq!(
        started, 1,
        "exactly one of 20 concurrent attempts may take the code"
    );

    // An attempt that took the code and never finished (a store fault, a crash): within its
    // lease the code is in flight, after it a retry takes the code over and finishes.
    let abandoned = redemption("jti-1", "g-1", "first", now);
    assert_eq!(
        store.begin_redemption(&abandoned).await.unwrap(),
        RedemptionStart::Started
    );
    let early = redemption("jti-1", "g-1", "early", now + 5);
    assert_eq!(
        store.begin_redemption(&early).await.unwrap(),
        RedemptionStart::InFlight {
            lease_until: now + 5
        }
    );
    let retry = redemption("jti-1", "g-1", "retry", now + 6);
    assert_eq!(
        store.begin_redemption(&retry).await.unwrap(),
        RedemptionStart::Started
    );
    // The abandoned attempt can no longer finish; the retry does, once.
    assert_eq!(
        store
            .finish_redemption(&abandoned, "digest-abandoned", &refresh("g-1", "acme"))
            .await
            .unwrap(),
        RedemptionFinish::Superseded
    );
    assert_eq!(
        store
            .finish_redemption(&retry, "digest-retry", &refresh("g-1", "acme"))
            .await
            .unwrap(),
        RedemptionFinish::Issued
    );
    assert!(
        store
            .get_refresh_token("g-1", "digest-retry")
            .await
            .unwrap()
            .is_some()
    );
    assert_eq!(
        store
            .get_refresh_token("g-1", "digest-abandoned")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .finish_redemption(&retry, "digest-again", &refresh("g-1", "acme"))
            .await
            .unwrap(),
        RedemptionFinish::Superseded
    );
    // Once redeemed, every later attempt is told so, however late.
    let replay = redemption("jti-1", "g-1", "replay", now + 600);
    assert_eq!(
        store.begin_redemption(&replay).await.unwrap(),
        RedemptionStart::Redeemed
    );

    // A grant revoked while an attempt holds its code: the code is spent, nothing stored.
    let raced = redemption("jti-2", "g-2", "raced", now);
    assert_eq!(
        store.begin_redemption(&raced).await.unwrap(),
        RedemptionStart::Started
    );
    store.revoke_grant("g-2").await.unwrap();
    assert_eq!(
        store
            .finish_redemption(&raced, "digest-raced", &refresh("g-2", "acme"))
            .await
            .unwrap(),
        RedemptionFinish::GrantRevoked
    );
    assert_eq!(
        store
            .get_refresh_token("g-2", "digest-raced")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .begin_redemption(&redemption("jti-2", "g-2", "late", now + 60))
            .await
            .unwrap(),
        RedemptionStart::Redeemed
    );
}

async fn revocations_contract(store: SharedStore) {
    assert!(!store.is_grant_revoked("g9").await.unwrap());
    store.revoke_grant("g9").await.unwrap();
    assert!(store.is_grant_revoked("g9").await.unwrap());
    store.revoke_grant("g9").await.unwrap();
    assert!(store.is_grant_revoked("g9").await.unwrap());
    assert!(!store.is_token_revoked("t9").await.unwrap());
    store
        .revoke_token("t9", far_future(), real_now())
        .await
        .unwrap();
    assert!(store.is_token_revoked("t9").await.unwrap());
    assert!(!store.is_token_revoked("t8").await.unwrap());

    // The Bearer check asks both questions at once.
    for (grant, jti, revoked) in [
        ("g9", "t8", true),
        ("g8", "t9", true),
        ("g9", "t9", true),
        ("g8", "t8", false),
    ] {
        assert_eq!(
            store.is_access_revoked(grant, jti).await.unwrap(),
            revoked,
            "grant {grant}, token {jti}"
        );
    }
}

async fn sessions_contract(store: SharedStore) {
    let expires_at = far_future();
    let session = SessionRecord {
        user_id: "u1".to_owned(),
        csrf_secret: "csrf".to_owned(),
        credential: "stamp".to_owned(),
        created_at: expires_at - 3600,
        expires_at,
    };
    store
        .put_session("s1", &session, session.created_at)
        .await
        .unwrap();
    assert_eq!(
        store.get_session("s1", expires_at - 1).await.unwrap(),
        Some(session.clone())
    );
    assert_eq!(store.get_session("s1", expires_at).await.unwrap(), None);
    assert_eq!(store.get_session("s2", expires_at - 1).await.unwrap(), None);
    assert!(store.delete_session("s1").await.unwrap());
    assert!(!store.delete_session("s1").await.unwrap());
    assert_eq!(store.get_session("s1", expires_at - 1).await.unwrap(), None);
}

async fn throttle_contract(store: SharedStore) {
    for expected in 1..=5 {
        assert_eq!(store.hit("login:a", 60, NOW).await.unwrap(), expected);
    }
    assert_eq!(store.hit("login:b", 60, NOW).await.unwrap(), 1);
    assert_eq!(store.current("login:a", NOW).await.unwrap(), 5);
    assert_eq!(
        store.current("login:a", NOW).await.unwrap(),
        5,
        "reading does not count"
    );
    assert_eq!(store.current("login:none", NOW).await.unwrap(), 0);
    store.reset("login:a").await.unwrap();
    assert_eq!(store.current("login:a", NOW).await.unwrap(), 0);
    assert_eq!(store.hit("login:a", 60, NOW).await.unwrap(), 1);
    // Concurrent hits are all counted.
    let hits: Vec<_> = (0..20)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.hit("login:burst", 60, NOW).await })
        })
        .collect();
    let mut seen = Vec::new();
    for hit in hits {
        seen.push(hit.await.unwrap().unwrap());
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=20).collect::<Vec<u64>>());
}

async fn devices_contract(store: SharedStore) {
    assert_eq!(store.get_devices("p1", "agent").await.unwrap(), None);
    let devices = vec![
        serde_json::json!({"id": "lamp", "type": "action.devices.types.LIGHT", "name": {"name": "Lämpchen 💡"}}),
        serde_json::json!({"id": "plug", "traits": ["action.devices.traits.OnOff"]}),
    ];
    store.put_devices("p1", "agent", &devices).await.unwrap();
    assert_eq!(
        store.get_devices("p1", "agent").await.unwrap(),
        Some(devices.clone())
    );
    assert_eq!(store.get_devices("p2", "agent").await.unwrap(), None);
    store
        .put_devices("p1", "agent", &devices[..1])
        .await
        .unwrap();
    assert_eq!(
        store
            .get_devices("p1", "agent")
            .await
            .unwrap()
            .unwrap()
            .len(),
        1
    );

    // Reported states: per device, each put replacing that device's state, per project.
    let on = serde_json::json!({"state": {"on": true}});
    let dim = serde_json::json!({"state": {"brightness": 10}});
    store
        .put_device_states("p1", "agent", &[("lamp".to_owned(), on.clone())])
        .await
        .unwrap();
    store
        .put_device_states(
            "p1",
            "agent",
            &[
                ("lamp".to_owned(), dim.clone()),
                ("plug".to_owned(), on.clone()),
            ],
        )
        .await
        .unwrap();
    store.put_device_states("p1", "agent", &[]).await.unwrap();
    let states = store.get_device_states("p1", "agent").await.unwrap();
    assert_eq!(states.len(), 2);
    assert_eq!(states["lamp"], dim);
    assert_eq!(states["plug"], on);
    assert!(
        store
            .get_device_states("p2", "agent")
            .await
            .unwrap()
            .is_empty()
    );

    assert!(store.delete_agent_user("p1", "agent").await.unwrap());
    assert!(!store.delete_agent_user("p1", "agent").await.unwrap());
    assert_eq!(store.get_devices("p1", "agent").await.unwrap(), None);
    assert!(
        store
            .get_device_states("p1", "agent")
            .await
            .unwrap()
            .is_empty(),
        "deleting an agent user forgets its states"
    );
}

async fn agent_users_contract(store: SharedStore) {
    let owner = |project: &'static str, agent: &'static str| {
        let store = store.clone();
        async move { store.user_of_agent_user(project, agent).await.unwrap() }
    };
    let agent_of = |project: &'static str, user: &'static str| {
        let store = store.clone();
        async move { store.agent_user_of_user(project, user).await.unwrap() }
    };
    assert_eq!(owner("p1", "a1").await, None);
    store.put_agent_user("p1", "a1", "alice").await.unwrap();
    assert_eq!(owner("p1", "a1").await.as_deref(), Some("alice"));
    assert_eq!(agent_of("p1", "alice").await.as_deref(), Some("a1"));
    assert_eq!(
        owner("p2", "a1").await,
        None,
        "agent user ids are per project"
    );
    assert_eq!(agent_of("p2", "alice").await, None);

    // The fulfilment answers a new id for alice: the old one no longer stands for her.
    store.put_agent_user("p1", "a2", "alice").await.unwrap();
    assert_eq!(owner("p1", "a1").await, None);
    assert_eq!(owner("p1", "a2").await.as_deref(), Some("alice"));
    assert_eq!(agent_of("p1", "alice").await.as_deref(), Some("a2"));
    // The same id answered for bob moves to him.
    store.put_agent_user("p1", "a2", "bob").await.unwrap();
    assert_eq!(owner("p1", "a2").await.as_deref(), Some("bob"));
    assert_eq!(agent_of("p1", "alice").await, None);
    assert_eq!(agent_of("p1", "bob").await.as_deref(), Some("a2"));

    // Forgetting the agent user forgets whom it stood for, even with no devices.
    store.put_devices("p1", "a2", &[]).await.unwrap();
    assert!(store.delete_agent_user("p1", "a2").await.unwrap());
    assert_eq!(owner("p1", "a2").await, None);
    assert_eq!(agent_of("p1", "bob").await, None);
    store.put_agent_user("p1", "a3", "carol").await.unwrap();
    assert!(!store.delete_agent_user("p1", "a3").await.unwrap());
    assert_eq!(agent_of("p1", "carol").await, None);
}

async fn links_contract(store: SharedStore) {
    let link = |grant: &str, user: &str, at: i64| LinkRecord {
        grant_id: grant.to_owned(),
        user_id: user.to_owned(),
        client_id: "c1".to_owned(),
        scope: "email".to_owned(),
        created_at: at,
    };
    assert!(store.list_links("u1").await.unwrap().is_empty());
    store.put_link(&link("g2", "u1", NOW + 5)).await.unwrap();
    store.put_link(&link("g1", "u1", NOW)).await.unwrap();
    store.put_link(&link("g1", "u1", NOW)).await.unwrap();
    store.put_link(&link("g3", "u2", NOW)).await.unwrap();
    let grants: Vec<String> = store
        .list_links("u1")
        .await
        .unwrap()
        .into_iter()
        .map(|l| l.grant_id)
        .collect();
    assert_eq!(grants, ["g1", "g2"]);
    // Another user's grant cannot be removed through this user.
    assert_eq!(store.remove_link("u1", "g3").await.unwrap(), None);
    assert_eq!(
        store.remove_link("u1", "g1").await.unwrap(),
        Some(link("g1", "u1", NOW))
    );
    assert_eq!(store.remove_link("u1", "g1").await.unwrap(), None);
    assert_eq!(store.list_links("u2").await.unwrap().len(), 1);

    assert_eq!(store.get_consent("u1", "c1").await.unwrap(), None);
    store.put_consent("u1", "c1", "email").await.unwrap();
    store
        .put_consent("u1", "c1", "email profile")
        .await
        .unwrap();
    assert_eq!(
        store.get_consent("u1", "c1").await.unwrap().as_deref(),
        Some("email profile")
    );
    assert_eq!(store.get_consent("u1", "c2").await.unwrap(), None);
    assert!(store.delete_consent("u1", "c1").await.unwrap());
    assert!(!store.delete_consent("u1", "c1").await.unwrap());

    let event = |id: &str, at: i64| linkd::store::UnlinkEvent {
        id: id.to_owned(),
        user_id: "u1".to_owned(),
        client_id: "c1".to_owned(),
        grant_id: "g1".to_owned(),
        at,
    };
    store
        .push_unlink_event(&event("e2", NOW + 1))
        .await
        .unwrap();
    store.push_unlink_event(&event("e1", NOW)).await.unwrap();
    store
        .push_unlink_event(&event("e3", NOW + 2))
        .await
        .unwrap();
    let pending = store.pending_unlink_events(2).await.unwrap();
    assert_eq!(pending, [event("e1", NOW), event("e2", NOW + 1)]);
    store.ack_unlink_event("e1").await.unwrap();
    let ids: Vec<String> = store
        .pending_unlink_events(10)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(ids, ["e2", "e3"]);
}

fn unlink_event(user: &str, client: &str, grant: &str) -> linkd::store::UnlinkEvent {
    linkd::store::UnlinkEvent {
        id: format!("unlink-{grant}"),
        user_id: user.to_owned(),
        client_id: client.to_owned(),
        grant_id: grant.to_owned(),
        at: NOW,
    }
}

fn link_of(user: &str, client: &str, grant: &str) -> LinkRecord {
    LinkRecord {
        grant_id: grant.to_owned(),
        user_id: user.to_owned(),
        client_id: client.to_owned(),
        scope: "email".to_owned(),
        created_at: NOW,
    }
}

/// Ending a grant: it is revoked and loses its refresh tokens whatever the link says; the
/// link, the consent and the unlink event move together, once.
async fn unlink_grant_contract(store: SharedStore) {
    store.put_link(&link_of("u1", "c1", "g1")).await.unwrap();
    store.put_link(&link_of("u1", "c2", "g2")).await.unwrap();
    store.put_consent("u1", "c1", "email").await.unwrap();
    store.put_consent("u1", "c2", "email").await.unwrap();
    store
        .put_refresh_token("d1", &refresh("g1", "c1"))
        .await
        .unwrap();

    assert!(
        store
            .unlink_grant(&unlink_event("u1", "c1", "g1"))
            .await
            .unwrap()
    );
    assert!(store.is_grant_revoked("g1").await.unwrap());
    assert_eq!(store.get_refresh_token("g1", "d1").await.unwrap(), None);
    let left: Vec<String> = store
        .list_links("u1")
        .await
        .unwrap()
        .into_iter()
        .map(|link| link.grant_id)
        .collect();
    assert_eq!(left, ["g2"]);
    assert_eq!(store.get_consent("u1", "c1").await.unwrap(), None);
    assert!(store.get_consent("u1", "c2").await.unwrap().is_some());
    assert_eq!(
        store.pending_unlink_events(10).await.unwrap(),
        [unlink_event("u1", "c1", "g1")]
    );
    // A repeat changes nothing and queues nothing more.
    assert!(
        !store
            .unlink_grant(&unlink_event("u1", "c1", "g1"))
            .await
            .unwrap()
    );
    assert_eq!(store.pending_unlink_events(10).await.unwrap().len(), 1);

    // Without a link (a replayed code whose redemption never linked, a /revoke after an
    // unlink), the grant still dies, and nothing else happens.
    store
        .put_refresh_token("d3", &refresh("g3", "c1"))
        .await
        .unwrap();
    assert!(
        !store
            .unlink_grant(&unlink_event("u1", "c2", "g3"))
            .await
            .unwrap()
    );
    assert!(store.is_grant_revoked("g3").await.unwrap());
    assert_eq!(store.get_refresh_token("g3", "d3").await.unwrap(), None);
    assert!(store.get_consent("u1", "c2").await.unwrap().is_some());
    assert_eq!(store.pending_unlink_events(10).await.unwrap().len(), 1);

    // Another user's link of the same grant id is not this user's to remove.
    store.put_link(&link_of("u2", "c2", "g4")).await.unwrap();
    assert!(
        !store
            .unlink_grant(&unlink_event("u1", "c2", "g4"))
            .await
            .unwrap()
    );
    assert_eq!(store.list_links("u2").await.unwrap().len(), 1);
}

async fn service_accounts_contract(store: SharedStore) {
    let account = |email: &str, keys: &[&str]| linkd::store::ServiceAccountRecord {
        email: email.to_owned(),
        unique_id: "100000000000000000001".to_owned(),
        client_id: "c1".to_owned(),
        project_id: "p1".to_owned(),
        name: "sync".to_owned(),
        keys: keys
            .iter()
            .map(|k| ((*k).to_owned(), format!("PEM {k}")))
            .collect(),
        scopes: vec!["https://issuer/auth/devicegraph".to_owned()],
        created_at: NOW,
    };
    assert_eq!(store.get_service_account("a@p1").await.unwrap(), None);
    store
        .put_service_account(&account("b@p1", &["k3"]))
        .await
        .unwrap();
    store
        .put_service_account(&account("a@p1", &["k1"]))
        .await
        .unwrap();
    assert_eq!(
        store.service_account_by_key("k1").await.unwrap(),
        Some(account("a@p1", &["k1"]))
    );
    // A key id belongs to one account only.
    match store
        .put_service_account(&account("a@p1", &["k1", "k3"]))
        .await
    {
        Err(StoreError::AlreadyExists(_)) => {}
        other => panic!("a key id was shared: {other:?}"),
    }
    assert_eq!(
        store.get_service_account("a@p1").await.unwrap(),
        Some(account("a@p1", &["k1"]))
    );
    // A second key for rotation, then dropping the first.
    store
        .put_service_account(&account("a@p1", &["k1", "k2"]))
        .await
        .unwrap();
    assert!(store.service_account_by_key("k2").await.unwrap().is_some());
    store
        .put_service_account(&account("a@p1", &["k2"]))
        .await
        .unwrap();
    assert_eq!(store.service_account_by_key("k1").await.unwrap(), None);
    let emails: Vec<String> = store
        .list_service_accounts()
        .await
        .unwrap()
        .into_iter()
        .map(|a| a.email)
        .collect();
    assert_eq!(emails, ["a@p1", "b@p1"]);
    assert!(store.remove_service_account("a@p1").await.unwrap());
    assert!(!store.remove_service_account("a@p1").await.unwrap());
    assert_eq!(store.service_account_by_key("k2").await.unwrap(), None);
    assert!(store.service_account_by_key("k3").await.unwrap().is_some());
}

async fn identity_providers_contract(store: SharedStore) {
    use linkd::store::{IdentityProviderKind, IdentityProviderRecord, LoginStateRecord};
    let provider = |id: &str| IdentityProviderRecord {
        id: id.to_owned(),
        name: format!("Provider {id}"),
        kind: IdentityProviderKind::Oidc {
            issuer: "https://id.example.com".to_owned(),
            client_id: "linkd".to_owned(),
            client_secret: "secret".to_owned(),
            scopes: vec!["openid".to_owned()],
        },
        created_at: NOW,
    };
    store
        .insert_identity_provider(&provider("b"))
        .await
        .unwrap();
    let handoff = IdentityProviderRecord {
        kind: IdentityProviderKind::Handoff {
            login_url: "https://app.example.com/login".to_owned(),
            public_key_pem: Some("PEM".to_owned()),
            jwks_url: None,
        },
        ..provider("a")
    };
    store.insert_identity_provider(&handoff).await.unwrap();
    assert!(matches!(
        store.insert_identity_provider(&provider("a")).await,
        Err(StoreError::AlreadyExists(_))
    ));
    assert_eq!(
        store.get_identity_provider("a").await.unwrap(),
        Some(handoff)
    );
    assert_eq!(store.get_identity_provider("zz").await.unwrap(), None);
    let ids: Vec<String> = store
        .list_identity_providers()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.id)
        .collect();
    assert_eq!(ids, ["a", "b"]);

    assert_eq!(
        store.get_external_identity("a", "sub-1").await.unwrap(),
        None
    );
    store
        .put_external_identity("a", "sub-1", "u1")
        .await
        .unwrap();
    store
        .put_external_identity("b", "sub-1", "u2")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_external_identity("a", "sub-1")
            .await
            .unwrap()
            .as_deref(),
        Some("u1")
    );
    store
        .put_external_identity("a", "sub-1", "u3")
        .await
        .unwrap();
    assert_eq!(
        store
            .get_external_identity("a", "sub-1")
            .await
            .unwrap()
            .as_deref(),
        Some("u3")
    );
    // An update replaces the settings and keeps the people mapped through the provider.
    let rotated = IdentityProviderRecord {
        name: "Renamed".to_owned(),
        kind: IdentityProviderKind::Handoff {
            login_url: "https://app.example.com/login".to_owned(),
            public_key_pem: None,
            jwks_url: Some("https://app.example.com/jwks.json".to_owned()),
        },
        ..provider("a")
    };
    assert!(store.update_identity_provider(&rotated).await.unwrap());
    assert_eq!(
        store.get_identity_provider("a").await.unwrap(),
        Some(rotated)
    );
    assert_eq!(
        store
            .get_external_identity("a", "sub-1")
            .await
            .unwrap()
            .as_deref(),
        Some("u3")
    );
    assert!(
        !store
            .update_identity_provider(&provider("zz"))
            .await
            .unwrap()
    );
    assert_eq!(store.get_identity_provider("zz").await.unwrap(), None);
    assert!(store.remove_identity_provider("a").await.unwrap());
    assert!(!store.remove_identity_provider("a").await.unwrap());
    assert_eq!(
        store.get_external_identity("a", "sub-1").await.unwrap(),
        None
    );
    assert_eq!(
        store
            .get_external_identity("b", "sub-1")
            .await
            .unwrap()
            .as_deref(),
        Some("u2")
    );

    let now = real_now();
    let state = LoginStateRecord {
        provider_id: "b".to_owned(),
        state: "st".to_owned(),
        nonce: "n".to_owned(),
        code_verifier: "v".to_owned(),
        request: "client_id=acme".to_owned(),
        created_at: now,
        expires_at: now + 600,
    };
    store.put_login_state("k1", &state, now).await.unwrap();
    // Taken once: of concurrent takes exactly one gets it.
    let mut takes = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let store = Arc::clone(&store);
        takes.spawn(async move { store.take_login_state("k1", now).await.unwrap() });
    }
    let won: Vec<_> = takes.join_all().await.into_iter().flatten().collect();
    assert_eq!(won, std::slice::from_ref(&state));
    assert_eq!(store.take_login_state("k1", now).await.unwrap(), None);
    // Expired by the caller's clock: not handed out.
    store.put_login_state("k2", &state, now).await.unwrap();
    assert_eq!(store.take_login_state("k2", now + 600).await.unwrap(), None);
}

macro_rules! contract {
    ($backend:ident, $open:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn clients() {
                let (_guard, store) = $open.await;
                clients_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn users() {
                let (_guard, store) = $open.await;
                users_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn refresh_tokens() {
                let (_guard, store) = $open.await;
                refresh_tokens_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn code_ledger() {
                let (_guard, store) = $open.await;
                code_ledger_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn revocations() {
                let (_guard, store) = $open.await;
                revocations_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sessions() {
                let (_guard, store) = $open.await;
                sessions_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn throttle() {
                let (_guard, store) = $open.await;
                throttle_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn devices() {
                let (_guard, store) = $open.await;
                devices_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn agent_users() {
                let (_guard, store) = $open.await;
                agent_users_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn links() {
                let (_guard, store) = $open.await;
                links_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn unlink_grant() {
                let (_guard, store) = $open.await;
                unlink_grant_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn service_accounts() {
                let (_guard, store) = $open.await;
                service_accounts_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn identity_providers() {
                let (_guard, store) = $open.await;
                identity_providers_contract(store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn ping() {
                let (_guard, store) = $open.await;
                store.ping().await.unwrap();
            }
        }
    };
}

/// Keeps a backend's resources alive for the duration of a test.
#[allow(dead_code)]
enum Guard {
    Dir(tempfile::TempDir),
    Redis(RedisServer),
    Cluster(RedisCluster),
}

async fn open_sqlite() -> (Guard, SharedStore) {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("linkd.db").display().to_string();
    let store = store::open(&location, timeouts()).await.unwrap();
    assert_eq!(store.backend_name(), "sqlite");
    (Guard::Dir(dir), store)
}

async fn open_redis() -> (Guard, SharedStore) {
    let server = RedisServer::start();
    let store = store::open(&server.url(), timeouts()).await.unwrap();
    assert_eq!(store.backend_name(), "redis");
    (Guard::Redis(server), store)
}

async fn open_cluster() -> (Guard, SharedStore) {
    let cluster = RedisCluster::start(3);
    let store = store::open(&cluster.url(), timeouts()).await.unwrap();
    assert_eq!(store.backend_name(), "redis-cluster");
    (Guard::Cluster(cluster), store)
}

contract!(sqlite, open_sqlite());
contract!(redis, open_redis());
contract!(redis_cluster, open_cluster());

impl Guard {
    /// Runs `redis-cli` against the Redis behind the store.
    fn cli(&self, args: &[&str]) -> String {
        let answer = match self {
            Guard::Redis(server) => server.cli(args),
            Guard::Cluster(cluster) => cluster.cli(args),
            Guard::Dir(_) => panic!("a SQLite store has no redis-cli"),
        };
        answer.unwrap_or_else(|| panic!("redis-cli {args:?} failed"))
    }

    fn cli_number(&self, args: &[&str]) -> i64 {
        let answer = self.cli(args);
        answer
            .parse()
            .unwrap_or_else(|_| panic!("redis-cli {args:?} answered {answer:?}"))
    }
}

/// The window is set by the first hit only and lapses with the key. Time passing is played
/// by shortening the key's expiry, so nothing sleeps longer than a few milliseconds.
async fn redis_throttle_window(guard: &Guard, store: SharedStore) {
    let key = "linkd:counter:{k:window}";
    assert_eq!(store.hit("window", 60, NOW).await.unwrap(), 1);
    let first = guard.cli_number(&["PTTL", key]);
    assert!((55_000..=60_000).contains(&first), "PTTL {first}");
    guard.cli(&["PEXPIRE", key, "30000"]);
    assert_eq!(store.hit("window", 60, NOW).await.unwrap(), 2);
    assert!(
        guard.cli_number(&["PTTL", key]) <= 30_000,
        "a hit extended the window"
    );
    guard.cli(&["PEXPIRE", key, "1"]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(store.current("window", NOW).await.unwrap(), 0);
    assert_eq!(store.hit("window", 60, NOW).await.unwrap(), 1);
    assert!(guard.cli_number(&["PTTL", key]) > 55_000);
    // A counter that lost its expiry gets one back instead of counting forever.
    guard.cli(&["PERSIST", key]);
    assert_eq!(store.hit("window", 60, NOW).await.unwrap(), 2);
    assert!(guard.cli_number(&["PTTL", key]) > 55_000);
}

/// A grant's revocation never expires, also when an older version left it an expiry; a
/// later token revocation with an earlier expiry keeps the longer one; an expiry already past
/// still records the revocation instead of failing or being ignored.
async fn redis_revocation_expiry(guard: &Guard, store: SharedStore) {
    let far = far_future();
    let mark = "linkd:revoked-grant:{g:g-long}";
    store.revoke_grant("g-long").await.unwrap();
    assert_eq!(guard.cli_number(&["TTL", mark]), -1, "a grant mark expires");
    guard.cli(&["SET", mark, &far.to_string(), "EXAT", &far.to_string()]);
    store.revoke_grant("g-long").await.unwrap();
    assert_eq!(
        guard.cli_number(&["TTL", mark]),
        -1,
        "an old mark kept its expiry"
    );
    let ended = linkd::store::UnlinkEvent {
        id: "unlink-g-ended".to_owned(),
        user_id: "u1".to_owned(),
        client_id: "c1".to_owned(),
        grant_id: "g-ended".to_owned(),
        at: NOW,
    };
    store.unlink_grant(&ended).await.unwrap();
    assert_eq!(
        guard.cli_number(&["TTL", "linkd:revoked-grant:{g:g-ended}"]),
        -1,
        "an unlinked grant's mark expires"
    );
    let now = real_now();
    store.revoke_token("t-long", far - 1800, now).await.unwrap();
    store.revoke_token("t-long", far, now).await.unwrap();
    let expiry = guard.cli_number(&["EXPIRETIME", "linkd:revoked-token:{t:t-long}"]);
    assert!((far..=far + 2).contains(&expiry), "EXPIRETIME {expiry}");
    store
        .revoke_token("t-past", NOW - 1_000_000_000, now)
        .await
        .unwrap();
    assert!(store.is_token_revoked("t-past").await.unwrap());
    // The key lives for what is left by the caller's clock, however far Redis's clock is
    // from it.
    store
        .revoke_token("t-skewed", NOW + 600, NOW)
        .await
        .unwrap();
    let left = guard.cli_number(&["TTL", "linkd:revoked-token:{t:t-skewed}"]);
    assert!((590..=600).contains(&left), "TTL {left}");
}

/// Every key one atomic operation touches maps to one cluster slot (SECURITY.md test 95).
async fn redis_hash_tags(guard: &Guard, _store: SharedStore) {
    let groups: [&[&str]; 4] = [
        &["linkd:rt:{g:grant-1}", "linkd:revoked-grant:{g:grant-1}"],
        &["linkd:{users}:by-id", "linkd:{users}:by-email"],
        &[
            "linkd:{service-accounts}:by-email",
            "linkd:{service-accounts}:by-key",
        ],
        &["linkd:links:{u:user-1}", "linkd:consents:{u:user-1}"],
    ];
    for keys in groups {
        let slots: Vec<i64> = keys
            .iter()
            .map(|key| guard.cli_number(&["CLUSTER", "KEYSLOT", key]))
            .collect();
        assert!(
            slots.windows(2).all(|pair| pair[0] == pair[1]),
            "{keys:?}: {slots:?}"
        );
    }
}

/// A stored record that does not decode is `Corrupt`, not "absent" and not "unavailable".
async fn redis_corrupt_record(guard: &Guard, store: SharedStore) {
    guard.cli(&["HSET", "linkd:{clients}", "broken", "{not json"]);
    match store.get_client("broken").await {
        Err(StoreError::Corrupt(_)) => {}
        other => panic!("undecodable client: {other:?}"),
    }
    assert!(matches!(
        store.list_clients().await,
        Err(StoreError::Corrupt(_))
    ));
}

macro_rules! redis_only {
    ($backend:ident, $open:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn throttle_window() {
                let (guard, store) = $open.await;
                redis_throttle_window(&guard, store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn revocation_expiry() {
                let (guard, store) = $open.await;
                redis_revocation_expiry(&guard, store).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn corrupt_record() {
                let (guard, store) = $open.await;
                redis_corrupt_record(&guard, store).await;
            }
        }
    };
}

redis_only!(redis_backend, open_redis());
redis_only!(redis_cluster_backend, open_cluster());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_cluster_keys_of_one_operation_share_a_slot() {
    let (guard, store) = open_cluster().await;
    redis_hash_tags(&guard, store).await;
}

#[tokio::test]
async fn sqlite_throttle_window_is_fixed_and_lapses() {
    let dir = tempfile::tempdir().unwrap();
    use linkd::store::ThrottleStore as _;
    let store = SqliteStore::open(&dir.path().join("linkd.db"), timeouts()).unwrap();
    assert_eq!(store.hit("k", 60, NOW).await.unwrap(), 1);
    assert_eq!(store.hit("k", 60, NOW + 59).await.unwrap(), 2);
    assert_eq!(store.current("k", NOW + 59).await.unwrap(), 2);
    // The second hit did not extend the window that the first one opened.
    assert_eq!(store.current("k", NOW + 60).await.unwrap(), 0);
    assert_eq!(store.hit("k", 60, NOW + 60).await.unwrap(), 1);
    assert_eq!(store.current("k", NOW + 119).await.unwrap(), 1);
    assert_eq!(store.current("k", NOW + 120).await.unwrap(), 0);
    assert_eq!(store.current("other", NOW).await.unwrap(), 0);
}

#[tokio::test]
async fn sqlite_corrupt_record_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linkd.db");
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "INSERT INTO clients (id, record) VALUES ('broken', '{not json')",
            [],
        )
        .unwrap();
    match store.get_client("broken").await {
        Err(StoreError::Corrupt(_)) => {}
        other => panic!("undecodable client: {other:?}"),
    }
}

#[tokio::test]
async fn sqlite_refuses_a_newer_schema() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("linkd.db");
    drop(SqliteStore::open(&path, timeouts()).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    match SqliteStore::open(&path, timeouts()) {
        Err(StoreError::Incompatible(message)) => assert!(message.contains("99"), "{message}"),
        other => panic!("opened a newer schema: {:?}", other.map(|_| ())),
    }
}

#[tokio::test]
async fn sqlite_files_are_readable_by_their_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;

    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("state");
    let path = nested.join("linkd.db");
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    store.insert_client(&client("c")).await.unwrap();
    let mode = |name: &str| {
        std::fs::metadata(nested.join(name))
            .unwrap_or_else(|error| panic!("{name}: {error}"))
            .permissions()
            .mode()
            & 0o777
    };
    for name in ["linkd.db", "linkd.db-wal", "linkd.db-shm"] {
        assert_eq!(mode(name), 0o600, "{name}: {:o}", mode(name));
    }
    assert_eq!(
        std::fs::metadata(&nested).unwrap().permissions().mode() & 0o777,
        0o700,
        "the directory linkd created"
    );
    drop(store);

    // A store an earlier version left readable by others is made owner-only on open.
    for name in ["linkd.db", "linkd.db-wal", "linkd.db-shm"] {
        let file = nested.join(name);
        if file.exists() {
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let reopened = SqliteStore::open(&path, timeouts()).unwrap();
    reopened.insert_client(&client("d")).await.unwrap();
    for name in ["linkd.db", "linkd.db-wal", "linkd.db-shm"] {
        assert_eq!(
            mode(name),
            0o600,
            "{name} after reopening: {:o}",
            mode(name)
        );
    }
}

#[tokio::test]
async fn sqlite_reopening_keeps_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("linkd.db");
    let store = SqliteStore::open(&path, timeouts()).unwrap();
    store.insert_client(&client("kept")).await.unwrap();
    drop(store);
    let reopened = SqliteStore::open(&path, timeouts()).unwrap();
    assert_eq!(
        reopened.get_client("kept").await.unwrap(),
        Some(client("kept"))
    );
}

#[tokio::test]
async fn sqlite_sees_another_process_write_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let location = dir.path().join("linkd.db").display().to_string();
    let server_side = store::open(&location, timeouts()).await.unwrap();
    assert_eq!(server_side.get_client("late").await.unwrap(), None);
    // A second handle on the same file, as the CLI opens it while the server runs.
    let cli_side = store::open(&location, timeouts()).await.unwrap();
    cli_side.insert_client(&client("late")).await.unwrap();
    drop(cli_side);
    assert_eq!(
        server_side.get_client("late").await.unwrap(),
        Some(client("late"))
    );
}

#[tokio::test]
async fn stopped_redis_is_unavailable_then_recovers_after_restart() {
    let mut server = RedisServer::start();
    let store = store::open(&server.url(), timeouts()).await.unwrap();
    store.insert_client(&client("a")).await.unwrap();

    server.stop();
    for _ in 0..3 {
        let started = std::time::Instant::now();
        match store.get_client("a").await {
            Err(StoreError::Unavailable(_)) => {}
            other => panic!("stopped Redis answered {other:?}"),
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "an unavailable store must answer within its timeouts"
        );
    }
    assert!(matches!(
        store.ping().await,
        Err(StoreError::Unavailable(_))
    ));

    server.restart();
    let started = std::time::Instant::now();
    loop {
        match store.ping().await {
            Ok(()) => break,
            Err(_) if started.elapsed() < Duration::from_secs(15) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(error) => panic!("store did not recover after restart: {error}"),
        }
    }
    // The restarted server is empty (no persistence in tests): "not found", not an error.
    assert_eq!(store.get_client("a").await.unwrap(), None);
}

/// Ending a grant on Redis spans three slots, so it is steps in order. A write refused
/// part-way (here by an ACL that lets the store read but not write some keys, as a failover
/// to a read-only replica or a full server would) never leaves the link gone while the grant
/// works: the grant dies first and the link goes last. Once writes work again, a repeat
/// finishes the job with one event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_unlink_interrupted_part_way_leaves_the_link_listed_and_the_grant_dead() {
    let server = RedisServer::start();
    let store = store::open(&server.url(), timeouts()).await.unwrap();
    let acl = |keys: &[&str]| {
        let mut args = vec!["ACL", "SETUSER", "default", "resetkeys"];
        args.extend_from_slice(keys);
        server.cli(&args).unwrap();
    };
    let grant_slot = ["~linkd:rt:*", "~linkd:revoked-grant:*"];
    let user_slot_read_only = ["%R~linkd:links:*", "%R~linkd:consents:*"];
    for (fault, keys) in [
        // The event cannot be queued.
        (
            "event",
            [&grant_slot[..], &user_slot_read_only[..]].concat(),
        ),
        // The event is queued, but consent and link cannot be removed.
        (
            "link",
            [
                &grant_slot[..],
                &user_slot_read_only[..],
                &["~linkd:{unlink-events}"],
            ]
            .concat(),
        ),
    ] {
        let grant = format!("g-{fault}");
        let event = unlink_event("u1", "c1", &grant);
        store.put_link(&link_of("u1", "c1", &grant)).await.unwrap();
        store.put_consent("u1", "c1", "email").await.unwrap();
        store
            .put_refresh_token("d1", &refresh(&grant, "c1"))
            .await
            .unwrap();

        acl(&keys);
        match store.unlink_grant(&event).await {
            Err(StoreError::Unavailable(_)) => {}
            other => panic!("{fault}: a refused write answered {other:?}"),
        }
        acl(&["~*"]);
        let linked = store
            .list_links("u1")
            .await
            .unwrap()
            .iter()
            .any(|link| link.grant_id == grant);
        assert!(linked, "{fault}: the link is gone after a failure part-way");
        assert!(store.is_grant_revoked(&grant).await.unwrap(), "{fault}");
        // Its refresh tokens go last: still there, dead, and naming the user.
        assert!(
            store
                .get_refresh_token(&grant, "d1")
                .await
                .unwrap()
                .is_some_and(|lookup| lookup.grant_revoked),
            "{fault}"
        );

        assert!(store.unlink_grant(&event).await.unwrap(), "{fault}");
        assert!(store.list_links("u1").await.unwrap().is_empty(), "{fault}");
        assert_eq!(store.get_refresh_token(&grant, "d1").await.unwrap(), None);
        assert_eq!(store.get_consent("u1", "c1").await.unwrap(), None);
        assert_eq!(store.pending_unlink_events(10).await.unwrap(), [event]);
        store
            .ack_unlink_event(&format!("unlink-{grant}"))
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn redis_unreachable_at_start_is_unavailable() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    match store::open(&format!("redis://127.0.0.1:{port}"), timeouts()).await {
        Err(StoreError::Unavailable(_)) => {}
        Ok(_) => panic!("connected to nothing"),
        Err(other) => panic!("unexpected error {other}"),
    }
}
