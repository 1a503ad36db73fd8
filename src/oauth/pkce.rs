//! PKCE (RFC 7636) with the `S256` method only: `plain` gives no protection against a
//! stolen code and is refused (RFC 9700 §2.1.1).

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Why a challenge or verifier was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PkceError {
    /// A method other than `S256`.
    #[error("code_challenge_method must be S256")]
    UnsupportedMethod,
    /// A challenge that is not 43 base64url characters (a SHA-256 digest).
    #[error("code_challenge must be 43 base64url characters")]
    MalformedChallenge,
    /// A verifier outside RFC 7636 §4.1's grammar (43–128 unreserved characters).
    #[error("code_verifier must be 43-128 characters of [A-Za-z0-9-._~]")]
    MalformedVerifier,
}

/// Validates the `/authorize` parameters; `method` defaults to `plain` per RFC 7636 §4.3,
/// which is refused.
pub fn validate_challenge(challenge: &str, method: Option<&str>) -> Result<(), PkceError> {
    if method != Some("S256") {
        return Err(PkceError::UnsupportedMethod);
    }
    let well_formed = challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if well_formed {
        Ok(())
    } else {
        Err(PkceError::MalformedChallenge)
    }
}

/// Whether `verifier` is well formed and hashes to `challenge`.
pub fn verify(verifier: &str, challenge: &str) -> Result<bool, PkceError> {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    if !well_formed {
        return Err(PkceError::MalformedVerifier);
    }
    let digest = aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, verifier.as_bytes());
    let computed = URL_SAFE_NO_PAD.encode(digest.as_ref());
    Ok(crate::secrets::constant_time_eq(
        computed.as_bytes(),
        challenge.as_bytes(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 7636 Appendix B.
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

    #[test]
    fn rfc_7636_example_verifies() {
        assert_eq!(validate_challenge(CHALLENGE, Some("S256")), Ok(()));
        assert_eq!(verify(VERIFIER, CHALLENGE), Ok(true));
        let mut wrong = VERIFIER.to_owned();
        wrong.replace_range(0..1, "e");
        assert_eq!(verify(&wrong, CHALLENGE), Ok(false));
    }

    #[test]
    fn plain_and_malformed_are_refused() {
        assert_eq!(
            validate_challenge(CHALLENGE, Some("plain")),
            Err(PkceError::UnsupportedMethod)
        );
        assert_eq!(
            validate_challenge(CHALLENGE, None),
            Err(PkceError::UnsupportedMethod)
        );
        assert_eq!(
            validate_challenge("short", Some("S256")),
            Err(PkceError::MalformedChallenge)
        );
        assert_eq!(
            verify("short", CHALLENGE),
            Err(PkceError::MalformedVerifier)
        );
        assert_eq!(
            verify(&"a".repeat(129), CHALLENGE),
            Err(PkceError::MalformedVerifier)
        );
        assert_eq!(
            verify(&format!("{}!", &VERIFIER[..43]), CHALLENGE),
            Err(PkceError::MalformedVerifier)
        );
    }
}
