//! `scripts/demo`, the README's first command, followed as a person would: started from
//! another directory with a `CARGO_TARGET_DIR` of its own (the binary handed over in
//! `LINKD_BIN`, so nothing is rebuilt), it prints absolute paths and an authorization URL
//! that works; signing in and agreeing lands on its redirect catcher, which shows the code
//! and state and prints the curl command that redeems the code; SIGTERM stops all of it.

use std::io::{BufRead as _, BufReader, Read};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::redis_server::free_port;
use crate::support::{flow, https};

/// The running script, its process group and everything it printed.
struct Demo {
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
}

impl Drop for Demo {
    fn drop(&mut self) {
        // Whatever the test left running, the whole group goes.
        let _ = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

fn collect(stream: impl Read + Send + 'static) -> Arc<Mutex<String>> {
    let text = Arc::new(Mutex::new(String::new()));
    std::thread::spawn({
        let text = Arc::clone(&text);
        move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                let mut text = text.lock().unwrap();
                text.push_str(&line);
                text.push('\n');
            }
        }
    });
    text
}

impl Demo {
    fn start(dir: &Path, listen: SocketAddr, catcher: SocketAddr) -> Self {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo");
        let mut command = Command::new("bash");
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("LINKD_") {
                command.env_remove(name);
            }
        }
        let mut child = command
            .arg(script)
            .current_dir(dir)
            .env("LINKD_BIN", env!("CARGO_BIN_EXE_linkd"))
            .env("CARGO_TARGET_DIR", dir.join("elsewhere"))
            .env("LINKD_DEMO_DIR", dir.join("state"))
            .env("LINKD_LISTEN", listen.to_string())
            .env("LINKD_DEMO_CATCHER", catcher.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let stdout = collect(child.stdout.take().unwrap());
        let stderr = collect(child.stderr.take().unwrap());
        Self {
            child,
            stdout,
            stderr,
        }
    }

