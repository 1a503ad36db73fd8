//! Starts a real linkd server in-process on `127.0.0.1:0` with its own keys directory and
//! store, serving real TLS with the generated development certificate.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use linkd::config::ServeSettings;
use linkd::server::Server;
use tokio::sync::{Notify, oneshot};

use super::flow;
use super::redis_server::RedisServer;

pub struct TestServer {
    pub address: SocketAddr,
    /// The admin listener's address, when the settings ask for one.
    pub admin_address: Option<SocketAddr>,
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
    settings.drain_delay = Duration::ZERO;
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

    /// A server on the embedded store or, when `redis`, on a Redis of its own, which is
    /// returned so that it runs as long as the caller keeps it.
    pub async fn start_on_store(
        redis: bool,
        adjust: impl FnOnce(&mut ServeSettings),
    ) -> (Self, Option<RedisServer>) {
        Self::start_on_store_clocked(redis, None, adjust).await
    }

    /// [`TestServer::start_on_store`] with the server on `clock` when one is given.
    pub async fn start_on_store_clocked(
        redis: bool,
        clock: Option<Arc<linkd::clock::ManualClock>>,
        adjust: impl FnOnce(&mut ServeSettings),
    ) -> (Self, Option<RedisServer>) {
        let redis = redis.then(RedisServer::start);
        let url = redis.as_ref().map(RedisServer::url);
        let adjust = move |settings: &mut ServeSettings| {
            if let Some(url) = url {
                settings.store = url;
            }
            adjust(settings);
        };
        let server = match clock {
            Some(clock) => Self::start_with_clock(clock, adjust).await,
            None => Self::start(adjust).await,
        };
        (server, redis)
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

    /// A server that runs alone: it waits until no other server of this process runs and
    /// keeps others from starting until it is dropped, for a test that reads a process-wide
    /// metric (every server of the process records into one recorder).
    pub async fn start_alone(adjust: impl FnOnce(&mut ServeSettings)) -> Self {
        let lease = Lease::alone().await;
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings_in(dir.path());
        adjust(&mut settings);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut server = Self::serve(listener, settings, None, lease).await;
        server._dir = Some(dir);
        server
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
        settings: ServeSettings,
        clock: Option<Arc<linkd::clock::ManualClock>>,
    ) -> Self {
        let lease = Lease::shared().await;
        Self::serve(listener, settings, clock, lease).await
    }

    async fn serve(
        listener: tokio::net::TcpListener,
        mut settings: ServeSettings,
        clock: Option<Arc<linkd::clock::ManualClock>>,
        lease: Lease,
    ) -> Self {
        let address = listener.local_addr().unwrap();
        settings.listen = address;
        // Instances behind one load balancer share an issuer; a test that sets one keeps it.
        if settings.issuer.ends_with(":0") {
            settings.issuer = format!("https://localhost:{}", address.port());
        }
        let admin = match settings.admin_listen {
            Some(admin) => Some(tokio::net::TcpListener::bind(admin).await.unwrap()),
            None => None,
        };
        let admin_address = admin.as_ref().map(|admin| admin.local_addr().unwrap());
        settings.admin_listen = admin_address;
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
                    .run_with_admin(listener, admin, async {
                        let _ = signal.await;
                    })
                    .await;
                drop(lease);
            }
        });
        Self {
            address,
            admin_address,
            keys_dir,
            cert,
            server,
            shutdown: Some(shutdown),
            task: Some(task),
            _dir: None,
        }
    }

    /// Where this server listens and the certificate to trust, for [`flow`]'s requests.
    pub fn target(&self) -> flow::Target<'_> {
        flow::Target {
            address: self.address,
            cert: &self.cert,
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

/// How many servers of this process run, and whether one runs alone.
struct Servers {
    shared: usize,
    alone: bool,
}

static SERVERS: Mutex<Servers> = Mutex::new(Servers {
    shared: 0,
    alone: false,
});
static SERVERS_CHANGED: LazyLock<Notify> = LazyLock::new(Notify::new);

/// A running server's place in [`SERVERS`], given back when its task ends.
enum Lease {
    Shared,
    Alone,
}

impl Lease {
    /// Waits until no server runs alone.
    async fn shared() -> Self {
        Self::when(|servers| {
            let free = !servers.alone;
            if free {
                servers.shared += 1;
            }
            free
        })
        .await;
        Self::Shared
    }

    /// Waits until no other server runs. Shared servers may still start meanwhile (a test
    /// may hold one while it starts another), so this waits for a gap between them.
    async fn alone() -> Self {
        Self::when(|servers| {
            let free = !servers.alone && servers.shared == 0;
            if free {
                servers.alone = true;
            }
            free
        })
        .await;
        Self::Alone
    }

    async fn when(mut take: impl FnMut(&mut Servers) -> bool) {
        loop {
            let changed = SERVERS_CHANGED.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if take(&mut SERVERS.lock().unwrap()) {
                return;
            }
            changed.await;
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        {
            let mut servers = SERVERS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            match self {
                Self::Shared => servers.shared -= 1,
                Self::Alone => servers.alone = false,
            }
        }
        SERVERS_CHANGED.notify_waiters();
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

/// The value of the series `name{labels}` (labels in the exposition's order) in `metrics`,
/// 0 when absent.
pub fn sample(metrics: &str, series: &str) -> f64 {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .map_or(0.0, |value| value.trim().parse().unwrap())
}

/// The value of `series` in this process's metrics now (every server of the process
/// records into one recorder, so only increases are meaningful).
pub fn metric(series: &str) -> f64 {
    sample(&linkd::metrics::render(), series)
}
