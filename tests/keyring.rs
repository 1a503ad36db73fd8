//! The keyring on real files: generation, rotation and retirement rules, permissions,
//! atomic reload, and JWT verification refusing every forgery it should.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use linkd::tokens::keyring::{
    self, Algorithm, KeyState, KeyringError, KeyringHandle, RotationPolicy,
};
use linkd::tokens::{Expectations, TokenError, TokenKind};
use serde_json::{Value, json};

const NOW: i64 = 1_900_000_000;
const LINKD: &str = env!("CARGO_BIN_EXE_linkd");

fn expectations(now: i64) -> Expectations<'static> {
    Expectations {
        now,
        leeway: 60,
        issuer: Some("https://issuer.example"),
        audience: Some("client-1"),
    }
}

fn claims(now: i64) -> Value {
    json!({
        "iss": "https://issuer.example",
        "aud": "client-1",
        "sub": "user-1",
        "iat": now,
        "exp": now + 600,
        "jti": "j1",
    })
}

fn jwks(handle: &KeyringHandle) -> Value {
    serde_json::from_slice(&handle.load().jwks_json()).unwrap()
}

fn header_of(token: &str) -> Value {
    let header = token.split('.').next().unwrap();
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap()
}

#[test]
fn generate_publishes_a_next_key_without_private_material() {
    let dir = tempfile::tempdir().unwrap();
    let created = keyring::ensure_current(dir.path(), Algorithm::Es256, NOW).unwrap();
    assert!(created.is_some());
    assert_eq!(
        keyring::ensure_current(dir.path(), Algorithm::Es256, NOW).unwrap(),
        None
    );
    let next = keyring::generate(dir.path(), Algorithm::EdDsa, NOW).unwrap();
    assert_eq!(next.state, KeyState::Next);
    assert!(matches!(
        keyring::generate(dir.path(), Algorithm::Es256, NOW),
        Err(KeyringError::NextExists(_))
    ));

    let handle = KeyringHandle::open(dir.path()).unwrap();
    let keys = jwks(&handle)["keys"].as_array().unwrap().clone();
    assert_eq!(keys.len(), 2);
    for key in &keys {
        assert!(key.get("d").is_none(), "private material published: {key}");
        assert_eq!(key["use"], "sig");
    }
    let okp = keys.iter().find(|k| k["kid"] == next.kid.as_str()).unwrap();
    assert_eq!(okp["kty"], "OKP");
    assert_eq!(okp["crv"], "Ed25519");
    let ec = keys.iter().find(|k| k["kid"] != next.kid.as_str()).unwrap();
    assert_eq!(
        (ec["kty"].as_str(), ec["crv"].as_str()),
        (Some("EC"), Some("P-256"))
    );

    let key_file = dir.path().join(format!("{}.key.pem", next.kid));
    let mode = std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // A next key never signs.
    let token = handle
        .load()
        .sign(TokenKind::AccessToken, &claims(NOW))
        .unwrap();
    assert_ne!(header_of(&token)["kid"], next.kid.as_str());
}

