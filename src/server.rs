//! Assembling a running server from validated settings: open the store, load (or create)
//! the keyring, set up TLS, then serve until told to stop. Process signals are wired here:
//! SIGHUP reloads keys and certificate, SIGTERM/SIGINT drain and stop.

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::app::App;
use crate::clock::{SharedClock, SystemClock};
use crate::config::{ServeSettings, TlsSettings};
use crate::devicegraph::graph_client::DeviceGraphClient;
use crate::devicegraph::unlink::UnlinkWorker;
use crate::http::tls::{self, ReloadingCertResolver};
use crate::http::{self, Transport};
use crate::store::{self, StoreError};
use crate::tokens::keyring::{self, KeyringError, KeyringHandle};
use crate::web::ops;
use crate::web::routes::{Router, Surface};

/// How often queued unlink events are retried (each unlink also handles the queue at once).
const UNLINK_WORKER_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The store could not be opened.
    #[error("store {location}: {source}")]
    Store {
        /// The configured location, without credentials.
        location: String,
        /// The underlying error.
        source: StoreError,
    },
    /// The keyring could not be loaded or created.
    #[error("keys directory {dir}: {source}")]
    Keyring {
        /// The keys directory.
        dir: String,
        /// The underlying error.
        source: KeyringError,
    },
    /// The TLS certificate could not be loaded or generated.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// A server ready to accept connections.
#[derive(Debug)]
pub struct Server {
    app: Arc<App>,
    settings: ServeSettings,
    certificate: Option<Arc<ReloadingCertResolver>>,
    transport: Transport,
    router: Arc<Router>,
    unlink_worker: UnlinkWorker,
}

impl Server {
    /// Opens the store, loads the keyring (creating a current key in an empty directory)
    /// and prepares TLS, with the system clock.
    pub async fn prepare(settings: ServeSettings) -> Result<Self, StartError> {
        Self::prepare_with_clock(settings, Arc::new(SystemClock)).await
    }

    /// As [`Server::prepare`], with an injected clock.
    pub async fn prepare_with_clock(
        settings: ServeSettings,
        clock: SharedClock,
    ) -> Result<Self, StartError> {
        crate::metrics::install();
        let store_error = |source| StartError::Store {
            location: store::location::redact(&settings.store),
            source,
        };
        let location = store::location::StoreLocation::parse(&settings.store)
            .map_err(|error| store_error(StoreError::Unavailable(error.to_string())))?;
        let redis = store::redis_connect::RedisConnectSettings {
            timeouts: settings.store_timeouts,
            credentials: settings.store_credentials.clone(),
            ca_certificates: settings.store_ca_certificates.clone(),
        };
        let store = store::open_eventually(&location, &redis)
            .await
            .map_err(store_error)?;
        // The hot paths read clients, users and revocations from memory, kept coherent by
        // the backend's change feed (`store::cached`).
        let store = store::cached::CachedStore::wrap(store);
        let store_answers = matches!(
            tokio::time::timeout(
                settings.store_timeouts.connect + settings.store_timeouts.response,
                store.ping()
            )
            .await,
            Ok(Ok(()))
        );
        let keyring_error = |source| StartError::Keyring {
            dir: settings.keys_dir.display().to_string(),
            source,
        };
        if let Some(created) =
            keyring::ensure_current(&settings.keys_dir, settings.signing_alg, clock.now())
                .map_err(keyring_error)?
        {
            tracing::info!(kid = %created, "keys directory was empty: created a current signing key");
        }
        let keyring = Arc::new(KeyringHandle::open(&settings.keys_dir).map_err(keyring_error)?);

        let (certificate, transport) = match &settings.tls {
            TlsSettings::Plain => (None, Transport::Plain),
            TlsSettings::Files(files) => {
                let resolver = Arc::new(ReloadingCertResolver::load(files.clone())?);
                let config = tls::server_config(Arc::clone(&resolver))?;
                (Some(resolver), Transport::Tls(config))
            }
            TlsSettings::Development => {
                let (files, generated) = tls::ensure_dev_certificate(&settings.keys_dir, &[])?;
                if generated {
                    tracing::warn!(cert = %files.cert.display(), "no --tls-cert given: generated a self-signed development certificate; do not use it in production");
                } else {
                    tracing::warn!(cert = %files.cert.display(), "no --tls-cert given: serving the self-signed development certificate; do not use it in production");
                }
                let resolver = Arc::new(ReloadingCertResolver::load(files)?);
                let config = tls::server_config(Arc::clone(&resolver))?;
                (Some(resolver), Transport::Tls(config))
            }
        };

        let mut oauth = settings.oauth.clone();
        oauth.redemption_lease_secs = crate::app::redemption_lease_secs(settings.store_timeouts);
        let mut app = App::new(store, keyring, clock, settings.issuer.clone(), oauth);
        app.outbound = crate::outbound::OutboundClient::new(&settings.outbound_roots);
        app.oidc = crate::identity::oidc::OidcClient::new(app.outbound.clone())
            .with_jwks_refetch_interval(settings.jwks_refetch_interval);
        app.handoff_keys = crate::identity::key_sets::KeySetCache::new(
            crate::identity::handoff::JWKS_TIME_TO_LIVE,
            settings.jwks_refetch_interval,
        );
        if !store_answers {
            app.store_not_yet_answered();
        }
        let app = Arc::new(app);
        let router = Arc::new(Router::new(Arc::clone(&app)));
        // The device graph unlinks are sent to: linkd's own, through this router, unless
        // configured otherwise.
        let device_graph = match &settings.external_device_graph {
            Some(graph) => Arc::clone(graph),
            None => Arc::new(DeviceGraphClient::own(Arc::clone(&router) as _)),
        };
        let unlink_worker = UnlinkWorker::new(&app, device_graph);
        Ok(Self {
            app,
            settings,
            certificate,
            transport,
            router,
            unlink_worker,
        })
    }

