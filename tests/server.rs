//! The server over real TCP and TLS: ALPN, routing, limits, timeouts, certificate reload,
//! graceful shutdown, discovery and metrics.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use https::{Offer, client_config, get, request, send};
use hyper::Version;
use linkd::http::{self as server_http, BoxFuture, Handler, HttpResponse, RequestContext};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::support::linkd::{TestServer, eventually, settings_in};
use crate::support::{https, redis_server};

fn empty() -> Full<Bytes> {
    Full::new(Bytes::new())
}

#[tokio::test]
async fn alpn_selects_http2_and_falls_back_to_http1() {
    let server = TestServer::start(|_| {}).await;

    let tls = https::connect_tls(server.address, client_config(&server.cert, Offer::Both)).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));

    let over_h2 = get(server.address, &server.cert, "/healthz").await;
    assert_eq!(over_h2.status, 200);
    assert_eq!(over_h2.version, Version::HTTP_2);
    assert_eq!(over_h2.json()["status"], "ok");

    let over_h1 = send(
        server.address,
        client_config(&server.cert, Offer::Http1),
        request("GET", "/healthz").body(empty()).unwrap(),
    )
    .await;
    assert_eq!(over_h1.status, 200);
    assert_eq!(over_h1.version, Version::HTTP_11);
}

#[tokio::test]
async fn plain_tcp_without_tls_gets_no_http_answer() {
    let server = TestServer::start(|_| {}).await;
    let mut tcp = tokio::net::TcpStream::connect(server.address)
        .await
        .unwrap();
    tcp.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut answer)).await;
    assert!(
        !String::from_utf8_lossy(&answer).contains("200 OK"),
        "plain HTTP was served on the TLS port"
    );
}

#[tokio::test]
async fn every_response_carries_security_headers_and_a_request_id() {
    let server = TestServer::start(|_| {}).await;
    for path in ["/healthz", "/no-such-path", "/.well-known/jwks.json"] {
        let reply = get(server.address, &server.cert, path).await;
        assert_eq!(
            reply.header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(reply.header("x-frame-options").as_deref(), Some("DENY"));
        assert_eq!(
            reply.header("referrer-policy").as_deref(),
            Some("no-referrer")
        );
        assert!(reply.header("strict-transport-security").is_some());
        assert!(
            reply
                .header("x-request-id")
                .is_some_and(|id| id.len() >= 16)
        );
    }
    let healthz = get(server.address, &server.cert, "/healthz").await;
    assert_eq!(healthz.header("cache-control").as_deref(), Some("no-store"));
}

#[tokio::test]
async fn unknown_path_is_404_json_and_wrong_method_is_405_with_allow() {
    let server = TestServer::start(|_| {}).await;
    let missing = get(server.address, &server.cert, "/nope").await;
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "not_found");
    assert_eq!(
        missing.header("content-type").as_deref(),
        Some("application/json")
    );

    let wrong_method = send(
        server.address,
        client_config(&server.cert, Offer::Both),
        request("POST", "/healthz").body(empty()).unwrap(),
    )
    .await;
    assert_eq!(wrong_method.status, 405);
    assert_eq!(wrong_method.header("allow").as_deref(), Some("GET, HEAD"));
    assert_eq!(wrong_method.json()["error"], "method_not_allowed");

    // Even answers the router makes itself are never cached, on /token as anywhere.
    let token_get = get(server.address, &server.cert, "/token").await;
    assert_eq!(token_get.status, 405);
    assert_eq!(token_get.header("allow").as_deref(), Some("POST"));
    assert_eq!(
        token_get.header("cache-control").as_deref(),
        Some("no-store")
    );
    assert_eq!(token_get.header("pragma").as_deref(), Some("no-cache"));
    let jwks = get(server.address, &server.cert, "/.well-known/jwks.json").await;
    assert!(jwks.header("pragma").is_none(), "the JWKS may be cached");
}

