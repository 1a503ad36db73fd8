//! The integrator's user accounts: email validation and normalisation, profile fields,
//! password policy and argon2id hashing, adding, listing, removing users and changing their
//! passwords, and the password check that costs the same whether or not the user exists.
//!
//! Passwords are hashed with argon2id at the OWASP baseline (m = 19456 KiB, t = 2, p = 1,
//! the `argon2` crate's defaults) with a 16-byte random salt, and stored as a PHC string
//! (SECURITY.md test 72). Hashing takes tens of milliseconds of CPU by design; callers on an
//! async server should run [`verify_password`] on a blocking thread. Users imported with the
//! hash of another system ([`import`]) keep it until their next sign-in, which replaces it
//! with argon2id ([`password`]).

pub mod import;
pub mod links;
pub mod password;
pub mod sign_in;

pub use sign_in::{SignIn, SignInError, sign_in};

use std::fmt;
use std::sync::OnceLock;

use argon2::password_hash::{PasswordHasher as _, SaltString};
use argon2::{Algorithm, Argon2, Params, Version};

use crate::grants;
use crate::secrets::{self, RandomUnavailable};
use crate::store::{Store, StoreError, UserRecord, UserStore};

/// Most characters in a whole email address (RFC 5321 §4.5.3.1.3 path limit less `<>`).
const MAX_EMAIL_CHARS: usize = 254;
/// Most characters before the `@` (RFC 5321 §4.5.3.1.1).
const MAX_LOCAL_PART_CHARS: usize = 64;
/// Most characters in one domain label (RFC 1035 §2.3.4).
const MAX_DOMAIN_LABEL_CHARS: usize = 63;
/// Most characters in a name field.
const MAX_PROFILE_TEXT_CHARS: usize = 200;
/// Most characters in a picture URL.
const MAX_PICTURE_URL_CHARS: usize = 2048;
/// Fewest characters in a password (ASVS 6.2.1).
pub const MIN_PASSWORD_CHARS: usize = 8;
/// Most characters in a password; far above what people use (ASVS asks for ≥ 64), it only
/// bounds the hashing input.
pub const MAX_PASSWORD_CHARS: usize = 1024;
/// Salt length in bytes (the OWASP and PHC recommendation).
const SALT_BYTES: usize = 16;

/// Why an accounts operation was refused or failed. The Display is the one line an operator
/// sees, naming the flag that fixes it; it never contains a password.
#[derive(Debug, thiserror::Error)]
pub enum AccountError {
    /// The email address is malformed.
    #[error("--email {value:?}: not a valid email address ({reason})")]
    InvalidEmail {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A name field is too long or holds control characters.
    #[error("{field}: {reason}")]
    InvalidProfileText {
        /// Which field.
        field: ProfileField,
        /// What is wrong with it.
        reason: String,
    },
    /// The picture is not an acceptable `https://` URL.
    #[error("--picture {value:?}: {reason}")]
    InvalidPicture {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The password breaks the policy; the password itself is never repeated.
    #[error("--password-stdin: {0}")]
    InvalidPassword(String),
    /// Another user already has this email address.
    #[error("--email {0:?}: a user with this email address already exists")]
    DuplicateEmail(String),
    /// No user has this email address or id.
    #[error("no user with email address or id {0:?} (see `linkd users list`)")]
    UnknownUser(String),
    /// No salt or user id could be generated.
    #[error("cannot generate random values: {0}")]
    Random(#[from] RandomUnavailable),
    /// The password could not be hashed.
    #[error("cannot hash the password: {0}")]
    Hashing(String),
    /// The store failed.
    #[error("{0}")]
    Store(StoreError),
}

impl AccountError {
    /// Whether the operator's input was at fault (as opposed to the store or the host), so
    /// that the command changed nothing and retrying the same input cannot succeed.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Random(_) | Self::Hashing(_) | Self::Store(_))
    }
}

/// The optional free-text profile fields, named by the flag that sets them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileField {
    /// Full name, `--name`.
    Name,
    /// First name, `--given-name`.
    GivenName,
    /// Last name, `--family-name`.
    FamilyName,
}

impl fmt::Display for ProfileField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Name => "--name",
            Self::GivenName => "--given-name",
            Self::FamilyName => "--family-name",
        })
    }
}

