//! The login hand-off: the integrator's own web app signs the person in and sends the browser
//! back with a signed assertion, which linkd verifies here.
//!
//! The assertion is a JWS signed by the integrator's key (ES256/ES384, RS256…PS512 or EdDSA,
//! as the key's kind allows; `none` and HMAC are refused because linkd holds no shared
//! secret) with `iss` = the provider id, `aud` = linkd's issuer, `sub`, `nonce` = the
//! `login_challenge` linkd sent, `iat` and `exp` at most [`MAX_LIFETIME_SECS`] apart, and the
//! profile claims (`email`, `email_verified`, `name`, `given_name`, `family_name`, `picture`).
//! It is single use because the login state that holds the challenge is taken once.

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::Deserialize;

use crate::identity::claims::ExternalClaims;

/// Longest lifetime (`exp - iat`) of an assertion, seconds.
pub const MAX_LIFETIME_SECS: i64 = 300;

/// How long an integrator's JWKS (`--jwks-url`) is used before it is fetched again: a key
/// the integrator stops publishing (a leaked one) stops verifying within this time. Shorter
/// than an OpenID provider's hour: the integrator's own app serves it, and one fetch per five
/// minutes costs it nothing.
pub const JWKS_TIME_TO_LIVE: std::time::Duration = std::time::Duration::from_secs(300);

/// A verification key of the integrator, with the algorithms its kind signs with.
#[derive(Clone)]
pub struct AssertionKey {
    key: DecodingKey,
    /// The `kid` of a key from a JWKS.
    kid: Option<String>,
}

impl std::fmt::Debug for AssertionKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AssertionKey")
            .field("family", &self.key.family())
            .field("kid", &self.kid)
            .finish()
    }
}

impl AssertionKey {
    /// Reads one PEM public key (SPKI; PKCS#1 for RSA): EC, RSA or Ed25519. A private key is
    /// refused: the integrator keeps it.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let text = pem.trim();
        if text.contains("PRIVATE KEY") {
            return Err("holds a private key; give the public key only".to_owned());
        }
        if !text.starts_with("-----BEGIN ") || !text.contains("PUBLIC KEY-----") {
            return Err("is not a PEM public key (-----BEGIN PUBLIC KEY-----)".to_owned());
        }
        let bytes = text.as_bytes();
        DecodingKey::from_ec_pem(bytes)
            .or_else(|_| DecodingKey::from_ed_pem(bytes))
            .or_else(|_| DecodingKey::from_rsa_pem(bytes))
            .map(|key| Self { key, kid: None })
            .map_err(|_| "is not an EC, RSA or Ed25519 public key in PEM".to_owned())
    }

    /// A key of a JWKS; `None` for a key linkd cannot use (symmetric, unknown kind).
    pub fn from_jwk(jwk: &jsonwebtoken::jwk::Jwk) -> Option<Self> {
        let key = DecodingKey::from_jwk(jwk).ok()?;
        (key.family() != jsonwebtoken::AlgorithmFamily::Hmac).then(|| Self {
            key,
            kid: jwk.common.key_id.clone(),
        })
    }

    fn allows(&self, algorithm: Algorithm) -> bool {
        self.key.family() != jsonwebtoken::AlgorithmFamily::Hmac
            && self.key.family().algorithms().contains(&algorithm)
    }
}

/// What an assertion must say.
#[derive(Debug, Clone, Copy)]
pub struct Expectations<'a> {
    /// The provider id: the assertion's `iss`.
    pub provider_id: &'a str,
    /// linkd's issuer: the assertion's `aud`.
    pub audience: &'a str,
    /// The `login_challenge` linkd sent: the assertion's `nonce`.
    pub challenge: &'a str,
    /// Unix seconds.
    pub now: i64,
    /// Clock skew tolerated, seconds.
    pub leeway: i64,
}

/// Why an assertion was refused. Never carries the assertion itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AssertionRefusal {
    /// Not a JWS linkd can read, or its `alg` is `none` or HMAC.
    #[error("the assertion is malformed or uses an algorithm linkd refuses")]
    Malformed,
    /// No key of the integrator has the assertion's `kid` and signs with its `alg`, or the
    /// assertion names no `kid` and no key verifies it: the integrator may have rotated its
    /// keys since linkd fetched them.
    #[error("no key of the integrator matches the assertion")]
    UnknownKey,
    /// The key of the assertion's `kid` does not verify its signature: forged.
    #[error("the assertion's signature does not verify")]
    BadSignature,
    /// `iss` is not the provider id.
    #[error("the assertion's iss is not the provider id")]
    WrongIssuer,
    /// `aud` is not linkd's issuer.
    #[error("the assertion's aud is not linkd's issuer")]
    WrongAudience,
    /// `nonce` is not the challenge.
    #[error("the assertion's nonce is not the login challenge")]
    WrongNonce,
    /// Expired, issued in the future, or living longer than [`MAX_LIFETIME_SECS`].
    #[error("the assertion has expired or its lifetime is not acceptable")]
    BadTimes,
    /// No `sub`.
    #[error("the assertion has no sub")]
    NoSubject,
}