#[test]
fn rotation_rules_and_old_tokens_still_verify() {
    let dir = tempfile::tempdir().unwrap();
    let first = keyring::ensure_current(dir.path(), Algorithm::Es256, NOW)
        .unwrap()
        .unwrap();
    let policy = RotationPolicy::default();
    assert!(matches!(
        keyring::rotate(dir.path(), NOW, policy, false),
        Err(KeyringError::NoNextKey)
    ));
    let handle = KeyringHandle::open(dir.path()).unwrap();
    let old_token = handle
        .load()
        .sign(TokenKind::AccessToken, &claims(NOW))
        .unwrap();

    let next = keyring::generate(dir.path(), Algorithm::Es256, NOW).unwrap();
    match keyring::rotate(dir.path(), NOW + 10, policy, false) {
        Err(error @ KeyringError::TooFresh { .. }) => assert!(error.is_refusal()),
        other => panic!("fresh key rotated in: {other:?}"),
    }
    let too_short = RotationPolicy {
        min_published_secs: 5,
        reload_interval_secs: 10,
        ..policy
    };
    assert!(matches!(
        keyring::rotate(dir.path(), NOW + 4000, too_short, true),
        Err(KeyringError::PolicyTooShort { .. })
    ));
    let promoted = keyring::rotate(dir.path(), NOW + 3600, policy, false).unwrap();
    assert_eq!(promoted.kid, next.kid);

    assert!(handle.reload().unwrap());
    let new_token = handle
        .load()
        .sign(TokenKind::AccessToken, &claims(NOW + 3600))
        .unwrap();
    assert_eq!(header_of(&new_token)["kid"], next.kid.as_str());
    let verified: Value = handle
        .load()
        .verify(&old_token, TokenKind::AccessToken, &expectations(NOW + 300))
        .unwrap();
    assert_eq!(verified["sub"], "user-1");
    let states: Vec<(String, KeyState)> = keyring::list(dir.path())
        .unwrap()
        .into_iter()
        .map(|k| (k.kid, k.state))
        .collect();
    assert!(states.contains(&(first.clone(), KeyState::Previous)));
    assert!(states.contains(&(next.kid.clone(), KeyState::Current)));

    // Retirement: never current, not while its tokens may live, then gone from the JWKS.
    assert!(matches!(
        keyring::retire(dir.path(), &next.kid, NOW + 9999, policy, true),
        Err(KeyringError::NotPrevious { .. })
    ));
    assert!(matches!(
        keyring::retire(dir.path(), &first, NOW + 3700, policy, false),
        Err(KeyringError::StillInUse { .. })
    ));
    assert!(matches!(
        keyring::retire(dir.path(), "nope", NOW, policy, true),
        Err(KeyringError::UnknownKey(_))
    ));
    keyring::retire(dir.path(), &first, NOW + 3600 + 3661, policy, false).unwrap();
    assert!(!dir.path().join(format!("{first}.key.pem")).exists());
    assert!(handle.reload().unwrap());
    assert_eq!(jwks(&handle)["keys"].as_array().unwrap().len(), 1);
    assert_eq!(
        handle
            .load()
            .verify::<Value>(&old_token, TokenKind::AccessToken, &expectations(NOW + 300)),
        Err(TokenError::UnknownKey)
    );
}

#[test]
fn readable_private_keys_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let kid = keyring::ensure_current(dir.path(), Algorithm::Es256, NOW)
        .unwrap()
        .unwrap();
    let path = dir.path().join(format!("{kid}.key.pem"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    match KeyringHandle::open(dir.path()) {
        Err(error @ KeyringError::InsecurePermissions { .. }) => {
            assert!(error.to_string().contains("chmod 600"), "{error}");
        }
        other => panic!("world-readable key loaded: {other:?}"),
    }
}

#[test]
fn a_damaged_manifest_keeps_the_loaded_keyring() {
    let dir = tempfile::tempdir().unwrap();
    let kid = keyring::ensure_current(dir.path(), Algorithm::Es256, NOW)
        .unwrap()
        .unwrap();
    let handle = KeyringHandle::open(dir.path()).unwrap();
    std::fs::write(
        dir.path().join(keyring::MANIFEST_FILE),
        b"{\"version\":1,\"ke",
    )
    .unwrap();
    assert!(handle.reload().is_err());
    assert_eq!(handle.load().current_kid(), Some(kid.as_str()));
    assert!(handle.load().has_signing_key());
}

fn forge(header: &Value, payload: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(header).unwrap()),
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(payload).unwrap()),
        URL_SAFE_NO_PAD.encode(signature)
    )
}

fn verify_access(handle: &KeyringHandle, token: &str, now: i64) -> Result<Value, TokenError> {
    handle
        .load()
        .verify(token, TokenKind::AccessToken, &expectations(now))
}

