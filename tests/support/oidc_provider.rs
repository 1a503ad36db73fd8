//! A real OpenID Connect provider that nobody here wrote: node-oidc-provider as released
//! (pinned in `tests/interop/package.json`, installed by `./scripts/test` into
//! `tests/interop/node_modules`), run by `tests/interop/oidc_provider.mjs` over HTTPS with a
//! certificate authority made for the test, on a free port of 127.0.0.1, with its issuer
//! `https://127.0.0.1:{port}`. It can be stopped ([`OidcProvider::stop`]), restarted on the
//! same port ([`OidcProvider::restart`]), restarted with a new signing key
//! ([`OidcProvider::rotate_keys`]), and made to fail one of its paths with a status, an HTML
//! page or no answer at all ([`OidcProvider::fail`]).
//!
//! Its development login and consent pages accept any login name and password; the login name
//! becomes the `sub`, and the account's claims are `{login}@example.com` (verified), the name
//! `{Login} Example`, given name `{Login}` and family name `Example`. With the code flow the
//! email and profile claims are served by userinfo only, never in the `id_token`. PKCE S256
//! is required of every client.
//!
//! The OpenID client alone (as tests/oidc.rs uses it):
//! ```ignore
//! let platform = Platform::start().await; // any redirect URI that records what it receives
//! let client = TestClient::new(&format!("{}/r/oidc", platform.base()));
//! let provider = OidcProvider::start(ProviderOptions::new(vec![client.clone()])).await;
//! let oidc = linkd::identity::oidc::OidcClient::new(provider.outbound());
//! let url = oidc.authorization_url(&client.config(&provider.issuer, &scopes), …).await?;
//! browser.goto(&url).await;
//! provider.sign_in(&browser, "ada").await;
//! let query = query_of(&platform.next_redirect().await); // code, state, iss
//! ```
//! Through linkd, whose callback URL is known only once it listens: start the provider with
//! no client, start linkd with `settings.outbound_roots = provider.ca_roots()`, then
//! `provider.register(TestClient::new(&linkd_callback_url)).await` (a restart of about a
//! second) and configure linkd's identity provider with that client's id and secret and
//! `provider.issuer`. In the browser, once linkd sent it to the provider,
//! `provider.sign_in(&browser, "ada")` returns when the browser is back at linkd.
//!
//! Starting takes about a second on an idle machine and up to several seconds when the two
//! cores are busy (node loads the library and makes an RSA key).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use linkd::identity::oidc::OidcProviderConfig;
use linkd::outbound::OutboundClient;

use super::browser::Browser;
use super::redis_server::free_port;
use super::redis_tls::TlsAuthority;

/// How long the provider may take to listen before the start is retried. Generous: on a busy
/// machine with two cores node needs several seconds to load the library and make an RSA key.
const START_DEADLINE: Duration = Duration::from_secs(30);

/// How many fresh ports to try when another process takes the one picked.
const PORT_ATTEMPTS: usize = 5;

/// A client registered at the provider.
#[derive(Debug, Clone)]
pub struct TestClient {
    /// `client_id`.
    pub id: String,
    /// `client_secret`.
    pub secret: String,
    /// The only registered redirect URI.
    pub redirect_uri: String,
    /// `token_endpoint_auth_method`: `client_secret_basic` unless changed.
    pub auth_method: &'static str,
    /// `id_token_signed_response_alg`, when not the provider key's algorithm (`HS256`
    /// signs with the client secret).
    pub id_token_alg: Option<&'static str>,
}

impl TestClient {
    /// A client with a fresh id and secret, authenticating with client_secret_basic, allowed
    /// to redirect to `redirect_uri` only.
    pub fn new(redirect_uri: &str) -> Self {
        Self {
            id: format!("linkd-{}", linkd::secrets::random_token(6).unwrap()),
            secret: linkd::secrets::random_token(32).unwrap(),
            redirect_uri: redirect_uri.to_owned(),
            auth_method: "client_secret_basic",
            id_token_alg: None,
        }
    }

