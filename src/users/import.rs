//! Importing users from another system (`linkd users import`): one JSON object a line, each
//! checked exactly as `linkd users add` checks its flags, with either a password in the clear
//! (hashed with argon2id here) or the other system's hash (kept as it is, verified by
//! [`super::password`], and replaced by argon2id at the user's next sign-in).
//!
//! A line is `{"email": …, "name": …, "given_name": …, "family_name": …, "picture": …,
//! "password": …}` or the same with `"password_hash"`; only `email` and one of the two
//! credentials are required, `null` is the same as absent. A line with another field, both
//! credentials or neither, an email used by an earlier line or by an existing user is bad.
//! Blank lines are skipped and count for the line numbers, as an editor shows them.

use std::collections::HashSet;

use serde::Deserialize;

use super::{
    AccountError, Email, Password, Profile, ProfileField, UserStore, new_user_id, password,
};
use crate::store::{StoreError, UserRecord};

/// Longest line accepted, in bytes: room for every field at its longest (a 1024-character
/// password in four-byte characters, a 2048-character picture URL) and JSON escapes.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// One line as written in the file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLine {
    email: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    given_name: Option<String>,
    #[serde(default)]
    family_name: Option<String>,
    #[serde(default)]
    picture: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    password_hash: Option<String>,
}

/// How an imported user signs in the first time.
#[derive(Clone)]
pub enum Credential {
    /// A password in the clear, hashed with argon2id when the user is stored.
    Password(Password),
    /// Another system's hash, kept as it is.
    Hash {
        /// The hash (never printed).
        hash: String,
        /// Its scheme.
        scheme: password::Scheme,
    },
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Password(_) => f.write_str("Password(<redacted>)"),
            Self::Hash { scheme, .. } => write!(f, "Hash({})", scheme.name()),
        }
    }
}

/// A valid line, ready to be stored.
#[derive(Debug, Clone)]
pub struct ImportUser {
    /// The line number, from 1.
    pub line: usize,
    /// The normalised email address.
    pub email: Email,
    /// The profile.
    pub profile: Profile,
    /// The password or hash.
    pub credential: Credential,
}

/// A line that cannot be imported, and why (never repeating a password or hash).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

/// Checks one line (not blank) numbered `line`.
pub fn parse_line(line: usize, text: &str) -> Result<ImportUser, BadLine> {
    let bad = |reason: String| BadLine { line, reason };
    if text.len() > MAX_LINE_BYTES {
        return Err(bad(format!(
            "{} bytes; at most {MAX_LINE_BYTES}",
            text.len()
        )));
    }
    // serde would also take a JSON array as the fields in order; only an object is a line.
    if !text.trim_start().starts_with('{') {
        return Err(bad("not a JSON object".to_owned()));
    }
    let raw: RawLine = serde_json::from_str(text).map_err(|error| bad(json_reason(&error)))?;
    let email = Email::parse(&raw.email).map_err(|error| bad(field_reason(error)))?;
    let text_field = |field, value: Option<String>| {
        value
            .map(|text| super::parse_profile_text(field, &text))
            .transpose()
            .map_err(|error| bad(field_reason(error)))
    };
    let profile = Profile {
        name: text_field(ProfileField::Name, raw.name)?,
        given_name: text_field(ProfileField::GivenName, raw.given_name)?,
        family_name: text_field(ProfileField::FamilyName, raw.family_name)?,
        picture: raw
            .picture
            .map(|picture| super::parse_picture_url(&picture))
            .transpose()
            .map_err(|error| bad(field_reason(error)))?,
    };
    let credential = match (raw.password, raw.password_hash) {
        (Some(_), Some(_)) => {
            return Err(bad(
                "both \"password\" and \"password_hash\"; give one".to_owned()
            ));
        }
        (None, None) => {
            return Err(bad(
                "neither \"password\" nor \"password_hash\"; give one".to_owned()
            ));
        }
        (Some(clear), None) => {
            Credential::Password(Password::parse(&clear).map_err(|error| bad(field_reason(error)))?)
        }
        (None, Some(hash)) => {
            let scheme = password::check_hash(&hash)
                .map_err(|refused| bad(format!("password_hash: {refused}")))?;
            Credential::Hash { hash, scheme }
        }
    };
    Ok(ImportUser {
        line,
        email,
        profile,
        credential,
    })
}