#[test]
fn verification_refuses_forgeries_for_both_algorithms() {
    for alg in [Algorithm::Es256, Algorithm::EdDsa] {
        let dir = tempfile::tempdir().unwrap();
        let kid = keyring::ensure_current(dir.path(), alg, NOW)
            .unwrap()
            .unwrap();
        let handle = KeyringHandle::open(dir.path()).unwrap();
        let token = handle
            .load()
            .sign(TokenKind::AccessToken, &claims(NOW))
            .unwrap();
        assert_eq!(header_of(&token)["typ"], "at+jwt");
        assert_eq!(header_of(&token)["alg"], alg.jose_name());
        assert!(verify_access(&handle, &token, NOW + 1).is_ok(), "{alg}");

        // Type confusion, both ways.
        let code = handle
            .load()
            .sign(TokenKind::AuthorizationCode, &claims(NOW))
            .unwrap();
        assert_eq!(
            verify_access(&handle, &code, NOW),
            Err(TokenError::WrongType)
        );
        assert_eq!(
            handle
                .load()
                .verify::<Value>(&token, TokenKind::AuthorizationCode, &expectations(NOW)),
            Err(TokenError::WrongType)
        );

        // Time, issuer, audience.
        assert_eq!(
            verify_access(&handle, &token, NOW + 600 + 61),
            Err(TokenError::Expired)
        );
        assert!(verify_access(&handle, &token, NOW + 600 + 59).is_ok());
        assert_eq!(
            verify_access(&handle, &token, NOW - 120),
            Err(TokenError::NotYetValid)
        );
        let other_issuer = Expectations {
            issuer: Some("https://evil.example"),
            ..expectations(NOW)
        };
        assert_eq!(
            handle
                .load()
                .verify::<Value>(&token, TokenKind::AccessToken, &other_issuer),
            Err(TokenError::WrongIssuer)
        );
        let other_audience = Expectations {
            audience: Some("client-2"),
            ..expectations(NOW)
        };
        assert_eq!(
            handle
                .load()
                .verify::<Value>(&token, TokenKind::AccessToken, &other_audience),
            Err(TokenError::WrongAudience)
        );

        // Tampered payload under the genuine signature.
        let parts: Vec<&str> = token.split('.').collect();
        let mut tampered_claims = claims(NOW);
        tampered_claims["sub"] = json!("admin");
        let tampered = format!(
            "{}.{}.{}",
            parts[0],
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&tampered_claims).unwrap()),
            parts[2]
        );
        assert_eq!(
            verify_access(&handle, &tampered, NOW),
            Err(TokenError::BadSignature)
        );

        // alg none, and HS256 keyed with the public key.
        let none = forge(
            &json!({"alg": "none", "typ": "at+jwt", "kid": kid}),
            &claims(NOW),
            b"",
        );
        assert!(verify_access(&handle, &none, NOW).is_err());
        let jwks = jwks(&handle);
        let public = serde_json::to_vec(&jwks["keys"][0]).unwrap();
        let hmac_key = aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &public);
        let header = json!({"alg": "HS256", "typ": "at+jwt", "kid": kid});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).unwrap()),
            URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims(NOW)).unwrap())
        );
        let tag = aws_lc_rs::hmac::sign(&hmac_key, signing_input.as_bytes());
        let hs256 = format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()));
        assert_eq!(
            verify_access(&handle, &hs256, NOW),
            Err(TokenError::UnknownKey)
        );

        // A key that is not ours.
        let foreign_dir = tempfile::tempdir().unwrap();
        keyring::ensure_current(foreign_dir.path(), alg, NOW).unwrap();
        let foreign = KeyringHandle::open(foreign_dir.path()).unwrap();
        let foreign_token = foreign
            .load()
            .sign(TokenKind::AccessToken, &claims(NOW))
            .unwrap();
        assert_eq!(
            verify_access(&handle, &foreign_token, NOW),
            Err(TokenError::UnknownKey)
        );

        for garbage in ["", "a.b", "a.b.c", "....", "eyJhbGciOiJFUzI1NiJ9.e30."] {
            assert!(verify_access(&handle, garbage, NOW).is_err(), "{garbage:?}");
        }
    }
}

