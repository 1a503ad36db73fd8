//! Random values, digests and constant-time comparison: the few primitives every secret
//! handled by linkd goes through, so that none is generated, stored or compared ad hoc.
//!
//! This is the only module that draws from the operating system's random generator (secrets,
//! ids, key generation); `clippy.toml` refuses the generators' entry points anywhere else, so
//! every random value has one origin to audit or replace. Request handling takes its random
//! values from the [`Randomness`] injected into the application state beside the clock, so
//! that tests can make them repeatable; the operator CLI and key generation use the system
//! generator through the free functions here.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aws_lc_rs::digest;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use subtle::ConstantTimeEq as _;

/// Error from the system random generator; fatal for the operation that needed randomness.
#[derive(Debug, thiserror::Error)]
#[error("the system random generator failed")]
pub struct RandomUnavailable;

/// A source of random bytes.
pub trait Randomness: Send + Sync + fmt::Debug {
    /// Fills `bytes` with random bytes.
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RandomUnavailable>;

    /// A URL-safe token of `bytes` random bytes (see [`random_token`]).
    fn token(&self, bytes: usize) -> Result<String, RandomUnavailable> {
        let mut raw = vec![0u8; bytes];
        self.fill(&mut raw)?;
        Ok(URL_SAFE_NO_PAD.encode(raw))
    }

    /// A new random (version 4) UUID, hyphenated (see [`new_uuid`]).
    fn uuid(&self) -> Result<String, RandomUnavailable> {
        let mut raw = [0u8; 16];
        self.fill(&mut raw)?;
        Ok(uuid::Builder::from_random_bytes(raw)
            .into_uuid()
            .hyphenated()
            .to_string())
    }
}

/// A shared randomness handle.
pub type SharedRandomness = Arc<dyn Randomness>;

/// The operating system's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemRandomness;

impl Randomness for SystemRandomness {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RandomUnavailable> {
        let random = random_bytes(bytes.len())?;
        bytes.copy_from_slice(&random);
        Ok(())
    }
}

/// Repeatable "randomness" for tests and benchmarks: SHA-256 of a seed and a counter. Never
/// for production: anyone who knows the seed knows every secret it makes.
#[derive(Debug)]
pub struct SeededRandomness {
    seed: u64,
    counter: AtomicU64,
}

impl SeededRandomness {
    /// A sequence determined by `seed`.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            counter: AtomicU64::new(0),
        }
    }
}

impl Randomness for SeededRandomness {
    fn fill(&self, bytes: &mut [u8]) -> Result<(), RandomUnavailable> {
        for chunk in bytes.chunks_mut(32) {
            let counter = self.counter.fetch_add(1, Ordering::SeqCst);
            let mut input = self.seed.to_be_bytes().to_vec();
            input.extend_from_slice(&counter.to_be_bytes());
            let block = digest::digest(&digest::SHA256, &input);
            chunk.copy_from_slice(&block.as_ref()[..chunk.len()]);
        }
        Ok(())
    }
}

/// `len` bytes from the operating system's CSPRNG.
// The one place that reads random bytes; see the module documentation.
#[allow(clippy::disallowed_methods)]
pub fn random_bytes(len: usize) -> Result<Vec<u8>, RandomUnavailable> {
    let mut bytes = vec![0u8; len];
    aws_lc_rs::rand::fill(&mut bytes).map_err(|_| RandomUnavailable)?;
    Ok(bytes)
}

/// A new random (version 4) UUID, hyphenated: ids that must be unique and unguessable but
/// are not secrets (grant ids, `jti`s).
// The one place that draws UUIDs; see the module documentation.
#[allow(clippy::disallowed_methods)]
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().hyphenated().to_string()
}

/// A new request id: unique, but needing no secrecy, so drawn without a system call per
/// request (one random prefix per process, then a counter): `<32 hex>-<counter in hex>`.
pub fn new_request_id() -> String {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicU64, Ordering};
    static PREFIX: OnceLock<String> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = PREFIX.get_or_init(|| new_uuid().replace('-', ""));
    format!("{prefix}-{:x}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// The operating system's CSPRNG as the generator handle that key generation takes.
// The one place that hands out the generator; see the module documentation.
#[allow(clippy::disallowed_methods)]
pub fn system_random() -> aws_lc_rs::rand::SystemRandom {
    aws_lc_rs::rand::SystemRandom::new()
}

/// A URL-safe token of `bytes` random bytes (base64url without padding); every character is
/// a VSCHAR, so it is valid in OAuth parameters, cookies and headers unchanged.
pub fn random_token(bytes: usize) -> Result<String, RandomUnavailable> {
    Ok(URL_SAFE_NO_PAD.encode(random_bytes(bytes)?))
}

/// Lower-case hex SHA-256 of `value`. High-entropy secrets (client secrets, refresh tokens,
/// session cookies) are stored only as this digest: a leaked database yields nothing usable.
pub fn sha256_hex(value: &[u8]) -> String {
    hex(digest::digest(&digest::SHA256, value).as_ref())
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Compares two byte strings in time that depends only on their lengths.
pub fn constant_time_eq(left: &[u8], right: &[u8]) -> bool {
    left.ct_eq(right).into()
}

/// Whether `presented` hashes to `stored_digest`, compared in constant time.
pub fn digest_matches(presented: &[u8], stored_digest: &str) -> bool {
    constant_time_eq(sha256_hex(presented).as_bytes(), stored_digest.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_randomness_repeats_and_system_randomness_does_not() {
        let (first, second) = (SeededRandomness::new(7), SeededRandomness::new(7));
        assert_eq!(first.token(40).unwrap(), second.token(40).unwrap());
        assert_eq!(first.uuid().unwrap(), second.uuid().unwrap());
        assert_ne!(
            first.token(32).unwrap(),
            SeededRandomness::new(8).token(32).unwrap()
        );
        let uuid = first.uuid().unwrap();
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4", "version 4: {uuid}");
        assert_ne!(
            SystemRandomness.token(32).unwrap(),
            SystemRandomness.token(32).unwrap()
        );
    }

    #[test]
    fn sha256_hex_matches_the_standard_test_vector() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn random_tokens_are_url_safe_and_distinct() {
        let first = random_token(32).unwrap();
        let second = random_token(32).unwrap();
        assert_eq!(first.len(), 43);
        assert_ne!(first, second);
        assert!(
            first
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
    }

    #[test]
    fn request_ids_are_distinct() {
        let first = new_request_id();
        assert!(first.len() >= 34, "{first}");
        assert_ne!(first, new_request_id());
    }

    #[test]
    fn new_uuids_are_version_4_and_distinct() {
        let first = new_uuid();
        let parsed = uuid::Uuid::parse_str(&first).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_eq!(first, parsed.hyphenated().to_string());
        assert_ne!(first, new_uuid());
    }

    #[test]
    fn digest_matches_only_the_right_secret() {
        let stored = sha256_hex(b"s3cret");
        assert!(digest_matches(b"s3cret", &stored));
        assert!(!digest_matches(b"s3cres", &stored));
        assert!(!digest_matches(b"", &stored));
    }
}
