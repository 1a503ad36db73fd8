//! The signing keyring in the keys directory (DESIGN.md "Keys and rotation").
//!
//! On disk: `keyring.json`, the manifest naming every key with its `kid`, algorithm, state
//! and timestamps, and one `<kid>.key.pem` per key (PKCS#8, mode 0600). The manifest is
//! replaced atomically (temporary file, fsync, rename), so a server reading it while the
//! CLI writes sees the old or the new keyring, never half of one; CLI invocations take an
//! exclusive lock on `.keyring.lock` so two rotations cannot interleave.
//!
//! States: **next** (published in the JWKS, not signing) → **current** (signs) →
//! **previous** (verifies until its tokens have expired) → retired (removed). Publishing
//! before signing is what lets many instances rotate without a verifier ever meeting an
//! unknown `kid`.
//!
//! In memory: an immutable [`Keyring`] behind a [`KeyringHandle`], swapped whole on reload.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Name of the manifest file.
pub const MANIFEST_FILE: &str = "keyring.json";
const LOCK_FILE: &str = ".keyring.lock";
const MANIFEST_VERSION: u32 = 1;

/// A signing algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Algorithm {
    /// ECDSA P-256 with SHA-256: the default, verifiable by every JOSE library.
    #[serde(rename = "ES256")]
    Es256,
    /// Ed25519.
    #[serde(rename = "EdDSA")]
    EdDsa,
}

impl Algorithm {
    /// The JOSE `alg` name.
    pub fn jose_name(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    pub(crate) fn jsonwebtoken(self) -> jsonwebtoken::Algorithm {
        match self {
            Self::Es256 => jsonwebtoken::Algorithm::ES256,
            Self::EdDsa => jsonwebtoken::Algorithm::EdDSA,
        }
    }
}

impl std::fmt::Display for Algorithm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.jose_name())
    }
}

impl std::str::FromStr for Algorithm {
    type Err = KeyringError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.to_ascii_lowercase().as_str() {
            "es256" => Ok(Self::Es256),
            "eddsa" | "ed25519" => Ok(Self::EdDsa),
            _ => Err(KeyringError::UnknownAlgorithm(text.to_owned())),
        }
    }
}

/// Where a key is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyState {
    /// Published, not yet signing.
    Next,
    /// Signing.
    Current,
    /// Verifying tokens it signed until they expire.
    Previous,
}

impl std::fmt::Display for KeyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Next => "next",
            Self::Current => "current",
            Self::Previous => "previous",
        })
    }
}

/// One key as the manifest records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyInfo {
    /// Key id, the JWS `kid`.
    pub kid: String,
    /// Algorithm.
    pub alg: Algorithm,
    /// State.
    pub state: KeyState,
    /// When the key was generated (and published), Unix seconds.
    pub created_at: i64,
    /// When it became current.
    #[serde(default)]
    pub activated_at: Option<i64>,
    /// When it stopped being current.
    #[serde(default)]
    pub deactivated_at: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Manifest {
    version: u32,
    keys: Vec<KeyInfo>,
}

