//! `redis-server`s that speak TLS only, with a certificate authority made for the test: the
//! servers' certificate names 127.0.0.1 (and `localhost`), and each server also listens on
//! 127.0.0.2, an address its certificate does not name; and Redis Clusters of them.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::redis_server::{free_port, require, wait_until};

/// A TLS-only Redis server.
pub struct TlsRedisServer {
    port: u16,
    _dir: tempfile::TempDir,
    child: Child,
    /// The authority of a server started alone, kept for as long as the server runs.
    authority: Option<TlsAuthority>,
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

/// A certificate authority made for a test, the certificate and key it issued for the
/// servers (naming 127.0.0.1 and `localhost`), and another authority that issued nothing.
pub struct TlsAuthority {
    dir: tempfile::TempDir,
}

impl TlsAuthority {
    /// Generates the authority and the servers' certificate.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path());
        Self { dir }
    }

    fn file(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// The PEM file of the authority that signed the servers' certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// The PEM file of the certificate the authority issued for the servers.
    pub fn server_cert_file(&self) -> PathBuf {
        self.dir.path().join("server.pem")
    }

    /// The PEM file of that certificate's private key.
    pub fn server_key_file(&self) -> PathBuf {
        self.dir.path().join("server.key")
    }

    /// The PEM file of an authority that did not.
    pub fn other_ca_file(&self) -> PathBuf {
        self.dir.path().join("other-ca.pem")
    }

    /// Runs `redis-cli` over TLS against 127.0.0.1:`port`; its output when it succeeds.
    pub fn cli(&self, port: u16, args: &[&str]) -> Option<String> {
        let output = Command::new("redis-cli")
            .args(["--tls", "--cacert", &self.file("ca.pem")])
            .args(["-h", "127.0.0.1", "-p", &port.to_string()])
            .args(args)
            .stderr(Stdio::null())
            .output()
            .ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }
}

impl TlsRedisServer {
    /// Starts a server with an authority of its own, with extra `redis-server` arguments.
    pub fn start(extra: &[&str]) -> Self {
        let authority = TlsAuthority::new();
        let mut server = Self::start_with(&authority, extra);
        server.authority = Some(authority);
        server
    }

    /// Starts a server presenting `authority`'s certificate on a free port, with extra
    /// `redis-server` arguments; `{port}` in them stands for a second free port (the
    /// cluster bus).
    pub fn start_with(authority: &TlsAuthority, extra: &[&str]) -> Self {
        require("redis-server");
        require("redis-cli");
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("redis.log");
        for _ in 0..5 {
            let port = free_port();
            let bus_port = free_port().to_string();
            let extra: Vec<String> = extra
                .iter()
                .map(|argument| argument.replace("{port}", &bus_port))
                .collect();
            let mut child = Command::new("redis-server")
                .args(["--port", "0", "--tls-port", &port.to_string()])
                .args(["--bind", "127.0.0.1", "127.0.0.2"])
                .args(["--tls-cert-file", &authority.file("server.pem")])
                .args(["--tls-key-file", &authority.file("server.key")])
                .args(["--tls-ca-cert-file", &authority.file("ca.pem")])
                .args(["--tls-auth-clients", "no"])
                .args(["--save", "", "--appendonly", "no"])
                .args(["--dir", &dir.path().display().to_string()])
                .args(["--logfile", &log.display().to_string()])
                .args(&extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let started = Instant::now();
            loop {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                if authority
                    .cli(port, &["PING"])
                    .is_some_and(|answer| answer.contains("PONG"))
                {
                    return Self {
                        port,
                        _dir: dir,
                        child,
                        authority: None,
                    };
                }
                assert!(
                    started.elapsed() < Duration::from_secs(60),
                    "TLS redis-server not answering; its log:\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
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

    /// The authority of a server started with one of its own.
    pub fn authority(&self) -> &TlsAuthority {
        self.authority
            .as_ref()
            .expect("started with an authority of its own")
    }
}

impl Drop for TlsRedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Redis Cluster of TLS-only masters (the cluster bus over TLS too), all presenting one
/// authority's certificate.
pub struct TlsRedisCluster {
    nodes: Vec<TlsRedisServer>,
    authority: TlsAuthority,
}

impl TlsRedisCluster {
    /// Starts `masters` nodes, joins them into one cluster holding every slot and waits
    /// until each reports `cluster_state:ok`.
    pub fn start(masters: usize) -> Self {
        let authority = TlsAuthority::new();
        let nodes: Vec<TlsRedisServer> = (0..masters)
            .map(|_| {
                TlsRedisServer::start_with(
                    &authority,
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                        "--cluster-port",
                        "{port}",
                        "--tls-cluster",
                        "yes",
                    ],
                )
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--tls", "--cacert", &authority.file("ca.pem")])
            .args(["--cluster", "create"])
            .args(&addresses)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap();
        assert!(
            created.status.success(),
            "redis-cli --cluster create over TLS failed:\n{}{}",
            String::from_utf8_lossy(&created.stdout),
            String::from_utf8_lossy(&created.stderr)
        );
        for node in &nodes {
            wait_until("cluster_state:ok", Duration::from_secs(60), || {
                authority
                    .cli(node.port, &["CLUSTER", "INFO"])
                    .is_some_and(|info| info.contains("cluster_state:ok"))
            });
        }
        Self { nodes, authority }
    }

    /// `rediss+cluster://127.0.0.1:p1,…`, every node of the cluster.
    pub fn url(&self) -> String {
        let nodes: Vec<String> = self
            .nodes
            .iter()
            .map(|node| format!("127.0.0.1:{}", node.port))
            .collect();
        format!("rediss+cluster://{}", nodes.join(","))
    }

    /// The authority the nodes' certificate chains to.
    pub fn authority(&self) -> &TlsAuthority {
        &self.authority
    }
}