    /// What the script printed on stdout once it holds `needle`.
    async fn printed(&self, needle: &str) -> String {
        let started = Instant::now();
        loop {
            let stdout = self.stdout.lock().unwrap().clone();
            if stdout.contains(needle) {
                return stdout;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the demo did not print {needle:?}; stdout:\n{stdout}\nstderr:\n{}",
                self.stderr.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The word after `marker` on the line that holds it.
fn after<'a>(text: &'a str, marker: &str) -> &'a str {
    let start = text
        .find(marker)
        .unwrap_or_else(|| panic!("{marker:?} not printed:\n{text}"))
        + marker.len();
    text[start..].split_whitespace().next().unwrap()
}

fn canonical(path: impl AsRef<Path>) -> PathBuf {
    std::fs::canonicalize(path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_prints_absolute_paths_and_its_redirect_catcher_hands_over_a_working_code() {
    let dir = tempfile::tempdir().unwrap();
    let listen: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let catcher: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let mut demo = Demo::start(dir.path(), listen, catcher);
    let info = demo.printed("keys generate").await;

    // Every path it shows is absolute, and names what it ran and wrote.
    let state = canonical(dir.path().join("state"));
    assert_eq!(
        Path::new(after(&info, "  linkd ")),
        canonical(env!("CARGO_BIN_EXE_linkd"))
    );
    assert_eq!(Path::new(after(&info, "  store ")), state.join("linkd.db"));
    let cert = PathBuf::from(after(&info, "curl --cacert "));
    assert_eq!(cert, state.join("keys/dev-tls-cert.pem"));
    for word in info.split_whitespace() {
        let word = word.trim_start_matches("LINKD_KEYS_DIR=");
        assert!(
            !(word.starts_with("./") || word.starts_with("target/") || word.starts_with(".linkd")),
            "a relative path in what the demo prints: {word}\n{info}"
        );
    }
    for line in info.lines().filter(|line| line.contains("curl --cacert")) {
        for path in line
            .split("curl --cacert ")
            .skip(1)
            .map(|rest| rest.split_whitespace().next().unwrap())
        {
            assert!(Path::new(path).is_absolute(), "{line}");
        }
    }
    assert!(
        info.contains(&format!("http://{catcher}/callback")),
        "the catcher's redirect URI is named:\n{info}"
    );

    // linkd answers where the demo says.
    let target = flow::Target {
        address: listen,
        cert: &cert,
    };
    let started = Instant::now();
    loop {
        if cert.exists()
            && tokio::time::timeout(
                Duration::from_secs(2),
                tokio::net::TcpStream::connect(listen),
            )
            .await
            .is_ok_and(|connected| connected.is_ok())
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "linkd did not start; stderr:\n{}",
            demo.stderr.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(flow::get(&target, "/healthz", &[]).await.status, 200);

    // The printed URL, followed as a browser would.
    let url = info
        .split_whitespace()
        .find(|word| word.contains("/authorize?"))
        .unwrap();
    let request = url
        .strip_prefix(&format!("https://{listen}/authorize?"))
        .unwrap_or_else(|| panic!("not an authorization URL of linkd: {url}"));
    let password = after(&info, "demo@example.com / ");
    let (cookies, signed_in) =
        flow::sign_in_over_http(&target, request, "demo@example.com", password).await;
    let consent = flow::get(
        &target,
        &signed_in.header("location").unwrap(),
        &[("cookie", &cookies)],
    )
    .await;
    assert_eq!(consent.status, 200, "{}", consent.text());
    let html = consent.text();
    let agreed = flow::post_form(
        &target,
        "/authorize/consent",
        &[
            ("csrf", flow::hidden_field(&html, "csrf").as_str()),
            ("request", flow::hidden_field(&html, "request").as_str()),
            ("action", "agree"),
        ],
        &cookies,
    )
    .await;
    assert_eq!(agreed.status, 303, "{}", agreed.text());
    let location = agreed.header("location").unwrap();
    let callback = location
        .strip_prefix(&format!("http://{catcher}"))
        .unwrap_or_else(|| panic!("the browser was not sent to the catcher: {location}"));
    let code = flow::redirect_query(&agreed)["code"].clone();

    // Until the code is exchanged the account page says why nothing is listed.
    let account = flow::get(&target, "/account", &[("cookie", &cookies)]).await;
    assert!(
        account.text().contains("Nothing is linked"),
        "{}",
        account.text()
    );
    assert!(
        account.text().contains("finished linking"),
        "{}",
        account.text()
    );

    // The catcher shows what arrived, and the terminal the command that redeems it.
    demo.printed("redirect catcher: listening on").await;
    let caught = https::send_plain(catcher, "GET", callback).await;
    assert_eq!(caught.status, 200, "{}", caught.text());
    let page = caught.text();
    assert!(page.contains(&code), "{page}");
    assert!(page.contains("demo-state (matches the request)"), "{page}");
    assert!(page.contains("grant_type=authorization_code"), "{page}");
    let printed = demo.printed(&format!("code={code}")).await;
    let exchange = printed
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("curl ") && line.contains(&format!("code={code}")))
        .unwrap();
    assert!(
        exchange.contains(&format!("--cacert {}", cert.display())),
        "{exchange}"
    );
    let redeemed = Command::new("sh").args(["-c", exchange]).output().unwrap();
    assert!(redeemed.status.success(), "{redeemed:?}");
    let tokens: serde_json::Value = serde_json::from_slice(&redeemed.stdout)
        .unwrap_or_else(|error| panic!("{error}: {redeemed:?}"));
    assert!(tokens["access_token"].is_string(), "{tokens}");
    assert!(tokens["refresh_token"].is_string(), "{tokens}");
    let claims = flow::userinfo(&target, tokens["access_token"].as_str().unwrap()).await;
    assert_eq!(claims.json()["email"], "demo@example.com");

    let account = flow::get(&target, "/account", &[("cookie", &cookies)]).await;
    assert!(
        account.text().contains("Demo Integration"),
        "{}",
        account.text()
    );
    assert!(!account.text().contains("Nothing is linked"));

    // SIGTERM to the script stops linkd and the catcher, and it exits 0.
    Command::new("kill")
        .args(["-s", "TERM", &demo.child.id().to_string()])
        .status()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = demo.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the demo did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        status.success(),
        "{status:?}; stderr:\n{}",
        demo.stderr.lock().unwrap()
    );
    let started = Instant::now();
    while std::net::TcpStream::connect(catcher).is_ok()
        || std::net::TcpStream::connect(listen).is_ok()
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "linkd or the catcher outlived the demo"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
