//! Starts a real linkd server in-process on `127.0.0.1:0` with its own keys directory and
//! store, serving real TLS with the generated development certificate.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use linkd::config::ServeSettings;
use linkd::server::Server;
use tokio::sync::oneshot;

pub struct TestServer {
    pub address: SocketAddr,
    pub keys_dir: PathBuf,
    pub cert: PathBuf,
    pub server: Arc<Server>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _dir: Option<tempfile::TempDir>,
}

/// Settings for a server with a fresh SQLite store and keys directory under `dir`.
pub fn settings_in(dir: &std::path::Path) -> ServeSettings {
    let mut settings = ServeSettings::with_defaults(
        dir.join("linkd.db").display().to_string(),
        dir.join("keys"),
        "127.0.0.1:0".parse().unwrap(),
    );
    settings.key_reload_interval = Duration::from_millis(200);
    settings.cert_reload_interval = Duration::from_millis(200);
    settings.limits.shutdown_grace = Duration::from_secs(5);
    settings
}

impl TestServer {
    /// A server on a fresh temporary directory, adjusted by `adjust`.
    pub async fn start(adjust: impl FnOnce(&mut ServeSettings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings_in(dir.path());
        adjust(&mut settings);
        let mut server = Self::start_with(settings).await;
        server._dir = Some(dir);
        server
    }

    /// A server on a fresh temporary directory whose clock is `clock`, so tests move time
    /// instead of sleeping.
    pub async fn start_with_clock(
        clock: Arc<linkd::clock::ManualClock>,
        adjust: impl FnOnce(&mut ServeSettings),
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings_in(dir.path());
        adjust(&mut settings);
        let mut server = Self::start_inner(settings, Some(clock)).await;
        server._dir = Some(dir);
        server
    }

    /// A server with exactly these settings (the listen address is replaced by an
    /// ephemeral port).
    pub async fn start_with(settings: ServeSettings) -> Self {
        Self::start_inner(settings, None).await
    }

    /// A server on `listener`, for a test that needs the address in the settings.
    pub async fn start_on(listener: tokio::net::TcpListener, settings: ServeSettings) -> Self {
        Self::start_listening(listener, settings, None).await
    }

    async fn start_inner(
        settings: ServeSettings,
        clock: Option<Arc<linkd::clock::ManualClock>>,
    ) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::start_listening(listener, settings, clock).await
    }

    async fn start_listening(
        listener: tokio::net::TcpListener,
        mut settings: ServeSettings,
        clock: Option<Arc<linkd::clock::ManualClock>>,
    ) -> Self {
        let address = listener.local_addr().unwrap();
        settings.listen = address;
        // Instances behind one load balancer share an issuer; a test that sets one keeps it.
        if settings.issuer.ends_with(":0") {
            settings.issuer = format!("https://localhost:{}", address.port());
        }
        let keys_dir = settings.keys_dir.clone();
        let cert = match &settings.tls {
            linkd::config::TlsSettings::Files(files) => files.cert.clone(),
            _ => keys_dir.join(linkd::http::tls::DEV_CERT_FILE),
        };
        let server = Arc::new(match clock {
            Some(clock) => Server::prepare_with_clock(settings, clock).await.unwrap(),
            None => Server::prepare(settings).await.unwrap(),
        });
        let (shutdown, signal) = oneshot::channel::<()>();
        let task = tokio::spawn({
            let server = Arc::clone(&server);
            async move {
                server
                    .run(listener, async {
                        let _ = signal.await;
                    })
                    .await;
            }
        });
        Self {
            address,
            keys_dir,
            cert,
            server,
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: None,
        }
    }

    /// Begins shutdown and returns the task that completes when the server has drained.
    pub fn begin_shutdown(&mut self) -> tokio::task::JoinHandle<()> {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        self.task.take().unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
    }
}

/// Polls `check` every 100 ms until it returns `Some`, failing after `deadline`.
pub async fn eventually<T, F, Fut>(deadline: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let started = std::time::Instant::now();
    loop {
        if let Some(value) = check().await {
            return value;
        }
        if started.elapsed() > deadline {
            panic!("{what}: not observed within {deadline:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
