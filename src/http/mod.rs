//! The HTTP layer: accepts connections, terminates TLS, speaks HTTP/1.1 and HTTP/2, bounds
//! every resource a client can hold, and drains in-flight requests on shutdown. It knows
//! nothing about OAuth: requests go to a [`Handler`] and come back as responses.
//!
//! Limits, and what each one protects against:
//!
//! | limit | protects against |
//! |---|---|
//! | `max_connections` (a semaphore taken before `accept`) | descriptor and memory exhaustion |
//! | `tls_handshake_timeout` | clients that open TCP and never finish the handshake |
//! | `header_read_timeout` (HTTP/1, needs hyper's timer or it is silently off) | slowloris |
//! | `max_header_bytes` (HTTP/1 buffer, HTTP/2 header list) | oversized headers (431) |
//! | `header_read_timeout` for a connection's first request, and for its next one once it has served some, HTTP/2 included, once fewer than a quarter of the slots are free | silent or idle connections holding the slots others need |
//! | `idle_timeout` (no request in flight for that long) | idle keep-alive and silent HTTP/2 connections |
//! | `request_timeout` | a handler stuck on a dependency |
//! | body limits | per route, enforced by [`body::read_limited`] |
//! | `body_budget_bytes`, `connection_body_budget_bytes` | memory of request bodies read at once, reserved by [`body::read_limited`] before reading |
//! | HTTP/2 streams ([`HTTP2_MAX_STREAMS`]) and flow-control windows | requests and unread body bytes one connection can queue |

pub mod body;
pub mod client_address;
pub mod response;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, mpsc, watch};
use tracing::Instrument as _;

/// The body type of every response linkd sends: responses are small and fully buffered.
pub type ResponseBody = Full<Bytes>;
/// A complete response.
pub type HttpResponse = Response<ResponseBody>;
/// A boxed future returned by handlers.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Per-request facts the HTTP layer knows and handlers may need.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Identifier of this request in logs and in the `X-Request-Id` response header.
    pub request_id: String,
    /// The peer address of the TCP connection (the load balancer's, behind one).
    pub remote_addr: SocketAddr,
    /// Whether the connection is TLS-terminated by linkd.
    pub tls: bool,
}

/// Application logic behind the HTTP layer.
pub trait Handler: Send + Sync + 'static {
    /// Answers one request. Must not fail: errors are responses.
    fn handle<'a>(
        &'a self,
        request: Request<Incoming>,
        context: &'a RequestContext,
    ) -> BoxFuture<'a, HttpResponse>;
}

/// The route template a handler attaches to its response (as an extension), so that logs
/// and metrics are labelled by route and never by raw path or query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteLabel(pub &'static str);

/// Resource bounds of the server.
#[derive(Debug, Clone)]
pub struct ServerLimits {
    /// Connections served at once; further clients wait in the kernel's accept queue.
    pub max_connections: usize,
    /// Time allowed for a TLS handshake.
    pub tls_handshake_timeout: Duration,
    /// Time allowed for a client to send a complete HTTP/1 request head.
    pub header_read_timeout: Duration,
    /// Maximum size of a request head (HTTP/1 buffer, HTTP/2 header list). At least 8192.
    pub max_header_bytes: usize,
    /// A connection with no request in flight for this long is closed.
    pub idle_timeout: Duration,
    /// Time allowed for a handler to produce a response.
    pub request_timeout: Duration,
    /// On shutdown, time allowed for in-flight requests to finish.
    pub shutdown_grace: Duration,
    /// Memory all request bodies being read or handled may take together; a body that does
    /// not fit is answered 503.
    pub body_budget_bytes: usize,
    /// Memory the request bodies of one connection may take together; further bodies of
    /// that connection wait for earlier ones to finish.
    pub connection_body_budget_bytes: usize,
}

/// Requests one HTTP/2 connection may have in flight at once.
pub const HTTP2_MAX_STREAMS: u32 = 32;
/// HTTP/2 flow-control window of one request body: what a client may send before linkd
/// reads it (the device-graph API's body limit).
const HTTP2_STREAM_WINDOW: u32 = 64 * 1024;
/// HTTP/2 flow-control window of a connection: unread body bytes it may queue in all.
const HTTP2_CONNECTION_WINDOW: u32 = 256 * 1024;

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_connections: 1024,
            tls_handshake_timeout: Duration::from_secs(10),
            header_read_timeout: Duration::from_secs(10),
            max_header_bytes: 16 * 1024,
            idle_timeout: Duration::from_secs(60),
            request_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(25),
            body_budget_bytes: 32 * 1024 * 1024,
            connection_body_budget_bytes: 256 * 1024,
        }
    }
}