fn keys_cli(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(LINKD)
        .args(["--keys-dir", &dir.display().to_string(), "keys"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn keys_cli_refuses_with_exit_code_2_and_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let first = keys_cli(dir.path(), &["generate"]);
    assert!(first.status.success(), "{first:?}");
    let kid = String::from_utf8(first.stdout).unwrap().trim().to_owned();

    let again = keys_cli(dir.path(), &["generate"]);
    assert_eq!(again.status.code(), Some(2));
    assert_eq!(String::from_utf8_lossy(&again.stderr).lines().count(), 1);

    let fresh = keys_cli(dir.path(), &["rotate"]);
    assert_eq!(fresh.status.code(), Some(2), "{fresh:?}");
    assert!(String::from_utf8_lossy(&fresh.stderr).contains("--force"));

    let forced = keys_cli(dir.path(), &["rotate", "--force"]);
    assert!(forced.status.success(), "{forced:?}");
    assert_eq!(String::from_utf8_lossy(&forced.stdout).trim(), kid);

    let listed = keys_cli(dir.path(), &["list"]);
    let table = String::from_utf8_lossy(&listed.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with(&kid) && l.contains("current")),
        "{table}"
    );

    let retire_current = keys_cli(dir.path(), &["retire", &kid]);
    assert_eq!(retire_current.status.code(), Some(2));
    let bad_alg = keys_cli(dir.path(), &["generate", "--alg", "rs256"]);
    assert_eq!(bad_alg.status.code(), Some(2));
}

#[test]
fn concurrent_generations_serialise_on_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let outcomes: Vec<Result<_, KeyringError>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| keyring::generate(dir.path(), Algorithm::EdDsa, NOW)))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let generated: Vec<_> = outcomes.iter().filter_map(|o| o.as_ref().ok()).collect();
    assert_eq!(generated.len(), 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter_map(|o| o.as_ref().err())
            .all(|e| matches!(e, KeyringError::NextExists(kid) if *kid == generated[0].kid)),
        "{outcomes:?}"
    );
    assert_eq!(
        keyring::list(dir.path()).unwrap(),
        vec![generated[0].clone()]
    );
    let key_files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".key.pem")
        })
        .count();
    assert_eq!(key_files, 1);
}

#[test]
fn a_reader_never_sees_half_a_keyring_while_the_cli_rotates() {
    let dir = tempfile::tempdir().unwrap();
    keyring::ensure_current(dir.path(), Algorithm::Es256, NOW).unwrap();
    let handle = KeyringHandle::open(dir.path()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let policy = RotationPolicy::default();
            for round in 0..25 {
                let now = NOW + round * 10_000;
                keyring::generate(dir.path(), Algorithm::Es256, now).unwrap();
                keyring::rotate(dir.path(), now + 1, policy, true).unwrap();
                for key in keyring::list(dir.path()).unwrap() {
                    if key.state == KeyState::Previous {
                        keyring::retire(dir.path(), &key.kid, now + 2, policy, true).unwrap();
                    }
                }
            }
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        let mut reloads = 0;
        while !done.load(std::sync::atomic::Ordering::SeqCst) || reloads == 0 {
            match handle.reload() {
                Ok(_) => {}
                // A key retired between reading the manifest and reading its file: the
                // reload is refused whole and the next one succeeds.
                Err(KeyringError::Io { source, .. })
                    if source.kind() == std::io::ErrorKind::NotFound => {}
                Err(other) => panic!("reader saw a damaged keyring: {other}"),
            }
            reloads += 1;
            let keyring = handle.load();
            let current = keyring.current_kid().unwrap().to_owned();
            let published: Value = serde_json::from_slice(&keyring.jwks_json()).unwrap();
            assert!(
                published["keys"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|k| k["kid"] == current.as_str())
            );
            let token = keyring.sign(TokenKind::AccessToken, &claims(NOW)).unwrap();
            assert!(
                keyring
                    .verify::<Value>(&token, TokenKind::AccessToken, &expectations(NOW))
                    .is_ok()
            );
        }
    });
    handle.reload().unwrap();
    assert_eq!(handle.load().keys().len(), 1);
}

