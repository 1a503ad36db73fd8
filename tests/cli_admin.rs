//! `linkd clients …` and `linkd users …` driven as an operator would: the real binary against a
//! real SQLite file in a temporary directory, checked through its output, its exit codes and,
//! where the CLI cannot show it, by reading the same store through the library.

use std::path::{Path, PathBuf};
use std::process::Output;

use linkd::clients;
use linkd::secrets::sha256_hex;
use linkd::store::{SharedStore, StoreTimeouts};
use linkd::users;

use crate::support::cli;

/// One operator's installation: a temporary directory holding the SQLite store.
struct Installation {
    dir: tempfile::TempDir,
}

impl Installation {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn store_path(&self) -> PathBuf {
        self.dir.path().join("linkd.db")
    }

    /// Refused commands open no store, so none was created.
    fn assert_nothing_stored(&self) {
        assert!(
            !self.store_path().exists(),
            "a refused command created the store"
        );
    }

    /// Runs `linkd --store <store> <args>` with `stdin` piped in (empty when `None`).
    fn run(&self, args: &[&str], stdin: Option<&str>) -> Output {
        cli::run(self.store_path().to_str().unwrap(), args, stdin)
    }

    /// Like [`Installation::run`], asserting success, and returns stdout.
    fn run_ok(&self, args: &[&str], stdin: Option<&str>) -> String {
        let output = self.run(args, stdin);
        assert!(
            output.status.success(),
            "linkd {args:?} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8(output.stdout).unwrap()
    }

    /// Opens the same store through the library, as the server would.
    async fn open_store(&self) -> SharedStore {
        linkd::store::open(
            self.store_path().to_str().unwrap(),
            StoreTimeouts::default(),
        )
        .await
        .unwrap()
    }

    /// The bytes of every file the store left in the directory (database, WAL, shared memory).
    fn stored_bytes(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        for entry in std::fs::read_dir(self.dir.path()).unwrap() {
            bytes.extend(std::fs::read(entry.unwrap().path()).unwrap());
        }
        bytes
    }
}

/// Asserts that a command was refused as bad input: exit code 2 and exactly one line on stderr,
/// which is returned.
fn assert_bad_input(output: &Output) -> String {
    assert_refused_with(output, 2)
}

fn assert_refused_with(output: &Output, code: i32) -> String {
    let stderr = String::from_utf8(output.stderr.clone()).unwrap();
    assert_eq!(output.status.code(), Some(code), "stderr: {stderr}");
    assert_eq!(
        stderr.lines().count(),
        1,
        "expected one line, got: {stderr:?}"
    );
    assert!(stderr.starts_with("linkd: "), "{stderr}");
    stderr
}

fn secret_from(stdout: &str) -> String {
    let secret = stdout
        .lines()
        .find_map(|line| line.strip_prefix("client_secret: "))
        .unwrap_or_else(|| panic!("no client_secret line in {stdout:?}"));
    secret.to_owned()
}

const GOOGLE: [&str; 7] = [
    "clients",
    "add",
    "--id",
    "google",
    "--project-id",
    "my-project",
    "--name",
];

fn add_google(installation: &Installation) -> String {
    let mut args = GOOGLE.to_vec();
    args.push("Google Home");
    secret_from(&installation.run_ok(&args, None))
}

#[tokio::test]
async fn clients_add_prints_the_generated_secret_once_and_list_never_shows_it() {
    let installation = Installation::new();
    let mut args = GOOGLE.to_vec();
    args.push("Google Home");
    let added = installation.run_ok(&args, None);
    let secret = secret_from(&added);
    assert_eq!(secret.len(), 43, "32 random bytes, base64url: {secret}");
    assert_eq!(added.matches(&secret).count(), 1);
    assert!(added.contains("shown only once"), "{added}");

    let listed = installation.run_ok(&["clients", "list"], None);
    let lines = listed.lines().collect::<Vec<_>>();
    assert_eq!(lines.len(), 2, "{listed}");
    for column in ["ID", "PROJECT", "NAME", "CREATED"] {
        assert!(lines[0].contains(column), "{listed}");
    }
    for value in ["google", "my-project", "Google Home"] {
        assert!(lines[1].contains(value), "{listed}");
    }
    let created = lines[1].split_whitespace().last().unwrap();
    assert!(
        created.len() == 20 && created.ends_with('Z') && created.as_bytes()[10] == b'T',
        "created should be RFC 3339 UTC: {created}"
    );
    assert!(!listed.contains(&secret));
    assert!(!listed.contains(&sha256_hex(secret.as_bytes())));

    let store = installation.open_store().await;
    let record = store.get_client("google").await.unwrap();
    assert!(clients::verify_secret(record.as_ref(), &secret));
    assert!(!clients::verify_secret(record.as_ref(), "not-the-secret"));
}

#[tokio::test]
async fn clients_add_with_secret_stdin_stores_the_given_secret() {
    let installation = Installation::new();
    let secret = "operator-chosen-secret-0123456789";
    let added = installation.run_ok(
        &[
            "clients",
            "add",
            "--id",
            "alexa",
            "--project-id",
            "p1",
            "--secret-stdin",
        ],
        Some(&format!("{secret}\n")),
    );
    assert!(!added.contains(secret), "{added}");
    assert!(!added.contains("client_secret"), "{added}");

    let listed = installation.run_ok(&["clients", "list"], None);
    assert!(listed.lines().nth(1).unwrap().contains("alexa"), "{listed}");

    let store = installation.open_store().await;
    let record = store.get_client("alexa").await.unwrap().unwrap();
    assert_eq!(record.name, "alexa", "the name defaults to the id");
    assert!(clients::verify_secret(Some(&record), secret));
    assert!(!clients::verify_secret(
        Some(&record),
        &format!("{secret}\n")
    ));
}

#[test]
fn an_empty_or_short_secret_on_stdin_is_refused_and_nothing_is_registered() {
    let installation = Installation::new();
    let args = [
        "clients",
        "add",
        "--id",
        "alexa",
        "--project-id",
        "p1",
        "--secret-stdin",
    ];
    let cases = [
        (None, "empty"),
        (Some("\n"), "empty"),
        (Some("too-short-123\n"), "at least 16"),
    ];
    for (stdin, reason) in cases {
        let refused = assert_bad_input(&installation.run(&args, stdin));
        assert!(refused.contains("--secret-stdin"), "{refused}");
        assert!(refused.contains(reason), "{refused}");
        assert!(!refused.contains("too-short-123"), "the secret was echoed");
    }
    installation.assert_nothing_stored();
}

#[tokio::test]
async fn a_duplicate_client_id_is_refused_and_the_original_is_unchanged() {
    let installation = Installation::new();
    let secret = add_google(&installation);
    let before = installation.run_ok(&["clients", "list"], None);

    let refused = assert_bad_input(&installation.run(
        &[
            "clients",
            "add",
            "--id",
            "google",
            "--project-id",
            "other-project",
        ],
        None,
    ));
    assert!(refused.contains("--id \"google\""), "{refused}");
    assert!(refused.contains("already exists"), "{refused}");

    assert_eq!(installation.run_ok(&["clients", "list"], None), before);
    let store = installation.open_store().await;
    let record = store.get_client("google").await.unwrap();
    assert!(clients::verify_secret(record.as_ref(), &secret));
}

#[test]
fn malformed_client_arguments_are_refused_with_the_flag_named() {
    let installation = Installation::new();
    let cases: [(&[&str], &str); 4] = [
        (&["--id", "has space", "--project-id", "p"], "--id "),
        (&["--id", "", "--project-id", "p"], "--id "),
        (&["--id", "ok", "--project-id", "a/b"], "--project-id "),
        (
            &["--id", "ok", "--project-id", "p", "--name", "a\nb"],
            "--name ",
        ),
    ];
    for (args, flag) in cases {
        let mut full = vec!["clients", "add"];
        full.extend_from_slice(args);
        let refused = assert_bad_input(&installation.run(&full, None));
        assert!(refused.starts_with(&format!("linkd: {flag}")), "{refused}");
    }
    installation.assert_nothing_stored();
}

#[test]
fn clients_remove_needs_yes_and_then_removes() {
    let installation = Installation::new();
    add_google(&installation);
    let before = installation.run_ok(&["clients", "list"], None);

    let refused = assert_bad_input(&installation.run(&["clients", "remove", "google"], None));
    assert!(refused.contains("--yes"), "{refused}");
    assert_eq!(installation.run_ok(&["clients", "list"], None), before);

    installation.run_ok(&["clients", "remove", "google", "--yes"], None);
    let after = installation.run_ok(&["clients", "list"], None);
    assert_eq!(after.lines().count(), 1, "{after}");

    let refused =
        assert_bad_input(&installation.run(&["clients", "remove", "google", "--yes"], None));
    assert!(refused.contains("no client"), "{refused}");
}

const PASSWORD: &str = "correct horse battery staple";

fn add_ada(installation: &Installation) -> String {
    let stdout = installation.run_ok(
        &[
            "users",
            "add",
            "--email",
            "Ada@Example.com",
            "--name",
            "Ada Lovelace",
            "--given-name",
            "Ada",
            "--family-name",
            "Lovelace",
            "--picture",
            "https://example.com/ada.png",
            "--password-stdin",
        ],
        Some(&format!("{PASSWORD}\n")),
    );
    stdout.trim().to_owned()
}

#[tokio::test]
async fn users_add_prints_the_id_and_list_shows_the_user() {
    let installation = Installation::new();
    let id = add_ada(&installation);
    let parsed = uuid::Uuid::parse_str(&id).unwrap_or_else(|_| panic!("not a UUID: {id:?}"));
    assert_eq!(parsed.get_version_num(), 4);

    let listed = installation.run_ok(&["users", "list"], None);
    let lines = listed.lines().collect::<Vec<_>>();
    assert_eq!(lines.len(), 2, "{listed}");
    for column in ["ID", "EMAIL", "NAME", "CREATED"] {
        assert!(lines[0].contains(column), "{listed}");
    }
    for value in [id.as_str(), "ada@example.com", "Ada Lovelace"] {
        assert!(lines[1].contains(value), "{listed}");
    }
    assert!(
        !listed.contains("argon2"),
        "no hash in the listing: {listed}"
    );

    let store = installation.open_store().await;
    let user = store.get_user(&id).await.unwrap().unwrap();
    assert_eq!(user.email, "ada@example.com");
    assert_eq!(user.given_name.as_deref(), Some("Ada"));
    assert_eq!(user.family_name.as_deref(), Some("Lovelace"));
    assert_eq!(user.picture.as_deref(), Some("https://example.com/ada.png"));
    assert!(users::verify_password(Some(&user), PASSWORD));
    assert!(!users::verify_password(
        Some(&user),
        "correct horse battery stapl"
    ));
}

#[test]
fn malformed_emails_are_refused_and_nothing_is_added() {
    let installation = Installation::new();
    let cases = [
        ("ada.example.com", "missing \"@\""),
        ("ada@@example.com", "more than one \"@\""),
        ("@example.com", "nothing before \"@\""),
        ("ada@localhost", "has no \".\""),
        ("ada lovelace@example.com", "space"),
        ("ada@-example.com", "starts or ends with \"-\""),
        ("ada@exa_mple.com", "'_'"),
        ("", "empty"),
    ];
    for (email, reason) in cases {
        let refused = assert_bad_input(&installation.run(
            &["users", "add", "--email", email, "--password-stdin"],
            Some(&format!("{PASSWORD}\n")),
        ));
        assert!(
            refused.starts_with(&format!(
                "linkd: --email {email:?}: not a valid email address"
            )),
            "{refused}"
        );
        assert!(refused.contains(reason), "{email:?}: {refused}");
    }
    installation.assert_nothing_stored();
}

#[test]
fn bad_profile_fields_and_passwords_are_refused_and_nothing_is_added() {
    let installation = Installation::new();
    let long_name = "n".repeat(201);
    let cases: [(&[&str], &str, &str); 5] = [
        (
            &["--picture", "http://example.com/a.png"],
            PASSWORD,
            "--picture ",
        ),
        (
            &["--picture", "javascript:alert(1)"],
            PASSWORD,
            "--picture ",
        ),
        (&["--name", &long_name], PASSWORD, "--name: "),
        (&[], "short", "--password-stdin: "),
        (&[], "", "--password-stdin: "),
    ];
    for (extra, password, flag) in cases {
        let mut args = vec![
            "users",
            "add",
            "--email",
            "ada@example.com",
            "--password-stdin",
        ];
        args.extend_from_slice(extra);
        let refused = assert_bad_input(&installation.run(&args, Some(&format!("{password}\n"))));
        assert!(refused.starts_with(&format!("linkd: {flag}")), "{refused}");
        if !password.is_empty() {
            assert!(!refused.contains(password), "the password was echoed");
        }
    }
    installation.assert_nothing_stored();
}

#[test]
fn a_password_is_only_accepted_on_stdin() {
    let installation = Installation::new();
    let without_flag = installation.run(
        &["users", "add", "--email", "ada@example.com"],
        Some(&format!("{PASSWORD}\n")),
    );
    assert_eq!(without_flag.status.code(), Some(2));
    let on_argv = installation.run(
        &[
            "users",
            "add",
            "--email",
            "ada@example.com",
            "--password",
            PASSWORD,
        ],
        None,
    );
    assert_eq!(on_argv.status.code(), Some(2));
    installation.assert_nothing_stored();
}

#[test]
fn a_duplicate_email_in_another_case_is_refused() {
    let installation = Installation::new();
    add_ada(&installation);
    let before = installation.run_ok(&["users", "list"], None);
    let refused = assert_bad_input(&installation.run(
        &[
            "users",
            "add",
            "--email",
            " ADA@example.COM",
            "--password-stdin",
        ],
        Some("another password\n"),
    ));
    assert!(refused.contains("already exists"), "{refused}");
    assert_eq!(installation.run_ok(&["users", "list"], None), before);
}

#[test]
fn users_remove_needs_yes_and_accepts_email_or_id() {
    let installation = Installation::new();
    let id = add_ada(&installation);
    let before = installation.run_ok(&["users", "list"], None);

    let refused =
        assert_bad_input(&installation.run(&["users", "remove", "ada@example.com"], None));
    assert!(refused.contains("--yes"), "{refused}");
    assert_eq!(installation.run_ok(&["users", "list"], None), before);

    installation.run_ok(&["users", "remove", "ADA@example.com", "--yes"], None);
    assert_eq!(
        installation
            .run_ok(&["users", "list"], None)
            .lines()
            .count(),
        1
    );
    let refused = assert_bad_input(&installation.run(&["users", "remove", &id, "--yes"], None));
    assert!(refused.contains("no user"), "{refused}");

    let second = add_ada(&installation);
    installation.run_ok(&["users", "remove", &second, "--yes"], None);
    assert_eq!(
        installation
            .run_ok(&["users", "list"], None)
            .lines()
            .count(),
        1
    );
}

#[tokio::test]
async fn set_password_replaces_the_password() {
    let installation = Installation::new();
    let id = add_ada(&installation);
    let new_password = "a completely different passphrase";
    installation.run_ok(
        &[
            "users",
            "set-password",
            "ada@example.com",
            "--password-stdin",
        ],
        Some(&format!("{new_password}\n")),
    );

    let store = installation.open_store().await;
    let user = store.get_user(&id).await.unwrap().unwrap();
    assert!(users::verify_password(Some(&user), new_password));
    assert!(!users::verify_password(Some(&user), PASSWORD));

    let refused = assert_bad_input(&installation.run(
        &[
            "users",
            "set-password",
            "nobody@example.com",
            "--password-stdin",
        ],
        Some(&format!("{new_password}\n")),
    ));
    assert!(refused.contains("no user"), "{refused}");
    let refused = assert_bad_input(&installation.run(
        &["users", "set-password", &id, "--password-stdin"],
        Some("short\n"),
    ));
    assert!(refused.contains("at least 8"), "{refused}");
    let user = store.get_user(&id).await.unwrap().unwrap();
    assert!(
        users::verify_password(Some(&user), new_password),
        "a refused change must leave the password as it was"
    );
}

#[test]
fn the_store_holds_neither_plaintext_secrets_nor_passwords() {
    let installation = Installation::new();
    let generated = add_google(&installation);
    let supplied = "operator-chosen-secret-0123456789";
    installation.run_ok(
        &[
            "clients",
            "add",
            "--id",
            "alexa",
            "--project-id",
            "p1",
            "--secret-stdin",
        ],
        Some(supplied),
    );
    let id = add_ada(&installation);
    let changed = "a completely different passphrase";
    installation.run_ok(
        &["users", "set-password", &id, "--password-stdin"],
        Some(changed),
    );

    let stored = installation.stored_bytes();
    let contains = |needle: &str| {
        stored
            .windows(needle.len())
            .any(|window| window == needle.as_bytes())
    };
    assert!(
        contains("ada@example.com"),
        "the search must see stored data"
    );
    for plaintext in [generated.as_str(), supplied, PASSWORD, changed] {
        assert!(!contains(plaintext), "{plaintext:?} is stored in the clear");
    }
}

#[test]
fn an_unreachable_store_is_a_failure_not_bad_input() {
    for args in [
        &["clients", "list"][..],
        &["users", "list"][..],
        &["clients", "add", "--id", "google", "--project-id", "p"][..],
    ] {
        let output = cli::run("redis://127.0.0.1:1", args, None);
        assert_refused_with(&output, 1);
    }
}

#[test]
fn nothing_is_created_when_the_input_is_refused() {
    let installation = Installation::new();
    assert_bad_input(&installation.run(&["clients", "remove", "google"], None));
    assert_bad_input(&installation.run(&["clients", "add", "--id", "", "--project-id", "p"], None));
    assert!(
        !Path::new(&installation.store_path()).exists(),
        "bad input must not even create the store"
    );
}

#[tokio::test]
async fn clients_carry_branding_and_options_and_update_changes_only_what_is_given() {
    let installation = Installation::new();
    installation.run_ok(
        &[
            "clients",
            "add",
            "--id",
            "acme",
            "--project-id",
            "acme-project",
            "--company-name",
            "Acme",
            "--logo-url",
            "https://acme.example/logo.png",
            "--privacy-policy-url",
            "https://acme.example/privacy",
            "--redirect-uri",
            "https://acme.example/cb",
        ],
        None,
    );
    installation.run_ok(
        &[
            "clients",
            "update",
            "acme",
            "--name",
            "Acme Home",
            "--rfc6749-errors",
            "true",
            "--signup-url",
            "https://acme.example/join",
            "--forgot-password-url",
            "https://acme.example/forgot?from=linkd",
        ],
        None,
    );
    let shown = installation.run_ok(&["clients", "show", "acme", "--output", "json"], None);
    let shown: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        shown["forgot_password_url"], "https://acme.example/forgot?from=linkd",
        "{shown}"
    );
    let store = installation.open_store().await;
    let record = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(record.name, "Acme Home");
    assert_eq!(record.settings.company_name.as_deref(), Some("Acme"));
    assert_eq!(
        record.settings.logo_url.as_deref(),
        Some("https://acme.example/logo.png")
    );
    assert_eq!(
        record.settings.signup_url.as_deref(),
        Some("https://acme.example/join")
    );
    assert_eq!(
        record.settings.forgot_password_url.as_deref(),
        Some("https://acme.example/forgot?from=linkd")
    );
    assert_eq!(
        record.settings.extra_redirect_uris,
        ["https://acme.example/cb"]
    );
    assert!(record.settings.rfc6749_errors);
    assert!(!record.settings.pkce_required);

