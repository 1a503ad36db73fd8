//! A `redis-server` that speaks TLS only, with a certificate authority made for the test:
//! the server's certificate names 127.0.0.1 (and `localhost`), and the server also listens
//! on 127.0.0.2, an address its certificate does not name.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::redis_server::{free_port, require};

/// A TLS-only Redis server and the files of its certificate authority.
pub struct TlsRedisServer {
    port: u16,
    dir: tempfile::TempDir,
    child: Child,
}

/// A P-256 key from the system generator (rcgen's own generator is not linkd's).
fn key_pair() -> rcgen::KeyPair {
    let pkcs8 = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &linkd::secrets::system_random(),
    )
    .unwrap();
    rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
        &rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.as_ref()),
        &rcgen::PKCS_ECDSA_P256_SHA256,
    )
    .unwrap()
}

fn generate(dir: &std::path::Path) {
    let ca_key = key_pair();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "linkd test Redis CA");
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
    ];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).unwrap();

    let server_key = key_pair();
    let mut server_params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    server_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "redis test server");
    let server = server_params.signed_by(&server_key, &ca).unwrap();

    std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
    std::fs::write(dir.join("server.pem"), server.pem()).unwrap();
    std::fs::write(dir.join("server.key"), server_key.serialize_pem()).unwrap();
    // Another authority, which signed nothing the server presents.
    let other_key = key_pair();
    let mut other_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    other_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let other = other_params.self_signed(&other_key).unwrap();
    std::fs::write(dir.join("other-ca.pem"), other.pem()).unwrap();
}

impl TlsRedisServer {
    /// Generates the authority and the server's certificate and starts the server on a free
    /// port, with extra `redis-server` arguments.
    pub fn start(extra: &[&str]) -> Self {
        require("redis-server");
        require("redis-cli");
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path());
        let file = |name: &str| dir.path().join(name).display().to_string();
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "127.0.0.2"])
                .args(["--tls-cert-file", &file("server.pem")])
                .args(["--tls-key-file", &file("server.key")])
                .args(["--tls-ca-cert-file", &file("ca.pem")])
                .args(["--tls-auth-clients", "no"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--dir", &dir.path().display().to_string()])
                .args(["--logfile", &file("redis.log")])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            loop {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                let answered = Command::new("redis-cli")
                    .args(["--tls", "--cacert", &file("ca.pem")])
                    .args(["-h", "127.0.0.1", "-p", &port.to_string(), "PING"])
                    .stderr(Stdio::null())
                    .output()
                    .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).contains("PONG"));
                if answered {
                    return Self { port, dir, child };
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "TLS redis-server not answering; its log:\n{}",
                    std::fs::read_to_string(file("redis.log")).unwrap_or_default()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("TLS redis-server did not start on any of 5 free ports");
    }

    /// The TLS port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The PEM file of the authority that signed the server's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The PEM file of an authority that did not.
    pub fn other_ca_file(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