    /// The same client authenticating with `method` (`client_secret_post`, …).
    pub fn authenticating_with(mut self, method: &'static str) -> Self {
        self.auth_method = method;
        self
    }

    /// linkd's configuration of this client at the provider of `issuer`.
    pub fn config<'a>(&'a self, issuer: &'a str, scopes: &'a [String]) -> OidcProviderConfig<'a> {
        OidcProviderConfig {
            issuer,
            client_id: &self.id,
            client_secret: &self.secret,
            scopes,
        }
    }

    fn metadata(&self) -> serde_json::Value {
        let mut metadata = serde_json::json!({
            "client_id": self.id,
            "client_secret": self.secret,
            "redirect_uris": [self.redirect_uri],
            "token_endpoint_auth_method": self.auth_method,
        });
        if let Some(alg) = self.id_token_alg {
            metadata["id_token_signed_response_alg"] = alg.into();
        }
        metadata
    }
}

/// What requests to one of the provider's paths meet instead of the provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// This HTTP status with an empty body.
    Status(u16),
    /// A 200 HTML page (a captive portal, a maintenance page).
    Html,
    /// No answer, ever; the connection stays open.
    Hang,
}

impl Fault {
    fn json(self) -> serde_json::Value {
        match self {
            Self::Status(status) => status.into(),
            Self::Html => "html".into(),
            Self::Hang => "hang".into(),
        }
    }
}

/// How the provider is run.
#[derive(Debug, Clone)]
pub struct ProviderOptions {
    /// The registered clients.
    pub clients: Vec<TestClient>,
    /// The token endpoint authentication methods offered and listed in discovery.
    pub auth_methods: Vec<&'static str>,
    /// The signing key's algorithm: `RS256`, `ES256` or `EdDSA`.
    pub key_alg: &'static str,
}

impl ProviderOptions {
    /// `clients`, client_secret_basic and client_secret_post offered, an RS256 key.
    pub fn new(clients: Vec<TestClient>) -> Self {
        Self {
            clients,
            auth_methods: vec!["client_secret_basic", "client_secret_post"],
            key_alg: "RS256",
        }
    }
}

/// A running node-oidc-provider; killed when dropped.
pub struct OidcProvider {
    /// Its issuer, `https://127.0.0.1:{port}`.
    pub issuer: String,
    /// The port it listens on, kept across restarts.
    pub port: u16,
    options: ProviderOptions,
    authority: TlsAuthority,
    dir: tempfile::TempDir,
    child: Option<Child>,
}

impl OidcProvider {
    /// Starts a provider with `options` on a free port and waits until it listens.
    pub async fn start(options: ProviderOptions) -> Self {
        let mut provider = Self {
            issuer: String::new(),
            port: 0,
            options,
            authority: TlsAuthority::new(),
            dir: tempfile::tempdir().unwrap(),
            child: None,
        };
        for attempt in 1..=PORT_ATTEMPTS {
            provider.port = free_port();
            provider.issuer = format!("https://127.0.0.1:{}", provider.port);
            match provider.launch().await {
                Ok(()) => return provider,
                Err(Launch::AddressInUse) if attempt < PORT_ATTEMPTS => {}
                Err(error) => panic!("the OpenID provider did not start: {error}"),
            }
        }
        unreachable!()
    }

    /// The PEM file of the authority that issued the provider's certificate.
    pub fn ca_file(&self) -> PathBuf {
        self.authority.ca_file()
    }

    /// An outbound client trusting the provider's authority besides the system's roots, as
    /// linkd does with `--outbound-ca-file`.
    pub fn outbound(&self) -> OutboundClient {
        OutboundClient::new(&self.ca_roots())
    }