    for (flag, value) in [
        ("--logo-url", "http://acme.example/logo.png"),
        ("--privacy-policy-url", "javascript:alert(1)"),
        ("--forgot-password-url", "http://acme.example/forgot"),
        ("--forgot-password-url", "https://acme.example/forgot\n"),
        ("--redirect-uri", "https://acme.example/cb#fragment"),
        ("--redirect-uri", "http://evil.example/cb"),
    ] {
        let refused = installation.run(&["clients", "update", "acme", flag, value], None);
        let line = assert_bad_input(&refused);
        assert!(line.contains(flag), "{line}");
    }
    let unchanged = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(unchanged, record);
    let unknown = installation.run(&["clients", "update", "nobody", "--name", "x"], None);
    assert_bad_input(&unknown);
}

#[tokio::test]
async fn clients_scopes_are_validated_listed_and_replaced() {
    // Refused before the store is even opened.
    let fresh = Installation::new();
    let refused = fresh.run(
        &[
            "clients",
            "add",
            "--id",
            "acme",
            "--project-id",
            "acme-project",
            "--scopes",
            "openid em\"ail",
        ],
        None,
    );
    assert!(assert_bad_input(&refused).contains("--scopes"));
    assert!(!fresh.store_path().exists());

    let installation = Installation::new();
    add_google(&installation);
    installation.run_ok(
        &[
            "clients",
            "add",
            "--id",
            "acme",
            "--project-id",
            "acme-project",
            "--scopes",
            "openid  read:lights",
        ],
        None,
    );
    let listed = installation.run_ok(&["clients", "list"], None);
    let lines = listed.lines().collect::<Vec<_>>();
    assert!(lines[0].contains("SCOPES"), "{listed}");
    let line = |id: &str| *lines.iter().find(|l| l.starts_with(id)).unwrap();
    assert!(line("acme").contains("openid read:lights"), "{listed}");
    assert!(
        line("google").contains("openid email profile devices"),
        "the default scopes: {listed}"
    );
    let store = installation.open_store().await;
    let record = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(record.settings.scopes.0, ["openid", "read:lights"]);

    installation.run_ok(
        &["clients", "update", "acme", "--scopes", "openid email"],
        None,
    );
    let updated = store.get_client("acme").await.unwrap().unwrap();
    assert_eq!(updated.settings.scopes.0, ["openid", "email"]);
    assert_eq!(updated.name, record.name);

    for value in [
        "",
        "   ",
        "email email",
        "openid em\"ail",
        "back\\slash",
        "caf\u{e9}",
        "email\tprofile",
    ] {
        let refused = installation.run(&["clients", "update", "acme", "--scopes", value], None);
        let line = assert_bad_input(&refused);
        assert!(line.contains("--scopes"), "{value:?}: {line}");
        let refused = installation.run(
            &[
                "clients",
                "add",
                "--id",
                "other",
                "--project-id",
                "other-project",
                "--scopes",
                value,
            ],
            None,
        );
        assert_bad_input(&refused);
    }
    assert_eq!(store.get_client("acme").await.unwrap().unwrap(), updated);
    assert!(store.get_client("other").await.unwrap().is_none());
}

