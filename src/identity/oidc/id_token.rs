//! The provider's signing keys (its JWKS) and the `id_token` checks of OpenID Connect Core
//! §3.1.3.7, then the claims of the token completed by the userinfo answer (§5.3.2).
//!
//! Nothing in the token is trusted before its signature checks out, except the header's `alg`
//! and `kid`, which only choose the key: the `alg` must be an asymmetric one linkd accepts
//! (never `none`, never HMAC, which would let anyone holding the public key forge tokens)
//! and of the chosen key's type and curve. Time claims are checked against the caller's
//! `now`, never the system clock.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::discovery::printable;
use crate::identity::claims::ExternalClaims;

/// The `id_token` signing algorithms linkd accepts, by their JOSE names.
pub const ACCEPTED_ALGORITHMS: [(&str, Algorithm); 9] = [
    ("RS256", Algorithm::RS256),
    ("RS384", Algorithm::RS384),
    ("RS512", Algorithm::RS512),
    ("PS256", Algorithm::PS256),
    ("PS384", Algorithm::PS384),
    ("PS512", Algorithm::PS512),
    ("ES256", Algorithm::ES256),
    ("ES384", Algorithm::ES384),
    ("EdDSA", Algorithm::EdDSA),
];

/// Clock skew allowed between linkd and the provider, seconds.
pub const LEEWAY_SECS: i64 = 60;

/// Longest `id_token` read. Providers' tokens are a few kilobytes at most; refusing larger
/// input before decoding bounds the work an answer can ask for.
pub const MAX_ID_TOKEN_BYTES: usize = 16 * 1024;

/// Longest `sub` (OpenID Connect Core §2: at most 255 ASCII characters).
const MAX_SUBJECT_CHARS: usize = 255;

/// Longest profile claim kept; a longer one (a `picture` given as a data URL, say) is dropped
/// rather than stored, as is one with control characters.
const MAX_PROFILE_CLAIM_CHARS: usize = 2048;

/// One verification key of the provider's JWKS.
pub struct VerificationKey {
    kid: Option<String>,
    /// The key's own `alg`, when the JWKS names one: the token's must then be the same.
    alg: Option<Algorithm>,
    /// The algorithms this key's type and curve can verify.
    fits: &'static [Algorithm],
    key: DecodingKey,
}

impl std::fmt::Debug for VerificationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerificationKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// The signature-verification keys of a JWKS. Keys linkd cannot use (encryption keys,
/// symmetric keys, unknown types or curves) are left out rather than failing the set.
#[derive(Debug, Default)]
pub struct KeySet {
    keys: Vec<VerificationKey>,
}

impl KeySet {
    /// Reads a JWKS document (RFC 7517 §5).
    pub fn parse(document: &Value) -> Result<Self, String> {
        let entries = document["keys"]
            .as_array()
            .ok_or("the JWKS has no \"keys\" array")?;
        let keys = entries.iter().filter_map(verification_key).collect();
        Ok(Self { keys })
    }

    /// The key that verifies a token with `header`: the one of its `kid`, or, for a token
    /// without one, the only key that fits its algorithm. `None` when the set has none, which
    /// may mean the provider rotated its keys since the set was fetched.
    pub fn select(&self, header: &Header) -> Option<&DecodingKey> {
        let fits = |key: &&VerificationKey| {
            key.fits.contains(&header.alg) && key.alg.is_none_or(|alg| alg == header.alg)
        };
        match &header.kid {
            Some(kid) => self
                .keys
                .iter()
                .filter(|key| key.kid.as_deref() == Some(kid))
                .find(fits),
            None => {
                let mut candidates = self.keys.iter().filter(fits);
                match (candidates.next(), candidates.next()) {
                    (Some(only), None) => Some(only),
                    _ => None,
                }
            }
        }
        .map(|key| &key.key)
    }

