//! `linkd users import` as an operator runs it, on both stores: users moved in with the hashes
//! of other systems sign in through the real sign-in form over TLS and come out with linkd's
//! argon2id (`linkd users show`), bad files change nothing unless `--skip-bad`.

use std::path::Path;
use std::process::Output;

use linkd::store::ClientSettings;

use crate::support::browser::{Browser, Platform, agree_and_fetch_userinfo};
use crate::support::linkd::TestServer;
use crate::support::redis_server::RedisServer;
use crate::support::{REDIRECT, cli, encode, flow, provision};

/// The password behind every hash below.
const PASSWORD: &str = "correct horse battery staple";

// Made outside linkd: Python's `bcrypt` (`hashpw`), `hashlib.pbkdf2_hmac` and `hashlib.scrypt`
// written as PHC strings, and `argon2-cffi`. The costs are modest so that unoptimised test
// builds verify them quickly; the unit tests of `linkd::users::password` verify the
// frameworks' current defaults.
const BCRYPT: &str = "$2b$10$FIgckiF1Yn3TJsQNt.oaXOV2NEG0w6ajcG3sREVXjOBSmdTvM/RxO";
const PBKDF2_SHA256: &str = "$pbkdf2-sha256$i=20000,l=32$gHQSCVCJo02NjhHI4SaaEQ$T8AW8xOa/rf+nQ/pjm9cFMpG8PeCp38W+PqHbTM/O1g";
const PBKDF2_SHA512: &str = "$pbkdf2-sha512$i=10000,l=64$gHQSCVCJo02NjhHI4SaaEQ$IFWAhotaO9vM49K/jsp2bKD2EjcH3hidL6OIbu6lgklaSsD0jdCNWHCu9q9pzJGotQmQnNHQ/w9ESLxa3FbbNA";
const SCRYPT: &str =
    "$scrypt$ln=14,r=8,p=1$gjREVY78j34wP2/TeiDQyQ$Yh2ALtYbSH0K+4uDJPSxvVwXqKagjeAx18F8U30HGzk";
const ARGON2I: &str = "$argon2i$v=19$m=8192,t=2,p=1$TAuYWayduyx/3/qhpflxww$C9RHrCFUKJcaAWNSughqna4m+8q0q9xikdJUhgB/FK0";
const DJANGO: &str =
    "pbkdf2_sha256$29000$5OKkk9nUTeUS$vWFh0JP1nspvS1W4P8qN21kRLhSNjNqin+s3moZIMw4=";

/// A store of the kind asked for, and a directory for the import files.
struct Place {
    location: String,
    dir: tempfile::TempDir,
    _redis: Option<RedisServer>,
}

impl Place {
    fn new(redis: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let redis = redis.then(RedisServer::start);
        let location = match &redis {
            Some(server) => server.url(),
            None => dir.path().join("linkd.db").display().to_string(),
        };
        Self {
            location,
            dir,
            _redis: redis,
        }
    }

    fn write(&self, name: &str, lines: &[String]) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, lines.join("\n")).unwrap();
        path.display().to_string()
    }

    fn run(&self, args: &[&str]) -> Output {
        cli::run(&self.location, args, None)
    }

    fn import(&self, file: &str, skip_bad: bool) -> Output {
        let mut args = vec!["users", "import", "--file", file];
        if skip_bad {
            args.push("--skip-bad");
        }
        self.run(&args)
    }

    fn show(&self, email: &str) -> serde_json::Value {
        let shown = cli::run_ok(
            &self.location,
            &["users", "show", email, "--output", "json"],
            None,
        );
        serde_json::from_str(&shown).unwrap()
    }

    fn emails(&self) -> Vec<String> {
        let listed = cli::run_ok(&self.location, &["users", "list", "--output", "json"], None);
        let users: Vec<serde_json::Value> = serde_json::from_str(&listed).unwrap();
        users
            .iter()
            .map(|user| user["email"].as_str().unwrap().to_owned())
            .collect()
    }
}