#[tokio::test]
async fn clients_show_prints_every_setting_but_never_the_secret_or_its_digest() {
    let installation = Installation::new();
    let mut args = GOOGLE.to_vec();
    args.extend([
        "Google Home",
        "--logo-url",
        "https://example.com/logo.png",
        "--pkce-required",
        "true",
        "--fulfillment-url",
        "https://example.com/fulfillment",
    ]);
    let secret = secret_from(&installation.run_ok(&args, None));
    let digest = installation
        .open_store()
        .await
        .get_client("google")
        .await
        .unwrap()
        .unwrap()
        .secret_digest;

    let shown = installation.run_ok(&["clients", "show", "google", "--output", "json"], None);
    assert_eq!(shown.lines().count(), 1, "{shown}");
    let client: serde_json::Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(client["id"], "google");
    assert_eq!(client["project_id"], "my-project");
    assert_eq!(client["name"], "Google Home");
    assert_eq!(client["logo_url"], "https://example.com/logo.png");
    assert_eq!(client["pkce_required"], true);
    assert_eq!(client["rfc6749_errors"], false);
    assert_eq!(client["fulfillment_url"], "https://example.com/fulfillment");
    assert!(client["company_name"].is_null());
    assert!(client["extra_redirect_uris"].as_array().unwrap().is_empty());
    assert!(client["created_at"].as_str().unwrap().ends_with('Z'));

    let text = installation.run_ok(&["clients", "show", "google"], None);
    assert!(
        text.contains("logo_url: https://example.com/logo.png"),
        "{text}"
    );
    assert!(text.contains("pkce_required: true"), "{text}");
    for output in [&shown, &text] {
        assert!(!output.contains(&secret), "the secret was shown");
        assert!(!output.contains(&digest), "the secret's digest was shown");
        assert!(!output.contains("digest"), "{output}");
    }

    let unknown = installation.run(&["clients", "show", "nobody"], None);
    assert_eq!(unknown.status.code(), Some(2));
}