/// Why a keyring operation failed. [`KeyringError::is_refusal`] tells refusals (the
/// operator asked for something unsafe) from failures of the environment.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The manifest or a key file is not what linkd wrote.
    #[error("{path}: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A private key file is open to group or others (any of the mode bits 0o077).
    #[error(
        "{path}: private key is accessible by group or others (mode {mode:o}); run `chmod 600 {path}`"
    )]
    InsecurePermissions {
        /// The file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// Unknown algorithm name.
    #[error("unknown algorithm {0:?}: expected es256 or eddsa")]
    UnknownAlgorithm(String),
    /// `generate` while a next key already waits.
    #[error("key {0} is already the next key: rotate it in before generating another")]
    NextExists(String),
    /// `rotate` without a next key.
    #[error("there is no next key to rotate in: run `linkd keys generate` first")]
    NoNextKey,
    /// `rotate` too soon after `generate`.
    #[error(
        "next key {kid} was published {age}s ago; rotate after {min}s so every verifier has fetched it (or pass --force)"
    )]
    TooFresh {
        /// The next key.
        kid: String,
        /// Seconds since it was published.
        age: i64,
        /// Required seconds.
        min: i64,
    },
    /// A rotation policy whose minimum is not above the reload interval.
    #[error(
        "--min-published-secs {min} must be greater than the servers' reload interval ({reload}s)"
    )]
    PolicyTooShort {
        /// Configured minimum.
        min: i64,
        /// Reload interval.
        reload: i64,
    },
    /// `retire` of a key that does not exist.
    #[error("no key {0} in the keyring")]
    UnknownKey(String),
    /// `retire` of a key that is not previous.
    #[error("key {kid} is {state}: only a previous key can be retired")]
    NotPrevious {
        /// The key.
        kid: String,
        /// Its state.
        state: KeyState,
    },
    /// `retire` while tokens the key signed may still be valid.
    #[error(
        "key {kid} may still verify live tokens for {remaining}s; retire it later (or pass --force)"
    )]
    StillInUse {
        /// The key.
        kid: String,
        /// Seconds until its last token expires.
        remaining: i64,
    },
    /// Key generation failed.
    #[error("key generation failed")]
    Generation,
}

impl KeyringError {
    /// Whether the operator asked for something refused (exit code 2) rather than the
    /// environment failing.
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            Self::UnknownAlgorithm(_)
                | Self::NextExists(_)
                | Self::NoNextKey
                | Self::TooFresh { .. }
                | Self::PolicyTooShort { .. }
                | Self::UnknownKey(_)
                | Self::NotPrevious { .. }
                | Self::StillInUse { .. }
        )
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> KeyringError + '_ {
    move |source| KeyringError::Io {
        path: path.to_owned(),
        source,
    }
}

fn key_file(dir: &Path, kid: &str) -> PathBuf {
    dir.join(format!("{kid}.key.pem"))
}

fn read_manifest(dir: &Path) -> Result<Manifest, KeyringError> {
    let path = dir.join(MANIFEST_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Manifest {
                version: MANIFEST_VERSION,
                keys: Vec::new(),
            });
        }
        Err(error) => return Err(io_error(&path)(error)),
    };
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|error| KeyringError::Corrupt {
            path: path.clone(),
            reason: error.to_string(),
        })?;
    if manifest.version != MANIFEST_VERSION {
        return Err(KeyringError::Corrupt {
            path,
            reason: format!("unsupported manifest version {}", manifest.version),
        });
    }
    check_manifest(&manifest).map_err(|reason| KeyringError::Corrupt { path, reason })?;
    Ok(manifest)
}

/// Whether `kid` is one linkd could have generated. A `kid` becomes part of a file name, so
/// anything else (a path separator, `..`) must never reach the filesystem.
fn is_valid_kid(kid: &str) -> bool {
    (1..=64).contains(&kid.len())
        && kid
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
}

/// The invariants every writer keeps; a manifest breaking one was edited by hand or damaged,
/// and signing from it could pick an arbitrary key.
fn check_manifest(manifest: &Manifest) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for key in &manifest.keys {
        if !is_valid_kid(&key.kid) {
            return Err(format!("invalid key id {:?}", key.kid));
        }
        if !seen.insert(key.kid.as_str()) {
            return Err(format!("key id {} appears twice", key.kid));
        }
    }
    for state in [KeyState::Current, KeyState::Next] {
        if manifest
            .keys
            .iter()
            .filter(|key| key.state == state)
            .count()
            > 1
        {
            return Err(format!("more than one {state} key"));
        }
    }
    Ok(())
}

/// Creates the keys directory readable by its owner only; an existing directory is left as
/// the operator set it up (a mounted secret volume has its own permissions).
fn create_keys_dir(dir: &Path) -> Result<(), KeyringError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io_error(dir))
}

fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), KeyringError> {
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&temporary)
        .and_then(|mut file| {
            file.write_all(contents)?;
            file.sync_all()
        })
        .map_err(io_error(&temporary))
        .and_then(|()| std::fs::rename(&temporary, path).map_err(io_error(path)));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    if let Some(parent) = path.parent()
        && let Ok(directory) = File::open(parent)
    {
        // Make the rename itself durable; failure here only weakens crash safety.
        let _ = directory.sync_all();
    }
    Ok(())
}

fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<(), KeyringError> {
    let path = dir.join(MANIFEST_FILE);
    let text = serde_json::to_vec_pretty(manifest).map_err(|error| KeyringError::Corrupt {
        path: path.clone(),
        reason: error.to_string(),
    })?;
    write_atomically(&path, &text, 0o644)
}

/// An exclusive lock on the keys directory, released on drop.
struct DirectoryLock(File);

impl DirectoryLock {
    fn acquire(dir: &Path) -> Result<Self, KeyringError> {
        create_keys_dir(dir)?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(io_error(&path))?;
        file.lock().map_err(io_error(&path))?;
        Ok(Self(file))
    }
}

impl Drop for DirectoryLock {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn new_kid() -> Result<String, KeyringError> {
    crate::secrets::random_token(12).map_err(|_| KeyringError::Generation)
}

fn generate_pkcs8(alg: Algorithm) -> Result<Vec<u8>, KeyringError> {
    let document = match alg {
        Algorithm::Es256 => EcdsaKeyPair::generate_pkcs8(
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            &crate::secrets::system_random(),
        )
        .map_err(|_| KeyringError::Generation)?,
        Algorithm::EdDsa => Ed25519KeyPair::generate_pkcs8(&crate::secrets::system_random())
            .map_err(|_| KeyringError::Generation)?,
    };
    Ok(document.as_ref().to_vec())
}

fn pem_encode(der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::from("-----BEGIN PRIVATE KEY-----\n");
    for line in body.as_bytes().chunks(64) {
        pem.push_str(&String::from_utf8_lossy(line));
        pem.push('\n');
    }
    pem.push_str("-----END PRIVATE KEY-----\n");
    pem
}

fn add_key(
    dir: &Path,
    manifest: &mut Manifest,
    alg: Algorithm,
    state: KeyState,
    now: i64,
) -> Result<KeyInfo, KeyringError> {
    let kid = new_kid()?;
    let der = generate_pkcs8(alg)?;
    let path = key_file(dir, &kid);
    // Created with mode 0600 in the same call, so the key is never readable by others, and
    // `create_new` so a key file is never overwritten.
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .map_err(io_error(&path))?;
    let stored = file
        .write_all(pem_encode(&der).as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(io_error(&path));
    let info = KeyInfo {
        kid,
        alg,
        state,
        created_at: now,
        activated_at: (state == KeyState::Current).then_some(now),
        deactivated_at: None,
    };
    manifest.keys.push(info.clone());
    // The key file exists before the manifest names it, so a reader never meets a listed
    // key without its file; a key the manifest never came to name is removed again.
    if let Err(error) = stored.and_then(|()| write_manifest(dir, manifest)) {
        let _ = std::fs::remove_file(&path);
        return Err(error);
    }
    Ok(info)
}

/// Adds a *next* key: published by every server at its next reload, signing only after
/// [`rotate`].
pub fn generate(dir: &Path, alg: Algorithm, now: i64) -> Result<KeyInfo, KeyringError> {
    let _lock = DirectoryLock::acquire(dir)?;
    let mut manifest = read_manifest(dir)?;
    if let Some(next) = manifest.keys.iter().find(|key| key.state == KeyState::Next) {
        return Err(KeyringError::NextExists(next.kid.clone()));
    }
    add_key(dir, &mut manifest, alg, KeyState::Next, now)
}

/// Creates a current key when the directory has none (a first `serve`). Returns the new
/// key's id, or `None` when a current key already exists.
pub fn ensure_current(
    dir: &Path,
    alg: Algorithm,
    now: i64,
) -> Result<Option<String>, KeyringError> {
    let has_current = |manifest: &Manifest| {
        manifest
            .keys
            .iter()
            .any(|key| key.state == KeyState::Current)
    };
    // In production the keys directory is often a read-only secret volume: when it already
    // holds a current key, starting must not need to write (not even the lock file).
    if has_current(&read_manifest(dir)?) {
        return Ok(None);
    }
    let _lock = DirectoryLock::acquire(dir)?;
    let mut manifest = read_manifest(dir)?;
    if has_current(&manifest) {
        return Ok(None);
    }
    add_key(dir, &mut manifest, alg, KeyState::Current, now).map(|info| Some(info.kid))
}

/// Timing rules of rotation and retirement.
#[derive(Debug, Clone, Copy)]
pub struct RotationPolicy {
    /// Minimum seconds a next key is published before it may sign.
    pub min_published_secs: i64,
    /// The servers' keyring reload interval; the minimum must exceed it.
    pub reload_interval_secs: i64,
    /// Longest lifetime of a token (plus clock leeway): how long a previous key must stay.
    pub max_token_lifetime_secs: i64,
}

impl Default for RotationPolicy {
    fn default() -> Self {
        Self {
            min_published_secs: 3600,
            reload_interval_secs: 10,
            max_token_lifetime_secs: 3600 + 60,
        }
    }
}

/// Promotes next → current and current → previous.
pub fn rotate(
    dir: &Path,
    now: i64,
    policy: RotationPolicy,
    force: bool,
) -> Result<KeyInfo, KeyringError> {
    if policy.min_published_secs <= policy.reload_interval_secs {
        return Err(KeyringError::PolicyTooShort {
            min: policy.min_published_secs,
            reload: policy.reload_interval_secs,
        });
    }
    let _lock = DirectoryLock::acquire(dir)?;
    let mut manifest = read_manifest(dir)?;
    let next_index = manifest
        .keys
        .iter()
        .position(|key| key.state == KeyState::Next)
        .ok_or(KeyringError::NoNextKey)?;
    let next = &manifest.keys[next_index];
    let age = now - next.created_at;
    if age < policy.min_published_secs && !force {
        return Err(KeyringError::TooFresh {
            kid: next.kid.clone(),
            age,
            min: policy.min_published_secs,
        });
    }
    for key in &mut manifest.keys {
        if key.state == KeyState::Current {
            key.state = KeyState::Previous;
            key.deactivated_at = Some(now);
        }
    }
    let promoted = &mut manifest.keys[next_index];
    promoted.state = KeyState::Current;
    promoted.activated_at = Some(now);
    let promoted = promoted.clone();
    write_manifest(dir, &manifest)?;
    Ok(promoted)
}

/// Removes a previous key and its private key file.
pub fn retire(
    dir: &Path,
    kid: &str,
    now: i64,
    policy: RotationPolicy,
    force: bool,
) -> Result<KeyInfo, KeyringError> {
    let _lock = DirectoryLock::acquire(dir)?;
    let mut manifest = read_manifest(dir)?;
    let index = manifest
        .keys
        .iter()
        .position(|key| key.kid == kid)
        .ok_or_else(|| KeyringError::UnknownKey(kid.to_owned()))?;
    let key = manifest.keys[index].clone();
    if key.state != KeyState::Previous {
        return Err(KeyringError::NotPrevious {
            kid: key.kid,
            state: key.state,
        });
    }
    let last_valid = key.deactivated_at.unwrap_or(now) + policy.max_token_lifetime_secs;
    if now < last_valid && !force {
        return Err(KeyringError::StillInUse {
            kid: key.kid,
            remaining: last_valid - now,
        });
    }
    manifest.keys.remove(index);
    write_manifest(dir, &manifest)?;
    let path = key_file(dir, kid);
    match std::fs::remove_file(&path) {
        Ok(()) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(io_error(&path)(error)),
    }
    Ok(key)
}

/// The keys of the directory, in manifest order.
pub fn list(dir: &Path) -> Result<Vec<KeyInfo>, KeyringError> {
    Ok(read_manifest(dir)?.keys)
}

/// A loaded key.
pub(crate) struct LoadedKey {
    pub(crate) info: KeyInfo,
    pub(crate) decoding: jsonwebtoken::DecodingKey,
}

/// The current key, parsed once when the keyring loads: parsing a PKCS#8 key checks that its
/// public point lies on the curve, which costs as much as a signature, so it must not happen
/// per token.
pub(crate) enum Signer {
    /// ES256.
    Es256(EcdsaKeyPair),
    /// EdDSA (Ed25519).
    EdDsa(Ed25519KeyPair),
}

impl Signer {
    /// The signature of `message` in JWS form (ES256: the fixed-length `r || s`).
    pub(crate) fn sign(&self, message: &[u8]) -> Option<Vec<u8>> {
        match self {
            Self::Es256(pair) => pair
                .sign(&crate::secrets::system_random(), message)
                .ok()
                .map(|signature| signature.as_ref().to_vec()),
            Self::EdDsa(pair) => Some(pair.sign(message).as_ref().to_vec()),
        }
    }
}

/// An immutable, fully loaded keyring.
pub struct Keyring {
    pub(crate) signing: Option<(KeyInfo, Signer)>,
    pub(crate) keys: HashMap<String, LoadedKey>,
    jwks: Bytes,
    fingerprint: Vec<KeyInfo>,
    pub(crate) verified: super::verified::VerifiedTokens,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyring")
            .field("keys", &self.fingerprint)
            .finish_non_exhaustive()
    }
}

fn read_private_key(path: &Path) -> Result<Vec<u8>, KeyringError> {
    // The mode is checked on the opened file, so what is read is what was checked.
    let mut file = File::open(path).map_err(io_error(path))?;
    let metadata = file.metadata().map_err(io_error(path))?;
    let mode = metadata.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyringError::InsecurePermissions {
            path: path.to_owned(),
            mode,
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io_error(path))?;
    let corrupt = |reason: &str| KeyringError::Corrupt {
        path: path.to_owned(),
        reason: reason.to_owned(),
    };
    let body: String = text
        .lines()
        .filter(|line| !line.starts_with("-----"))
        .collect();
    if !text.contains("-----BEGIN PRIVATE KEY-----") {
        return Err(corrupt("not a PKCS#8 PEM private key"));
    }
    base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .map_err(|_| corrupt("PEM body is not base64"))
}

impl Keyring {
    /// Loads every key of the manifest in `dir`.
    pub fn load(dir: &Path) -> Result<Self, KeyringError> {
        let manifest = read_manifest(dir)?;
        let mut keys = HashMap::new();
        let mut signing = None;
        let mut jwks = Vec::new();
        for info in &manifest.keys {
            let path = key_file(dir, &info.kid);
            let der = read_private_key(&path)?;
            let corrupt = || KeyringError::Corrupt {
                path: path.clone(),
                reason: format!("not a valid {} private key", info.alg),
            };
            let (jwk, decoding, encoding) = match info.alg {
                Algorithm::Es256 => {
                    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &der)
                        .map_err(|_| corrupt())?;
                    let point = pair.public_key().as_ref();
                    // An uncompressed P-256 point: 0x04, then 32 bytes of x and 32 of y.
                    if point.len() != 65 || point[0] != 4 {
                        return Err(corrupt());
                    }
                    let x = URL_SAFE_NO_PAD.encode(&point[1..33]);
                    let y = URL_SAFE_NO_PAD.encode(&point[33..65]);
                    let decoding = jsonwebtoken::DecodingKey::from_ec_components(&x, &y)
                        .map_err(|_| corrupt())?;
                    let jwk = serde_json::json!({
                        "kty": "EC", "crv": "P-256", "x": x, "y": y,
                        "kid": info.kid, "alg": "ES256", "use": "sig",
                    });
                    (jwk, decoding, Signer::Es256(pair))
                }
                Algorithm::EdDsa => {
                    let pair = Ed25519KeyPair::from_pkcs8(&der).map_err(|_| corrupt())?;
                    let x = URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
                    let decoding =
                        jsonwebtoken::DecodingKey::from_ed_components(&x).map_err(|_| corrupt())?;
                    let jwk = serde_json::json!({
                        "kty": "OKP", "crv": "Ed25519", "x": x,
                        "kid": info.kid, "alg": "EdDSA", "use": "sig",
                    });
                    (jwk, decoding, Signer::EdDsa(pair))
                }
            };
            if info.state == KeyState::Current {
                signing = Some((info.clone(), encoding));
            }
            jwks.push(jwk);
            keys.insert(
                info.kid.clone(),
                LoadedKey {
                    info: info.clone(),
                    decoding,
                },
            );
        }
        let jwks = serde_json::to_vec(&serde_json::json!({ "keys": jwks }))
            .map(Bytes::from)
            .unwrap_or_default();
        Ok(Self {
            signing,
            keys,
            jwks,
            fingerprint: manifest.keys,
            verified: Default::default(),
        })
    }

