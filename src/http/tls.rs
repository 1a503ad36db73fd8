//! TLS termination: the rustls server configuration (aws-lc-rs provider, ALPN `h2` and
//! `http/1.1`), a certificate resolver whose certificate can be swapped while connections
//! are being served, and the self-signed development certificate used when no certificate
//! is configured.
//!
//! The certificate is re-read when its files change (periodic check) and on demand (SIGHUP);
//! a failed reload keeps serving the previous certificate and is logged, because dropping
//! TLS over a half-written file would take the whole service down.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use rustls::crypto::aws_lc_rs;
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// ALPN protocols offered, in preference order.
pub const ALPN_PROTOCOLS: [&[u8]; 2] = [b"h2", b"http/1.1"];

/// File name of the generated development certificate inside the keys directory.
pub const DEV_CERT_FILE: &str = "dev-tls-cert.pem";
/// File name of the generated development private key inside the keys directory.
pub const DEV_KEY_FILE: &str = "dev-tls-key.pem";

/// Why a certificate could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A PEM file held no usable certificate or key.
    #[error("{path}: {reason}")]
    Pem {
        /// The file concerned.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The key does not fit the certificate, or rustls refused the configuration.
    #[error("TLS configuration rejected: {0}")]
    Rustls(#[from] rustls::Error),
    /// The development certificate could not be generated.
    #[error("cannot generate the development certificate: {0}")]
    Generate(String),
}

/// Where the served certificate comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertificateFiles {
    /// PEM certificate chain, leaf first.
    pub cert: PathBuf,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// A certificate resolver that always answers with the most recently loaded certificate.
pub struct ReloadingCertResolver {
    files: CertificateFiles,
    current: ArcSwap<CertifiedKey>,
    loaded_stamp: std::sync::Mutex<Option<FileStamp>>,
}

impl fmt::Debug for ReloadingCertResolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReloadingCertResolver")
            .field("files", &self.files)
            .finish_non_exhaustive()
    }
}

/// Modification times and sizes of the certificate and key files, to notice a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileStamp {
    cert: (Option<SystemTime>, u64),
    key: (Option<SystemTime>, u64),
}

fn stamp_of(path: &Path) -> Result<(Option<SystemTime>, u64), TlsError> {
    let metadata = std::fs::metadata(path).map_err(|source| TlsError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok((metadata.modified().ok(), metadata.len()))
}

impl FileStamp {
    fn read(files: &CertificateFiles) -> Result<Self, TlsError> {
        Ok(Self {
            cert: stamp_of(&files.cert)?,
            key: stamp_of(&files.key)?,
        })
    }
}

impl ReloadingCertResolver {
    /// Loads the certificate and key, failing if either is unusable.
    pub fn load(files: CertificateFiles) -> Result<Self, TlsError> {
        let stamp = FileStamp::read(&files)?;
        let certified = load_certified_key(&files)?;
        record_not_after(&certified);
        Ok(Self {
            files,
            current: ArcSwap::from_pointee(certified),
            loaded_stamp: std::sync::Mutex::new(Some(stamp)),
        })
    }

    /// The files this resolver serves.
    pub fn files(&self) -> &CertificateFiles {
        &self.files
    }

    /// Re-reads the files if they changed since the last load (or unconditionally when
    /// `force`). Returns whether a new certificate is now served. On error the previous
    /// certificate stays in place.
    pub fn reload(&self, force: bool) -> Result<bool, TlsError> {
        let stamp = FileStamp::read(&self.files)?;
        let mut loaded = self
            .loaded_stamp
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !force && *loaded == Some(stamp) {
            return Ok(false);
        }
        let certified = load_certified_key(&self.files)?;
        record_not_after(&certified);
        self.current.store(Arc::new(certified));
        *loaded = Some(stamp);
        Ok(true)
    }

    /// Checks the files every `interval` until the task is dropped, logging each outcome.
    pub fn spawn_watcher(self: &Arc<Self>, interval: Duration) -> tokio::task::JoinHandle<()> {
        let resolver = Arc::clone(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticker.tick().await;
            loop {
                ticker.tick().await;
                resolver.reload_and_log(false);
            }
        })
    }

    /// Reloads and reports the outcome in the log; used by the watcher and by SIGHUP.
    pub fn reload_and_log(&self, force: bool) {
        match self.reload(force) {
            Ok(true) => {
                tracing::info!(cert = %self.files.cert.display(), "TLS certificate reloaded")
            }
            Ok(false) => {}
            Err(error) => {
                tracing::warn!(%error, "TLS certificate reload failed; still serving the previous certificate")
            }
        }
    }
}

