//! Service accounts of an integration's project (the interface's "service account
//! credentials"): RSA 2048 keys whose private half goes once into a key file in the common
//! service-account JSON format, so that the widespread client libraries (which sign RS256)
//! read it unchanged; linkd keeps only the public half.

use std::collections::BTreeMap;

use aws_lc_rs::encoding::AsDer as _;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::KeyPair as _;
use base64::Engine as _;

use crate::secrets;
use crate::store::{ClientStore, ServiceAccountRecord, ServiceAccountStore, StoreError};

/// Why a service-account operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceAccountError {
    /// No integration has this id.
    #[error("--client {0:?}: no such client (see `linkd clients list`)")]
    UnknownClient(String),
    /// No service account has this email.
    #[error("no service account {0:?} (see `linkd service-accounts list`)")]
    UnknownAccount(String),
    /// The name does not follow its grammar.
    #[error("--name {0:?}: 1-30 characters of lower-case letters, digits and '-'")]
    InvalidName(String),
    /// An account with this email exists.
    #[error("--name {0:?}: a service account with this name already exists in the project")]
    Duplicate(String),
    /// Key generation failed.
    #[error("cannot generate a key")]
    KeyGeneration,
    /// The store failed.
    #[error("{0}")]
    Store(StoreError),
}

impl ServiceAccountError {
    /// Whether the operator's input was at fault (exit code 2) rather than the environment.
    pub fn is_bad_input(&self) -> bool {
        !matches!(self, Self::KeyGeneration | Self::Store(_))
    }
}

impl From<StoreError> for ServiceAccountError {
    fn from(error: StoreError) -> Self {
        Self::Store(error)
    }
}

/// The device-graph scope for a scope base (`{scope_base}/auth/devicegraph`).
pub fn devicegraph_scope(scope_base: &str) -> String {
    format!("{}/auth/devicegraph", scope_base.trim_end_matches('/'))
}

/// A new key: its id, the PKCS#8 PEM private key for the key file, the SPKI PEM public key
/// for the store.
struct NewKey {
    key_id: String,
    private_pem: String,
    public_pem: String,
}

fn pem(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = format!("-----BEGIN {label}-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str(&format!("-----END {label}-----\n"));
    pem
}

fn new_key() -> Result<NewKey, ServiceAccountError> {
    let pair =
        KeyPair::generate(KeySize::Rsa2048).map_err(|_| ServiceAccountError::KeyGeneration)?;
    let private = pair
        .as_der()
        .map_err(|_| ServiceAccountError::KeyGeneration)?;
    let public = pair
        .public_key()
        .as_der()
        .map_err(|_| ServiceAccountError::KeyGeneration)?;
    let key_id =
        secrets::hex(&secrets::random_bytes(20).map_err(|_| ServiceAccountError::KeyGeneration)?);
    Ok(NewKey {
        key_id,
        private_pem: pem("PRIVATE KEY", private.as_ref()),
        public_pem: pem("PUBLIC KEY", public.as_ref()),
    })
}

/// The key file handed to the integrator, in the common service-account JSON format.
fn key_file(account: &ServiceAccountRecord, key: &NewKey, issuer: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "service_account",
        "project_id": account.project_id,
        "private_key_id": key.key_id,
        "private_key": key.private_pem,
        "client_email": account.email,
        "client_id": account.unique_id,
        "auth_uri": format!("{issuer}/authorize"),
        "token_uri": format!("{issuer}/token"),
    })
}