    /// The shared state, for tests that need to reach behind the HTTP interface.
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// The worker that has the device graph forget users who unlinked, as this server runs
    /// it.
    pub fn unlink_worker(&self) -> UnlinkWorker {
        self.unlink_worker.clone()
    }

    /// Re-reads the keys directory and the certificate now (what SIGHUP does).
    pub fn reload(&self) {
        match self.app.keyring.reload() {
            Ok(true) => tracing::info!("keyring reloaded"),
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "keyring reload failed; keeping the loaded keys"),
        }
        if let Some(certificate) = &self.certificate {
            certificate.reload_and_log(true);
        }
    }

    /// Serves `listener` until `shutdown` completes, then drains. Background reloads of the
    /// keyring and certificate run for as long as the server does.
    pub async fn run(&self, listener: TcpListener, shutdown: impl Future<Output = ()>) {
        self.run_with_admin(listener, None, shutdown).await;
    }

    /// Serves `listener`, and `admin` (plain HTTP, the operations routes only) when given,
    /// until `shutdown` completes. Then readiness fails at once while both keep serving for
    /// the drain delay, so that load balancers stop sending new requests before the listeners
    /// close; in-flight requests then get the shutdown grace period to finish.
    pub async fn run_with_admin(
        &self,
        listener: TcpListener,
        admin: Option<TcpListener>,
        shutdown: impl Future<Output = ()>,
    ) {
        let key_watcher = self
            .app
            .keyring
            .spawn_reloader(self.settings.key_reload_interval);
        let cert_watcher = self
            .certificate
            .as_ref()
            .map(|resolver| resolver.spawn_watcher(self.settings.cert_reload_interval));
        let unlink_worker = self.unlink_worker().spawn(UNLINK_WORKER_INTERVAL);
        let store_probe = ops::probe_store(Arc::clone(&self.app), ops::STORE_PROBE_INTERVAL);
        if let Ok(address) = listener.local_addr() {
            tracing::info!(
                %address,
                issuer = %self.app.issuer,
                store = self.app.store.backend_name(),
                transport = ?self.transport,
                "linkd serving"
            );
        }
        if let Some(address) = admin.as_ref().and_then(|admin| admin.local_addr().ok()) {
            tracing::info!(%address, "admin listener serving /metrics, /healthz and /readyz");
        }
        let (stop_sender, _) = watch::channel(false);
        let stopped = |sender: &watch::Sender<bool>| {
            let mut receiver = sender.subscribe();
            async move {
                let _ = receiver.wait_for(|stop| *stop).await;
            }
        };
        let app = Arc::clone(&self.app);
        let drain_delay = self.settings.drain_delay;
        let public_stopped = stopped(&stop_sender);
        let admin_stopped = stopped(&stop_sender);
        let drain = async move {
            shutdown.await;
            app.begin_draining();
            tracing::info!(
                drain_delay_secs = drain_delay.as_secs_f64(),
                "shutting down: reporting not-ready, then draining in-flight requests"
            );
            tokio::time::sleep(drain_delay).await;
            let _ = stop_sender.send(true);
        };
        let surface = if admin.is_some() {
            Surface::PublicWithoutMetrics
        } else {
            Surface::Public
        };
        let public = http::run(
            listener,
            Arc::new(self.router.with_surface_of(surface)) as _,
            self.transport.clone(),
            self.settings.limits.clone(),
            public_stopped,
        );
        let admin = async {
            if let Some(admin) = admin {
                http::run(
                    admin,
                    Arc::new(self.router.with_surface_of(Surface::Admin)) as _,
                    Transport::Plain,
                    self.settings.limits.clone(),
                    admin_stopped,
                )
                .await;
            }
        };
        tokio::join!(drain, public, admin);
        key_watcher.abort();
        unlink_worker.abort();
        store_probe.abort();
        if let Some(watcher) = cert_watcher {
            watcher.abort();
        }
        tracing::info!("stopped");
    }

    /// Serves `listener` (and `admin`, when given) until SIGTERM or SIGINT; SIGHUP reloads
    /// keys and certificate.
    pub async fn run_until_signalled(&self, listener: TcpListener, admin: Option<TcpListener>) {
        use tokio::signal::unix::{SignalKind, signal};
        let (mut terminate, mut interrupt, mut hangup) = match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
            signal(SignalKind::hangup()),
        ) {
            (Ok(terminate), Ok(interrupt), Ok(hangup)) => (terminate, interrupt, hangup),
            _ => {
                tracing::error!("cannot install signal handlers; serving without them");
                self.run_with_admin(listener, admin, std::future::pending())
                    .await;
                return;
            }
        };
        let stop = async {
            loop {
                tokio::select! {
                    _ = terminate.recv() => return,
                    _ = interrupt.recv() => return,
                    _ = hangup.recv() => {
                        tracing::info!("SIGHUP: reloading keys and certificate");
                        self.reload();
                    }
                }
            }
        };
        self.run_with_admin(listener, admin, stop).await;
    }
}