/// How connections are secured.
#[derive(Clone)]
pub enum Transport {
    /// TLS terminated here with this configuration (ALPN selects HTTP/2 or HTTP/1.1).
    Tls(Arc<rustls::ServerConfig>),
    /// Plain HTTP, for a load balancer that terminates TLS.
    Plain,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Tls(_) => f.write_str("Tls"),
            Self::Plain => f.write_str("Plain"),
        }
    }
}

/// Headers every response carries, whatever produced it.
const BASELINE_HEADERS: [(&str, &str); 5] = [
    ("x-content-type-options", "nosniff"),
    ("x-frame-options", "DENY"),
    ("referrer-policy", "no-referrer"),
    ("strict-transport-security", "max-age=63072000"),
    ("cross-origin-opener-policy", "same-origin"),
];

/// Serves `listener` until `shutdown` completes, then stops accepting, asks every connection
/// to finish its in-flight requests, and waits for them up to `limits.shutdown_grace`.
pub async fn run(
    listener: TcpListener,
    handler: Arc<dyn Handler>,
    transport: Transport,
    limits: ServerLimits,
    shutdown: impl Future<Output = ()>,
) {
    let limits = Arc::new(limits);
    let connection_slots = Arc::new(Semaphore::new(limits.max_connections));
    let body_budget = body::BodyBudget::server(limits.body_budget_bytes);
    let (shutdown_sender, shutdown_receiver) = watch::channel(false);
    // Every connection task holds a clone of this sender; once all are dropped, `recv`
    // returns `None` and the drain is complete.
    let (drained_sender, mut drained_receiver) = mpsc::channel::<()>(1);
    let builders = Arc::new(ConnectionBuilders::new(&limits));
    let tls_acceptor = match &transport {
        Transport::Tls(config) => Some(tokio_rustls::TlsAcceptor::from(Arc::clone(config))),
        Transport::Plain => None,
    };

    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            () = &mut shutdown => break,
            permit = Arc::clone(&connection_slots).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_closed) => break,
            },
        };
        let (stream, remote_addr) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    // Out of descriptors and similar: back off instead of spinning.
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let connection = Connection {
            handler: Arc::clone(&handler),
            limits: Arc::clone(&limits),
            builders: Arc::clone(&builders),
            shutdown: shutdown_receiver.clone(),
            remote_addr,
            connection_slots: Arc::clone(&connection_slots),
            body_budget: body::BodyBudget::for_connection(
                Arc::clone(&body_budget),
                limits.body_budget_bytes,
                limits.connection_body_budget_bytes,
            ),
        };
        let acceptor = tls_acceptor.clone();
        let drained = drained_sender.clone();
        tokio::spawn(async move {
            connection.serve(stream, acceptor).await;
            drop(permit);
            drop(drained);
        });
    }

    drop(listener);
    let _ = shutdown_sender.send(true);
    drop(drained_sender);
    if tokio::time::timeout(limits.shutdown_grace, drained_receiver.recv())
        .await
        .is_err()
    {
        tracing::warn!("shutdown grace period over; closing the remaining connections");
    }
}

/// Connection builders prepared once: ALPN decides between the HTTP/2-only and HTTP/1-only
/// ones; plain HTTP uses the auto-detecting one (HTTP/2 with prior knowledge, for a proxy).
struct ConnectionBuilders {
    http1_only: auto::Builder<TokioExecutor>,
    http2_only: auto::Builder<TokioExecutor>,
    either: auto::Builder<TokioExecutor>,
}

impl ConnectionBuilders {
    fn new(limits: &ServerLimits) -> Self {
        let configure = |mut builder: auto::Builder<TokioExecutor>| {
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read_timeout)
                .max_buf_size(limits.max_header_bytes.max(8192))
                .keep_alive(true);
            builder
                .http2()
                .timer(TokioTimer::new())
                .max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX))
                .max_concurrent_streams(HTTP2_MAX_STREAMS)
                .initial_stream_window_size(HTTP2_STREAM_WINDOW)
                .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
                .keep_alive_interval(Some(Duration::from_secs(30)))
                .keep_alive_timeout(Duration::from_secs(10));
            builder
        };
        Self {
            http1_only: configure(auto::Builder::new(TokioExecutor::new()).http1_only()),
            http2_only: configure(auto::Builder::new(TokioExecutor::new()).http2_only()),
            either: configure(auto::Builder::new(TokioExecutor::new())),
        }
    }
}