/// A normalised email address: trimmed, lower-case, one `@`, a dot-atom local part of at most
/// 64 characters and a dotted domain of `[a-z0-9-]` labels; at most 254 characters.
///
/// Internationalised domains must be given in their ASCII (punycode) form, so that one address
/// has exactly one spelling and the uniqueness of emails means something.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Email(String);

impl Email {
    /// Validates and normalises an email address.
    pub fn parse(value: &str) -> Result<Self, AccountError> {
        let invalid = |reason: String| AccountError::InvalidEmail {
            value: value.to_owned(),
            reason,
        };
        let normalised = value.trim().to_lowercase();
        if normalised.is_empty() {
            return Err(invalid("empty".to_owned()));
        }
        if normalised
            .chars()
            .any(|c| c.is_whitespace() || c.is_control())
        {
            return Err(invalid("contains a space or control character".to_owned()));
        }
        let total = normalised.chars().count();
        if total > MAX_EMAIL_CHARS {
            return Err(invalid(format!(
                "{total} characters; at most {MAX_EMAIL_CHARS}"
            )));
        }
        let (local, domain) = match normalised.split_once('@') {
            None => return Err(invalid("missing \"@\"".to_owned())),
            Some((_, domain)) if domain.contains('@') => {
                return Err(invalid("more than one \"@\"".to_owned()));
            }
            Some(parts) => parts,
        };
        check_local_part(local).map_err(invalid)?;
        check_domain(domain).map_err(invalid)?;
        Ok(Self(normalised))
    }