    /// The JSON Web Key Set: public halves of the next, current and previous keys.
    pub fn jwks_json(&self) -> Bytes {
        self.jwks.clone()
    }

    /// Whether a current key is loaded, so tokens can be issued.
    pub fn has_signing_key(&self) -> bool {
        self.signing.is_some()
    }

    /// The id of the current key.
    pub fn current_kid(&self) -> Option<&str> {
        self.signing.as_ref().map(|(info, _)| info.kid.as_str())
    }

    /// The keys as loaded.
    pub fn keys(&self) -> &[KeyInfo] {
        &self.fingerprint
    }

    /// How many verified access tokens this keyring remembers.
    pub fn remembered_tokens(&self) -> usize {
        self.verified.len()
    }
}

/// The keyring a server uses, swapped whole when the directory changes.
pub struct KeyringHandle {
    dir: PathBuf,
    current: ArcSwap<Keyring>,
}

impl std::fmt::Debug for KeyringHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyringHandle")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl KeyringHandle {
    /// Loads the keyring of `dir`.
    pub fn open(dir: &Path) -> Result<Self, KeyringError> {
        Ok(Self {
            dir: dir.to_owned(),
            current: ArcSwap::from_pointee(Keyring::load(dir)?),
        })
    }

    /// The keyring in force; cheap, lock-free.
    pub fn load(&self) -> arc_swap::Guard<Arc<Keyring>> {
        self.current.load()
    }

    /// Re-reads the directory; returns whether the keyring changed. On error the loaded
    /// keyring stays in force.
    pub fn reload(&self) -> Result<bool, KeyringError> {
        let fresh = Keyring::load(&self.dir)?;
        if fresh.fingerprint == self.current.load().fingerprint {
            return Ok(false);
        }
        let kids: Vec<String> = fresh
            .fingerprint
            .iter()
            .map(|key| format!("{}:{}", key.kid, key.state))
            .collect();
        self.current.store(Arc::new(fresh));
        tracing::info!(keys = ?kids, "keyring changed");
        Ok(true)
    }

    /// Reloads every `interval` for as long as the task runs.
    pub fn spawn_reloader(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let handle = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                let reload = {
                    let handle = Arc::clone(&handle);
                    tokio::task::spawn_blocking(move || handle.reload()).await
                };
                match reload {
                    Ok(Ok(true)) => crate::metrics::record_keyring_reload("changed"),
                    Ok(Ok(false)) => {}
                    Ok(Err(error)) => {
                        crate::metrics::record_keyring_reload("failed");
                        tracing::warn!(%error, "keyring reload failed; keeping the loaded keys");
                    }
                    Err(_) => crate::metrics::record_keyring_reload("failed"),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_manifest_text(dir: &Path, text: &str) {
        std::fs::write(dir.join(MANIFEST_FILE), text).unwrap();
    }

    fn manifest_error(text: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        write_manifest_text(dir.path(), text);
        match read_manifest(dir.path()) {
            Err(error @ KeyringError::Corrupt { .. }) => error.to_string(),
            other => panic!("manifest accepted: {other:?}"),
        }
    }

    #[test]
    fn algorithm_names_parse_case_insensitively_and_unknown_ones_are_refusals() {
        assert_eq!("ES256".parse::<Algorithm>().unwrap(), Algorithm::Es256);
        assert_eq!("eddsa".parse::<Algorithm>().unwrap(), Algorithm::EdDsa);
        assert_eq!("Ed25519".parse::<Algorithm>().unwrap(), Algorithm::EdDsa);
        let error = "rs256".parse::<Algorithm>().unwrap_err();
        assert!(error.is_refusal());
        assert_eq!(Algorithm::EdDsa.to_string(), "EdDSA");
    }

    #[test]
    fn generated_key_ids_are_url_safe_and_accepted_on_load() {
        for _ in 0..32 {
            let kid = new_kid().unwrap();
            assert!(is_valid_kid(&kid), "{kid}");
        }
        for bad in ["", "../etc", "a/b", "a.b", "a b", &"k".repeat(65)] {
            assert!(!is_valid_kid(bad), "{bad:?}");
        }
    }

    #[test]
    fn manifests_breaking_an_invariant_are_refused() {
        let key = |kid: &str, state: &str| {
            format!(r#"{{"kid":"{kid}","alg":"ES256","state":"{state}","created_at":1}}"#)
        };
        let manifest = |keys: &[String]| format!(r#"{{"version":1,"keys":[{}]}}"#, keys.join(","));

        let traversal = manifest_error(&manifest(&[key("../../etc/passwd", "current")]));
        assert!(traversal.contains("invalid key id"), "{traversal}");
        let duplicate = manifest_error(&manifest(&[key("a", "current"), key("a", "previous")]));
        assert!(duplicate.contains("appears twice"), "{duplicate}");
        let two_current = manifest_error(&manifest(&[key("a", "current"), key("b", "current")]));
        assert!(
            two_current.contains("more than one current"),
            "{two_current}"
        );
        let two_next = manifest_error(&manifest(&[key("a", "next"), key("b", "next")]));
        assert!(two_next.contains("more than one next"), "{two_next}");
        let future = manifest_error(r#"{"version":2,"keys":[]}"#);
        assert!(
            future.contains("unsupported manifest version 2"),
            "{future}"
        );

        let dir = tempfile::tempdir().unwrap();
        write_manifest_text(
            dir.path(),
            &manifest(&[key("a", "current"), key("b", "next")]),
        );
        assert_eq!(read_manifest(dir.path()).unwrap().keys.len(), 2);
    }

    #[test]
    fn a_missing_manifest_is_an_empty_keyring() {
        let dir = tempfile::tempdir().unwrap();
        assert!(list(dir.path()).unwrap().is_empty());
        let keyring = Keyring::load(dir.path()).unwrap();
        assert!(!keyring.has_signing_key());
        assert_eq!(keyring.jwks_json().as_ref(), br#"{"keys":[]}"#);
    }

    #[test]
    fn private_keys_round_trip_through_pem_and_open_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("k.key.pem");
        let der = generate_pkcs8(Algorithm::Es256).unwrap();
        write_atomically(&path, pem_encode(&der).as_bytes(), 0o600).unwrap();
        assert_eq!(read_private_key(&path).unwrap(), der);

        for mode in [0o640, 0o604, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            match read_private_key(&path) {
                Err(KeyringError::InsecurePermissions { mode: seen, .. }) => {
                    assert_eq!(seen, mode);
                }
                other => panic!("mode {mode:o} accepted: {other:?}"),
            }
        }

        let text = dir.path().join("text.key.pem");
        write_atomically(&text, b"not a key\n", 0o600).unwrap();
        assert!(matches!(
            read_private_key(&text),
            Err(KeyringError::Corrupt { .. })
        ));
    }

    #[test]
    fn atomic_writes_leave_only_the_target_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE);
        write_atomically(&path, b"first", 0o644).unwrap();
        write_atomically(&path, b"second", 0o644).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(MANIFEST_FILE)]);
    }

    #[test]
    fn a_new_keys_directory_is_private_to_its_owner() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("keys");
        generate(&dir, Algorithm::EdDsa, 1).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
}