/// Activity of one connection, for the idle timeout.
struct Activity {
    started: Instant,
    in_flight: AtomicUsize,
    last_change_millis: AtomicU64,
    any_request: std::sync::atomic::AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            started: Instant::now(),
            in_flight: AtomicUsize::new(0),
            last_change_millis: AtomicU64::new(0),
            any_request: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn any_request(&self) -> bool {
        self.any_request.load(Ordering::Relaxed)
    }

    fn touch(&self) {
        let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_change_millis.store(elapsed, Ordering::Relaxed);
    }

    fn idle_for(&self) -> Option<Duration> {
        if self.in_flight.load(Ordering::Relaxed) > 0 {
            return None;
        }
        let last = Duration::from_millis(self.last_change_millis.load(Ordering::Relaxed));
        Some(self.started.elapsed().saturating_sub(last))
    }
}

/// Counts a request in flight for as long as it lives.
struct InFlight(Arc<Activity>);

impl InFlight {
    fn begin(activity: &Arc<Activity>) -> Self {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        activity.any_request.store(true, Ordering::Relaxed);
        activity.touch();
        Self(Arc::clone(activity))
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Connection {
    handler: Arc<dyn Handler>,
    limits: Arc<ServerLimits>,
    builders: Arc<ConnectionBuilders>,
    shutdown: watch::Receiver<bool>,
    remote_addr: SocketAddr,
    connection_slots: Arc<Semaphore>,
    body_budget: body::BodyBudget,
}

/// Whether fewer than a quarter of the connection slots are free.
fn slots_running_out(slots: &Semaphore, limits: &ServerLimits) -> bool {
    slots.available_permits() < limits.max_connections / 4
}

impl Connection {
    async fn serve(
        self,
        stream: tokio::net::TcpStream,
        acceptor: Option<tokio_rustls::TlsAcceptor>,
    ) {
        match acceptor {
            None => {
                let builders = Arc::clone(&self.builders);
                self.drive(&builders.either, TokioIo::new(stream), false)
                    .await;
            }
            Some(acceptor) => {
                let handshake = tokio::time::timeout(
                    self.limits.tls_handshake_timeout,
                    acceptor.accept(stream),
                );
                let tls_stream = match handshake.await {
                    Ok(Ok(tls_stream)) => tls_stream,
                    Ok(Err(error)) => {
                        tracing::debug!(peer = %self.remote_addr, %error, "TLS handshake failed");
                        return;
                    }
                    Err(_elapsed) => {
                        tracing::debug!(peer = %self.remote_addr, "TLS handshake timed out");
                        return;
                    }
                };
                let negotiated_h2 = tls_stream.get_ref().1.alpn_protocol() == Some(b"h2");
                let builders = Arc::clone(&self.builders);
                let builder = if negotiated_h2 {
                    &builders.http2_only
                } else {
                    &builders.http1_only
                };
                self.drive(builder, TokioIo::new(tls_stream), true).await;
            }
        }
    }

    async fn drive<IO>(self, builder: &auto::Builder<TokioExecutor>, io: TokioIo<IO>, tls: bool)
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let activity = Arc::new(Activity::new());
        let service = {
            let handler = Arc::clone(&self.handler);
            let activity = Arc::clone(&activity);
            let request_timeout = self.limits.request_timeout;
            let remote_addr = self.remote_addr;
            let body_budget = self.body_budget.clone();
            hyper::service::service_fn(move |mut request: Request<Incoming>| {
                let handler = Arc::clone(&handler);
                let in_flight = InFlight::begin(&activity);
                request.extensions_mut().insert(body_budget.clone());
                async move {
                    let response =
                        serve_request(handler, request, remote_addr, tls, request_timeout).await;
                    drop(in_flight);
                    Ok::<_, std::convert::Infallible>(response)
                }
            })
        };
        let connection = builder.serve_connection(io, service);
        tokio::pin!(connection);
        let mut shutdown = self.shutdown;
        // After a graceful close is asked for, a peer that ignores it (an HTTP/2 client that
        // never sent its preface, say) is dropped at this deadline.
        let mut hard_close_at: Option<tokio::time::Instant> = None;
        let idle_grace = self.limits.idle_timeout.min(Duration::from_secs(5));
        if *shutdown.borrow() {
            connection.as_mut().graceful_shutdown();
            hard_close_at = Some(tokio::time::Instant::now() + self.limits.shutdown_grace);
        }
        let check_every = (self.limits.idle_timeout / 4).max(Duration::from_millis(50));
        // A connection with no request in flight holds a slot that others may need. Once
        // slots run out, one that has sent no request within the header timeout (an HTTP/2
        // client that never sends its preface, say) is dropped, and one that has waited that
        // long between requests is asked to close (GOAWAY on HTTP/2), so that neither a flood
        // of silent sockets nor a pool of idle ones can lock everyone else out. While slots are
        // plentiful both may wait for the idle timeout, as load balancers that keep
        // connections open ahead of traffic expect.
        let mut pressure_check_at = tokio::time::Instant::now() + self.limits.header_read_timeout;
        loop {
            let closing = hard_close_at.is_some();
            let hard_close = async {
                match hard_close_at {
                    Some(deadline) => tokio::time::sleep_until(deadline).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                result = connection.as_mut() => {
                    if let Err(error) = result {
                        tracing::debug!(peer = %self.remote_addr, %error, "connection ended with an error");
                    }
                    return;
                }
                () = hard_close => {
                    tracing::debug!(peer = %self.remote_addr, "connection did not close in time; dropping it");
                    return;
                }
                () = tokio::time::sleep_until(pressure_check_at), if !closing => {
                    if slots_running_out(&self.connection_slots, &self.limits) {
                        if !activity.any_request() {
                            tracing::debug!(peer = %self.remote_addr, "no request in time and slots running out; dropping the connection");
                            return;
                        }
                        if activity.idle_for().is_some_and(|idle| idle >= self.limits.header_read_timeout) {
                            tracing::debug!(peer = %self.remote_addr, "idle while slots run out; closing the connection");
                            connection.as_mut().graceful_shutdown();
                            hard_close_at = Some(tokio::time::Instant::now() + idle_grace);
                        }
                    }
                    pressure_check_at = tokio::time::Instant::now() + Duration::from_secs(1);
                }
                _ = shutdown.changed(), if !closing => {
                    // A closed channel means the server is gone: close as for shutdown.
                    connection.as_mut().graceful_shutdown();
                    hard_close_at = Some(tokio::time::Instant::now() + self.limits.shutdown_grace);
                }
                () = tokio::time::sleep(check_every), if !closing => {
                    if activity.idle_for().is_some_and(|idle| idle >= self.limits.idle_timeout) {
                        connection.as_mut().graceful_shutdown();
                        hard_close_at = Some(tokio::time::Instant::now() + idle_grace);
                    }
                }
            }
        }
    }
}

/// Runs one request through the handler with a request id, a deadline, baseline headers,
/// metrics and one log line.
async fn serve_request(
    handler: Arc<dyn Handler>,
    request: Request<Incoming>,
    remote_addr: SocketAddr,
    tls: bool,
    request_timeout: Duration,
) -> HttpResponse {
    let started = Instant::now();
    let request_id = request_id_for(&request);
    let method = request.method().clone();
    let span = tracing::info_span!("request", request_id = %request_id, method = %method);
    let context = RequestContext {
        request_id,
        remote_addr,
        tls,
    };
    async move {
        let mut response =
            match tokio::time::timeout(request_timeout, handler.handle(request, &context)).await {
                Ok(response) => response,
                Err(_elapsed) => response::service_unavailable("the request took too long", 5),
            };
        let route = response
            .extensions()
            .get::<RouteLabel>()
            .map_or("unmatched", |label| label.0);
        let status = response.status();
        let elapsed = started.elapsed();
        crate::metrics::record_request(route, method.as_str(), status.as_u16(), elapsed);
        tracing::info!(
            route,
            status = status.as_u16(),
            elapsed_ms = elapsed.as_secs_f64() * 1000.0,
            "served"
        );
        let headers = response.headers_mut();
        for (name, value) in BASELINE_HEADERS {
            let name = HeaderName::from_static(name);
            if !headers.contains_key(&name) {
                headers.insert(name, HeaderValue::from_static(value));
            }
        }
        if let Ok(value) = HeaderValue::from_str(&context.request_id) {
            headers.insert(HeaderName::from_static("x-request-id"), value);
        }
        response
    }
    .instrument(span)
    .await
}

/// Takes the caller's `X-Request-Id` when it is a short token (so a load balancer's id
/// carries through), otherwise makes a new one; anything else could inject into logs.
fn request_id_for(request: &Request<Incoming>) -> String {
    request
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .filter(|value| {
            !value.is_empty()
                && value.len() <= 64
                && value
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        })
        .map_or_else(crate::secrets::new_request_id, str::to_owned)
}
