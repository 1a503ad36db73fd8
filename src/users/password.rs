//! The password hashes linkd can verify: its own argon2id, and the schemes of the systems users
//! are imported from (`linkd users import`), so that they keep their passwords.
//!
//! Accepted, each verified by its maintained crate:
//!
//! | scheme | format | bounds on the cost |
//! | --- | --- | --- |
//! | `argon2id`, `argon2i` | PHC `$argon2id$v=19$m=…,t=…,p=…$salt$hash` | m ≤ 65536 KiB, t ≤ 10, p ≤ 16 |
//! | `scrypt` | PHC `$scrypt$ln=…,r=…,p=…$salt$hash` | 128·r·2^ln ≤ 128 MiB, 2^ln·r·p ≤ 2^22 |
//! | `pbkdf2-sha256`, `pbkdf2-sha512` | PHC `$pbkdf2-sha256$i=…,l=…$salt$hash` | 1 000 ≤ i ≤ 10 000 000 |
//! | `bcrypt` | `$2a$`, `$2b$` or `$2y$` (the same algorithm), 60 characters | 4 ≤ cost ≤ 14 |
//!
//! The upper bounds keep one verification under about a second and a hundred megabytes, so
//! that a hostile import file cannot turn each sign-in into minutes of CPU or gigabytes of
//! memory; the highest settings of common frameworks fit below them. The lower bound on PBKDF2
//! is the least any standard ever asked for (NIST SP 800-132): fewer iterations is a hash that
//! should not be carried over. Weak but standard hashes are accepted because each is replaced
//! by linkd's argon2id ([`needs_rehash`]) the next time its user signs in.
//!
//! Refused: `$2x$` (crypt_blowfish's marker for hashes made by its sign-extension bug, which
//! cannot be verified as they were made), argon2d, argon2 hashes that need a secret key
//! (`keyid`), unsalted PBKDF2-SHA1 and every non-PHC format (Django's `pbkdf2_sha256$…`,
//! passlib's `$pbkdf2-sha256$29000$…`, plain hex digests): those are written out as PHC
//! strings before importing (README, "Moving existing users in").

use argon2::password_hash::{PasswordHash, PasswordVerifier as _};
use argon2::{Argon2, Params as Argon2Params, Version};

/// The scheme linkd hashes every new password with.
pub const CURRENT_SCHEME: &str = "argon2id";
/// What [`password_scheme`] reports for a user without a password (created by an identity
/// provider): no password ever matches.
pub const NO_PASSWORD: &str = "none";
/// What [`password_scheme`] reports for a stored hash that no accepted scheme recognises.
pub const UNRECOGNISED: &str = "unrecognised";

/// Longest hash accepted, in bytes: well above any accepted format (PHC salts and outputs are
/// at most 64 bytes), so that a huge string is refused before any parsing.
const MAX_HASH_BYTES: usize = 512;
/// Fewest bytes of hash output: shorter outputs are truncations nobody configures on purpose.
const MIN_OUTPUT_BYTES: usize = 16;

/// Most argon2 memory, in KiB (64 MiB, the RFC 9106 second recommendation).
const MAX_ARGON2_M_KIB: u32 = 65_536;
/// Most argon2 passes.
const MAX_ARGON2_T: u32 = 10;
/// Most argon2 lanes.
const MAX_ARGON2_P: u32 = 16;
/// Most scrypt memory, 128·r·N bytes, as a power of two (128 MiB).
const MAX_SCRYPT_MEMORY_LOG2: u32 = 27;
/// Most scrypt work, N·r·p, as a power of two (`ln=17,r=8,p=4` or `ln=19,r=8,p=1`).
const MAX_SCRYPT_WORK_LOG2: u32 = 22;
/// Fewest PBKDF2 iterations (NIST SP 800-132).
const MIN_PBKDF2_ITERATIONS: u32 = 1_000;
/// Most PBKDF2 iterations.
const MAX_PBKDF2_ITERATIONS: u32 = 10_000_000;
/// Lowest bcrypt cost (the algorithm's own minimum).
const MIN_BCRYPT_COST: u32 = 4;
/// Highest bcrypt cost (2^14 rounds, about a second).
const MAX_BCRYPT_COST: u32 = 14;
/// Length of every bcrypt hash: `$2b$`, two cost digits, `$`, 22 salt and 31 hash characters.
const BCRYPT_HASH_CHARS: usize = 60;