    /// The normalised address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The part before `@`: an RFC 5322 dot-atom. Quoted local parts are refused; they are
/// vanishingly rare and the specials they allow are far more often typing or paste errors.
fn check_local_part(local: &str) -> Result<(), String> {
    if local.is_empty() {
        return Err("nothing before \"@\"".to_owned());
    }
    let chars = local.chars().count();
    if chars > MAX_LOCAL_PART_CHARS {
        return Err(format!(
            "{chars} characters before \"@\"; at most {MAX_LOCAL_PART_CHARS}"
        ));
    }
    if let Some(special) = local.chars().find(|c| {
        matches!(
            c,
            '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | ',' | '\\' | '"'
        )
    }) {
        return Err(format!("{special:?} before \"@\""));
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err(
            "a \".\" at the start or end of the part before \"@\", or two in a row".to_owned(),
        );
    }
    Ok(())
}

/// The part after `@`: at least two labels of `[a-z0-9-]`, none starting or ending with `-`.
fn check_domain(domain: &str) -> Result<(), String> {
    if domain.is_empty() {
        return Err("nothing after \"@\"".to_owned());
    }
    if !domain.contains('.') {
        return Err(format!("domain {domain:?} has no \".\""));
    }
    for label in domain.split('.') {
        if label.is_empty() {
            return Err(format!("domain {domain:?} has an empty label"));
        }
        if let Some(bad) = label
            .chars()
            .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-'))
        {
            return Err(format!(
                "domain contains {bad:?}; only letters, digits, \"-\" and \".\" are allowed"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!("domain label {label:?} starts or ends with \"-\""));
        }
        if label.len() > MAX_DOMAIN_LABEL_CHARS {
            return Err(format!(
                "domain label of {} characters; at most {MAX_DOMAIN_LABEL_CHARS}",
                label.len()
            ));
        }
    }
    Ok(())
}

/// Validates a name field: at most 200 characters, no control characters.
pub fn parse_profile_text(field: ProfileField, value: &str) -> Result<String, AccountError> {
    let invalid = |reason: String| AccountError::InvalidProfileText { field, reason };
    let chars = value.chars().count();
    if value.trim().is_empty() {
        return Err(invalid("must not be empty or blank".to_owned()));
    }
    if chars > MAX_PROFILE_TEXT_CHARS {
        return Err(invalid(format!(
            "too long ({chars} characters; at most {MAX_PROFILE_TEXT_CHARS})"
        )));
    }
    if value.chars().any(char::is_control) {
        return Err(invalid("must not contain control characters".to_owned()));
    }
    Ok(value.to_owned())
}

/// Validates a picture URL: `https://`, a host, at most 2048 characters, no spaces or control
/// characters. It is shown to relying parties, so a plain-http or script URL is refused.
pub fn parse_picture_url(value: &str) -> Result<String, AccountError> {
    let invalid = |reason: &str| AccountError::InvalidPicture {
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    let chars = value.chars().count();
    if chars > MAX_PICTURE_URL_CHARS {
        return Err(AccountError::InvalidPicture {
            value: value.chars().take(64).collect::<String>() + "…",
            reason: format!("{chars} characters; at most {MAX_PICTURE_URL_CHARS}"),
        });
    }
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(invalid("must not contain spaces or control characters"));
    }
    let Some(rest) = value
        .get(..8)
        .filter(|scheme| scheme.eq_ignore_ascii_case("https://"))
        .and_then(|_| value.get(8..))
    else {
        return Err(invalid("must be an https:// URL"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = authority.rsplit('@').next().unwrap_or_default();
    if host.is_empty() || host.starts_with(':') {
        return Err(invalid("must name a host after https://"));
    }
    Ok(value.to_owned())
}

/// A password in the clear, checked against the policy; `Debug` never reveals it.
#[derive(Clone, PartialEq, Eq)]
pub struct Password(String);

impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Password(<redacted>)")
    }
}

impl Password {
    /// Checks a new password: 8–1024 characters (not bytes) and no NUL. No composition rules
    /// and no truncation (ASVS 6.2.5, 6.2.9).
    pub fn parse(value: &str) -> Result<Self, AccountError> {
        let chars = value.chars().count();
        if chars == 0 {
            return Err(AccountError::InvalidPassword(
                "the password read from stdin is empty".to_owned(),
            ));
        }
        if value.contains('\0') {
            return Err(AccountError::InvalidPassword(
                "the password read from stdin contains a NUL character".to_owned(),
            ));
        }
        if chars < MIN_PASSWORD_CHARS {
            return Err(AccountError::InvalidPassword(format!(
                "the password read from stdin is {chars} characters; at least \
                 {MIN_PASSWORD_CHARS} are required"
            )));
        }
        if chars > MAX_PASSWORD_CHARS {
            return Err(AccountError::InvalidPassword(format!(
                "the password read from stdin is {chars} characters; at most \
                 {MAX_PASSWORD_CHARS} are allowed"
            )));
        }
        Ok(Self(value.to_owned()))
    }
}

/// The hasher every password goes through: argon2id v1.3 at the OWASP baseline parameters.
fn hasher() -> Argon2<'static> {
    Argon2::new(Algorithm::Argon2id, Version::V0x13, Params::DEFAULT)
}

/// Hashes a password with a fresh random salt into a PHC string.
pub fn hash_password(password: &Password) -> Result<String, AccountError> {
    hash_secret(password.0.as_bytes())
}

/// Hashes a password that already matched the user's previous hash, whatever the policy says
/// of it now (an imported password may be shorter than linkd asks of new ones): the user
/// proved it is theirs, and refusing the better hash would only keep the worse one.
pub fn rehash_password(password: &str) -> Result<String, AccountError> {
    hash_secret(password.as_bytes())
}

fn hash_secret(secret: &[u8]) -> Result<String, AccountError> {
    let salt_bytes = secrets::random_bytes(SALT_BYTES)?;
    let salt = SaltString::encode_b64(&salt_bytes)
        .map_err(|error| AccountError::Hashing(error.to_string()))?;
    hasher()
        .hash_password(secret, &salt)
        .map(|hash| hash.to_string())
        .map_err(|error| AccountError::Hashing(error.to_string()))
}

/// A PHC hash of a fixed throwaway password with the production parameters, computed once.
/// Verifying against it makes a sign-in for an unknown user cost as much as a real one.
fn unknown_user_hash() -> Option<&'static str> {
    static HASH: OnceLock<Option<String>> = OnceLock::new();
    HASH.get_or_init(|| {
        // A fixed salt is fine: nothing secret is protected by this hash.
        let salt = SaltString::encode_b64(b"linkd-dummy-salt").ok()?;
        hasher()
            .hash_password(b"no user has this password", &salt)
            .ok()
            .map(|hash| hash.to_string())
    })
    .as_deref()
}

/// Whether `password` is the password of `user`. When `user` is `None` (unknown email), has
/// no password (an identity provider's user) or its stored hash is not one [`password`]
/// accepts, one verification still runs against a dummy argon2id hash, so the answer takes
/// the same time whether or not the account exists (SECURITY.md test 70).
pub fn verify_password(user: Option<&UserRecord>, password: &str) -> bool {
    let stored = user
        .map(|user| user.password_hash.as_str())
        .filter(|hash| password::check_hash(hash).is_ok());
    match stored {
        Some(hash) => password::verify(hash, password),
        None => {
            if let Some(dummy) = unknown_user_hash() {
                // The outcome is irrelevant; only the time spent matters.
                let _ = password::verify(dummy, password);
            }
            false
        }
    }
}

/// The optional profile of a user, already validated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Full name.
    pub name: Option<String>,
    /// First name.
    pub given_name: Option<String>,
    /// Last name.
    pub family_name: Option<String>,
    /// `https://` URL of a profile picture.
    pub picture: Option<String>,
}