    /// How many usable keys the set holds.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether the set holds no usable key.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

fn verification_key(entry: &Value) -> Option<VerificationKey> {
    if entry["use"].as_str().is_some_and(|usage| usage != "sig") {
        return None;
    }
    if let Some(operations) = entry["key_ops"].as_array()
        && !operations.iter().any(|op| op.as_str() == Some("verify"))
    {
        return None;
    }
    let jwk: Jwk = serde_json::from_value(entry.clone()).ok()?;
    let fits: &'static [Algorithm] = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => &[
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(params) => match params.curve {
            EllipticCurve::P256 => &[Algorithm::ES256],
            EllipticCurve::P384 => &[Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(params) => match params.curve {
            EllipticCurve::Ed25519 => &[Algorithm::EdDSA],
            _ => return None,
        },
        // A symmetric key in a JWKS is never a provider's signing key for linkd.
        AlgorithmParameters::OctetKey(_) => return None,
    };
    let alg = match entry["alg"].as_str() {
        None => None,
        Some(name) => Some(accepted_algorithm(name).filter(|alg| fits.contains(alg))?),
    };
    let key = DecodingKey::from_jwk(&jwk).ok()?;
    Some(VerificationKey {
        kid: jwk.common.key_id,
        alg,
        fits,
        key,
    })
}

fn accepted_algorithm(name: &str) -> Option<Algorithm> {
    ACCEPTED_ALGORITHMS
        .iter()
        .find(|(accepted, _)| *accepted == name)
        .map(|(_, algorithm)| *algorithm)
}

/// The JOSE header of an `id_token`, read before its signature is checked, to choose the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// `alg`, one of [`ACCEPTED_ALGORITHMS`].
    pub alg: Algorithm,
    /// `kid`, if any.
    pub kid: Option<String>,
}

/// Reads the header of `token`, refusing what linkd never verifies.
pub fn read_header(token: &str, algorithms: &[Algorithm]) -> Result<Header, String> {
    if token.len() > MAX_ID_TOKEN_BYTES {
        return Err(format!(
            "the id_token is longer than {MAX_ID_TOKEN_BYTES} bytes"
        ));
    }
    let mut parts = token.split('.');
    let (Some(header), Some(_), Some(_), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("the id_token is not a signed JWT (JWS compact form)".to_owned());
    };
    let header: Value = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or("the id_token's header is not base64url JSON")?;
    let name = header["alg"].as_str().unwrap_or_default();
    let alg = accepted_algorithm(name).ok_or_else(|| {
        format!(
            "the id_token is signed with {:?}, an algorithm linkd does not accept",
            printable(name)
        )
    })?;
    if !algorithms.contains(&alg) {
        return Err(format!(
            "the id_token is signed with {name}, which the provider's discovery document does \
             not list"
        ));
    }
    // RFC 7515 §4.1.11: a token whose critical extensions are not understood is refused.
    if !header["crit"].is_null() {
        return Err("the id_token's header has critical extensions".to_owned());
    }
    let kid = match &header["kid"] {
        Value::Null => None,
        Value::String(kid) => Some(kid.clone()),
        _ => return Err("the id_token's kid is not a string".to_owned()),
    };
    Ok(Header { alg, kid })
}

/// Checks the signature of `token` with `key` and returns its claims, unchecked otherwise.
pub fn verify_signature(token: &str, header: &Header, key: &DecodingKey) -> Result<Value, String> {
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    // Time, issuer and audience are checked by `check_claims`, against the caller's clock.
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let data =
        jsonwebtoken::decode::<Value>(token, key, &validation).map_err(|error| {
            match error.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    "the id_token's signature does not verify".to_owned()
                }
                _ => "the id_token is malformed".to_owned(),
            }
        })?;
    if !data.claims.is_object() {
        return Err("the id_token's claims are not a JSON object".to_owned());
    }
    Ok(data.claims)
}

/// What a verified `id_token`'s claims must satisfy.
#[derive(Debug, Clone, Copy)]
pub struct Expected<'a> {
    /// The provider's issuer, exactly.
    pub issuer: &'a str,
    /// linkd's client id at the provider.
    pub client_id: &'a str,
    /// The nonce sent in the authorization request.
    pub nonce: &'a str,
    /// Unix seconds now.
    pub now: i64,
}