#[test]
fn header_tricks_and_oversized_tokens_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let kid = keyring::ensure_current(dir.path(), Algorithm::Es256, NOW)
        .unwrap()
        .unwrap();
    let handle = KeyringHandle::open(dir.path()).unwrap();

    // A code relabelled as an access token: the header is signed too.
    let code = handle
        .load()
        .sign(TokenKind::AuthorizationCode, &claims(NOW))
        .unwrap();
    let mut header = header_of(&code);
    header["typ"] = json!("at+jwt");
    let (_, rest) = code.split_once('.').unwrap();
    let relabelled = format!(
        "{}.{rest}",
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).unwrap())
    );
    assert_eq!(
        verify_access(&handle, &relabelled, NOW),
        Err(TokenError::BadSignature)
    );

    // `typ` is compared exactly.
    for typ in ["AT+JWT", "JWT", "application/at+jwt"] {
        let forged = forge(
            &json!({"alg": "ES256", "typ": typ, "kid": kid}),
            &claims(NOW),
            &[0; 64],
        );
        assert_eq!(
            verify_access(&handle, &forged, NOW),
            Err(TokenError::WrongType),
            "{typ}"
        );
    }

    // Key ids are looked up, never used as paths.
    for evil_kid in ["../keyring", "/etc/passwd", "", "x; rm -rf /"] {
        let forged = forge(
            &json!({"alg": "ES256", "typ": "at+jwt", "kid": evil_kid}),
            &claims(NOW),
            &[0; 64],
        );
        assert_eq!(
            verify_access(&handle, &forged, NOW),
            Err(TokenError::UnknownKey)
        );
    }
    let no_kid = forge(
        &json!({"alg": "ES256", "typ": "at+jwt"}),
        &claims(NOW),
        &[0; 64],
    );
    assert_eq!(
        verify_access(&handle, &no_kid, NOW),
        Err(TokenError::UnknownKey)
    );

    // EdDSA claimed for an ES256 key.
    let wrong_alg = forge(
        &json!({"alg": "EdDSA", "typ": "at+jwt", "kid": kid}),
        &claims(NOW),
        &[0; 64],
    );
    assert_eq!(
        verify_access(&handle, &wrong_alg, NOW),
        Err(TokenError::UnknownKey)
    );

    let none = forge(
        &json!({"alg": "none", "typ": "at+jwt", "kid": kid}),
        &claims(NOW),
        b"",
    );
    assert_eq!(
        verify_access(&handle, &none, NOW),
        Err(TokenError::Malformed)
    );

    let mut huge = claims(NOW);
    huge["pad"] = json!("x".repeat(9000));
    let oversized = handle.load().sign(TokenKind::AccessToken, &huge).unwrap();
    assert_eq!(
        verify_access(&handle, &oversized, NOW),
        Err(TokenError::Malformed)
    );

    let mut no_exp = claims(NOW);
    no_exp.as_object_mut().unwrap().remove("exp");
    let no_exp = handle.load().sign(TokenKind::AccessToken, &no_exp).unwrap();
    assert_eq!(
        verify_access(&handle, &no_exp, NOW),
        Err(TokenError::Malformed)
    );
}