/// What is wrong with a line that is not the expected JSON object. serde_json's own message
/// is kept only when it names a field; its other messages can quote a value, which may be a
/// password.
fn json_reason(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let names_a_field = ["unknown field", "missing field", "duplicate field"]
        .iter()
        .any(|start| message.starts_with(start));
    match error.classify() {
        serde_json::error::Category::Data if names_a_field => {
            let field_part = message.split(" at line ").next().unwrap_or_default();
            if message.starts_with("unknown field") {
                // "expected one of …" follows; the list of fields is in the README.
                let name = field_part.split(',').next().unwrap_or_default();
                format!(
                    "{name} (the fields are email, name, given_name, family_name, picture, password, password_hash)"
                )
            } else {
                field_part.to_owned()
            }
        }
        serde_json::error::Category::Data => format!(
            "not a JSON object whose fields are strings or null (column {})",
            error.column()
        ),
        serde_json::error::Category::Syntax | serde_json::error::Category::Io => {
            format!("not valid JSON (column {})", error.column())
        }
        serde_json::error::Category::Eof => "not valid JSON (it ends early)".to_owned(),
    }
}

/// An account error's text with the field of the file in place of the flag of `users add`.
fn field_reason(error: AccountError) -> String {
    match error {
        AccountError::InvalidEmail { value, reason } => {
            format!("email {value:?}: not a valid email address ({reason})")
        }
        AccountError::InvalidProfileText { field, reason } => {
            let name = match field {
                ProfileField::Name => "name",
                ProfileField::GivenName => "given_name",
                ProfileField::FamilyName => "family_name",
            };
            format!("{name}: {reason}")
        }
        AccountError::InvalidPicture { value, reason } => format!("picture {value:?}: {reason}"),
        AccountError::InvalidPassword(reason) => format!(
            "password: {}",
            reason.replace("the password read from stdin", "the password")
        ),
        other => other.to_string(),
    }
}

/// Checks every line of `text`: the good lines and the bad ones, in file order. An email
/// given by an earlier good line makes a later line bad. Nothing is looked up in a store.
pub fn parse_lines<'a>(lines: impl Iterator<Item = &'a str>) -> (Vec<ImportUser>, Vec<BadLine>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let mut seen = HashSet::new();
    for (index, text) in lines.enumerate() {
        let line = index + 1;
        if text.trim().is_empty() {
            continue;
        }
        match parse_line(line, text) {
            Ok(user) => {
                if seen.insert(user.email.clone()) {
                    good.push(user);
                } else {
                    bad.push(BadLine {
                        line,
                        reason: format!(
                            "email {:?} is also on an earlier line",
                            user.email.as_str()
                        ),
                    });
                }
            }
            Err(line) => bad.push(line),
        }
    }
    (good, bad)
}

/// Splits off the users whose email address an existing user already has, as bad lines.
pub async fn existing_emails(
    store: &dyn UserStore,
    users: Vec<ImportUser>,
) -> Result<(Vec<ImportUser>, Vec<BadLine>), AccountError> {
    let mut fresh = Vec::with_capacity(users.len());
    let mut taken = Vec::new();
    for user in users {
        match store.get_user_by_email(user.email.as_str()).await {
            Ok(None) => fresh.push(user),
            Ok(Some(_)) => taken.push(already_exists(&user)),
            Err(error) => return Err(AccountError::Store(error)),
        }
    }
    Ok((fresh, taken))
}

fn already_exists(user: &ImportUser) -> BadLine {
    BadLine {
        line: user.line,
        reason: format!(
            "email {:?}: a user with this email address already exists",
            user.email.as_str()
        ),
    }
}