#[tokio::test]
async fn discovery_names_the_issuer_and_only_endpoints_that_answer() {
    let server = TestServer::start(|_| {}).await;
    let discovery = get(
        server.address,
        &server.cert,
        "/.well-known/oauth-authorization-server",
    )
    .await;
    assert_eq!(discovery.status, 200);
    let document = discovery.json();
    let issuer = document["issuer"].as_str().unwrap().to_owned();
    assert_eq!(
        issuer,
        format!("https://localhost:{}", server.address.port())
    );
    assert_eq!(
        document["response_types_supported"],
        serde_json::json!(["code"])
    );
    let mut endpoints = 0;
    for (field, value) in document.as_object().unwrap() {
        if field.ends_with("_endpoint") || field.ends_with("_uri") {
            let url = value.as_str().unwrap();
            let path = url
                .strip_prefix(&issuer)
                .unwrap_or_else(|| panic!("{field} {url}"));
            let reply = get(server.address, &server.cert, path).await;
            assert_ne!(
                reply.status, 404,
                "{field} advertises {url}, which is not served"
            );
            endpoints += 1;
        }
    }
    assert!(endpoints >= 1, "no endpoint advertised");
    assert!(document["jwks_uri"].is_string());
}

#[tokio::test]
async fn readiness_reports_store_and_signing_key() {
    let server = TestServer::start(|_| {}).await;
    let ready = get(server.address, &server.cert, "/readyz").await;
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert_eq!(ready.json()["status"], "ready");
    assert_eq!(ready.json()["store"], "up");
    assert_eq!(ready.json()["checks"]["signing_key"], "ok");
}

#[tokio::test]
async fn head_on_health_and_readiness_answers_without_a_body_on_both_protocols() {
    let server = TestServer::start(|_| {}).await;
    for path in ["/healthz", "/readyz"] {
        for offer in [Offer::Both, Offer::Http1] {
            let reply = send(
                server.address,
                client_config(&server.cert, offer),
                request("HEAD", path).body(empty()).unwrap(),
            )
            .await;
            assert_eq!(reply.status, 200, "HEAD {path} over {:?}", reply.version);
            assert!(reply.body.is_empty(), "HEAD {path} sent a body");
            let length: usize = reply.header("content-length").unwrap().parse().unwrap();
            let got = get(server.address, &server.cert, path).await;
            assert_eq!(
                length,
                got.body.len(),
                "HEAD {path} announces the GET's length"
            );
        }
    }
}

