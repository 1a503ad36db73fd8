//! A real headless Chromium driven over WebDriver (Debian's `chromium` and
//! `chromium-driver`), and a stand-in for the platform's redirect endpoint that records
//! what the browser brings back.

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn find_binary(candidates: &[&str]) -> String {
    candidates
        .iter()
        .find(|path| std::path::Path::new(path).exists())
        .map(|path| (*path).to_owned())
        .unwrap_or_else(|| {
            panic!(
                "none of {candidates:?} is installed: run ./scripts/test, which installs chromium and chromium-driver"
            )
        })
}

/// A chromedriver process and a browser session on it.
pub struct Browser {
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    pub async fn start() -> Self {
        let chromium = find_binary(&["/usr/bin/chromium", "/usr/bin/chromium-browser"]);
        let chromedriver = find_binary(&["/usr/bin/chromedriver"]);
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "chromedriver did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let capabilities = serde_json::json!({
            "acceptInsecureCerts": true,
            "goog:chromeOptions": {
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-quic", "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync", "--window-size=1200,1000",
                    // As on a phone: scrollbars overlay the page instead of narrowing it.
                    "--hide-scrollbars",
                    format!("--user-data-dir={}", profile.path().display()),
                ]
            }
        });
        let capabilities = match capabilities {
            serde_json::Value::Object(map) => map,
            _ => unreachable!(),
        };
        let client = ClientBuilder::rustls()
            .unwrap()
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .unwrap();
        Self {
            client,
            driver,
            _profile: profile,
        }
    }

    pub async fn goto(&self, url: &str) {
        self.client.goto(url).await.unwrap();
    }

    pub async fn text(&self) -> String {
        self.client
            .find(Locator::Css("body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    pub async fn fill(&self, css: &str, value: &str) {
        let field = self.client.find(Locator::Css(css)).await.unwrap();
        field.clear().await.unwrap();
        field.send_keys(value).await.unwrap();
    }

    /// Clicks `css` and waits until the page it was on has been replaced (a click that
    /// submits a form returns before the browser has navigated).
    pub async fn click(&self, css: &str) {
        let old_page = self.client.find(Locator::Css("html")).await.unwrap();
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        let started = Instant::now();
        while old_page.tag_name().await.is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "clicking {css} did not navigate"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        self.wait_until_loaded().await;
    }

    async fn wait_until_loaded(&self) {
        let started = Instant::now();
        loop {
            let state = self
                .client
                .execute("return document.readyState", vec![])
                .await;
            if matches!(state, Ok(serde_json::Value::String(ref s)) if s == "complete") {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "page never loaded"
            );
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    pub async fn has(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    pub async fn current_url(&self) -> String {
        self.client.current_url().await.unwrap().to_string()
    }

    pub async fn sign_in(&self, email: &str, password: &str) {
        self.fill("#email", email).await;
        self.fill("#password", password).await;
        self.click("button[value=signin]").await;
    }

    pub async fn screenshot(&self, path: &std::path::Path) {
        let png = self.client.screenshot().await.unwrap();
        std::fs::write(path, png).unwrap();
    }

    pub async fn close(self) {
        let Self {
            client, mut driver, ..
        } = self;
        let _ = client.close().await;
        let _ = driver.kill();
        let _ = driver.wait();
    }
}

/// The platform's redirect endpoint, played by a plain HTTP server on loopback: it
/// answers every request with a small page and records each request target.
pub struct Platform {
    pub address: SocketAddr,
    pub received: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Platform {
    pub async fn start() -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let received = Arc::new(Mutex::new(Vec::new()));
        let task = tokio::spawn({
            let received = Arc::clone(&received);
            async move {
                loop {
                    let Ok((mut stream, _)) = listener.accept().await else {
                        return;
                    };
                    let received = Arc::clone(&received);
                    tokio::spawn(async move {
                        let mut buffer = vec![0u8; 16 * 1024];
                        let mut read = 0;
                        while !buffer[..read].windows(4).any(|w| w == b"\r\n\r\n") {
                            match stream.read(&mut buffer[read..]).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => read += n,
                            }
                            if read == buffer.len() {
                                return;
                            }
                        }
                        let head = String::from_utf8_lossy(&buffer[..read]).into_owned();
                        let target = head.split(' ').nth(1).unwrap_or_default().to_owned();
                        if target != "/favicon.ico" {
                            received.lock().unwrap().push(target);
                        }
                        let body = "<!doctype html><title>Platform</title><p>Account linked.</p>";
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = stream.write_all(reply.as_bytes()).await;
                    });
                }
            }
        });
        Self {
            address,
            received,
            task,
        }
    }

    /// The redirect base the server under test should allow.
    pub fn base(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Waits for the next request target whose path starts with `/r/`.
    pub async fn next_redirect(&self) -> String {
        let started = Instant::now();
        loop {
            if let Some(target) = {
                let mut received = self.received.lock().unwrap();
                let position = received.iter().position(|t| t.starts_with("/r/"));
                position.map(|index| received.remove(index))
            } {
                return target;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the browser never reached the platform"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Platform {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The query parameters of a request target.
pub fn query_of(target: &str) -> std::collections::HashMap<String, String> {
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .unwrap()
        .into_iter()
        .collect()
}

/// Agrees on the consent page open in `browser`; checks that the platform's redirect carries
/// its `state`, redeems the code at `server` as the integration (`redirect_uri`, `secret`) and
/// returns what userinfo says of the user.
pub async fn agree_and_fetch_userinfo(
    browser: &Browser,
    platform: &Platform,
    server: &super::flow::Target<'_>,
    redirect_uri: &str,
    secret: &str,
    state: &str,
) -> serde_json::Value {
    browser.click("button[value=agree]").await;
    let query = query_of(&platform.next_redirect().await);
    assert_eq!(
        query.get("state").map(String::as_str),
        Some(state),
        "{query:?}"
    );
    let tokens = super::flow::redeem(server, &query["code"], redirect_uri, secret).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text());
    let access = tokens.json()["access_token"].as_str().unwrap().to_owned();
    super::flow::userinfo(server, &access).await.json()
}