/// Everything needed to add a user, already validated.
#[derive(Debug, Clone)]
pub struct NewUser {
    /// The normalised email address; unique across users.
    pub email: Email,
    /// Optional profile fields.
    pub profile: Profile,
    /// The initial password; only its hash is stored.
    pub password: Password,
}

/// A new random (version 4) UUID, drawn from the same generator as every other secret.
fn new_user_id() -> Result<String, AccountError> {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&secrets::random_bytes(16)?);
    Ok(uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string())
}

/// Adds a user at time `now` (Unix seconds) and returns the stored record. An email already
/// in use (in any letter case) is [`AccountError::DuplicateEmail`] and changes nothing.
pub async fn add(
    store: &dyn UserStore,
    user: NewUser,
    now: i64,
) -> Result<UserRecord, AccountError> {
    let record = UserRecord {
        id: new_user_id()?,
        email: user.email.as_str().to_owned(),
        name: user.profile.name,
        given_name: user.profile.given_name,
        family_name: user.profile.family_name,
        picture: user.profile.picture,
        password_hash: hash_password(&user.password)?,
        created_at: now,
    };
    // The insert detects the taken email atomically; the id is random, so a collision there
    // is not a realistic cause of `AlreadyExists`.
    match store.insert_user(&record).await {
        Ok(()) => Ok(record),
        Err(StoreError::AlreadyExists(_)) => Err(AccountError::DuplicateEmail(record.email)),
        Err(other) => Err(AccountError::Store(other)),
    }
}

/// Every user, ordered by email.
pub async fn list(store: &dyn UserStore) -> Result<Vec<UserRecord>, AccountError> {
    store.list_users().await.map_err(AccountError::Store)
}

/// Finds a user by email address (any letter case, surrounding spaces ignored) when the text
/// holds an `@`, otherwise by id.
pub async fn find(store: &dyn UserStore, email_or_id: &str) -> Result<UserRecord, AccountError> {
    let found = if email_or_id.contains('@') {
        store
            .get_user_by_email(&email_or_id.trim().to_lowercase())
            .await
    } else {
        store.get_user(email_or_id.trim()).await
    };
    match found {
        Ok(Some(user)) => Ok(user),
        Ok(None) => Err(AccountError::UnknownUser(email_or_id.to_owned())),
        Err(error) => Err(AccountError::Store(error)),
    }
}

/// Removes the user named by email address or id, at `now`, and returns what was removed
/// and how many links were ended. Every grant of the user dies with the account
/// ([`grants::unlink_all`]: refresh tokens answer `invalid_grant`, access tokens 401, the
/// device graph forgets the user), and so do the user's sessions (they check their user).
///
/// The grants are ended first, while the account can still be named: a failure part-way
/// leaves the account in place and the command can be run again. They are ended once more
/// after the record is gone, for a code redeemed in between; a redemption after that finds
/// no user and ends its own grant ([`grants::withdrawn`]).
pub async fn remove(
    store: &dyn Store,
    email_or_id: &str,
    now: i64,
) -> Result<(UserRecord, usize), AccountError> {
    let user = find(store, email_or_id).await?;
    let mut unlinked = grants::unlink_all(store, &user.id, now)
        .await
        .map_err(AccountError::Store)?;
    match store.remove_user(&user.id).await {
        Ok(true) => {}
        Ok(false) => return Err(AccountError::UnknownUser(email_or_id.to_owned())),
        Err(error) => return Err(AccountError::Store(error)),
    }
    unlinked += grants::unlink_all(store, &user.id, now)
        .await
        .map_err(AccountError::Store)?;
    Ok((user, unlinked))
}

/// Replaces the password of the user named by email address or id and returns the updated
/// record.
pub async fn set_password(
    store: &dyn UserStore,
    email_or_id: &str,
    password: &Password,
) -> Result<UserRecord, AccountError> {
    let mut user = find(store, email_or_id).await?;
    user.password_hash = hash_password(password)?;
    match store.update_user(&user).await {
        Ok(true) => Ok(user),
        // Removed between the lookup and the update.
        Ok(false) => Err(AccountError::UnknownUser(email_or_id.to_owned())),
        Err(error) => Err(AccountError::Store(error)),
    }
}