fn hash_line(email: &str, hash: &str) -> String {
    serde_json::json!({ "email": email, "password_hash": hash }).to_string()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// A bcrypt, two PBKDF2, a scrypt, an argon2i and a plain-password user: each keeps its scheme
/// until it signs in through the form, a wrong password fails and changes nothing, the right
/// one signs in and leaves argon2id behind, which the same password then matches.
async fn imported_users_sign_in_and_are_rehashed_to_argon2id(redis: bool) {
    let place = Place::new(redis);
    let users = [
        ("bcrypt@example.com", "bcrypt", BCRYPT),
        ("pbkdf2@example.com", "pbkdf2-sha256", PBKDF2_SHA256),
        ("pbkdf2-512@example.com", "pbkdf2-sha512", PBKDF2_SHA512),
        ("scrypt@example.com", "scrypt", SCRYPT),
        ("argon2i@example.com", "argon2i", ARGON2I),
    ];
    let mut lines: Vec<String> = users
        .iter()
        .map(|(email, _, hash)| hash_line(email, hash))
        .collect();
    lines.push(
        serde_json::json!({
            "email": "Plain@Example.com",
            "name": "Plain Person",
            "given_name": "Plain",
            "family_name": "Person",
            "picture": "https://example.com/plain.png",
            "password": PASSWORD,
        })
        .to_string(),
    );
    let file = place.write("users.jsonl", &lines);
    let imported = place.import(&file, false);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    assert_eq!(text(&imported.stdout), "imported 6, skipped 0\n");
    assert_eq!(text(&imported.stderr), "");

    let plain = place.show("plain@example.com");
    assert_eq!(plain["password_scheme"], "argon2id");
    assert_eq!(plain["name"], "Plain Person");
    assert_eq!(plain["given_name"], "Plain");
    assert_eq!(plain["family_name"], "Person");
    assert_eq!(plain["picture"], "https://example.com/plain.png");
    assert!(plain["id"].as_str().is_some_and(|id| id.len() == 36));
    assert!(plain.get("password_hash").is_none());
    assert_eq!(place.show(plain["id"].as_str().unwrap()), plain, "by id");

    let location = place.location.clone();
    let server = TestServer::start(move |settings| settings.store = location).await;
    provision::acme(server.server.app(), None, None, ClientSettings::default()).await;
    let target = server.target();
    let request = format!(
        "client_id=acme&redirect_uri={}&state=xyz&response_type=code",
        encode(REDIRECT)
    );
    for (email, scheme, _) in users {
        assert_eq!(place.show(email)["password_scheme"], scheme, "{email}");
        let wrong = flow::sign_in_attempt(&target, &request, email, "not the password", &[]).await;
        assert_eq!(wrong.status, 401, "{email}: {}", wrong.text());
        assert_eq!(
            place.show(email)["password_scheme"],
            scheme,
            "{email}: a failed sign-in rehashed"
        );

        flow::sign_in_over_http(&target, &request, email, PASSWORD).await;
        assert_eq!(
            place.show(email)["password_scheme"],
            "argon2id",
            "{email} was not rehashed"
        );
        // The new hash is the same password's, and the session begun under it works.
        let (cookies, _) = flow::sign_in_over_http(&target, &request, email, PASSWORD).await;
        let account = flow::get(&target, "/account", &[("cookie", &cookies)]).await;
        assert_eq!(account.status, 200, "{email}: {}", account.text());
        let wrong = flow::sign_in_attempt(&target, &request, email, "not the password", &[]).await;
        assert_eq!(wrong.status, 401, "{email}");
    }
    flow::sign_in_over_http(&target, &request, "plain@example.com", PASSWORD).await;
    assert_eq!(
        place.show("plain@example.com")["password_scheme"],
        "argon2id"
    );
}

/// A person whose account was moved in with a bcrypt hash links in Chromium with the old
/// password: the platform gets a code that redeems, and the account now has argon2id.
async fn an_imported_user_links_in_a_browser(redis: bool) {
    let place = Place::new(redis);
    let line = serde_json::json!({
        "email": "ada@example.com",
        "name": "Ada Lovelace",
        "password_hash": BCRYPT,
    })
    .to_string();
    let file = place.write("users.jsonl", &[line]);
    let imported = place.import(&file, false);
    assert!(imported.status.success(), "{}", text(&imported.stderr));
    assert_eq!(place.show("ada@example.com")["password_scheme"], "bcrypt");

    let platform = Platform::start().await;
    let (location, base) = (place.location.clone(), platform.base());
    let server = TestServer::start(move |settings| {
        settings.store = location;
        settings.oauth.redirect_bases = vec![base];
    })
    .await;
    let secret = provision::acme(
        server.server.app(),
        Some("Acme Home"),
        None,
        ClientSettings::default(),
    )
    .await;
    let redirect_uri = format!("{}/r/acme-project", platform.base());
    let browser = Browser::start().await;
    browser
        .goto(&format!(
            "https://localhost:{}/authorize?client_id=acme&redirect_uri={}&state=s1&response_type=code&scope=email",
            server.address.port(),
            encode(&redirect_uri)
        ))
        .await;
    browser.sign_in("ada@example.com", "not the password").await;
    let failed = browser.text().await;
    assert!(failed.contains("do not match an account"), "{failed}");
    assert_eq!(place.show("ada@example.com")["password_scheme"], "bcrypt");

    browser.sign_in("ada@example.com", PASSWORD).await;
    let userinfo = agree_and_fetch_userinfo(
        &browser,
        &platform,
        &server.target(),
        &redirect_uri,
        &secret,
        "s1",
    )
    .await;
    assert_eq!(userinfo["email"], "ada@example.com");
    assert_eq!(place.show("ada@example.com")["password_scheme"], "argon2id");
    browser.close().await;
}

/// The rehash at sign-in never undoes a password change that came first: a replacement for
/// a hash the store no longer holds writes nothing.
async fn a_rehash_never_overwrites_a_newer_password(redis: bool) {
    let place = Place::new(redis);
    let file = place.write("users.jsonl", &[hash_line("ada@example.com", BCRYPT)]);
    assert!(place.import(&file, false).status.success());
    let store = linkd::store::open(&place.location, linkd::store::StoreTimeouts::default())
        .await
        .unwrap();
    let imported = store
        .get_user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    let changed = cli::run(
        &place.location,
        &[
            "users",
            "set-password",
            "ada@example.com",
            "--password-stdin",
        ],
        Some("the newest password"),
    );
    assert!(changed.status.success(), "{}", text(&changed.stderr));
    let rehashed = linkd::users::rehash_password(PASSWORD).unwrap();
    let outcome = linkd::users::replace_password_hash(&*store, &imported, rehashed.clone())
        .await
        .unwrap();
    assert_eq!(outcome, linkd::users::HashReplaced::Changed);
    let stored = store
        .get_user_by_email("ada@example.com")
        .await
        .unwrap()
        .unwrap();
    assert!(linkd::users::verify_password(
        Some(&stored),
        "the newest password"
    ));
    assert!(!linkd::users::verify_password(Some(&stored), PASSWORD));

    // With the hash it was given still in place, the replacement is written.
    let outcome = linkd::users::replace_password_hash(&*store, &stored, rehashed.clone())
        .await
        .unwrap();
    let linkd::users::HashReplaced::Replaced(updated) = outcome else {
        panic!("not replaced: {outcome:?}");
    };
    assert_eq!(updated.password_hash, rehashed);
    assert_eq!(updated.id, stored.id);
    assert!(linkd::users::verify_password(Some(&updated), PASSWORD));
}

/// A file with bad lines imports nothing and names each bad line, the first in the last line
/// of stderr; no password or hash is ever repeated. `--skip-bad` imports the rest.
async fn bad_lines_are_reported_and_nothing_is_imported_unless_skip_bad(redis: bool) {
    let place = Place::new(redis);
    let hostile_bcrypt = format!("$2b$31${}", &BCRYPT[7..]);
    let lines = vec![
        hash_line("first@example.com", BCRYPT),
        "{\"email\": \"broken@example.com\", \"password\": ".to_owned(),
        String::new(),
        hash_line("costly@example.com", &hostile_bcrypt),
        hash_line("First@Example.com", SCRYPT),
        hash_line("django@example.com", DJANGO),
        serde_json::json!({"email": "extra@example.com", "password": PASSWORD, "admin": true})
            .to_string(),
        serde_json::json!({"email": "both@example.com", "password": PASSWORD, "password_hash": BCRYPT})
            .to_string(),
        serde_json::json!({"email": "neither@example.com"}).to_string(),
        serde_json::json!({"email": "short@example.com", "password": "1234567"}).to_string(),
        serde_json::json!({"email": "typed@example.com", "password": 12_345_678}).to_string(),
        serde_json::json!({"email": "not an email", "password": PASSWORD}).to_string(),
        serde_json::json!({"email": "http@example.com", "picture": "http://example.com/a.png", "password": PASSWORD}).to_string(),
        hash_line("second@example.com", PBKDF2_SHA256),
    ];
    let file = place.write("bad.jsonl", &lines);
    let refused = place.import(&file, false);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert_eq!(text(&refused.stdout), "");
    let expected = [
        (2, "not valid JSON"),
        (
            4,
            "password_hash: bcrypt cost 31 is outside the accepted 4–14",
        ),
        (5, "email \"first@example.com\" is also on an earlier line"),
        (6, "Django"),
        (7, "unknown field `admin`"),
        (8, "both \"password\" and \"password_hash\""),
        (9, "neither \"password\" nor \"password_hash\""),
        (
            10,
            "password: the password is 7 characters; at least 8 are required",
        ),
        (11, "not a JSON object whose fields are strings or null"),
        (12, "email \"not an email\": not a valid email address"),
        (
            13,
            "picture \"http://example.com/a.png\": must be an https:// URL",
        ),
    ];
    let reported: Vec<&str> = stderr.lines().collect();
    assert_eq!(reported.len(), expected.len() + 1, "{stderr}");
    for ((line, reason), reported) in expected.iter().zip(&reported) {
        let prefix = format!("linkd: {file} line {line}: ");
        assert!(reported.starts_with(&prefix), "{reported}");
        assert!(reported.contains(reason), "line {line}: {reported}");
    }
    assert_eq!(
        reported.last().unwrap(),
        &format!(
            "linkd: {file}: 11 bad line(s), the first is line 2; nothing imported \
             (--skip-bad imports the other lines)"
        )
    );
    for secret in [
        PASSWORD,
        "1234567",
        "12345678",
        &BCRYPT[7..],
        &SCRYPT[22..],
        &DJANGO[20..],
    ] {
        assert!(!stderr.contains(secret), "{secret:?} leaked: {stderr}");
    }
    if redis {
        assert_eq!(
            place.emails(),
            Vec::<String>::new(),
            "something was imported"
        );
    } else {
        // Refused before the store is opened: not even an empty store is created.
        assert!(
            !Path::new(&place.location).exists(),
            "the store was created"
        );
    }

    let skipped = place.import(&file, true);
    let stderr = text(&skipped.stderr);
    assert!(skipped.status.success(), "{stderr}");
    assert_eq!(text(&skipped.stdout), "imported 2, skipped 11\n");
    assert_eq!(stderr.lines().count(), 11, "{stderr}");
    assert!(
        stderr.lines().all(|line| line.ends_with("(skipped)")),
        "{stderr}"
    );
    assert!(
        stderr.starts_with(&format!("linkd: {file} line 2: ")),
        "{stderr}"
    );
    assert_eq!(place.emails(), ["first@example.com", "second@example.com"]);
    assert_eq!(place.show("first@example.com")["password_scheme"], "bcrypt");
    assert_eq!(
        place.show("second@example.com")["password_scheme"],
        "pbkdf2-sha256"
    );
}

/// An email an existing user has (in any letter case) is a bad line: nothing is imported;
/// with `--skip-bad` the others are, and the existing user is left as it was.
async fn existing_users_are_bad_lines(redis: bool) {
    let place = Place::new(redis);
    let added = cli::run(
        &place.location,
        &[
            "users",
            "add",
            "--email",
            "ada@example.com",
            "--password-stdin",
        ],
        Some("ada's own password"),
    );
    assert!(added.status.success(), "{}", text(&added.stderr));
    let file = place.write(
        "users.jsonl",
        &[
            hash_line("grace@example.com", BCRYPT),
            hash_line("ADA@example.com", PBKDF2_SHA256),
            "{".to_owned(),
        ],
    );
    let refused = place.import(&file, false);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "linkd: {file} line 2: email \"ada@example.com\": a user with this email address already exists\n"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("linkd: {file} line 3: not valid JSON")),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 bad line(s), the first is line 2"),
        "{stderr}"
    );
    assert_eq!(place.emails(), ["ada@example.com"]);

    let skipped = place.import(&file, true);
    assert!(skipped.status.success(), "{}", text(&skipped.stderr));
    assert_eq!(text(&skipped.stdout), "imported 1, skipped 2\n");
    assert_eq!(place.emails(), ["ada@example.com", "grace@example.com"]);
    assert_eq!(place.show("ada@example.com")["password_scheme"], "argon2id");
}