#[tokio::test]
async fn list_commands_print_json_arrays_on_request() {
    let installation = Installation::new();
    add_google(&installation);
    installation.run_ok(
        &[
            "users",
            "add",
            "--email",
            "ada@example.com",
            "--password-stdin",
        ],
        Some(PASSWORD),
    );
    let clients: serde_json::Value =
        serde_json::from_str(&installation.run_ok(&["clients", "list", "--output", "json"], None))
            .unwrap();
    assert_eq!(clients.as_array().unwrap().len(), 1);
    assert_eq!(clients[0]["id"], "google");
    assert_eq!(clients[0]["project_id"], "my-project");
    assert!(clients[0].get("secret_digest").is_none());
    let users: serde_json::Value =
        serde_json::from_str(&installation.run_ok(&["users", "list", "--output", "json"], None))
            .unwrap();
    assert_eq!(users[0]["email"], "ada@example.com");
    assert!(users[0]["id"].is_string());
    let accounts: serde_json::Value = serde_json::from_str(
        &installation.run_ok(&["service-accounts", "list", "--output", "json"], None),
    )
    .unwrap();
    assert_eq!(accounts, serde_json::json!([]));
}

#[test]
fn read_only_commands_never_create_a_store() {
    let installation = Installation::new();
    for args in [
        &["clients", "list"][..],
        &["clients", "show", "google"],
        &["users", "list", "--output", "json"],
        &["service-accounts", "list"],
        &[
            "devices",
            "list",
            "--client",
            "google",
            "--agent-user-id",
            "u",
        ],
    ] {
        let output = installation.run(args, None);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("no such file"), "{stderr}");
        assert!(
            !installation.store_path().exists(),
            "{args:?} created the store"
        );
    }
}

#[tokio::test]
async fn backup_copies_the_sqlite_store_and_points_redis_elsewhere() {
    let installation = Installation::new();
    add_google(&installation);
    let out = installation.dir.path().join("backup.db");
    installation.run_ok(&["backup", "--out", out.to_str().unwrap()], None);
    let copied = cli::run_ok(
        out.to_str().unwrap(),
        &["clients", "list", "--output", "json"],
        None,
    );
    let clients: serde_json::Value = serde_json::from_str(&copied).unwrap();
    assert_eq!(clients[0]["id"], "google");

    let again = installation.run(&["backup", "--out", out.to_str().unwrap()], None);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing file is never replaced"
    );

    let redis = cli::run(
        "redis://127.0.0.1:1",
        &[
            "backup",
            "--out",
            installation.dir.path().join("r.db").to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(redis.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&redis.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("BGSAVE"), "{stderr}");
}