/// A password hashing scheme linkd verifies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Argon2id (linkd's own).
    Argon2id,
    /// Argon2i.
    Argon2i,
    /// scrypt.
    Scrypt,
    /// PBKDF2 with HMAC-SHA-256.
    Pbkdf2Sha256,
    /// PBKDF2 with HMAC-SHA-512.
    Pbkdf2Sha512,
    /// bcrypt (`$2a$`, `$2b$`, `$2y$`).
    Bcrypt,
}

impl Scheme {
    /// The scheme's name, as `linkd users show` reports it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Argon2id => "argon2id",
            Self::Argon2i => "argon2i",
            Self::Scrypt => "scrypt",
            Self::Pbkdf2Sha256 => "pbkdf2-sha256",
            Self::Pbkdf2Sha512 => "pbkdf2-sha512",
            Self::Bcrypt => "bcrypt",
        }
    }
}

/// Why a password hash cannot be imported. The text names what is wrong and never repeats
/// the hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HashRefused(String);

fn refused(reason: impl Into<String>) -> HashRefused {
    HashRefused(reason.into())
}

/// Checks that `hash` is in an accepted format with costs inside the bounds and returns its
/// scheme. Every hash that passes can be verified by [`verify`].
pub fn check_hash(hash: &str) -> Result<Scheme, HashRefused> {
    if hash.is_empty() {
        return Err(refused("empty"));
    }
    if hash.len() > MAX_HASH_BYTES {
        return Err(refused(format!(
            "{} bytes; no accepted format is longer than {MAX_HASH_BYTES}",
            hash.len()
        )));
    }
    if hash.starts_with("$2") {
        return check_bcrypt(hash);
    }
    if !hash.starts_with('$') {
        let hint = if hash.starts_with("pbkdf2_") {
            " (Django's format: write it as a $pbkdf2-sha256$ PHC string, see the README)"
        } else {
            ""
        };
        return Err(refused(format!(
            "not a PHC string ($scheme$params$salt$hash) or a bcrypt hash{hint}"
        )));
    }
    let parsed = PasswordHash::new(hash).map_err(|error| {
        let hint = if hash.starts_with("$pbkdf2") {
            " (passlib's $pbkdf2-sha256$ITERATIONS$…: write $i=ITERATIONS,l=32$, see the README)"
        } else {
            ""
        };
        refused(format!("not a valid PHC string: {error}{hint}"))
    })?;
    let scheme = match parsed.algorithm.as_str() {
        "argon2id" => Scheme::Argon2id,
        "argon2i" => Scheme::Argon2i,
        "scrypt" => Scheme::Scrypt,
        "pbkdf2-sha256" => Scheme::Pbkdf2Sha256,
        "pbkdf2-sha512" => Scheme::Pbkdf2Sha512,
        other => {
            return Err(refused(format!(
                "scheme {other:?} is not accepted (argon2id, argon2i, scrypt, pbkdf2-sha256, \
                 pbkdf2-sha512, bcrypt are)"
            )));
        }
    };
    if parsed.salt.is_none_or(|salt| salt.as_str().is_empty()) {
        return Err(refused(format!("{} hash without a salt", scheme.name())));
    }
    let Some(output) = parsed.hash else {
        return Err(refused(format!(
            "{} hash without the hash value",
            scheme.name()
        )));
    };
    if output.len() < MIN_OUTPUT_BYTES {
        return Err(refused(format!(
            "{} hash value of {} bytes; at least {MIN_OUTPUT_BYTES}",
            scheme.name(),
            output.len()
        )));
    }
    match scheme {
        Scheme::Argon2id | Scheme::Argon2i => check_argon2(&parsed, scheme)?,
        Scheme::Scrypt => check_scrypt(&parsed)?,
        Scheme::Pbkdf2Sha256 | Scheme::Pbkdf2Sha512 => check_pbkdf2(&parsed, scheme)?,
        Scheme::Bcrypt => {}
    }
    Ok(scheme)
}