#[test]
fn keys_cli_generates_lists_rotates_and_retires() {
    let dir = tempfile::tempdir().unwrap();
    let empty = keys_cli(dir.path(), &["list"]);
    assert!(empty.status.success(), "{empty:?}");
    assert_eq!(String::from_utf8_lossy(&empty.stdout).lines().count(), 1);

    let first = keys_cli(dir.path(), &["generate", "--alg", "eddsa"]);
    assert!(first.status.success(), "{first:?}");
    let first = String::from_utf8(first.stdout).unwrap().trim().to_owned();
    let jwks = jwks(&KeyringHandle::open(dir.path()).unwrap());
    assert_eq!(jwks["keys"][0]["kid"], first.as_str());
    assert_eq!(jwks["keys"][0]["alg"], "EdDSA");

    let too_short = keys_cli(dir.path(), &["rotate", "--min-published-secs", "5"]);
    assert_eq!(too_short.status.code(), Some(2), "{too_short:?}");
    let stderr = String::from_utf8_lossy(&too_short.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("reload interval"), "{stderr}");

    assert!(
        keys_cli(dir.path(), &["rotate", "--force"])
            .status
            .success()
    );
    let second = keys_cli(dir.path(), &["generate"]);
    let second = String::from_utf8(second.stdout).unwrap().trim().to_owned();
    let retire_next = keys_cli(dir.path(), &["retire", &second, "--force"]);
    assert_eq!(retire_next.status.code(), Some(2), "{retire_next:?}");
    assert!(
        keys_cli(dir.path(), &["rotate", "--force"])
            .status
            .success()
    );

    // The first key has just been deactivated: its tokens may still be valid.
    let early = keys_cli(dir.path(), &["retire", &first]);
    assert_eq!(early.status.code(), Some(2), "{early:?}");
    let stderr = String::from_utf8_lossy(&early.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&first) && stderr.contains("--force"),
        "{stderr}"
    );

    let listed = keys_cli(dir.path(), &["list"]);
    let table = String::from_utf8_lossy(&listed.stdout).into_owned();
    let row = table.lines().find(|l| l.starts_with(&first)).unwrap();
    let columns: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&columns[1..3], ["EdDSA", "previous"], "{table}");
    // created, activated, deactivated: RFC 3339 in UTC.
    for at in &columns[3..6] {
        assert!(
            at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
            "{table}"
        );
    }
    let row = table.lines().find(|l| l.starts_with(&second)).unwrap();
    assert!(
        row.contains(" ES256 ") && row.contains(" current "),
        "{table}"
    );

    let retired = keys_cli(dir.path(), &["retire", &first, "--force"]);
    assert!(retired.status.success(), "{retired:?}");
    assert!(!dir.path().join(format!("{first}.key.pem")).exists());
    let listed = keys_cli(dir.path(), &["list"]);
    assert!(!String::from_utf8_lossy(&listed.stdout).contains(&first));
}

#[test]
fn keys_cli_reports_a_damaged_keys_directory_as_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(keyring::MANIFEST_FILE), b"{").unwrap();
    let listed = keys_cli(dir.path(), &["list"]);
    assert_eq!(listed.status.code(), Some(1), "{listed:?}");
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains(keyring::MANIFEST_FILE), "{stderr}");
}

/// A token verified once is remembered, but every later check still applies its time,
/// issuer and audience rules, and a code is never answered from what an access token left.
#[test]
fn remembered_tokens_still_expire_and_keep_their_audience_and_type() {
    let dir = tempfile::tempdir().unwrap();
    keyring::ensure_current(dir.path(), Algorithm::Es256, NOW).unwrap();
    let handle = KeyringHandle::open(dir.path()).unwrap();
    let token = handle
        .load()
        .sign(TokenKind::AccessToken, &claims(NOW))
        .unwrap();
    assert!(verify_access(&handle, &token, NOW).is_ok());
    assert_eq!(
        handle.load().remembered_tokens(),
        1,
        "the token is remembered"
    );
    assert_eq!(
        verify_access(&handle, &token, NOW).unwrap()["sub"],
        "user-1"
    );
    assert_eq!(
        verify_access(&handle, &token, NOW + 600 + 61),
        Err(TokenError::Expired)
    );
    let elsewhere = Expectations {
        audience: Some("client-2"),
        ..expectations(NOW)
    };
    assert_eq!(
        handle
            .load()
            .verify::<Value>(&token, TokenKind::AccessToken, &elsewhere),
        Err(TokenError::WrongAudience)
    );
    assert_eq!(
        handle
            .load()
            .verify::<Value>(&token, TokenKind::AuthorizationCode, &expectations(NOW)),
        Err(TokenError::WrongType)
    );
}