/// Records the notAfter of `certified`'s leaf certificate for the expiry gauge.
fn record_not_after(certified: &CertifiedKey) {
    let not_after = certified
        .cert
        .first()
        .and_then(|leaf| x509_parser::parse_x509_certificate(leaf.as_ref()).ok())
        .map(|(_, leaf)| leaf.validity().not_after.timestamp());
    if let Some(not_after) = not_after {
        crate::metrics::record_certificate_not_after(not_after);
    }
}

impl ResolvesServerCert for ReloadingCertResolver {
    fn resolve(&self, _client_hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.load_full())
    }
}

fn load_certified_key(files: &CertificateFiles) -> Result<CertifiedKey, TlsError> {
    let chain = CertificateDer::pem_file_iter(&files.cert)
        .map_err(|error| TlsError::Pem {
            path: files.cert.clone(),
            reason: error.to_string(),
        })?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| TlsError::Pem {
            path: files.cert.clone(),
            reason: error.to_string(),
        })?;
    if chain.is_empty() {
        return Err(TlsError::Pem {
            path: files.cert.clone(),
            reason: "no CERTIFICATE block found".to_owned(),
        });
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|error| TlsError::Pem {
        path: files.key.clone(),
        reason: error.to_string(),
    })?;
    let provider = aws_lc_rs::default_provider();
    let certified = CertifiedKey::from_der(chain, key, &provider)?;
    Ok(certified)
}

/// Builds the rustls server configuration around a resolver: TLS 1.2 and 1.3 with the
/// aws-lc-rs provider's default (safe) suites, ALPN `h2` then `http/1.1`.
pub fn server_config(
    resolver: Arc<ReloadingCertResolver>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut config =
        rustls::ServerConfig::builder_with_provider(Arc::new(aws_lc_rs::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_cert_resolver(resolver);
    config.alpn_protocols = ALPN_PROTOCOLS.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(config))
}

/// Returns the development certificate files in `keys_dir`, generating a self-signed
/// certificate for `localhost`, `127.0.0.1` and `::1` (plus `extra_names`) when none exists
/// or the existing one is about to expire. The key file is created with mode 0600.
/// The boolean says whether a new certificate was generated.
pub fn ensure_dev_certificate(
    keys_dir: &Path,
    extra_names: &[String],
) -> Result<(CertificateFiles, bool), TlsError> {
    let files = CertificateFiles {
        cert: keys_dir.join(DEV_CERT_FILE),
        key: keys_dir.join(DEV_KEY_FILE),
    };
    if files.cert.exists() && files.key.exists() && load_certified_key(&files).is_ok() {
        return Ok((files, false));
    }
    std::fs::create_dir_all(keys_dir).map_err(|source| TlsError::Io {
        path: keys_dir.to_owned(),
        source,
    })?;
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    names.extend(extra_names.iter().cloned());
    names.dedup();
    let pkcs8 = ::aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
        &::aws_lc_rs::signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &crate::secrets::system_random(),
    )
    .map_err(|error| TlsError::Generate(error.to_string()))?;
    let key_pair = rcgen::KeyPair::from_pkcs8_der_and_sign_algo(
        &rustls_pki_types::PrivatePkcs8KeyDer::from(pkcs8.as_ref()),
        &rcgen::PKCS_ECDSA_P256_SHA256,
    )
    .map_err(|error| TlsError::Generate(error.to_string()))?;
    let mut params = rcgen::CertificateParams::new(names)
        .map_err(|error| TlsError::Generate(error.to_string()))?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "linkd development certificate");
    let now = {
        use crate::clock::Clock as _;
        time::OffsetDateTime::from_unix_timestamp(crate::clock::SystemClock.now())
            .map_err(|error| TlsError::Generate(error.to_string()))?
    };
    params.not_before = now - time::Duration::days(1);
    params.not_after = now + time::Duration::days(365);
    let certificate = params
        .self_signed(&key_pair)
        .map_err(|error| TlsError::Generate(error.to_string()))?;
    write_private_file(&files.key, key_pair.serialize_pem().as_bytes())?;
    write_file_atomically(&files.cert, certificate.pem().as_bytes(), 0o644)?;
    Ok((files, true))
}

/// Writes a file readable by its owner only, replacing any previous one atomically.
pub fn write_private_file(path: &Path, contents: &[u8]) -> Result<(), TlsError> {
    write_file_atomically(path, contents, 0o600)
}

fn write_file_atomically(path: &Path, contents: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let io_error = |source| TlsError::Io {
        path: path.to_owned(),
        source,
    };
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&temporary)
        .map_err(io_error)?;
    file.write_all(contents).map_err(io_error)?;
    file.sync_all().map_err(io_error)?;
    std::fs::rename(&temporary, path).map_err(io_error)
}