fn check_argon2(parsed: &PasswordHash<'_>, scheme: Scheme) -> Result<(), HashRefused> {
    let name = scheme.name();
    if parsed
        .params
        .iter()
        .any(|(ident, _)| ident.as_str() == "keyid")
    {
        return Err(refused(format!(
            "{name} hash made with a secret key (keyid), which linkd does not have"
        )));
    }
    if let Some(version) = parsed.version
        && Version::try_from(version).is_err()
    {
        return Err(refused(format!("{name} version {version} is unknown")));
    }
    let params = Argon2Params::try_from(parsed)
        .map_err(|error| refused(format!("{name} parameters: {error}")))?;
    let bounds = [
        ("m", params.m_cost(), MAX_ARGON2_M_KIB),
        ("t", params.t_cost(), MAX_ARGON2_T),
        ("p", params.p_cost(), MAX_ARGON2_P),
    ];
    for (param, value, most) in bounds {
        if value > most {
            return Err(refused(format!(
                "{name} {param}={value} is above the accepted {most}"
            )));
        }
    }
    Ok(())
}

fn check_scrypt(parsed: &PasswordHash<'_>) -> Result<(), HashRefused> {
    let params = scrypt::Params::try_from(parsed)
        .map_err(|error| refused(format!("scrypt parameters: {error}")))?;
    let log_n = u32::from(params.log_n());
    let (r, p) = (params.r(), params.p());
    // In u128, 128·r·2^ln and 2^ln·r·p cannot overflow: the crate keeps ln below 64.
    let memory = (128 * u128::from(r)) << log_n;
    if memory > 1u128 << MAX_SCRYPT_MEMORY_LOG2 {
        return Err(refused(format!(
            "scrypt ln={log_n},r={r} needs more than the accepted {} MiB",
            1u64 << (MAX_SCRYPT_MEMORY_LOG2 - 20)
        )));
    }
    let work = (u128::from(r) << log_n) * u128::from(p);
    if work > 1u128 << MAX_SCRYPT_WORK_LOG2 {
        return Err(refused(format!(
            "scrypt ln={log_n},r={r},p={p} is above the accepted work 2^ln·r·p ≤ 2^{MAX_SCRYPT_WORK_LOG2}"
        )));
    }
    Ok(())
}

fn check_pbkdf2(parsed: &PasswordHash<'_>, scheme: Scheme) -> Result<(), HashRefused> {
    let name = scheme.name();
    let params = pbkdf2::Params::try_from(parsed)
        .map_err(|error| refused(format!("{name} parameters: {error}")))?;
    if !parsed.params.iter().any(|(ident, _)| ident.as_str() == "i") {
        return Err(refused(format!("{name} hash without its iterations (i=…)")));
    }
    let iterations = params.rounds;
    if iterations < MIN_PBKDF2_ITERATIONS {
        return Err(refused(format!(
            "{name} i={iterations} is below the accepted {MIN_PBKDF2_ITERATIONS}"
        )));
    }
    if iterations > MAX_PBKDF2_ITERATIONS {
        return Err(refused(format!(
            "{name} i={iterations} is above the accepted {MAX_PBKDF2_ITERATIONS}"
        )));
    }
    Ok(())
}

fn check_bcrypt(hash: &str) -> Result<Scheme, HashRefused> {
    let variant = hash.get(1..3).unwrap_or_default();
    match variant {
        "2a" | "2b" | "2y" => {}
        "2x" => {
            return Err(refused(
                "bcrypt $2x$ marks a hash made by crypt_blowfish's sign-extension bug; it cannot \
                 be verified as it was made",
            ));
        }
        _ => {
            return Err(refused(
                "bcrypt variant not accepted ($2a$, $2b$ and $2y$ are)",
            ));
        }
    }
    let bytes = hash.as_bytes();
    let well_formed = hash.len() == BCRYPT_HASH_CHARS
        && bytes.get(3) == Some(&b'$')
        && bytes.get(6) == Some(&b'$')
        && bytes
            .get(4..6)
            .is_some_and(|cost| cost.iter().all(u8::is_ascii_digit))
        && bytes.get(7..).is_some_and(|rest| {
            rest.iter()
                .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'/'))
        });
    if !well_formed {
        return Err(refused(format!(
            "not a bcrypt hash: ${variant}$, two cost digits, \"$\" and 53 characters of \
             [./A-Za-z0-9] ({BCRYPT_HASH_CHARS} in all)"
        )));
    }
    let cost: u32 = hash
        .get(4..6)
        .and_then(|digits| digits.parse().ok())
        .unwrap_or_default();
    if !(MIN_BCRYPT_COST..=MAX_BCRYPT_COST).contains(&cost) {
        return Err(refused(format!(
            "bcrypt cost {cost} is outside the accepted {MIN_BCRYPT_COST}–{MAX_BCRYPT_COST}"
        )));
    }
    Ok(Scheme::Bcrypt)
}

