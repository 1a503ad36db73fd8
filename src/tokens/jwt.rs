//! Signing and verifying JWTs through the keyring (RFC 7519, RFC 8725 best practices).
//!
//! Verification trusts nothing in the token before its signature checks out, except to
//! choose the key: the header `typ` must be exactly the expected one (a code is never an
//! access token, RFC 8725 §3.11, RFC 9068 §4), the `kid` must name a loaded key, and the
//! `alg` must be that key's algorithm (no `none`, no HMAC keyed with a public key). Time
//! claims are checked against the caller's `now`, never the system clock, so expiry is
//! testable without sleeping.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::keyring::Keyring;
use super::verified;

/// What a token is for; each kind has its own header `typ`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    /// An access token (RFC 9068).
    AccessToken,
    /// An authorization code.
    AuthorizationCode,
}

impl TokenKind {
    /// The header `typ` of this kind.
    pub fn typ(self) -> &'static str {
        match self {
            Self::AccessToken => "at+jwt",
            Self::AuthorizationCode => "code+jwt",
        }
    }
}

/// What a verified token must satisfy besides its signature.
#[derive(Debug, Clone, Copy)]
pub struct Expectations<'a> {
    /// Unix seconds now.
    pub now: i64,
    /// Allowed clock skew between instances, seconds.
    pub leeway: i64,
    /// Required `iss`, if any.
    pub issuer: Option<&'a str>,
    /// Required `aud` (a string or one element of an array), if any.
    pub audience: Option<&'a str>,
}

/// Default clock-skew allowance.
pub const DEFAULT_LEEWAY_SECS: i64 = 60;

/// Longest token linkd will parse. Its own tokens are a few hundred bytes; refusing larger
/// input before base64 and JSON decoding bounds the work an attacker can ask for.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Why a token was refused. Messages never include the token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// Not a JWS in compact form, or claims that do not parse.
    #[error("malformed token")]
    Malformed,
    /// Header `typ` is not the expected one.
    #[error("wrong token type")]
    WrongType,
    /// No loaded key has this `kid`, or the `alg` is not the key's.
    #[error("unknown signing key")]
    UnknownKey,
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// Past `exp` (beyond the leeway).
    #[error("token expired")]
    Expired,
    /// Before `nbf` or `iat` (beyond the leeway).
    #[error("token not yet valid")]
    NotYetValid,
    /// `iss` differs.
    #[error("wrong issuer")]
    WrongIssuer,
    /// `aud` differs.
    #[error("wrong audience")]
    WrongAudience,
    /// No current key, or the signer failed.
    #[error("cannot sign")]
    Signing,
}

impl Keyring {
    /// Signs `claims` as a token of `kind` with the current key.
    pub fn sign<C: Serialize>(&self, kind: TokenKind, claims: &C) -> Result<String, TokenError> {
        use base64::Engine as _;
        use base64::engine::general_purpose::URL_SAFE_NO_PAD;

        let (info, signer) = self.signing.as_ref().ok_or(TokenError::Signing)?;
        let mut header = jsonwebtoken::Header::new(info.alg.jsonwebtoken());
        header.typ = Some(kind.typ().to_owned());
        header.kid = Some(info.kid.clone());
        // The JWS compact form (RFC 7515 §7.1) is built here rather than by
        // `jsonwebtoken::encode`, which parses the private key again for every token.
        let header = serde_json::to_vec(&header).map_err(|_| TokenError::Signing)?;
        let claims = serde_json::to_vec(claims).map_err(|_| TokenError::Signing)?;
        let mut token = URL_SAFE_NO_PAD.encode(header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(claims, &mut token);
        let signature = signer.sign(token.as_bytes()).ok_or(TokenError::Signing)?;
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature, &mut token);
        Ok(token)
    }

    /// Verifies a token of `kind` and returns its claims.
    pub fn verify<C: DeserializeOwned>(
        &self,
        token: &str,
        kind: TokenKind,
        expectations: &Expectations<'_>,
    ) -> Result<C, TokenError> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(TokenError::Malformed);
        }
        // Codes are single-use, so only access tokens are worth remembering.
        let digest = (kind == TokenKind::AccessToken).then(|| verified::digest(token));
        if let Some(claims) = digest
            .as_ref()
            .and_then(|digest| self.verified.get(digest, expectations.now))
        {
            check_registered_claims(&claims, expectations)?;
            return C::deserialize(&*claims).map_err(|_| TokenError::Malformed);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| TokenError::Malformed)?;
        if header.typ.as_deref() != Some(kind.typ()) {
            return Err(TokenError::WrongType);
        }
        let kid = header.kid.as_deref().ok_or(TokenError::UnknownKey)?;
        let key = self.keys.get(kid).ok_or(TokenError::UnknownKey)?;
        if header.alg != key.info.alg.jsonwebtoken() {
            return Err(TokenError::UnknownKey);
        }
        let mut validation = jsonwebtoken::Validation::new(key.info.alg.jsonwebtoken());
        // Time and audience are checked below against the caller's clock and rules.
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        validation.required_spec_claims.clear();
        let data = jsonwebtoken::decode::<serde_json::Value>(token, &key.decoding, &validation)
            .map_err(|error| match error.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => TokenError::BadSignature,
                _ => TokenError::Malformed,
            })?;
        let claims = data.claims;
        check_registered_claims(&claims, expectations)?;
        let typed = C::deserialize(&claims).map_err(|_| TokenError::Malformed)?;
        if let Some(digest) = digest {
            self.verified
                .insert(digest, claims, expectations.now, expectations.leeway);
        }
        Ok(typed)
    }
}

fn check_registered_claims(
    claims: &serde_json::Value,
    expectations: &Expectations<'_>,
) -> Result<(), TokenError> {
    let now = expectations.now;
    let leeway = expectations.leeway;
    let exp = claims["exp"].as_i64().ok_or(TokenError::Malformed)?;
    if now > exp + leeway {
        return Err(TokenError::Expired);
    }
    for claim in ["nbf", "iat"] {
        match &claims[claim] {
            serde_json::Value::Null => {}
            value => {
                let at = value.as_i64().ok_or(TokenError::Malformed)?;
                if at > now + leeway {
                    return Err(TokenError::NotYetValid);
                }
            }
        }
    }
    if let Some(issuer) = expectations.issuer
        && claims["iss"].as_str() != Some(issuer)
    {
        return Err(TokenError::WrongIssuer);
    }
    if let Some(audience) = expectations.audience {
        let matches = match &claims["aud"] {
            serde_json::Value::String(aud) => aud == audience,
            serde_json::Value::Array(auds) => auds.iter().any(|aud| aud.as_str() == Some(audience)),
            _ => false,
        };
        if !matches {
            return Err(TokenError::WrongAudience);
        }
    }
    Ok(())
}