impl AssertionRefusal {
    /// Whether keys fetched again might verify the assertion. A bad signature under a known
    /// `kid` is not worth a fetch: integrators give a new key a new `kid`.
    pub fn may_be_a_new_key(self) -> bool {
        self == Self::UnknownKey
    }
}

#[derive(Deserialize)]
struct AssertionClaims {
    iss: Option<String>,
    aud: Option<serde_json::Value>,
    sub: Option<String>,
    nonce: Option<String>,
    exp: Option<i64>,
    iat: Option<i64>,
    email: Option<String>,
    email_verified: Option<bool>,
    name: Option<String>,
    given_name: Option<String>,
    family_name: Option<String>,
    picture: Option<String>,
}

/// Verifies `assertion` against the integrator's `keys` and what `expected` says; the claims
/// it vouches for when every check passes.
pub fn verify(
    assertion: &str,
    keys: &[AssertionKey],
    expected: &Expectations<'_>,
) -> Result<ExternalClaims, AssertionRefusal> {
    let header = jsonwebtoken::decode_header(assertion).map_err(|_| AssertionRefusal::Malformed)?;
    if header.alg.family() == jsonwebtoken::AlgorithmFamily::Hmac {
        return Err(AssertionRefusal::Malformed);
    }
    let candidates: Vec<&AssertionKey> = keys
        .iter()
        .filter(|key| key.allows(header.alg))
        .filter(|key| match (&header.kid, &key.kid) {
            (Some(wanted), Some(kid)) => wanted == kid,
            _ => true,
        })
        .collect();
    if candidates.is_empty() {
        return Err(AssertionRefusal::UnknownKey);
    }
    // Times, issuer and audience are checked below by linkd's own clock and rules; the
    // library checks the signature only.
    let mut validation = Validation::new(header.alg);
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = candidates
        .iter()
        .find_map(|key| {
            jsonwebtoken::decode::<AssertionClaims>(assertion, &key.key, &validation).ok()
        })
        .ok_or(if header.kid.is_some() {
            AssertionRefusal::BadSignature
        } else {
            AssertionRefusal::UnknownKey
        })?
        .claims;
    if claims.iss.as_deref() != Some(expected.provider_id) {
        return Err(AssertionRefusal::WrongIssuer);
    }
    let audience_matches = match &claims.aud {
        Some(serde_json::Value::String(aud)) => aud == expected.audience,
        Some(serde_json::Value::Array(auds)) => {
            auds.len() == 1 && auds[0].as_str() == Some(expected.audience)
        }
        _ => false,
    };
    if !audience_matches {
        return Err(AssertionRefusal::WrongAudience);
    }
    let nonce_matches = claims.nonce.as_deref().is_some_and(|nonce| {
        crate::secrets::constant_time_eq(nonce.as_bytes(), expected.challenge.as_bytes())
    });
    if !nonce_matches {
        return Err(AssertionRefusal::WrongNonce);
    }
    let (Some(exp), Some(iat)) = (claims.exp, claims.iat) else {
        return Err(AssertionRefusal::BadTimes);
    };
    let lifetime = exp.saturating_sub(iat);
    if lifetime <= 0
        || lifetime > MAX_LIFETIME_SECS
        || exp.saturating_add(expected.leeway) <= expected.now
        || iat.saturating_sub(expected.leeway) > expected.now
    {
        return Err(AssertionRefusal::BadTimes);
    }
    let subject = claims
        .sub
        .filter(|sub| !sub.is_empty() && sub.len() <= 255)
        .ok_or(AssertionRefusal::NoSubject)?;
    Ok(ExternalClaims {
        subject,
        email: claims.email,
        email_verified: claims.email_verified,
        name: claims.name,
        given_name: claims.given_name,
        family_name: claims.family_name,
        picture: claims.picture,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ed25519 key pair: (private PKCS#8 PEM, public SPKI PEM).
    fn ed25519() -> (String, String) {
        let pkcs8 =
            aws_lc_rs::signature::Ed25519KeyPair::generate_pkcs8(&crate::secrets::system_random())
                .unwrap();
        let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
            &rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.as_ref()),
            &rcgen::PKCS_ED25519,
        )
        .unwrap();
        (pair.serialize_pem(), pair.public_key_pem())
    }

    const NOW: i64 = 1_900_000_000;

    fn expected() -> Expectations<'static> {
        Expectations {
            provider_id: "acme",
            audience: "https://link.example.com",
            challenge: "challenge-1",
            now: NOW,
            leeway: 30,
        }
    }

    fn claims() -> serde_json::Value {
        serde_json::json!({
            "iss": "acme", "aud": "https://link.example.com", "sub": "u-1",
            "nonce": "challenge-1", "iat": NOW - 10, "exp": NOW + 100,
            "email": "ada@example.com", "name": "Ada",
        })
    }

    fn sign(
        algorithm: Algorithm,
        key: &jsonwebtoken::EncodingKey,
        claims: &serde_json::Value,
    ) -> String {
        jsonwebtoken::encode(&jsonwebtoken::Header::new(algorithm), claims, key).unwrap()
    }

    #[test]
    fn eddsa_assertions_verify_and_every_claim_is_checked() {
        let (private, public) = ed25519();
        let signing = jsonwebtoken::EncodingKey::from_ed_pem(private.as_bytes()).unwrap();
        let keys = [AssertionKey::from_pem(&public).unwrap()];
        let good = verify(
            &sign(Algorithm::EdDSA, &signing, &claims()),
            &keys,
            &expected(),
        )
        .unwrap();
        assert_eq!(good.subject, "u-1");
        assert_eq!(good.email.as_deref(), Some("ada@example.com"));
        let cases: [(&str, serde_json::Value, AssertionRefusal); 7] = [
            ("iss", "other".into(), AssertionRefusal::WrongIssuer),
            (
                "aud",
                "https://other.example".into(),
                AssertionRefusal::WrongAudience,
            ),
            ("nonce", "challenge-2".into(), AssertionRefusal::WrongNonce),
            ("exp", (NOW - 31).into(), AssertionRefusal::BadTimes),
            ("exp", (NOW + 400).into(), AssertionRefusal::BadTimes),
            ("iat", (NOW + 60).into(), AssertionRefusal::BadTimes),
            ("sub", "".into(), AssertionRefusal::NoSubject),
        ];
        for (claim, value, refusal) in cases {
            let mut spoiled = claims();
            spoiled[claim] = value;
            let token = sign(Algorithm::EdDSA, &signing, &spoiled);
            assert_eq!(verify(&token, &keys, &expected()), Err(refusal), "{claim}");
        }
    }

    #[test]
    fn hmac_with_the_public_key_as_secret_is_refused() {
        // The classic confusion: the public key, known to all, used as an HMAC secret.
        let (_, public) = ed25519();
        let keys = [AssertionKey::from_pem(&public).unwrap()];
        let forged = sign(
            Algorithm::HS256,
            &jsonwebtoken::EncodingKey::from_secret(public.as_bytes()),
            &claims(),
        );
        assert_eq!(
            verify(&forged, &keys, &expected()),
            Err(AssertionRefusal::Malformed)
        );
        assert_eq!(
            verify("a.b.c", &keys, &expected()),
            Err(AssertionRefusal::Malformed)
        );
    }

    #[test]
    fn another_key_does_not_verify() {
        let (private, _) = ed25519();
        let (_, other_public) = ed25519();
        let signing = jsonwebtoken::EncodingKey::from_ed_pem(private.as_bytes()).unwrap();
        let keys = [AssertionKey::from_pem(&other_public).unwrap()];
        // Without a kid, the signer may have a key linkd has not fetched yet.
        let refusal = verify(
            &sign(Algorithm::EdDSA, &signing, &claims()),
            &keys,
            &expected(),
        )
        .unwrap_err();
        assert_eq!(refusal, AssertionRefusal::UnknownKey);
        assert!(refusal.may_be_a_new_key());
        // Under a kid linkd holds, it is a forgery: no fetch would help.
        let mut header = jsonwebtoken::Header::new(Algorithm::EdDSA);
        header.kid = Some("k1".to_owned());
        let with_kid = jsonwebtoken::encode(&header, &claims(), &signing).unwrap();
        let refusal = verify(&with_kid, &keys, &expected()).unwrap_err();
        assert_eq!(refusal, AssertionRefusal::BadSignature);
        assert!(!refusal.may_be_a_new_key());
    }

    #[test]
    fn private_keys_and_garbage_are_refused() {
        assert!(
            AssertionKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----")
                .is_err()
        );
        assert!(AssertionKey::from_pem("not a key").is_err());
        assert!(
            AssertionKey::from_pem("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----")
                .is_err()
        );
    }
}