fn valid_name(name: &str) -> bool {
    (1..=30).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

/// Creates a service account for integration `client_id`; returns it and the key file.
pub async fn create(
    store: &(impl ClientStore + ServiceAccountStore + ?Sized),
    client_id: &str,
    name: &str,
    issuer: &str,
    scope_base: &str,
    now: i64,
) -> Result<(ServiceAccountRecord, serde_json::Value), ServiceAccountError> {
    if !valid_name(name) {
        return Err(ServiceAccountError::InvalidName(name.to_owned()));
    }
    let client = store
        .get_client(client_id)
        .await?
        .ok_or_else(|| ServiceAccountError::UnknownClient(client_id.to_owned()))?;
    let email = format!("{name}@{}.serviceaccount.linkd", client.project_id);
    if store.get_service_account(&email).await?.is_some() {
        return Err(ServiceAccountError::Duplicate(name.to_owned()));
    }
    let key = new_key()?;
    let digits = secrets::random_bytes(9).map_err(|_| ServiceAccountError::KeyGeneration)?;
    let unique_id = format!(
        "1{}",
        digits
            .iter()
            .map(|byte| format!("{:02}", byte % 100))
            .collect::<String>()
    );
    let account = ServiceAccountRecord {
        email,
        unique_id,
        client_id: client.id,
        project_id: client.project_id,
        name: name.to_owned(),
        keys: BTreeMap::from([(key.key_id.clone(), key.public_pem.clone())]),
        scopes: vec![devicegraph_scope(scope_base)],
        created_at: now,
    };
    store.put_service_account(&account).await?;
    let file = key_file(&account, &key, issuer);
    Ok((account, file))
}

/// Adds a key to an account (for rotation); returns the new key file.
pub async fn add_key(
    store: &dyn ServiceAccountStore,
    email: &str,
    issuer: &str,
) -> Result<serde_json::Value, ServiceAccountError> {
    let mut account = store
        .get_service_account(email)
        .await?
        .ok_or_else(|| ServiceAccountError::UnknownAccount(email.to_owned()))?;
    let key = new_key()?;
    account
        .keys
        .insert(key.key_id.clone(), key.public_pem.clone());
    store.put_service_account(&account).await?;
    Ok(key_file(&account, &key, issuer))
}

/// Writes a key file readable by its owner only; refuses to replace an existing file.
pub fn write_key_file(path: &std::path::Path, file: &serde_json::Value) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    out.write_all(
        serde_json::to_string_pretty(file)
            .unwrap_or_default()
            .as_bytes(),
    )?;
    out.write_all(b"\n")?;
    out.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_name("device-sync"));
        assert!(valid_name("a1"));
        for bad in ["", "-a", "a-", "Upper", "a_b", &"a".repeat(31)] {
            assert!(!valid_name(bad), "{bad}");
        }
    }

    #[test]
    fn generated_keys_are_rsa_pem() {
        let key = new_key().unwrap();
        assert_eq!(key.key_id.len(), 40);
        assert!(key.private_pem.starts_with("-----BEGIN PRIVATE KEY-----\n"));
        assert!(key.public_pem.starts_with("-----BEGIN PUBLIC KEY-----\n"));
        assert!(jsonwebtoken::DecodingKey::from_rsa_pem(key.public_pem.as_bytes()).is_ok());
        assert!(jsonwebtoken::EncodingKey::from_rsa_pem(key.private_pem.as_bytes()).is_ok());
    }
}

/// The audience every widespread service-account client library writes into its JWT-bearer
/// assertions, whatever the key file's `token_uri` says (the Python, Node, Java and .NET
/// libraries hard-code it). linkd accepts it by default beside its own token endpoint URL:
/// only linkd holds the public half of its service accounts' keys, so an assertion signed
/// by one of them for this audience can be checked, and used, at linkd alone.
pub const WELL_KNOWN_TOKEN_AUDIENCE: &str = "https://oauth2.googleapis.com/token";

/// Why a service-account assertion was refused; the messages are for the integrator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssertionError {
    /// Not a JWT, not RS256, or neither a `kid` nor an `iss` naming the key.
    #[error("the assertion is not an RS256 JWT with a kid or an iss")]
    Malformed,
    /// No service account has this key.
    #[error("the assertion's key is unknown")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the assertion's signature does not verify")]
    BadSignature,
    /// `iss` is not the key's account.
    #[error("iss must be the service account's email")]
    WrongIssuer,
    /// `sub` is present and names someone other than the account.
    #[error("sub must be the service account's email")]
    WrongSubject,
    /// `aud` is not what this endpoint expects.
    #[error("aud must be {0}")]
    WrongAudience(String),
    /// `iat`/`exp` missing, more than an hour apart, expired or in the future.
    #[error("{0}")]
    BadTime(&'static str),
    /// The store could not answer.
    #[error("store unavailable")]
    Unavailable,
}

impl From<StoreError> for AssertionError {
    fn from(error: StoreError) -> Self {
        tracing::warn!(%error, "store failed while checking a service-account assertion");
        crate::metrics::record_store_error("service_account");
        Self::Unavailable
    }
}

/// A compact JWS taken apart. Segments may carry base64 `=` padding: RFC 7515 forbids it,
/// but a widespread client library writes it and the platform's token endpoint accepts it,
/// so linkd does too. The signature is checked over the segments exactly as sent.
struct CompactJws<'a> {
    header: serde_json::Value,
    claims: serde_json::Value,
    signing_input: &'a str,
    /// The signature segment, unpadded.
    signature: String,
}

impl<'a> CompactJws<'a> {
    fn split(token: &'a str) -> Result<Self, AssertionError> {
        use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
        const LENIENT: GeneralPurpose = GeneralPurpose::new(
            &base64::alphabet::URL_SAFE,
            GeneralPurposeConfig::new()
                .with_encode_padding(false)
                .with_decode_padding_mode(DecodePaddingMode::Indifferent),
        );
        let (signing_input, signature) = token.rsplit_once('.').ok_or(AssertionError::Malformed)?;
        let (header, claims) = signing_input
            .split_once('.')
            .ok_or(AssertionError::Malformed)?;
        let json = |segment: &str| -> Result<serde_json::Value, AssertionError> {
            let bytes = LENIENT
                .decode(segment)
                .map_err(|_| AssertionError::Malformed)?;
            match serde_json::from_slice(&bytes) {
                Ok(value @ serde_json::Value::Object(_)) => Ok(value),
                _ => Err(AssertionError::Malformed),
            }
        };
        Ok(Self {
            header: json(header)?,
            claims: json(claims)?,
            signing_input,
            signature: signature.trim_end_matches('=').to_owned(),
        })
    }
}