#[tokio::test]
async fn the_admin_listener_serves_operations_and_takes_metrics_off_the_public_port() {
    let server = TestServer::start(|settings| {
        settings.admin_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let admin = server.admin_address.unwrap();
    for path in ["/healthz", "/readyz", "/metrics"] {
        assert_eq!(
            https::send_plain(admin, "GET", path).await.status,
            200,
            "{path}"
        );
    }
    for path in ["/healthz", "/readyz"] {
        let head = https::send_plain(admin, "HEAD", path).await;
        assert_eq!(head.status, 200, "HEAD {path}");
        assert!(head.body.is_empty());
    }
    for path in ["/token", "/authorize", "/.well-known/jwks.json", "/account"] {
        assert_eq!(
            https::send_plain(admin, "GET", path).await.status,
            404,
            "{path} is public only"
        );
    }
    let metrics = https::send_plain(admin, "GET", "/metrics").await.text();
    assert!(metrics.contains("linkd_http_requests_total"), "{metrics}");
    assert_eq!(
        get(server.address, &server.cert, "/metrics").await.status,
        404
    );
    assert_eq!(
        get(server.address, &server.cert, "/healthz").await.status,
        200
    );
    assert_eq!(
        get(server.address, &server.cert, "/readyz").await.status,
        200
    );
}

#[tokio::test]
async fn without_an_admin_listener_metrics_stay_on_the_public_port() {
    let server = TestServer::start(|_| {}).await;
    assert!(server.admin_address.is_none());
    assert_eq!(
        get(server.address, &server.cert, "/metrics").await.status,
        200
    );
}

#[tokio::test]
async fn on_stop_readiness_fails_while_requests_are_still_served_for_the_drain_delay() {
    let mut server = TestServer::start(|settings| {
        settings.drain_delay = Duration::from_secs(2);
        settings.admin_listen = Some("127.0.0.1:0".parse().unwrap());
    })
    .await;
    let admin = server.admin_address.unwrap();
    let stopped = server.begin_shutdown();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let ready = get(server.address, &server.cert, "/readyz").await;
    assert_eq!(ready.status, 503, "{}", ready.text());
    assert_eq!(ready.json()["checks"]["draining"], true);
    assert!(ready.header("retry-after").is_some());
    assert_eq!(https::send_plain(admin, "GET", "/readyz").await.status, 503);
    let jwks = get(server.address, &server.cert, "/.well-known/jwks.json").await;
    assert_eq!(
        jwks.status, 200,
        "requests are served during the drain delay"
    );
    assert!(!stopped.is_finished());
    tokio::time::timeout(Duration::from_secs(10), stopped)
        .await
        .expect("server did not stop after the drain delay")
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(server.address)
            .await
            .is_err()
    );
    assert!(tokio::net::TcpStream::connect(admin).await.is_err());
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status() {
    let server = TestServer::start(|_| {}).await;
    get(server.address, &server.cert, "/healthz").await;
    get(server.address, &server.cert, "/nope").await;
    let metrics = get(server.address, &server.cert, "/metrics").await;
    assert_eq!(metrics.status, 200);
    let text = metrics.text();
    assert!(
        text.lines()
            .any(|line| line.starts_with("linkd_http_requests_total")
                && line.contains("route=\"healthz\"")
                && line.contains("status=\"200\"")),
        "{text}"
    );
    assert!(text.contains("route=\"unmatched\""), "{text}");
    assert!(
        text.contains("linkd_http_request_duration_seconds_bucket"),
        "{text}"
    );
}

#[tokio::test]
async fn invented_methods_do_not_create_metric_series() {
    let server = TestServer::start(|_| {}).await;
    for method in ["BREW", "WHEN", "PROPFIND"] {
        let reply = send(
            server.address,
            client_config(&server.cert, Offer::Both),
            request(method, "/healthz").body(empty()).unwrap(),
        )
        .await;
        assert_eq!(reply.status, 405, "{method}");
    }
    let text = get(server.address, &server.cert, "/metrics").await.text();
    for invented in ["BREW", "WHEN", "PROPFIND"] {
        assert!(
            !text.contains(invented),
            "{invented} became a label: {text}"
        );
    }
    assert!(
        text.lines()
            .any(|line| line.starts_with("linkd_http_requests_total")
                && line.contains("route=\"healthz\"")
                && line.contains("method=\"other\"")
                && line.contains("status=\"405\"")),
        "{text}"
    );
}

/// Sends `POST /token` announcing `length` bytes, sends `sent` of them and holds the rest
/// back; returns the status of the answer.
async fn post_stalled(
    mut sender: hyper::client::conn::http2::SendRequest<https::StalledBody>,
    length: usize,
    sent: usize,
) -> u16 {
    let request = request("POST", "/token")
        .header("content-type", "application/x-www-form-urlencoded")
        .header("content-length", length.to_string())
        .body(https::StalledBody(Some(Bytes::from(vec![b'a'; sent]))))
        .unwrap();
    sender
        .send_request(request)
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn request_bodies_beyond_the_memory_budget_are_refused_not_buffered() {
    const BODY: usize = 8000;
    // The body gauge is process-wide: no other server may reserve bodies meanwhile.
    let server = TestServer::start_alone(|settings| {
        settings.limits.body_budget_bytes = 64 * 1024;
        settings.limits.connection_body_budget_bytes = 16 * 1024;
        settings.limits.request_timeout = Duration::from_secs(60);
    })
    .await;
    // 8 HTTP/2 connections × 4 streams, each announcing an 8000-byte form and sending half.
    let mut answers = tokio::task::JoinSet::new();
    let mut connections = Vec::new();
    for _ in 0..8 {
        let tls =
            https::connect_tls(server.address, client_config(&server.cert, Offer::Both)).await;
        let (sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tls),
        )
        .await
        .unwrap();
        connections.push(tokio::spawn(connection));
        for _ in 0..4 {
            answers.spawn(post_stalled(sender.clone(), BODY, BODY / 2));
        }
    }
    // Only as many bodies as fit the server's 64 KiB are read (8 of 8000 bytes); the others
    // wait for their connection's budget (2 bodies each) or are refused at once, instead of
    // being read and held until the request timeout.
    let mut refused = 0;
    while let Ok(Some(answer)) =
        tokio::time::timeout(Duration::from_millis(1500), answers.join_next()).await
    {
        assert_eq!(
            answer.unwrap(),
            503,
            "a body within the budget was answered before it arrived"
        );
        refused += 1;
    }
    assert!(
        refused >= 16,
        "only {refused} bodies over the budget were refused"
    );
    let metrics = get(server.address, &server.cert, "/metrics").await.text();
    let reserved: f64 = metrics
        .lines()
        .find_map(|line| line.strip_prefix("linkd_http_body_bytes_reserved "))
        .unwrap_or_else(|| panic!("no body gauge: {metrics}"))
        .parse()
        .unwrap();
    assert!(
        (8.0 * BODY as f64..=64.0 * 1024.0).contains(&reserved),
        "{reserved} bytes reserved"
    );
    answers.abort_all();
    for connection in connections {
        connection.abort();
    }
}

#[tokio::test]
async fn idle_connections_give_up_their_slots_once_slots_run_out() {
    let server = TestServer::start(|settings| {
        settings.limits.header_read_timeout = Duration::from_secs(1);
        settings.limits.idle_timeout = Duration::from_secs(60);
        settings.limits.max_connections = 4;
    })
    .await;
    // Connections that made one request and stay open, as a client's pool keeps them.
    let open_idle = || async {
        let tls =
            https::connect_tls(server.address, client_config(&server.cert, Offer::Both)).await;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
        let (mut sender, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(tls),
        )
        .await
        .unwrap();
        let connection = tokio::spawn(connection);
        let response = sender
            .send_request(request("GET", "/healthz").body(empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        (sender, connection)
    };
    let (mut first, first_connection) = open_idle().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = first
        .send_request(request("GET", "/healthz").body(empty()).unwrap())
        .await
        .expect("with slots to spare an idle connection may stay");
    assert_eq!(again.status(), 200);
    // Every slot taken by an idle HTTP/2 connection: without reclaiming them a new client
    // would wait for the 60 s idle timeout.
    let mut pool = vec![(first, first_connection)];
    for _ in 1..4 {
        pool.push(open_idle().await);
    }
    let started = std::time::Instant::now();
    let reply = tokio::time::timeout(
        Duration::from_secs(10),
        get(server.address, &server.cert, "/healthz"),
    )
    .await
    .expect("idle HTTP/2 connections locked a new client out");
    assert_eq!(reply.status, 200);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    drop(pool);
}

#[tokio::test]
async fn oversized_header_is_rejected() {
    let server = TestServer::start(|settings| settings.limits.max_header_bytes = 8192).await;
    let big = "x".repeat(16 * 1024);
    let over_h1 = send(
        server.address,
        client_config(&server.cert, Offer::Http1),
        request("GET", "/healthz")
            .header("x-padding", big.as_str())
            .body(empty())
            .unwrap(),
    )
    .await;
    assert_eq!(over_h1.status, 431);

    // HTTP/2 refuses the stream or the connection; it must never serve the request.
    let tls = https::connect_tls(server.address, client_config(&server.cert, Offer::Both)).await;
    let (mut sender, connection) = hyper::client::conn::http2::handshake(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(connection);
    let outcome = sender
        .send_request(
            request("GET", "/healthz")
                .header("x-padding", big.as_str())
                .body(empty())
                .unwrap(),
        )
        .await;
    if let Ok(response) = outcome {
        assert_eq!(response.status(), 431);
    }
}

#[tokio::test]
async fn body_over_the_route_limit_is_rejected_with_413() {
    let server = TestServer::start(|_| {}).await;
    for offer in [Offer::Http1, Offer::Both] {
        let reply = send(
            server.address,
            client_config(&server.cert, offer),
            request("GET", "/healthz")
                .body(Full::new(Bytes::from(vec![b'a'; 64 * 1024])))
                .unwrap(),
        )
        .await;
        assert_eq!(reply.status, 413, "{offer:?}");
        assert_eq!(reply.json()["error"], "invalid_request");
    }
}

/// Reads until the peer closes the connection, returning what arrived, or `None` if it
/// stayed open past `patience`.
async fn read_until_closed<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    patience: Duration,
) -> Option<Vec<u8>> {
    let mut received = Vec::new();
    let closed = tokio::time::timeout(patience, async {
        let mut buffer = [0u8; 1024];
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(n) => received.extend_from_slice(&buffer[..n]),
            }
        }
    })
    .await;
    closed.ok().map(|()| received)
}

#[tokio::test]
async fn slow_client_is_cut_off_by_the_header_timeout() {
    let server = TestServer::start(|settings| {
        settings.limits.header_read_timeout = Duration::from_secs(1);
        settings.limits.idle_timeout = Duration::from_secs(60);
    })
    .await;
    let mut tls =
        https::connect_tls(server.address, client_config(&server.cert, Offer::Http1)).await;
    // A request head that never ends, as a slowloris client sends it.
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n")
        .await
        .unwrap();
    tls.flush().await.unwrap();
    let received = read_until_closed(&mut tls, Duration::from_secs(10))
        .await
        .expect("the server kept a slow client's connection open");
    let text = String::from_utf8_lossy(&received);
    assert!(!text.contains("200 OK"), "{text}");
}

#[tokio::test]
async fn idle_connection_is_closed() {
    let server = TestServer::start(|settings| {
        settings.limits.idle_timeout = Duration::from_secs(1);
    })
    .await;
    let mut tls =
        https::connect_tls(server.address, client_config(&server.cert, Offer::Both)).await;
    assert!(
        read_until_closed(&mut tls, Duration::from_secs(10))
            .await
            .is_some(),
        "an idle HTTP/2 connection stayed open"
    );
}

#[tokio::test]
async fn silent_connections_are_dropped_once_slots_run_out() {
    let server = TestServer::start(|settings| {
        settings.limits.header_read_timeout = Duration::from_secs(1);
        settings.limits.idle_timeout = Duration::from_secs(60);
        settings.limits.max_connections = 8;
    })
    .await;
    // TLS done, HTTP/2 agreed, and then nothing: not even the preface.
    let silent = || https::connect_tls(server.address, client_config(&server.cert, Offer::Both));
    let mut first = silent().await;
    assert!(
        read_until_closed(&mut first, Duration::from_secs(3))
            .await
            .is_none(),
        "with slots to spare a silent connection may wait, as a load balancer's pool does"
    );
    // Every slot taken by a silent connection: a real client is not accepted until one
    // frees, which without the cut would be the 60 s idle timeout.
    let mut flood = Vec::new();
    for _ in 1..8 {
        flood.push(silent().await);
    }
    let reply = tokio::time::timeout(
        Duration::from_secs(15),
        get(server.address, &server.cert, "/healthz"),
    )
    .await
    .expect("silent connections locked a real client out");
    assert_eq!(reply.status, 200);
    drop((first, flood));
}

#[tokio::test]
async fn tls_handshake_timeout_closes_silent_connections() {
    let server = TestServer::start(|settings| {
        settings.limits.tls_handshake_timeout = Duration::from_secs(1);
    })
    .await;
    let mut tcp = tokio::net::TcpStream::connect(server.address)
        .await
        .unwrap();
    assert!(
        read_until_closed(&mut tcp, Duration::from_secs(10))
            .await
            .is_some(),
        "a connection that never started TLS stayed open"
    );
}

#[tokio::test]
async fn certificate_is_reloaded_when_its_files_change() {
    let dir = tempfile::tempdir().unwrap();
    let (first, _) =
        linkd::http::tls::ensure_dev_certificate(&dir.path().join("first"), &["first.test".into()])
            .unwrap();
    let (second, _) = linkd::http::tls::ensure_dev_certificate(
        &dir.path().join("second"),
        &["second.test".into()],
    )
    .unwrap();
    let served = linkd::http::tls::CertificateFiles {
        cert: dir.path().join("served-cert.pem"),
        key: dir.path().join("served-key.pem"),
    };
    std::fs::copy(&first.cert, &served.cert).unwrap();
    std::fs::copy(&first.key, &served.key).unwrap();
    let both_roots = dir.path().join("roots.pem");
    std::fs::write(
        &both_roots,
        [
            std::fs::read(&first.cert).unwrap(),
            std::fs::read(&second.cert).unwrap(),
        ]
        .concat(),
    )
    .unwrap();

    let mut settings = settings_in(dir.path());
    settings.tls = linkd::config::TlsSettings::Files(served.clone());
    let server = TestServer::start_with(settings).await;
    let config = client_config(&both_roots, Offer::Both);

    let peer_certificate = |config: Arc<rustls::ClientConfig>| async move {
        let tls = https::connect_tls(server.address, config).await;
        tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
    };
    let first_der = pem_der(&first.cert);
    let second_der = pem_der(&second.cert);
    assert_eq!(peer_certificate(Arc::clone(&config)).await, first_der);

    // Replace the files the way deployment tools do: write aside, then rename over.
    for (from, to) in [(&second.key, &served.key), (&second.cert, &served.cert)] {
        let staging = to.with_extension("staging");
        std::fs::copy(from, &staging).unwrap();
        std::fs::rename(&staging, to).unwrap();
    }
    eventually(Duration::from_secs(10), "new certificate served", || {
        let config = Arc::clone(&config);
        let second_der = second_der.clone();
        async move { (peer_certificate(config).await == second_der).then_some(()) }
    })
    .await;
}

fn pem_der(path: &std::path::Path) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject as _;
    rustls_pki_types::CertificateDer::from_pem_file(path)
        .unwrap()
        .to_vec()
}

/// A handler that takes its time, to hold a request in flight during shutdown.
struct SlowHandler(Duration);

impl Handler for SlowHandler {
    fn handle<'a>(
        &'a self,
        _request: hyper::Request<hyper::body::Incoming>,
        _context: &'a RequestContext,
    ) -> BoxFuture<'a, HttpResponse> {
        Box::pin(async move {
            tokio::time::sleep(self.0).await;
            server_http::response::text(hyper::StatusCode::OK, "finished")
        })
    }
}

