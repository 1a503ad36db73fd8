//! Integrations (OAuth clients): the grammar of client ids, project ids and display names,
//! client secrets (generated or supplied, stored only as a digest), registration, listing,
//! removal, and the constant-time secret check the token endpoint relies on.
//!
//! Client secrets are either 32 random bytes or an operator-supplied value of at least 16
//! characters. Secrets of that entropy cannot be brute-forced offline, so a plain SHA-256
//! digest is enough to make a leaked store useless (SECURITY.md test 22) and keeps the client
//! check on the refresh hot path cheap; a slow password hash would only cost latency.

use std::fmt;

use crate::secrets::{self, RandomUnavailable};
use crate::store::{ClientRecord, ClientScopes, ClientSettings, ClientStore, StoreError};

/// Bytes of randomness in a generated client secret (256 bits, above the 128 required).
const GENERATED_SECRET_BYTES: usize = 32;
/// Fewest characters an operator-supplied secret may have.
pub const MIN_SUPPLIED_SECRET_CHARS: usize = 16;
/// Most characters an operator-supplied secret may have; only a bound on input size.
pub const MAX_SUPPLIED_SECRET_CHARS: usize = 1024;
/// Most characters in a client id or project id.
const MAX_ID_CHARS: usize = 128;
/// Most characters in a display name.
const MAX_NAME_CHARS: usize = 100;

/// Compared against when the client is unknown, so that an unknown client id costs the same
/// digest and comparison as a known one. No input hashes to it in practice.
const UNKNOWN_CLIENT_DIGEST: &str =
    "0000000000000000000000000000000000000000000000000000000000000000";