    /// The provider's authority as `ServeSettings::outbound_roots` takes it, for a linkd that
    /// calls the provider.
    pub fn ca_roots(&self) -> Vec<rustls_pki_types::CertificateDer<'static>> {
        linkd::outbound::read_ca_file(&self.ca_file()).unwrap()
    }

    /// Registers `client` besides the others, restarting the provider (same port, same key)
    /// so that it knows it: for a relying party whose redirect URI is known only once it
    /// listens, such as linkd on an ephemeral port started with [`Self::ca_roots`]. Sessions
    /// at the provider are lost.
    // For tests of linkd's own sign-in routes, which register linkd's redirect URI.
    #[allow(dead_code)]
    pub async fn register(&mut self, client: TestClient) {
        self.options.clients.push(client);
        self.restart().await;
    }

    /// Makes every request to `path` (`/token`, `/jwks`, `/me`,
    /// `/.well-known/openid-configuration`, …) meet `fault` from now on, until
    /// [`Self::clear_faults`].
    pub fn fail(&self, path: &str, fault: Fault) {
        let file = self.faults_file();
        let mut faults: serde_json::Value = std::fs::read(&file)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_else(|| serde_json::json!({}));
        faults[path] = fault.json();
        let staged = file.with_extension("tmp");
        std::fs::write(&staged, faults.to_string()).unwrap();
        std::fs::rename(staged, file).unwrap();
    }

    /// Lets every request reach the provider again.
    pub fn clear_faults(&self) {
        let _ = std::fs::remove_file(self.faults_file());
    }

    /// The `kid` of the key the provider signs with now.
    pub fn kid(&self) -> String {
        let key: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.signing_key_file()).unwrap()).unwrap();
        key["kid"].as_str().unwrap().to_owned()
    }

    /// Kills the provider: its port refuses connections until [`Self::restart`].
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the provider if it runs and starts it again on the same port with the same
    /// signing key. Its sessions, codes and tokens are lost (they live in its memory).
    pub async fn restart(&mut self) {
        self.stop();
        if let Err(error) = self.launch().await {
            panic!("the OpenID provider did not restart: {error}");
        }
    }

    /// [`Self::restart`] with a new signing key of a new `kid`: the provider's JWKS then
    /// holds only the new key.
    pub async fn rotate_keys(&mut self) {
        self.stop();
        std::fs::remove_file(self.signing_key_file()).unwrap();
        self.restart().await;
    }

    /// Signs in as `login` at the provider's development pages, which the browser is on
    /// after it went to an authorization URL: fills the login form (any password does) and
    /// continues on the consent page, each when shown (a browser already signed in at the
    /// provider, with the scopes already granted, is sent straight back). Returns once the
    /// browser has left the provider, i.e. reached the redirect URI.
    pub async fn sign_in(&self, browser: &Browser, login: &str) {
        let started = Instant::now();
        loop {
            let url = browser.current_url().await;
            if !url.starts_with(&self.issuer) {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "still at the provider after 30 s, on {url}: {}",
                browser.text().await
            );
            if browser.has("input[name=login]").await {
                browser.fill("input[name=login]", login).await;
                browser.fill("input[name=password]", "any password").await;
                browser.click("button[type=submit]").await;
            } else if browser.has("input[name=prompt][value=consent]").await {
                browser.click("button[type=submit]").await;
            } else if browser.text().await.trim().is_empty() {
                // Between two pages of a redirect chain.
                tokio::time::sleep(Duration::from_millis(50)).await;
            } else {
                panic!(
                    "the provider shows neither its login nor its consent page at {url}: {}",
                    browser.text().await
                );
            }
        }
    }

    /// The provider's log (its warnings and errors), for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("provider.log")).unwrap_or_default()
    }

    fn faults_file(&self) -> PathBuf {
        self.dir.path().join("faults.json")
    }

    fn signing_key_file(&self) -> PathBuf {
        self.dir.path().join("signing-key.json")
    }

    /// Spawns the provider on `self.port` and waits until it says it listens. A start that
    /// stalls is retried once (on a machine whose cores are shared by many tests, node has
    /// been seen to stall at start-up, rarely); the stalled process's JavaScript stack is kept
    /// in the error.
    async fn launch(&mut self) -> Result<(), Launch> {
        match self.spawn().await {
            Err(Launch::Stalled(first)) => self.spawn().await.map_err(|error| match error {
                Launch::Stalled(second) => Launch::Stalled(format!("{first}\n\nthen:\n{second}")),
                other => other,
            }),
            outcome => outcome,
        }
    }

    /// One attempt of [`Self::launch`].
    async fn spawn(&mut self) -> Result<(), Launch> {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/oidc_provider.mjs"
        );
        let modules = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/node_modules");
        assert!(
            Path::new(modules).join("oidc-provider").exists(),
            "{modules}/oidc-provider is missing: run ./scripts/test, which installs the \
             packages pinned in tests/interop/ (npm ci --prefix tests/interop)"
        );
        let ready_file = self.dir.path().join("ready.json");
        let _ = std::fs::remove_file(&ready_file);
        let reports = self.dir.path().join("reports");
        let _ = std::fs::remove_dir_all(&reports);
        std::fs::create_dir(&reports).unwrap();
        let log = std::fs::File::create(self.dir.path().join("provider.log")).unwrap();
        let clients: Vec<serde_json::Value> = self
            .options
            .clients
            .iter()
            .map(TestClient::metadata)
            .collect();
        let mut child = Command::new("node")
            // SIGUSR2 makes node write a diagnostic report with its JavaScript stack.
            .arg("--report-on-signal")
            .arg(format!("--report-directory={}", reports.display()))
            .arg(script)
            .arg(self.port.to_string())
            .arg(self.authority.server_cert_file())
            .arg(self.authority.server_key_file())
            .arg(self.signing_key_file())
            .env("OIDC_CLIENTS", serde_json::to_string(&clients).unwrap())
            .env("OIDC_AUTH_METHODS", self.options.auth_methods.join(","))
            .env("OIDC_KEY_ALG", self.options.key_alg)
            .env("OIDC_FAULTS_FILE", self.faults_file())
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&ready_file).unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| {
                panic!("node: {error}; run ./scripts/test, which installs nodejs")
            });
        let started = Instant::now();
        loop {
            let ready = std::fs::read_to_string(&ready_file).unwrap_or_default();
            if ready.ends_with('\n') {
                let line: serde_json::Value = serde_json::from_str(ready.trim()).unwrap();
                assert_eq!(line["issuer"], self.issuer.as_str());
                self.child = Some(child);
                return Ok(());
            }
            if let Some(status) = child.try_wait().unwrap() {
                let log = self.log();
                return Err(if log.contains("EADDRINUSE") {
                    Launch::AddressInUse
                } else {
                    Launch::Exited(format!("node exited with {status}:\n{log}"))
                });
            }
            if started.elapsed() > START_DEADLINE {
                let stack = javascript_stack(&child, &reports).await;
                let _ = child.kill();
                let _ = child.wait();
                return Err(Launch::Stalled(format!(
                    "not listening after {START_DEADLINE:?}:\n{}\nJavaScript stack: {stack}",
                    self.log()
                )));
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// Why the provider did not start.
#[derive(Debug)]
enum Launch {
    /// Its port was taken.
    AddressInUse,
    /// It exited; its log.
    Exited(String),
    /// It did not listen within [`START_DEADLINE`]; its log and stack.
    Stalled(String),
}

impl std::fmt::Display for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AddressInUse => f.write_str("its port was taken"),
            Self::Exited(log) | Self::Stalled(log) => f.write_str(log),
        }
    }
}

/// The JavaScript stack of a running node, from the diagnostic report SIGUSR2 makes it write.
async fn javascript_stack(child: &Child, reports: &Path) -> String {
    let signalled = Command::new("kill")
        .args(["-USR2", &child.id().to_string()])
        .status()
        .is_ok_and(|status| status.success());
    if !signalled {
        return "(could not signal node)".to_owned();
    }
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let report = std::fs::read_dir(reports)
            .into_iter()
            .flatten()
            .flatten()
            .find_map(|entry| std::fs::read(entry.path()).ok())
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
        if let Some(report) = report {
            let native: Vec<&str> = report["nativeStack"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|frame| frame["symbol"].as_str())
                .take(15)
                .collect();
            return format!(
                "{}\nnative stack: {native:?}",
                report["javascriptStack"]["stack"]
            );
        }
    }
    "(no report written)".to_owned()
}

impl Drop for OidcProvider {
    fn drop(&mut self) {
        self.stop();
    }
}