/// Stores one checked user at `now` (Unix seconds), hashing a password in the clear. A user
/// added with the same email since the check is a bad line; nothing else is.
pub async fn store_user(
    store: &dyn UserStore,
    user: ImportUser,
    now: i64,
) -> Result<Result<UserRecord, BadLine>, AccountError> {
    let password_hash = match &user.credential {
        Credential::Password(password) => {
            // argon2 takes tens of milliseconds: off the async workers, which keep the store's
            // connections alive meanwhile.
            let password = password.clone();
            tokio::task::spawn_blocking(move || super::hash_password(&password))
                .await
                .map_err(|error| AccountError::Hashing(error.to_string()))??
        }
        Credential::Hash { hash, .. } => hash.clone(),
    };
    let record = UserRecord {
        id: new_user_id()?,
        email: user.email.as_str().to_owned(),
        name: user.profile.name.clone(),
        given_name: user.profile.given_name.clone(),
        family_name: user.profile.family_name.clone(),
        picture: user.profile.picture.clone(),
        password_hash,
        created_at: now,
    };
    match store.insert_user(&record).await {
        Ok(()) => Ok(Ok(record)),
        Err(StoreError::AlreadyExists(_)) => Ok(Err(already_exists(&user))),
        Err(other) => Err(AccountError::Store(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BCRYPT: &str = "$2b$04$pEhM61DrPq7qlAUFv5js1.tbPMHoaVd5XkePbbtTxA0zZV25NytQS";

    fn reason(text: &str) -> String {
        parse_line(7, text).expect_err(text).reason
    }

    #[test]
    fn a_line_with_every_field_is_normalised() {
        let line = serde_json::json!({
            "email": " Ada@Example.COM ",
            "name": "Ada Lovelace",
            "given_name": "Ada",
            "family_name": "Lovelace",
            "picture": "https://example.com/ada.png",
            "password_hash": BCRYPT,
        })
        .to_string();
        let user = parse_line(3, &line).unwrap();
        assert_eq!(user.line, 3);
        assert_eq!(user.email.as_str(), "ada@example.com");
        assert_eq!(user.profile.name.as_deref(), Some("Ada Lovelace"));
        assert_eq!(user.profile.family_name.as_deref(), Some("Lovelace"));
        assert!(matches!(
            user.credential,
            Credential::Hash {
                scheme: password::Scheme::Bcrypt,
                ..
            }
        ));
        assert_eq!(format!("{:?}", user.credential), "Hash(bcrypt)");
        let null_fields =
            r#"{"email": "a@b.co", "name": null, "picture": null, "password": "long enough"}"#;
        let user = parse_line(1, null_fields).unwrap();
        assert_eq!(user.profile, Profile::default());
        assert_eq!(format!("{:?}", user.credential), "Password(<redacted>)");
    }

    #[test]
    fn bad_lines_say_why_in_the_files_terms_and_never_quote_a_secret() {
        let cases = [
            (
                r#"{"email": "a@b.co", "password": 31415926535}"#,
                "fields are strings or null",
            ),
            (r#"["a@b.co", "secret password"]"#, "not a JSON object"),
            (r#""secret password""#, "not a JSON object"),
            (
                r#"{"email": "a@b.co", "password": "secret password""#,
                "ends early",
            ),
            (
                r#"{"email": "a@b.co", "password": "secret password"} x"#,
                "not valid JSON",
            ),
            (
                r#"{"email": "a@b.co", "pasword": "secret password"}"#,
                "unknown field `pasword`",
            ),
            (
                r#"{"password": "secret password"}"#,
                "missing field `email`",
            ),
            (
                r#"{"email": "a@b.co", "email": "c@d.co", "password": "secret password"}"#,
                "duplicate field `email`",
            ),
            (
                r#"{"email": "a@b.co", "password": "short"}"#,
                "password: the password is 5 characters",
            ),
            (
                r#"{"email": "a@b.co", "password_hash": "secret password"}"#,
                "password_hash: not a PHC string",
            ),
            (
                r#"{"email": "a@b.co", "password_hash": ""}"#,
                "password_hash: empty",
            ),
            (
                r#"{"email": "a@b.co", "given_name": " ", "password": "secret password"}"#,
                "given_name: must not be empty",
            ),
            (
                r#"{"email": "a@b", "password": "secret password"}"#,
                "email \"a@b\": not a valid email address",
            ),
        ];
        for (line, expected) in cases {
            let reason = reason(line);
            assert!(reason.contains(expected), "{line}: {reason}");
            for secret in ["secret password", "31415926535", "short"] {
                if !expected.contains(secret) {
                    assert!(!reason.contains(secret), "{line}: {reason}");
                }
            }
        }
        let long = format!(
            r#"{{"email": "a@b.co", "name": "{}"}}"#,
            "n".repeat(MAX_LINE_BYTES)
        );
        assert!(reason(&long).contains("at most 16384"));
    }

    #[test]
    fn blank_lines_are_skipped_and_later_duplicates_are_bad() {
        let first = format!(r#"{{"email": "a@b.co", "password_hash": "{BCRYPT}"}}"#);
        let again = format!(r#"{{"email": "A@B.CO", "password_hash": "{BCRYPT}"}}"#);
        let text = [first.as_str(), "", "  ", again.as_str(), "{"];
        let (good, bad) = parse_lines(text.into_iter());
        assert_eq!(good.len(), 1);
        assert_eq!(good[0].line, 1);
        let lines: Vec<usize> = bad.iter().map(|line| line.line).collect();
        assert_eq!(lines, [4, 5]);
        assert!(
            bad[0].reason.contains("also on an earlier line"),
            "{:?}",
            bad[0]
        );
    }
}