/// Why a clients operation was refused or failed. The Display is the one line an operator
/// sees, naming the flag that fixes it.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The client id does not follow its grammar.
    #[error("--id {value:?}: {reason}")]
    InvalidId {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The project id does not follow its grammar.
    #[error("--project-id {value:?}: {reason}")]
    InvalidProjectId {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The display name is empty, too long or holds control characters.
    #[error("--name {value:?}: {reason}")]
    InvalidName {
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The supplied secret is unusable; the secret itself is never repeated.
    #[error("--secret-stdin: {0}")]
    InvalidSecret(String),
    /// A branding URL or redirect URI is unusable.
    #[error("{flag} {value:?}: {reason}")]
    InvalidOption {
        /// The flag.
        flag: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A client with this id is already registered.
    #[error("--id {0:?}: a client with this id already exists")]
    DuplicateId(String),
    /// No client has this id.
    #[error("no client with id {0:?} (see `linkd clients list`)")]
    UnknownClient(String),
    /// No secret could be generated.
    #[error("cannot generate a client secret: {0}")]
    Random(#[from] RandomUnavailable),
    /// The store failed.
    #[error("{0}")]
    Store(StoreError),
}

impl ClientError {
    /// Whether the operator's input was at fault (as opposed to the store or the host), so
    /// that the command changed nothing and retrying the same input cannot succeed.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::Random(_) | Self::Store(_))
    }
}

/// Characters allowed in a client id: RFC 3986 unreserved characters, so the id is valid
/// unencoded in URLs and form bodies.
fn is_client_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '~' | '-')
}

/// Characters allowed in a project id; they must be safe in the redirect path `/r/<id>`.
fn is_project_id_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Checks `value` against an id grammar and says precisely what is wrong.
fn check_id(value: &str, allowed: fn(char) -> bool, allowed_text: &str) -> Result<(), String> {
    let chars = value.chars().count();
    if chars == 0 {
        return Err("must not be empty".to_owned());
    }
    if chars > MAX_ID_CHARS {
        return Err(format!(
            "too long ({chars} characters; at most {MAX_ID_CHARS})"
        ));
    }
    if let Some(bad) = value.chars().find(|c| !allowed(*c)) {
        return Err(format!("contains {bad:?}; only {allowed_text} are allowed"));
    }
    if value == "." || value == ".." {
        // A dot segment would be rewritten by URL normalisation.
        return Err("must not be \".\" or \"..\"".to_owned());
    }
    Ok(())
}

/// The `client_id` a platform presents: 1–128 characters of `[A-Za-z0-9._~-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientId(String);

impl ClientId {
    /// Parses a client id.
    pub fn parse(value: &str) -> Result<Self, ClientError> {
        check_id(
            value,
            is_client_id_char,
            "letters, digits, \".\", \"_\", \"~\" and \"-\"",
        )
        .map(|()| Self(value.to_owned()))
        .map_err(|reason| ClientError::InvalidId {
            value: value.to_owned(),
            reason,
        })
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The platform's project id, which names the redirect path `/r/<project_id>`: 1–128
/// characters of `[A-Za-z0-9._-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ProjectId(String);

impl ProjectId {
    /// Parses a project id.
    pub fn parse(value: &str) -> Result<Self, ClientError> {
        check_id(
            value,
            is_project_id_char,
            "letters, digits, \".\", \"_\" and \"-\"",
        )
        .map(|()| Self(value.to_owned()))
        .map_err(|reason| ClientError::InvalidProjectId {
            value: value.to_owned(),
            reason,
        })
    }

    /// The project id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ProjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name shown on the consent page: 1–100 characters, not blank, no control characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DisplayName(String);

impl DisplayName {
    /// Parses a display name.
    pub fn parse(value: &str) -> Result<Self, ClientError> {
        let invalid = |reason: String| ClientError::InvalidName {
            value: value.to_owned(),
            reason,
        };
        let chars = value.chars().count();
        if value.trim().is_empty() {
            return Err(invalid("must not be empty or blank".to_owned()));
        }
        if chars > MAX_NAME_CHARS {
            return Err(invalid(format!(
                "too long ({chars} characters; at most {MAX_NAME_CHARS})"
            )));
        }
        if value.chars().any(char::is_control) {
            return Err(invalid("must not contain control characters".to_owned()));
        }
        Ok(Self(value.to_owned()))
    }

    /// The name a client gets when none is given: its id, which always fits the grammar.
    pub fn from_id(id: &ClientId) -> Self {
        Self(id.as_str().to_owned())
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A client secret in the clear. It exists only between its creation and the moment it is
/// digested (and, when generated, shown once); `Debug` never reveals it.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientSecret(String);

impl fmt::Debug for ClientSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ClientSecret(<redacted>)")
    }
}

impl ClientSecret {
    /// A new secret of 32 random bytes, base64url-encoded (43 characters).
    pub fn generate() -> Result<Self, ClientError> {
        Ok(Self(secrets::random_token(GENERATED_SECRET_BYTES)?))
    }

    /// Accepts a secret chosen by the operator: 16–1024 characters, no control characters.
    /// Errors describe the problem without repeating the secret.
    pub fn supplied(value: &str) -> Result<Self, ClientError> {
        let chars = value.chars().count();
        if chars == 0 {
            return Err(ClientError::InvalidSecret(
                "the secret read from stdin is empty".to_owned(),
            ));
        }
        if value.chars().any(char::is_control) {
            return Err(ClientError::InvalidSecret(
                "the secret read from stdin contains a control character".to_owned(),
            ));
        }
        if chars < MIN_SUPPLIED_SECRET_CHARS {
            return Err(ClientError::InvalidSecret(format!(
                "the secret read from stdin is {chars} characters; at least \
                 {MIN_SUPPLIED_SECRET_CHARS} are required"
            )));
        }
        if chars > MAX_SUPPLIED_SECRET_CHARS {
            return Err(ClientError::InvalidSecret(format!(
                "the secret read from stdin is {chars} characters; at most \
                 {MAX_SUPPLIED_SECRET_CHARS} are allowed"
            )));
        }
        Ok(Self(value.to_owned()))
    }

    /// The secret in the clear, to be shown to the operator exactly once.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The digest that is stored in place of the secret.
    pub fn digest(&self) -> String {
        secrets::sha256_hex(self.0.as_bytes())
    }
}

/// Validates a page URL (logo, privacy policy, sign-up): absolute `https`, at most 2048
/// characters, nothing a page could execute.
pub fn parse_page_url(flag: &'static str, value: &str) -> Result<String, ClientError> {
    let invalid = |reason: &str| ClientError::InvalidOption {
        flag,
        value: value.to_owned(),
        reason: reason.to_owned(),
    };
    if value.chars().count() > 2048 {
        return Err(invalid("longer than 2048 characters"));
    }
    let Some(rest) = value.strip_prefix("https://") else {
        return Err(invalid("must start with https://"));
    };
    if rest.is_empty()
        || rest.starts_with('/')
        || value
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | '"' | '\\'))
    {
        return Err(invalid("is not a valid absolute URL"));
    }
    Ok(value.to_owned())
}

/// Validates an extra redirect URI (RFC 6749 §3.1.2: absolute, no fragment; `https` except
/// on loopback).
pub fn parse_redirect_uri(value: &str) -> Result<String, ClientError> {
    crate::redirect_uri::validate_for_registration(value)
        .map(|()| value.to_owned())
        .map_err(|reason| ClientError::InvalidOption {
            flag: "--redirect-uri",
            value: value.to_owned(),
            reason: reason.to_string(),
        })
}

/// Most scopes one integration may have; the consent page lists each.
const MAX_SCOPES: usize = 32;
/// Most characters in one scope token.
const MAX_SCOPE_CHARS: usize = 128;

/// Whether `c` may appear in a scope token: RFC 6749 §3.3 `NQCHAR` (%x21 / %x23-5B /
/// %x5D-7E, printable ASCII without space, `"` and `\`).
fn is_scope_char(c: char) -> bool {
    matches!(c, '\x21' | '\x23'..='\x5B' | '\x5D'..='\x7E')
}

/// Validates the space-delimited scopes an integration may ask for (RFC 6749 §3.3: each
/// token 1*NQCHAR), at least one, none repeated; order is kept.
pub fn parse_scopes(value: &str) -> Result<ClientScopes, ClientError> {
    let invalid = |reason: String| ClientError::InvalidOption {
        flag: "--scopes",
        value: value.to_owned(),
        reason,
    };
    let mut scopes: Vec<String> = Vec::new();
    for token in value.split(' ').filter(|token| !token.is_empty()) {
        if let Some(bad) = token.chars().find(|c| !is_scope_char(*c)) {
            return Err(invalid(format!(
                "scope {token:?} contains {bad:?}; a scope is printable ASCII without \" and \\, \
                 and scopes are separated by spaces"
            )));
        }
        if token.chars().count() > MAX_SCOPE_CHARS {
            return Err(invalid(format!(
                "scope {token:?} is longer than {MAX_SCOPE_CHARS} characters"
            )));
        }
        if scopes.iter().any(|scope| scope == token) {
            return Err(invalid(format!("scope {token:?} is given twice")));
        }
        scopes.push(token.to_owned());
    }
    if scopes.is_empty() {
        return Err(invalid("at least one scope is required".to_owned()));
    }
    if scopes.len() > MAX_SCOPES {
        return Err(invalid(format!("more than {MAX_SCOPES} scopes")));
    }
    Ok(ClientScopes(scopes))
}

/// Replaces a client's display name and settings.
pub async fn update(
    store: &dyn ClientStore,
    id: &str,
    name: Option<DisplayName>,
    change: impl FnOnce(&mut ClientSettings),
) -> Result<ClientRecord, ClientError> {
    let Some(mut record) = store.get_client(id).await.map_err(ClientError::Store)? else {
        return Err(ClientError::UnknownClient(id.to_owned()));
    };
    if let Some(name) = name {
        record.name = name.as_str().to_owned();
    }
    change(&mut record.settings);
    if store
        .update_client(&record)
        .await
        .map_err(ClientError::Store)?
    {
        Ok(record)
    } else {
        Err(ClientError::UnknownClient(id.to_owned()))
    }
}

/// Everything needed to register a client, already validated.
#[derive(Debug, Clone)]
pub struct NewClient {
    /// The `client_id`.
    pub id: ClientId,
    /// The platform project id.
    pub project_id: ProjectId,
    /// The consent-page name; the id when `None`.
    pub name: Option<DisplayName>,
    /// The secret; only its digest is stored.
    pub secret: ClientSecret,
    /// Branding and protocol options.
    pub settings: ClientSettings,
}

/// Registers a client at time `now` (Unix seconds) and returns the stored record.
/// A taken id is [`ClientError::DuplicateId`], and the existing client is left untouched.
pub async fn register(
    store: &dyn ClientStore,
    client: NewClient,
    now: i64,
) -> Result<ClientRecord, ClientError> {
    let name = client
        .name
        .unwrap_or_else(|| DisplayName::from_id(&client.id));
    let record = ClientRecord {
        id: client.id.as_str().to_owned(),
        project_id: client.project_id.as_str().to_owned(),
        name: name.as_str().to_owned(),
        secret_digest: client.secret.digest(),
        created_at: now,
        settings: client.settings,
    };
    // The insert itself detects the duplicate atomically; a lookup first would race with a
    // concurrent registration.
    match store.insert_client(&record).await {
        Ok(()) => Ok(record),
        Err(StoreError::AlreadyExists(_)) => Err(ClientError::DuplicateId(record.id)),
        Err(other) => Err(ClientError::Store(other)),
    }
}

/// Every registered client, ordered by id.
pub async fn list(store: &dyn ClientStore) -> Result<Vec<ClientRecord>, ClientError> {
    store.list_clients().await.map_err(ClientError::Store)
}

/// Removes the client with id `id`; [`ClientError::UnknownClient`] when there is none.
pub async fn remove(store: &dyn ClientStore, id: &str) -> Result<(), ClientError> {
    match store.remove_client(id).await {
        Ok(true) => Ok(()),
        Ok(false) => Err(ClientError::UnknownClient(id.to_owned())),
        Err(error) => Err(ClientError::Store(error)),
    }
}

/// Whether `presented` is the secret of the client `record`. The comparison runs in constant
/// time, and an unknown client (`None`) is compared against a fixed digest with the same work,
/// so neither the position of a wrong byte nor the existence of a client id shows in timing.
pub fn verify_secret(record: Option<&ClientRecord>, presented: &str) -> bool {
    let stored = record.map_or(UNKNOWN_CLIENT_DIGEST, |client| {
        client.secret_digest.as_str()
    });
    let matches = secrets::digest_matches(presented.as_bytes(), stored);
    matches && record.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record_with_secret(secret: &str) -> ClientRecord {
        ClientRecord {
            id: "google".to_owned(),
            project_id: "my-project".to_owned(),
            name: "Google".to_owned(),
            secret_digest: secrets::sha256_hex(secret.as_bytes()),
            created_at: 1_700_000_000,
            settings: ClientSettings::default(),
        }
    }

    #[test]
    fn scopes_follow_rfc_6749_and_keep_their_order() {
        let parsed = parse_scopes(" openid  email read:thermostats!~ ").unwrap();
        assert_eq!(parsed.0, ["openid", "email", "read:thermostats!~"]);
        for refused in [
            "",
            "   ",
            "email email",
            "email\tprofile",
            "em\"ail",
            "em\\ail",
            "caf\u{e9}",
            &"x".repeat(MAX_SCOPE_CHARS + 1),
            &(0..=MAX_SCOPES)
                .map(|n| format!("s{n}"))
                .collect::<Vec<_>>()
                .join(" "),
        ] {
            let error = parse_scopes(refused).unwrap_err();
            assert!(error.is_bad_input());
            assert!(error.to_string().starts_with("--scopes "), "{error}");
        }
    }

    #[test]
    fn client_ids_follow_the_unreserved_grammar() {
        let max = "a".repeat(128);
        for good in ["g", "google-home", "A.b_c~d-9", max.as_str()] {
            assert!(ClientId::parse(good).is_ok(), "{good:?} should be accepted");
        }
        let too_long = "a".repeat(129);
        let cases = [
            ("", "must not be empty"),
            (too_long.as_str(), "too long (129 characters; at most 128)"),
            ("has space", "contains ' '"),
            ("slash/", "contains '/'"),
            ("percent%41", "contains '%'"),
            ("é", "contains 'é'"),
            ("tab\t", "contains '\\t'"),
            ("..", "must not be"),
        ];
        for (bad, reason) in cases {
            let message = ClientId::parse(bad).unwrap_err().to_string();
            assert!(message.starts_with("--id "), "{message}");
            assert!(message.contains(reason), "{bad:?}: {message}");
        }
    }

    #[test]
    fn project_ids_allow_letters_digits_dot_underscore_dash_only() {
        for good in ["my-project", "Proj_1.2", "P"] {
            assert!(
                ProjectId::parse(good).is_ok(),
                "{good:?} should be accepted"
            );
        }
        for bad in ["", "a~b", "a/b", "a?b", "a b", "..", &"p".repeat(129)] {
            let message = ProjectId::parse(bad).unwrap_err().to_string();
            assert!(message.starts_with("--project-id "), "{bad:?}: {message}");
        }
    }

    #[test]
    fn display_names_are_bounded_and_printable() {
        assert_eq!(
            DisplayName::parse("Acme Lights ✨").unwrap().as_str(),
            "Acme Lights ✨"
        );
        assert!(DisplayName::parse(&"é".repeat(100)).is_ok());
        for bad in ["", "   ", "line\nbreak", "bell\u{7}", &"n".repeat(101)] {
            let message = DisplayName::parse(bad).unwrap_err().to_string();
            assert!(message.starts_with("--name "), "{bad:?}: {message}");
        }
    }

    #[test]
    fn supplied_secrets_are_checked_without_being_echoed() {
        assert!(ClientSecret::supplied("0123456789abcdef").is_ok());
        let cases = [
            ("", "is empty"),
            ("short-secret", "is 12 characters; at least 16 are required"),
            (
                "with\u{1b}escape-0123456789",
                "contains a control character",
            ),
        ];
        for (bad, reason) in cases {
            let message = ClientSecret::supplied(bad).unwrap_err().to_string();
            assert!(message.starts_with("--secret-stdin: "), "{message}");
            assert!(message.contains(reason), "{message}");
            if !bad.is_empty() {
                assert!(!message.contains(bad), "the secret leaked: {message}");
            }
        }
        let huge = "s".repeat(MAX_SUPPLIED_SECRET_CHARS + 1);
        assert!(ClientSecret::supplied(&huge).is_err());
    }

    #[test]
    fn generated_secrets_are_long_random_and_never_debug_printed() {
        let first = ClientSecret::generate().unwrap();
        let second = ClientSecret::generate().unwrap();
        assert_eq!(first.expose().len(), 43);
        assert_ne!(first, second);
        assert!(!format!("{first:?}").contains(first.expose()));
        assert_eq!(
            first.digest(),
            secrets::sha256_hex(first.expose().as_bytes())
        );
    }

    #[test]
    fn verify_secret_accepts_only_the_right_secret_of_a_known_client() {
        let record = record_with_secret("right-secret-0123456789");
        assert!(verify_secret(Some(&record), "right-secret-0123456789"));
        assert!(!verify_secret(Some(&record), "right-secret-012345678"));
        assert!(!verify_secret(Some(&record), "wrong-secret-0123456789"));
        assert!(!verify_secret(Some(&record), ""));
        assert!(!verify_secret(None, "right-secret-0123456789"));
        assert!(!verify_secret(None, ""));
    }

    #[test]
    fn verify_secret_never_accepts_the_stored_digest_as_the_secret() {
        let record = record_with_secret("right-secret-0123456789");
        assert!(!verify_secret(Some(&record), &record.secret_digest));
    }

    #[test]
    fn bad_input_errors_are_told_apart_from_store_failures() {
        assert!(ClientError::DuplicateId("x".to_owned()).is_bad_input());
        assert!(ClientError::UnknownClient("x".to_owned()).is_bad_input());
        assert!(!ClientError::Store(StoreError::Unavailable("down".to_owned())).is_bad_input());
        assert!(!ClientError::Random(RandomUnavailable).is_bad_input());
    }
}