/// How [`replace_password_hash`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashReplaced {
    /// Written: the record as it is now stored.
    Replaced(UserRecord),
    /// Not written: the stored hash is no longer the one given (the password was changed
    /// meanwhile), or the user is gone.
    Changed,
}

/// Replaces `user`'s password hash with `new_hash` if the stored record still holds
/// `user.password_hash`, so that a rehash at sign-in never undoes a password change. The
/// record is read again by email, which no cache answers; what is left unguarded is the moment
/// between that read and the write.
pub async fn replace_password_hash(
    store: &dyn UserStore,
    user: &UserRecord,
    new_hash: String,
) -> Result<HashReplaced, StoreError> {
    let current = match store.get_user_by_email(&user.email).await? {
        Some(current) if current.id == user.id && current.password_hash == user.password_hash => {
            current
        }
        _ => return Ok(HashReplaced::Changed),
    };
    let updated = UserRecord {
        password_hash: new_hash,
        ..current
    };
    Ok(if store.update_user(&updated).await? {
        HashReplaced::Replaced(updated)
    } else {
        HashReplaced::Changed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user_with_password(password: &str) -> UserRecord {
        UserRecord {
            id: "7d8f3c0e-0000-4000-8000-000000000000".to_owned(),
            email: "ada@example.com".to_owned(),
            name: None,
            given_name: None,
            family_name: None,
            picture: None,
            password_hash: hash_password(&Password::parse(password).unwrap()).unwrap(),
            created_at: 1_700_000_000,
        }
    }

    #[test]
    fn emails_are_trimmed_and_lower_cased() {
        assert_eq!(
            Email::parse("  Ada.Lovelace+home@Example.COM \n")
                .unwrap()
                .as_str(),
            "ada.lovelace+home@example.com"
        );
        for good in ["a@b.co", "x_y-z@sub.example-domain.org", "1@2.3"] {
            assert!(Email::parse(good).is_ok(), "{good:?} should be accepted");
        }
        let longest_local = format!("{}@example.com", "l".repeat(64));
        assert!(Email::parse(&longest_local).is_ok());
    }

    #[test]
    fn malformed_emails_are_refused_with_the_reason() {
        let long_local = format!("{}@example.com", "l".repeat(65));
        let long_total = format!("a@{}.com", "d".repeat(60).repeat(5));
        let long_label = format!("a@{}.com", "d".repeat(64));
        let cases = [
            ("", "empty"),
            ("   ", "empty"),
            ("ada.example.com", "missing \"@\""),
            ("ada@home@example.com", "more than one \"@\""),
            ("@example.com", "nothing before \"@\""),
            ("ada@", "nothing after \"@\""),
            ("ada@localhost", "has no \".\""),
            ("ada@example..com", "empty label"),
            ("ada@example.com.", "empty label"),
            ("ada@-example.com", "starts or ends with \"-\""),
            ("ada@example-.com", "starts or ends with \"-\""),
            ("ada@exa_mple.com", "domain contains '_'"),
            ("ada@exämple.com", "domain contains 'ä'"),
            ("ada lovelace@example.com", "space or control"),
            ("ada@exam\u{0}ple.com", "space or control"),
            ("ada\t@example.com", "space or control"),
            ("<ada@example.com>", "'<' before"),
            (".ada@example.com", "two in a row"),
            ("ada..l@example.com", "two in a row"),
            (long_local.as_str(), "65 characters before"),
            (long_total.as_str(), "at most 254"),
            (long_label.as_str(), "label of 64 characters"),
        ];
        for (bad, reason) in cases {
            let message = Email::parse(bad).unwrap_err().to_string();
            assert!(
                message.starts_with("--email ") && message.contains("not a valid email address"),
                "{message}"
            );
            assert!(message.contains(reason), "{bad:?}: {message}");
        }
    }

    #[test]
    fn profile_text_is_bounded_and_printable() {
        assert_eq!(
            parse_profile_text(ProfileField::Name, "Ada Lovelace").unwrap(),
            "Ada Lovelace"
        );
        assert!(parse_profile_text(ProfileField::Name, &"é".repeat(200)).is_ok());
        let cases = [
            (ProfileField::Name, "x".repeat(201), "--name: too long"),
            (
                ProfileField::GivenName,
                "a\nb".to_owned(),
                "--given-name: must not contain",
            ),
            (
                ProfileField::FamilyName,
                " ".to_owned(),
                "--family-name: must not be empty",
            ),
        ];
        for (field, bad, expected) in cases {
            let message = parse_profile_text(field, &bad).unwrap_err().to_string();
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn pictures_must_be_https_urls() {
        for good in [
            "https://example.com/ada.png",
            "HTTPS://cdn.example.com",
            "https://example.com:8443/a?b=c",
        ] {
            assert!(
                parse_picture_url(good).is_ok(),
                "{good:?} should be accepted"
            );
        }
        let too_long = format!("https://example.com/{}", "p".repeat(2048));
        for bad in [
            "http://example.com/ada.png",
            "javascript:alert(1)",
            "data:image/png;base64,AAAA",
            "//example.com/ada.png",
            "https://",
            "https:///path",
            "https://exa mple.com/",
            "https://example.com/\n",
            "ftp://example.com",
            too_long.as_str(),
        ] {
            let message = parse_picture_url(bad).unwrap_err().to_string();
            assert!(message.starts_with("--picture "), "{bad:?}: {message}");
        }
    }

    #[test]
    fn password_policy_counts_characters_not_bytes() {
        assert!(Password::parse("12345678").is_ok());
        // Eight characters, sixteen bytes.
        assert!(Password::parse("éééééééé").is_ok());
        assert!(Password::parse(&"é".repeat(MAX_PASSWORD_CHARS)).is_ok());
        let cases = [
            (String::new(), "is empty"),
            (
                "1234567".to_owned(),
                "is 7 characters; at least 8 are required",
            ),
            ("éééé".to_owned(), "is 4 characters"),
            ("pass\0word-long".to_owned(), "contains a NUL character"),
            ("p".repeat(MAX_PASSWORD_CHARS + 1), "at most 1024"),
        ];
        for (bad, reason) in cases {
            let message = Password::parse(&bad).unwrap_err().to_string();
            assert!(message.starts_with("--password-stdin: "), "{message}");
            assert!(message.contains(reason), "{message}");
            if bad.len() >= 4 {
                assert!(!message.contains(&bad), "the password leaked: {message}");
            }
        }
        let password = Password::parse("correct horse").unwrap();
        assert!(!format!("{password:?}").contains("correct"));
    }

    #[test]
    fn hashes_are_argon2id_phc_strings_with_the_owasp_parameters_and_fresh_salts() {
        let password = Password::parse("correct horse battery").unwrap();
        let first = hash_password(&password).unwrap();
        let second = hash_password(&password).unwrap();
        assert!(
            first.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"),
            "{first}"
        );
        assert_ne!(first, second, "each hash must have its own salt");
        assert!(!first.contains("correct horse"));
    }

    #[test]
    fn verify_password_accepts_only_the_right_password_of_a_known_user() {
        let user = user_with_password("correct horse battery");
        assert!(verify_password(Some(&user), "correct horse battery"));
        assert!(!verify_password(Some(&user), "correct horse batterY"));
        assert!(!verify_password(Some(&user), ""));
        assert!(!verify_password(None, "correct horse battery"));
        assert!(!verify_password(None, "no user has this password"));
    }

    #[test]
    fn verify_password_refuses_a_damaged_hash() {
        let mut user = user_with_password("correct horse battery");
        user.password_hash = "not a phc string".to_owned();
        assert!(!verify_password(Some(&user), "correct horse battery"));
        user.password_hash.clear();
        assert!(!verify_password(Some(&user), ""));
    }

    #[test]
    fn user_ids_are_version_4_uuids() {
        let id = new_user_id().unwrap();
        let parsed = uuid::Uuid::parse_str(&id).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_ne!(id, new_user_id().unwrap());
    }

    #[test]
    fn bad_input_errors_are_told_apart_from_store_failures() {
        assert!(AccountError::DuplicateEmail("a@b.co".to_owned()).is_bad_input());
        assert!(AccountError::UnknownUser("a@b.co".to_owned()).is_bad_input());
        assert!(!AccountError::Store(StoreError::Unavailable("down".to_owned())).is_bad_input());
        assert!(!AccountError::Hashing("x".to_owned()).is_bad_input());
    }
}
