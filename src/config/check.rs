//! `linkd serve --check-config`: after validation and loading, the checks a server's start
//! would make of the files it uses, made without writing anything, binding a port or
//! opening the store: the keys directory's keys load, the certificate loads and fits its
//! key, and a SQLite store's file or directory is there.

use std::path::Path;

use super::load::ServeSettings;
use super::validate::Problems;
use super::validate::listener::TlsSettings;
use crate::http::tls::{self, CertificateFiles, ReloadingCertResolver};
use crate::tokens::keyring::Keyring;

/// Every problem a start with `settings` would run into with its files; empty when none.
pub fn check(settings: &ServeSettings) -> Problems {
    let mut problems = Problems::new();
    check_keys(&settings.keys_dir, &mut problems);
    check_certificate(settings, &mut problems);
    check_store(&settings.store, &mut problems);
    problems
}

/// The keys load; an empty or missing directory is fine, as a first start creates a key.
fn check_keys(dir: &Path, problems: &mut Problems) {
    if dir.exists() && !dir.is_dir() {
        problems.push(format!("--keys-dir {}: not a directory", dir.display()));
        return;
    }
    if let Err(error) = Keyring::load(dir) {
        problems.push(format!("--keys-dir {}: {error}", dir.display()));
    }
}

/// The operator's certificate, or an existing development certificate, loads and fits its
/// key. A missing development certificate is generated at start.
fn check_certificate(settings: &ServeSettings, problems: &mut Problems) {
    let files = match &settings.tls {
        TlsSettings::Plain => return,
        TlsSettings::Files(files) => files.clone(),
        TlsSettings::Development => {
            let files = CertificateFiles {
                cert: settings.keys_dir.join(tls::DEV_CERT_FILE),
                key: settings.keys_dir.join(tls::DEV_KEY_FILE),
            };
            if !files.cert.exists() || !files.key.exists() {
                return;
            }
            files
        }
    };
    let loaded = ReloadingCertResolver::load(files)
        .and_then(|resolver| tls::server_config(std::sync::Arc::new(resolver)));
    if let Err(error) = loaded {
        problems.push(format!("--tls-cert/--tls-key: {error}"));
    }
}

/// A SQLite store's file is a file, or its directory exists for a first start to create it
/// in. A Redis store is not contacted.
fn check_store(location: &str, problems: &mut Problems) {
    if crate::store::is_redis_location(location) {
        return;
    }
    let path = Path::new(location);
    if path.exists() {
        if !path.is_file() {
            problems.push(format!("--store {location}: not a file"));
        }
        return;
    }
    let parent = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        problems.push(format!(
            "--store {location}: directory {} does not exist",
            parent.display()
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings_in(dir: &Path) -> ServeSettings {
        ServeSettings::with_defaults(
            dir.join("linkd.db").display().to_string(),
            dir.join("keys"),
            "127.0.0.1:0".parse().unwrap(),
        )
    }

    #[test]
    fn a_fresh_directory_passes_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(check(&settings_in(dir.path())), Problems::new());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn unusable_files_are_each_reported() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings_in(dir.path());
        std::fs::create_dir(&settings.keys_dir).unwrap();
        std::fs::write(
            settings
                .keys_dir
                .join(crate::tokens::keyring::MANIFEST_FILE),
            "not json",
        )
        .unwrap();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, "no certificate here").unwrap();
        settings.tls = TlsSettings::Files(CertificateFiles {
            cert: cert.clone(),
            key: cert,
        });
        settings.store = dir.path().join("absent/linkd.db").display().to_string();
        let problems = check(&settings);
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(problems[0].starts_with("--keys-dir "), "{problems:?}");
        assert!(
            problems[1].starts_with("--tls-cert/--tls-key: "),
            "{problems:?}"
        );
        assert!(problems[2].ends_with("does not exist"), "{problems:?}");
    }

    #[test]
    fn a_redis_store_is_not_contacted() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings_in(dir.path());
        settings.store = "redis://unreachable.invalid:6379".to_owned();
        assert!(check(&settings).is_empty());
    }
}