#[tokio::test]
async fn graceful_shutdown_finishes_the_in_flight_request() {
    let dir = tempfile::tempdir().unwrap();
    let (files, _) = linkd::http::tls::ensure_dev_certificate(dir.path(), &[]).unwrap();
    let resolver = Arc::new(linkd::http::tls::ReloadingCertResolver::load(files.clone()).unwrap());
    let transport = server_http::Transport::Tls(linkd::http::tls::server_config(resolver).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(server_http::run(
        listener,
        Arc::new(SlowHandler(Duration::from_millis(800))),
        transport,
        server_http::ServerLimits {
            shutdown_grace: Duration::from_secs(10),
            ..server_http::ServerLimits::default()
        },
        async {
            let _ = stopped.await;
        },
    ));

    let cert = files.cert.clone();
    let in_flight = tokio::spawn(async move { get(address, &cert, "/slow").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.send(()).unwrap();

    let reply = in_flight.await.unwrap();
    assert_eq!(reply.status, 200);
    assert_eq!(reply.text(), "finished");
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("server did not stop after draining")
        .unwrap();
    assert!(
        tokio::net::TcpStream::connect(address).await.is_err(),
        "the listener still accepts after shutdown"
    );
}

#[tokio::test]
async fn readiness_fails_while_draining() {
    let mut server = TestServer::start(|_| {}).await;
    server.server.app().begin_draining();
    let reply = get(server.address, &server.cert, "/readyz").await;
    assert_eq!(reply.status, 503);
    assert_eq!(reply.json()["checks"]["draining"], true);
    assert!(reply.header("retry-after").is_some());
    let healthz = get(server.address, &server.cert, "/healthz").await;
    assert_eq!(healthz.status, 200, "liveness must not depend on readiness");
    server.begin_shutdown().await.unwrap();
}

#[tokio::test]
async fn rotation_on_disk_makes_the_running_server_sign_with_the_new_key() {
    use linkd::tokens::TokenKind;
    use linkd::tokens::keyring::{self, Algorithm, RotationPolicy};
    let server = TestServer::start(|_| {}).await;
    let before = server
        .server
        .app()
        .keyring
        .load()
        .current_kid()
        .unwrap()
        .to_owned();
    let now = 2_000_000_000;
    let next = keyring::generate(&server.keys_dir, Algorithm::Es256, now).unwrap();
    keyring::rotate(&server.keys_dir, now, RotationPolicy::default(), true).unwrap();

    let app = std::sync::Arc::clone(server.server.app());
    let new_kid = next.kid.clone();
    eventually(Duration::from_secs(10), "server signs with the rotated key", || {
        let app = std::sync::Arc::clone(&app);
        let new_kid = new_kid.clone();
        async move { (app.keyring.load().current_kid() == Some(new_kid.as_str())).then_some(()) }
    })
    .await;
    let token = app
        .keyring
        .load()
        .sign(
            TokenKind::AccessToken,
            &serde_json::json!({"exp": now + 60}),
        )
        .unwrap();
    let header: serde_json::Value = {
        use base64::Engine as _;
        let encoded = token.split('.').next().unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(encoded)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(header["kid"], next.kid.as_str());
    let kids: Vec<String> = get(server.address, &server.cert, "/.well-known/jwks.json")
        .await
        .json()["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        kids.contains(&before),
        "the previous key must stay published"
    );
    assert!(kids.contains(&next.kid));
}

#[tokio::test]
async fn readiness_reports_redis_health_without_depending_on_it() {
    let mut redis = redis_server::RedisServer::start();
    let url = redis.url();
    let server = TestServer::start(move |settings| {
        settings.store = url;
        settings.store_timeouts = linkd::store::StoreTimeouts {
            connect: Duration::from_millis(300),
            response: Duration::from_millis(300),
        };
    })
    .await;
    assert_eq!(
        get(server.address, &server.cert, "/readyz").await.status,
        200
    );

    redis.stop();
    let down = eventually(
        Duration::from_secs(15),
        "the store probe notices Redis is down",
        || {
            let server = &server;
            async move {
                let reply = get(server.address, &server.cert, "/readyz").await;
                (reply.json()["store"] == "down").then_some(reply)
            }
        },
    )
    .await;
    assert_eq!(
        down.status, 200,
        "a store outage must not make the instance unready"
    );
    assert_eq!(
        get(server.address, &server.cert, "/healthz").await.status,
        200
    );
    let metrics = get(server.address, &server.cert, "/metrics").await.text();
    assert!(metrics.contains("linkd_store_errors_total"), "{metrics}");
    assert!(metrics.contains("linkd_store_up"), "{metrics}");

    redis.restart();
    eventually(
        Duration::from_secs(15),
        "ready again after Redis restart",
        || {
            let server = &server;
            async move {
                (get(server.address, &server.cert, "/readyz").await.json()["store"] == "up")
                    .then_some(())
            }
        },
    )
    .await;
}