/// Checks the claims of a signature-verified `id_token` (OpenID Connect Core §3.1.3.7) and
/// reads who signed in.
pub fn check_claims(claims: &Value, expected: &Expected<'_>) -> Result<ExternalClaims, String> {
    if claims["iss"].as_str() != Some(expected.issuer) {
        return Err(format!(
            "the id_token's issuer {:?} is not {:?}",
            printable(&claims["iss"].to_string()),
            expected.issuer
        ));
    }
    let audiences: Vec<&str> = match &claims["aud"] {
        Value::String(audience) => vec![audience.as_str()],
        Value::Array(audiences) => audiences.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&expected.client_id) {
        return Err("the id_token is not meant for linkd's client id (aud)".to_owned());
    }
    // §3.1.3.7 items 4–5: a token for several audiences must name linkd as the party it was
    // issued to, and an `azp` that is present must be linkd.
    match &claims["azp"] {
        Value::Null if audiences.len() > 1 => {
            return Err(
                "the id_token has several audiences and no azp naming linkd's client id".to_owned(),
            );
        }
        Value::Null => {}
        Value::String(azp) if azp == expected.client_id => {}
        _ => return Err("the id_token was issued to another party (azp)".to_owned()),
    }
    let exp = time_claim(claims, "exp")?.ok_or("the id_token has no exp")?;
    if expected.now >= exp.saturating_add(LEEWAY_SECS) {
        return Err("the id_token has expired".to_owned());
    }
    let iat = time_claim(claims, "iat")?.ok_or("the id_token has no iat")?;
    if iat > expected.now.saturating_add(LEEWAY_SECS) {
        return Err("the id_token was issued in the future (iat)".to_owned());
    }
    if let Some(nbf) = time_claim(claims, "nbf")?
        && nbf > expected.now.saturating_add(LEEWAY_SECS)
    {
        return Err("the id_token is not valid yet (nbf)".to_owned());
    }
    let nonce = claims["nonce"]
        .as_str()
        .ok_or("the id_token has no nonce")?;
    if !crate::secrets::constant_time_eq(nonce.as_bytes(), expected.nonce.as_bytes()) {
        return Err("the id_token's nonce is not the one of this sign-in".to_owned());
    }
    let subject = subject(claims).ok_or("the id_token has no usable sub")?;
    let mut external = ExternalClaims {
        subject,
        ..ExternalClaims::default()
    };
    fill_profile(&mut external, claims);
    Ok(external)
}

/// A NumericDate claim (RFC 7519 §2): absent, or a number of seconds.
fn time_claim(claims: &Value, name: &str) -> Result<Option<i64>, String> {
    match &claims[name] {
        Value::Null => Ok(None),
        Value::Number(number) => number
            .as_i64()
            // Fractions of a second are allowed and dropped.
            .or_else(|| number.as_f64().filter(|f| f.is_finite()).map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| format!("the id_token's {name} is not a time")),
        _ => Err(format!("the id_token's {name} is not a number")),
    }
}

fn subject(claims: &Value) -> Option<String> {
    claims["sub"]
        .as_str()
        .filter(|sub| {
            !sub.is_empty()
                && sub.chars().count() <= MAX_SUBJECT_CHARS
                && !sub.chars().any(char::is_control)
        })
        .map(str::to_owned)
}

/// Completes `claims` from the provider's userinfo answer (OpenID Connect Core §5.3.2): its
/// `sub` must be the `id_token`'s, or the answer may be about someone else and is refused.
///
/// The `id_token`'s values win and userinfo only fills what it left out, since many
/// providers put the email or the profile only in userinfo. `email` and `email_verified` are
/// taken together from whichever source gave the email, so that one source's verification
/// never vouches for the other's address.
pub fn complete(mut claims: ExternalClaims, userinfo: &Value) -> Result<ExternalClaims, String> {
    if !userinfo.is_object() {
        return Err("the userinfo answer is not a JSON object".to_owned());
    }
    if userinfo["sub"].as_str() != Some(claims.subject.as_str()) {
        return Err("the userinfo answer is about another subject than the id_token".to_owned());
    }
    let mut from_userinfo = ExternalClaims::default();
    fill_profile(&mut from_userinfo, userinfo);
    if claims.email.is_none() {
        claims.email = from_userinfo.email;
        claims.email_verified = from_userinfo.email_verified;
    }
    claims.name = claims.name.or(from_userinfo.name);
    claims.given_name = claims.given_name.or(from_userinfo.given_name);
    claims.family_name = claims.family_name.or(from_userinfo.family_name);
    claims.picture = claims.picture.or(from_userinfo.picture);
    Ok(claims)
}

