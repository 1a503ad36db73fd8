//! A small HTTPS client for tests: real TCP, real TLS (rustls with the server's
//! certificate as the only root), ALPN-negotiated HTTP/2 or HTTP/1.1 through hyper's client
//! connections, so a test sees exactly what the protocol did.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::{Request, Version};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;
use tokio::net::TcpStream;

/// Which protocols the client offers by ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// `h2` then `http/1.1`, as browsers do.
    Both,
    /// `http/1.1` only.
    Http1,
}

/// A response with its body read.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub version: Version,
    pub headers: hyper::HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("body is not JSON ({e}): {:?}", self.body))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers
            .get(name)
            .map(|v| v.to_str().unwrap().to_owned())
    }
}

/// A rustls client configuration trusting exactly the certificate in `cert_pem`.
pub fn client_config(cert_pem: &Path, offer: Offer) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(cert_pem).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = match offer {
        Offer::Both => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        Offer::Http1 => vec![b"http/1.1".to_vec()],
    };
    Arc::new(config)
}

/// Opens a TLS connection and returns it with the negotiated ALPN protocol.
pub async fn connect_tls(
    address: SocketAddr,
    config: Arc<rustls::ClientConfig>,
) -> tokio_rustls::client::TlsStream<TcpStream> {
    let tcp = TcpStream::connect(address).await.unwrap();
    let connector = tokio_rustls::TlsConnector::from(config);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    connector.connect(name, tcp).await.unwrap()
}

/// Sends one request on a fresh TLS connection.
pub async fn send(
    address: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    request: Request<Full<Bytes>>,
) -> Reply {
    try_send(address, config, request)
        .await
        .unwrap_or_else(|error| panic!("{error}"))
}

/// [`send`], with a failed connection, handshake or exchange as an error that names the step,
/// for tests that count them.
pub async fn try_send(
    address: SocketAddr,
    config: Arc<rustls::ClientConfig>,
    request: Request<Full<Bytes>>,
) -> Result<Reply, String> {
    let tcp = TcpStream::connect(address)
        .await
        .map_err(|error| format!("connect: {error}"))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let tls = connector
        .connect(name, tcp)
        .await
        .map_err(|error| format!("TLS handshake: {error}"))?;
    let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
    let io = TokioIo::new(tls);
    let response = if h2 {
        let (mut sender, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
                .await
                .map_err(|error| format!("HTTP/2 handshake: {error}"))?;
        tokio::spawn(connection);
        sender.send_request(request).await
    } else {
        // HTTP/1.1 wants origin-form plus Host, as a browser sends it.
        let mut request = request;
        let origin_form = request.uri().path_and_query().unwrap().as_str().to_owned();
        *request.uri_mut() = origin_form.parse().unwrap();
        request
            .headers_mut()
            .insert(hyper::header::HOST, "localhost".parse().unwrap());
        let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|error| format!("HTTP/1.1 handshake: {error}"))?;
        tokio::spawn(connection);
        sender.send_request(request).await
    }
    .map_err(|error| format!("request: {error}"))?;
    let status = response.status().as_u16();
    let version = response.version();
    let headers = response.headers().clone();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| format!("response body: {error}"))?
        .to_bytes();
    Ok(Reply {
        status,
        version,
        headers,
        body,
    })
}

/// Builds a request for `path` on the test host.
pub fn request(method: &str, path: &str) -> hyper::http::request::Builder {
    Request::builder()
        .method(method)
        .uri(format!("https://localhost{path}"))
}

/// `GET path` over a fresh connection offering both protocols.
pub async fn get(address: SocketAddr, cert_pem: &Path, path: &str) -> Reply {
    send(
        address,
        client_config(cert_pem, Offer::Both),
        request("GET", path).body(Full::new(Bytes::new())).unwrap(),
    )
    .await
}

/// A request body that sends `first` (if any) and then neither sends more nor ends, as a
/// client does that announces a body and holds it back.
pub struct StalledBody(pub Option<Bytes>);

impl hyper::body::Body for StalledBody {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _context: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Self::Error>>> {
        match self.0.take() {
            Some(first) => std::task::Poll::Ready(Some(Ok(hyper::body::Frame::data(first)))),
            None => std::task::Poll::Pending,
        }
    }
}

/// Sends one HTTP/1.1 request over plain TCP, as a scraper on a private network does.
pub async fn send_plain(address: SocketAddr, method: &str, path: &str) -> Reply {
    let tcp = TcpStream::connect(address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(connection);
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "localhost")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let version = response.version();
    let headers = response.headers().clone();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    Reply {
        status,
        version,
        headers,
        body,
    }
}