/// The scheme of a stored hash, for display: a scheme's name, [`NO_PASSWORD`] for an empty
/// hash, or [`UNRECOGNISED`].
pub fn password_scheme(hash: &str) -> &'static str {
    if hash.is_empty() {
        return NO_PASSWORD;
    }
    check_hash(hash).map_or(UNRECOGNISED, Scheme::name)
}

/// Whether `password` matches `hash`. `false` for a wrong password and for any hash
/// [`check_hash`] refuses, so that a damaged or hostile stored hash costs no more than the
/// bounds allow.
pub fn verify(hash: &str, password: &str) -> bool {
    let Ok(scheme) = check_hash(hash) else {
        return false;
    };
    if scheme == Scheme::Bcrypt {
        // bcrypt looks at the first 72 bytes only, as every implementation the hashes come
        // from did; the argon2id hash that replaces it takes the whole password.
        return bcrypt::verify(password, hash).unwrap_or(false);
    }
    let Ok(parsed) = PasswordHash::new(hash) else {
        return false;
    };
    let password = password.as_bytes();
    match scheme {
        // The algorithm, version and parameters come from the stored hash.
        Scheme::Argon2id | Scheme::Argon2i => {
            Argon2::default().verify_password(password, &parsed).is_ok()
        }
        Scheme::Scrypt => scrypt::Scrypt.verify_password(password, &parsed).is_ok(),
        Scheme::Pbkdf2Sha256 | Scheme::Pbkdf2Sha512 => {
            pbkdf2::Pbkdf2.verify_password(password, &parsed).is_ok()
        }
        Scheme::Bcrypt => false,
    }
}