fn fill_profile(external: &mut ExternalClaims, claims: &Value) {
    let text = |name: &str| {
        claims[name]
            .as_str()
            .filter(|value| {
                !value.is_empty()
                    && value.chars().count() <= MAX_PROFILE_CLAIM_CHARS
                    && !value.chars().any(char::is_control)
            })
            .map(str::to_owned)
    };
    external.email = text("email");
    // Some providers (Amazon Cognito among them) send the boolean as a string.
    external.email_verified = match &claims["email_verified"] {
        Value::Bool(verified) => Some(*verified),
        Value::String(verified) if verified == "true" => Some(true),
        Value::String(verified) if verified == "false" => Some(false),
        _ => None,
    }
    .filter(|_| external.email.is_some());
    external.name = text("name");
    external.given_name = text("given_name");
    external.family_name = text("family_name");
    external.picture = text("picture");
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::{
        ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair as _,
    };
    use jsonwebtoken::EncodingKey;
    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://id.example";
    const CLIENT: &str = "linkd-client";
    const NONCE: &str = "n-0S6_WzA2Mj";
    const NOW: i64 = 1_800_000_000;

    /// A signing key made for the test and its public JWK.
    struct TestKey {
        alg: Algorithm,
        encoding: EncodingKey,
        jwk: Value,
    }

    impl TestKey {
        fn es256(kid: &str) -> Self {
            let rng = crate::secrets::system_random();
            let pkcs8 =
                EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
            let pair =
                EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
            let point = pair.public_key().as_ref();
            Self {
                alg: Algorithm::ES256,
                encoding: EncodingKey::from_ec_der(pkcs8.as_ref()),
                jwk: json!({
                    "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
                    "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&point[33..]),
                }),
            }
        }

        fn ed25519(kid: &str) -> Self {
            let pkcs8 = Ed25519KeyPair::generate_pkcs8(&crate::secrets::system_random()).unwrap();
            let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
            Self {
                alg: Algorithm::EdDSA,
                encoding: EncodingKey::from_ed_der(pkcs8.as_ref()),
                jwk: json!({
                    "kty": "OKP", "crv": "Ed25519", "kid": kid, "alg": "EdDSA",
                    "x": URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()),
                }),
            }
        }

        fn sign(&self, kid: Option<&str>, claims: &Value) -> String {
            let mut header = jsonwebtoken::Header::new(self.alg);
            header.kid = kid.map(str::to_owned);
            jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
        }
    }

    fn claims() -> Value {
        json!({
            "iss": ISSUER, "aud": CLIENT, "sub": "248289761001", "nonce": NONCE,
            "iat": NOW - 5, "exp": NOW + 300, "name": "Ada Lovelace",
        })
    }

    fn expected() -> Expected<'static> {
        Expected {
            issuer: ISSUER,
            client_id: CLIENT,
            nonce: NONCE,
            now: NOW,
        }
    }

    /// Header, key selection, signature and claims, as `OidcClient::finish` runs them.
    fn verify(token: &str, keys: &KeySet) -> Result<ExternalClaims, String> {
        let header = read_header(token, &[Algorithm::ES256, Algorithm::EdDSA])?;
        let key = keys.select(&header).ok_or("unknown key")?;
        let claims = verify_signature(token, &header, key)?;
        check_claims(&claims, &expected())
    }

    fn set(keys: &[&TestKey]) -> KeySet {
        KeySet::parse(
            &json!({ "keys": keys.iter().map(|key| key.jwk.clone()).collect::<Vec<_>>() }),
        )
        .unwrap()
    }

    #[test]
    fn a_good_token_gives_its_claims() {
        let es = TestKey::es256("k1");
        let ed = TestKey::ed25519("k2");
        let keys = set(&[&es, &ed]);
        for (key, kid) in [(&es, "k1"), (&ed, "k2")] {
            let external = verify(&key.sign(Some(kid), &claims()), &keys).unwrap();
            assert_eq!(external.subject, "248289761001");
            assert_eq!(external.name.as_deref(), Some("Ada Lovelace"));
            assert_eq!(external.email, None);
        }
    }

    /// A change made to good claims.
    type Change = dyn Fn(&mut Value);

    #[test]
    fn each_claim_check_refuses_its_violation() {
        let key = TestKey::es256("k1");
        let keys = set(&[&key]);
        let cases: Vec<(&str, Box<Change>, &str)> = vec![
            (
                "wrong issuer",
                Box::new(|c: &mut Value| c["iss"] = json!("https://evil.example")),
                "issuer",
            ),
            (
                "no issuer",
                Box::new(|c: &mut Value| c["iss"] = Value::Null),
                "issuer",
            ),
            (
                "wrong audience",
                Box::new(|c: &mut Value| c["aud"] = json!("other")),
                "aud",
            ),
            (
                "numeric audience",
                Box::new(|c: &mut Value| c["aud"] = json!(1)),
                "aud",
            ),
            (
                "several audiences without azp",
                Box::new(|c: &mut Value| c["aud"] = json!([CLIENT, "other"])),
                "azp",
            ),
            (
                "several audiences, azp another party",
                Box::new(|c: &mut Value| {
                    c["aud"] = json!([CLIENT, "other"]);
                    c["azp"] = json!("other");
                }),
                "azp",
            ),
            (
                "azp another party",
                Box::new(|c: &mut Value| c["azp"] = json!("other")),
                "azp",
            ),
            (
                "azp not a string",
                Box::new(|c: &mut Value| c["azp"] = json!(7)),
                "azp",
            ),
            (
                "expired beyond the leeway",
                Box::new(|c: &mut Value| c["exp"] = json!(NOW - LEEWAY_SECS)),
                "expired",
            ),
            (
                "no exp",
                Box::new(|c: &mut Value| c["exp"] = Value::Null),
                "exp",
            ),
            (
                "exp a string",
                Box::new(|c: &mut Value| c["exp"] = json!("soon")),
                "exp",
            ),
            (
                "issued in the future",
                Box::new(|c: &mut Value| c["iat"] = json!(NOW + LEEWAY_SECS + 1)),
                "iat",
            ),
            (
                "no iat",
                Box::new(|c: &mut Value| c["iat"] = Value::Null),
                "iat",
            ),
            (
                "not valid yet",
                Box::new(|c: &mut Value| c["nbf"] = json!(NOW + LEEWAY_SECS + 1)),
                "nbf",
            ),
            (
                "wrong nonce",
                Box::new(|c: &mut Value| c["nonce"] = json!("n-other")),
                "nonce",
            ),
            (
                "nonce a prefix",
                Box::new(|c: &mut Value| c["nonce"] = json!(&NONCE[..4])),
                "nonce",
            ),
            (
                "no nonce",
                Box::new(|c: &mut Value| c["nonce"] = Value::Null),
                "nonce",
            ),
            (
                "no sub",
                Box::new(|c: &mut Value| c["sub"] = Value::Null),
                "sub",
            ),
            (
                "empty sub",
                Box::new(|c: &mut Value| c["sub"] = json!("")),
                "sub",
            ),
            (
                "long sub",
                Box::new(|c: &mut Value| c["sub"] = json!("s".repeat(256))),
                "sub",
            ),
            (
                "sub with a newline",
                Box::new(|c: &mut Value| c["sub"] = json!("a\nb")),
                "sub",
            ),
        ];
        for (what, change, message) in cases {
            let mut claims = claims();
            change(&mut claims);
            let error = verify(&key.sign(Some("k1"), &claims), &keys).unwrap_err();
            assert!(error.contains(message), "{what}: {error}");
        }
    }

    #[test]
    fn within_the_leeway_and_with_azp_the_token_passes() {
        let key = TestKey::es256("k1");
        let keys = set(&[&key]);
        let mut claims = claims();
        claims["exp"] = json!(NOW - LEEWAY_SECS + 1);
        claims["iat"] = json!(NOW + LEEWAY_SECS);
        claims["aud"] = json!([CLIENT, "https://api.example"]);
        claims["azp"] = json!(CLIENT);
        assert!(verify(&key.sign(Some("k1"), &claims), &keys).is_ok());
    }

    #[test]
    fn unsigned_hmac_and_foreign_tokens_are_refused() {
        let key = TestKey::es256("k1");
        let keys = set(&[&key]);
        let body = URL_SAFE_NO_PAD.encode(claims().to_string());
        let unsigned = format!(
            "{}.{body}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","kid":"k1"}"#)
        );
        let error = verify(&unsigned, &keys).unwrap_err();
        assert!(error.contains("\"none\""), "{error}");

        // HS256 keyed with the public key's bytes: the classic algorithm confusion.
        let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        let public = key.jwk["x"].as_str().unwrap().as_bytes();
        let hmac =
            jsonwebtoken::encode(&header, &claims(), &EncodingKey::from_secret(public)).unwrap();
        let error = verify(&hmac, &keys).unwrap_err();
        assert!(error.contains("\"HS256\""), "{error}");

        // Signed by another key under the same kid.
        let impostor = TestKey::es256("k1");
        let error = verify(&impostor.sign(Some("k1"), &claims()), &keys).unwrap_err();
        assert_eq!(error, "the id_token's signature does not verify");

        // A kid the set does not have.
        assert_eq!(
            verify(&key.sign(Some("k9"), &claims()), &keys).unwrap_err(),
            "unknown key"
        );

        // An algorithm the discovery document does not list.
        let ed = TestKey::ed25519("k2");
        let error = read_header(&ed.sign(Some("k2"), &claims()), &[Algorithm::ES256]).unwrap_err();
        assert!(error.contains("does not list"), "{error}");

        for garbage in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.b.c",
            &"a".repeat(MAX_ID_TOKEN_BYTES + 1),
        ] {
            assert!(verify(garbage, &keys).is_err(), "{garbage:.20}");
        }
        let critical = format!(
            "{}.{body}.sig",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"ES256","kid":"k1","crit":["exp"]}"#)
        );
        assert!(verify(&critical, &keys).unwrap_err().contains("critical"));
    }

    #[test]
    fn keys_are_chosen_by_kid_type_and_alg() {
        let es = TestKey::es256("k1");
        let ed = TestKey::ed25519("k2");
        // A token without kid takes the only key that fits its algorithm.
        let keys = set(&[&es, &ed]);
        assert!(verify(&es.sign(None, &claims()), &keys).is_ok());
        // Two keys that fit and no kid: no guess.
        let other = TestKey::es256("k3");
        let keys = set(&[&es, &other]);
        assert_eq!(
            verify(&es.sign(None, &claims()), &keys).unwrap_err(),
            "unknown key"
        );
        // An ES256 token naming the Ed25519 key's kid finds no key of its type.
        let keys = set(&[&es, &ed]);
        assert_eq!(
            verify(&es.sign(Some("k2"), &claims()), &keys).unwrap_err(),
            "unknown key"
        );
        // A key whose `alg` differs from the token's is not used.
        let mut pinned = TestKey::es256("k1");
        pinned.jwk["alg"] = json!("ES384");
        assert!(set(&[&pinned]).is_empty());
    }

    #[test]
    fn unusable_jwks_entries_are_left_out() {
        let es = TestKey::es256("k1");
        let mut encryption = TestKey::es256("e1").jwk;
        encryption["use"] = json!("enc");
        let mut wrap_only = TestKey::es256("w1").jwk;
        wrap_only["key_ops"] = json!(["wrapKey"]);
        let document = json!({ "keys": [
            es.jwk,
            encryption,
            wrap_only,
            { "kty": "oct", "kid": "h", "k": "c2VjcmV0" },
            { "kty": "EC", "crv": "secp256k1", "kid": "x", "x": "AA", "y": "AA" },
            { "kty": "RSA", "kid": "bad" },
            { "kty": "OKP", "crv": "X25519", "kid": "x25519", "x": "AA" },
            "not a key",
        ]});
        let keys = KeySet::parse(&document).unwrap();
        assert_eq!(keys.len(), 1);
        assert!(KeySet::parse(&json!({ "keys": {} })).is_err());
        assert!(KeySet::parse(&json!([])).is_err());
    }

    #[test]
    fn userinfo_completes_and_never_overrides() {
        let from_token = ExternalClaims {
            subject: "s1".to_owned(),
            name: Some("Ada".to_owned()),
            ..ExternalClaims::default()
        };
        let userinfo = json!({
            "sub": "s1", "email": "ada@example.com", "email_verified": "true",
            "name": "Someone Else", "given_name": "Ada", "family_name": "Lovelace\r\nX-Injected: 1",
            "picture": "x".repeat(MAX_PROFILE_CLAIM_CHARS + 1),
        });
        let completed = complete(from_token.clone(), &userinfo).unwrap();
        assert_eq!(
            completed,
            ExternalClaims {
                subject: "s1".to_owned(),
                email: Some("ada@example.com".to_owned()),
                email_verified: Some(true),
                name: Some("Ada".to_owned()),
                given_name: Some("Ada".to_owned()),
                family_name: None,
                picture: None,
            }
        );

        // The token's email keeps the token's verification, even when userinfo says more.
        let with_email = ExternalClaims {
            email: Some("ada@token.example".to_owned()),
            ..from_token.clone()
        };
        let completed = complete(with_email, &userinfo).unwrap();
        assert_eq!(completed.email.as_deref(), Some("ada@token.example"));
        assert_eq!(completed.email_verified, None);

        for other in [json!({"sub": "s2"}), json!({"email": "a@b"}), json!("s1")] {
            assert!(complete(from_token.clone(), &other).is_err(), "{other}");
        }
    }
}
