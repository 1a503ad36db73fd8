//! The integrator's side of a login hand-off, as a small web app: on
//! `GET /login?login_challenge=X` it "signs the person in" and sends the browser back to
//! linkd's callback with an ES256 assertion signed by its own key, or with
//! `error=access_denied` when told the person cancelled.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// An ES256 key pair of the integrator.
pub struct IntegratorKey {
    pub private_pem: String,
    pub public_pem: String,
    /// The public key as a JWK, as the app's JWKS publishes it.
    pub jwk: serde_json::Value,
    pub kid: String,
}

impl IntegratorKey {
    pub fn generate() -> Self {
        Self::generate_with_kid("handoff-1")
    }

    pub fn generate_with_kid(kid: &str) -> Self {
        // From the system generator, as every key of linkd's (rcgen's own is not linkd's).
        let pkcs8 = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
            &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
            &linkd::secrets::system_random(),
        )
        .unwrap();
        let pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
            &rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.as_ref()),
            &rcgen::PKCS_ECDSA_P256_SHA256,
        )
        .unwrap();
        // The uncompressed point: 0x04, then x and y.
        let point = pair.public_key_raw();
        let b64 = |bytes: &[u8]| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
        };
        Self {
            private_pem: pair.serialize_pem(),
            public_pem: pair.public_key_pem(),
            jwk: serde_json::json!({
                "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
                "x": b64(&point[1..33]), "y": b64(&point[33..65]),
            }),
            kid: kid.to_owned(),
        }
    }

    /// `claims` signed with this key (ES256).
    pub fn sign(&self, claims: &serde_json::Value) -> String {
        let key = EncodingKey::from_ec_pem(self.private_pem.as_bytes()).unwrap();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &key).unwrap()
    }
}

/// Who the hand-off app says signed in, and how.
#[derive(Clone)]
pub struct Person {
    pub sub: String,
    pub email: String,
    pub name: String,
    /// Answer `error=access_denied` instead of an assertion.
    pub cancel: bool,
}

/// The assertion's claims for `challenge`, as a correct integrator signs them.
pub fn claims(
    provider_id: &str,
    audience: &str,
    challenge: &str,
    person: &Person,
    now: i64,
) -> serde_json::Value {
    serde_json::json!({
        "iss": provider_id,
        "aud": audience,
        "sub": person.sub,
        "email": person.email,
        "email_verified": true,
        "name": person.name,
        "nonce": challenge,
        "iat": now,
        "exp": now + 120,
    })
}

pub struct HandoffApp {
    pub address: SocketAddr,
    pub person: Arc<Mutex<Person>>,
    /// Every callback URL it sent a browser to.
    pub sent: Arc<Mutex<Vec<String>>>,
    /// The keys its JWKS publishes; `None` makes the JWKS answer 503.
    pub published: Arc<Mutex<Option<Vec<serde_json::Value>>>>,
    /// How many times its JWKS was fetched.
    jwks_fetches: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl HandoffApp {
    /// Serves on loopback; sends browsers back to `{callback_base}/signin/{provider_id}/callback`
    /// with assertions for `audience` signed by `key`.
    pub async fn start(
        key: Arc<IntegratorKey>,
        provider_id: &str,
        audience: &str,
        callback_base: &str,
        person: Person,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let person = Arc::new(Mutex::new(person));
        let sent = Arc::new(Mutex::new(Vec::new()));
        let published = Arc::new(Mutex::new(Some(vec![key.jwk.clone()])));
        let jwks_fetches = Arc::new(AtomicUsize::new(0));
        let callback = format!("{callback_base}/signin/{provider_id}/callback");
        let (provider_id, audience) = (provider_id.to_owned(), audience.to_owned());
        let task = tokio::spawn({
            let (person, sent) = (Arc::clone(&person), Arc::clone(&sent));
            let (published, jwks_fetches) = (Arc::clone(&published), Arc::clone(&jwks_fetches));
            async move {
                loop {
                    let Ok((mut stream, _)) = listener.accept().await else {
                        return;
                    };
                    let mut buffer = vec![0u8; 16 * 1024];
                    let mut read = 0;
                    while !buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                        match stream.read(&mut buffer[read..]).await {
                            Ok(0) | Err(_) => break,
                            Ok(n) => read += n,
                        }
                    }
                    let head = String::from_utf8_lossy(&buffer[..read]).into_owned();
                    let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                    let challenge = target
                        .strip_prefix("/login?")
                        .map(|query| super::browser::query_of(&format!("?{query}")))
                        .and_then(|query| query.get("login_challenge").cloned());
                    let reply = match challenge {
                        Some(challenge) => {
                            let person = person.lock().unwrap().clone();
                            let location = if person.cancel {
                                format!(
                                    "{callback}?login_challenge={challenge}&error=access_denied"
                                )
                            } else {
                                let now = linkd::clock::Clock::now(&linkd::clock::SystemClock);
                                let assertion = key.sign(&claims(
                                    &provider_id,
                                    &audience,
                                    &challenge,
                                    &person,
                                    now,
                                ));
                                format!(
                                    "{callback}?login_challenge={challenge}&assertion={assertion}"
                                )
                            };
                            sent.lock().unwrap().push(location.clone());
                            format!(
                                "HTTP/1.1 302 Found\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                            )
                        }
                        None if target == "/jwks.json" => {
                            jwks_fetches.fetch_add(1, Ordering::SeqCst);
                            match published.lock().unwrap().clone() {
                                Some(keys) => {
                                    let body = serde_json::json!({ "keys": keys }).to_string();
                                    format!(
                                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                                        body.len()
                                    )
                                }
                                None => "HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                            }
                        }
                        None => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                    };
                    let _ = stream.write_all(reply.as_bytes()).await;
                }
            }
        });
        Self {
            address,
            person,
            sent,
            published,
            jwks_fetches,
            task,
        }
    }

    /// The login URL to register with linkd.
    pub fn login_url(&self) -> String {
        format!("http://{}/login", self.address)
    }

    /// How many times the JWKS was fetched so far.
    pub fn jwks_fetch_count(&self) -> usize {
        self.jwks_fetches.load(Ordering::SeqCst)
    }

    /// The URL of the app's JWKS.
    pub fn jwks_url(&self) -> String {
        format!("http://{}/jwks.json", self.address)
    }
}

impl Drop for HandoffApp {
    fn drop(&mut self) {
        self.task.abort();
    }
}