/// Whether an `aud` claim (a string or an array) names one of `audiences`, a trailing `/`
/// ignored on either side.
pub fn audience_matches(aud: &serde_json::Value, audiences: &[&str]) -> bool {
    let known = |candidate: &serde_json::Value| {
        candidate.as_str().is_some_and(|candidate| {
            let candidate = candidate.trim_end_matches('/');
            audiences
                .iter()
                .any(|audience| audience.trim_end_matches('/') == candidate)
        })
    };
    match aud {
        serde_json::Value::Array(auds) => auds.iter().any(known),
        single => known(single),
    }
}

/// Verifies a JWT-bearer assertion (RFC 7523 §3): [`verify_signed_jwt`], and `aud` one of
/// `audiences`. Returns the account and the claims.
pub async fn verify_assertion(
    store: &dyn ServiceAccountStore,
    assertion: &str,
    audiences: &[&str],
    now: i64,
    skew: i64,
) -> Result<(ServiceAccountRecord, serde_json::Value), AssertionError> {
    let (account, claims) = verify_signed_jwt(store, assertion, now, skew).await?;
    if !audience_matches(&claims["aud"], audiences) {
        return Err(AssertionError::WrongAudience(audiences.join(" or ")));
    }
    Ok((account, claims))
}

/// Verifies a JWT signed by a service account's key, except its audience, which the caller
/// must check: RS256; the key by `kid`, or without a `kid` (as some client libraries sign
/// their token requests) any key of the account `iss` names; `iss` the account; `sub`, when
/// present, the account too (linkd acts for no one else); `iat`/`exp` at most an hour
/// apart and current within `skew` seconds. Returns the account and the claims.
pub async fn verify_signed_jwt(
    store: &dyn ServiceAccountStore,
    jwt: &str,
    now: i64,
    skew: i64,
) -> Result<(ServiceAccountRecord, serde_json::Value), AssertionError> {
    if jwt.len() > crate::tokens::jwt::MAX_TOKEN_BYTES {
        return Err(AssertionError::Malformed);
    }
    let parts = CompactJws::split(jwt)?;
    if parts.header["alg"].as_str() != Some("RS256") {
        return Err(AssertionError::Malformed);
    }
    let (account, candidates) = match &parts.header["kid"] {
        serde_json::Value::String(kid) => {
            let account = store
                .service_account_by_key(kid)
                .await?
                .ok_or(AssertionError::UnknownKey)?;
            let public = account
                .keys
                .get(kid)
                .cloned()
                .ok_or(AssertionError::UnknownKey)?;
            (account, vec![public])
        }
        serde_json::Value::Null => {
            let email = parts.claims["iss"]
                .as_str()
                .ok_or(AssertionError::Malformed)?;
            let account = store
                .get_service_account(email)
                .await?
                .ok_or(AssertionError::UnknownKey)?;
            let keys = account.keys.values().cloned().collect();
            (account, keys)
        }
        _ => return Err(AssertionError::Malformed),
    };
    let mut verified = false;
    for public in &candidates {
        let key = jsonwebtoken::DecodingKey::from_rsa_pem(public.as_bytes())
            .map_err(|_| AssertionError::UnknownKey)?;
        if jsonwebtoken::crypto::verify(
            &parts.signature,
            parts.signing_input.as_bytes(),
            &key,
            jsonwebtoken::Algorithm::RS256,
        )
        .map_err(|_| AssertionError::Malformed)?
        {
            verified = true;
            break;
        }
    }
    if !verified {
        return Err(AssertionError::BadSignature);
    }
    let claims = parts.claims;
    if claims["iss"].as_str() != Some(account.email.as_str()) {
        return Err(AssertionError::WrongIssuer);
    }
    match &claims["sub"] {
        serde_json::Value::Null => {}
        sub if sub.as_str() == Some(account.email.as_str()) => {}
        _ => return Err(AssertionError::WrongSubject),
    }
    let (Some(iat), Some(exp)) = (claims["iat"].as_i64(), claims["exp"].as_i64()) else {
        return Err(AssertionError::BadTime("iat and exp are required"));
    };
    if exp <= iat || exp - iat > 3600 {
        return Err(AssertionError::BadTime(
            "exp must be after iat and at most one hour later",
        ));
    }
    if now > exp + skew {
        return Err(AssertionError::BadTime("the assertion expired"));
    }
    if iat > now + skew {
        return Err(AssertionError::BadTime(
            "the assertion is issued in the future",
        ));
    }
    Ok((account, claims))
}