/// Whether a hash that just verified should be replaced by a fresh one: anything but argon2id
/// v1.3 at linkd's current parameters and output length.
pub fn needs_rehash(hash: &str) -> bool {
    let Ok(parsed) = PasswordHash::new(hash) else {
        return true;
    };
    if parsed.algorithm.as_str() != CURRENT_SCHEME
        || parsed.version != Some(Version::V0x13 as u32)
        || parsed
            .hash
            .is_none_or(|output| output.len() != Argon2Params::DEFAULT_OUTPUT_LEN)
    {
        return true;
    }
    let current = Argon2Params::DEFAULT;
    Argon2Params::try_from(&parsed).map_or(true, |params| {
        params.m_cost() != current.m_cost()
            || params.t_cost() != current.t_cost()
            || params.p_cost() != current.p_cost()
            || !params.keyid().is_empty()
            || !params.data().is_empty()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use argon2::password_hash::{PasswordHasher as _, SaltString};

    const PASSWORD: &str = "correct horse battery staple";

    // Made by other ecosystems: Python's `bcrypt` 4 (`hashpw`), `hashlib.pbkdf2_hmac` and
    // `hashlib.scrypt` written as PHC strings, and `argon2-cffi` (its defaults).
    const PYTHON_BCRYPT_2B: &str = "$2b$10$FIgckiF1Yn3TJsQNt.oaXOV2NEG0w6ajcG3sREVXjOBSmdTvM/RxO";
    const PYTHON_BCRYPT_2A: &str = "$2a$10$qYtTfsV2x4ZRtJFc04dhc.MxNA0Ad8kK5TpoVduUa3sd4cFQhus5y";
    const PYTHON_BCRYPT_COST_4: &str =
        "$2b$04$pEhM61DrPq7qlAUFv5js1.tbPMHoaVd5XkePbbtTxA0zZV25NytQS";
    const PYTHON_PBKDF2_SHA256: &str = "$pbkdf2-sha256$i=600000,l=32$gjREVY78j34wP2/TeiDQyQ$KeF6LY1i8Fzi3oJGBzDh8YQeq3uDLtfUhH1lloWRyG0";
    const PYTHON_PBKDF2_SHA512: &str = "$pbkdf2-sha512$i=210000,l=64$gjREVY78j34wP2/TeiDQyQ$WHtyeZrBWUFKIC6jhZOyHnRDC2yelp0kMogGpgGAOXOcwU30ZRg1OmMpLBCtyNX8xqg3dQUas0ydzRgMsdTmnQ";
    const PYTHON_SCRYPT: &str =
        "$scrypt$ln=14,r=8,p=1$gjREVY78j34wP2/TeiDQyQ$Yh2ALtYbSH0K+4uDJPSxvVwXqKagjeAx18F8U30HGzk";
    const PYTHON_ARGON2I: &str = "$argon2i$v=19$m=65536,t=3,p=4$EXwVjFR4KSBOnLQZm7/NUw$mq+DuqPvtt2qkumT9+/rix0AWwlkz5eWC8yiPc2Gcrg";
    const PYTHON_ARGON2ID: &str = "$argon2id$v=19$m=65536,t=3,p=4$+RG99oaclAKGaJSMBlW9bA$werOMq5ngv+ONsmznpbgrfP+y7ohi/IJXH29XXCyac4";
    const PASSLIB_PBKDF2_SHA256: &str =
        "$pbkdf2-sha256$29000$7V2rVQrBuDcGoNSa8/4/hw$tCnNd1qniZiTt0igQ5OSl9Au4pUW8J9i5zUbHlnV2ZE";
    const DJANGO_PBKDF2_SHA256: &str =
        "pbkdf2_sha256$29000$5OKkk9nUTeUS$vWFh0JP1nspvS1W4P8qN21kRLhSNjNqin+s3moZIMw4=";

    #[test]
    fn django_and_passlib_hashes_verify_once_written_as_phc_as_the_readme_shows() {
        // DJANGO_PBKDF2_SHA256: the salt text base64-encoded, the digest's padding dropped.
        let django = "$pbkdf2-sha256$i=29000,l=32$NU9La2s5blVUZVVT$vWFh0JP1nspvS1W4P8qN21kRLhSNjNqin+s3moZIMw4";
        // PASSLIB_PBKDF2_SHA256: `i=`/`l=` named, passlib's "." back to "+".
        let passlib = "$pbkdf2-sha256$i=29000,l=32$7V2rVQrBuDcGoNSa8/4/hw$tCnNd1qniZiTt0igQ5OSl9Au4pUW8J9i5zUbHlnV2ZE";
        for hash in [django, passlib] {
            assert_eq!(password_scheme(hash), "pbkdf2-sha256");
            assert!(verify(hash, PASSWORD), "{hash}");
            assert!(!verify(hash, "correct horse battery"), "{hash}");
        }
    }

    fn salt() -> SaltString {
        SaltString::encode_b64(b"sixteen byte salt").unwrap()
    }

    #[test]
    fn hashes_from_other_ecosystems_verify_and_name_their_scheme() {
        let cases = [
            (PYTHON_BCRYPT_2B, "bcrypt"),
            (PYTHON_BCRYPT_2A, "bcrypt"),
            (PYTHON_BCRYPT_COST_4, "bcrypt"),
            (PYTHON_PBKDF2_SHA256, "pbkdf2-sha256"),
            (PYTHON_PBKDF2_SHA512, "pbkdf2-sha512"),
            (PYTHON_SCRYPT, "scrypt"),
            (PYTHON_ARGON2I, "argon2i"),
            (PYTHON_ARGON2ID, "argon2id"),
        ];
        for (hash, scheme) in cases {
            assert_eq!(password_scheme(hash), scheme, "{hash}");
            assert!(verify(hash, PASSWORD), "{scheme} should verify");
            assert!(!verify(hash, "correct horse battery stapler"), "{scheme}");
            assert!(needs_rehash(hash), "{scheme} is not linkd's argon2id");
        }
    }

    #[test]
    fn php_2y_bcrypt_is_the_same_algorithm_as_2b() {
        let php_style = format!("$2y${}", &PYTHON_BCRYPT_COST_4[4..]);
        assert_eq!(password_scheme(&php_style), "bcrypt");
        assert!(verify(&php_style, PASSWORD));
        assert!(!verify(&php_style, "wrong password"));
    }

    #[test]
    fn hashes_made_by_the_crates_verify() {
        let scrypt_params = scrypt::Params::new(10, 8, 1, 32).unwrap();
        let scrypt_hash = scrypt::Scrypt
            .hash_password_customized(PASSWORD.as_bytes(), None, None, scrypt_params, &salt())
            .unwrap()
            .to_string();
        let pbkdf2_params = pbkdf2::Params {
            rounds: 1000,
            output_length: 32,
        };
        let sha512 = pbkdf2::Algorithm::Pbkdf2Sha512.ident();
        let pbkdf2_hash = pbkdf2::Pbkdf2
            .hash_password_customized(
                PASSWORD.as_bytes(),
                Some(sha512),
                None,
                pbkdf2_params,
                &salt(),
            )
            .unwrap()
            .to_string();
        let argon2i = Argon2::new(
            argon2::Algorithm::Argon2i,
            Version::V0x13,
            Argon2Params::new(8192, 2, 1, None).unwrap(),
        )
        .hash_password(PASSWORD.as_bytes(), &salt())
        .unwrap()
        .to_string();
        let bcrypt_hash = bcrypt::hash(PASSWORD, 4).unwrap();
        for (hash, scheme) in [
            (scrypt_hash, "scrypt"),
            (pbkdf2_hash, "pbkdf2-sha512"),
            (argon2i, "argon2i"),
            (bcrypt_hash, "bcrypt"),
        ] {
            assert_eq!(check_hash(&hash).map(Scheme::name), Ok(scheme), "{hash}");
            assert!(verify(&hash, PASSWORD), "{scheme}");
            assert!(!verify(&hash, "Correct horse battery staple"), "{scheme}");
        }
    }

    #[test]
    fn only_linkds_own_argon2id_is_left_as_it_is() {
        let current = Argon2::new(
            argon2::Algorithm::Argon2id,
            Version::V0x13,
            Argon2Params::DEFAULT,
        )
        .hash_password(PASSWORD.as_bytes(), &salt())
        .unwrap()
        .to_string();
        assert!(current.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"));
        assert!(!needs_rehash(&current));
        assert_eq!(password_scheme(&current), CURRENT_SCHEME);
        let older_parameters = Argon2::new(
            argon2::Algorithm::Argon2id,
            Version::V0x13,
            Argon2Params::new(19456, 1, 1, None).unwrap(),
        )
        .hash_password(PASSWORD.as_bytes(), &salt())
        .unwrap()
        .to_string();
        assert!(needs_rehash(&older_parameters));
        let version_16 = Argon2::new(
            argon2::Algorithm::Argon2id,
            Version::V0x10,
            Argon2Params::DEFAULT,
        )
        .hash_password(PASSWORD.as_bytes(), &salt())
        .unwrap()
        .to_string();
        assert!(verify(&version_16, PASSWORD));
        assert!(needs_rehash(&version_16));
        assert!(needs_rehash(PYTHON_ARGON2ID));
    }

    #[test]
    fn an_empty_hash_is_no_password_and_matches_nothing() {
        assert_eq!(password_scheme(""), NO_PASSWORD);
        assert!(!verify("", ""));
        assert!(!verify("", PASSWORD));
        assert_eq!(check_hash(""), Err(refused("empty")));
    }

    fn refusal(hash: &str) -> String {
        let reason = check_hash(hash).expect_err(hash).to_string();
        assert!(
            !verify(hash, PASSWORD),
            "a refused hash must not verify: {hash}"
        );
        assert_eq!(password_scheme(hash), UNRECOGNISED);
        reason
    }

    #[test]
    fn costs_beyond_the_bounds_are_refused_before_any_work() {
        let bcrypt_15 = format!("$2b$15${}", &PYTHON_BCRYPT_COST_4[7..]);
        let bcrypt_31 = format!("$2b$31${}", &PYTHON_BCRYPT_COST_4[7..]);
        let bcrypt_03 = format!("$2b$03${}", &PYTHON_BCRYPT_COST_4[7..]);
        let rest = "$gjREVY78j34wP2/TeiDQyQ$KeF6LY1i8Fzi3oJGBzDh8YQeq3uDLtfUhH1lloWRyG0";
        let cases = [
            (
                bcrypt_15,
                "bcrypt cost 15 is outside the accepted 4–14".to_owned(),
            ),
            (bcrypt_31, "bcrypt cost 31".to_owned()),
            (bcrypt_03, "bcrypt cost 3".to_owned()),
            (
                format!("$pbkdf2-sha256$i=10000001,l=32{rest}"),
                "i=10000001 is above the accepted 10000000".to_owned(),
            ),
            (
                format!("$pbkdf2-sha256$i=4294967295,l=32{rest}"),
                "above the accepted".to_owned(),
            ),
            (
                format!("$pbkdf2-sha256$i=999,l=32{rest}"),
                "i=999 is below the accepted 1000".to_owned(),
            ),
            (
                format!("$scrypt$ln=20,r=8,p=1{rest}"),
                "needs more than the accepted 128 MiB".to_owned(),
            ),
            (
                format!("$scrypt$ln=17,r=8,p=64{rest}"),
                "above the accepted work".to_owned(),
            ),
            (format!("$scrypt$ln=63,r=8,p=1{rest}"), "scrypt".to_owned()),
            (
                format!("$argon2id$v=19$m=4194304,t=2,p=1{rest}"),
                "m=4194304 is above the accepted 65536".to_owned(),
            ),
            (
                format!("$argon2i$v=19$m=65536,t=1000,p=1{rest}"),
                "t=1000 is above the accepted 10".to_owned(),
            ),
            (
                format!("$argon2id$v=19$m=65536,t=2,p=255{rest}"),
                "p=255 is above the accepted 16".to_owned(),
            ),
        ];
        for (hash, expected) in cases {
            let reason = refusal(&hash);
            assert!(reason.contains(&expected), "{hash}: {reason}");
        }
    }

    #[test]
    fn malformed_and_foreign_hashes_are_refused_with_the_reason_and_never_repeated() {
        let truncated_bcrypt = &PYTHON_BCRYPT_2B[..40];
        let huge = format!("$argon2id$v=19$m=19456,t=2,p=1${}", "A".repeat(100_000));
        let bcrypt_2x = format!("$2x${}", &PYTHON_BCRYPT_COST_4[4..]);
        let bcrypt_bad_alphabet = format!("{}!", &PYTHON_BCRYPT_COST_4[..59]);
        let cases = [
            (truncated_bcrypt, "not a bcrypt hash"),
            (bcrypt_2x.as_str(), "sign-extension bug"),
            (
                "$2$04$pEhM61DrPq7qlAUFv5js1.tbPMHoaVd5XkePbbtTxA0zZV25NytQSxx",
                "variant",
            ),
            (bcrypt_bad_alphabet.as_str(), "not a bcrypt hash"),
            (huge.as_str(), "no accepted format is longer than 512"),
            (PASSLIB_PBKDF2_SHA256, "passlib"),
            (DJANGO_PBKDF2_SHA256, "Django"),
            ("5f4dcc3b5aa765d61d8327deb882cf99", "not a PHC string"),
            (
                "$argon2d$v=19$m=19456,t=2,p=1$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "\"argon2d\" is not accepted",
            ),
            (
                "$pbkdf2$i=1000,l=32$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "\"pbkdf2\" is not accepted",
            ),
            (
                "$argon2id$v=19$m=19456,t=2,p=1$c2l4dGVlbiBieXRlIHNhbHQ",
                "without the hash value",
            ),
            ("$argon2id$v=19$m=19456,t=2,p=1", "without"),
            (
                "$argon2id$v=19$m=19456,t=2,p=1$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAA",
                "at least 16",
            ),
            (
                "$argon2id$v=99$m=19456,t=2,p=1$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "version 99",
            ),
            (
                "$argon2id$v=19$m=19456,t=2,p=1,keyid=AAAA$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "secret key",
            ),
            (
                "$pbkdf2-sha256$l=32$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "without its iterations",
            ),
            (
                "$pbkdf2-sha256$i=1000,l=64$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "parameters",
            ),
            (
                "$pbkdf2-sha256$i=abc,l=32$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "pbkdf2-sha256",
            ),
            (
                "$scrypt$ln=14,r=8,p=1,x=1$c2l4dGVlbiBieXRlIHNhbHQ$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
                "scrypt parameters",
            ),
            ("$", "not a valid PHC string"),
            ("$$$$", "not a valid PHC string"),
        ];
        for (hash, expected) in cases {
            let reason = refusal(hash);
            assert!(reason.contains(expected), "{hash:.80}: {reason}");
            if hash.len() > 12 {
                assert!(!reason.contains(hash), "the hash was repeated: {reason}");
            }
        }
    }
}