/// An empty file, or one of blank lines, imports nobody and succeeds; stdin works as a file;
/// an unreadable file and an unknown user for `show` are bad input.
async fn empty_files_stdin_and_missing_things(redis: bool) {
    let place = Place::new(redis);
    for (name, content) in [("empty.jsonl", ""), ("blank.jsonl", "\n  \n\r\n")] {
        let path = place.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let imported = place.import(path.to_str().unwrap(), false);
        assert!(imported.status.success(), "{}", text(&imported.stderr));
        assert_eq!(text(&imported.stdout), "imported 0, skipped 0\n");
    }
    let from_stdin = cli::run(
        &place.location,
        &["users", "import", "--file", "-"],
        Some(&format!("{}\r\n", hash_line("stdin@example.com", SCRYPT))),
    );
    assert!(from_stdin.status.success(), "{}", text(&from_stdin.stderr));
    assert_eq!(text(&from_stdin.stdout), "imported 1, skipped 0\n");
    assert_eq!(place.show("stdin@example.com")["password_scheme"], "scrypt");

    let missing = place.dir.path().join("missing.jsonl");
    let refused = place.import(missing.to_str().unwrap(), false);
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("cannot read"));

    let unknown = place.run(&["users", "show", "nobody@example.com"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("no user with email address or id"));

    let shown = cli::run_ok(
        &place.location,
        &["users", "show", "stdin@example.com"],
        None,
    );
    assert!(shown.contains("email: stdin@example.com\n"), "{shown}");
    assert!(shown.contains("password_scheme: scrypt\n"), "{shown}");
    assert!(shown.contains("name: -\n"), "{shown}");
    assert!(!shown.contains("gjREVY78"), "the hash was shown: {shown}");
}

/// A file that is not UTF-8 is refused with the line of the first bad byte.
#[test]
fn a_file_that_is_not_utf8_is_refused_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("latin1.jsonl");
    let mut bytes = hash_line("first@example.com", BCRYPT).into_bytes();
    bytes.extend_from_slice(b"\n{\"email\": \"caf\xe9@example.com\"}\n");
    std::fs::write(&path, bytes).unwrap();
    let store = dir.path().join("linkd.db");
    let output = cli::run(
        &store,
        &["users", "import", "--file", path.to_str().unwrap()],
        None,
    );
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("line 2: not UTF-8; nothing imported"),
        "{}",
        text(&output.stderr)
    );
    assert!(
        !Path::new(&store).exists(),
        "a refused import created the store"
    );
}

on_both_stores!(
    imported_users_sign_in_and_are_rehashed_to_argon2id,
    an_imported_user_links_in_a_browser,
    a_rehash_never_overwrites_a_newer_password,
    bad_lines_are_reported_and_nothing_is_imported_unless_skip_bad,
    existing_users_are_bad_lines,
    empty_files_stdin_and_missing_things,
);
